/*
   CUDA backend: the Gram-Schmidt kernels of simpler GMRES (seed 000 Alg. 6).

   The vectors V[j] reach the kernels by value: their device pointers (and, for maxpy_scale, the
   coefficients) are copied into a kernel parameter table, read through __grid_constant__ so that
   indexing it does not copy it to local memory.  No host->device copy and no pinned staging
   buffer are needed, and the table is complete when the launch returns.  A table holds up to
   MAX_TABLE vectors, the most whose pointers and coefficients fit, with the other arguments, in
   the 4 KB of kernel parameters every supported toolkit and device accept; each call therefore
   launches ONE kernel for up to MAX_TABLE vectors (GMRES restarts up to MAX_TABLE - 2), and
   ceil(nv / MAX_TABLE) above that.  Small calls use smaller tables (8 or 64 entries) so that a
   launch does not ship 4 KB of unused parameters.  mdot copies the results of all its dot
   products back in ONE device->host copy however many launches it took.
*/
#include "backend/cuda/cuda_rows.cuh"
#include "backend/iteration.hpp"
#include <climits>

namespace fusedksp
{
namespace cuda
{

/* The vectors of one mdot launch */
template <int CAP> struct VectorTable {
  const PetscScalar *v[CAP];
};

/* The vectors and coefficients of one maxpy_scale launch */
template <int CAP> struct ScaledVectorTable {
  const PetscScalar *v[CAP];
  PetscScalar        coef[CAP];
};

static_assert(sizeof(ScaledVectorTable<MAX_TABLE>) + 64 <= 4096, "a maxpy_scale launch must fit in 4 KB of kernel parameters");

/* Partials of <table.v[k], y> for k < count: the grid is nblocks x ceil(count / MDOT_GROUP);
   block (b, g) reduces chunk b of dot products g*MDOT_GROUP ... g*MDOT_GROUP + 7, reading y once
   for all of them; the grid row's last block writes their sums to red.result[first ...].        */
template <int CAP> __global__ void MDotKernel(PetscInt n, PetscInt chunk, const __grid_constant__ VectorTable<CAP> table, int count, const PetscScalar *y, const Reduction red)
{
  const ChunkRange range           = BlockChunk(n, chunk);
  const int        first           = blockIdx.y * MDOT_GROUP;
  const int        group           = min(MDOT_GROUP, count - first);
  PetscScalar      acc[MDOT_GROUP] = {};

  if (Stopped(red)) return;

  for (PetscInt64 i = range.begin + threadIdx.x; i < range.end; i += blockDim.x) {
    const PetscScalar yi = y[i];
#pragma unroll
    for (int k = 0; k < MDOT_GROUP; ++k)
      if (k < group) acc[k] += table.v[first + k][i] * yi;
  }
  ReduceBlocks(acc, group, red, first);
}

/* y := scale (y - sum_{j < count} table.coef[j] table.v[j]) and, when withdot, the reduction
   of <y, dotvec> (new y; dotvec NULL: <y,y>)                                                   */
template <int CAP> __global__ void MAXPYScaleKernel(PetscInt n, PetscInt chunk, const __grid_constant__ ScaledVectorTable<CAP> table, int count, PetscScalar *y, PetscScalar scale, const PetscScalar *dotvec, bool withdot, const Reduction red)
{
  const ChunkRange range  = BlockChunk(n, chunk);
  PetscScalar      acc[1] = {0};

  for (PetscInt64 i = range.begin + threadIdx.x; i < range.end; i += blockDim.x) {
    PetscScalar yi = y[i];
    for (int j = 0; j < count; ++j) yi -= table.coef[j] * table.v[j][i]; /* the table read in the parameter space */
    yi *= scale;
    y[i] = yi;
    acc[0] += yi * (dotvec ? dotvec[i] : yi);
  }
  ReduceBlocks(acc, withdot ? 1 : 0, red);
}

/* w := scale (w - sum_{j < count} table.coef[j] table.v[j]); znew := zold - eta w (residual-based
   SGMRES), with the block's partial of <znew, znew>                                             */
template <int CAP>
__global__ void SGMRESUpdateKernel(PetscInt n, PetscInt chunk, const __grid_constant__ ScaledVectorTable<CAP> table, int count, PetscScalar *w, PetscScalar scale, PetscScalar eta, const PetscScalar *zold, PetscScalar *znew, const Reduction red)
{
  const ChunkRange range  = BlockChunk(n, chunk);
  PetscScalar      acc[1] = {0};

  for (PetscInt64 i = range.begin + threadIdx.x; i < range.end; i += blockDim.x) {
    PetscScalar wi = w[i];
    for (int j = 0; j < count; ++j) wi -= table.coef[j] * table.v[j][i]; /* as SGMRESOrthogonalEntry(), the table read in the parameter space */
    const PetscScalar zi = SGMRESUpdateEntry(scale, eta, zold[i], wi);
    w[i]                 = wi;
    znew[i]              = zi;
    acc[0] += zi * zi;
  }
  ReduceBlocks(acc, 1, red);
}

/* Backend::sgmres_update_chained: the coefficients are the slot's multi-dot values (cur), h, eta and
   the residual estimate come from SGMRESChunkStep() (the same values everywhere: one branch for the
   grid); block 0 records a stop or the estimate                                                   */
__global__ void SGMRESUpdateChainedKernel(PetscInt n, PetscInt chunk, const __grid_constant__ VectorTable<MAX_TABLE> table, PetscInt i, PetscInt m, PetscReal keep, PetscScalar *w, const PetscScalar *zold, PetscScalar *znew, const PetscScalar *prev,
                                          PetscScalar *cur, ChunkControl *ctl, PetscInt j, const Reduction red)
{
  const ChunkRange range  = BlockChunk(n, chunk);
  PetscScalar      acc[1] = {0}, h = 1, eta = 0;
  PetscReal        res = 0;
  int              stop;

  if (ctl->stopped >= 0) return;
  stop = SGMRESChunkStep(*ctl, j, i, m, keep, prev, cur, &h, &eta, &res);
  if (stop >= 0) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
      ctl->stopped = j - 1;
      ctl->stage   = stop;
    }
    return;
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) cur[m + 2] = res * res;
  const PetscScalar scale = 1 / h;
  for (PetscInt64 k = range.begin + threadIdx.x; k < range.end; k += blockDim.x) {
    PetscScalar wk = w[k];
    for (PetscInt v = 0; v < i - 1; ++v) wk -= cur[v] * table.v[v][k]; /* as SGMRESOrthogonalEntry(), the table read in the parameter space */
    const PetscScalar zk = SGMRESUpdateEntry(scale, eta, zold[k], wk);
    w[k]                 = wk;
    znew[k]              = zk;
    acc[0] += zk * zk;
  }
  ReduceBlocks(acc, 1, red);
}

/* One MDotKernel launch for the dot products first ... first+count-1 (count <= CAP); dot d is
   <V[d], y> for d < nv and <y, y> for d == nv                                                  */
template <int CAP> static PetscErrorCode LaunchMDot(Partition part, PetscInt n, PetscInt nv, const PetscScalar *const *V, const PetscScalar *y, int first, int count, const Reduction &red, cudaStream_t stream)
{
  VectorTable<CAP> table = {};
  const dim3       grid(part.nblocks, (count + MDOT_GROUP - 1) / MDOT_GROUP);
  Reduction        launch = red; /* this launch's dot products are results first ... */

  PetscFunctionBegin;
  PetscCheck((int)grid.y <= MAX_GRID_ROWS, PETSC_COMM_SELF, PETSC_ERR_PLIB, "%u groups of dot products in one launch, at most %d", grid.y, MAX_GRID_ROWS);
  launch.result += first;
  for (int k = 0; k < count; ++k) table.v[k] = first + k < nv ? V[first + k] : y;
  MDotKernel<CAP><<<grid, BLOCK_SIZE, 0, stream>>>(n, part.chunk, table, count, y, launch);
  FusedKSPCheckLaunch();
  counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* One MAXPYScaleKernel launch for the vectors first ... first+count-1 (count <= CAP) */
template <int CAP>
static PetscErrorCode LaunchMAXPYScale(Partition part, PetscInt n, const PetscScalar *coef, const PetscScalar *const *V, int first, int count, PetscScalar *y, PetscScalar scale, const PetscScalar *dotvec, bool withdot, const Reduction &red,
                                       cudaStream_t stream)
{
  ScaledVectorTable<CAP> table = {};

  PetscFunctionBegin;
  for (int k = 0; k < count; ++k) {
    table.v[k]    = V[first + k];
    table.coef[k] = coef[first + k];
  }
  MAXPYScaleKernel<CAP><<<part.nblocks, BLOCK_SIZE, 0, stream>>>(n, part.chunk, table, count, y, scale, dotvec, withdot, red);
  FusedKSPCheckLaunch();
  counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   MDot - Backend::mdot on the device: ceil((nv + selfdot) / MAX_TABLE) kernel launches (one for
   any GMRES restart up to MAX_TABLE - 2) and ONE device->host copy of all results; nothing is
   launched or copied when n == 0 or there is no dot product to compute.  Each group of MDOT_GROUP
   dot products takes FUSED_MDOT_BLOCKS blocks, or more when the groups are few: about one wave of
   blocks in all (WaveBlocks()): with FUSED_MDOT_BLOCKS per group, a cycle's early steps (one or two
   groups) would leave most SMs idle.
*/
PetscErrorCode MDot(PetscInt n, PetscInt nv, const PetscScalar *const *V, const PetscScalar *y, PetscBool selfdot, PetscScalar *dots)
{
  const PetscInt64 ndots  = (PetscInt64)nv + (selfdot ? 1 : 0);
  const PetscInt   groups = (PetscInt)((PetscMin(ndots, (PetscInt64)MAX_TABLE) + MDOT_GROUP - 1) / MDOT_GROUP); /* grid rows of the first launch */
  PetscInt         wave   = 0;
  Partition        part;
  Reduction        red;
  cudaStream_t     stream;

  PetscFunctionBegin;
  if (ndots && n > 0) PetscCall(WaveBlocks((const void *)MDotKernel<MAX_TABLE>, &wave));
  part = PartitionRange(ndots ? n : 0, PetscMax(FUSED_MDOT_BLOCKS, wave / PetscMax(groups, (PetscInt)1))); /* about one wave of blocks for few groups */
  PetscCheck(n >= 0 && nv >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Negative length %" PetscInt_FMT " or number of vectors %" PetscInt_FMT, n, nv);
  PetscCheck(ndots <= INT_MAX / PetscMax(part.nblocks, 1), PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Too many vectors for one multi-dot: %" PetscInt_FMT, nv);
  PetscCheck(nv == 0 || V, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "%" PetscInt_FMT " vectors but V is NULL", nv);
  if (part.nblocks) {
    PetscCall(GetStream(&stream));
    PetscCall(GetReduction((int)ndots, part.nblocks, &red));
    for (int first = 0; first < ndots; first += MAX_TABLE) {
      const int count = (int)PetscMin((PetscInt64)MAX_TABLE, ndots - first);

      if (count <= 8)
        PetscCall(LaunchMDot<8>(part, n, nv, V, y, first, count, red, stream));
      else if (count <= 64)
        PetscCall(LaunchMDot<64>(part, n, nv, V, y, first, count, red, stream));
      else
        PetscCall(LaunchMDot<MAX_TABLE>(part, n, nv, V, y, first, count, red, stream));
    }
  }
  PetscCall(FinishReduction((int)ndots, part.nblocks, dots));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   MAXPYScale - Backend::maxpy_scale on the device: ceil(nv / MAX_TABLE) kernel launches (one when
   nv <= MAX_TABLE, including nv == 0) and, when selfdot != NULL, one device->host copy; nothing
   when n == 0.  Above MAX_TABLE vectors the first launches subtract their share of the sum and the
   last one subtracts the rest, scales and reduces <y,y>: the same operations in
   the same order as one launch.
*/
PetscErrorCode MAXPYScale(PetscInt n, PetscInt nv, const PetscScalar *coef, const PetscScalar *const *V, PetscScalar *y, PetscScalar scale, const PetscScalar *dotvec, PetscScalar *selfdot)
{
  /* without a reduction one entry per thread: a reduction's single block up to 2048 entries made the
     update after a 2K-row fusedsgmres cycle (30 vectors) 6x slower than at 4K rows */
  Partition    part = PartitionRows(n, 1);
  Reduction    red;
  cudaStream_t stream;

  PetscFunctionBegin;
  if (selfdot) PetscCall(PartitionWave((const void *)MAXPYScaleKernel<MAX_TABLE>, n, &part));
  PetscCheck(n >= 0 && nv >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Negative length %" PetscInt_FMT " or number of vectors %" PetscInt_FMT, n, nv);
  PetscCheck(nv == 0 || (V && coef), PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "%" PetscInt_FMT " vectors but V or coef is NULL", nv);
  if (part.nblocks) {
    PetscCall(GetStream(&stream));
    if (selfdot) PetscCall(GetReduction(1, part.nblocks, &red));
    for (PetscInt first = 0;; first += MAX_TABLE) {
      const int         count = (int)PetscMin((PetscInt)MAX_TABLE, nv - first);
      const bool        last  = first + count == nv;
      const PetscScalar s     = last ? scale : 1;

      if (count <= 8)
        PetscCall(LaunchMAXPYScale<8>(part, n, coef, V, (int)first, count, y, s, dotvec, last && selfdot, red, stream));
      else if (count <= 64)
        PetscCall(LaunchMAXPYScale<64>(part, n, coef, V, (int)first, count, y, s, dotvec, last && selfdot, red, stream));
      else
        PetscCall(LaunchMAXPYScale<MAX_TABLE>(part, n, coef, V, (int)first, count, y, s, dotvec, last && selfdot, red, stream));
      if (last) break;
    }
  }
  if (selfdot) PetscCall(FinishReduction(1, part.nblocks, selfdot));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   SGMRESUpdate - Backend::sgmres_update on the device: one launch and one device->host copy when
   nv <= MAX_TABLE; above it the first launches subtract their share of the projections (as
   MAXPYScale does) and the last one also scales, updates the residual and reduces its norm
*/
PetscErrorCode SGMRESUpdate(PetscInt n, PetscInt nv, const PetscScalar *coef, const PetscScalar *const *V, PetscScalar *w, PetscScalar scale, PetscScalar eta, const PetscScalar *zold, PetscScalar *znew, PetscScalar dots[1])
{
  Partition    part;
  Reduction    red;
  cudaStream_t stream;
  PetscInt     first = 0;

  PetscFunctionBegin;
  PetscCall(PartitionWave((const void *)SGMRESUpdateKernel<MAX_TABLE>, n, &part));
  PetscCheck(n >= 0 && nv >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Negative length %" PetscInt_FMT " or number of vectors %" PetscInt_FMT, n, nv);
  if (part.nblocks) {
    PetscCall(GetStream(&stream));
    for (; nv - first > MAX_TABLE; first += MAX_TABLE) PetscCall(MAXPYScale(n, MAX_TABLE, coef + first, V + first, w, 1.0, nullptr, nullptr));
    PetscCall(GetReduction(1, part.nblocks, &red));
    ScaledVectorTable<MAX_TABLE> table = {};
    const int                    count = (int)(nv - first);
    for (int k = 0; k < count; ++k) {
      table.v[k]    = V[first + k];
      table.coef[k] = coef[first + k];
    }
    SGMRESUpdateKernel<MAX_TABLE><<<part.nblocks, BLOCK_SIZE, 0, stream>>>(n, part.chunk, table, count, w, scale, eta, zold, znew, red);
    FusedKSPCheckLaunch();
    counters.launches++;
  }
  PetscCall(FinishReduction(1, part.nblocks, dots));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   SGMRESUpdateChained - Backend::sgmres_update_chained on the device: one kernel launch (also for
   n == 0), result to the reduce target, nothing copied to the host
*/
PetscErrorCode SGMRESUpdateChained(PetscInt n, PetscInt i, PetscInt m, PetscReal keep, const PetscScalar *const *V, PetscScalar *w, const PetscScalar *zold, PetscScalar *znew, const PetscScalar *prev, PetscScalar *cur, ChunkControl *ctl, PetscInt j)
{
  Partition              part;
  VectorTable<MAX_TABLE> table = {};
  cudaStream_t           stream;
  Reduction              red;

  PetscFunctionBegin;
  PetscCall(PartitionWave((const void *)SGMRESUpdateChainedKernel, PetscMax(n, 1), &part));
  PetscCheck(n >= 0 && i >= 1 && i <= m, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Length %" PetscInt_FMT ", step %" PetscInt_FMT " of %" PetscInt_FMT, n, i, m);
  PetscCheck(i - 1 <= MAX_TABLE, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Chunks of simpler GMRES steps take at most %d basis vectors per update, step %" PetscInt_FMT " has %" PetscInt_FMT, MAX_TABLE, i, i - 1);
  PetscCheck(ReduceTargetIsSet(), PETSC_COMM_SELF, PETSC_ERR_ORDER, "sgmres_update_chained needs a reduce target");
  for (PetscInt v = 0; v < i - 1; ++v) table.v[v] = V[v];
  PetscCall(GetStream(&stream));
  PetscCall(GetReduction(1, part.nblocks, &red));
  SGMRESUpdateChainedKernel<<<part.nblocks, BLOCK_SIZE, 0, stream>>>(n, part.chunk, table, i, m, keep, w, zold, znew, prev, cur, ctl, j, red);
  FusedKSPCheckLaunch();
  counters.launches++;
  PetscCall(FinishReduction(1, part.nblocks, nullptr));
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace cuda
} // namespace fusedksp
