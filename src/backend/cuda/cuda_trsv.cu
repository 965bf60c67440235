/*
   CUDA backend: sparse triangular solves (Backend::trsv_csr), three exact algorithms and an approximate one.

   SYNCFREE (Liu, Li, Hou, Vinter, "A synchronization-free algorithm for parallel sparse triangular
   solves", Euro-Par 2016): ONE kernel, one warp per row.  A warp takes a ticket from a counter with
   atomicAdd and solves row "ticket" of the solve order, so a row's dependencies (earlier in the order)
   hold smaller tickets: their warps are already running or done, and a warp that waits for them never
   waits for a warp that has not started - deadlock-free whatever order the hardware schedules blocks
   in.  The lanes of the warp stride through the row's entries; each lane spins (volatile loads) on the
   ready flag of its entry's column, then reads x there.  The finished row writes x_i, __threadfence(),
   then its flag.  The flags hold the generation (solve number) of the last solve that finished the row,
   so no reset is needed between solves; the ticket counter keeps counting across solves (the host
   knows how many tickets each launch takes: one per warp of its grid).

   LEVELS: the level schedule (TriangularLevels(), computed on the host by the analysis) with the rows
   of each level in a device array; one kernel per level, one warp per row of the level.  The level
   kernels are recorded once by the analysis as a CUDA graph (up to GRAPH_MAX_LEVELS levels) and
   replayed by each solve: a 3D 7-point ILU(0) of N rows has ~3 N^(1/3) levels, each a small kernel whose launch
   costs more than its work, and a replay starts the next node sooner than a stream launch.  The kernels
   of the graph read b and x from a device slot that one small kernel sets before each replay.

   JACOBI: each sweep is one kernel, 4 lanes per row (up to 8 entries a row on average) or a warp.

   CUSPARSE: cuSPARSE's SpSV (generic API, CSR, CUSPARSE_SPSV_ALG_DEFAULT), one cusparseSpSV_solve per solve on the
   stream of the call.  SpSV takes the diagonal of a triangular matrix from its entries, so the analysis makes a copy
   of the factor with the diagonal inserted in column order: last in a lower row (1, declared unit: not read), first
   in an upper row (1 / invdiag, declared non-unit); the unit lower and inverted-diagonal upper forms of TriangularView
   are the only ones (the transposed factors of fusedfactor.cxx have them too).  cuSPARSE's analysis reads the
   values, so the caller makes it again after they change (see Backend::trsv_analysis).
*/
#include "backend/cuda/cuda_cusparse.cuh"

namespace fusedksp
{
namespace cuda
{

constexpr int TRSV_WARPS = BLOCK_SIZE / 32; /* warps (rows) per thread block */

/* The analysis data of one factor (TriangularView::schedule) */
struct TrsvSchedule {
  /* LEVELS */
  LevelSchedule levels;       /* its graph reads b and x from io */
  PetscScalar **io = nullptr; /* device: {b, x} of the solve being replayed */
  /* JACOBI */
  PetscScalar *work  = nullptr; /* device, n */
  int          lanes = 32;      /* per row: 4 up to 8 entries a row on average, else 32 */
  /* SYNCFREE */
  unsigned int       *flags      = nullptr; /* device, n: generation of the solve that finished the row */
  unsigned long long *ticket     = nullptr; /* device: tickets taken since the analysis                */
  unsigned int        generation = 0;       /* of the last solve                                        */
  unsigned long long  taken      = 0;       /* tickets taken by the launches so far                     */
  /* CUSPARSE */
  PetscInt            *rowptr = nullptr, *colidx = nullptr; /* device: the factor with its diagonal (n + nnz entries) */
  PetscScalar         *vals = nullptr;
  cusparseSpMatDescr_t mat  = nullptr;             /* of rowptr, colidx, vals */
  cusparseDnVecDescr_t vb = nullptr, vx = nullptr; /* b and x, pointed at those of each solve (b is only read) */
  cusparseSpSVDescr_t  spsv   = nullptr;
  void                *buffer = nullptr; /* cuSPARSE's, as long as spsv */
  PetscErrorCode       Release()
  {
    PetscFunctionBegin;
    PetscCall(LevelScheduleDestroy(&levels));
    if (spsv) { /* a solve queued on either stream may still use cuSPARSE's objects */
      PetscCall(SynchronizeStreams());
      FusedKSPCallCUSPARSE(cusparseSpSV_destroyDescr(spsv));
    }
    if (mat) FusedKSPCallCUSPARSE(cusparseDestroySpMat(mat));
    if (vb) FusedKSPCallCUSPARSE(cusparseDestroyDnVec(vb));
    if (vx) FusedKSPCallCUSPARSE(cusparseDestroyDnVec(vx));
    PetscCall(FreeBuffers({flags, ticket, work, io, rowptr, colidx, vals, buffer}));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
};

/* The warp's sum of the lanes' s (every lane gets it) */
__device__ inline PetscScalar WarpSum(PetscScalar s)
{
  for (int offset = 16; offset > 0; offset /= 2) s += __shfl_xor_sync(0xffffffffu, s, offset);
  return s;
}

__global__ void __launch_bounds__(BLOCK_SIZE) TrsvSyncFreeKernel(PetscInt n, bool upper, const PetscInt *__restrict__ rowptr, const PetscInt *__restrict__ colidx, const PetscScalar *__restrict__ vals, const PetscScalar *__restrict__ invdiag,
                                                                 const PetscScalar *__restrict__ b, PetscScalar *x, unsigned int *flags, unsigned long long *ticket, unsigned long long base, unsigned int generation)
{
  const int          lane = threadIdx.x & 31;
  unsigned long long t    = 0;

  if (lane == 0) t = atomicAdd(ticket, 1ULL);
  t = __shfl_sync(0xffffffffu, t, 0);
  if (t - base >= (unsigned long long)n) return; /* the grid's last warps: no row */
  const PetscInt        r  = (PetscInt)(t - base);
  const PetscInt        i  = upper ? n - 1 - r : r;
  PetscScalar           s  = 0;
  volatile PetscScalar *vx = x;

  for (PetscInt k = rowptr[i] + lane; k < rowptr[i + 1]; k += 32) {
    const PetscInt j = colidx[k];

    while (((volatile unsigned int *)flags)[j] != generation) {
    }
    __threadfence(); /* the flag is seen before x_j is read */
    s += vals[k] * vx[j];
  }
  s = WarpSum(s);
  if (lane == 0) {
    const PetscScalar xi = b[i] - s;

    vx[i] = upper ? xi * invdiag[i] : xi;
    __threadfence(); /* x_i is visible before the flag */
    ((volatile unsigned int *)flags)[i] = generation;
  }
}

/* One level: warp w solves row rows[w] */
__device__ inline void TrsvLevelRow(PetscInt count, const PetscInt *__restrict__ rows, bool                                  upper, const PetscInt *__restrict__ rowptr, const PetscInt *__restrict__ colidx, const PetscScalar *__restrict__ vals,
                                    const PetscScalar *__restrict__ invdiag, const PetscScalar *__restrict__ b, PetscScalar *x)
{
  const PetscInt64 w    = (blockIdx.x * (PetscInt64)blockDim.x + threadIdx.x) / 32;
  const int        lane = threadIdx.x & 31;
  PetscScalar      s    = 0;

  if (w >= count) return; /* whole warps */
  const PetscInt i = rows[w];
  for (PetscInt k = rowptr[i] + lane; k < rowptr[i + 1]; k += 32) s += vals[k] * x[colidx[k]];
  s = WarpSum(s);
  if (lane == 0) x[i] = upper ? (b[i] - s) * invdiag[i] : b[i] - s;
}

__global__ void __launch_bounds__(BLOCK_SIZE) TrsvLevelKernel(PetscInt count, const PetscInt *__restrict__ rows, bool upper, const PetscInt *__restrict__ rowptr, const PetscInt *__restrict__ colidx, const PetscScalar *__restrict__ vals,
                                                              const PetscScalar *__restrict__ invdiag, const PetscScalar *__restrict__ b, PetscScalar *x)
{
  TrsvLevelRow(count, rows, upper, rowptr, colidx, vals, invdiag, b, x);
}

/* The level kernel of the graph: b = io[0], x = io[1] */
__global__ void __launch_bounds__(BLOCK_SIZE) TrsvLevelGraphKernel(PetscInt count, const PetscInt *__restrict__ rows, bool upper, const PetscInt *__restrict__ rowptr, const PetscInt *__restrict__ colidx, const PetscScalar *__restrict__ vals,
                                                                   const PetscScalar *__restrict__ invdiag, PetscScalar *const *io)
{
  TrsvLevelRow(count, rows, upper, rowptr, colidx, vals, invdiag, io[0], io[1]);
}

__global__ void TrsvSetIOKernel(PetscScalar **io, const PetscScalar *b, PetscScalar *x)
{
  io[0] = (PetscScalar *)b;
  io[1] = x;
}

/* One Jacobi sweep (TriangularView): out = D^{-1} (b - D N in), LANES lanes per row; first: in = D^{-1} b, read from b;
   diag: out = D^{-1} b (no sweep) */
template <int LANES>
__global__ void __launch_bounds__(BLOCK_SIZE) TrsvJacobiKernel(PetscInt n, bool upper, bool first, bool diag, const PetscInt *__restrict__ rowptr, const PetscInt *__restrict__ colidx, const PetscScalar *__restrict__ vals,
                                                               const PetscScalar *__restrict__ invdiag, const PetscScalar *__restrict__ b, const PetscScalar *__restrict__ in, PetscScalar *__restrict__ out)
{
  const PetscInt64 i      = (blockIdx.x * (PetscInt64)blockDim.x + threadIdx.x) / LANES;
  const int        lane   = threadIdx.x % LANES;
  const bool       active = i < n; /* every lane of the warp takes part in the shuffles */
  PetscScalar      s      = 0;

  for (PetscInt k = active ? rowptr[i] + lane : 0; active && !diag && k < rowptr[i + 1]; k += LANES) {
    const PetscInt j = colidx[k];

    s += vals[k] * (first ? (upper ? invdiag[j] * b[j] : b[j]) : in[j]);
  }
  for (int offset = LANES / 2; offset > 0; offset /= 2) s += __shfl_xor_sync(0xffffffffu, s, offset);
  if (active && lane == 0) out[(PetscInt)i] = upper ? (b[i] - s) * invdiag[i] : b[i] - s;
}

/* CUSPARSE: the factor with its diagonal (drowptr, dcolidx, dvals) from T's CSR without it, one thread per row (thread n
   writes drowptr[n]): row i moves i places (i + 1 for the entries right of an upper row's diagonal), its diagonal goes
   after the entries of a lower row (1) and before those of an upper row (1 / invdiag[i])                              */
__global__ void __launch_bounds__(BLOCK_SIZE) TrsvWithDiagonalKernel(PetscInt n, bool upper, const PetscInt *__restrict__ rowptr, const PetscInt *__restrict__ colidx, const PetscScalar *__restrict__ vals, const PetscScalar *__restrict__ invdiag,
                                                                     PetscInt *__restrict__ drowptr, PetscInt *__restrict__ dcolidx, PetscScalar *__restrict__ dvals)
{
  const PetscInt64 t = blockIdx.x * (PetscInt64)blockDim.x + threadIdx.x;

  if (t > n) return;
  const PetscInt i = (PetscInt)t;
  drowptr[i]       = rowptr[i] + i;
  if (i == n) return;
  const PetscInt shift = upper ? i + 1 : i, diag = upper ? rowptr[i] + i : rowptr[i + 1] + i;

  for (PetscInt k = rowptr[i]; k < rowptr[i + 1]; ++k) {
    dcolidx[k + shift] = colidx[k];
    dvals[k + shift]   = vals[k];
  }
  dcolidx[diag] = i;
  dvals[diag]   = upper ? 1 / invdiag[i] : 1;
}

/* Thread blocks of a launch with one warp for each of `rows` rows */
static unsigned int WarpBlocks(PetscInt rows)
{
  return (unsigned int)((rows + TRSV_WARPS - 1) / TRSV_WARPS);
}

/* The level kernels of a LEVELS solve, reading b and x from sc->io (RecordOnSideStream()) */
struct LevelsToRecord {
  const TriangularView *T;
  const TrsvSchedule   *sc;
};

static cudaError_t LaunchLevels(cudaStream_t stream, const void *ctx)
{
  const LevelsToRecord *r = (const LevelsToRecord *)ctx;

  return r->sc->levels.ForEachLevel([&](PetscInt count, const PetscInt *rows) { TrsvLevelGraphKernel<<<WarpBlocks(count), BLOCK_SIZE, 0, stream>>>(count, rows, r->T->upper, r->T->rowptr, r->T->colidx, r->T->vals, r->T->invdiag, r->sc->io); });
}

/* LevelScheduleCreate - see cuda_common.cuh */
PetscErrorCode LevelScheduleCreate(PetscInt n, PetscInt nlevels, const PetscInt *levelptr, const PetscInt *rows, cudaError_t (*record)(cudaStream_t, const void *), const void *ctx, LevelSchedule *s)
{
  const Backend *be = CUDABackend();

  PetscFunctionBegin;
  s->nlevels = nlevels;
  PetscCall(PetscMalloc1(nlevels + 1, &s->levelptr));
  PetscCall(PetscArraycpy(s->levelptr, levelptr, nlevels + 1));
  PetscCall(be->malloc_bytes(PetscMax(n, 1) * sizeof(PetscInt), (void **)&s->rows));
  PetscCall(be->copy_to_backend(s->rows, rows, n * sizeof(PetscInt)));
  if (nlevels > 1 && nlevels <= GRAPH_MAX_LEVELS) PetscCall(RecordOnSideStream(record, ctx, &s->graph));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* LevelScheduleDestroy - see cuda_common.cuh */
PetscErrorCode LevelScheduleDestroy(LevelSchedule *s)
{
  PetscFunctionBegin;
  PetscCall(PetscFree(s->levelptr));
  PetscCall(CUDABackend()->free_bytes(s->rows));
  if (s->graph) FusedKSPCallCUDA(cudaGraphExecDestroy(s->graph));
  *s = LevelSchedule();
  PetscFunctionReturn(PETSC_SUCCESS);
}

constexpr cusparseOperation_t SPSV_OP  = CUSPARSE_OPERATION_NON_TRANSPOSE;
constexpr cusparseSpSVAlg_t   SPSV_ALG = CUSPARSE_SPSV_ALG_DEFAULT;

/* CUSPARSE's analysis of a factor of n >= 1 rows into sc: the copy with the diagonal, cuSPARSE's descriptors, its
   buffer and cusparseSpSV_analysis() (on vectors of its own, freed after it: each solve points vb and vx at its b and x) */
static PetscErrorCode SpSVAnalysis(const TriangularView *T, TrsvSchedule *sc)
{
  const Backend           *be   = CUDABackend();
  const PetscInt           n    = T->n;
  const PetscScalar        one  = 1;
  const cusparseFillMode_t fill = T->upper ? CUSPARSE_FILL_MODE_UPPER : CUSPARSE_FILL_MODE_LOWER;
  const cusparseDiagType_t diag = T->upper ? CUSPARSE_DIAG_TYPE_NON_UNIT : CUSPARSE_DIAG_TYPE_UNIT;
  PetscInt                 nnz;
  PetscScalar             *vectors;
  size_t                   bytes;
  cusparseHandle_t         h;
  cudaStream_t             stream;

  PetscFunctionBegin;
  PetscCheck(!T->upper || T->invdiag, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "An upper triangular factor needs its inverted diagonal");
  PetscCall(be->copy_to_host(&nnz, T->rowptr + n, sizeof(PetscInt)));
  PetscCheck(nnz <= PETSC_INT_MAX - n, PETSC_COMM_SELF, PETSC_ERR_SUP, "The factor has %" PetscInt_FMT " entries off the diagonal: with its %" PetscInt_FMT " diagonal entries, more than %" PetscInt_FMT, nnz, n, PETSC_INT_MAX);
  nnz += n;
  PetscCall(be->malloc_bytes((n + 1) * sizeof(PetscInt), (void **)&sc->rowptr));
  PetscCall(be->malloc_bytes(nnz * sizeof(PetscInt), (void **)&sc->colidx));
  PetscCall(be->malloc_bytes(nnz * sizeof(PetscScalar), (void **)&sc->vals));
  PetscCall(GetStream(&stream));
  TrsvWithDiagonalKernel<<<(unsigned int)(((PetscInt64)n + BLOCK_SIZE) / BLOCK_SIZE), BLOCK_SIZE, 0, stream>>>(n, T->upper, T->rowptr, T->colidx, T->vals, T->invdiag, sc->rowptr, sc->colidx, sc->vals);
  FusedKSPCheckLaunch();
  counters.launches++;
  FusedKSPCallCUSPARSE(cusparseCreateCsr(&sc->mat, n, n, nnz, sc->rowptr, sc->colidx, sc->vals, CUSPARSE_INDEX_PETSCINT, CUSPARSE_INDEX_PETSCINT, CUSPARSE_INDEX_BASE_ZERO, CUDA_PETSCSCALAR));
  FusedKSPCallCUSPARSE(cusparseSpMatSetAttribute(sc->mat, CUSPARSE_SPMAT_FILL_MODE, (void *)&fill, sizeof(fill)));
  FusedKSPCallCUSPARSE(cusparseSpMatSetAttribute(sc->mat, CUSPARSE_SPMAT_DIAG_TYPE, (void *)&diag, sizeof(diag)));
  PetscCall(be->malloc_bytes(2 * n * sizeof(PetscScalar), (void **)&vectors));
  FusedKSPCallCUSPARSE(cusparseCreateDnVec(&sc->vb, n, vectors, CUDA_PETSCSCALAR));
  FusedKSPCallCUSPARSE(cusparseCreateDnVec(&sc->vx, n, vectors + n, CUDA_PETSCSCALAR));
  FusedKSPCallCUSPARSE(cusparseSpSV_createDescr(&sc->spsv));
  PetscCall(GetCusparseHandle(&h));
  FusedKSPCallCUSPARSE(cusparseSpSV_bufferSize(h, SPSV_OP, &one, sc->mat, sc->vb, sc->vx, CUDA_PETSCSCALAR, SPSV_ALG, sc->spsv, &bytes));
  PetscCall(be->malloc_bytes(PetscMax(bytes, (size_t)1), &sc->buffer)); /* an address even when cuSPARSE needs no bytes */
  FusedKSPCallCUSPARSE(cusparseSpSV_analysis(h, SPSV_OP, &one, sc->mat, sc->vb, sc->vx, CUDA_PETSCSCALAR, SPSV_ALG, sc->spsv, sc->buffer));
  FusedKSPCallCUDA(cudaStreamSynchronize(stream)); /* the analysis is done with its vectors */
  PetscCall(be->free_bytes(vectors));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   TrsvAnalysis - Backend::trsv_analysis on the device: LEVELS copies the rows of the level schedule to
   the device, keeps levelptr on the host and records the graph of the level kernels; SYNCFREE allocates
   the ready flags (zero: no solve has finished a row) and the ticket counter; JACOBI the work vector;
   CUSPARSE the factor with its diagonal and cuSPARSE's analysis of it (SpSVAnalysis(); nothing for n = 0).
*/
PetscErrorCode TrsvAnalysis(TriangularView *T, PetscInt nlevels, const PetscInt *levelptr, const PetscInt *rows)
{
  const Backend *be = CUDABackend();
  TrsvSchedule  *sc;
  cudaStream_t   stream;

  PetscFunctionBegin;
  PetscCheck(!T->schedule, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONGSTATE, "The triangular factor has a schedule already: trsv_free first");
  PetscCall(GetStream(&stream));
  PetscCall(PetscNew(&sc));
  T->schedule = sc;
  if (T->algorithm == TrsvAlgorithm::LEVELS) {
    const LevelsToRecord r = {T, sc};

    PetscCall(be->malloc_bytes(2 * sizeof(PetscScalar *), (void **)&sc->io));
    PetscCall(LevelScheduleCreate(T->n, nlevels, levelptr, rows, LaunchLevels, &r, &sc->levels));
  } else if (T->algorithm == TrsvAlgorithm::JACOBI) {
    PetscCheck(T->sweeps >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Negative number of sweeps %" PetscInt_FMT, T->sweeps);
    PetscInt nnz = 0;

    PetscCall(be->malloc_bytes(PetscMax(T->n, 1) * sizeof(PetscScalar), (void **)&sc->work));
    if (T->n) PetscCall(be->copy_to_host(&nnz, T->rowptr + T->n, sizeof(PetscInt)));
    sc->lanes = nnz <= 8 * (PetscInt64)T->n ? 4 : 32;
  } else if (T->algorithm == TrsvAlgorithm::CUSPARSE) {
    if (T->n) PetscCall(SpSVAnalysis(T, sc));
  } else {
    PetscCall(be->malloc_bytes(T->n * sizeof(unsigned int), (void **)&sc->flags));
    PetscCall(be->malloc_bytes(sizeof(unsigned long long), (void **)&sc->ticket));
    FusedKSPCallCUDA(cudaMemsetAsync(sc->flags, 0, T->n * sizeof(unsigned int), stream));
    FusedKSPCallCUDA(cudaMemsetAsync(sc->ticket, 0, sizeof(unsigned long long), stream));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   TrsvCSR - Backend::trsv_csr on the device: SYNCFREE one kernel (and a reset of the flags once every
   2^32 - 1 solves, when the generation wraps), LEVELS one graph replay (or one kernel per level), JACOBI
   one kernel per sweep, CUSPARSE one cusparseSpSV_solve (counted as one launch); nothing waits
*/
PetscErrorCode TrsvCSR(const TriangularView *T, const PetscScalar *b, PetscScalar *x)
{
  TrsvSchedule *sc = (TrsvSchedule *)T->schedule;
  cudaStream_t  stream;

  PetscFunctionBegin;
  PetscCheck(T->n >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Negative size %" PetscInt_FMT, T->n);
  if (!T->n) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCheck(sc, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONGSTATE, "The triangular factor has no schedule: trsv_analysis first");
  PetscCall(GetStream(&stream));
  if (T->algorithm == TrsvAlgorithm::LEVELS && sc->levels.graph) {
    TrsvSetIOKernel<<<1, 1, 0, stream>>>(sc->io, b, x);
    FusedKSPCheckLaunch();
    FusedKSPCallCUDA(cudaGraphLaunch(sc->levels.graph, stream));
    counters.launches += 1 + sc->levels.nlevels;
  } else if (T->algorithm == TrsvAlgorithm::LEVELS) {
    FusedKSPCallCUDA(sc->levels.ForEachLevel([&](PetscInt count, const PetscInt *rows) { TrsvLevelKernel<<<WarpBlocks(count), BLOCK_SIZE, 0, stream>>>(count, rows, T->upper, T->rowptr, T->colidx, T->vals, T->invdiag, b, x); }));
    counters.launches += sc->levels.nlevels;
  } else if (T->algorithm == TrsvAlgorithm::JACOBI) {
    const PetscInt64 threads = (PetscInt64)T->n * sc->lanes;
    const unsigned   blocks  = (unsigned)((threads + BLOCK_SIZE - 1) / BLOCK_SIZE);

    for (PetscInt m = PetscMin(T->sweeps, 1); m <= T->sweeps; ++m) { /* sweep m writes x when sweeps - m is even */
      PetscScalar       *out = (T->sweeps - m) % 2 ? sc->work : x;
      const PetscScalar *in  = out == x ? sc->work : x;

      if (sc->lanes == 4)
        TrsvJacobiKernel<4><<<blocks, BLOCK_SIZE, 0, stream>>>(T->n, T->upper, m <= 1, m == 0, T->rowptr, T->colidx, T->vals, T->invdiag, b, in, out);
      else
        TrsvJacobiKernel<32><<<blocks, BLOCK_SIZE, 0, stream>>>(T->n, T->upper, m <= 1, m == 0, T->rowptr, T->colidx, T->vals, T->invdiag, b, in, out);
      FusedKSPCheckLaunch();
      counters.launches++;
    }
  } else if (T->algorithm == TrsvAlgorithm::CUSPARSE) {
    const PetscScalar one = 1;
    cusparseHandle_t  h;

    PetscCall(GetCusparseHandle(&h));                                /* on `stream` */
    FusedKSPCallCUSPARSE(cusparseDnVecSetValues(sc->vb, (void *)b)); /* SpSV only reads it; cuSPARSE has no setter for constant vectors */
    FusedKSPCallCUSPARSE(cusparseDnVecSetValues(sc->vx, x));
    FusedKSPCallCUSPARSE(cusparseSpSV_solve(h, SPSV_OP, &one, sc->mat, sc->vb, sc->vx, CUDA_PETSCSCALAR, SPSV_ALG, sc->spsv));
    counters.launches++;
  } else {
    const unsigned int blocks = WarpBlocks(T->n);

    if (++sc->generation == 0) { /* wrapped: flags of 2^32 solves ago could read as ready */
      FusedKSPCallCUDA(cudaMemsetAsync(sc->flags, 0, T->n * sizeof(unsigned int), stream));
      sc->generation = 1;
    }
    TrsvSyncFreeKernel<<<blocks, BLOCK_SIZE, 0, stream>>>(T->n, T->upper, T->rowptr, T->colidx, T->vals, T->invdiag, b, x, sc->flags, sc->ticket, sc->taken, sc->generation);
    FusedKSPCheckLaunch();
    sc->taken += (unsigned long long)blocks * TRSV_WARPS;
    counters.launches++;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* TrsvFree - Backend::trsv_free on the device */
PetscErrorCode TrsvFree(TriangularView *T)
{
  return FreeSchedule<TrsvSchedule>(&T->schedule);
}

} // namespace cuda
} // namespace fusedksp
