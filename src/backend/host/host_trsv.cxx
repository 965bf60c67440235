/* Host backend: sparse triangular solves (the reference of Backend::trsv_csr) */
#include "backend/host/host_reduce.hpp"

namespace fusedksp
{
namespace host
{

/* See Backend::trsv_analysis: the host solves row by row in solve order and needs no schedule */
PetscErrorCode TrsvAnalysis(TriangularView *T, PetscInt, const PetscInt *, const PetscInt *)
{
  PetscFunctionBegin;
  T->schedule = nullptr;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::trsv_csr: rows in solve order, each row's sum in the order of its entries */
PetscErrorCode TrsvCSR(const TriangularView *T, const PetscScalar *b, PetscScalar *x)
{
  const PetscInt n = T->n;

  PetscFunctionBegin;
  PetscCheck(n >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Negative size %" PetscInt_FMT, n);
  for (PetscInt t = 0; t < n; ++t) {
    const PetscInt i = T->upper ? n - 1 - t : t;
    PetscScalar    s = b[i];

    for (PetscInt k = T->rowptr[i]; k < T->rowptr[i + 1]; ++k) s -= T->vals[k] * x[T->colidx[k]];
    x[i] = T->upper ? s * T->invdiag[i] : s;
  }
  if (n) counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::trsv_free */
PetscErrorCode TrsvFree(TriangularView *T)
{
  PetscFunctionBegin;
  T->schedule = nullptr;
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace host
} // namespace fusedksp
