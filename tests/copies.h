/* Host->device copies per iteration of a fused solve (test_ilu, test_pbjacobi): -max_h2d_per_it.  Include after
   check.h. */
#pragma once
#include <fusedksp.h>

/* Solves again with ksp (its preconditioner set up, its vectors on the backend), and once more to sqrt(rtol), and
   counts the backend's host->device copies (FusedKSPGetBackendCounters()) of each: their difference over the
   difference of the iterations is at most max_per_it (both converge, so the copies of a solve's start and end
   cancel; 0: the preconditioner is applied on the backend).  Solves to rtol once more at the end, so that x is the
   solution to rtol again.                                                                                        */
static PetscErrorCode CheckH2DPerIteration(KSP ksp, Vec b, Vec x, PetscReal max_per_it, const char *what)
{
  PetscInt64 h[4];
  PetscInt   its, its_loose, maxit;
  PetscReal  rtol, abstol, dtol, per_it;

  PetscFunctionBeginUser;
  PetscCall(FusedKSPGetBackendCounters(NULL, NULL, &h[0]));
  PetscCall(KSPSolve(ksp, b, x));
  PetscCall(FusedKSPGetBackendCounters(NULL, NULL, &h[1]));
  PetscCall(KSPGetIterationNumber(ksp, &its));
  PetscCall(KSPGetTolerances(ksp, &rtol, &abstol, &dtol, &maxit));
  PetscCall(KSPSetTolerances(ksp, PetscSqrtReal(rtol), abstol, dtol, maxit));
  PetscCall(FusedKSPGetBackendCounters(NULL, NULL, &h[2]));
  PetscCall(KSPSolve(ksp, b, x));
  PetscCall(FusedKSPGetBackendCounters(NULL, NULL, &h[3]));
  PetscCall(KSPGetIterationNumber(ksp, &its_loose));
  PetscCall(KSPSetTolerances(ksp, rtol, abstol, dtol, maxit));
  PetscCall(KSPSolve(ksp, b, x));
  per_it = its > its_loose ? (PetscReal)((h[1] - h[0]) - (h[3] - h[2])) / (PetscReal)(its - its_loose) : PETSC_INFINITY;
  PetscCall(Check((PetscBool)(its - its_loose >= 2 && per_it <= max_per_it + 1e-12), "%s: %g host->device copies per iteration (%" PetscInt64_FMT " in %" PetscInt_FMT " iterations, %" PetscInt64_FMT " in %" PetscInt_FMT " to rtol %g), at most %g",
                  what, (double)per_it, h[1] - h[0], its, h[3] - h[2], its_loose, (double)PetscSqrtReal(rtol), (double)max_per_it));
  PetscFunctionReturn(PETSC_SUCCESS);
}
