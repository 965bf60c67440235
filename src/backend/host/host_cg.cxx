/* Host backend: the CG vector update (seed 000 Alg. 2, lines 10-12, preconditioned) */
#include "backend/host/host_reduce.hpp"
#include "backend/iteration.hpp"

namespace fusedksp
{
namespace host
{

/* See Backend::cg_update */
PetscErrorCode CGUpdate(PetscInt n, PetscScalar a, PetscScalar b, PetscScalar *x, PetscScalar *r, PetscScalar *z, PetscScalar *p, const PetscScalar *q, const PetscScalar *u, const PetscScalar *w, PetscScalar dots[3])
{
  PetscFunctionBegin;
  BlockedReduce<3>(n, dots, [=](PetscInt i, PetscScalar *part) {
    CGUpdateEntry(
        a, b, q[i], [&](PetscScalar ri) { return w ? w[i] * ri : (z ? z[i] = z[i] - a * u[i] : ri); }, x[i], r[i], p[i], part);
  });
  counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace host
} // namespace fusedksp
