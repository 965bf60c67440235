/* CUDA backend: the diagonal of a matrix through the positions of its diagonal entries, and the SELL-P layout of a
   CSR matrix */
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

/* One thread per lane of a slice (consecutive threads write consecutive slots of one column of the slice) */
__global__ void SELLFromCSRKernel(PetscInt nlanes, PetscInt nrows, int threads, const PetscInt64 *sliceptr, const PetscInt *rowptr, const PetscInt *colidx, const PetscScalar *vals, PetscInt *scolidx, PetscScalar *svals)
{
  for (PetscInt64 i = blockIdx.x * (PetscInt64)blockDim.x + threadIdx.x; i < nlanes; i += (PetscInt64)gridDim.x * blockDim.x) SELLFromCSRLane(i, nrows, threads, sliceptr, rowptr, colidx, vals, scolidx, svals);
}

/* One thread per row */
__global__ void CSRFromSELLKernel(PetscInt nrows, int threads, const PetscInt64 *sliceptr, const PetscInt *rowptr, const PetscInt *scolidx, const PetscScalar *svals, PetscInt *colidx, PetscScalar *vals)
{
  for (PetscInt64 i = blockIdx.x * (PetscInt64)blockDim.x + threadIdx.x; i < nrows; i += (PetscInt64)gridDim.x * blockDim.x) CSRFromSELLLane(i, nrows, threads, sliceptr, rowptr, scolidx, svals, colidx, vals);
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

/* SELLFromCSR - Backend::sell_from_csr on the device: one kernel launch (none without rows) */
PetscErrorCode SELLFromCSR(const SELLView *S, const PetscInt *rowptr, const PetscInt *colidx, const PetscScalar *vals, PetscInt *scolidx, PetscScalar *svals)
{
  const PetscInt nlanes = (PetscInt)((S->nrows + (PetscInt64)FUSED_SELL_HEIGHT - 1) / FUSED_SELL_HEIGHT * FUSED_SELL_HEIGHT);

  return LaunchEntries(nlanes, SELLFromCSRKernel, S->nrows, S->threads, S->sliceptr, rowptr, colidx, vals, scolidx, svals);
}

/* CSRFromSELL - Backend::csr_from_sell on the device: one kernel launch (none without rows) */
PetscErrorCode CSRFromSELL(const SELLView *S, const PetscInt *rowptr, PetscInt *colidx, PetscScalar *vals)
{
  return LaunchEntries(S->nrows, CSRFromSELLKernel, S->threads, S->sliceptr, rowptr, S->colidx, S->vals, colidx, vals);
}

} // namespace cuda
} // namespace fusedksp
