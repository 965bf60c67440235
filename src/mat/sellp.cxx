/* SELL-P slices of a CSR structure (see backend/backend.hpp, SELLView) */
#include "mat/sellp.hpp"
#include <algorithm>

namespace fusedksp
{

int SELLThreadsPerRow(PetscInt nrows, PetscInt64 nnz)
{
  const PetscInt64 avg = nrows ? nnz / nrows : 0;
  return avg < 16 ? 1 : avg < 32 ? 2 : avg < 64 ? 4 : 8;
}

/* The padded length of the rows of slice s (a multiple of threads) */
static PetscInt64 SliceLength(PetscInt nrows, const PetscInt *rowptr, int threads, PetscInt64 s)
{
  const PetscInt64 first = s * FUSED_SELL_HEIGHT, last = std::min<PetscInt64>(nrows, first + FUSED_SELL_HEIGHT);
  PetscInt64       len = 0;

  for (PetscInt64 i = first; i < last; ++i) len = std::max<PetscInt64>(len, rowptr[i + 1] - rowptr[i]);
  return (len + threads - 1) / threads * threads;
}

PetscInt64 SELLEntries(PetscInt nrows, const PetscInt *rowptr, int threads)
{
  const PetscInt64 nslices = (nrows + FUSED_SELL_HEIGHT - 1) / FUSED_SELL_HEIGHT;
  PetscInt64       total   = 0;

  for (PetscInt64 s = 0; s < nslices; ++s) total += SliceLength(nrows, rowptr, threads, s) * FUSED_SELL_HEIGHT;
  return total;
}

PetscErrorCode SELLSlicePointers(PetscInt nrows, const PetscInt *rowptr, int threads, std::vector<PetscInt64> *sliceptr)
{
  const PetscInt64 nslices = (nrows + FUSED_SELL_HEIGHT - 1) / FUSED_SELL_HEIGHT;

  PetscFunctionBegin;
  PetscCheck(threads == 1 || threads == 2 || threads == 4 || threads == 8, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "SELL-P threads per row must be 1, 2, 4 or 8, not %d", threads);
  FusedKSPCallCXX(sliceptr->assign(nslices + 1, 0));
  for (PetscInt64 s = 0; s < nslices; ++s) (*sliceptr)[s + 1] = (*sliceptr)[s] + SliceLength(nrows, rowptr, threads, s) * FUSED_SELL_HEIGHT;
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace fusedksp
