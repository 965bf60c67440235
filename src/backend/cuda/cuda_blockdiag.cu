/* CUDA backend: the inverted diagonal blocks of point-block Jacobi */
#include "backend/cuda/cuda_common.cuh"
#include "backend/blockdiag.hpp"

namespace fusedksp
{
namespace cuda
{

/* One thread per block: a block of point-block Jacobi is small (a few unknowns per node), so a thread's bs^2
   loads are few and the threads of a warp read one contiguous stretch of the values */
template <class Blocks> __global__ void BlockDiagMultKernel(Blocks blocks, PetscInt nblocks, bool transpose, const PetscScalar *__restrict__ vals, const PetscScalar *__restrict__ x, PetscScalar *__restrict__ y)
{
  for (PetscInt64 k = blockIdx.x * (PetscInt64)blockDim.x + threadIdx.x; k < nblocks; k += (PetscInt64)gridDim.x * blockDim.x) BlockDiagMultBlock(blocks, (PetscInt)k, transpose, vals, x, y);
}

/*
   BlockDiagMult - Backend::blockdiag_mult on the device: one kernel launch (none without blocks)
*/
PetscErrorCode BlockDiagMult(const BlockDiagView *D, PetscBool transpose, const PetscScalar *x, PetscScalar *y)
{
  cudaStream_t stream;

  PetscFunctionBegin;
  PetscCall(BlockDiagViewCheck(D));
  if (D->nblocks) {
    /* at most FUSED_REDUCE_BLOCKS blocks, as the other pointwise kernels: a grid-stride loop beyond */
    const int grid = (int)PetscMin((D->nblocks + BLOCK_SIZE - 1) / BLOCK_SIZE, (PetscInt)FUSED_REDUCE_BLOCKS);

    PetscCall(GetStream(&stream));
    WithBlockPolicy(D, [&](const auto blocks) {
      BlockDiagMultKernel<<<grid, BLOCK_SIZE, 0, stream>>>(blocks, D->nblocks, transpose ? true : false, D->vals, x, y);
      return 0;
    });
    FusedKSPCheckLaunch();
    counters.launches++;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace cuda
} // namespace fusedksp
