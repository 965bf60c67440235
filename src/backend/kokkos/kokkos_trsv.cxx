/* Kokkos backend: sparse triangular solves by level scheduling */
#include "backend/kokkos/kokkos_reduce.hpp"

namespace fusedksp
{
namespace kokkos
{

/* The level schedule of a factor: level l is rows[levelptr[l] .. levelptr[l+1]) (levelptr on the host,
   rows in the backend's memory) */
struct Schedule {
  PetscInt  nlevels  = 0;
  PetscInt *levelptr = nullptr;
  PetscInt *rows     = nullptr;
};

/* See Backend::trsv_analysis: both algorithms solve by levels here (a row waiting on other rows'
   flags, as the sync-free form does, needs threads that make progress independently, which the
   host execution spaces do not promise) */
PetscErrorCode TrsvAnalysis(TriangularView *T, PetscInt nlevels, const PetscInt *levelptr, const PetscInt *rows)
{
  Schedule *s;

  PetscFunctionBegin;
  PetscCall(PetscNew(&s));
  s->nlevels = nlevels;
  PetscCall(PetscMalloc1(nlevels + 1, &s->levelptr));
  PetscCall(PetscArraycpy(s->levelptr, levelptr, nlevels + 1));
  PetscCall(KokkosBackend()->malloc_bytes(sizeof(PetscInt) * PetscMax(T->n, 1), (void **)&s->rows));
  PetscCall(CopyToBackend(s->rows, rows, sizeof(PetscInt) * T->n));
  T->schedule = s;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::trsv_csr: one parallel loop per level, each row's sum in the order of its entries */
PetscErrorCode TrsvCSR(const TriangularView *T, const PetscScalar *b, PetscScalar *x)
{
  const Schedule    *s      = (const Schedule *)T->schedule;
  const PetscInt    *rowptr = T->rowptr, *colidx = T->colidx;
  const PetscScalar *vals = T->vals, *invdiag = T->invdiag;
  const bool         upper = T->upper;

  PetscFunctionBegin;
  PetscCheck(T->n >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Negative size %" PetscInt_FMT, T->n);
  PetscCheck(s || !T->n, PETSC_COMM_SELF, PETSC_ERR_ORDER, "trsv_csr before trsv_analysis");
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
    PetscCall(PetscFree(s->levelptr));
    PetscCall(PetscFree(s));
  }
  T->schedule = nullptr;
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace kokkos
} // namespace fusedksp
