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

/* The GMRES solvers (fusedsgmres, fusedcagmres): right preconditioning, restart cycles */

/* out = Op in = A M^{-1} in for the preconditioner of the given mode (Jacobi fused into the product);
   work receives M^{-1} in (or is scratch)                                                            */
PetscErrorCode KSPFusedRightOperator(KSP ksp, PCMode mode, Vec w, Mat A, Vec in, Vec out, Vec work);

/* r = b - A x (unpreconditioned) and rho = ||r||, its reduction counted in counters */
PetscErrorCode KSPFusedResidualNorm(KSP ksp, Mat A, Vec r, SolveCounters *counters, PetscReal *rho);

/* The test of a restart cycle's start with its true residual norm rho: iteration 0 (monitors, history,
   test) or the restart after `its` iterations (the KSP's test and ksp->rnorm only); *stop when the solve
   ends there (a reason, max_it, or rho = 0)                                                            */
PetscErrorCode KSPFusedCycleTest(KSP ksp, PetscInt its, PetscReal rho, PetscBool *stop);

/* x += M^{-1} V y for the preconditioner of the given mode, from negy = -y (k values) and the basis V[0..k-1]:
   one multi-axpy on x without a preconditioner, else into T, then T2 = M^{-1} T and x += T2            */
PetscErrorCode KSPFusedRightUpdate(KSP ksp, PCMode mode, Vec w, PetscInt k, const PetscScalar *negy, const Vec *V, Vec x, Vec T, Vec T2);

/* After a cycle of k steps added its update to x (its: the iterations so far): *stop when the solve ends
   - a reason < 0; a converged estimate that the true residual (T = b - A x, T2 scratch) confirms or whose
   checks stagnate (KSPFusedTrueResidualStagnates()); k = 0 (KSP_DIVERGED_BREAKDOWN); max_it
   (KSP_DIVERGED_ITS with the estimate, as KSPGMRES: no true residual after the last cycle).  *replaced
   when the true residual *truenorm did not confirm a converged estimate: ksp->reason is reset, the
   replacement counted, and the next cycle restarts from the true residual                            */
PetscErrorCode KSPFusedCycleEnd(KSP ksp, PCMode mode, Vec w, Vec T, Vec T2, PetscInt k, PetscInt its, TrueResidualGuard *guard, SolveCounters *counters, PetscReal *truenorm, PetscBool *replaced, PetscBool *stop);

/* KSPGMRESSetRestart() and KSPGMRESGetRestart() of a fused GMRES whose data (a Solver) holds `restart` */
template <class Solver> PetscErrorCode KSPGMRESSetRestart_Fused(KSP ksp, PetscInt restart)
{
  Solver *g = static_cast<Solver *>(ksp->data);

  PetscFunctionBegin;
  PetscCheck(restart > 0, PetscObjectComm((PetscObject)ksp), PETSC_ERR_ARG_OUTOFRANGE, "Restart must be positive, got %" PetscInt_FMT, restart);
  if (restart != g->restart) {
    g->restart      = restart;
    ksp->setupstage = KSP_SETUP_NEW;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

template <class Solver> PetscErrorCode KSPGMRESGetRestart_Fused(KSP ksp, PetscInt *restart)
{
  PetscFunctionBegin;
  *restart = static_cast<Solver *>(ksp->data)->restart;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Views the parts every fused solver shows in -ksp_view */
PetscErrorCode KSPFusedViewCommon(KSP ksp, PetscViewer viewer, PCMode mode, const char *kernels, PetscInt reductions, PetscInt replacements);

/* Composes p on ksp under `name` (a PetscContainer that does not own it; PetscObjectCompose() with NULL
   removes it); KSPFusedQueryPointer() returns it, an error with the message `missing` when there is none */
PetscErrorCode KSPFusedComposePointer(KSP ksp, const char *name, void *p);
PetscErrorCode KSPFusedQueryPointer(KSP ksp, const char *name, const char *missing, void **p);

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

/* What every fused solver's destroy does: the Jacobi weights, the composed counter */
PetscErrorCode KSPFusedDestroyCommon(KSP ksp, Vec *w);

/* ... then the solver's data (a Solver, with its Jacobi weights w) and KSPDestroyDefault(): how every
   fused solver's destroy ends                                                                      */
template <class Solver> PetscErrorCode KSPFusedDestroyData(KSP ksp)
{
  Solver *s = static_cast<Solver *>(ksp->data);

  PetscFunctionBegin;
  PetscCall(KSPFusedDestroyCommon(ksp, &s->w));
  delete s;
  ksp->data = nullptr;
  PetscCall(KSPDestroyDefault(ksp));
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace fusedksp
