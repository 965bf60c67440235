/* What the three fused solvers share: preconditioner mode, norms, true-residual check */
#pragma once

#include "ops/fusedops.hpp"
#include "core/recurrences.hpp"
#include <petsc/private/kspimpl.h>
#include <initializer_list>
#include <vector>

namespace fusedksp
{

/* How the preconditioner enters the kernels */
enum class PCMode { NONE, JACOBI, GENERAL };
extern const char *const PCModeNames[];

/* Detects the PC mode; for JACOBI, w receives the weights (the Jacobi PC applied to a vector of
   ones, so every -pc_jacobi_* option is honoured).  scratch is an operator-sized work vector
   (overwritten); w is (re)created like it when missing or of another size.                   */
PetscErrorCode KSPFusedPCMode(KSP ksp, Vec scratch, PCMode *mode, Vec *w);

/* Whether the KSP's PC is a kernel of the backend (PCBackendKernel(): point-block Jacobi of a fused matrix) for this
   solve: fused vectors, real scalars, and no null space on the operator (whose removal after each application needs a
   reduction).  Such a PC is applied as a kernel (KSPFusedApplyPC()): the solvers run chunks and graphs with it as with
   Jacobi, while a general PC keeps k = 1                                                                        */
PetscErrorCode KSPFusedPCIsKernel(KSP ksp, PetscBool *yes);

/* Appends to the key of a chunk's record the backend arrays of the KSP's PC when it is such a kernel (nothing
   otherwise): a PCSetUp() after new matrix values may move them, and a graph must not replay the old ones   */
PetscErrorCode KSPFusedPCKernelKey(KSP ksp, std::vector<const void *> *key);

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

/* The entry of a solver's reduced values whose square root is the residual norm of ksp->normtype: the entry
   `preconditioned`, `unpreconditioned` or `natural` (-1: a norm the solver does not compute), -1 for KSP_NORM_NONE */
PetscInt KSPFusedNormDot(KSP ksp, PetscInt preconditioned, PetscInt unpreconditioned, PetscInt natural);

/* The residual norm sqrt|d[dot]| of the reduced values d (dot from KSPFusedNormDot()); 0 when dot is -1 */
PetscReal KSPFusedNormOf(const PetscScalar *d, PetscInt dot);

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

/* After a converged test with a recurrence residual: the true-residual check (KSPFusedTrueResidualConverged(), with its
   arguments).  *replace when the true residual *truenorm did not meet the tolerance and, with a guard (NULL: none), its
   checks do not stagnate (KSPFusedTrueResidualStagnates()): ksp->reason is reset and the replacement counted, and the
   solver goes on from the true residual                                                                              */
PetscErrorCode KSPFusedTrueResidualReplace(KSP ksp, PCMode mode, Vec w, PetscBool leftpc, Vec r, Vec z, TrueResidualGuard *guard, PetscReal *truenorm, PetscBool *replace);

/* Composes p on ksp under `name` (a PetscContainer that does not own it; p = NULL removes it);
   KSPFusedQueryPointer() returns it, an error with the message `missing` when there is none */
PetscErrorCode KSPFusedComposePointer(KSP ksp, const char *name, void *p);
PetscErrorCode KSPFusedQueryPointer(KSP ksp, const char *name, const char *missing, void **p);

/* A function composed on a KSP under a name (PetscObjectComposeFunction()) */
struct KSPFusedMethod {
  const char       *name;
  PetscErrorCodeFn *fn;
};

/* Composes the n methods on ksp, or with compose = PETSC_FALSE removes them */
PetscErrorCode KSPFusedComposeMethods(KSP ksp, PetscInt n, const KSPFusedMethod methods[], PetscBool compose);

/* The GMRES solvers (fusedsgmres, fusedcagmres): restart cycles; right preconditioning (fusedsgmres: left too) */

/* out = Op in = A M^{-1} in for the preconditioner of the given mode (Jacobi fused into the product);
   work receives M^{-1} in (or is scratch)                                                            */
PetscErrorCode KSPFusedRightOperator(KSP ksp, PCMode mode, Vec w, Mat A, Vec in, Vec out, Vec work);

/* r = b - A x (unpreconditioned) and rho = ||r||, its reduction counted in counters; with z (left
   preconditioning) z = M^{-1} r (KSPFusedPCApply() for the mode, w its Jacobi weights) and rho = ||z|| */
PetscErrorCode KSPFusedResidualNorm(KSP ksp, Mat A, Vec r, Vec z, PCMode mode, Vec w, SolveCounters *counters, PetscReal *rho);

/* The test of a restart cycle's start with its true residual norm rho: iteration 0 (monitors, history,
   test) or the restart after `its` iterations (the KSP's test and ksp->rnorm only); *stop when the solve
   ends there (a reason, max_it, or rho = 0)                                                            */
PetscErrorCode KSPFusedCycleTest(KSP ksp, PetscInt its, PetscReal rho, PetscBool *stop);

/* x += M^{-1} V y for the preconditioner of the given mode, from negy = -y (k values) and the basis V[0..k-1]:
   one multi-axpy on x without a preconditioner, else into T, then T2 = M^{-1} T and x += T2            */
PetscErrorCode KSPFusedRightUpdate(KSP ksp, PCMode mode, Vec w, PetscInt k, const PetscScalar *negy, const Vec *V, Vec x, Vec T, Vec T2);

/* After a cycle of k steps added its update to x (its: the iterations so far): *stop when the solve ends
   - a reason < 0; a converged estimate that the true residual (T = b - A x, T2 scratch; leftpc: its norm
   that of T2 = M^{-1} T for KSP_NORM_PRECONDITIONED) confirms or whose
   checks stagnate (KSPFusedTrueResidualStagnates()); k = 0 (KSP_DIVERGED_BREAKDOWN); max_it
   (KSP_DIVERGED_ITS with the estimate, as KSPGMRES: no true residual after the last cycle).  *replaced
   when the true residual *truenorm did not confirm a converged estimate (KSPFusedTrueResidualReplace()):
   the next cycle restarts from the true residual                                                       */
PetscErrorCode KSPFusedCycleEnd(KSP ksp, PCMode mode, Vec w, PetscBool leftpc, Vec T, Vec T2, PetscInt k, PetscInt its, TrueResidualGuard *guard, PetscReal *truenorm, PetscBool *replaced, PetscBool *stop);

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

/* Composes KSPGMRESSetRestart() and KSPGMRESGetRestart() of a fused GMRES whose data is a Solver (with compose =
   PETSC_FALSE removes them) */
template <class Solver> PetscErrorCode KSPFusedComposeGMRESRestart(KSP ksp, PetscBool compose)
{
  const KSPFusedMethod methods[] = {{"KSPGMRESSetRestart_C", (PetscErrorCodeFn *)KSPGMRESSetRestart_Fused<Solver>}, {"KSPGMRESGetRestart_C", (PetscErrorCodeFn *)KSPGMRESGetRestart_Fused<Solver>}};

  PetscFunctionBegin;
  PetscCall(KSPFusedComposeMethods(ksp, PETSC_STATIC_ARRAY_LENGTH(methods), methods, compose));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* -ksp_gmres_restart of a fused GMRES whose data is a Solver (KSPGMRESSetRestart()), in its options; help: the text */
template <class Solver> PetscErrorCode KSPFusedGMRESRestartOption(PetscOptionItems PetscOptionsObject, KSP ksp, const char *help)
{
  PetscInt  restart = static_cast<Solver *>(ksp->data)->restart;
  PetscBool flg;

  PetscFunctionBegin;
  PetscCall(PetscOptionsInt("-ksp_gmres_restart", help, "KSPGMRESSetRestart", restart, &restart, &flg));
  if (flg) PetscCall(KSPGMRESSetRestart(ksp, restart));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Views the parts every fused solver shows in -ksp_view, with the counts of its last solve */
PetscErrorCode KSPFusedViewCommon(KSP ksp, PetscViewer viewer, PCMode mode, const char *kernels);

/* As PETSc's KSPCheckDot()/KSPCheckNorm() in its solvers: a solve stopped by NaN or Inf after its preconditioner
   failed (PCGetFailedReason(): a zero pivot of a factorization, a singular block of point-block Jacobi) ends with
   KSP_DIVERGED_PC_FAILED, its solution flagged with VecFlag().  Collective (ksp->reason is the same on every rank). */
PetscErrorCode KSPFusedCheckPCFailed(KSP ksp);

/* ksp->ops->solve of a fused solver: Solve in a scope of batches of its own (OpsSolveScoped()), so that
   fused solves nest inside each other's preconditioners and operators and an error leaves no batch open */
template <PetscErrorCode (*Solve)(KSP)> PetscErrorCode KSPSolveScoped(KSP ksp)
{
  PetscFunctionBegin;
  PetscCall(OpsSolveScoped(ksp, Solve));
  PetscCall(KSPFusedCheckPCFailed(ksp));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The operations of a fused solver that KSPFusedCreate() sets in ksp->ops; NULL: none (setfromoptions, reset) or
   KSPBuildSolutionDefault() (buildsolution).  ksp->ops->buildresidual is KSPBuildResidualDefault() for every one. */
struct KSPFusedOps {
  PetscErrorCode (*setup)(KSP);
  PetscErrorCode (*solve)(KSP);
  PetscErrorCode (*destroy)(KSP);
  PetscErrorCode (*view)(KSP, PetscViewer);
  PetscErrorCode (*setfromoptions)(KSP, PetscOptionItems);
  PetscErrorCode (*reset)(KSP);
  PetscErrorCode (*buildsolution)(KSP, Vec, Vec *);
};

/* A norm type a fused solver supports, with the side of preconditioning it goes with */
struct KSPFusedNorm {
  KSPNormType type;
  PCSide      side;
};

/* What every fused solver's KSPCreate_ does with its data (ksp->data) and solve counters (composed on ksp for
   KSPFusedGetReductionCount(), removed by KSPFusedDestroyCommon()): sets ops, and the supported norms with PETSc's
   priorities - norms[0] the default (3), the others 2, and KSP_NORM_NONE (1) on every side they name              */
PetscErrorCode KSPFusedCreateCommon(KSP ksp, void *data, SolveCounters *counters, const KSPFusedOps &ops, std::initializer_list<KSPFusedNorm> norms);

/* KSPCreate_ of a fused solver: a new Solver (with its SolveCounters `counters`) as ksp->data, then KSPFusedCreateCommon();
 *s (unless NULL) receives it                                                                                          */
template <class Solver> PetscErrorCode KSPFusedCreate(KSP ksp, const KSPFusedOps &ops, std::initializer_list<KSPFusedNorm> norms, Solver **s = nullptr)
{
  Solver *data;

  PetscFunctionBegin;
  FusedKSPCallCXX(data = new Solver);
  PetscCall(KSPFusedCreateCommon(ksp, data, &data->counters, ops, norms));
  if (s) *s = data;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ksp->ops->setup of a fused solver that needs only its N work vectors (ksp->work) */
template <PetscInt N> PetscErrorCode KSPFusedSetUpWork(KSP ksp)
{
  PetscFunctionBegin;
  PetscCall(KSPSetWorkVecs(ksp, N));
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
