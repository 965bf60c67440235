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

/* All blocks of the grid wait here; their global-memory writes before it are visible after it */
__device__ inline void GridBarrier()
{
  if (gridDim.x == 1)
    __syncthreads();
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

/* The most blocks of `kernel` (BLOCK_SIZE threads) the current device holds at once; 0 when it cannot
   launch cooperative kernels                                                                      */
PetscErrorCode ResidentBlocks(const void *kernel, int *blocks);

} // namespace cuda
} // namespace fusedksp
