/* CUDA backend: a chunk of simpler GMRES steps as one persistent kernel (Backend::sgmres_chunk) */
#include "backend/cuda/cuda_persistent.cuh"

namespace fusedksp
{
namespace cuda
{

constexpr size_t SGMRES_STATIC_SMEM = 4096; /* room for the kernel's static shared memory (about 2 KB) */

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

/* The block's rows [begin, begin + chunk) of the cycle's vectors.  OwnRows<true> keeps a copy in
   shared memory - own[d * chunk + r - begin]: d = 0 the current z_i, d = 1..m the basis v_d - so that
   the multi-dot and the update, which read every basis vector of the block's rows, read shared
   memory instead of L2; writes go to both.  OwnRows<false> reads and writes the vectors.          */
template <bool SHARED> struct OwnRows;
template <> struct OwnRows<true> {
  PetscScalar *own;
  PetscInt64   begin;
  PetscInt     chunk;

  __device__ PetscScalar V(const SGMRESChunkKernelArgs &, PetscInt d, PetscInt64 r) const
  {
    return own[(size_t)d * chunk + (r - begin)];
  }
  __device__ PetscScalar Z(const SGMRESChunkKernelArgs &, PetscInt, PetscInt64 r) const
  {
    return own[r - begin];
  }
  __device__ void SetV(const SGMRESChunkKernelArgs &a, PetscInt d, PetscInt64 r, PetscScalar x) const
  {
    own[(size_t)d * chunk + (r - begin)] = x;
    a.V[d][r]                            = x;
  }
  __device__ void SetZ(const SGMRESChunkKernelArgs &a, PetscInt i, PetscInt64 r, PetscScalar x) const
  {
    own[r - begin] = x;
    a.Z[i][r]      = x;
  }
  /* the copies of v_1..v_i0 and z_{i0+1} entering the chunk (visible after the next __syncthreads) */
  __device__ void Load(const SGMRESChunkKernelArgs &a, PetscInt64 end) const
  {
    for (PetscInt64 r = begin + threadIdx.x; r < end; r += BLOCK_SIZE) {
      own[r - begin] = a.Z[a.i0 + 1][r];
      for (PetscInt d = 1; d <= a.i0; ++d) own[(size_t)d * chunk + (r - begin)] = a.V[d][r];
    }
  }
};
template <> struct OwnRows<false> {
  __device__ PetscScalar V(const SGMRESChunkKernelArgs &a, PetscInt d, PetscInt64 r) const
  {
    return a.V[d][r];
  }
  __device__ PetscScalar Z(const SGMRESChunkKernelArgs &a, PetscInt i, PetscInt64 r) const
  {
    return a.Z[i][r];
  }
  __device__ void SetV(const SGMRESChunkKernelArgs &a, PetscInt d, PetscInt64 r, PetscScalar x) const
  {
    a.V[d][r] = x;
  }
  __device__ void SetZ(const SGMRESChunkKernelArgs &a, PetscInt i, PetscInt64 r, PetscScalar x) const
  {
    a.Z[i][r] = x;
  }
  __device__ void Load(const SGMRESChunkKernelArgs &, PetscInt64) const {}
};

/* Entry r of vector d of the multi-dot of step i: v_{d+1} for d < i-1, z_i for d = i-1, w = v_i for d = i */
template <class Own> __device__ inline PetscScalar MultiDotEntry(const SGMRESChunkKernelArgs &a, const Own &own, PetscInt i, PetscInt d, PetscInt64 r)
{
  return d < i - 1 ? own.V(a, d + 1, r) : (d == i - 1 ? own.Z(a, i, r) : own.V(a, i, r));
}

/* The block's partials of the multi-dot of step i over its rows [begin, end): warp w sums the dot
   products d = w, w + WARPS, ..., lane l the rows begin + l, begin + l + 32, ..., so each dot
   product is reduced within one warp and lane 0 stores it; w's entries were written by this block */
template <class Own> __device__ inline void MultiDotPartials(const SGMRESChunkKernelArgs &a, const Own &own, PetscInt i, PetscInt64 begin, PetscInt64 end)
{
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;

  for (PetscInt d = warp; d <= i; d += WARPS) {
    PetscScalar acc = 0;

#pragma unroll 4
    for (PetscInt64 r = begin + lane; r < end; r += 32) acc += MultiDotEntry(a, own, i, d, r) * own.V(a, i, r);
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) acc += __shfl_down_sync(0xffffffffu, acc, offset);
    if (lane == 0) __stcg(a.partials + (size_t)d * gridDim.x + blockIdx.x, acc);
  }
}

/* After a grid barrier: out(e) = the sum over the blocks of the partials at d = index(e), e < count,
   warp e % WARPS summing value e (up to SGMRES_SUM_BATCH values per warp with independent loads),
   the same bits in every block                                                                    */
constexpr int                                            SGMRES_SUM_BATCH = 4;
template <class Index, class Out> __device__ inline void GridSumsN(const PetscScalar *part, PetscInt count, Index index, Out out)
{
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;

  for (PetscInt e0 = warp; e0 < count; e0 += SGMRES_SUM_BATCH * WARPS) {
    PetscScalar v[SGMRES_SUM_BATCH] = {};

    for (unsigned int b = lane; b < gridDim.x; b += 32) {
#pragma unroll
      for (int u = 0; u < SGMRES_SUM_BATCH; ++u)
        if (e0 + u * WARPS < count) v[u] += __ldcg(part + (size_t)index(e0 + u * WARPS) * gridDim.x + b);
    }
#pragma unroll
    for (int u = 0; u < SGMRES_SUM_BATCH; ++u) {
#pragma unroll
      for (int offset = 16; offset > 0; offset /= 2) v[u] += __shfl_xor_sync(0xffffffffu, v[u], offset);
      if (lane == 0 && e0 + u * WARPS < count) out(e0 + u * WARPS) = v[u];
    }
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
   across blocks.  SHARED: the block's rows of the vectors are also kept in shared memory (OwnRows).
*/
template <class Rows, bool SHARED> __global__ void __launch_bounds__(BLOCK_SIZE, 2) SGMRESChunkKernel(const __grid_constant__ SGMRESChunkKernelArgs a, const __grid_constant__ Rows A)
{
  constexpr int                 ROWS_PER_PASS = BLOCK_SIZE / Rows::LANES;
  extern __shared__ PetscScalar own_rows[];
  __shared__ PetscScalar        prev[SGMRESChunkSlot(FUSED_SGMRES_PERSISTENT_RESTART)], cur[SGMRESChunkSlot(FUSED_SGMRES_PERSISTENT_RESTART)];
  const int                     lane  = threadIdx.x % Rows::LANES;
  const ChunkRange              range = BlockChunk(a.n, a.chunk);
  const ChunkControl            ctl   = *a.ctl;
  const PetscInt                m = a.m, nd = SGMRESChunkSlot(m);
  PetscScalar                   res2 = a.slots[m + 2];
  OwnRows<SHARED>               own;

  if (ctl.stopped >= 0) return;
  if constexpr (SHARED) own = {own_rows, range.begin, a.chunk};
  own.Load(a, range.end);
  if (threadIdx.x == 0) prev[m + 1] = a.slots[m + 1];
  for (PetscInt j = 1; j <= a.k; ++j) {
    const PetscInt i    = a.i0 + j;
    PetscScalar   *slot = a.slots + j * nd;
    PetscScalar    h = 1, eta = 0, acc[1] = {0};
    PetscReal      res = 0;

    for (PetscInt64 first = range.begin; first < range.end; first += ROWS_PER_PASS) {
      const PetscInt64 row = first + threadIdx.x / Rows::LANES;
      PetscScalar      sum = 0;

      if (row < range.end) sum = A.Part(row, lane, a.wr, a.Z[i], LoadL2());
      if (Rows::LANES > 1) sum = RowSum<Rows::LANES>(sum);
      if (lane == 0 && row < range.end) own.SetV(a, i, row, sum);
    }
    __syncthreads();
    MultiDotPartials(a, own, i, range.begin, range.end);
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
    for (PetscInt64 r = range.begin + threadIdx.x; r < range.end; r += BLOCK_SIZE) {
      PetscScalar wk = own.V(a, i, r);
#pragma unroll 8
      for (PetscInt v = 0; v < i - 1; ++v) wk -= cur[v] * own.V(a, v + 1, r);
      wk *= scale;
      own.SetV(a, i, r, wk);
      const PetscScalar zk = own.Z(a, i, r) - eta * wk;
      own.SetZ(a, i + 1, r, zk);
      acc[0] += zk * zk;
    }
    BlockPartials(acc, a.partials + (size_t)(m + 1 + j % 2) * gridDim.x);
    GridBarrier();
  }
  if (blockIdx.x == 0 && threadIdx.x < 32)
    GridSumsN(
        a.partials, 1, [&](PetscInt) { return m + 1 + a.k % 2; }, [&](PetscInt) -> PetscScalar & { return a.slots[a.k * nd + m + 1]; });
}

/* The grid of the kernel with the blocks' rows in shared memory: at most MAX_CLUSTER blocks (one
   cluster, which meets at the cluster's hardware barrier) while that leaves each thread
   at most one row, else the grid of PartitionRows()                                                */
static Partition SGMRESChunkPartition(PetscInt n, int lanes)
{
  const Partition cluster = PartitionResident(n, lanes, MAX_CLUSTER);

  return cluster.chunk <= BLOCK_SIZE ? cluster : PartitionRows(n, lanes);
}

/* Launches the kernel for the rows type of the matrix: with the block's rows in shared memory when the
   grid of SGMRESChunkPartition() fits the device at once with them, else on the grid of
   PrepareResident(); *launched = false when the device cannot launch cooperative kernels          */
template <class Rows> static PetscErrorCode LaunchSGMRESChunk(const SGMRESChunkArgs *args, const Rows &rows, bool *launched)
{
  const void           *shared = (const void *)SGMRESChunkKernel<Rows, true>, *global = (const void *)SGMRESChunkKernel<Rows, false>;
  const void           *kernel = global;
  void                 *params[2];
  SGMRESChunkKernelArgs a     = {};
  Partition             part  = SGMRESChunkPartition(rows.A.nrows, Rows::LANES);
  const size_t          bytes = (size_t)(args->m + 1) * part.chunk * sizeof(PetscScalar);
  size_t                smem  = 0;
  int                   device, optin, max_blocks = 0;

  PetscFunctionBegin;
  FusedKSPCallCUDA(cudaGetDevice(&device));
  FusedKSPCallCUDA(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  if (bytes + SGMRES_STATIC_SMEM <= (size_t)optin) {
    FusedKSPCallCUDA(cudaFuncSetAttribute(shared, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
    PetscCall(ResidentBlocks(shared, bytes, &max_blocks));
  }
  if (part.nblocks >= 1 && part.nblocks <= max_blocks) {
    kernel = shared;
    smem   = bytes;
    PetscCall(GetPartials((size_t)SGMRESChunkSlot(args->m) * part.nblocks, &a.partials));
  } else
    PetscCall(PrepareResident(global, rows.A.nrows, Rows::LANES, SGMRESChunkSlot(args->m), &part, &a.partials));
  *launched = part.nblocks > 0;
  if (!*launched) PetscFunctionReturn(PETSC_SUCCESS);
  a.n     = rows.A.nrows;
  a.chunk = part.chunk;
  a.k     = args->k;
  a.i0    = args->i0;
  a.m     = args->m;
  a.keep  = args->keep;
  a.wr    = args->wr;
  a.slots = args->slots;
  a.ctl   = args->ctl;
  for (PetscInt v = 1; v <= args->i0 + args->k; ++v) a.V[v] = args->V[v];
  for (PetscInt v = args->i0 + 1; v <= args->i0 + args->k + 1; ++v) a.Z[v] = args->Z[v];
  params[0] = (void *)&a;
  params[1] = (void *)&rows;
  PetscCall(LaunchResident(kernel, part, params, smem));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   SGMRESChunk - Backend::sgmres_chunk on the device: one cooperative kernel for the k steps when
   args->persistent, the restart is at most FUSED_SGMRES_PERSISTENT_RESTART, the matrix has at most
   FUSED_SGMRES_PERSISTENT_ROWS rows and the device can, else the 3k kernels of SGMRESChunkSteps()
*/
PetscErrorCode SGMRESChunk(const SGMRESChunkArgs *args)
{
  bool launched = false;

  PetscFunctionBegin;
  PetscCheck(args->i0 >= 0 && args->k >= 0 && args->i0 + args->k <= args->m, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Steps %" PetscInt_FMT "..%" PetscInt_FMT " outside the restart cycle of %" PetscInt_FMT, args->i0 + 1, args->i0 + args->k,
             args->m);
  if (args->persistent && args->k > 0 && args->m <= FUSED_SGMRES_PERSISTENT_RESTART && (args->csr ? args->csr->nrows : args->sell->nrows) <= FUSED_SGMRES_PERSISTENT_ROWS) {
    PetscCall(DispatchRows(args->csr, args->sell, [&](auto rows) {
      PetscFunctionBegin;
      PetscCall(LaunchSGMRESChunk(args, rows, &launched));
      PetscFunctionReturn(PETSC_SUCCESS);
    }));
  }
  if (!launched) PetscCall(SGMRESChunkSteps(CUDABackend(), args));
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace cuda
} // namespace fusedksp
