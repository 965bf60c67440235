/*
   CUDA backend: sparse triangular solves (Backend::trsv_csr), two algorithms.

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
   of each level in a device array; one kernel per level on the stream, one warp per row of the level.
*/
#include "backend/cuda/cuda_common.cuh"

namespace fusedksp
{
namespace cuda
{

constexpr int TRSV_WARPS = BLOCK_SIZE / 32; /* warps (rows) per thread block */

/* The analysis data of one factor (TriangularView::schedule) */
struct TrsvSchedule {
  /* LEVELS */
  PetscInt  nlevels  = 0;
  PetscInt *levelptr = nullptr; /* host, nlevels + 1 */
  PetscInt *rows     = nullptr; /* device, n: the rows level by level */
  /* SYNCFREE */
  unsigned int       *flags      = nullptr; /* device, n: generation of the solve that finished the row */
  unsigned long long *ticket     = nullptr; /* device: tickets taken since the analysis                */
  unsigned int        generation = 0;       /* of the last solve                                        */
  unsigned long long  taken      = 0;       /* tickets taken by the launches so far                     */
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

__global__ void __launch_bounds__(BLOCK_SIZE) TrsvLevelKernel(PetscInt count, const PetscInt *__restrict__ rows, bool upper, const PetscInt *__restrict__ rowptr, const PetscInt *__restrict__ colidx, const PetscScalar *__restrict__ vals,
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

/* Thread blocks of a launch with one warp for each of `rows` rows */
static unsigned int WarpBlocks(PetscInt rows)
{
  return (unsigned int)((rows + TRSV_WARPS - 1) / TRSV_WARPS);
}

/*
   TrsvAnalysis - Backend::trsv_analysis on the device: LEVELS copies the rows of the level schedule to
   the device and keeps levelptr on the host; SYNCFREE allocates the ready flags (zero: no solve has
   finished a row) and the ticket counter.
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
    sc->nlevels = nlevels;
    PetscCall(PetscMalloc1(nlevels + 1, &sc->levelptr));
    PetscCall(PetscArraycpy(sc->levelptr, levelptr, nlevels + 1));
    PetscCall(be->malloc_bytes(T->n * sizeof(PetscInt), (void **)&sc->rows));
    PetscCall(be->copy_to_backend(sc->rows, rows, T->n * sizeof(PetscInt)));
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
   2^32 - 1 solves, when the generation wraps), LEVELS one kernel per level; nothing waits
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
  if (T->algorithm == TrsvAlgorithm::LEVELS) {
    for (PetscInt l = 0; l < sc->nlevels; ++l) {
      const PetscInt count = sc->levelptr[l + 1] - sc->levelptr[l];

      TrsvLevelKernel<<<WarpBlocks(count), BLOCK_SIZE, 0, stream>>>(count, sc->rows + sc->levelptr[l], T->upper, T->rowptr, T->colidx, T->vals, T->invdiag, b, x);
      FusedKSPCheckLaunch();
      counters.launches++;
    }
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
  const Backend *be = CUDABackend();
  TrsvSchedule  *sc = (TrsvSchedule *)T->schedule;

  PetscFunctionBegin;
  if (!sc) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(PetscFree(sc->levelptr));
  PetscCall(be->free_bytes(sc->rows));
  PetscCall(be->free_bytes(sc->flags));
  PetscCall(be->free_bytes(sc->ticket));
  PetscCall(PetscFree(sc));
  T->schedule = nullptr;
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace cuda
} // namespace fusedksp
