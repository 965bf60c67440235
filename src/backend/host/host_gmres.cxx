/* Host backend: the Gram-Schmidt kernels of simpler GMRES (seed 000 Alg. 6) */
#include "backend/host/host_reduce.hpp"

namespace fusedksp
{
namespace host
{

/* See Backend::mdot */
PetscErrorCode MDot(PetscInt n, PetscInt nv, const PetscScalar *const *V, const PetscScalar *y, PetscBool selfdot, PetscScalar *dots)
{
  PetscScalar *part;
  const int    nd = (int)nv + (selfdot ? 1 : 0);

  PetscFunctionBegin;
  PetscCall(PetscMalloc1(nd, &part));
  BlockedReduceN(n, nd, dots, part, [=](PetscInt i, PetscScalar *pt) {
    const PetscScalar yi = y[i];
    for (PetscInt j = 0; j < nv; ++j) pt[j] += V[j][i] * yi;
    if (selfdot) pt[nv] += yi * yi;
  });
  PetscCall(PetscFree(part));
  counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::maxpy_scale */
PetscErrorCode MAXPYScale(PetscInt n, PetscInt nv, const PetscScalar *coef, const PetscScalar *const *V, PetscScalar *y, PetscScalar scale, PetscScalar *selfdot)
{
  PetscScalar dot;

  PetscFunctionBegin;
  BlockedReduce<1>(n, &dot, [=](PetscInt i, PetscScalar *part) {
    PetscScalar yi = y[i];
    for (PetscInt j = 0; j < nv; ++j) yi -= coef[j] * V[j][i];
    yi *= scale;
    y[i] = yi;
    part[0] += yi * yi;
  });
  if (selfdot) *selfdot = dot;
  counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace host
} // namespace fusedksp
