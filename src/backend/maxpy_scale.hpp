/* BlasKernels::maxpy (backend/blas.hpp) of the backends whose memory is the host's (host, kokkos): their
   Gram-Schmidt update MAXPYScale() with the coefficients negated, y - sum_j (-alpha_j) X_j */
#pragma once

#include "sys/errors.hpp"
#include <vector>

namespace fusedksp
{
using MAXPYScaleFn = PetscErrorCode (*)(PetscInt, PetscInt, const PetscScalar *, const PetscScalar *const *, PetscScalar *, PetscScalar, const PetscScalar *, PetscScalar *);

template <MAXPYScaleFn maxpy_scale> PetscErrorCode MAXPYByScale(PetscInt n, PetscInt nv, const PetscScalar *alpha, const PetscScalar *const *X, PetscScalar *y)
{
  std::vector<PetscScalar> coef;

  PetscFunctionBegin;
  FusedKSPCallCXX(coef.resize(nv > 0 ? nv : 1));
  for (PetscInt j = 0; j < nv; ++j) coef[j] = -alpha[j];
  PetscCall(maxpy_scale(n, nv, coef.data(), X, y, 1.0, nullptr, nullptr));
  PetscFunctionReturn(PETSC_SUCCESS);
}
} // namespace fusedksp
