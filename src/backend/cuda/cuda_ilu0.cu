/*
   CUDA backend: the numeric ILU(0) factorization (Backend::ilu0_analysis/ilu0_numeric/ilu0_free).

   Row i of the factors depends on the rows k of its entries left of the diagonal (their U parts), so the rows are
   factored level by level in the level schedule of L: one kernel per level, one warp per row, the level kernels
   recorded once by the analysis as a CUDA graph (up to GRAPH_MAX_LEVELS levels; more: stream launches).  A warp
   takes the row's entries left of the diagonal in increasing column order (each needs the updates of the earlier
   ones): l_ik = a_ik / u_kk, then its lanes stride through row k of U and subtract l_ik u_kj from entry (i, j) where
   row i has one (a binary search in the row's sorted columns), the same operations in the same order per entry as
   the host's FactorNumeric().  A last kernel tests the pivots (one thread per row) and splits the factors into L and
   U, and the first failing row comes back in one copy.
*/
#include "backend/cuda/cuda_common.cuh"
#include <petscmat.h>

namespace fusedksp
{
namespace cuda
{

constexpr int ILU0_WARPS = BLOCK_SIZE / 32;

/* What ilu0_numeric returns, in one copy */
struct ILU0Outcome {
  unsigned long long theta;   /* bits of the largest Jacobi row sum (non-negative doubles order as their bits) */
  int                failrow; /* the smallest failing row; n or more: none */
};

struct ILU0Schedule {
  LevelSchedule levels;            /* of L */
  PetscScalar  *invdiag = nullptr; /* device, n: 1 / u_ii of the rows factored so far */
  ILU0Outcome  *outcome = nullptr; /* device */

  PetscErrorCode Release()
  {
    PetscFunctionBegin;
    PetscCall(LevelScheduleDestroy(&levels));
    PetscCall(FreeBuffers({invdiag, outcome}));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
};

/* The position of column col in colidx[lo, hi) (ascending), or -1 */
__device__ inline PetscInt FindColumn(const PetscInt *__restrict__ colidx, PetscInt lo, PetscInt hi, PetscInt col)
{
  while (lo < hi) {
    const PetscInt mid = lo + (hi - lo) / 2, c = colidx[mid];

    if (c == col) return mid;
    if (c < col)
      lo = mid + 1;
    else
      hi = mid;
  }
  return -1;
}

/* One level: warp w factors row rows[w] (see the top) */
__global__ void __launch_bounds__(BLOCK_SIZE) ILU0LevelKernel(PetscInt count, const PetscInt *__restrict__ rows, const PetscInt *__restrict__ rowptr, const PetscInt *__restrict__ colidx, const PetscInt *__restrict__ diag, PetscScalar *lu,
                                                              PetscScalar *invdiag, bool inblocks, PetscReal zeropivot, PetscReal shiftamount)
{
  const PetscInt64 w    = (blockIdx.x * (PetscInt64)blockDim.x + threadIdx.x) / 32;
  const int        lane = threadIdx.x & 31;

  if (w >= count) return; /* whole warps */
  const PetscInt i = rows[w], end = rowptr[i + 1], d = diag[i];
  for (PetscInt k = rowptr[i]; k < d; ++k) {
    const PetscInt    c = colidx[k];
    const PetscScalar l = lu[k] * invdiag[c];

    __syncwarp(); /* every lane has read lu[k] */
    if (lane == 0) lu[k] = l;
    for (PetscInt kk = diag[c] + 1 + lane; kk < rowptr[c + 1]; kk += 32) {
      const PetscInt pos = FindColumn(colidx, k + 1, end, colidx[kk]);

      if (pos >= 0) lu[pos] -= l * lu[kk];
    }
    __syncwarp(); /* the updates are seen by the next entry's lanes */
  }
  if (lane == 0) {
    PetscScalar pivot = lu[d];

    if (inblocks && PetscAbsScalar(pivot) <= zeropivot) pivot += shiftamount;
    lu[d]      = pivot;
    invdiag[i] = 1.0 / pivot;
  }
}

/* Pivot test of each row (see Backend::ilu0_numeric), its Jacobi row sums, and the split into L and U; out->failrow =
   the smallest failing row, out->theta = the largest row sum */
__global__ void __launch_bounds__(BLOCK_SIZE)
    ILU0SplitKernel(PetscInt n, const PetscInt *__restrict__ rowptr, const PetscInt *__restrict__ diag, const PetscScalar *__restrict__ lu, const PetscScalar *__restrict__ invdiag, int shifttype, PetscReal zeropivot,
                    const PetscInt *__restrict__ lrowptr, PetscScalar *__restrict__ lvals, const PetscInt *__restrict__ urowptr, PetscScalar *__restrict__ uvals, PetscScalar *__restrict__ uinvdiag, ILU0Outcome *out)
{
  const PetscInt64 i = blockIdx.x * (PetscInt64)blockDim.x + threadIdx.x;

  if (i >= n) return;
  const PetscInt    start = rowptr[i], end = rowptr[i + 1], d = diag[i];
  const PetscScalar pivot = lu[d];
  PetscReal         rl = 0, ru = 0, rs;
  bool              fail;

  for (PetscInt k = start; k < d; ++k) {
    lvals[lrowptr[i] + (k - start)] = lu[k];
    rl += PetscAbsScalar(lu[k]);
  }
  for (PetscInt k = d + 1; k < end; ++k) {
    uvals[urowptr[i] + (k - d - 1)] = lu[k];
    ru += PetscAbsScalar(lu[k]);
  }
  rs          = rl + ru;
  uinvdiag[i] = invdiag[i];
  atomicMax(&out->theta, (unsigned long long)__double_as_longlong(PetscMax(rl, ru * PetscAbsScalar(invdiag[i]))));
  if (!isfinite(PetscRealPart(pivot)) || !isfinite(PetscImaginaryPart(pivot))) return; /* no zero pivot: it goes into the factor, as on the host */
  switch (shifttype) {
  case MAT_SHIFT_NONZERO:
    fail = PetscAbsScalar(pivot) <= zeropivot * rs;
    break;
  case MAT_SHIFT_POSITIVE_DEFINITE:
    fail = PetscRealPart(pivot) <= zeropivot * rs;
    break;
  case MAT_SHIFT_INBLOCKS:
    fail = false;
    break;
  default:
    fail = PetscAbsScalar(pivot) <= zeropivot;
  }
  if (fail) atomicMin(&out->failrow, (int)i);
}

static unsigned int WarpBlocks(PetscInt rows)
{
  return (unsigned int)((rows + ILU0_WARPS - 1) / ILU0_WARPS);
}

/* The level kernels of a factorization (RecordOnSideStream()) */
struct ILU0ToRecord {
  const ILU0View     *F;
  const ILU0Schedule *sc;
};

static cudaError_t LaunchILU0Levels(cudaStream_t stream, const void *ctx)
{
  const ILU0View     *F  = ((const ILU0ToRecord *)ctx)->F;
  const ILU0Schedule *sc = ((const ILU0ToRecord *)ctx)->sc;

  return sc->levels.ForEachLevel(
      [&](PetscInt count, const PetscInt *rows) { ILU0LevelKernel<<<WarpBlocks(count), BLOCK_SIZE, 0, stream>>>(count, rows, F->rowptr, F->colidx, F->diag, F->lu, sc->invdiag, F->shifttype == MAT_SHIFT_INBLOCKS, F->zeropivot, F->shiftamount); });
}

/* ILU0Analysis - Backend::ilu0_analysis on the device: the rows of L's level schedule, the graph of the level kernels */
PetscErrorCode ILU0Analysis(ILU0View *F, PetscInt nlevels, const PetscInt *levelptr, const PetscInt *rows)
{
  const Backend *be = CUDABackend();
  ILU0Schedule  *sc;
  ILU0ToRecord   r = {F, nullptr};

  PetscFunctionBegin;
  PetscCheck(!F->schedule, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONGSTATE, "The factorization has a schedule already: ilu0_free first");
  PetscCall(PetscNew(&sc));
  F->schedule = sc;
  r.sc        = sc;
  PetscCall(be->malloc_bytes(PetscMax(F->n, 1) * sizeof(PetscScalar), (void **)&sc->invdiag));
  PetscCall(be->malloc_bytes(sizeof(ILU0Outcome), (void **)&sc->outcome));
  PetscCall(LevelScheduleCreate(F->n, nlevels, levelptr, rows, LaunchILU0Levels, &r, &sc->levels));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ILU0Numeric - Backend::ilu0_numeric on the device: the level kernels (graph), the test-and-split kernel, one wait */
PetscErrorCode ILU0Numeric(const ILU0View *F, const TriangularView *L, const TriangularView *U, PetscInt *failrow, PetscReal *theta)
{
  const Backend *be = CUDABackend();
  ILU0Schedule  *sc = (ILU0Schedule *)F->schedule;
  cudaStream_t   stream;
  ILU0Outcome    out;

  PetscFunctionBegin;
  PetscCheck(sc, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONGSTATE, "The factorization has no schedule: ilu0_analysis first");
  *failrow = -1;
  *theta   = 0;
  if (!F->n) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(GetStream(&stream));
  FusedKSPCallCUDA(cudaMemsetAsync(sc->outcome, 0, sizeof(ILU0Outcome), stream));      /* theta 0.0 */
  FusedKSPCallCUDA(cudaMemsetAsync(&sc->outcome->failrow, 0x7f, sizeof(int), stream)); /* > every row: none failed */
  if (sc->levels.graph)
    FusedKSPCallCUDA(cudaGraphLaunch(sc->levels.graph, stream));
  else {
    const ILU0ToRecord r = {F, sc};

    FusedKSPCallCUDA(LaunchILU0Levels(stream, &r));
  }
  counters.launches += sc->levels.nlevels;
  ILU0SplitKernel<<<(unsigned)((F->n + BLOCK_SIZE - 1) / BLOCK_SIZE), BLOCK_SIZE, 0, stream>>>(F->n, F->rowptr, F->diag, F->lu, sc->invdiag, F->shifttype, F->zeropivot, L->rowptr, (PetscScalar *)L->vals, U->rowptr, (PetscScalar *)U->vals,
                                                                                               (PetscScalar *)U->invdiag, sc->outcome);
  FusedKSPCheckLaunch();
  counters.launches++;
  PetscCall(be->copy_to_host(&out, sc->outcome, sizeof(ILU0Outcome)));
  *failrow = out.failrow < F->n ? out.failrow : -1;
  static_assert(sizeof(out.theta) == sizeof(*theta), "theta's bits");
  PetscCall(PetscMemcpy(theta, &out.theta, sizeof(*theta)));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ILU0Free - Backend::ilu0_free on the device */
PetscErrorCode ILU0Free(ILU0View *F)
{
  return FreeSchedule<ILU0Schedule>(&F->schedule);
}

} // namespace cuda
} // namespace fusedksp
