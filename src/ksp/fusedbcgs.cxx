/*
   KSPFUSEDBCGS: pipelined BiCGStab with kernel fusion (seed 000, Algorithm 4).

   The method is applied to the preconditioned operator Op = M^{-1} A (left, default) or A M^{-1}
   (right; then x is updated with M^{-1} p and M^{-1} s).  With beta_i = -<As_i, r*>/<Ap_i, r*>
   (which follows from <s_i, r*> = 0) beta is available together with omega, so the updates of
   x, r and p run in one pass, and the residual norm comes from
       ||r_{i+1}||^2 = <s,s> - 2 omega <As,s> + omega^2 <As,As>
   without another reduction.  One iteration:
     (1) Ap = Op p                 + partial <Ap, r*>                (first reduction: alpha)
     (2) s = r - alpha Ap          + partial <s,s>
     (3) As = Op s                 + partial <As,s>, <As,As>, <As,r*> (second reduction)
     (4) x += alpha p~ + omega s~; r = s - omega As; p = r + beta (p - omega Ap)
                                   + partial <r,r*>, <r,r> (travel with the next first reduction)
   where p~, s~ are p, s (left or no preconditioning) or M^{-1} p, M^{-1} s (right).  Jacobi is
   fused: Op p = w .* (A p) (left) or A (w .* p) (right) inside the SpMV kernel.  On one GPU the
   first reduction is re-summed on the device by kernel (2); with several processes it is an
   MPI_Allreduce, so an iteration makes two global reductions (the second packs four values).

   Breakdown (<Ap,r*> = 0, <r,r*> = 0 or omega = 0 with s != 0) stops with KSP_DIVERGED_BREAKDOWN.
   As for fusedcg, a converged recurrence residual is confirmed with the true residual, and replaced
   (restarting with p = r) when the true one does not meet the tolerance.
*/
#include "ksp/fusedcommon.hpp"

namespace fusedksp
{
namespace
{

struct KSP_FusedBCGS {
  Vec              w    = nullptr;
  PCMode           mode = PCMode::NONE;
  ReductionCounter reductions;
  PetscInt         replacements = 0;
};

enum { VEC_R, VEC_RSTAR, VEC_P, VEC_S, VEC_AP, VEC_AS, VEC_PT, VEC_ST, VEC_T, VEC_T2, NWORK };

/* out = Op in, with ndots dot products of out (in = the unpreconditioned input for DOT_INPUT);
   work receives M^{-1} in (right preconditioning) or is scratch                              */
PetscErrorCode BCGSOperator(KSP ksp, KSP_FusedBCGS *bc, Mat A, Vec in, Vec out, Vec work, Vec scratch, int ndots, const OpDot *specs, PetscScalar *dots)
{
  const PetscBool right = ksp->pc_side == PC_RIGHT ? PETSC_TRUE : PETSC_FALSE;

  PetscFunctionBegin;
  switch (bc->mode) {
  case PCMode::NONE:
    PetscCall(OpsApplyOperator(A, nullptr, nullptr, in, out, nullptr, ndots, specs, dots));
    break;
  case PCMode::JACOBI:
    if (right)
      PetscCall(OpsApplyOperator(A, nullptr, bc->w, in, out, work, ndots, specs, dots));
    else
      PetscCall(OpsApplyOperator(A, bc->w, nullptr, in, out, nullptr, ndots, specs, dots));
    break;
  case PCMode::GENERAL:
    if (right) {
      PetscCall(KSP_PCApply(ksp, in, work));
      PetscCall(OpsApplyOperator(A, nullptr, nullptr, work, out, nullptr, 0, nullptr, nullptr));
    } else {
      PetscCall(OpsApplyOperator(A, nullptr, nullptr, in, scratch, nullptr, 0, nullptr, nullptr));
      PetscCall(KSP_PCApply(ksp, scratch, out));
    }
    PetscCall(OpsDots(in, out, ndots, specs, dots));
    break;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* r = b - A x, preconditioned on the left when the side is left */
PetscErrorCode BCGSResidual(KSP ksp, KSP_FusedBCGS *bc, Mat A, Vec r, Vec scratch)
{
  PetscFunctionBegin;
  PetscCall(KSP_MatMult(ksp, A, ksp->vec_sol, scratch));
  PetscCall(VecAYPX(scratch, -1.0, ksp->vec_rhs));
  if (ksp->pc_side == PC_LEFT)
    PetscCall(KSPFusedPCApply(ksp, bc->mode, bc->w, scratch, r));
  else
    PetscCall(VecCopy(scratch, r));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPSetUp_FusedBCGS(KSP ksp)
{
  PetscFunctionBegin;
  PetscCall(KSPSetWorkVecs(ksp, NWORK));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPSolve_FusedBCGS(KSP ksp)
{
  KSP_FusedBCGS  *bc = static_cast<KSP_FusedBCGS *>(ksp->data);
  Vec            *V = ksp->work, X = ksp->vec_sol;
  Mat             A;
  const PetscBool right = ksp->pc_side == PC_RIGHT ? PETSC_TRUE : PETSC_FALSE;
  const OpDot     self  = {DotKind::DOT_SELF, nullptr};
  const OpDot     k1    = {DotKind::DOT_VECTOR, nullptr};
  PetscScalar     pend[2], red1[3], red2[4], alpha = 0, omega = 0, beta = 0, rrstar;
  PetscReal       rnorm, rnorm0, rnorm2 = 0;
  OpDot           spec_r[2]  = {{DotKind::DOT_VECTOR, nullptr}, self};
  OpDot           spec_ap    = k1;
  OpDot           spec_as[3] = {{DotKind::DOT_INPUT, nullptr}, self, {DotKind::DOT_VECTOR, nullptr}};
  PetscBool       pending    = PETSC_FALSE;
  Vec             pt = nullptr, st = nullptr, wr = nullptr;

  PetscFunctionBegin;
  PetscCall(KSPGetOperators(ksp, &A, NULL));
  PetscCall(KSPFusedPCMode(ksp, V[VEC_T], &bc->mode, &bc->w));
  const PetscBool defer = bc->mode == PCMode::GENERAL ? PETSC_FALSE : PETSC_TRUE;
  bc->reductions.count  = 0;
  bc->replacements      = 0;
  ksp->reason           = KSP_CONVERGED_ITERATING;
  spec_r[0].vec = spec_ap.vec = spec_as[2].vec = V[VEC_RSTAR];
  if (right && bc->mode != PCMode::NONE) {
    pt = V[VEC_PT];
    st = V[VEC_ST];
    if (bc->mode == PCMode::JACOBI) wr = bc->w;
  }

  if (ksp->guess_zero) PetscCall(VecSet(X, 0.0));
  PetscCall(BCGSResidual(ksp, bc, A, V[VEC_R], V[VEC_T]));
  PetscCall(VecCopy(V[VEC_R], V[VEC_RSTAR]));
  PetscCall(VecCopy(V[VEC_R], V[VEC_P]));
  PetscCall(OpsDots(nullptr, V[VEC_R], 2, spec_r, pend));
  PetscCall(OpsAllreduce(PetscObjectComm((PetscObject)ksp), pend, 2, &bc->reductions));
  rrstar = pend[0];
  rnorm0 = rnorm = ksp->normtype == KSP_NORM_NONE ? 0.0 : PetscSqrtReal(PetscAbsScalar(pend[1]));
  PetscCall(KSPFusedMonitorAndTest(ksp, 0, rnorm));

  for (PetscInt it = 1; !ksp->reason; ++it) {
    PetscInt nred1 = 1;
    if (it > ksp->max_it) {
      ksp->reason = KSP_DIVERGED_ITS;
      break;
    }
    /* (1) Ap = Op p, <Ap, r*>; with the pending <r,r*>, <r,r> of the previous update (same batch) */
    if (!OpsBatchIsOpen()) PetscCall(OpsBatchBegin(defer));
    PetscCall(BCGSOperator(ksp, bc, A, V[VEC_P], V[VEC_AP], pt ? pt : V[VEC_T], V[VEC_T2], 1, &spec_ap, red1));
    PetscCall(OpsBatchEnd());
    if (pending) {
      red1[1] = pend[0];
      red1[2] = pend[1];
      nred1   = 3;
    }
    PetscCall(OpsAllreduce(PetscObjectComm((PetscObject)ksp), red1, nred1, &bc->reductions));
    if (pending) rrstar = red1[1];
    pending = PETSC_FALSE;
    if (rrstar == 0.0) {
      ksp->reason = KSP_DIVERGED_BREAKDOWN;
      break;
    }
    if (KSPFusedStatusStops(ksp, BCGSAlpha(rrstar, red1[0], &alpha))) break;
    /* (2) s = r - alpha Ap, <s,s> */
    PetscCall(OpsBatchBegin(defer));
    PetscCall(OpsWAXPYDot(-alpha, V[VEC_R], V[VEC_AP], V[VEC_S], red2));
    /* (3) As = Op s, <As,s>, <As,As>, <As,r*>; one reduction of the four values */
    PetscCall(BCGSOperator(ksp, bc, A, V[VEC_S], V[VEC_AS], st ? st : V[VEC_T], V[VEC_T2], 3, spec_as, red2 + 1));
    PetscCall(OpsBatchEnd());
    PetscCall(OpsAllreduce(PetscObjectComm((PetscObject)ksp), red2, 4, &bc->reductions));
    if (KSPFusedStatusStops(ksp, BCGSOmegaBeta(red2[1], red2[2], red2[3], red1[0], red2[0], &omega, &beta, &rnorm2))) break;
    /* (4) x, r, p updates with <r,r*>, <r,r>: left pending in a batch that the next (1) completes */
    PetscCall(OpsBatchBegin(defer));
    PetscCall(OpsBCGSUpdate(alpha, omega, beta, wr, pt, st, X, V[VEC_R], V[VEC_P], V[VEC_S], V[VEC_AP], V[VEC_AS], V[VEC_RSTAR], pend));
    pending = PETSC_TRUE;
    rnorm   = ksp->normtype == KSP_NORM_NONE ? 0.0 : PetscSqrtReal(rnorm2);
    PetscCall(KSPFusedMonitorAndTest(ksp, it, rnorm));
    if (ksp->reason > 0) {
      PetscBool ok;
      PetscReal truenorm;
      PetscCall(KSPFusedTrueResidualConverged(ksp, bc->mode, bc->w, right ? PETSC_FALSE : PETSC_TRUE, V[VEC_T], V[VEC_T2], rnorm0, &truenorm, &ok));
      if (!ok) {
        PetscCall(PetscInfo(ksp, "Iteration %" PetscInt_FMT ": recurrence residual %g passed but true residual %g did not; replacing the residual\n", it, (double)rnorm, (double)truenorm));
        ksp->reason = KSP_CONVERGED_ITERATING;
        bc->replacements++;
        PetscCall(VecCopy(right ? V[VEC_T] : V[VEC_T2], V[VEC_R]));
        PetscCall(VecCopy(V[VEC_R], V[VEC_P]));
        PetscCall(OpsDots(nullptr, V[VEC_R], 2, spec_r, pend));
      }
    }
  }
  if (OpsBatchIsOpen()) PetscCall(OpsBatchEnd());
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPView_FusedBCGS(KSP ksp, PetscViewer viewer)
{
  KSP_FusedBCGS *bc = static_cast<KSP_FusedBCGS *>(ksp->data);

  PetscFunctionBegin;
  PetscCall(KSPFusedViewCommon(ksp, viewer, bc->mode, "4 per iteration (SpMV + <Ap,r*>, s update + <s,s>, SpMV + 3 dots, x/r/p update + 2 dots), 2 reductions (1 + 4 values)", bc->reductions.count, bc->replacements));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPDestroy_FusedBCGS(KSP ksp)
{
  KSP_FusedBCGS *bc = static_cast<KSP_FusedBCGS *>(ksp->data);

  PetscFunctionBegin;
  PetscCall(KSPFusedDestroyCommon(ksp, &bc->w));
  delete bc;
  ksp->data = nullptr;
  PetscCall(KSPDestroyDefault(ksp));
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace
} // namespace fusedksp

/*MC
   KSPFUSEDBCGS - "fusedbcgs" - Pipelined BiCGStab with kernel fusion (Rupp et al., ACM TOMS,
   Algorithm 4): four fused operations per iteration, beta = -<As,r*>/<Ap,r*>, and the residual norm
   from <s,s> - 2 omega <As,s> + omega^2 <As,As> without an extra reduction.

   Options Database Keys:
+  -ksp_type fusedbcgs - selects this solver
-  -ksp_pc_side <left,right> - left (default, preconditioned residual norm) or right (true residual norm)

   Level: beginner

   Notes:
   `PCNONE` and `PCJACOBI` are fused into the SpMV kernel; any other PC is applied with `PCApply()`
   twice per iteration, like `KSPBCGS`.  With several MPI processes an iteration makes two global
   reductions: alpha is needed before s can be formed.  Pipelined and classical BiCGStab round
   differently; their residual histories can differ noticeably on hard problems (the paper reports up
   to 41% after 30 iterations) without either being systematically worse.

.seealso: `KSPFUSEDCG`, `KSPFUSEDSGMRES`, `KSPBCGS`, `KSPPIPEBCGS`
M*/
PETSC_INTERN PetscErrorCode KSPCreate_FusedBCGS(KSP ksp)
{
  auto *bc = new fusedksp::KSP_FusedBCGS;

  PetscFunctionBegin;
  ksp->data = bc;
  PetscCall(KSPSetSupportedNorm(ksp, KSP_NORM_PRECONDITIONED, PC_LEFT, 3));
  PetscCall(KSPSetSupportedNorm(ksp, KSP_NORM_UNPRECONDITIONED, PC_RIGHT, 2));
  PetscCall(KSPSetSupportedNorm(ksp, KSP_NORM_NONE, PC_LEFT, 1));
  PetscCall(KSPSetSupportedNorm(ksp, KSP_NORM_NONE, PC_RIGHT, 1));
  ksp->ops->setup         = fusedksp::KSPSetUp_FusedBCGS;
  ksp->ops->solve         = fusedksp::KSPSolve_FusedBCGS;
  ksp->ops->destroy       = fusedksp::KSPDestroy_FusedBCGS;
  ksp->ops->view          = fusedksp::KSPView_FusedBCGS;
  ksp->ops->buildsolution = KSPBuildSolutionDefault;
  ksp->ops->buildresidual = KSPBuildResidualDefault;
  PetscCall(fusedksp::KSPFusedSetReductionCounter(ksp, &bc->reductions));
  PetscFunctionReturn(PETSC_SUCCESS);
}
