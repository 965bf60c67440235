/* Host backend: the Gram-Schmidt kernels of simpler GMRES (seed 000 Alg. 6) and their block forms (CA-GMRES) */
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

/* See Backend::block_mdot: the terms of every dot product in mdot's chunks and order (the results are those of
   nw calls of mdot on [V, W[0..j)] and W[j] with its self-dot) */
PetscErrorCode BlockMDot(PetscInt n, PetscInt nv, const PetscScalar *const *V, PetscInt nw, const PetscScalar *const *W, PetscScalar *dots)
{
  const PetscInt ld = nv + nw;
  const int      nd = (int)(nw * ld);
  PetscScalar   *part, *all;

  PetscFunctionBegin;
  PetscCheck(nw >= 1 && nw <= 64, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "A block of %" PetscInt_FMT " columns: 1 to 64", nw);
  counters.launches++;
  if (TargetStopped()) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(PetscMalloc2(nd, &part, nd, &all));
  BlockedReduceN(n, nd, all, part, [=](PetscInt i, PetscScalar *pt) {
    for (PetscInt j = 0; j < nw; ++j) {
      const PetscScalar wj = W[j][i];
      for (PetscInt l = 0; l < nv; ++l) pt[j * ld + l] += V[l][i] * wj;
      for (PetscInt k = 0; k <= j; ++k) pt[j * ld + nv + k] += W[k][i] * wj;
    }
  });
  StoreResults(nd, all, dots);
  PetscCall(PetscFree2(part, all));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::block_maxpy: each entry of W[j] as maxpy_scale computes it with the vectors [V, W[0..j)] */
PetscErrorCode BlockMAXPY(PetscInt n, PetscInt nv, const PetscScalar *const *V, PetscInt nw, PetscScalar *const *W, const PetscScalar *coef, const PetscScalar *scale)
{
  const PetscInt ld = nv + nw;

  PetscFunctionBegin;
  PetscCheck(nw >= 1 && nw <= 64, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "A block of %" PetscInt_FMT " columns: 1 to 64", nw);
  for (PetscInt i = 0; i < n; ++i)
    for (PetscInt j = 0; j < nw; ++j) W[j][i] = SGMRESOrthogonalEntry(W[j][i], nv + j, coef + j * ld, [&](PetscInt l) { return l < nv ? V[l][i] : W[l - nv][i]; }) * scale[j];
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
