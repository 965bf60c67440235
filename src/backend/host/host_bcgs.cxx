/* Host backend: the BiCGStab vector kernels (seed 000 Alg. 4) */
#include "backend/host/host_reduce.hpp"
#include "backend/iteration.hpp"

namespace fusedksp
{
namespace host
{

/* See Backend::waxpy_dot */
PetscErrorCode WAXPYDot(PetscInt n, PetscScalar a, const PetscScalar *x, const PetscScalar *v, PetscScalar *y, PetscScalar dots[1])
{
  PetscFunctionBegin;
  BlockedReduce<1>(n, dots, [=](PetscInt i, PetscScalar *part) {
    const PetscScalar yi = x[i] + a * v[i];
    y[i]                 = yi;
    part[0] += yi * yi;
  });
  counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::bcgs_update */
PetscErrorCode BCGSUpdate(PetscInt n, PetscScalar alpha, PetscScalar omega, PetscScalar beta, const PetscScalar *wr, PetscScalar *x, PetscScalar *r, PetscScalar *p, const PetscScalar *s, const PetscScalar *Ap, const PetscScalar *As,
                          const PetscScalar *rstar, const PetscScalar *rhat, int ndots, PetscScalar *dots)
{
  PetscScalar all[3];

  PetscFunctionBegin;
  BlockedReduce<3>(n, all, [=](PetscInt i, PetscScalar *part) {
    const PetscScalar ri = BCGSUpdateEntry(alpha, omega, beta, s[i], As[i], Ap[i], wr, wr ? wr[i] : 1, x[i], r[i], p[i]);
    part[0] += ri * rstar[i];
    part[1] += ri * ri;
    if (ndots > 2) part[2] += ri * rhat[i];
  });
  for (int d = 0; d < ndots; ++d) dots[d] = all[d];
  counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace host
} // namespace fusedksp
