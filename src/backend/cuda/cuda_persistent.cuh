/*
   CUDA backend: persistent kernels, which run a whole chunk of solver iterations in one cooperative
   launch.  Every block stays resident; the blocks meet at grid barriers instead of kernel
   boundaries, and every block sums the partials of a reduction by itself, in the same order, so all
   blocks hold bit-identical scalars and take the same branches without any host involvement.

   Memory discipline: a vector that other blocks wrote since the kernel started is read from L2
   (__ldcg, LoadL2): the L1 of an SM is not coherent with the writes of other SMs.  A thread block
   reads its own rows' entries with plain loads (a barrier orders its threads' accesses).
*/
#pragma once

#include "backend/cuda/cuda_rows.cuh"
#include <cooperative_groups.h>
#include <type_traits>

namespace fusedksp
{
namespace cuda
{

constexpr int WARPS = BLOCK_SIZE / 32;

/* All blocks of the grid wait here; their global-memory writes before it are visible after it (to
   L2 reads).  A grid that is one thread block cluster (LaunchResident() makes small grids one) meets
   at the cluster's hardware barrier, cheaper than the grid barrier's atomic in global memory.      */
__device__ inline void GridBarrier()
{
  if (gridDim.x == 1)
    __syncthreads();
  else if (cooperative_groups::this_cluster().num_blocks() == gridDim.x)
    cooperative_groups::this_cluster().sync();
  else
    cooperative_groups::this_grid().sync();
}

/* The block's sums of acc[0..ND) to part[d * gridDim.x + blockIdx.x] (one value per block and dot
   product); every thread of the block calls it                                                    */
template <int ND> __device__ inline void BlockPartials(const PetscScalar (&acc)[ND], PetscScalar *part)
{
  __shared__ PetscScalar warp_sums[ND][WARPS];
  const int              lane = threadIdx.x % 32, warp = threadIdx.x / 32;

#pragma unroll
  for (int d = 0; d < ND; ++d) {
    PetscScalar v = acc[d];
    v             = LaneSum(v);
    if (lane == 0) warp_sums[d][warp] = v;
  }
  __syncthreads();
  if (warp == 0) {
#pragma unroll
    for (int d = 0; d < ND; ++d) {
      PetscScalar v = lane < WARPS ? warp_sums[d][lane] : 0;
      v             = LaneSum<WARPS>(v);
      if (lane == 0) __stcg(part + (size_t)d * gridDim.x + blockIdx.x, v);
    }
  }
}

/* After a grid barrier: sums[d] = the sum over the blocks of part[d * gridDim.x + b], d < ND <= WARPS
   (warp d sums dot product d), the same bits in every block and every thread                      */
template <int ND> __device__ inline void GridSums(const PetscScalar *part, PetscScalar (&sums)[ND])
{
  static_assert(ND <= WARPS, "one warp per dot product");
  __shared__ PetscScalar total[ND];
  const int              lane = threadIdx.x % 32, warp = threadIdx.x / 32;

  if (warp < ND) {
    const PetscScalar *p = part + (size_t)warp * gridDim.x;
    PetscScalar        v = 0;
    for (unsigned int b = lane; b < gridDim.x; b += 32) v += __ldcg(p + b);
    v = LaneSum(v);
    if (lane == 0) total[warp] = v;
  }
  __syncthreads();
#pragma unroll
  for (int d = 0; d < ND; ++d) sums[d] = total[d];
}

/* Resident chunk kernels (CG, BiCGStab, simpler GMRES; at most FUSED_RESIDENT_CHUNK_BLOCKS blocks of at
   most FUSED_BLOCK_CHUNK_ROWS rows): one thread block, or one thread block cluster, of THREADS threads
   and R * THREADS rows per block (DispatchResidentBlocks()); block b owns the rows from b R THREADS.
   A thread keeps its rows of the iteration's vectors in registers.  The block's rows of the matrix
   (ResidentMatrixRows()) and of every vector the iteration reads live in its shared memory, each
   block holding its rows of a vector at the same offset, and the sparse products read other blocks'
   entries through distributed shared memory: an iteration reads no global memory.  (With the matrix
   in global memory a cluster was much slower per iteration, its loads waiting on L1TEX after every
   cluster barrier, whose acquire semantics appear to drop the SM's L1 lines.)                     */
static_assert(FUSED_BLOCK_CHUNK_ROWS == 2 * RESIDENT_THREADS && FUSED_BLOCK_CHUNK_ROWS % FUSED_SELL_HEIGHT == 0, "the largest resident block: 2 rows per thread, whole SELL-P slices");

/* body(t, i) for each of a resident block's rows i = threadIdx.x + t THREADS (t < R) below nloc: the
   rows whose vector entries this thread keeps in registers, at index t of its arrays               */
template <int R, int THREADS, class Body> __device__ __forceinline__ void ForOwnRows(PetscInt nloc, Body &&body)
{
#pragma unroll
  for (int t = 0; t < R; ++t) {
    const PetscInt i = threadIdx.x + t * THREADS;
    if (i < nloc) body(t, i);
  }
}

/* The sums of the rows [begin, end) of a sparse product in a thread block of THREADS threads, LANES
   threads per row: part(row, lane) is one thread's part of the row; done(row, sum) runs in the row's
   first lane.  The loop over the block's passes is unrolled UNROLL times (0: as the compiler chooses). */
template <int LANES, int THREADS, int UNROLL, class Index, class Part, class Done> __device__ __forceinline__ void ForRowSums(Index begin, Index end, Part &&part, Done &&done)
{
  const int  lane = threadIdx.x % LANES;
  const auto pass = [&](Index first) {
    const Index row = first + threadIdx.x / LANES;
    PetscScalar sum = 0;

    if (row < end) sum = part(row, lane);
    if (LANES > 1) sum = LaneSum<LANES>(sum);
    if (lane == 0 && row < end) done(row, sum);
  };

  if constexpr (UNROLL > 0) {
#pragma unroll UNROLL
    for (Index first = begin; first < end; first += THREADS / LANES) pass(first);
  } else {
    for (Index first = begin; first < end; first += THREADS / LANES) pass(first);
  }
}

/* Entry `offset` of the vector at 32-bit shared address `base` in the shared memory of the cluster's
   block `rank` (this block's included): mapa + ld.shared::cluster, no generic addressing        */
__device__ __forceinline__ PetscScalar LoadClusterShared(unsigned int base, unsigned int offset, unsigned int rank)
{
  unsigned int at;
  double       v;

  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(at) : "r"(base + offset * (unsigned int)sizeof(double)), "r"(rank));
  asm volatile("ld.shared::cluster.f64 %0, [%1];" : "=d"(v) : "r"(at));
  return v;
}

/* The load policy of a resident kernel's products: entry c of the vector whose block rows (ROWS per
   block) start at `own` in every block's shared memory (CLUSTER: from the block that owns row c,
   through distributed shared memory; `base`, own's 32-bit shared address, set by the kernel)     */
template <bool CLUSTER, PetscInt ROWS> struct LoadResident {
  unsigned int                           base = 0;
  __device__ __forceinline__ PetscScalar operator()(const PetscScalar *own, PetscInt64 c) const
  {
    if constexpr (CLUSTER)
      return LoadClusterShared(base, (unsigned int)c % ROWS, (unsigned int)c / ROWS);
    else
      return own[c];
  }
};

/* The 32-bit shared-memory address of v (a pointer into this block's shared memory) */
__device__ __forceinline__ unsigned int SharedAddress(const PetscScalar *v)
{
  return (unsigned int)__cvta_generic_to_shared(v);
}

/* A cluster's mailbox: each block stores values into slots of every block's shared memory
   (st.async), and a block waits until a round's values from all blocks are in its own slots, which
   one mbarrier in its shared memory counts in bytes (one local arrival per round, with the bytes
   expected).  Rounds alternate the barrier's phase parity.  A block must not store a round's values
   before every block finished reading that slot's previous round (a cluster barrier between them). */
struct ClusterMailbox {
  unsigned int bar; /* 32-bit shared address of the block's mbarrier */

  /* one thread, before a cluster barrier that precedes every store */
  __device__ __forceinline__ void Init() const
  {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  /* v into the slot at `slot` (this block's address of it) of the cluster's block `rank` */
  __device__ __forceinline__ void Store(const PetscScalar *slot, PetscScalar v, unsigned int rank) const
  {
    unsigned int to, at;

    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(to) : "r"(SharedAddress(slot)), "r"(rank));
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(at) : "r"(bar), "r"(rank));
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b64 [%0], %1, [%2];" ::"r"(to), "l"(__double_as_longlong(v)), "r"(at) : "memory");
  }
  /* one thread per round: this block's arrival, expecting `bytes` of stores */
  __device__ __forceinline__ void Expect(unsigned int bytes) const
  {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
  }
  /* until the round of phase parity `parity` is complete: its stores are visible to the caller */
  __device__ __forceinline__ void Wait(unsigned int parity) const
  {
    unsigned int done;

    do {
      asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}" : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    } while (!done);
  }
};

/* The barrier of a resident kernel: the writes of every block's threads before it (shared and
   global memory) are visible to every block after it                                              */
template <bool CLUSTER> __device__ inline void ResidentSync()
{
  if constexpr (CLUSTER)
    cooperative_groups::this_cluster().sync();
  else
    __syncthreads();
}

/* The end of a resident kernel: store(t, i) writes the vectors of each of the block's own rows back
   (ForOwnRows()), after a cluster's blocks wait for each other (none may leave while another reads its
   shared memory) */
template <bool CLUSTER, int R, int THREADS, class Store> __device__ __forceinline__ void ResidentWriteBack(PetscInt nloc, Store &&store)
{
  if constexpr (CLUSTER) ResidentSync<CLUSTER>();
  ForOwnRows<R, THREADS>(nloc, store);
}

/* The bytes of shared memory the rows [begin, begin + nloc) of a matrix take in ResidentMatrixRows() */
__device__ inline size_t ResidentRowsBytes(const CSRView &A, PetscInt begin, PetscInt nloc)
{
  return (size_t)(A.rowptr[begin + nloc] - A.rowptr[begin]) * (sizeof(PetscScalar) + sizeof(PetscInt)) + (size_t)(nloc + 1) * sizeof(PetscInt);
}
__device__ inline size_t ResidentRowsBytes(const SELLView &A, PetscInt begin, PetscInt nloc)
{
  const PetscInt s0 = begin / FUSED_SELL_HEIGHT, s1 = (begin + nloc + FUSED_SELL_HEIGHT - 1) / FUSED_SELL_HEIGHT;
  return (size_t)(A.sliceptr[s1] - A.sliceptr[s0]) * (sizeof(PetscScalar) + sizeof(PetscInt)) + (size_t)(s1 - s0 + 1) * sizeof(PetscInt64);
}

/* `local` = the rows [begin, begin + nloc) of A (begin a multiple of FUSED_SELL_HEIGHT) with local row
   numbers (row r of local is row begin + r of A; column numbers stay global), copied to the shared
   memory at `smem` (8-byte aligned) when they fit in `capacity` bytes, else reading A's global
   memory.  Every thread of the block calls it; the copy is complete after the next __syncthreads. */
__device__ inline void ResidentMatrixRows(const CSRView &A, PetscInt begin, PetscInt nloc, char *smem, size_t capacity, CSRView &local)
{
  local = A;
  if (ResidentRowsBytes(A, begin, nloc) <= capacity) {
    const PetscInt base = A.rowptr[begin], count = A.rowptr[begin + nloc] - base;
    PetscScalar   *vals   = reinterpret_cast<PetscScalar *>(smem);
    PetscInt      *colidx = reinterpret_cast<PetscInt *>(vals + count), *rowptr = colidx + count;

    for (PetscInt k = threadIdx.x; k < count; k += blockDim.x) {
      vals[k]   = A.vals[base + k];
      colidx[k] = A.colidx[base + k];
    }
    for (PetscInt r = threadIdx.x; r <= nloc; r += blockDim.x) rowptr[r] = A.rowptr[begin + r] - base;
    local.rowptr = rowptr;
    local.colidx = colidx;
    local.vals   = vals;
  } else
    local.rowptr = A.rowptr + begin;
}
__device__ inline void ResidentMatrixRows(const SELLView &A, PetscInt begin, PetscInt nloc, char *smem, size_t capacity, SELLView &local)
{
  const PetscInt s0 = begin / FUSED_SELL_HEIGHT, s1 = (begin + nloc + FUSED_SELL_HEIGHT - 1) / FUSED_SELL_HEIGHT;

  local = A;
  if (ResidentRowsBytes(A, begin, nloc) <= capacity) {
    const PetscInt64 base = A.sliceptr[s0], count = A.sliceptr[s1] - base;
    PetscInt64      *sliceptr = reinterpret_cast<PetscInt64 *>(smem);
    PetscScalar     *vals     = reinterpret_cast<PetscScalar *>(sliceptr + (s1 - s0 + 1));
    PetscInt        *colidx   = reinterpret_cast<PetscInt *>(vals + count);

    for (PetscInt64 k = threadIdx.x; k < count; k += blockDim.x) {
      vals[k]   = A.vals[base + k];
      colidx[k] = A.colidx[base + k];
    }
    for (PetscInt s = threadIdx.x; s <= s1 - s0; s += blockDim.x) sliceptr[s] = A.sliceptr[s0 + s] - base;
    local.sliceptr = sliceptr;
    local.colidx   = colidx;
    local.vals     = vals;
  } else
    local.sliceptr = A.sliceptr + s0;
}

/* ChunkStartLimits() in a persistent kernel: c with the limits of the start from normsq0, the
   tolerances read from the control block in memory (dctl) where they are needed, so that the kernel's
   copy c keeps in registers only what its loop tests with (and the norm of b of the start)          */
__device__ inline ChunkControl DeviceStartLimits(ChunkControl c, const ChunkControl *dctl, PetscScalar normsq0)
{
  c.rtol       = dctl->rtol;
  c.abstol     = dctl->abstol;
  c.divtol     = dctl->divtol;
  c.bnorm      = dctl->bnorm;
  c.mininitial = dctl->mininitial;
  return ChunkStartLimits(c, normsq0);
}

/* sums[d] = the sum over the resident kernel's blocks (of 4 to 32 warps) of acc[d], d < ND <= 32, in
   every thread of every block with the same bits: each warp's sums to shared memory, warp d % warps
   adding the warps' sums of d, then (CLUSTER) each block's sums to shared memory, the cluster's
   barrier, and the same warp adding the blocks' sums of d in rank order.  Calls alternate `parity`,
   so a block's next sums never overwrite those a slower block still reads; a block must not exit
   before the cluster's barrier that follows its last call (ResidentSync()).                       */
template <bool CLUSTER, int ND> __device__ inline void ResidentSums(PetscScalar (&acc)[ND], PetscScalar (&sums)[ND], int parity)
{
  static_assert(ND <= 32, "at most 32 sums");
  __shared__ PetscScalar warp_sums[ND][32], block_sums[2][ND], total[ND]; /* blocks of up to 32 warps */
  const int              lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = (int)(blockDim.x / 32);

#pragma unroll
  for (int d = 0; d < ND; ++d) {
    acc[d] = LaneSum(acc[d]);
    if (lane == 0) warp_sums[d][warp] = acc[d];
  }
  __syncthreads();
  for (int d = warp; d < ND; d += warps) {
    PetscScalar v = lane < warps ? warp_sums[d][lane] : 0;
    v             = LaneSum(v);
    if (lane == 0) (CLUSTER ? block_sums[parity][d] : total[d]) = v;
  }
  if constexpr (CLUSTER) {
    cooperative_groups::this_cluster().sync();
    for (int d = warp; d < ND; d += warps) {
      PetscScalar v = lane < (int)gridDim.x ? *cooperative_groups::this_cluster().map_shared_rank(&block_sums[parity][d], lane) : 0;
      v             = LaneSum(v);
      if (lane == 0) total[d] = v;
    }
  }
  __syncthreads();
#pragma unroll
  for (int d = 0; d < ND; ++d) sums[d] = total[d];
}

/* The row partition of a persistent kernel: PartitionRows() on at most max_blocks blocks (the blocks
   the device holds at once), so with longer chunks when more would be needed                     */
inline Partition PartitionResident(PetscInt nrows, int lanes, int max_blocks)
{
  return PartitionRows(nrows, lanes, PetscMin((PetscInt)max_blocks, FUSED_REDUCE_BLOCKS));
}

/* The blocks of `kernel` (BLOCK_SIZE threads, smem_bytes of dynamic shared memory, which it is
   allowed to use) the device holds at once; 0 when the device cannot launch cooperative kernels or
   the kernel does not fit                                                                         */
PetscErrorCode ResidentBlocks(const void *kernel, size_t smem_bytes, int *max_blocks);

/* The grid of a persistent launch of `kernel` (BLOCK_SIZE threads) on n rows with `lanes` threads per
   row (PartitionResident() with the blocks the device holds at once) and a partial-sum buffer of
   partials_per_block values per block; part->nblocks = 0 when the device cannot launch cooperative
   kernels                                                                                          */
PetscErrorCode PrepareResident(const void *kernel, PetscInt n, int lanes, size_t partials_per_block, Partition *part, PetscScalar **partials);

/* Launches `kernel` with its parameters (and smem_bytes of dynamic shared memory) on a grid the device
   holds at once, on the backend's stream: as one thread block cluster when the grid has at most
   MAX_CLUSTER blocks and the device can schedule such a cluster of this kernel (its blocks are then
   co-resident by construction; above the portable 8 blocks where the device allows it), else as a
   cooperative kernel                                                                              */
constexpr int  MAX_CLUSTER = FUSED_RESIDENT_CHUNK_BLOCKS; /* the largest cluster Hopper allows (non-portable) */
PetscErrorCode LaunchResident(const void *kernel, const Partition &part, void **params, size_t smem_bytes = 0);

/* Launches a resident chunk kernel on `nblocks` <= FUSED_RESIDENT_CHUNK_BLOCKS blocks of `threads` threads with
   vector_bytes of dynamic shared memory for its vectors and, for the block's matrix rows, as much
   again as the device allows up to matrix_need (ResidentMatrixBytes())
   (*matrix_bytes): one block, or one cluster of them when the device can schedule it;
   *launched = false, with nothing queued, when it cannot                                         */
PetscErrorCode LaunchResidentChunk(const void *kernel, int nblocks, int threads, void **params, size_t vector_bytes, size_t matrix_need, size_t *matrix_bytes, bool *launched);

/* The blocks of a resident chunk kernel of `rows` rows per block for a matrix of n rows and `entries`
   stored entries (-1: unknown): 0 when the matrix does not fit it (more than
   FUSED_RESIDENT_CHUNK_BLOCKS blocks, or more than tuning.resident_block_nnz entries per
   FUSED_BLOCK_CHUNK_ROWS rows of the blocks)                                                     */
inline int ResidentChunkBlocks(PetscInt n, PetscInt64 entries, PetscInt rows)
{
  const PetscInt nblocks = (n + rows - 1) / rows;

  return n < 1 || nblocks > FUSED_RESIDENT_CHUNK_BLOCKS || entries < 0 || entries > tuning.resident_block_nnz * rows / FUSED_BLOCK_CHUNK_ROWS * nblocks ? 0 : (int)nblocks;
}

/* Calls launch(THREADS, R) (std::integral_constant's) with the blocks of a resident chunk kernel for n
   rows: the most blocks, up to a cluster of FUSED_RESIDENT_CHUNK_BLOCKS, of at least MIN_THREADS
   threads (128 or 256) - 128, 256, 512 or 768 threads of one row each, above 12288 rows 512 threads
   of two.  Fewer rows per SM shorten the phases that wait on shared memory and on the block's serial
   chains, as long as a block keeps enough warps to hide their latency (8 for CG and BiCGStab; 4 for
   simpler GMRES, whose step is longer per row).                                                   */
template <int MIN_THREADS, class Launch> PetscErrorCode DispatchResidentBlocks(PetscInt n, Launch &&launch)
{
  using std::integral_constant;
  static_assert(MIN_THREADS == 128 || MIN_THREADS == 256, "blocks of 4 or 8 warps at least");

  PetscFunctionBegin;
  if constexpr (MIN_THREADS == 128) {
    if (n <= FUSED_RESIDENT_CHUNK_BLOCKS * 128) {
      PetscCall(launch(integral_constant<int, 128>{}, integral_constant<int, 1>{}));
      PetscFunctionReturn(PETSC_SUCCESS);
    }
  }
  if (n <= FUSED_RESIDENT_CHUNK_BLOCKS * 256)
    PetscCall(launch(integral_constant<int, 256>{}, integral_constant<int, 1>{}));
  else if (n <= FUSED_RESIDENT_CHUNK_BLOCKS * 512)
    PetscCall(launch(integral_constant<int, 512>{}, integral_constant<int, 1>{}));
  else if (n <= FUSED_RESIDENT_CHUNK_BLOCKS * 768)
    PetscCall(launch(integral_constant<int, 768>{}, integral_constant<int, 1>{}));
  else
    PetscCall(launch(integral_constant<int, RESIDENT_THREADS>{}, integral_constant<int, 2>{}));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The grid form of a persistent chunk kernel: PrepareResident() for `kernel` with partials_per_block
   values per block and, when the device can launch it, LaunchResident() with the kernel's arguments
   make(n, chunk, partials) (the rows, the rows per block, the partial sums).  *launched says whether
   it did                                                                                          */
template <class Rows, class Make> PetscErrorCode LaunchGridChunk(const void *kernel, const Rows &rows, size_t partials_per_block, Make &&make, bool *launched)
{
  Partition    part;
  PetscScalar *partials;

  PetscFunctionBegin;
  PetscCall(PrepareResident(kernel, rows.A.nrows, Rows::LANES, partials_per_block, &part, &partials));
  *launched = part.nblocks > 0;
  if (*launched) {
    auto  a        = make(rows.A.nrows, part.chunk, partials);
    void *params[] = {(void *)&a, (void *)&rows};

    PetscCall(LaunchResident(kernel, part, params));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The dispatcher of a chunk that a solver hands to the backend whole, in the ChunkForm `form` (STEPS
   for a chunk no persistent kernel can run): with the Rows type of the matrix (DispatchRows()), the
   resident kernel, resident(rows, THREADS, R, &launched) for the blocks DispatchResidentBlocks<MIN_THREADS>()
   chooses (not for GRID), else one kernel on a cooperative grid, grid(rows, &launched) (GRID, or
   `auto_grid`: the tuning table allows it for this matrix), each setting launched when it could;
   otherwise, or when neither could, steps(): the kernels of the chunk's steps.                     */
template <int MIN_THREADS, class Resident, class Grid, class Steps> PetscErrorCode DispatchChunk(ChunkForm form, bool auto_grid, const CSRView *csr, const SELLView *sell, Resident &&resident, Grid &&grid, Steps &&steps)
{
  bool launched = false;

  PetscFunctionBegin;
  if (form != ChunkForm::STEPS) {
    PetscCall(DispatchRows(csr, sell, [&](auto rows) {
      PetscFunctionBegin;
      if (form != ChunkForm::GRID) PetscCall(DispatchResidentBlocks<MIN_THREADS>(rows.A.nrows, [&](auto threads, auto r) { return resident(rows, threads, r, &launched); }));
      if (!launched && (form == ChunkForm::GRID || auto_grid)) PetscCall(grid(rows, &launched));
      PetscFunctionReturn(PETSC_SUCCESS);
    }));
  }
  if (!launched) PetscCall(steps());
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The shared memory ResidentMatrixRows() needs at most for any block of A: what the whole matrix takes
   when the host knows it (CSR), else no bound (SELL-P: the host does not know its padded size)   */
inline size_t ResidentMatrixBytes(const CSRView &A)
{
  const size_t bytes = (size_t)PetscMax(A.nnz, 0) * (sizeof(PetscScalar) + sizeof(PetscInt)) + (size_t)(A.nrows + 1) * sizeof(PetscInt);

  return A.nnz < 0 ? SIZE_MAX : (bytes + sizeof(PetscScalar) - 1) / sizeof(PetscScalar) * sizeof(PetscScalar); /* whole scalars, as the launch allots them */
}
inline size_t ResidentMatrixBytes(const SELLView &)
{
  return SIZE_MAX;
}

/* Launches a resident chunk kernel of THREADS threads and R * THREADS rows per block (single: its
   one-block form, cluster: its cluster form) with the arguments a (a.chunk and a.matrix_bytes set
   here; nvec vectors of a.chunk entries per block in shared memory) when the matrix (nnz entries)
   fits it and the device can hold its blocks as one cluster; *launched says whether it did       */
template <int THREADS, int R, class Rows, class KernelArgs> PetscErrorCode LaunchResidentForm(const void *single, const void *cluster, const Rows &rows, PetscInt64 nnz, KernelArgs a, int nvec, bool *launched)
{
  const int nblocks = ResidentChunkBlocks(rows.A.nrows, nnz, R * THREADS);

  PetscFunctionBegin;
  *launched = false;
  if (!nblocks) PetscFunctionReturn(PETSC_SUCCESS);
  a.chunk = PetscMin(rows.A.nrows, (PetscInt)(R * THREADS));
  {
    void *params[] = {(void *)&a, (void *)&rows};

    PetscCall(LaunchResidentChunk(nblocks > 1 ? cluster : single, nblocks, THREADS, params, nvec * a.chunk * sizeof(PetscScalar), ResidentMatrixBytes(rows.A), &a.matrix_bytes, launched));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace cuda
} // namespace fusedksp
