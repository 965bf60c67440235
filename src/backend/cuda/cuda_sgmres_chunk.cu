/* CUDA backend: a chunk of simpler GMRES steps as one persistent kernel (Backend::sgmres_chunk) */
#include "backend/cuda/cuda_persistent.cuh"
#include "backend/iteration.hpp"

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
    acc = LaneSum(acc);
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
      v[u] = LaneSum(v[u]);
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
template <class Rows, bool SHARED> __global__ void __launch_bounds__(BLOCK_SIZE, SGMRES_GRID_BLOCKS_PER_SM) SGMRESChunkKernel(const __grid_constant__ SGMRESChunkKernelArgs a, const __grid_constant__ Rows A)
{
  extern __shared__ PetscScalar own_rows[];
  __shared__ PetscScalar        prev[SGMRESChunkSlot(FUSED_SGMRES_PERSISTENT_RESTART)], cur[SGMRESChunkSlot(FUSED_SGMRES_PERSISTENT_RESTART)];
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

    ForRowSums<Rows::LANES, BLOCK_SIZE, 0>(
        range.begin, range.end, [&](PetscInt64 row, int lane) { return A.Part(row, lane, a.wr, a.Z[i], LoadL2()); }, [&](PetscInt64 row, PetscScalar sum) { own.SetV(a, i, row, sum); });
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
      PetscScalar       wk = SGMRESOrthogonalEntry(own.V(a, i, r), i - 1, cur, [&](PetscInt v) { return own.V(a, v + 1, r); });
      const PetscScalar zk = SGMRESUpdateEntry(scale, eta, own.Z(a, i, r), wk);
      own.SetV(a, i, r, wk);
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

/* The kernel arguments a chunk kernel takes from args as they are: the steps, the scalars and the
   cycle's vectors V[1..i0+k], Z[1..i0+k+1] (a.V, a.Z hold at least that many)                     */
template <class KernelArgs> static void SetStepArgs(const SGMRESChunkArgs *args, KernelArgs &a)
{
  a.k     = args->k;
  a.i0    = args->i0;
  a.m     = args->m;
  a.keep  = args->keep;
  a.wr    = args->wr;
  a.slots = args->slots;
  a.ctl   = args->ctl;
  for (PetscInt v = 1; v <= args->i0 + args->k; ++v) a.V[v] = args->V[v];
  for (PetscInt v = 1; v <= args->i0 + args->k + 1; ++v) a.Z[v] = args->Z[v];
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
  SetStepArgs(args, a);
  params[0] = (void *)&a;
  params[1] = (void *)&rows;
  PetscCall(LaunchResident(kernel, part, params, smem));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The resident kernel (restart at most SGMRES_RESIDENT_RESTART): a step's reduced values fit one
   warp, value d in lane d - the multi-dot d = 0..i and <z_i,z_i> at i + 1                         */
static_assert(SGMRES_RESIDENT_RESTART + 2 <= 32, "a step's values fit one warp");

/* The resident kernel's scalars and vectors (see SGMRESChunkKernelArgs).  chunk: the rows of the
   product's input wr.*z in each block's shared memory; stride: the distance of the block's other
   vectors there (odd, so that the lanes of a warp reading entry q of 32 vectors hit distinct banks);
   room: each block's dynamic shared memory after those vectors, for the basis and the matrix rows */
struct SGMRESResidentArgs {
  PetscInt           n, chunk, stride, k, i0, m;
  size_t             room;
  PetscReal          keep;
  const PetscScalar *wr;
  PetscScalar       *slots;
  ChunkControl      *ctl;
  PetscScalar       *V[SGMRES_RESIDENT_RESTART + 1];
  PetscScalar       *Z[SGMRES_RESIDENT_RESTART + 2];
};

/*
   SGMRESChunkResidentKernel - the chunk of SGMRESChunkKernel on at most FUSED_RESIDENT_CHUNK_BLOCKS
   blocks of THREADS threads and R * THREADS rows (one block, or one cluster: CLUSTER; see
   LoadResident).  Warp w of a block owns the block's rows [32 R w, 32 R (w + 1)), its lane l the
   rows 32 R w + l + 32 q, q < R, in every phase; a thread keeps z_i and w = Op z_i of its rows in
   registers.  The block's shared memory holds wr.*z_i (which the sparse product gathers, other
   blocks' rows through distributed shared memory), z_i and w, the matrix rows when they fit (at its
   end) and as many basis vectors v_1, v_2, ... as fit in the rest; later ones are read from global
   memory, own rows only.
   Step i: w = A (wr.*z_i); lane d of each warp sums value d of the step over the warp's rows - the
   multi-dot <v_{d+1},w> (d < i-1), <z_i,w>, <w,w>, and <z_i,z_i> (d = i+1); warp 0 adds the warps'
   sums and stores them into every block's inbox (ClusterMailbox: no cluster barrier), then adds the
   blocks' sums in rank order (the same bits in every block); thread 0 of each block runs
   SGMRESChunkStep() - the test of the previous estimate while the sums arrive, the column (a stop
   ends the chunk in every block alike), the estimate while the block waits at the step's last
   barrier; the update v_i = (w - sum_j R_{j,i} v_j)/h, z_{i+1} = z_i - eta v_i of the thread's rows,
   also written to global memory; a barrier (wr.*z_{i+1} complete).
   Blocks of 4 warps: fewer rows per SM shorten the multi-dot and the update, which wait on shared
   memory.
*/
template <class Rows, bool CLUSTER, int THREADS, int R> __global__ void __launch_bounds__(THREADS, 1) SGMRESChunkResidentKernel(const __grid_constant__ SGMRESResidentArgs a, const __grid_constant__ Rows A)
{
  constexpr PetscInt            ROWS = R * THREADS, WARP_ROWS = 32 * R;
  constexpr int                 WARPS = THREADS / 32;
  extern __shared__ PetscScalar resident_vecs[];
  __shared__ PetscScalar        prev[SGMRESChunkSlot(SGMRES_RESIDENT_RESTART)], cur[32], warp_sums[WARPS][32], inbox[CLUSTER ? FUSED_RESIDENT_CHUNK_BLOCKS : 1][32], coef[2];
  __shared__ unsigned long long inbox_bar;
  __shared__ int                stop;
  const int                     lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const PetscInt                begin = (PetscInt)blockIdx.x * ROWS, nloc = PetscMin(a.n - begin, ROWS), row0 = warp * WARP_ROWS;
  const PetscInt                wrows = PetscMax((PetscInt)0, PetscMin(nloc - row0, WARP_ROWS)); /* the warp's rows */
  const PetscInt                m = a.m, nd = SGMRESChunkSlot(m), stride = a.stride;
  PetscScalar *const zw = resident_vecs, *const ws = zw + a.chunk, *const zs = a.wr ? ws + stride : zw, *const basis = ws + (a.wr ? 2 : 1) * stride;
  const size_t                      matrix      = (ResidentRowsBytes(A.A, begin, nloc) + sizeof(PetscScalar) - 1) / sizeof(PetscScalar) * sizeof(PetscScalar);
  const bool                        matrix_fits = matrix <= a.room;
  const PetscInt                    nshared     = (PetscInt)PetscMin((size_t)m, (a.room - (matrix_fits ? matrix : 0)) / (stride * sizeof(PetscScalar))); /* basis vectors in shared memory */
  const LoadResident<CLUSTER, ROWS> load_z      = {SharedAddress(zw)};
  const ChunkControl                ctl         = *a.ctl;
  PetscScalar                       z[R], w[R], wr[R], res2 = a.slots[m + 2];
  PetscInt                          j;
  Rows                              rows = A;

  if (ctl.stopped >= 0) return;
  ResidentMatrixRows(A.A, begin, nloc, reinterpret_cast<char *>(basis) + (matrix_fits ? a.room - matrix : 0), matrix_fits ? matrix : 0, rows.A);
#pragma unroll
  for (int q = 0; q < R; ++q) {
    const PetscInt r = row0 + lane + 32 * q;
    z[q] = w[q] = 0;
    wr[q]       = 1;
    if (r < nloc) {
      z[q]  = a.Z[a.i0 + 1][begin + r];
      wr[q] = a.wr ? a.wr[begin + r] : 1;
      zs[r] = z[q];
      zw[r] = wr[q] * z[q];
      for (PetscInt v = 1; v <= PetscMin(a.i0, nshared); ++v) basis[(v - 1) * stride + r] = a.V[v][begin + r];
    }
  }
  const ClusterMailbox mailbox = {(unsigned int)__cvta_generic_to_shared(&inbox_bar)};
  if (threadIdx.x == 0) {
    prev[m + 1] = a.slots[m + 1];
    if (CLUSTER) mailbox.Init();
  }
  ResidentSync<CLUSTER>(); /* the matrix rows, wr.*z of every block, the mailbox */
  for (j = 1; j <= a.k; ++j) {
    const PetscInt i = a.i0 + j;

    if constexpr (Rows::LANES == 1) {
#pragma unroll
      for (int q = 0; q < R; ++q) {
        const PetscInt r = row0 + lane + 32 * q;
        if (r < nloc) ws[r] = w[q] = rows.Part(r, 0, nullptr, zw, load_z);
      }
      __syncwarp();
    } else {
      ForRowSums<Rows::LANES, THREADS, 0>((PetscInt)0, nloc, [&](PetscInt row, int row_lane) { return rows.Part(row, row_lane, nullptr, zw, load_z); }, [&](PetscInt row, PetscScalar sum) { ws[row] = sum; });
      __syncthreads();
#pragma unroll
      for (int q = 0; q < R; ++q) {
        const PetscInt r = row0 + lane + 32 * q;
        if (r < nloc) w[q] = ws[r];
      }
    }
    { /* lane d: value d of the step over the warp's rows, in four chains */
      const PetscScalar *x = nullptr, *y = ws + row0;
      PetscScalar        s[4] = {0, 0, 0, 0};

      if (lane < i - 1)
        x = lane < nshared ? basis + lane * stride + row0 : a.V[lane + 1] + begin + row0;
      else if (lane == i - 1)
        x = zs + row0;
      else if (lane == i)
        x = ws + row0;
      else if (lane == i + 1)
        x = y = zs + row0;
      if (x) {
#pragma unroll
        for (int q = 0; q < WARP_ROWS; ++q) /* every load issued at once: some come from L2 */
          if (q < wrows) s[q % 4] += x[q] * y[q];
      }
      warp_sums[warp][lane] = (s[0] + s[1]) + (s[2] + s[3]);
    }
    __syncthreads();
    if (warp == 0) {
      PetscScalar part[4]        = {0, 0, 0, 0}, v;
      bool        estimate_stops = false; /* lane 0: the estimate of the step before stops the chunk */
#pragma unroll
      for (int u = 0; u < WARPS; ++u) part[u % 4] += warp_sums[u][lane];
      v = (part[0] + part[1]) + (part[2] + part[3]);
      if constexpr (CLUSTER) { /* the block's sums to every block's inbox (the barrier after the last update separates the rounds) */
        for (unsigned int b = 0; b < gridDim.x; ++b) mailbox.Store(&inbox[blockIdx.x][lane], v, b);
        if (lane == 0) {
          mailbox.Expect(gridDim.x * 32 * sizeof(PetscScalar));
          estimate_stops = ChunkNormSqStops(ctl, j - 1, res2); /* while the other blocks' sums arrive */
        }
        mailbox.Wait((j - 1) % 2);
        v = 0;
        for (unsigned int b = 0; b < gridDim.x; ++b) v += inbox[b][lane];
      } else if (lane == 0)
        estimate_stops = ChunkNormSqStops(ctl, j - 1, res2);
      cur[lane] = v;
      if (blockIdx.x == 0 && lane <= i) a.slots[j * nd + lane] = v;
      __syncwarp();
      if (lane == 0) { /* SGMRESChunkStep(), its estimate after the update */
        PetscScalar h = 1, eta = 0;

        if (j > 1) prev[m + 1] = cur[i + 1]; /* <z_i,z_i> */
        stop    = estimate_stops ? 0 : SGMRESChunkColumn(i, a.keep, cur, &h, &eta);
        coef[0] = 1 / h;
        coef[1] = eta;
        if (blockIdx.x == 0) {
          if (j > 1) a.slots[(j - 1) * nd + m + 1] = prev[m + 1];
          if (stop >= 0) {
            a.ctl->stopped = j - 1;
            a.ctl->stage   = stop;
          }
        }
      }
    }
    __syncthreads();
    if (stop >= 0) break;
    const PetscScalar scale = coef[0], eta = coef[1];
    const PetscInt    vs = PetscMin(i - 1, nshared);
#pragma unroll
    for (int q = 0; q < R; ++q) {
      const PetscInt r = row0 + lane + 32 * q;
      if (r < nloc) {
        PetscScalar wk = w[q];

#pragma unroll 8
        for (PetscInt v = 0; v < vs; ++v) wk -= cur[v] * basis[v * stride + r];
#pragma unroll 8
        for (PetscInt v = vs; v < i - 1; ++v) wk -= cur[v] * a.V[v + 1][begin + r];
        z[q] = SGMRESUpdateEntry(scale, eta, z[q], wk);
        if (i <= nshared) basis[(i - 1) * stride + r] = wk;
        a.V[i][begin + r]     = wk;
        a.Z[i + 1][begin + r] = z[q];
        zs[r]                 = z[q];
        if (a.wr) zw[r] = wr[q] * z[q];
      }
    }
    /* the barrier (wr.*z_{i+1} complete), the step's estimate computed while the other blocks arrive */
    if constexpr (CLUSTER) cooperative_groups::this_cluster().barrier_arrive();
    if (threadIdx.x == 0) {
      const PetscReal res = SGMRESChunkEstimate(ctl, i, m, prev, eta);

      res2 = res * res;
      if (blockIdx.x == 0) a.slots[j * nd + m + 2] = res2;
    }
    if constexpr (CLUSTER) {
      __syncwarp();
      cooperative_groups::this_cluster().barrier_wait();
    } else
      __syncthreads();
  }
  if (j > a.k) { /* <z_{i0+k+1}, z_{i0+k+1}> */
    PetscScalar acc[1] = {0}, sum[1];
#pragma unroll
    for (int q = 0; q < R; ++q) acc[0] += z[q] * z[q];
    ResidentSums<CLUSTER>(acc, sum, 0);
    if (blockIdx.x == 0 && threadIdx.x == 0) a.slots[a.k * nd + m + 1] = sum[0];
  }
  if constexpr (CLUSTER) ResidentSync<CLUSTER>(); /* no block leaves while another reads its shared memory */
}

/* Launches the resident kernel with blocks of THREADS threads and R rows per thread when the restart
   and the matrix fit it and the device can hold its blocks as one cluster; *launched says whether it did */
template <class Rows, int THREADS, int R> static PetscErrorCode LaunchSGMRESChunkResident(const SGMRESChunkArgs *args, const Rows &rows, bool *launched)
{
  constexpr PetscInt ROWS     = R * THREADS;
  const PetscInt     n        = rows.A.nrows;
  const int          nblocks  = ResidentChunkBlocks(n, args->nnz, ROWS);
  SGMRESResidentArgs a        = {};
  void              *params[] = {(void *)&a, (void *)&rows};
  const void        *kernel   = nblocks > 1 ? (const void *)SGMRESChunkResidentKernel<Rows, true, THREADS, R> : (const void *)SGMRESChunkResidentKernel<Rows, false, THREADS, R>;

  PetscFunctionBegin;
  *launched = false;
  if (args->m > SGMRES_RESIDENT_RESTART || !nblocks) PetscFunctionReturn(PETSC_SUCCESS);
  a.n      = n;
  a.chunk  = PetscMin(n, ROWS);
  a.stride = a.chunk % 2 ? a.chunk : a.chunk + 1;
  SetStepArgs(args, a);
  { /* wr.*z, w and (with wr) z, then as much room as the device gives for the basis and the matrix rows */
    const size_t fixed = (size_t)(a.chunk + (args->wr ? 2 : 1) * a.stride) * sizeof(PetscScalar), matrix = ResidentMatrixBytes(rows.A), basis = (size_t)args->m * a.stride * sizeof(PetscScalar);

    PetscCall(LaunchResidentChunk(kernel, nblocks, THREADS, params, fixed, matrix > SIZE_MAX - basis ? SIZE_MAX : basis + matrix, &a.room, launched));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The start of a chunk that starts the solve, after <b,b> went to slot0[m+2]: SGMRESChunkStart()
   (block 0) and z = b * (1 / rho)                                                                */
__global__ void SGMRESStartKernel(PetscInt n, PetscInt m, const PetscScalar *b, PetscScalar *z, PetscScalar *slot0, ChunkControl *ctl)
{
  const PetscScalar bb  = slot0[m + 2];
  const PetscReal   rho = sqrt(bb < 0 ? -bb : bb);

  if (blockIdx.x == 0 && threadIdx.x == 0) SGMRESChunkStart(ctl, slot0, m);
  if (rho != 0)
    for (PetscInt64 i = (PetscInt64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (PetscInt64)gridDim.x * blockDim.x) z[i] = b[i] * (1 / rho); /* as VecScale() by 1 / rho */
}

/* The start of the solve (args->b): <b,b> to slot 0 (Backend::dots, as fusedsgmres's own start sums
   it), then SGMRESStartKernel                                                                    */
static PetscErrorCode StartSGMRESChunk(const SGMRESChunkArgs *args)
{
  const PetscInt  n    = args->csr ? args->csr->nrows : args->sell->nrows;
  const Partition part = PartitionRows(n, 1);
  const DotSpec   self;
  cudaStream_t    stream;

  PetscFunctionBegin;
  PetscCall(ReduceTargetSet(args->slots + args->m + 2, nullptr));
  PetscCall(Dots(n, nullptr, args->b, 1, &self, nullptr));
  PetscCall(GetStream(&stream));
  SGMRESStartKernel<<<PetscMax(part.nblocks, 1), BLOCK_SIZE, 0, stream>>>(n, args->m, args->b, args->Z[1], args->slots, args->ctl);
  FusedKSPCallCUDA(cudaGetLastError());
  counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   SGMRESChunk - Backend::sgmres_chunk on the device: one kernel for the k steps unless args->form
   is STEPS - the resident kernel (one block or one cluster) when the restart is at most
   SGMRES_RESIDENT_RESTART and the matrix fits it, else a cooperative kernel when the restart is at
   most FUSED_SGMRES_PERSISTENT_RESTART, the matrix has at most tuning.sgmres_persistent_rows rows
   (any number with GRID) and the device can - otherwise the 3k kernels of SGMRESChunkSteps(); a chunk that starts the solve
   (args->b) runs StartSGMRESChunk() first
*/
PetscErrorCode SGMRESChunk(const SGMRESChunkArgs *args)
{
  PetscFunctionBegin;
  PetscCheck(args->i0 >= 0 && args->k >= 0 && args->i0 + args->k <= args->m, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Steps %" PetscInt_FMT "..%" PetscInt_FMT " outside the restart cycle of %" PetscInt_FMT, args->i0 + 1, args->i0 + args->k,
             args->m);
  PetscCheck(!args->b || args->i0 == 0, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONG, "Only the first chunk of a cycle starts the solve, not one from step %" PetscInt_FMT, args->i0 + 1);
  if (args->b) PetscCall(StartSGMRESChunk(args));
  PetscCall(DispatchChunk<128>(
      args->k > 0 && args->m <= FUSED_SGMRES_PERSISTENT_RESTART ? args->form : ChunkForm::STEPS, (args->csr ? args->csr->nrows : args->sell->nrows) <= tuning.sgmres_persistent_rows, args->csr, args->sell,
      [&](const auto &rows, auto threads, auto r, bool *launched) { return LaunchSGMRESChunkResident<std::decay_t<decltype(rows)>, decltype(threads)::value, decltype(r)::value>(args, rows, launched); },
      [&](const auto &rows, bool *launched) { return LaunchSGMRESChunk(args, rows, launched); }, [&] { return SGMRESChunkSteps(CUDABackend(), args); }));
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace cuda
} // namespace fusedksp
