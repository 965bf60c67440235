/* SELL-P (seed 003): the slices of backend/backend.hpp's SELLView for a CSR structure (the entries are placed on the
   backend, Backend::sell_from_csr) */
#pragma once

#include "backend/backend.hpp"
#include <vector>

namespace fusedksp
{
/* Threads per row from the average row length: 1 below 16 entries, 2 below 32, 4 below 64, else 8 */
int SELLThreadsPerRow(PetscInt nrows, PetscInt64 nnz);

/* Entries of the SELL-P layout of a CSR structure (padding included), without building it */
PetscInt64 SELLEntries(PetscInt nrows, const PetscInt *rowptr, int threads);

/* The slice offsets (SELLView::sliceptr, ceil(nrows / FUSED_SELL_HEIGHT) + 1 entries) of a CSR structure with `threads`
   threads per row (1, 2, 4 or 8) */
PetscErrorCode SELLSlicePointers(PetscInt nrows, const PetscInt *rowptr, int threads, std::vector<PetscInt64> *sliceptr);

} // namespace fusedksp
