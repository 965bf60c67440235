/* CUDA backend: a chunk of simpler GMRES steps as one persistent kernel (Backend::sgmres_chunk) */
#include "backend/cuda/cuda_persistent.cuh"

namespace fusedksp
{
namespace cuda
{

constexpr int SGMRES_MAX_DOTS  = FUSED_SGMRES_PERSISTENT_RESTART + 1; /* a multi-dot: <v_1,w>..<v_{i-1},w>, <z_i,w>, <w,w> */
constexpr int SGMRES_DOT_GROUP = 8;                                   /* dot products one pass over the block's rows sums */

/* The kernel's scalars and the cycle's vectors by step number (see SGMRESChunkArgs), its rows per
   block, and its partials: per block, the multi-dot's i+1 values at d = 0..i and <z,z> of the
   update at d = m+1 or m+2 (steps alternate: a fast block's update never overwrites the value a
   slow block still sums), at partials[d * gridDim.x + blockIdx.x]                              */
struct SGMRESChunkKernelArgs {
  PetscInt           n, chunk, k, i0, m;
  PetscReal          keep;
  const PetscScalar *wr;
  PetscScalar       *slots, *partials;
  ChunkControl      *ctl;
  PetscScalar       *V[FUSED_SGMRES_PERSISTENT_RESTART + 1];
  PetscScalar       *Z[FUSED_SGMRES_PERSISTENT_RESTART + 2];
};

static_assert(sizeof(SGMRESChunkKernelArgs) + 128 <= 4096, "the kernel's parameters must fit in 4 KB");

/* Vector d of the multi-dot of step i: v_{d+1} for d < i-1, z_i for d = i-1, w = v_i for d = i */
__device__ inline const PetscScalar *MultiDotVector(const SGMRESChunkKernelArgs &a, PetscInt i, PetscInt d)
{
  return d < i - 1 ? a.V[d + 1] : (d == i - 1 ? a.Z[i] : a.V[i]);
}

/* The block's partials of the multi-dot of step i over its rows [begin, end), SGMRES_DOT_GROUP dot
   products per pass (their loads are independent); w's entries were written by this block       */
__device__ inline void MultiDotPartials(const SGMRESChunkKernelArgs &a, PetscInt i, PetscInt64 begin, PetscInt64 end, PetscScalar (*warp_sums)[WARPS])
{
  const int          lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const PetscScalar *w = a.V[i];

  for (PetscInt d0 = 0; d0 <= i; d0 += SGMRES_DOT_GROUP) {
    PetscScalar acc[SGMRES_DOT_GROUP] = {};

    for (PetscInt64 r = begin + threadIdx.x; r < end; r += BLOCK_SIZE) {
      const PetscScalar wk = w[r];
#pragma unroll
      for (int g = 0; g < SGMRES_DOT_GROUP; ++g)
        if (d0 + g <= i) acc[g] += MultiDotVector(a, i, d0 + g)[r] * wk;
    }
#pragma unroll
    for (int g = 0; g < SGMRES_DOT_GROUP; ++g) {
#pragma unroll
      for (int offset = 16; offset > 0; offset /= 2) acc[g] += __shfl_down_sync(0xffffffffu, acc[g], offset);
      if (lane == 0 && d0 + g <= i) warp_sums[d0 + g][warp] = acc[g];
    }
  }
  __syncthreads();
  for (PetscInt d = threadIdx.x; d <= i; d += BLOCK_SIZE) {
    PetscScalar v = 0;
#pragma unroll
    for (int w8 = 0; w8 < WARPS; ++w8) v += warp_sums[d][w8];
    __stcg(a.partials + (size_t)d * gridDim.x + blockIdx.x, v);
  }
}

/* After a grid barrier: out(e) = the sum over the blocks of the partials at d = index(e), e < count,
   warp e % WARPS summing value e, the same bits in every block                                    */
template <class Index, class Out> __device__ inline void GridSumsN(const PetscScalar *part, PetscInt count, Index index, Out out)
{
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;

  for (PetscInt e = warp; e < count; e += WARPS) {
    const PetscScalar *p = part + (size_t)index(e) * gridDim.x;
    PetscScalar        v = 0;
    for (unsigned int b = lane; b < gridDim.x; b += 32) v += __ldcg(p + b);
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    if (lane == 0) out(e) = v;
  }
}

/*
   SGMRESChunkKernel - steps i = i0+1 .. i0+k of a restart cycle, each: w = v_i = Op z_i on the
   block's rows (z_i read from L2: other blocks wrote it); the block's partials of the multi-dot; a
   grid barrier; every block sums the multi-dot and the previous update's <z_i,z_i> (block 0 stores
   them in the slots); SGMRESChunkStep() on them (all blocks alike: a stop ends the kernel, block 0
   records it as sgmres_update_chained does); the update of the block's rows, v_i = (w - sum_j
   R_{j,i} v_j)/h and z_{i+1} = z_i - eta v_i, with its partial of <z_{i+1},z_{i+1}>; a grid barrier
   (z_{i+1} complete).  Block b owns rows [b chunk, (b+1) chunk) in every phase, so only z is read
   across blocks.
*/
template <class Rows> __global__ void __launch_bounds__(BLOCK_SIZE) SGMRESChunkKernel(const __grid_constant__ SGMRESChunkKernelArgs a, const __grid_constant__ Rows A)
{
  constexpr int          ROWS_PER_PASS = BLOCK_SIZE / Rows::LANES;
  __shared__ PetscScalar warp_sums[SGMRES_MAX_DOTS][WARPS];
  __shared__ PetscScalar prev[SGMRESChunkSlot(FUSED_SGMRES_PERSISTENT_RESTART)], cur[SGMRESChunkSlot(FUSED_SGMRES_PERSISTENT_RESTART)];
  const int              lane  = threadIdx.x % Rows::LANES;
  const ChunkRange       range = BlockChunk(a.n, a.chunk);
  const ChunkControl     ctl   = *a.ctl;
  const PetscInt         m = a.m, nd = SGMRESChunkSlot(m);
  PetscScalar            res2 = a.slots[m + 2];

  if (ctl.stopped >= 0) return;
  if (threadIdx.x == 0) prev[m + 1] = a.slots[m + 1];
  for (PetscInt j = 1; j <= a.k; ++j) {
    const PetscInt     i = a.i0 + j;
    const PetscScalar *z = a.Z[i];
    PetscScalar       *w = a.V[i], *slot = a.slots + j * nd;
    PetscScalar        h = 1, eta = 0, acc[1] = {0};
    PetscReal          res = 0;

    for (PetscInt64 first = range.begin; first < range.end; first += ROWS_PER_PASS) {
      const PetscInt64 row = first + threadIdx.x / Rows::LANES;
      PetscScalar      sum = 0;

      if (row < range.end) sum = A.Part(row, lane, a.wr, z, LoadL2());
      if (Rows::LANES > 1) sum = RowSum<Rows::LANES>(sum);
      if (lane == 0 && row < range.end) w[row] = sum;
    }
    __syncthreads();
    MultiDotPartials(a, i, range.begin, range.end, warp_sums);
    GridBarrier();
    GridSumsN(
        a.partials, j > 1 ? i + 2 : i + 1, [&](PetscInt e) { return e <= i ? e : m + 1 + (j - 1) % 2; }, [&](PetscInt e) -> PetscScalar & { return e <= i ? cur[e] : prev[m + 1]; });
    if (threadIdx.x == 0) prev[m + 2] = res2;
    __syncthreads();
    if (blockIdx.x == 0) {
      for (PetscInt d = threadIdx.x; d <= i; d += BLOCK_SIZE) slot[d] = cur[d];
      if (j > 1 && threadIdx.x == 0) a.slots[(j - 1) * nd + m + 1] = prev[m + 1];
    }
    const int stop = SGMRESChunkStep(ctl, j, i, m, a.keep, prev, cur, &h, &eta, &res);
    if (stop >= 0) {
      if (blockIdx.x == 0 && threadIdx.x == 0) {
        a.ctl->stopped = j - 1;
        a.ctl->stage   = stop;
      }
      return;
    }
    res2 = res * res;
    if (blockIdx.x == 0 && threadIdx.x == 0) slot[m + 2] = res2;
    const PetscScalar scale = 1 / h;
    PetscScalar      *znew  = a.Z[i + 1];
    for (PetscInt64 r = range.begin + threadIdx.x; r < range.end; r += BLOCK_SIZE) {
      PetscScalar wk = w[r];
#pragma unroll 8
      for (PetscInt v = 0; v < i - 1; ++v) wk -= cur[v] * a.V[v + 1][r];
      wk *= scale;
      w[r]                 = wk;
      const PetscScalar zk = z[r] - eta * wk;
      znew[r]              = zk;
      acc[0] += zk * zk;
    }
    BlockPartials(acc, a.partials + (size_t)(m + 1 + j % 2) * gridDim.x);
    GridBarrier();
  }
  if (blockIdx.x == 0 && threadIdx.x < 32)
    GridSumsN(
        a.partials, 1, [&](PetscInt) { return m + 1 + a.k % 2; }, [&](PetscInt) -> PetscScalar & { return a.slots[a.k * nd + m + 1]; });
}

/*
   SGMRESChunk - Backend::sgmres_chunk on the device: one cooperative kernel for the k steps when
   args->persistent, the restart is at most FUSED_SGMRES_PERSISTENT_RESTART and the device can, else
   the 3k kernels of SGMRESChunkSteps()
*/
PetscErrorCode SGMRESChunk(const SGMRESChunkArgs *args)
{
  bool launched = false;

  PetscFunctionBegin;
  PetscCheck(args->i0 >= 0 && args->k >= 0 && args->i0 + args->k <= args->m, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Steps %" PetscInt_FMT "..%" PetscInt_FMT " outside the restart cycle of %" PetscInt_FMT, args->i0 + 1, args->i0 + args->k,
             args->m);
  if (args->persistent && args->k > 0 && args->m <= FUSED_SGMRES_PERSISTENT_RESTART) {
    PetscCall(DispatchRows(args->csr, args->sell, [&](auto rows) {
      using Rows                   = decltype(rows);
      const void           *kernel = (const void *)SGMRESChunkKernel<Rows>;
      SGMRESChunkKernelArgs a      = {};
      Partition             part;

      PetscFunctionBegin;
      PetscCall(PrepareResident(kernel, rows.A.nrows, Rows::LANES, SGMRESChunkSlot(args->m), &part, &a.partials));
      if (part.nblocks) {
        void *params[] = {(void *)&a, (void *)&rows};
        a.n            = rows.A.nrows;
        a.chunk        = part.chunk;
        a.k            = args->k;
        a.i0           = args->i0;
        a.m            = args->m;
        a.keep         = args->keep;
        a.wr           = args->wr;
        a.slots        = args->slots;
        a.ctl          = args->ctl;
        for (PetscInt v = 1; v <= args->i0 + args->k; ++v) a.V[v] = args->V[v];
        for (PetscInt v = args->i0 + 1; v <= args->i0 + args->k + 1; ++v) a.Z[v] = args->Z[v];
        PetscCall(LaunchResident(kernel, part, params));
        launched = true;
      }
      PetscFunctionReturn(PETSC_SUCCESS);
    }));
  }
  if (!launched) PetscCall(SGMRESChunkSteps(CUDABackend(), args));
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace cuda
} // namespace fusedksp
