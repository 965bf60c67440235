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

/* One launch of the entry-wise `kernel` over n entries (none when n == 0) */
template <class... Params, class... Args> static PetscErrorCode LaunchEntries(PetscInt n, void (*kernel)(PetscInt, Params...), Args... args)
{
  cudaStream_t stream;

  PetscFunctionBegin;
  PetscCheck(n >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Negative length %" PetscInt_FMT, n);
  if (n) {
    PetscCall(GetStream(&stream));
    kernel<<<GridSize(n), BLOCK_SIZE, 0, stream>>>(n, args...);
    FusedKSPCheckLaunch();
    counters.launches++;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* DiagGet - Backend::diag_get on the device: one kernel launch (none when n == 0) */
PetscErrorCode DiagGet(PetscInt n, const PetscInt64 *pos, const PetscScalar *vals, PetscScalar *d)
{
  return LaunchEntries(n, DiagGetKernel, pos, vals, d);
}

/* DiagShift - Backend::diag_shift on the device: one kernel launch (none when n == 0) */
PetscErrorCode DiagShift(PetscInt n, const PetscInt64 *pos, PetscScalar a, PetscScalar *vals)
{
  return LaunchEntries(n, DiagShiftKernel, pos, a, vals);
}

} // namespace cuda
} // namespace fusedksp
