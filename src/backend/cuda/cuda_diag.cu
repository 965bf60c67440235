/* CUDA backend: the diagonal of a matrix through the positions of its diagonal entries */
#include "backend/cuda/cuda_common.cuh"

namespace fusedksp
{
namespace cuda
{

__global__ void DiagGetKernel(PetscInt n, const PetscInt64 *pos, const PetscScalar *vals, PetscScalar *d)
{
  for (PetscInt64 i = blockIdx.x * (PetscInt64)blockDim.x + threadIdx.x; i < n; i += (PetscInt64)gridDim.x * blockDim.x) d[i] = pos[i] >= 0 ? vals[pos[i]] : 0;
}

__global__ void DiagShiftKernel(PetscInt n, const PetscInt64 *pos, PetscScalar a, PetscScalar *vals)
{
  for (PetscInt64 i = blockIdx.x * (PetscInt64)blockDim.x + threadIdx.x; i < n; i += (PetscInt64)gridDim.x * blockDim.x) vals[pos[i]] += a;
}

static int GridSize(PetscInt n)
{
  return (int)PetscMin((n + BLOCK_SIZE - 1) / BLOCK_SIZE, (PetscInt)FUSED_REDUCE_BLOCKS);
}

/*
   DiagGet - Backend::diag_get on the device: one kernel launch (none when n == 0)
*/
PetscErrorCode DiagGet(PetscInt n, const PetscInt64 *pos, const PetscScalar *vals, PetscScalar *d)
{
  cudaStream_t stream;

  PetscFunctionBegin;
  PetscCheck(n >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Negative length %" PetscInt_FMT, n);
  if (n) {
    PetscCall(GetStream(&stream));
    DiagGetKernel<<<GridSize(n), BLOCK_SIZE, 0, stream>>>(n, pos, vals, d);
    FusedKSPCheckLaunch();
    counters.launches++;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   DiagShift - Backend::diag_shift on the device: one kernel launch (none when n == 0)
*/
PetscErrorCode DiagShift(PetscInt n, const PetscInt64 *pos, PetscScalar a, PetscScalar *vals)
{
  cudaStream_t stream;

  PetscFunctionBegin;
  PetscCheck(n >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Negative length %" PetscInt_FMT, n);
  if (n) {
    PetscCall(GetStream(&stream));
    DiagShiftKernel<<<GridSize(n), BLOCK_SIZE, 0, stream>>>(n, pos, a, vals);
    FusedKSPCheckLaunch();
    counters.launches++;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace cuda
} // namespace fusedksp
