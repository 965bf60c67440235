/*
   KSPFUSEDCG: pipelined conjugate gradients with kernel fusion (seed 000, Algorithm 2), preconditioned.

   Derivation of the preconditioned recurrence.  Classical PCG with z = M^{-1} r:
       alpha_i = <r_i,z_i>/<p_i,Ap_i>,  x += alpha p,  r -= alpha Ap,  z = M^{-1} r,
       beta_i = <r_{i+1},z_{i+1}>/<r_i,z_i>,  p = z + beta p.
   With q_i = A p_i, u_i = M^{-1} q_i and M symmetric,
       <r_{i+1}, z_{i+1}> = <r_i - alpha q_i, M^{-1}(r_i - alpha q_i)>
                          = <r_i,z_i> - 2 alpha <q_i,z_i> + alpha^2 <q_i,u_i>,
   so beta_i = <r_{i+1},z_{i+1}>/<r_i,z_i> is known from dot products of the SpMV output before
   r_{i+1} exists, and the three vector updates run in one pass.  z is carried by the recurrence
   z_{i+1} = z_i - alpha u_i (exact: M^{-1} is linear), so each iteration applies M^{-1} once, to q.

   Seed 000 goes one step further: z_i = p_i - beta_{i-1} p_{i-1} and <p_{i-1}, A p_i> = 0 give
   <q_i,z_i> = <p_i,q_i>, hence beta_i = alpha_i^2 <q_i,u_i>/<r_i,z_i> - 1.  That identity needs
   A symmetric and the A-conjugacy of successive directions: it fails when A is not exactly
   symmetric (Dirichlet rows kept as scaled identity rows, as in PETSc's DMDA tutorials) and drifts
   as conjugacy is lost in rounding, and the solver then takes many more iterations than cg.  Here
   <q_i,z_i> is computed in the SpMV like <p_i,q_i> (one more vector read, no more kernels or
   reductions): beta comes from the predicted <r_{i+1},z_{i+1}> above, alpha from the <r,z> the
   next update computes directly - the predict-and-recompute form (Chen & Carson), which follows
   classical CG's iterates to rounding.

   One iteration = two fused operations + one reduction:
     (1) x += alpha p; r -= alpha q; z -= alpha u (Jacobi: z = w.*r inline); p = z + beta p;
         partial <r,z>, <r,r>, <z,z>
     (2) q = A p (+ u = M^{-1} q: inline w.*q for Jacobi, PCApply otherwise);
         partial <p,q>, <q,z>, <q,u>
     one reduction of the 6 values (one MPI_Allreduce), then alpha, beta and the residual norm
     on the host (src/core/recurrences.hpp).
   Norms: preconditioned sqrt<z,z> (default), unpreconditioned sqrt<r,r>, natural sqrt<r,z>.

   Pipelined recurrences drift from the true residual at tight tolerances, so when the
   recurrence residual passes the (default) convergence test, the true residual b - A x is
   computed; if it does not pass, the residual is replaced by the true one and the iteration
   restarts from it (p = z), so "converged" always means the true residual met the tolerance.

   A general PC (anything but none and Jacobi) applied with PCApply() with k = 1 runs PCG in its classical order
   instead (a PC that is one kernel of the backend, point-block Jacobi of a fused matrix, keeps the pipelined order,
   chunks and graphs as Jacobi does):
     q = A p + partial <p,q>; reduction; x += alpha p; r -= alpha q; z = M^{-1} r + partial <r,z>,
     <r,r>, <z,z>; reduction; p = z + beta p.
   Such a PC costs far more than the vector operations (a V-cycle of GAMG is 85-90% of an iteration), so
   what counts is how often it is applied.  The pipelined order applies it to the start's z and to the
   product of every iteration, the last one's too, whose u no iteration uses, and its true-residual check
   applies it once more: its + 3 applications per solve against KSPCG's its + 1.  The classical order
   applies it its + 1 times, to r itself, so z = M^{-1} r holds exactly and, as in KSPCG, the residual needs
   no check; the second reduction per iteration costs a host round trip, a few microseconds.
*/
#include "ksp/fusedchunk.hpp"

namespace fusedksp
{
namespace
{

struct KSP_FusedCG {
  Vec           w        = nullptr; /* Jacobi weights */
  PetscScalar   ref_rz   = 0;       /* <r,z> and <p,Ap> of the solve's iteration 0 (see CGCoefficients()) */
  PetscScalar   ref_pq   = 0;
  PCMode        mode     = PCMode::NONE;
  PetscBool     pckernel = PETSC_FALSE; /* a general PC that is a kernel of the backend (KSPFusedPCIsKernel()) */
  SolveCounters counters;
  Chunker       chunk;

  /* a general PC applied through PCApply(): not recordable, maybe communicating or expensive */
  bool HostPC() const
  {
    return mode == PCMode::GENERAL && !pckernel;
  }
};

enum { VEC_R, VEC_Z, VEC_P, VEC_Q, VEC_U, VEC_T, NWORK };

/* q = A p and u = M^{-1} q with their dot products <p,q>, <q,z>, <q,u>, <r,u>: into d[CG_PQ..CG_RU]
   (local values), or with slot != NULL into slot[CG_PQ..CG_RU] in backend memory (nothing runs when
   *stop >= 0, see OpsReduceInto()).  z is w.*r (Jacobi), r (no PC) or V[VEC_Z] (general PC); with
   Jacobi or no PC, M is symmetric, <r,u> is <q,z> and d[CG_RU] is not computed.                */
PetscErrorCode CGOperator(KSP ksp, KSP_FusedCG *cg, Mat A, Vec *V, PetscScalar *d, PetscScalar *slot = nullptr, const PetscInt *stop = nullptr)
{
  PetscFunctionBegin;
  if (slot) PetscCall(OpsReduceInto(slot + CG_PQ, stop));
  switch (cg->mode) {
  case PCMode::JACOBI: {
    const OpDot specs[3] = {{DotKind::DOT_INPUT}, {DotKind::DOT_VECTOR_W, V[VEC_R], cg->w}, {DotKind::DOT_SELF_W, cg->w}};
    PetscCall(OpsApplyOperator(A, nullptr, nullptr, V[VEC_P], V[VEC_Q], nullptr, 3, specs, d + CG_PQ));
  } break;
  case PCMode::NONE: {
    const OpDot specs[3] = {{DotKind::DOT_INPUT}, {DotKind::DOT_VECTOR, V[VEC_R]}, {DotKind::DOT_SELF}};
    PetscCall(OpsApplyOperator(A, nullptr, nullptr, V[VEC_P], V[VEC_Q], nullptr, 3, specs, d + CG_PQ));
  } break;
  case PCMode::GENERAL: {
    const OpDot specs[2] = {{DotKind::DOT_INPUT}, {DotKind::DOT_VECTOR, V[VEC_Z]}}, u_specs[2] = {{DotKind::DOT_VECTOR, V[VEC_Q]}, {DotKind::DOT_VECTOR, V[VEC_R]}};
    PetscCall(OpsApplyOperator(A, nullptr, nullptr, V[VEC_P], V[VEC_Q], nullptr, 2, specs, d + CG_PQ));
    PetscCall(KSPFusedApplyPC(ksp, V[VEC_Q], V[VEC_U]));
    if (slot) PetscCall(OpsReduceInto(slot + CG_QU, stop));
    PetscCall(OpsDots(nullptr, V[VEC_U], 2, u_specs, d + CG_QU));
  } break;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The dot products <r,z>, <r,r>, <z,z> of the residual into d[CG_RZ..CG_ZZ] (local values) */
PetscErrorCode CGResidualDots(Vec *V, PetscScalar *d)
{
  const OpDot rz_rr[2] = {{DotKind::DOT_INPUT, nullptr}, {DotKind::DOT_SELF, nullptr}};
  const OpDot zz       = {DotKind::DOT_SELF, nullptr};

  PetscFunctionBegin;
  PetscCall(OpsDots(V[VEC_Z], V[VEC_R], 2, rz_rr, d + CG_RZ));
  PetscCall(OpsDots(V[VEC_Z], V[VEC_Z], 1, &zz, d + CG_ZZ));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Starts (or restarts) the recurrence from the residual in r: z = M^{-1} r, p = z, q = A p,
   u = M^{-1} q, and the reduced dot products in d                                             */
PetscErrorCode CGStart(KSP ksp, KSP_FusedCG *cg, Mat A, Vec *V, PetscScalar *d)
{
  PetscFunctionBegin;
  PetscCall(KSPFusedPCApply(ksp, cg->mode, cg->w, V[VEC_R], V[VEC_Z]));
  PetscCall(VecCopy(V[VEC_Z], V[VEC_P]));
  PetscCall(OpsBatchBegin(cg->HostPC() ? PETSC_FALSE : PETSC_TRUE));
  PetscCall(CGResidualDots(V, d));
  PetscCall(CGOperator(ksp, cg, A, V, d));
  PetscCall(OpsBatchEnd());
  PetscCall(OpsAllreduce(PetscObjectComm((PetscObject)ksp), d, CG_NSLOT, &cg->counters));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The dot product whose square root is the norm CGNorm() returns (-1: none) */
PetscInt CGNormDot(KSP ksp)
{
  return KSPFusedNormDot(ksp, CG_ZZ, CG_RR, CG_RZ);
}

PetscReal CGNorm(KSP ksp, const PetscScalar *d)
{
  return KSPFusedNormOf(d, CGNormDot(ksp));
}

/* After the convergence test passed at iteration `it` with the recurrence residual rnorm: the
   true-residual check; when it fails the residual is replaced and the recurrence restarted from it
   (d: the new reduced values), *restarted = PETSC_TRUE and ksp->reason is reset               */
PetscErrorCode CGCheckTrueResidual(KSP ksp, KSP_FusedCG *cg, Mat A, Vec *V, PetscScalar *d, PetscInt it, PetscReal rnorm, TrueResidualGuard *guard, PetscBool *restarted)
{
  PetscReal truenorm;

  PetscFunctionBegin;
  PetscCall(KSPFusedTrueResidualReplace(ksp, cg->mode, cg->w, PETSC_TRUE, V[VEC_T], V[VEC_Z], guard, &truenorm, restarted));
  if (*restarted) {
    PetscCall(PetscInfo(ksp, "Iteration %" PetscInt_FMT ": recurrence residual %g passed but true residual %g did not; replacing the residual\n", it, (double)rnorm, (double)truenorm));
    PetscCall(VecCopy(V[VEC_T], V[VEC_R]));
    PetscCall(CGStart(ksp, cg, A, V, d));
    ksp->rnorm = CGNorm(ksp, d);
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* z = M^{-1} r of a general PC and the reduced <r,z>, <r,r>, <z,z> into d, then the norm's test at iteration it */
PetscErrorCode CGClassicalResidual(KSP ksp, KSP_FusedCG *cg, Vec *V, PetscScalar *d, PetscInt it)
{
  PetscFunctionBegin;
  PetscCall(KSPFusedApplyPC(ksp, V[VEC_R], V[VEC_Z]));
  PetscCall(OpsBatchBegin(PETSC_TRUE));
  PetscCall(CGResidualDots(V, d));
  PetscCall(OpsBatchEnd());
  PetscCall(OpsAllreduce(PetscObjectComm((PetscObject)ksp), d + CG_RZ, CG_ZZ + 1, &cg->counters));
  PetscCall(KSPFusedMonitorAndTest(ksp, it, CGNorm(ksp, d)));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The iterations with a general PC and k = 1, from the residual in r: PCG in its classical order (see the top of the
   file), each PC application on r, two reductions per iteration                                                   */
PetscErrorCode CGSolveClassical(KSP ksp, KSP_FusedCG *cg, Mat A, Vec *V)
{
  const OpDot pq          = {DotKind::DOT_INPUT, nullptr};
  PetscScalar d[CG_NSLOT] = {}, alpha = 0, rz;

  PetscFunctionBegin;
  PetscCall(CGClassicalResidual(ksp, cg, V, d, 0));
  cg->ref_rz = d[CG_RZ];
  PetscCall(VecCopy(V[VEC_Z], V[VEC_P]));
  for (PetscInt it = 1; !ksp->reason; ++it) {
    if (it > ksp->max_it) {
      ksp->reason = KSP_DIVERGED_ITS;
      break;
    }
    PetscCall(OpsApplyOperator(A, nullptr, nullptr, V[VEC_P], V[VEC_Q], nullptr, 1, &pq, d + CG_PQ));
    PetscCall(OpsAllreduce(PetscObjectComm((PetscObject)ksp), d + CG_PQ, 1, &cg->counters));
    if (it == 1) cg->ref_pq = d[CG_PQ];
    if (KSPFusedStatusStops(ksp, CGClassicalAlpha(d[CG_RZ], d[CG_PQ], cg->ref_rz, cg->ref_pq, &alpha))) break;
    PetscCall(VecAXPY(ksp->vec_sol, alpha, V[VEC_P]));
    PetscCall(VecAXPY(V[VEC_R], -alpha, V[VEC_Q]));
    rz = d[CG_RZ];
    PetscCall(CGClassicalResidual(ksp, cg, V, d, it));
    if (!ksp->reason) PetscCall(VecAYPX(V[VEC_P], d[CG_RZ] / rz, V[VEC_Z]));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* One chunk of CG iterations with device-resident scalars (see fusedchunk.hpp) */
struct CGChunk {
  KSP          ksp;
  KSP_FusedCG *cg;
  Mat          A;
  Vec         *V, X, B; /* B: the right-hand side when the chunk computes the start, else NULL */
  PetscInt     k;
};

PetscErrorCode CGChunkBody(void *ctx)
{
  CGChunk      *b   = static_cast<CGChunk *>(ctx);
  Chunker      *c   = &b->cg->chunk;
  ChunkControl *ctl = ChunkDeviceControl(c);
  Vec          *V   = b->V;

  PetscFunctionBegin;
  if (b->cg->mode != PCMode::GENERAL) {
    PetscCall(OpsCGChunk(b->A, b->k, ChunkDeviceSlot(c, 0), ctl, b->B, b->ksp->guess_zero ? PETSC_FALSE : PETSC_TRUE, ChunkHostControl(c)->bnorm, b->X, V[VEC_R], V[VEC_P], V[VEC_Q], b->cg->w, ChunkFormOf(c)));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  for (PetscInt j = 1; j <= b->k; ++j) {
    PetscScalar *slot = ChunkDeviceSlot(c, j);
    PetscCall(OpsReduceInto(slot + CG_RZ, &ctl->stopped));
    PetscCall(OpsCGUpdateChained(ChunkDeviceSlot(c, j - 1), ctl, j, b->X, V[VEC_R], V[VEC_Z], V[VEC_P], V[VEC_Q], b->cg->mode == PCMode::GENERAL ? V[VEC_U] : nullptr, b->cg->w));
    PetscCall(CGOperator(b->ksp, b->cg, b->A, V, nullptr, slot, &ctl->stopped));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* What CGSolveChunked()'s callbacks (KSPFusedChunkSolve()) share; key: the operands of its chunks' records */
struct CGChunked {
  KSP                       ksp;
  KSP_FusedCG              *cg;
  Mat                       A;
  Vec                      *V;
  TrueResidualGuard        *guard;
  std::vector<const void *> key;
};

/* Runs a chunk of k iterations from iteration it */
PetscErrorCode CGChunkRun(void *ctx, PetscInt it, PetscInt k, PetscBool start, const PetscScalar *d, PetscInt *performed)
{
  CGChunked                *r    = static_cast<CGChunked *>(ctx);
  KSP                       ksp  = r->ksp;
  KSP_FusedCG              *cg   = r->cg;
  Chunker                  *c    = &cg->chunk;
  Vec                      *V    = r->V;
  CGChunk                   body = {ksp, cg, r->A, V, ksp->vec_sol, start ? ksp->vec_rhs : nullptr, k};
  std::vector<const void *> chunk_key;

  PetscFunctionBegin;
  FusedKSPCallCXX(chunk_key = r->key);
  PetscCall(KSPFusedChunkStart(ksp, c, it, CGNormDot(ksp), start ? nullptr : d));
  ChunkHostControl(c)->ref_rz = cg->ref_rz;
  ChunkHostControl(c)->ref_pq = cg->ref_pq;
  if (start) { /* the record that computes the start reads b, and x when it is the guess */
    PetscCall(OpsChunkKey(r->A, {ksp->vec_rhs}, &chunk_key));
    FusedKSPCallCXX(chunk_key.push_back(reinterpret_cast<const void *>((uintptr_t)(ksp->guess_zero ? 0 : 1))); chunk_key.push_back(reinterpret_cast<const void *>((uintptr_t)(ChunkHostControl(c)->bnorm + 1))));
  }
  PetscCall(KSPFusedChunkRun(c, k, cg->HostPC() ? PETSC_FALSE : PETSC_TRUE, chunk_key, CGChunkBody, &body));
  PetscCall(OpsMarkWritten({ksp->vec_sol, V[VEC_R], V[VEC_Z], V[VEC_P], V[VEC_Q], V[VEC_U]}));
  *performed = ChunkPerformed(c, k);
  cg->counters.reductions += *performed;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Iteration 0 from the start the chunk computed */
PetscErrorCode CGReplayStart(void *ctx, const PetscScalar *slot0, PetscScalar *d, PetscBool *stop)
{
  CGChunked *r = static_cast<CGChunked *>(ctx);

  PetscFunctionBegin;
  r->cg->counters.reductions++;
  PetscCall(PetscArraycpy(d, slot0, CG_NSLOT));
  r->cg->ref_rz = d[CG_RZ];
  r->cg->ref_pq = d[CG_PQ];
  PetscCall(KSPFusedMonitorAndTest(r->ksp, 0, CGNorm(r->ksp, d)));
  *stop = r->ksp->reason ? PETSC_TRUE : PETSC_FALSE;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode CGReplayIteration(void *ctx, PetscInt j, PetscInt, PetscInt performed, const PetscScalar *prev, const PetscScalar *cur, PetscReal *rnorm, PetscBool *stop)
{
  CGChunked  *r = static_cast<CGChunked *>(ctx);
  PetscScalar alpha, beta;

  PetscFunctionBegin;
  /* j > performed: the kernels stopped here, the host's test did not: go on from here */
  *stop  = KSPFusedStatusStops(r->ksp, CGCoefficients(prev, r->cg->ref_rz, r->cg->ref_pq, r->cg->mode != PCMode::GENERAL, &alpha, &beta)) || j > performed ? PETSC_TRUE : PETSC_FALSE;
  *rnorm = CGNorm(r->ksp, cur);
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode CGReplayConverged(void *ctx, PetscInt it, PetscReal rnorm, PetscScalar *d, PetscBool *restarted)
{
  CGChunked *r = static_cast<CGChunked *>(ctx);

  PetscFunctionBegin;
  PetscCall(CGCheckTrueResidual(r->ksp, r->cg, r->A, r->V, d, it, rnorm, r->guard, restarted));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   CGSolveChunked - the iterations, k at a time: each chunk runs on the backend without a host round
   trip, then the host replays its iterations (coefficient checks, norms, monitors, convergence test,
   true-residual check) from the copied slots.  d holds the reduced values of the start and is kept
   current; with `start` the first chunk computes the start itself (PCNONE or
   PCJACOBI, KSPFusedChunkMayStart()) and the host replays its iteration 0 first.
*/
PetscErrorCode CGSolveChunked(KSP ksp, KSP_FusedCG *cg, Mat A, Vec *V, PetscScalar *d, PetscBool start, TrueResidualGuard *guard)
{
  const ChunkReplayOps ops = {CGChunkRun, CGReplayStart, CGReplayIteration, CGReplayConverged, PETSC_TRUE};
  Chunker             *c   = &cg->chunk;
  CGChunked            chunked{ksp, cg, A, V, guard, {}};

  PetscFunctionBegin;
  PetscCall(KSPFusedChunkReserve(c, CG_NSLOT, c->k));
  PetscCall(OpsChunkKey(A, {ksp->vec_sol, V[VEC_R], V[VEC_Z], V[VEC_P], V[VEC_Q], V[VEC_U], cg->w}, &chunked.key));
  PetscCall(KSPFusedPCKernelKey(ksp, &chunked.key));
  FusedKSPCallCXX(chunked.key.push_back(reinterpret_cast<const void *>((uintptr_t)cg->mode)));
  c->nograph = cg->HostPC() ? "no graph: the PC is applied with PCApply(), which may not be recordable" : nullptr;
  PetscCall(KSPFusedChunkSolve(ksp, c, 0, start, ops, &chunked, d));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPSolve_FusedCG(KSP ksp)
{
  KSP_FusedCG *cg = static_cast<KSP_FusedCG *>(ksp->data);
  Vec         *V = ksp->work, X = ksp->vec_sol, B = ksp->vec_rhs;
  Mat          A;
  PetscScalar  d[CG_NSLOT] = {}, alpha = 0, beta = 0;
  PetscReal    rnorm;
  const char  *unsupported;

  TrueResidualGuard guard;

  PetscFunctionBegin;
  PetscCall(KSPGetOperators(ksp, &A, NULL));
  PetscCall(KSPFusedPCMode(ksp, V[VEC_T], &cg->mode, &cg->w));
  PetscCall(KSPFusedPCIsKernel(ksp, &cg->pckernel));
  cg->counters = SolveCounters();
  ksp->reason  = KSP_CONVERGED_ITERATING;
  PetscCall(KSPFusedChunkOperands(&cg->chunk, A, {X, B, V[VEC_R], V[VEC_Z], V[VEC_P], V[VEC_Q], V[VEC_U], V[VEC_T], cg->w}, &unsupported));
  if (!unsupported && cg->chunk.parallel && cg->mode == PCMode::GENERAL) unsupported = "a general PC with several processes runs with k = 1";
  cg->chunk.whole   = cg->mode == PCMode::GENERAL ? PETSC_FALSE : PETSC_TRUE; /* whole chunks to the backend (a persistent kernel) */
  cg->chunk.pcapply = cg->HostPC() ? PETSC_TRUE : PETSC_FALSE;
  PetscCall(KSPFusedChunkInterval(ksp, &cg->chunk, unsupported));
  if (cg->chunk.whole && KSPFusedChunkMayStart(ksp, &cg->chunk, PETSC_TRUE)) { /* the first chunk computes the start: no host round trip before it */
    PetscCall(CGSolveChunked(ksp, cg, A, V, d, PETSC_TRUE, &guard));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  if (ksp->guess_zero) {
    PetscCall(VecSet(X, 0.0));
    PetscCall(VecCopy(B, V[VEC_R]));
  } else {
    PetscCall(KSP_MatMult(ksp, A, X, V[VEC_R]));
    PetscCall(VecAYPX(V[VEC_R], -1.0, B));
  }
  if (cg->HostPC() && cg->chunk.k == 1) {
    PetscCall(CGSolveClassical(ksp, cg, A, V));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(CGStart(ksp, cg, A, V, d));
  cg->ref_rz = d[CG_RZ];
  cg->ref_pq = d[CG_PQ];
  rnorm      = CGNorm(ksp, d);
  PetscCall(KSPFusedMonitorAndTest(ksp, 0, rnorm));

  if (ksp->reason) PetscFunctionReturn(PETSC_SUCCESS);
  if (cg->chunk.k > 1) {
    PetscCall(CGSolveChunked(ksp, cg, A, V, d, PETSC_FALSE, &guard));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  for (PetscInt it = 1; !ksp->reason; ++it) {
    PetscBool restarted;

    if (it > ksp->max_it) {
      ksp->reason = KSP_DIVERGED_ITS;
      break;
    }
    if (KSPFusedStatusStops(ksp, CGCoefficients(d, cg->ref_rz, cg->ref_pq, cg->mode != PCMode::GENERAL, &alpha, &beta))) break;
    /* the two fused kernels; their dot products come back together (one copy, one wait) */
    PetscCall(OpsBatchBegin(cg->HostPC() ? PETSC_FALSE : PETSC_TRUE));
    PetscCall(OpsCGUpdate(alpha, beta, X, V[VEC_R], V[VEC_Z], V[VEC_P], V[VEC_Q], cg->mode == PCMode::GENERAL ? V[VEC_U] : nullptr, cg->w, d + CG_RZ));
    PetscCall(CGOperator(ksp, cg, A, V, d));
    PetscCall(OpsBatchEnd());
    PetscCall(OpsAllreduce(PetscObjectComm((PetscObject)ksp), d, CG_NSLOT, &cg->counters));
    rnorm = CGNorm(ksp, d);
    PetscCall(KSPFusedMonitorAndTest(ksp, it, rnorm));
    if (ksp->reason > 0) PetscCall(CGCheckTrueResidual(ksp, cg, A, V, d, it, rnorm, &guard, &restarted));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPSetFromOptions_FusedCG(KSP ksp, PetscOptionItems PetscOptionsObject)
{
  KSP_FusedCG *cg = static_cast<KSP_FusedCG *>(ksp->data);

  PetscFunctionBegin;
  PetscOptionsHeadBegin(PetscOptionsObject, "KSP fused CG options");
  PetscCall(KSPFusedChunkSetFromOptions(PetscOptionsObject, &cg->chunk));
  PetscOptionsHeadEnd();
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPView_FusedCG(KSP ksp, PetscViewer viewer)
{
  KSP_FusedCG *cg = static_cast<KSP_FusedCG *>(ksp->data);

  PetscFunctionBegin;
  if (cg->HostPC() && cg->chunk.k == 1)
    PetscCall(KSPFusedViewChunked<KSP_FusedCG>(ksp, viewer, "PCG's order with a general PC: per iteration SpMV with <p,q>, x and r updates, PCApply() to r, the residual's dot products; 2 reductions"));
  else
    PetscCall(KSPFusedViewChunked<KSP_FusedCG>(ksp, viewer, "2 per iteration (vector update + SpMV with dot products), 1 reduction of 6 values"));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The operations KSPCreate_FusedCG() sets */
const KSPFusedOps FusedCGOps = {KSPFusedSetUpWork<NWORK>, KSPSolveScoped<KSPSolve_FusedCG>, KSPFusedDestroyChunked<KSP_FusedCG>, KSPView_FusedCG, KSPSetFromOptions_FusedCG};

} // namespace
} // namespace fusedksp

/*MC
   KSPFUSEDCG - "fusedcg" - Pipelined preconditioned conjugate gradients with kernel fusion
   (Rupp et al., Pipelined Iterative Solvers with Kernel Fusion for GPUs, ACM TOMS, Algorithm 2).

   Each iteration runs two fused operations - the three vector updates with the partial sums of
   <r,z>, <r,r>, <z,z>, and the SpMV q = A p with the partial sums of <p,q>, <q,z>, <q,M^{-1}q> - and
   one global reduction of the six values (one MPI_Allreduce with several processes), from which
   alpha = <r,z>/<p,q> and beta = (<r,z> - 2 alpha <q,z> + alpha^2 <q,M^{-1}q>)/<r,z> are computed.
   Its iterates follow `KSPCG`'s to rounding, also when A is not exactly symmetric.

   Options Database Keys:
+  -ksp_type fusedcg - selects this solver; all standard KSP options apply
.  -ksp_fused_check_interval <k> - iterations between host checks (device-resident scalars, see `KSPFusedSetCheckInterval()`)
-  -ksp_fused_graph <bool> - record a chunk of k iterations as a CUDA graph and replay it

   Level: beginner

   Notes:
   The matrix and preconditioner must be symmetric positive definite.  `PCNONE` and `PCJACOBI`
   are fused into the kernels; `PCPBJACOBI` and `PCVPBJACOBI` of a `MATAIJFUSED` matrix are one kernel of the
   backend between them (to A p, chunks and graphs as with Jacobi); any other PC is applied with `PCApply()` once per
   iteration, to the residual, in PCG's classical order (two reductions per iteration; the iteration count + 1
   applications per solve, as `KSPCG`), or with `-ksp_fused_check_interval` k > 1 to A p in the pipelined order.
   Norm types: `KSP_NORM_PRECONDITIONED` (default), `KSP_NORM_UNPRECONDITIONED`, `KSP_NORM_NATURAL`,
   `KSP_NORM_NONE`.  The fused kernels run when the vectors are `VECFUSED` and the matrix `MATAIJFUSED`
   (-vec_type fused -mat_type aijfused); otherwise the same algorithm runs with standard PETSc
   operations.  When the recurrence residual meets the tolerance the true residual is checked; if it
   does not meet it, the residual is replaced and the iteration continues (see -info).
   The reduction is a blocking `MPI_Allreduce()`, not an overlapped `MPI_Iallreduce()`: both fused
   operations of the next iteration need alpha and beta, so no work is independent of it; with
   `MATMPIAIJFUSED` the halo exchange of the SpMV is what overlaps (with the diagonal-block product).
   On one GPU with chunks (`KSPFusedSetCheckInterval()`) and `PCNONE` or `PCJACOBI`, the start of the solve
   (from a zero or a nonzero initial guess) runs inside the first chunk: no host round trip precedes it.

.seealso: `KSPFUSEDBCGS`, `KSPFUSEDSGMRES`, `KSPCG`, `KSPPIPECG`, `VECFUSED`, `MATAIJFUSED`
M*/
PETSC_INTERN PetscErrorCode KSPCreate_FusedCG(KSP ksp)
{
  PetscFunctionBegin;
  PetscCall(fusedksp::KSPFusedCreateChunked<fusedksp::KSP_FusedCG>(ksp, fusedksp::FusedCGOps, {{KSP_NORM_PRECONDITIONED, PC_LEFT}, {KSP_NORM_UNPRECONDITIONED, PC_LEFT}, {KSP_NORM_NATURAL, PC_LEFT}}));
  ksp->guess_not_read = PETSC_TRUE; /* KSPSolve() need not zero x: the solve does it (a chunk that computes the start: on the device) */
  PetscFunctionReturn(PETSC_SUCCESS);
}
