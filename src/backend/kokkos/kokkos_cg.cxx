/* Kokkos backend: the CG vector update (seed 000 Alg. 2, lines 10-12, preconditioned) and its chunks */
#include "backend/kokkos/kokkos_reduce.hpp"
#include "backend/iteration.hpp"

namespace fusedksp
{
namespace kokkos
{

/* See Backend::cg_update: one pass over the vectors; an entry reads all it needs before it stores (the compiler
   cannot tell the arrays apart: loads after a store would wait for the ones before it on a GPU) */
PetscErrorCode CGUpdate(PetscInt n, PetscScalar a, PetscScalar b, PetscScalar *x, PetscScalar *r, PetscScalar *z, PetscScalar *p, const PetscScalar *q, const PetscScalar *u, const PetscScalar *w, PetscScalar dots[3])
{
  PetscFunctionBegin;
  PetscCall(ChunkedReduce<3>(
      "fusedksp::cg_update", n, 3, dots, KOKKOS_LAMBDA(const PetscInt i, PetscScalar *KOKKOS_RESTRICT part) {
        const bool        zu = !w && z;
        const PetscScalar qi = q[i], wi = w ? w[i] : 0, zi = zu ? z[i] : 0, ui = zu ? u[i] : 0;
        PetscScalar       xi = x[i], ri = r[i], pi = p[i], znew = 0;

        CGUpdateEntry(
            a, b, qi, [&](PetscScalar rnew) { return w ? wi * rnew : (zu ? znew = zi - a * ui : rnew); }, xi, ri, pi, part);
        x[i] = xi;
        r[i] = ri;
        p[i] = pi;
        if (zu) z[i] = znew;
      }));
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace kokkos
} // namespace fusedksp
