/* Host backend: the Gram-Schmidt kernels of simpler GMRES (seed 000 Alg. 6) */
#include "backend/host/host_reduce.hpp"
#include "backend/iteration.hpp"

namespace fusedksp
{
namespace host
{

/* See Backend::mdot */
PetscErrorCode MDot(PetscInt n, PetscInt nv, const PetscScalar *const *V, const PetscScalar *y, PetscBool selfdot, PetscScalar *dots)
{
  PetscScalar *part;
  const int    nd = (int)nv + (selfdot ? 1 : 0);

  PetscScalar *all;

  PetscFunctionBegin;
  counters.launches++;
  if (TargetStopped()) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(PetscMalloc2(nd, &part, nd, &all));
  BlockedReduceN(n, nd, all, part, [=](PetscInt i, PetscScalar *pt) {
    const PetscScalar yi = y[i];
    for (PetscInt j = 0; j < nv; ++j) pt[j] += V[j][i] * yi;
    if (selfdot) pt[nv] += yi * yi;
  });
  StoreResults(nd, all, dots);
  PetscCall(PetscFree2(part, all));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::maxpy_scale */
PetscErrorCode MAXPYScale(PetscInt n, PetscInt nv, const PetscScalar *coef, const PetscScalar *const *V, PetscScalar *y, PetscScalar scale, const PetscScalar *dotvec, PetscScalar *dot)
{
  PetscScalar sum;

  PetscFunctionBegin;
  BlockedReduce<1>(n, &sum, [=](PetscInt i, PetscScalar *part) {
    PetscScalar yi = SGMRESOrthogonalEntry(y[i], nv, coef, [&](PetscInt j) { return V[j][i]; }) * scale;
    y[i]           = yi;
    part[0] += yi * (dotvec ? dotvec[i] : yi);
  });
  if (dot) *dot = sum;
  counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::sgmres_update */
PetscErrorCode SGMRESUpdate(PetscInt n, PetscInt nv, const PetscScalar *coef, const PetscScalar *const *V, PetscScalar *w, PetscScalar scale, PetscScalar eta, const PetscScalar *zold, PetscScalar *znew, PetscScalar dots[1])
{
  PetscFunctionBegin;
  BlockedReduce<1>(n, dots, [=](PetscInt i, PetscScalar *part) {
    PetscScalar       wi = SGMRESOrthogonalEntry(w[i], nv, coef, [&](PetscInt j) { return V[j][i]; });
    const PetscScalar zi = SGMRESUpdateEntry(scale, eta, zold[i], wi);
    w[i]                 = wi;
    znew[i]              = zi;
    part[0] += zi * zi;
  });
  counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace host
} // namespace fusedksp
