/* Host backend: the diagonal of a matrix through the positions of its diagonal entries, and the SELL-P layout of a
   CSR matrix */
#include "backend/host/host_reduce.hpp"

namespace fusedksp
{
namespace host
{

/* See Backend::diag_get */
PetscErrorCode DiagGet(PetscInt n, const PetscInt64 *pos, const PetscScalar *vals, PetscScalar *d)
{
  PetscFunctionBegin;
  PetscCheck(n >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Negative length %" PetscInt_FMT, n);
  for (PetscInt i = 0; i < n; ++i) d[i] = pos[i] >= 0 ? vals[pos[i]] : 0;
  if (n) counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::diag_shift */
PetscErrorCode DiagShift(PetscInt n, const PetscInt64 *pos, PetscScalar a, PetscScalar *vals)
{
  PetscFunctionBegin;
  PetscCheck(n >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Negative length %" PetscInt_FMT, n);
  for (PetscInt i = 0; i < n; ++i) vals[pos[i]] += a;
  if (n) counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::sell_from_csr: lane by lane */
PetscErrorCode SELLFromCSR(const SELLView *S, const PetscInt *rowptr, const PetscInt *colidx, const PetscScalar *vals, PetscInt *scolidx, PetscScalar *svals)
{
  const PetscInt64 nlanes = (S->nrows + FUSED_SELL_HEIGHT - 1) / FUSED_SELL_HEIGHT * FUSED_SELL_HEIGHT;

  PetscFunctionBegin;
  for (PetscInt64 i = 0; i < nlanes; ++i) SELLFromCSRLane(i, S->nrows, S->threads, S->sliceptr, rowptr, colidx, vals, scolidx, svals);
  if (nlanes) counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::csr_from_sell: row by row */
PetscErrorCode CSRFromSELL(const SELLView *S, const PetscInt *rowptr, PetscInt *colidx, PetscScalar *vals)
{
  PetscFunctionBegin;
  for (PetscInt64 i = 0; i < S->nrows; ++i) CSRFromSELLLane(i, S->nrows, S->threads, S->sliceptr, rowptr, S->colidx, S->vals, colidx, vals);
  if (S->nrows) counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace host
} // namespace fusedksp
