/* Kokkos backend: the diagonal of a matrix, the SELL-P layout of a CSR matrix, and the halo exchange operations of
   parallel matrices */
#include "backend/kokkos/kokkos_reduce.hpp"

namespace fusedksp
{
namespace kokkos
{

/* See Backend::diag_get */
PetscErrorCode DiagGet(PetscInt n, const PetscInt64 *pos, const PetscScalar *vals, PetscScalar *d)
{
  PetscFunctionBegin;
  PetscCheck(n >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Negative length %" PetscInt_FMT, n);
  if (n)
    ForEach(
        "fusedksp::diag_get", n, KOKKOS_LAMBDA(const PetscInt i) { d[i] = pos[i] >= 0 ? vals[pos[i]] : 0; });
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::diag_shift */
PetscErrorCode DiagShift(PetscInt n, const PetscInt64 *pos, PetscScalar a, PetscScalar *vals)
{
  PetscFunctionBegin;
  PetscCheck(n >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Negative length %" PetscInt_FMT, n);
  if (n)
    ForEach(
        "fusedksp::diag_shift", n, KOKKOS_LAMBDA(const PetscInt i) { vals[pos[i]] += a; });
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::sell_from_csr: one work item per lane of a slice */
PetscErrorCode SELLFromCSR(const SELLView *S, const PetscInt *rowptr, const PetscInt *colidx, const PetscScalar *vals, PetscInt *scolidx, PetscScalar *svals)
{
  const PetscInt64  nlanes   = (S->nrows + FUSED_SELL_HEIGHT - 1) / FUSED_SELL_HEIGHT * FUSED_SELL_HEIGHT;
  const PetscInt64 *sliceptr = S->sliceptr;
  const PetscInt    nrows    = S->nrows;
  const int         threads  = S->threads;

  PetscFunctionBegin;
  if (nlanes)
    ForEach(
        "fusedksp::sell_from_csr", (PetscInt)nlanes, KOKKOS_LAMBDA(const PetscInt i) { SELLFromCSRLane(i, nrows, threads, sliceptr, rowptr, colidx, vals, scolidx, svals); });
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::csr_from_sell: one work item per row */
PetscErrorCode CSRFromSELL(const SELLView *S, const PetscInt *rowptr, PetscInt *colidx, PetscScalar *vals)
{
  const PetscInt64  *sliceptr = S->sliceptr;
  const PetscInt    *scolidx  = S->colidx;
  const PetscScalar *svals    = S->vals;
  const PetscInt     nrows    = S->nrows;
  const int          threads  = S->threads;

  PetscFunctionBegin;
  if (nrows)
    ForEach(
        "fusedksp::csr_from_sell", nrows, KOKKOS_LAMBDA(const PetscInt i) { CSRFromSELLLane(i, nrows, threads, sliceptr, rowptr, scolidx, svals, colidx, vals); });
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::gather */
PetscErrorCode Gather(PetscInt n, const PetscInt *idx, const PetscScalar *w, const PetscScalar *x, PetscScalar *buf)
{
  PetscFunctionBegin;
  ForEach(
      "fusedksp::gather", n, KOKKOS_LAMBDA(const PetscInt k) { buf[k] = w ? w[idx[k]] * x[idx[k]] : x[idx[k]]; });
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::scatter: with `add` the indices may repeat, so the additions are atomic */
PetscErrorCode Scatter(PetscInt n, const PetscInt *idx, const PetscScalar *buf, PetscBool add, PetscScalar *y)
{
  PetscFunctionBegin;
  if (add)
    ForEach(
        "fusedksp::scatter_add", n, KOKKOS_LAMBDA(const PetscInt k) { Kokkos::atomic_add(&y[idx[k]], buf[k]); });
  else
    ForEach(
        "fusedksp::scatter", n, KOKKOS_LAMBDA(const PetscInt k) { y[idx[k]] = buf[k]; });
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace kokkos
} // namespace fusedksp
