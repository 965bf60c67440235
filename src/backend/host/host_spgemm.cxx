/* Host backend: sparse matrix products C = A B (Backend::spgemm_*), the reference of the device's: Gustavson's
   row-by-row product, row i of C being the sum over the entries a_ik of row i of A of a_ik times row k of B,
   accumulated in a dense row of C's width; C's columns ascending in each row.  And the transpose of a CSR matrix
   (Backend::csr_transpose) by a counting sort. */
#include "backend/host/host_reduce.hpp"
#include <algorithm>
#include <vector>

namespace fusedksp
{
namespace host
{

static PetscErrorCode SpGEMMCheck(const SpGEMMView *G)
{
  PetscFunctionBegin;
  PetscCheck(G->A.ncols == G->B.nrows, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "Sparse product of a %" PetscInt_FMT " x %" PetscInt_FMT " and a %" PetscInt_FMT " x %" PetscInt_FMT " matrix", G->A.nrows, G->A.ncols, G->B.nrows, G->B.ncols);
  PetscCheck(G->A.nnz >= 0 && G->B.nnz >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONG, "A sparse product needs the operands' nnz");
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::spgemm_symbolic: the columns of each row of C marked in a dense row, then sorted */
PetscErrorCode SpGEMMSymbolic(SpGEMMView *G)
{
  const CSRView        &A = G->A, &B = G->B;
  std::vector<PetscInt> mark, cols;
  PetscInt64            nnz = 0;

  PetscFunctionBegin;
  PetscCall(SpGEMMCheck(G));
  FusedKSPCallCXX(mark.assign(B.ncols, -1));
  PetscCall(MallocBytes(sizeof(PetscInt) * (A.nrows + 1), (void **)&G->rowptr));
  G->rowptr[0] = 0;
  for (PetscInt i = 0; i < A.nrows; ++i) {
    for (PetscInt k = A.rowptr[i]; k < A.rowptr[i + 1]; ++k)
      for (PetscInt kk = B.rowptr[A.colidx[k]]; kk < B.rowptr[A.colidx[k] + 1]; ++kk)
        if (mark[B.colidx[kk]] != i) {
          mark[B.colidx[kk]] = i;
          ++nnz;
        }
    PetscCheck(nnz <= PETSC_INT_MAX, PETSC_COMM_SELF, PETSC_ERR_SUP, "The sparse product has more than %" PetscInt_FMT " entries", PETSC_INT_MAX);
    G->rowptr[i + 1] = (PetscInt)nnz;
  }
  G->nnz = nnz;
  PetscCall(MallocBytes(sizeof(PetscInt) * PetscMax(nnz, 1), (void **)&G->colidx));
  PetscCall(MallocBytes(sizeof(PetscScalar) * PetscMax(nnz, 1), (void **)&G->vals));
  std::fill(mark.begin(), mark.end(), -1);
  for (PetscInt i = 0; i < A.nrows; ++i) {
    PetscInt *row = G->colidx + G->rowptr[i], len = 0;

    for (PetscInt k = A.rowptr[i]; k < A.rowptr[i + 1]; ++k)
      for (PetscInt kk = B.rowptr[A.colidx[k]]; kk < B.rowptr[A.colidx[k] + 1]; ++kk)
        if (mark[B.colidx[kk]] != i) {
          mark[B.colidx[kk]] = i;
          row[len++]         = B.colidx[kk];
        }
    std::sort(row, row + len);
  }
  if (A.nrows) counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::spgemm_numeric: each row of C accumulated in a dense row, entries of A and of B in storage order */
PetscErrorCode SpGEMMNumeric(SpGEMMView *G)
{
  const CSRView           &A = G->A, &B = G->B;
  std::vector<PetscScalar> acc;

  PetscFunctionBegin;
  PetscCall(SpGEMMCheck(G));
  FusedKSPCallCXX(acc.assign(B.ncols, 0));
  for (PetscInt i = 0; i < A.nrows; ++i) {
    for (PetscInt k = A.rowptr[i]; k < A.rowptr[i + 1]; ++k) {
      const PetscScalar a = A.vals[k];

      for (PetscInt kk = B.rowptr[A.colidx[k]]; kk < B.rowptr[A.colidx[k] + 1]; ++kk) acc[B.colidx[kk]] += a * B.vals[kk];
    }
    for (PetscInt p = G->rowptr[i]; p < G->rowptr[i + 1]; ++p) {
      G->vals[p]        = acc[G->colidx[p]];
      acc[G->colidx[p]] = 0;
    }
  }
  if (A.nrows) counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::spgemm_free */
PetscErrorCode SpGEMMFree(SpGEMMView *G)
{
  PetscFunctionBegin;
  PetscCall(FreeBytes(G->rowptr));
  PetscCall(FreeBytes(G->colidx));
  PetscCall(FreeBytes(G->vals));
  G->rowptr = nullptr;
  G->colidx = nullptr;
  G->vals   = nullptr;
  G->nnz    = 0;
  G->plan   = nullptr;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::csr_transpose: the entries counted by column, then placed row by row (so in ascending row order) */
PetscErrorCode CSRTranspose(const CSRView *A, PetscInt *trowptr, PetscInt *tcolidx, PetscScalar *tvals)
{
  std::vector<PetscInt> next;

  PetscFunctionBegin;
  std::fill(trowptr, trowptr + A->ncols + 1, 0);
  for (PetscInt k = 0; k < A->rowptr[A->nrows]; ++k) trowptr[A->colidx[k] + 1]++;
  for (PetscInt c = 0; c < A->ncols; ++c) trowptr[c + 1] += trowptr[c];
  FusedKSPCallCXX(next.assign(trowptr, trowptr + A->ncols));
  for (PetscInt i = 0; i < A->nrows; ++i)
    for (PetscInt k = A->rowptr[i]; k < A->rowptr[i + 1]; ++k) {
      const PetscInt t = next[A->colidx[k]]++;

      tcolidx[t] = i;
      tvals[t]   = A->vals[k];
    }
  if (A->nrows) counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace host
} // namespace fusedksp
