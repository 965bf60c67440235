/* Kokkos backend: sparse triangular solves by level scheduling, and approximate ones by Jacobi sweeps */
#include "backend/kokkos/kokkos_reduce.hpp"

namespace fusedksp
{
namespace kokkos
{

/* The level schedule of a factor: level l is rows[levelptr[l] .. levelptr[l+1]) (levelptr on the host,
   rows in the backend's memory) */
struct Schedule {
  PetscInt     nlevels  = 0;
  PetscInt    *levelptr = nullptr;
  PetscInt    *rows     = nullptr;
  PetscScalar *work     = nullptr; /* JACOBI: n */
};

/* See Backend::trsv_analysis: SYNCFREE, LEVELS and CUSPARSE all solve by levels here (a row waiting on other
   rows' flags, as the sync-free form does, needs threads that make progress independently, which the host
   execution spaces do not promise; cuSPARSE is the CUDA backend's) */
PetscErrorCode TrsvAnalysis(TriangularView *T, PetscInt nlevels, const PetscInt *levelptr, const PetscInt *rows)
{
  Schedule *s;

  PetscFunctionBegin;
  PetscCheck(T->sweeps >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Negative number of sweeps %" PetscInt_FMT, T->sweeps);
  PetscCall(PetscNew(&s));
  s->nlevels = nlevels;
  PetscCall(PetscMalloc1(nlevels + 1, &s->levelptr));
  if (nlevels) PetscCall(PetscArraycpy(s->levelptr, levelptr, nlevels + 1));
  PetscCall(KokkosBackend()->malloc_bytes(sizeof(PetscInt) * PetscMax(T->n, 1), (void **)&s->rows));
  if (T->algorithm != TrsvAlgorithm::JACOBI) PetscCall(CopyToBackend(s->rows, rows, sizeof(PetscInt) * T->n)); /* sweeps need no schedule */
  if (T->algorithm == TrsvAlgorithm::JACOBI) PetscCall(KokkosBackend()->malloc_bytes(sizeof(PetscScalar) * PetscMax(T->n, 1), (void **)&s->work));
  T->schedule = s;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::trsv_csr: one parallel loop per level, each row's sum in the order of its entries; JACOBI one per
   sweep, as the host backend's */
PetscErrorCode TrsvCSR(const TriangularView *T, const PetscScalar *b, PetscScalar *x)
{
  const Schedule    *s      = (const Schedule *)T->schedule;
  const PetscInt    *rowptr = T->rowptr, *colidx = T->colidx;
  const PetscScalar *vals = T->vals, *invdiag = T->invdiag;
  const bool         upper = T->upper;

  PetscFunctionBegin;
  PetscCheck(T->n >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Negative size %" PetscInt_FMT, T->n);
  PetscCheck(s || !T->n, PETSC_COMM_SELF, PETSC_ERR_ORDER, "trsv_csr before trsv_analysis");
  if (T->algorithm == TrsvAlgorithm::JACOBI) {
    const PetscInt sweeps = T->sweeps;

    for (PetscInt m = PetscMin(sweeps, 1); T->n && m <= sweeps; ++m) { /* sweep m writes x when sweeps - m is even */
      PetscScalar       *out   = (sweeps - m) % 2 ? s->work : x;
      const PetscScalar *in    = out == x ? s->work : x;
      const bool         first = m <= 1; /* in = D^{-1} b (m = 0: x = D^{-1} b alone, sweeps = 0) */
      const bool         diag  = m == 0;
      Kokkos::parallel_for(
          "fusedksp::trsv_jacobi", Kokkos::RangePolicy<ExecSpace>(0, T->n), KOKKOS_LAMBDA(const PetscInt i) {
            PetscScalar sum = b[i];
            for (PetscInt k = rowptr[i]; !diag && k < rowptr[i + 1]; ++k) {
              const PetscInt j = colidx[k];
              sum -= vals[k] * (first ? (upper ? invdiag[j] * b[j] : b[j]) : in[j]);
            }
            out[i] = upper ? sum * invdiag[i] : sum;
          });
      counters.launches++;
    }
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  for (PetscInt l = 0; T->n && l < s->nlevels; ++l) {
    const PetscInt *rows = s->rows;
    Kokkos::parallel_for(
        "fusedksp::trsv_level", Kokkos::RangePolicy<ExecSpace>(s->levelptr[l], s->levelptr[l + 1]), KOKKOS_LAMBDA(const PetscInt t) {
          const PetscInt i   = rows[t];
          PetscScalar    sum = b[i];
          for (PetscInt k = rowptr[i]; k < rowptr[i + 1]; ++k) sum -= vals[k] * x[colidx[k]];
          x[i] = upper ? sum * invdiag[i] : sum;
        });
    counters.launches++;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::trsv_free */
PetscErrorCode TrsvFree(TriangularView *T)
{
  Schedule *s = (Schedule *)T->schedule;

  PetscFunctionBegin;
  if (s) {
    PetscCall(KokkosBackend()->free_bytes(s->rows));
    PetscCall(KokkosBackend()->free_bytes(s->work));
    PetscCall(PetscFree(s->levelptr));
    PetscCall(PetscFree(s));
  }
  T->schedule = nullptr;
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace kokkos
} // namespace fusedksp
