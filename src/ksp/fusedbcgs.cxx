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
   fused: Op p = w .* (A p) (left) or A (w .* p) (right) inside the SpMV kernel.

   One reduction per iteration.  alpha_{i+1} = <r_{i+1}, r*> / <Ap_{i+1}, r*> would need a reduction
   between kernels (1) and (2).  With rhat = Op^T r* (computed once per solve),
       <Ap_{i+1}, r*> = <p_{i+1}, rhat> = <r_{i+1}, rhat> + beta (<p_i, rhat> - omega <Ap_i, rhat>),
       <r_{i+1}, rhat> = <r_i, rhat> - alpha <Ap_i, rhat> - omega <As_i, rhat>,
       <r_{i+1}, r*>   = <r_i, r*>   - alpha <Ap_i, r*>   - omega <As_i, r*>,
   where <p_i, rhat> = <Ap_i, r*>, and <Ap_i, rhat>, <As_i, rhat> are two more fused dot products.
   <Ap_i, r*>, <r_i, r*> and <r_i, rhat> are computed directly every iteration (the last two by
   kernel (4), completed with the next reduction), so each prediction spans one step and rounding
   does not accumulate.  All dot products of an iteration then travel in ONE reduction (up to 10
   values), and on one GPU in one device->host copy: 4 kernels + 1 transfer.  Without a transpose
   of the operator or the preconditioner (a MATSHELL without MatMultTranspose, a PC without
   PCApplyTranspose) alpha is reduced on its own: two reductions per iteration.

   Breakdown (<Ap,r*> = 0, <r,r*> = 0 or omega = 0 with s != 0): r* has become orthogonal to the
   residuals (a Lanczos breakdown: on hard problems, e.g. 1138_bus, <r,r*> computes to exactly 0 with
   ||r|| ||r*|| of order 1 while the residual is far from the tolerance, in classical BiCGStab too).
   The solve restarts from the true residual with r* = p = r (a new shadow space) as long as each
   restart starts from a smaller true residual than the one before; otherwise it stops with
   KSP_DIVERGED_BREAKDOWN.
   As for fusedcg, a converged recurrence residual is confirmed with the true residual, and replaced
   (restarting with p = r) when the true one does not meet the tolerance.
*/
#include "ksp/fusedchunk.hpp"

namespace fusedksp
{
namespace
{

struct KSP_FusedBCGS {
  Vec           w    = nullptr;
  PCMode        mode = PCMode::NONE;
  SolveCounters counters;
  PetscBool     one_reduction        = PETSC_FALSE;         /* last solve: alpha from the rhat recurrences */
  PetscReal     restart_norm         = 0;                   /* the true residual of the last breakdown restart (0: none yet) */
  PetscBool3    one_reduction_option = PETSC_BOOL3_UNKNOWN; /* -ksp_fusedbcgs_one_reduction; default: on with > 1 process */
  Chunker       chunk;
};

enum { VEC_R, VEC_RSTAR, VEC_P, VEC_S, VEC_AP, VEC_AS, VEC_PT, VEC_ST, VEC_T, VEC_T2, VEC_RHAT, NWORK };

/* out = Op in, with ndots dot products of out (in = the unpreconditioned input for DOT_INPUT) into
   dots, or with slot != NULL into slot in backend memory (OpsReduceInto(), stop flag stop);
   work receives M^{-1} in (right preconditioning) or is scratch                              */
PetscErrorCode BCGSOperator(KSP ksp, KSP_FusedBCGS *bc, Mat A, Vec in, Vec out, Vec work, Vec scratch, int ndots, const OpDot *specs, PetscScalar *dots, PetscScalar *slot = nullptr, const PetscInt *stop = nullptr)
{
  const PetscBool right = ksp->pc_side == PC_RIGHT ? PETSC_TRUE : PETSC_FALSE;

  PetscFunctionBegin;
  if (slot && bc->mode != PCMode::GENERAL) PetscCall(OpsReduceInto(slot, stop));
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
      PetscCall(KSPFusedApplyPC(ksp, in, work));
      PetscCall(OpsApplyOperator(A, nullptr, nullptr, work, out, nullptr, 0, nullptr, nullptr));
    } else {
      PetscCall(OpsApplyOperator(A, nullptr, nullptr, in, scratch, nullptr, 0, nullptr, nullptr));
      PetscCall(KSPFusedApplyPC(ksp, scratch, out));
    }
    if (slot) PetscCall(OpsReduceInto(slot, stop));
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

/* rhat = Op^T rstar (Op = M^{-1} A left, A M^{-1} right); *ok = PETSC_FALSE, and nothing computed,
   when the matrix or the preconditioner has no transpose (then each iteration needs 2 reductions) */
PetscErrorCode BCGSShadowTranspose(KSP ksp, KSP_FusedBCGS *bc, Mat A, Vec rstar, Vec rhat, Vec scratch, PetscBool *ok)
{
  PC        pc;
  PetscBool has;

  PetscFunctionBegin;
  *ok = PETSC_FALSE;
  PetscCall(MatHasOperation(A, MATOP_MULT_TRANSPOSE, &has));
  if (!has) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(KSPGetPC(ksp, &pc));
  if (bc->mode == PCMode::GENERAL) {
    PetscCall(KSPFusedPCHasTranspose(pc, &has));
    if (!has) PetscFunctionReturn(PETSC_SUCCESS);
  }
  const Vec t = ksp->pc_side == PC_RIGHT ? scratch : rstar;
  if (ksp->pc_side == PC_RIGHT) PetscCall(MatMultTranspose(A, rstar, scratch));
  switch (bc->mode) {
  case PCMode::NONE:
    PetscCall(VecCopy(t, ksp->pc_side == PC_RIGHT ? rhat : scratch));
    break;
  case PCMode::JACOBI:
    PetscCall(VecPointwiseMult(ksp->pc_side == PC_RIGHT ? rhat : scratch, bc->w, t));
    break;
  case PCMode::GENERAL:
    PetscCall(PCApplyTranspose(pc, t, ksp->pc_side == PC_RIGHT ? rhat : scratch));
    break;
  }
  if (ksp->pc_side != PC_RIGHT) PetscCall(MatMultTranspose(A, scratch, rhat));
  *ok = PETSC_TRUE;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* One chunk of BiCGStab iterations with device-resident scalars (see fusedchunk.hpp); slots as BCGSChunkSlot */
struct BCGSChunk {
  KSP            ksp;
  KSP_FusedBCGS *bc;
  Mat            A;
  Vec           *V, X, B, wr, pt, st; /* B: the right-hand side when the chunk computes the start, else NULL */
  PetscInt       k;
};

PetscErrorCode BCGSChunkBody(void *ctx)
{
  BCGSChunk    *b     = static_cast<BCGSChunk *>(ctx);
  Chunker      *c     = &b->bc->chunk;
  ChunkControl *ctl   = ChunkDeviceControl(c);
  Vec          *V     = b->V;
  const OpDot   ap    = {DotKind::DOT_VECTOR, V[VEC_RSTAR]};
  const OpDot   as[3] = {{DotKind::DOT_INPUT, nullptr}, {DotKind::DOT_SELF, nullptr}, {DotKind::DOT_VECTOR, V[VEC_RSTAR]}};

  PetscFunctionBegin;
  if (b->bc->mode != PCMode::GENERAL) {
    const Vec wl = b->bc->mode == PCMode::JACOBI && b->ksp->pc_side != PC_RIGHT ? b->bc->w : nullptr;
    PetscCall(OpsBCGSChunk(b->A, b->k, ChunkDeviceSlot(c, 0), ctl, wl, b->wr, b->B, b->X, V[VEC_R], V[VEC_P], V[VEC_S], V[VEC_AP], V[VEC_AS], V[VEC_RSTAR], ChunkFormOf(c)));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  for (PetscInt j = 1; j <= b->k; ++j) {
    PetscScalar *prev = ChunkDeviceSlot(c, j - 1), *cur = ChunkDeviceSlot(c, j);
    PetscCall(BCGSOperator(b->ksp, b->bc, b->A, V[VEC_P], V[VEC_AP], b->pt ? b->pt : V[VEC_T], V[VEC_T2], 1, &ap, nullptr, cur + BCGS_APR, &ctl->stopped));
    PetscCall(OpsReduceInto(cur + BCGS_SS, &ctl->stopped));
    PetscCall(OpsWAXPYDotChained(prev, cur, ctl, j, V[VEC_R], V[VEC_AP], V[VEC_S]));
    PetscCall(BCGSOperator(b->ksp, b->bc, b->A, V[VEC_S], V[VEC_AS], b->st ? b->st : V[VEC_T], V[VEC_T2], 3, as, nullptr, cur + BCGS_ASS, &ctl->stopped));
    PetscCall(OpsReduceInto(cur + BCGS_RRSTAR, &ctl->stopped));
    PetscCall(OpsBCGSUpdateChained(prev, cur, ctl, j, b->wr, b->X, V[VEC_R], V[VEC_P], V[VEC_S], V[VEC_AP], V[VEC_AS], V[VEC_RSTAR]));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* KSPFusedStatusStops() for the BiCGStab coefficients of iteration it, and with -info the values that
   stopped them (which of <r,r*>, <Ap,r*>, <s,s>, <As,s>, <As,As> vanished or is not finite)         */
PetscErrorCode BCGSStatusStops(KSP ksp, PetscInt it, RecurrenceStatus status, PetscScalar rrstar, PetscScalar Apr, PetscScalar ss, PetscScalar Ass, PetscScalar AsAs, PetscBool *stops)
{
  PetscFunctionBegin;
  *stops = KSPFusedStatusStops(ksp, status);
  if (*stops)
    PetscCall(PetscInfo(ksp, "Iteration %" PetscInt_FMT ": %s with <r,r*> %g, <Ap,r*> %g, <s,s> %g, <As,s> %g, <As,As> %g\n", it, KSPConvergedReasons[ksp->reason], (double)PetscRealPart(rrstar), (double)PetscRealPart(Apr), (double)PetscRealPart(ss),
                        (double)PetscRealPart(Ass), (double)PetscRealPart(AsAs)));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* After a converged test: the true residual; when it fails, r and p restart from it and start[] gets
   the new <r,r*>, <r,r> (*restarted = PETSC_TRUE, ksp->reason reset)                              */
PetscErrorCode BCGSCheckTrueResidual(KSP ksp, KSP_FusedBCGS *bc, PetscInt it, PetscReal rnorm, int nr, const OpDot *spec_r, PetscScalar *start, PetscBool *restarted)
{
  Vec       *V     = ksp->work;
  const bool right = ksp->pc_side == PC_RIGHT;
  PetscReal  truenorm;

  PetscFunctionBegin;
  /* no stagnation guard: the recurrence norm <s,s> - 2 omega <As,s> + omega^2 <As,As> cancels near the tolerance,
     so repeated failed checks need not mean stagnation */
  PetscCall(KSPFusedTrueResidualReplace(ksp, bc->mode, bc->w, right ? PETSC_FALSE : PETSC_TRUE, V[VEC_T], V[VEC_T2], NULL, &truenorm, restarted));
  if (*restarted) {
    PetscCall(PetscInfo(ksp, "Iteration %" PetscInt_FMT ": recurrence residual %g passed but true residual %g did not; replacing the residual\n", it, (double)rnorm, (double)truenorm));
    PetscCall(VecCopy(right ? V[VEC_T] : V[VEC_T2], V[VEC_R]));
    PetscCall(VecCopy(V[VEC_R], V[VEC_P]));
    PetscCall(OpsDots(nullptr, V[VEC_R], nr, spec_r, start));
    PetscCall(OpsAllreduce(PetscObjectComm((PetscObject)ksp), start, nr, &bc->counters));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* After a breakdown (ksp->reason KSP_DIVERGED_BREAKDOWN): the restart from the true residual with r* = p = r
   (and rhat = Op^T r*) when it is smaller than at the last restart; start[] gets <r,r*>, <r,r> (, <r,rhat>),
   ksp->reason is reset and the restart counted as a residual replacement (*restarted = PETSC_TRUE)          */
PetscErrorCode BCGSBreakdownRestart(KSP ksp, KSP_FusedBCGS *bc, PetscInt it, int nr, const OpDot *spec_r, Vec rhat, PetscScalar *start, PetscBool *restarted)
{
  Vec      *V = ksp->work;
  Mat       A;
  PetscReal truenorm;

  PetscFunctionBegin;
  *restarted = PETSC_FALSE;
  if (ksp->reason != KSP_DIVERGED_BREAKDOWN) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(KSPGetOperators(ksp, &A, NULL));
  PetscCall(BCGSResidual(ksp, bc, A, V[VEC_R], V[VEC_T]));
  PetscCall(VecNorm(V[VEC_R], NORM_2, &truenorm));
  if (bc->restart_norm > 0 && !(truenorm < bc->restart_norm)) {
    PetscCall(PetscInfo(ksp, "Iteration %" PetscInt_FMT ": breakdown again with the true residual %g not below the last restart's %g: stopping\n", it, (double)truenorm, (double)bc->restart_norm));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(PetscInfo(ksp, "Iteration %" PetscInt_FMT ": breakdown; restarting from the true residual %g with r* = r\n", it, (double)truenorm));
  bc->restart_norm = truenorm;
  PetscCall(VecCopy(V[VEC_R], V[VEC_RSTAR]));
  PetscCall(VecCopy(V[VEC_R], V[VEC_P]));
  if (rhat) {
    PetscBool ok;
    PetscCall(BCGSShadowTranspose(ksp, bc, A, V[VEC_RSTAR], rhat, V[VEC_T], &ok));
    PetscCheck(ok, PETSC_COMM_SELF, PETSC_ERR_PLIB, "The transpose the solve started with is gone");
  }
  PetscCall(OpsDots(nullptr, V[VEC_R], nr, spec_r, start));
  PetscCall(OpsAllreduce(PetscObjectComm((PetscObject)ksp), start, nr, &bc->counters));
  bc->counters.replacements++;
  ksp->reason = KSP_CONVERGED_ITERATING;
  *restarted  = PETSC_TRUE;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* What BCGSSolveChunked()'s callbacks (KSPFusedChunkSolve()) share: pend, <r,r*> and <r,r> of the start
   or a restart; the vectors of right preconditioning (BCGSChunk); key: the operands of the chunks' records */
struct BCGSChunked {
  KSP                       ksp;
  KSP_FusedBCGS            *bc;
  Mat                       A;
  Vec                       wr, pt, st;
  const OpDot              *spec_r;
  PetscScalar              *pend;
  std::vector<const void *> key;
};

/* Runs a chunk of k iterations from iteration it */
PetscErrorCode BCGSChunkRun(void *ctx, PetscInt it, PetscInt k, PetscBool start, const PetscScalar *entering, PetscInt *performed)
{
  BCGSChunked              *r    = static_cast<BCGSChunked *>(ctx);
  KSP                       ksp  = r->ksp;
  Chunker                  *c    = &r->bc->chunk;
  Vec                      *V    = ksp->work;
  BCGSChunk                 body = {ksp, r->bc, r->A, V, ksp->vec_sol, start ? ksp->vec_rhs : nullptr, r->wr, r->pt, r->st, k};
  std::vector<const void *> chunk_key;

  PetscFunctionBegin;
  FusedKSPCallCXX(chunk_key = r->key);
  if (start) PetscCall(OpsChunkKey(r->A, {ksp->vec_rhs}, &chunk_key)); /* the record that computes the start reads b */
  PetscCall(KSPFusedChunkStart(ksp, c, it, ksp->normtype == KSP_NORM_NONE ? -1 : 0, start ? nullptr : entering));
  PetscCall(KSPFusedChunkRun(c, k, PETSC_TRUE, chunk_key, BCGSChunkBody, &body));
  PetscCall(OpsMarkWritten({ksp->vec_sol, V[VEC_R], V[VEC_RSTAR], V[VEC_P], V[VEC_S], V[VEC_AP], V[VEC_AS]}));
  *performed = ChunkPerformed(c, k);
  r->bc->counters.reductions += 2 * *performed;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Iteration 0 from the start the chunk computed */
PetscErrorCode BCGSReplayStart(void *ctx, const PetscScalar *slot0, PetscScalar *, PetscBool *stop)
{
  BCGSChunked *r = static_cast<BCGSChunked *>(ctx);

  PetscFunctionBegin;
  r->bc->counters.reductions++;
  r->pend[0] = slot0[BCGS_RRSTAR];
  r->pend[1] = slot0[BCGS_RR];
  PetscCall(KSPFusedMonitorAndTest(r->ksp, 0, r->ksp->normtype == KSP_NORM_NONE ? 0.0 : PetscSqrtReal(PetscAbsScalar(r->pend[1]))));
  *stop = r->ksp->reason ? PETSC_TRUE : PETSC_FALSE;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode BCGSReplayIteration(void *ctx, PetscInt j, PetscInt it, PetscInt performed, const PetscScalar *prev, const PetscScalar *cur, PetscReal *rnorm, PetscBool *stop)
{
  BCGSChunked *r   = static_cast<BCGSChunked *>(ctx);
  KSP          ksp = r->ksp;
  PetscScalar  alpha, omega, beta;
  PetscReal    rnorm2 = 0;
  PetscBool    stops;

  PetscFunctionBegin;
  *stop = PETSC_TRUE;
  PetscCall(BCGSStatusStops(ksp, it, BCGSAlpha(prev[BCGS_RRSTAR], cur[BCGS_APR], &alpha), prev[BCGS_RRSTAR], cur[BCGS_APR], 0, 0, 0, &stops));
  if (stops) PetscFunctionReturn(PETSC_SUCCESS);
  if (j > performed && ChunkHostControl(&r->bc->chunk)->stage == 0) PetscFunctionReturn(PETSC_SUCCESS); /* the kernels stopped before s: go on from here */
  PetscCall(BCGSStatusStops(ksp, it, BCGSOmegaBeta(cur[BCGS_ASS], cur[BCGS_ASAS], cur[BCGS_ASR], cur[BCGS_APR], cur[BCGS_SS], &omega, &beta, &rnorm2), prev[BCGS_RRSTAR], cur[BCGS_APR], cur[BCGS_SS], cur[BCGS_ASS], cur[BCGS_ASAS], &stops));
  if (stops) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCheck(j <= performed, PETSC_COMM_SELF, PETSC_ERR_PLIB, "The kernels stopped iteration %" PetscInt_FMT " at its update, the host found no reason", it);
  *rnorm = ksp->normtype == KSP_NORM_NONE ? 0.0 : PetscSqrtReal(rnorm2);
  *stop  = PETSC_FALSE;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode BCGSReplayConverged(void *ctx, PetscInt it, PetscReal rnorm, PetscScalar *entering, PetscBool *restarted)
{
  BCGSChunked *r = static_cast<BCGSChunked *>(ctx);

  PetscFunctionBegin;
  PetscCall(BCGSCheckTrueResidual(r->ksp, r->bc, it, rnorm, 2, r->spec_r, r->pend, restarted));
  if (*restarted) {
    entering[BCGS_RRSTAR] = r->pend[0];
    entering[BCGS_RR]     = r->pend[1];
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   BCGSSolveChunked - the iterations, k at a time (two-reduction form: alpha, omega and beta are
   computed on the backend, so no transposed operator is needed); pend holds <r_0,r*>, <r_0,r_0>, or with `start` the first chunk computes the start itself (r* = r_0, PCNONE
   or PCJACOBI, KSPFusedChunkMayStart()) and the host replays its iteration 0 first.  The host
   replays each chunk's iterations from the copied slots.
*/
PetscErrorCode BCGSSolveChunked(KSP ksp, KSP_FusedBCGS *bc, Mat A, Vec wr, Vec pt, Vec st, const OpDot *spec_r, PetscScalar *pend, PetscBool start)
{
  const ChunkReplayOps ops = {BCGSChunkRun, BCGSReplayStart, BCGSReplayIteration, BCGSReplayConverged, PETSC_TRUE};
  Chunker             *c   = &bc->chunk;
  Vec                 *V   = ksp->work;
  BCGSChunked          chunked{ksp, bc, A, wr, pt, st, spec_r, pend, {}};
  PetscScalar          entering[BCGS_NSLOT] = {0};

  PetscFunctionBegin;
  PetscCall(KSPFusedChunkReserve(c, BCGS_NSLOT, c->k));
  PetscCall(OpsChunkKey(A, {ksp->vec_sol, V[VEC_R], V[VEC_RSTAR], V[VEC_P], V[VEC_S], V[VEC_AP], V[VEC_AS], V[VEC_T], V[VEC_T2], wr}, &chunked.key));
  PetscCall(KSPFusedPCKernelKey(ksp, &chunked.key));
  FusedKSPCallCXX(chunked.key.push_back(reinterpret_cast<const void *>((uintptr_t)bc->mode)); chunked.key.push_back(reinterpret_cast<const void *>((uintptr_t)ksp->pc_side)));
  c->nograph            = nullptr;
  entering[BCGS_RRSTAR] = pend[0];
  entering[BCGS_RR]     = pend[1];
  for (PetscInt it = 0;;) {
    PetscBool restarted;
    PetscCall(KSPFusedChunkSolve(ksp, c, it, start, ops, &chunked, entering));
    PetscCall(BCGSBreakdownRestart(ksp, bc, ksp->its, 2, spec_r, nullptr, pend, &restarted));
    if (!restarted) break;
    it                    = ksp->its;
    start                 = PETSC_FALSE;
    entering[BCGS_RRSTAR] = pend[0];
    entering[BCGS_RR]     = pend[1];
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPSolve_FusedBCGS(KSP ksp)
{
  KSP_FusedBCGS  *bc = static_cast<KSP_FusedBCGS *>(ksp->data);
  Vec            *V = ksp->work, X = ksp->vec_sol, rhat = nullptr;
  Mat             A;
  const PetscBool right = ksp->pc_side == PC_RIGHT ? PETSC_TRUE : PETSC_FALSE;
  const OpDot     self = {DotKind::DOT_SELF, nullptr}, input = {DotKind::DOT_INPUT, nullptr};
  PetscScalar     pend[3], red[10], alpha = 0, omega = 0, beta = 0, rrstar = 0, sigma = 0, rhat_r = 0;
  PetscReal       rnorm, rnorm2 = 0;
  PetscBool       pending = PETSC_FALSE, one, stops;
  Vec             pt = nullptr, st = nullptr, wr = nullptr;
  MPI_Comm        comm = PetscObjectComm((PetscObject)ksp);

  PetscFunctionBegin;
  PetscCall(KSPGetOperators(ksp, &A, NULL));
  PetscCall(KSPFusedPCMode(ksp, V[VEC_T], &bc->mode, &bc->w));
  PetscBool pckernel;
  PetscCall(KSPFusedPCIsKernel(ksp, &pckernel));
  /* a general PC applied through PCApply(): not recordable, maybe communicating or expensive */
  const PetscBool hostpc = bc->mode == PCMode::GENERAL && !pckernel ? PETSC_TRUE : PETSC_FALSE;
  const PetscBool defer  = hostpc ? PETSC_FALSE : PETSC_TRUE;
  bc->counters           = SolveCounters();
  bc->restart_norm       = 0;
  ksp->reason            = KSP_CONVERGED_ITERATING;
  if (right && bc->mode != PCMode::NONE) {
    pt = V[VEC_PT];
    st = V[VEC_ST];
    if (bc->mode == PCMode::JACOBI) wr = bc->w;
  }

  {
    const char *unsupported;
    PetscCall(KSPFusedChunkOperands(&bc->chunk, A, {X, ksp->vec_rhs, V[VEC_R], V[VEC_RSTAR], V[VEC_P], V[VEC_S], V[VEC_AP], V[VEC_AS], V[VEC_T], V[VEC_T2], bc->w}, &unsupported));
    if (!unsupported && hostpc) unsupported = "a general PC runs with k = 1";
    if (!unsupported && bc->mode == PCMode::GENERAL && right) unsupported = "a general PC on the right runs with k = 1";
    if (!unsupported && bc->mode == PCMode::GENERAL && bc->chunk.parallel) unsupported = "a general PC with several processes runs with k = 1";
    bc->chunk.whole = bc->mode == PCMode::GENERAL ? PETSC_FALSE : PETSC_TRUE; /* whole chunks to the backend (a persistent kernel) */
    PetscCall(KSPFusedChunkInterval(ksp, &bc->chunk, unsupported));
  }
  if (bc->chunk.k > 1 && bc->mode != PCMode::GENERAL && KSPFusedChunkMayStart(ksp, &bc->chunk, PETSC_FALSE)) { /* the first chunk computes the start: no host round trip before it */
    const OpDot spec_r[2] = {{DotKind::DOT_VECTOR, V[VEC_RSTAR]}, self};
    bc->one_reduction     = PETSC_FALSE;
    PetscCall(BCGSSolveChunked(ksp, bc, A, wr, pt, st, spec_r, pend, PETSC_TRUE));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  if (ksp->guess_zero) PetscCall(VecSet(X, 0.0));
  PetscCall(BCGSResidual(ksp, bc, A, V[VEC_R], V[VEC_T]));
  PetscCall(VecCopy(V[VEC_R], V[VEC_RSTAR]));
  PetscCall(VecCopy(V[VEC_R], V[VEC_P]));
  {
    PetscMPIInt size;
    PetscCallMPI(MPI_Comm_size(comm, &size));
    one = bc->one_reduction_option == PETSC_BOOL3_UNKNOWN ? (size > 1 ? PETSC_TRUE : PETSC_FALSE) : (bc->one_reduction_option == PETSC_BOOL3_TRUE ? PETSC_TRUE : PETSC_FALSE);
  }
  if (one) PetscCall(BCGSShadowTranspose(ksp, bc, A, V[VEC_RSTAR], V[VEC_RHAT], V[VEC_T], &one));
  if (one) rhat = V[VEC_RHAT];
  bc->one_reduction = one;
  /* dot products of an iteration (r* and rhat fixed for the solve) */
  const OpDot spec_r[3]  = {{DotKind::DOT_VECTOR, V[VEC_RSTAR]}, self, {DotKind::DOT_VECTOR, rhat}};
  const OpDot spec_ap[2] = {{DotKind::DOT_VECTOR, V[VEC_RSTAR]}, {DotKind::DOT_VECTOR, rhat}};
  const OpDot spec_as[4] = {input, self, {DotKind::DOT_VECTOR, V[VEC_RSTAR]}, {DotKind::DOT_VECTOR, rhat}};
  const int   nr = one ? 3 : 2, nap = one ? 2 : 1, nas = one ? 4 : 3;

  PetscCall(OpsDots(nullptr, V[VEC_R], nr, spec_r, pend));
  PetscCall(OpsAllreduce(comm, pend, nr, &bc->counters));
  rrstar = pend[0];
  sigma = rhat_r = one ? pend[2] : 0; /* <A p_0, r*> = <r_0, rhat> */
  rnorm          = ksp->normtype == KSP_NORM_NONE ? 0.0 : PetscSqrtReal(PetscAbsScalar(pend[1]));
  PetscCall(KSPFusedMonitorAndTest(ksp, 0, rnorm));
  if (ksp->reason) PetscFunctionReturn(PETSC_SUCCESS);
  if (bc->chunk.k > 1) {
    bc->one_reduction = PETSC_FALSE;
    PetscCall(BCGSSolveChunked(ksp, bc, A, wr, pt, st, spec_r, pend, PETSC_FALSE));
    PetscFunctionReturn(PETSC_SUCCESS);
  }

  /* the iterations until the solve stops, and again from a restart after a breakdown (BCGSBreakdownRestart()) */
  PetscInt it = 1;
  for (PetscBool restarted = PETSC_TRUE; restarted;) {
    for (; !ksp->reason; ++it) {
      PetscInt n;
      if (it > ksp->max_it) {
        ksp->reason = KSP_DIVERGED_ITS;
        break;
      }
      /* (1) Ap = Op p with <Ap, r*> (and <Ap, rhat>), in a batch with the previous update's dot products */
      if (!OpsBatchIsOpen()) PetscCall(OpsBatchBegin(defer));
      if (one) {
        /* alpha from the recurrences closed by the previous reduction: no reduction before s */
        PetscCall(BCGSStatusStops(ksp, it, BCGSAlpha(rrstar, sigma, &alpha), rrstar, sigma, 0, 0, 0, &stops));
        if (stops) break;
        PetscCall(BCGSOperator(ksp, bc, A, V[VEC_P], V[VEC_AP], pt ? pt : V[VEC_T], V[VEC_T2], nap, spec_ap, red));
      } else {
        PetscCall(BCGSOperator(ksp, bc, A, V[VEC_P], V[VEC_AP], pt ? pt : V[VEC_T], V[VEC_T2], nap, spec_ap, red));
        PetscCall(OpsBatchEnd());
        n = 1;
        if (pending) {
          red[n++] = pend[0];
          red[n++] = pend[1];
        }
        PetscCall(OpsAllreduce(comm, red, n, &bc->counters));
        if (pending) rrstar = red[1];
        pending = PETSC_FALSE;
        PetscCall(BCGSStatusStops(ksp, it, BCGSAlpha(rrstar, red[0], &alpha), rrstar, red[0], 0, 0, 0, &stops));
        if (stops) break;
        PetscCall(OpsBatchBegin(defer));
      }
      /* (2) s = r - alpha Ap, <s,s>;  (3) As = Op s, <As,s>, <As,As>, <As,r*> (, <As,rhat>) */
      PetscScalar *r2 = one ? red + 2 : red + 1;
      PetscCall(OpsWAXPYDot(-alpha, V[VEC_R], V[VEC_AP], V[VEC_S], r2));
      PetscCall(BCGSOperator(ksp, bc, A, V[VEC_S], V[VEC_AS], st ? st : V[VEC_T], V[VEC_T2], nas, spec_as, r2 + 1));
      PetscCall(OpsBatchEnd());
      n = one ? 7 : 5;
      if (one && pending) {
        for (int k = 0; k < 3; ++k) red[n++] = pend[k];
      }
      PetscCall(OpsAllreduce(comm, one ? red : red + 1, one ? n : 4, &bc->counters));
      const PetscScalar Apr = red[0], ss = r2[0], Ass = r2[1], AsAs = r2[2], Asr = r2[3];
      PetscCall(BCGSStatusStops(ksp, it, BCGSOmegaBeta(Ass, AsAs, Asr, Apr, ss, &omega, &beta, &rnorm2), rrstar, Apr, ss, Ass, AsAs, &stops));
      if (stops) break;
      if (one) {
        /* <r_i, r*> and <r_i, rhat> exactly (from the update) when available, then one step of
           r_{i+1} = s - omega As, p_{i+1} = r_{i+1} + beta (p - omega Ap) for the next alpha */
        const PetscScalar rrs = pending ? red[7] : rrstar, rh = pending ? red[9] : rhat_r;
        rrstar  = rrs - alpha * Apr - omega * Asr;
        rhat_r  = rh - alpha * red[1] - omega * r2[4];
        sigma   = rhat_r + beta * (Apr - omega * red[1]);
        pending = PETSC_FALSE;
      }
      /* (4) x, r, p updates with <r,r*>, <r,r> (, <r,rhat>): pending in a batch that the next iteration completes */
      PetscCall(OpsBatchBegin(defer));
      PetscCall(OpsBCGSUpdate(alpha, omega, beta, wr, pt, st, X, V[VEC_R], V[VEC_P], V[VEC_S], V[VEC_AP], V[VEC_AS], V[VEC_RSTAR], rhat, pend));
      pending = PETSC_TRUE;
      rnorm   = ksp->normtype == KSP_NORM_NONE ? 0.0 : PetscSqrtReal(rnorm2);
      PetscCall(KSPFusedMonitorAndTest(ksp, it, rnorm));
      if (ksp->reason > 0) {
        PetscBool restarted;
        PetscCall(OpsBatchEnd());
        PetscCall(BCGSCheckTrueResidual(ksp, bc, it, rnorm, nr, spec_r, pend, &restarted));
        if (restarted) {
          rrstar = pend[0];
          sigma = rhat_r = one ? pend[2] : 0;
          pending        = PETSC_FALSE;
        }
      }
    }
    if (OpsBatchIsOpen()) PetscCall(OpsBatchEnd());
    PetscCall(BCGSBreakdownRestart(ksp, bc, it, nr, spec_r, rhat, pend, &restarted));
    if (restarted) {
      rrstar = pend[0];
      sigma = rhat_r = one ? pend[2] : 0;
      pending        = PETSC_FALSE;
    }
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPSetFromOptions_FusedBCGS(KSP ksp, PetscOptionItems PetscOptionsObject)
{
  KSP_FusedBCGS *bc = static_cast<KSP_FusedBCGS *>(ksp->data);

  PetscFunctionBegin;
  PetscOptionsHeadBegin(PetscOptionsObject, "KSP fused BiCGStab options");
  PetscCall(PetscOptionsBool3("-ksp_fusedbcgs_one_reduction", "One global reduction per iteration (computes Op^T r* once per solve); default: with more than one process", "KSPFUSEDBCGS", bc->one_reduction_option, &bc->one_reduction_option, NULL));
  PetscCall(KSPFusedChunkSetFromOptions(PetscOptionsObject, &bc->chunk));
  PetscOptionsHeadEnd();
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPView_FusedBCGS(KSP ksp, PetscViewer viewer)
{
  KSP_FusedBCGS *bc = static_cast<KSP_FusedBCGS *>(ksp->data);

  PetscFunctionBegin;
  PetscCall(KSPFusedViewChunked<KSP_FusedBCGS>(ksp, viewer,
                                               bc->one_reduction ? "4 per iteration (SpMV + <Ap,r*>,<Ap,rhat>; s update + <s,s>; SpMV + 4 dots; x/r/p update + 3 dots), 1 reduction (rhat = Op^T r*)"
                                                                 : "4 per iteration (SpMV + <Ap,r*>; s update + <s,s>; SpMV + 3 dots; x/r/p update + 2 dots), 2 reductions (no transpose of the operator or PC)"));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The operations KSPCreate_FusedBCGS() sets */
const KSPFusedOps FusedBCGSOps = {KSPFusedSetUpWork<NWORK>, KSPSolveScoped<KSPSolve_FusedBCGS>, KSPFusedDestroyChunked<KSP_FusedBCGS>, KSPView_FusedBCGS, KSPSetFromOptions_FusedBCGS};

} // namespace
} // namespace fusedksp

/*MC
   KSPFUSEDBCGS - "fusedbcgs" - Pipelined BiCGStab with kernel fusion (Rupp et al., ACM TOMS,
   Algorithm 4): four fused operations per iteration, beta = -<As,r*>/<Ap,r*>, and the residual norm
   from <s,s> - 2 omega <As,s> + omega^2 <As,As> without an extra reduction.

   Options Database Keys:
+  -ksp_type fusedbcgs - selects this solver
.  -ksp_pc_side <left,right> - left (default, preconditioned residual norm) or right (true residual norm)
.  -ksp_fusedbcgs_one_reduction <bool> - one global reduction per iteration (default: with more than one process)
.  -ksp_fused_check_interval <k> - iterations between host checks (device-resident scalars, see `KSPFusedSetCheckInterval()`)
-  -ksp_fused_graph <bool> - record a chunk of k iterations as a CUDA graph and replay it

   Level: beginner

   Notes:
   `PCNONE` and `PCJACOBI` are fused into the SpMV kernel; any other PC is applied with `PCApply()`
   twice per iteration, like `KSPBCGS`.  With more than one process an iteration makes one global
   reduction (one MPI_Allreduce) when the operator has `MatMultTranspose()` and the PC
   `PCApplyTranspose()` (Op^T r* is computed once per solve), two otherwise.  On one process the
   default is two host round trips per iteration (-ksp_fusedbcgs_one_reduction 1 gives one, at the
   cost of one transposed product per solve, on the device for `MATAIJFUSED`).  The reductions are
   blocking `MPI_Allreduce()` calls: the operation that follows each one needs its result (alpha, or
   omega and beta), so none is overlapped with `MPI_Iallreduce()`.  Pipelined and classical BiCGStab round
   differently; their residual histories can differ noticeably on hard problems (the paper reports up
   to 41% after 30 iterations) without either being systematically worse.  On one GPU with chunks
   (`KSPFusedSetCheckInterval()`), `PCNONE` or `PCJACOBI` and a zero initial guess, the start of the solve
   (r = r* = p = M^{-1} b on the left) runs inside the first chunk: no host round trip precedes it.
   Where `KSPBCGS` stops with `KSP_DIVERGED_BREAKDOWN` (<r,r*> or <Ap,r*> vanishing), this solver restarts
   from the true residual with r* = r, as long as each restart begins from a smaller true residual than the
   last one; `KSPFusedGetResidualReplacementCount()` counts the restarts, -info says where they happened.

.seealso: `KSPFUSEDCG`, `KSPFUSEDSGMRES`, `KSPBCGS`, `KSPPIPEBCGS`
M*/
PETSC_INTERN PetscErrorCode KSPCreate_FusedBCGS(KSP ksp)
{
  PetscFunctionBegin;
  PetscCall(fusedksp::KSPFusedCreateChunked<fusedksp::KSP_FusedBCGS>(ksp, fusedksp::FusedBCGSOps, {{KSP_NORM_PRECONDITIONED, PC_LEFT}, {KSP_NORM_UNPRECONDITIONED, PC_RIGHT}}));
  ksp->guess_not_read = PETSC_TRUE; /* KSPSolve() need not zero x: the solve zeroes it itself (or its first chunk does) */
  PetscFunctionReturn(PETSC_SUCCESS);
}
