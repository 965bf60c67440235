/* Host backend: sparse triangular solves (the reference of Backend::trsv_csr) */
#include "backend/host/host_reduce.hpp"

namespace fusedksp
{
namespace host
{

/* See Backend::trsv_analysis: the host solves row by row in solve order and needs no schedule; JACOBI keeps the
   work vector of its sweeps */
PetscErrorCode TrsvAnalysis(TriangularView *T, PetscInt, const PetscInt *, const PetscInt *)
{
  PetscScalar *work = nullptr;

  PetscFunctionBegin;
  PetscCheck(T->sweeps >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Negative number of sweeps %" PetscInt_FMT, T->sweeps);
  if (T->algorithm == TrsvAlgorithm::JACOBI) PetscCall(PetscMalloc1(T->n, &work));
  T->schedule = work;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* out = D^{-1} (b - D N in) of TriangularView, row by row; first: in = D^{-1} b, read from b (x_0 is not stored) */
static void JacobiSweep(const TriangularView *T, const PetscScalar *b, const PetscScalar *in, bool first, PetscScalar *out)
{
  for (PetscInt i = 0; i < T->n; ++i) {
    PetscScalar s = b[i];

    for (PetscInt k = T->rowptr[i]; k < T->rowptr[i + 1]; ++k) {
      const PetscInt j = T->colidx[k];

      s -= T->vals[k] * (first ? (T->upper ? T->invdiag[j] * b[j] : b[j]) : in[j]);
    }
    out[i] = T->upper ? s * T->invdiag[i] : s;
  }
}

/* See Backend::trsv_csr: rows in solve order, each row's sum in the order of its entries (SYNCFREE, LEVELS and
   CUSPARSE alike); JACOBI: the sweeps, each row's sum in the order of its entries, the last sweep into x */
PetscErrorCode TrsvCSR(const TriangularView *T, const PetscScalar *b, PetscScalar *x)
{
  const PetscInt n = T->n;

  PetscFunctionBegin;
  PetscCheck(n >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Negative size %" PetscInt_FMT, n);
  if (T->algorithm == TrsvAlgorithm::JACOBI) {
    PetscScalar *work = (PetscScalar *)T->schedule;

    PetscCheck(work || !n, PETSC_COMM_SELF, PETSC_ERR_ORDER, "trsv_csr before trsv_analysis");
    if (!T->sweeps) {
      for (PetscInt i = 0; i < n; ++i) x[i] = T->upper ? T->invdiag[i] * b[i] : b[i];
    } else {
      /* sweep m (1..sweeps) writes x when sweeps - m is even, so that the last one lands in x */
      for (PetscInt m = 1; m <= T->sweeps; ++m) {
        PetscScalar *out = (T->sweeps - m) % 2 ? work : x;

        JacobiSweep(T, b, out == x ? work : x, m == 1, out);
      }
    }
    if (n) counters.launches += PetscMax(T->sweeps, 1);
    PetscFunctionReturn(PETSC_SUCCESS);
  }
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
  if (T->algorithm == TrsvAlgorithm::JACOBI) PetscCall(PetscFree(T->schedule));
  T->schedule = nullptr;
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace host
} // namespace fusedksp
