/* SELL-P (seed 003): building the sliced, padded layout of backend/backend.hpp's SELLView from CSR */
#pragma once

#include "backend/backend.hpp"
#include <vector>

namespace fusedksp
{
/* The host side of a SELL-P layout: structure, and where each CSR entry goes (for value refreshes) */
struct SELLLayout {
  int                     threads = 1;
  std::vector<PetscInt64> sliceptr; /* ceil(nrows / FUSED_SELL_HEIGHT) + 1 */
  std::vector<PetscInt>   colidx;   /* sliceptr.back() entries, -1 for padding */
  std::vector<PetscInt64> position; /* position[k]: where CSR entry k is stored */
  PetscInt64              Entries() const
  {
    return sliceptr.empty() ? 0 : sliceptr.back();
  }
};

/* Threads per row from the average row length: 1 below 16 entries, 2 below 32, 4 below 64, else 8 */
int SELLThreadsPerRow(PetscInt nrows, PetscInt64 nnz);

/* Entries of the SELL-P layout of a CSR structure (padding included), without building it */
PetscInt64 SELLEntries(PetscInt nrows, const PetscInt *rowptr, int threads);

/* The layout of a CSR structure with `threads` threads per row (1, 2, 4 or 8) */
PetscErrorCode SELLBuild(PetscInt nrows, const PetscInt *rowptr, const PetscInt *colidx, int threads, SELLLayout *layout);

/* vals[layout.position[k]] = csrvals[k]; padding 0 (vals has layout.Entries() entries) */
void SELLFillValues(const SELLLayout &layout, const PetscScalar *csrvals, PetscScalar *vals);
} // namespace fusedksp
