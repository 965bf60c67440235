/* What the three fused solvers share: preconditioner mode, norms, true-residual check */
#pragma once

#include "ops/fusedops.hpp"
#include "core/recurrences.hpp"
#include <petsc/private/kspimpl.h>

namespace fusedksp
{

/* How the preconditioner enters the kernels */
enum class PCMode { NONE, JACOBI, GENERAL };
extern const char *const PCModeNames[];

/* Detects the PC mode; for JACOBI, w receives the weights (the Jacobi PC applied to a vector of
   ones, so every -pc_jacobi_* option is honoured).  scratch is an operator-sized work vector
   (overwritten); w is (re)created like it when missing or of another size.                   */
PetscErrorCode KSPFusedPCMode(KSP ksp, Vec scratch, PCMode *mode, Vec *w);

/* PCApplyTransposeExists(), also asked of the PCs inside a PCKSP or (set up) PCFIELDSPLIT: a PCKSP has a
   transpose only when its inner solver's PC has one                                                    */
PetscErrorCode KSPFusedPCHasTranspose(PC pc, PetscBool *has);

/* PCApply() of the KSP's preconditioner (KSP_PCApply()), counted in the solve's counters with the host<->device vector
   copies it made (-ksp_view shows them: where the preconditioner runs) */
PetscErrorCode KSPFusedApplyPC(KSP ksp, Vec x, Vec y);

/* KSPFusedApplyPC() with the transpose of the preconditioner (KSP_PCApplyHermitianTranspose(), PCApplyTranspose() for
   real scalars), counted the same way */
PetscErrorCode KSPFusedApplyPCTranspose(KSP ksp, Vec x, Vec y);

/* Applies the preconditioner of the given mode: z = w .* r | PCApply | z = r */
PetscErrorCode KSPFusedPCApply(KSP ksp, PCMode mode, Vec w, Vec r, Vec z);
/* ... and its transpose: z = w .* r | PCApplyTranspose | z = r */
PetscErrorCode KSPFusedPCApplyTranspose(KSP ksp, PCMode mode, Vec w, Vec r, Vec z);

/* Sets ksp->reason from a recurrence status; returns PETSC_TRUE if the solve must stop */
PetscBool KSPFusedStatusStops(KSP ksp, RecurrenceStatus status);

/* Logs, monitors and tests convergence of residual norm `rnorm` at iteration `it` */
PetscErrorCode KSPFusedMonitorAndTest(KSP ksp, PetscInt it, PetscReal rnorm);

/* After a converged test with a recurrence residual: is the true residual (norm of the type
   the solve uses, with left preconditioning by `mode`) within the tolerance too?  `r` and `z`
   receive b - A x and its preconditioned counterpart.  Only for the default convergence test, whose
   tolerance it applies (ksp->ttol, set by KSPConvergedDefault() at iteration 0: from ||b|| of the norm
   type when the initial guess is nonzero, as the device's stop test sets it)                     */
PetscErrorCode KSPFusedTrueResidualConverged(KSP ksp, PCMode mode, Vec w, PetscBool leftpc, Vec r, Vec z, PetscReal *truenorm, PetscBool *ok);

/* Failed true-residual checks of one solve (zero-initialize at the start of a solve) */
struct TrueResidualGuard {
  PetscReal best  = 0; /* smallest true residual at a failed check */
  PetscInt  stuck = 0; /* consecutive failed checks that did not improve on it by 10% */
};

/* After a true-residual check failed: PETSC_TRUE (and ksp->reason = KSP_DIVERGED_BREAKDOWN) when three
   consecutive failed checks, each after a residual replacement, did not lower the true residual below
   0.9 of the best one: the tolerance is below the attainable accuracy, and replacing again cannot help.
   Used by fusedcg and fusedsgmres, whose residual estimates are accurate up to the attainable accuracy. */
PetscBool KSPFusedTrueResidualStagnates(KSP ksp, PetscReal truenorm, TrueResidualGuard *guard);

/* Views the parts every fused solver shows in -ksp_view */
PetscErrorCode KSPFusedViewCommon(KSP ksp, PetscViewer viewer, PCMode mode, const char *kernels, PetscInt reductions, PetscInt replacements);

/* The counter behind KSPFusedGetReductionCount(), composed on the KSP; removed by KSPFusedDestroyCommon() */
PetscErrorCode KSPFusedSetSolveCounters(KSP ksp, SolveCounters *counter);

/* ksp->ops->solve of a fused solver: Solve in a scope of batches of its own (OpsSolveScoped()), so that
   fused solves nest inside each other's preconditioners and operators and an error leaves no batch open */
/* As PETSc's KSPCheckDot()/KSPCheckNorm() in its solvers: a solve stopped by NaN or Inf after its preconditioner
   failed (PCGetFailedReason(): a zero pivot of a factorization, a singular block of point-block Jacobi) ends with
   KSP_DIVERGED_PC_FAILED, its solution flagged with VecFlag().  Collective (ksp->reason is the same on every rank). */
PetscErrorCode KSPFusedCheckPCFailed(KSP ksp);

template <PetscErrorCode (*Solve)(KSP)> PetscErrorCode KSPSolveScoped(KSP ksp)
{
  PetscFunctionBegin;
  PetscCall(OpsSolveScoped(ksp, Solve));
  PetscCall(KSPFusedCheckPCFailed(ksp));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* What every fused solver's destroy does: the Jacobi weights, the composed counter, KSPDestroyDefault() */
PetscErrorCode KSPFusedDestroyCommon(KSP ksp, Vec *w);

} // namespace fusedksp
