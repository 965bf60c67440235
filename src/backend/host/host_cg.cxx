/* Host backend: the CG vector update (seed 000 Alg. 2, lines 10-12, preconditioned) */
#include "backend/host/host_reduce.hpp"

namespace fusedksp
{
namespace host
{

/* See Backend::cg_update */
PetscErrorCode CGUpdate(PetscInt n, PetscScalar a, PetscScalar b, PetscScalar *x, PetscScalar *r, PetscScalar *z, PetscScalar *p, const PetscScalar *q, const PetscScalar *u, const PetscScalar *w, PetscScalar dots[3])
{
  PetscFunctionBegin;
  BlockedReduce<3>(n, dots, [=](PetscInt i, PetscScalar *part) {
    const PetscScalar ri = r[i] - a * q[i];
    PetscScalar       zi;
    if (w)
      zi = w[i] * ri;
    else if (z)
      zi = z[i] = z[i] - a * u[i];
    else
      zi = ri;
    x[i] += a * p[i];
    r[i] = ri;
    p[i] = zi + b * p[i];
    part[0] += ri * zi;
    part[1] += ri * ri;
    part[2] += zi * zi;
  });
  counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace host
} // namespace fusedksp
