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
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
    if (lane == 0) warp_sums[d][warp] = v;
  }
  __syncthreads();
  if (warp == 0) {
#pragma unroll
    for (int d = 0; d < ND; ++d) {
      PetscScalar v = lane < WARPS ? warp_sums[d][lane] : 0;
#pragma unroll
      for (int offset = WARPS / 2; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
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
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    if (lane == 0) total[warp] = v;
  }
  __syncthreads();
#pragma unroll
  for (int d = 0; d < ND; ++d) sums[d] = total[d];
}

/* One-block chunk kernels (at most FUSED_BLOCK_CHUNK_ROWS rows): thread t owns rows t, t + BLOCK_SIZE, ... */
constexpr int BLOCK_CHUNK_ROWS_PER_THREAD = FUSED_BLOCK_CHUNK_ROWS / BLOCK_SIZE;

/* sums[d] = the sum over the block of acc[d], d < ND, in every thread with the same bits (each thread
   adds the warps' sums in the same order); every thread calls it.  Two calls with the same ND need a
   __syncthreads between them (the second overwrites the warps' sums the first reads).            */
template <int ND> __device__ inline void BlockSums(PetscScalar (&acc)[ND], PetscScalar (&sums)[ND])
{
  __shared__ PetscScalar warp_sums[ND][WARPS];
  const int              lane = threadIdx.x % 32, warp = threadIdx.x / 32;

#pragma unroll
  for (int d = 0; d < ND; ++d) {
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) acc[d] += __shfl_down_sync(0xffffffffu, acc[d], offset);
    if (lane == 0) warp_sums[d][warp] = acc[d];
  }
  __syncthreads();
#pragma unroll
  for (int d = 0; d < ND; ++d) {
    sums[d] = 0;
#pragma unroll
    for (int w = 0; w < WARPS; ++w) sums[d] += warp_sums[d][w];
  }
}

/* The row partition of a persistent kernel: PartitionRows(), with at most max_blocks blocks (the
   blocks the device holds at once) and then longer chunks                                          */
inline Partition PartitionResident(PetscInt nrows, int lanes, int max_blocks)
{
  Partition part = PartitionRows(nrows, lanes);

  if (part.nblocks > max_blocks) {
    const PetscInt64 per_pass = BLOCK_SIZE / lanes;
    const PetscInt64 passes   = (nrows + per_pass - 1) / per_pass;
    part.chunk                = (PetscInt)(((passes + max_blocks - 1) / max_blocks) * per_pass);
    part.nblocks              = (int)((nrows + part.chunk - 1) / part.chunk);
  }
  return part;
}

/* The rows of a CSR or SELL-P matrix for a persistent kernel: lane `lane` of the LANES threads of a
   row sums its part of the row, entry c of the input being load(in, c), times wr[c] if wr is given */
template <int L> struct CSRRows {
  static constexpr int                         LANES = L;
  CSRView                                      A;
  template <class Load> __device__ PetscScalar Part(PetscInt64 row, int lane, const PetscScalar *wr, const PetscScalar *in, Load load) const
  {
    return CSRRowPart<L>(A.rowptr, A.colidx, A.vals, wr, in, row, lane, load);
  }
};
template <int T> struct SELLRows {
  static constexpr int                         LANES = T;
  SELLView                                     A;
  template <class Load> __device__ PetscScalar Part(PetscInt64 row, int lane, const PetscScalar *wr, const PetscScalar *in, Load load) const
  {
    return SELLRowPart<T>(A.sliceptr, A.colidx, A.vals, wr, in, row, lane, load);
  }
};

/* Calls launch(rows) with the Rows type of the matrix (exactly one of csr and sell): SELL-P with its
   threads per row, CSR with CSRLanes()                                                            */
template <class Launch> PetscErrorCode DispatchRows(const CSRView *csr, const SELLView *sell, Launch &&launch)
{
  PetscFunctionBegin;
  PetscCheck(!csr != !sell, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONG, "A chunk operation needs exactly one of a CSR and a SELL-P matrix");
  if (sell) {
    switch (sell->threads) {
    case 1:
      PetscCall(launch(SELLRows<1>{*sell}));
      break;
    case 2:
      PetscCall(launch(SELLRows<2>{*sell}));
      break;
    case 4:
      PetscCall(launch(SELLRows<4>{*sell}));
      break;
    case 8:
      PetscCall(launch(SELLRows<8>{*sell}));
      break;
    default:
      SETERRQ(PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "SELL-P threads per row must be 1, 2, 4 or 8, not %d", sell->threads);
    }
  } else {
    switch (CSRLanes(csr)) {
    case 2:
      PetscCall(launch(CSRRows<2>{*csr}));
      break;
    case 4:
      PetscCall(launch(CSRRows<4>{*csr}));
      break;
    case 8:
      PetscCall(launch(CSRRows<8>{*csr}));
      break;
    case 16:
      PetscCall(launch(CSRRows<16>{*csr}));
      break;
    default:
      PetscCall(launch(CSRRows<32>{*csr}));
    }
  }
  PetscFunctionReturn(PETSC_SUCCESS);
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
constexpr int  MAX_CLUSTER = 16; /* the largest cluster Hopper allows (non-portable) */
PetscErrorCode LaunchResident(const void *kernel, const Partition &part, void **params, size_t smem_bytes = 0);

} // namespace cuda
} // namespace fusedksp
