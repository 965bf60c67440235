/* Kokkos backend: the CG vector update (seed 000 Alg. 2, lines 10-12, preconditioned) and its chunks */
#include "backend/kokkos/kokkos_reduce.hpp"
#include "backend/iteration.hpp"

namespace fusedksp
{
namespace kokkos
{

/* See Backend::cg_update: one pass over the vectors */
PetscErrorCode CGUpdate(PetscInt n, PetscScalar a, PetscScalar b, PetscScalar *x, PetscScalar *r, PetscScalar *z, PetscScalar *p, const PetscScalar *q, const PetscScalar *u, const PetscScalar *w, PetscScalar dots[3])
{
  PetscFunctionBegin;
  PetscCall(ChunkedReduce<3>(
      "fusedksp::cg_update", n, 3, dots, KOKKOS_LAMBDA(const PetscInt i, PetscScalar *KOKKOS_RESTRICT part) {
        CGUpdateEntry(
            a, b, q[i], [&](PetscScalar ri) { return w ? w[i] * ri : (z ? z[i] = z[i] - a * u[i] : ri); }, x[i], r[i], p[i], part);
      }));
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace kokkos
} // namespace fusedksp
