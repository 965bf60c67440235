/*
   KSPFUSEDSGMRES: pipelined simpler GMRES(m) with kernel fusion (Walker & Zhou 1994; seed 000,
   Algorithm 6), in its residual-based form (RB-SGMRES, Jiranek, Rozloznik & Gutknecht 2008),
   right preconditioned (default) or left preconditioned.

   Simpler GMRES builds an orthonormal basis V_k = [v_1..v_k] of Op K_k, Op = A M^{-1}, from the
   vectors Z_k = [z_1..z_k]:  Op Z_k = V_k R_k with R_k upper triangular, and x_k = x_0 + M^{-1} Z_k y
   with R_k y = (xi_1..xi_k), xi_j = <r_{j-1}, v_j>, r_j = r_{j-1} - xi_j v_j.  Seed 000 (and Walker &
   Zhou) take Z = [r_0/rho, v_1, .., v_{k-1}], which becomes ill-conditioned as the residual drops
   (r_0 nearly lies in span(v_1..v_k)): the residual estimate drifts from the true one and the true
   residual can stall.  The residual-based form takes z_j = r_{j-1}/rho instead, whose conditioning
   stays bounded, and gets xi from a direct dot product of small vectors.  Both forms need the same
   kernels and reductions.

   Step i of a cycle, with ONE global reduction:
     (1) w = Op z_i                                            (SpMV; Jacobi fused: A (w .* z))
     (2) multi-dot  d = [<v_1,w> .. <v_{i-1},w>, <z_i,w>, <w,w>]            -> one reduction
         R_{j,i} = d_j,  h^2 = <w,w> - sum_j R_{j,i}^2  (Pythagoras),
         eta_i = <z_i, v_i> = <z_i, w>/h  (z_i is orthogonal to v_1..v_{i-1}),  xi_i = rho eta_i
     (3) v_i = (w - sum_j R_{j,i} v_j)/h  and  z_{i+1} = z_i - eta_i v_i   (one fused kernel)
   Classical Gram-Schmidt loses orthogonality when w nearly lies in span(v_1..v_{i-1}), and the
   residual-based recurrence z_{i+1} = z_i - eta_i v_i needs that orthogonality more than Arnoldi
   GMRES does: without it the solver takes many more iterations than KSPGMRES on hard problems
   (jumping coefficients).  So when the projection keeps less than reorth_tol (1e-2) of <w,w>
   (h^2 < reorth_tol <w,w>: at least 99% cancels, a loss of about two digits of orthogonality),
   the step takes a second pass (selective CGS2): w is orthogonalized, a second multi-dot (one
   more reduction) gives corrections that are added to R(:,i) and the new norm.  On easy problems
   no step needs it; with jumping coefficients about one step in ten.  -ksp_fusedsgmres_cgs2
   takes the second pass at every step (2 reductions per step).

   Convergence monitor from xi alone: ||r_i|| = ||r_{i-1}|| sqrt(1 - (xi_i / ||r_{i-1}||)^2)
   (a product of sines, no cancellation against rho).  When it meets the tolerance the cycle ends
   early, x is updated, and the true residual decides; the true residual is also computed at every
   restart (it starts the next cycle) and compared with the estimate (-info).  A solve that reaches
   max_it ends as KSPGMRES's does: DIVERGED_ITS with the estimate, no true residual after the update.

   Left preconditioning (-ksp_pc_side left, KSP_NORM_PRECONDITIONED, KSPGMRES's default) is the same
   recurrence with Op = M^{-1} A, r_0 = M^{-1} (b - A x_0) and x_k = x_0 + Z_k y: the residual norms
   are the preconditioned ones KSPGMRES tests, so both take the same iterations to the same rtol.  The
   PC is applied after the product (Jacobi: scaling its rows in the product's kernel; others through
   PCApply()), one step at a time (k = 1).
*/
#include "ksp/fusedchunk.hpp"
#include <vector>

namespace fusedksp
{
namespace
{

constexpr PetscReal SGMRES_CANCELLATION = 1.0e-8; /* the least fraction of <w,w> that h^2 may keep without a second pass */

struct KSP_FusedSGMRES {
  Vec                      w    = nullptr;
  PCMode                   mode = PCMode::NONE;
  PetscBool                left = PETSC_FALSE; /* left preconditioned: Op = M^{-1} A */
  SolveCounters            counters;
  PetscInt                 restart    = 30;
  PetscBool                cgs2       = PETSC_FALSE;
  PetscReal                reorth_tol = 1.0e-2;  /* a second pass when h^2 < reorth_tol <w,w> */
  PetscInt                 nreorth    = 0;       /* steps of the last solve that took it */
  Vec                     *V          = nullptr; /* v_1..v_m (V[0] unused) */
  Vec                     *Z          = nullptr; /* z_1..z_{m+1}: scaled residuals (Z[0] unused) */
  PetscInt                 nV         = 0;
  std::vector<PetscScalar> R, xi, d, coef;
  std::vector<Vec>         Vz;                   /* v_1..v_{i-1}, z_i: the multi-dot's vectors */
  PetscScalar              zz_local = 0, zz = 1; /* <z_i, z_i>: local partial (pending) and reduced */
  PetscInt                 cycle_k   = 0;        /* steps of the current cycle not yet added to x */
  PetscReal                cycle_rho = 0;
  Chunker                  chunk;
};

enum { VEC_T, VEC_T2, VEC_WORK, VEC_SOL, NWORK };

inline PetscScalar &Rij(KSP_FusedSGMRES *g, PetscInt i, PetscInt j)
{
  return g->R[i * (g->restart + 1) + j];
}

PetscErrorCode KSPSetUp_FusedSGMRES(KSP ksp)
{
  KSP_FusedSGMRES *g = static_cast<KSP_FusedSGMRES *>(ksp->data);

  PetscFunctionBegin;
  PetscCall(KSPSetWorkVecs(ksp, NWORK));
  if (g->nV != g->restart + 1) {
    if (g->V) PetscCall(VecDestroyVecs(g->nV, &g->V));
    if (g->Z) PetscCall(VecDestroyVecs(g->nV + 1, &g->Z));
    PetscCall(KSPCreateVecs(ksp, g->restart + 1, &g->V, 0, NULL));
    PetscCall(KSPCreateVecs(ksp, g->restart + 2, &g->Z, 0, NULL));
    g->nV = g->restart + 1;
  }
  FusedKSPCallCXX(g->R.assign((size_t)(g->restart + 1) * (g->restart + 1), 0.0); g->xi.assign(g->restart + 1, 0.0); g->d.assign(g->restart + 2, 0.0); g->coef.assign(g->restart + 1, 0.0); g->Vz.assign(g->restart + 1, nullptr));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The fraction of <w,w> below which h^2 takes a second Gram-Schmidt pass: always with CGS2 (and a
   step of the chunked path with that much cancellation is handed to the per-step path)           */
PetscReal SGMRESKeep(const KSP_FusedSGMRES *g)
{
  return g->cgs2 ? 2.0 : PetscMax(g->reorth_tol, SGMRES_CANCELLATION);
}

/* One Gram-Schmidt pass of w = V[i] against v_1..v_{i-1}, with <z_i, w>: the multi-dot and its
   reduction; d[0..i-2] = <v_j, w>, d[i-1] = <z_i, w>, d[i] = <w, w>, and d[i+1] = <z_i, z_i> from
   the previous step's update kernel when `withzz` (it completes in the same batch)              */
PetscErrorCode SGMRESMultiDot(KSP ksp, KSP_FusedSGMRES *g, PetscInt i, PetscBool withzz)
{
  PetscFunctionBegin;
  for (PetscInt j = 1; j < i; ++j) g->Vz[j - 1] = g->V[j];
  g->Vz[i - 1] = g->Z[i];
  PetscCall(OpsMDot(i, g->Vz.data(), g->V[i], PETSC_TRUE, g->d.data()));
  if (OpsBatchIsOpen()) PetscCall(OpsBatchEnd());
  if (withzz) g->d[i + 1] = g->zz_local;
  PetscCall(OpsAllreduce(PetscObjectComm((PetscObject)ksp), g->d.data(), i + (withzz ? 2 : 1), &g->counters));
  if (withzz) g->zz = g->d[i + 1];
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* out = Op in: A M^{-1} in (right preconditioning) or M^{-1} A in (left) */
PetscErrorCode SGMRESOperator(KSP ksp, KSP_FusedSGMRES *g, Mat A, Vec in, Vec out)
{
  PetscFunctionBegin;
  if (g->left && g->mode == PCMode::JACOBI) /* out = w .* (A in) in the product's kernel */
    PetscCall(OpsApplyOperator(A, g->w, nullptr, in, out, nullptr, 0, nullptr, nullptr));
  else if (g->left) {
    PetscCall(OpsApplyOperator(A, nullptr, nullptr, in, ksp->work[VEC_WORK], nullptr, 0, nullptr, nullptr));
    PetscCall(KSPFusedApplyPC(ksp, ksp->work[VEC_WORK], out));
  } else
    PetscCall(KSPFusedRightOperator(ksp, g->mode, g->w, A, in, out, ksp->work[VEC_WORK]));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Step i: V[i] = Op z_i orthonormalized, Z[i+1] = z_i - eta_i v_i; sets R(:,i) and xi[i] = eta_i
   (xi_i in units of rho).  *lucky is set when the new vector is zero (the Krylov space is invariant). */
PetscErrorCode SGMRESStep(KSP ksp, KSP_FusedSGMRES *g, Mat A, PetscInt i, PetscBool *lucky, RecurrenceStatus *status)
{
  Vec          w = g->V[i];
  PetscScalar *d = g->d.data(), h2;

  PetscFunctionBegin;
  *lucky = PETSC_FALSE;
  if (!OpsBatchIsOpen()) PetscCall(OpsBatchBegin(g->mode == PCMode::GENERAL ? PETSC_FALSE : PETSC_TRUE));
  PetscCall(SGMRESOperator(ksp, g, A, g->Z[i], w));
  PetscCall(SGMRESMultiDot(ksp, g, i, i > 1 ? PETSC_TRUE : PETSC_FALSE));
  *status = SGMRESColumn(i - 1, d, d[i], SGMRESKeep(g), &h2);
  if (*status == RecurrenceStatus::NANORINF || NotFinite(d[i - 1])) {
    *status = RecurrenceStatus::NANORINF;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  for (PetscInt j = 1; j < i; ++j) Rij(g, j, i) = g->coef[j] = d[j - 1];
  if (*status == RecurrenceStatus::BREAKDOWN) {
    /* CGS2, or too much cancellation: orthogonalize without scaling, then a second pass whose
       projections are added to R(:,i) and removed from w by the update                         */
    PetscCall(OpsMAXPYScale(i - 1, g->coef.data() + 1, g->V + 1, w, 1.0, nullptr, nullptr));
    PetscCall(SGMRESMultiDot(ksp, g, i, PETSC_FALSE));
    g->nreorth++;
    *status = SGMRESColumn(i - 1, d, d[i], 0.0, &h2);
    for (PetscInt j = 1; j < i; ++j) {
      Rij(g, j, i) += d[j - 1];
      g->coef[j] = d[j - 1];
    }
    if (*status == RecurrenceStatus::NANORINF) PetscFunctionReturn(PETSC_SUCCESS);
    *status = RecurrenceStatus::OK;
  }
  if (!(PetscRealPart(h2) > 0)) {
    *lucky = PETSC_TRUE;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  const PetscScalar h = PetscSqrtScalar(h2);
  Rij(g, i, i)        = h;
  g->xi[i]            = d[i - 1] / h; /* eta_i = <z_i, w>/h = <z_i, v_i> */
  /* the update's <z_{i+1}, z_{i+1}> completes with the next step's multi-dot (same batch) */
  PetscCall(OpsBatchBegin(g->mode == PCMode::GENERAL ? PETSC_FALSE : PETSC_TRUE));
  PetscCall(OpsSGMRESUpdate(i - 1, g->coef.data() + 1, g->V + 1, w, 1.0 / h, g->xi[i], g->Z[i], g->Z[i + 1], &g->zz_local));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* One chunk of steps i0+1 .. i0+k of a cycle with device-resident scalars (see fusedchunk.hpp) */
struct SGMRESChunk {
  KSP              ksp;
  KSP_FusedSGMRES *g;
  Mat              A;
  PetscInt         i0, k;
  Vec              b; /* the right-hand side when the chunk starts the solve, else NULL */
};

PetscErrorCode SGMRESChunkBody(void *ctx)
{
  SGMRESChunk     *b   = static_cast<SGMRESChunk *>(ctx);
  KSP_FusedSGMRES *g   = b->g;
  Chunker         *c   = &g->chunk;
  ChunkControl    *ctl = ChunkDeviceControl(c);

  PetscFunctionBegin;
  if (g->mode != PCMode::GENERAL) {
    PetscCall(OpsSGMRESChunk(b->A, b->i0, b->k, g->restart, SGMRESKeep(g), ChunkDeviceSlot(c, 0), ctl, b->b, g->mode == PCMode::JACOBI ? g->w : nullptr, g->V, g->Z, ChunkFormOf(c)));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  for (PetscInt j = 1; j <= b->k; ++j) {
    const PetscInt i   = b->i0 + j;
    PetscScalar   *cur = ChunkDeviceSlot(c, j);
    PetscCall(KSPFusedRightOperator(b->ksp, g->mode, g->w, b->A, g->Z[i], g->V[i], b->ksp->work[VEC_WORK]));
    for (PetscInt v = 1; v < i; ++v) g->Vz[v - 1] = g->V[v];
    g->Vz[i - 1] = g->Z[i];
    PetscCall(OpsReduceInto(cur, &ctl->stopped));
    PetscCall(OpsMDot(i, g->Vz.data(), g->V[i], PETSC_TRUE, nullptr));
    PetscCall(OpsReduceInto(cur + g->restart + 1, &ctl->stopped));
    PetscCall(OpsSGMRESUpdateChained(i, g->restart, SGMRESKeep(g), g->V + 1, g->V[i], g->Z[i], g->Z[i + 1], ChunkDeviceSlot(c, j - 1), cur, ctl, j));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The test of a cycle's start with its true residual norm rho: iteration 0 (monitors, history, test) or
   the restart after `its` iterations (the KSP's test and ksp->rnorm only; `estimate`: the estimate it
   replaces); *stop when the solve ends there (a reason, max_it, or rho = 0)                        */
static PetscErrorCode SGMRESCycleTest(KSP ksp, PetscInt its, PetscReal estimate, PetscReal rho, PetscBool *stop)
{
  PetscFunctionBegin;
  if (its > 0) PetscCall(PetscInfo(ksp, "Restart after %" PetscInt_FMT " iterations: estimated residual %g, true residual %g\n", its, (double)estimate, (double)rho));
  PetscCall(KSPFusedCycleTest(ksp, its, rho, stop));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* How SGMRESChunkedCycle() enters its cycle: with z_1 and rho set (SGMRESCycleStart()), or its first
   chunk computing the start of the solve from a zero initial guess, or a restart from the true
   residual in ksp->work[VEC_T]                                                                    */
enum class CycleEntry { ENTERED, SOLVE_START, RESTART };

/* The host's replay of a cycle's chunks (KSPFusedChunkReplay()): R, xi and the estimates of the steps */
struct SGMRESReplay {
  KSP              ksp;
  KSP_FusedSGMRES *g;
  ChunkControl     host; /* the chunk's control block, without the test: the host applies the KSP's own */
  CycleEntry       entry;
  PetscInt         its, i0; /* the iterations before the chunk; its first step is i0 + 1 */
  PetscReal        estimate, *rho, *res;
  PetscInt        *k;
};

/* Iteration 0 or the restart, from the norm the chunk computed */
PetscErrorCode SGMRESReplayStart(void *ctx, const PetscScalar *, PetscScalar *, PetscBool *stop)
{
  SGMRESReplay    *r = static_cast<SGMRESReplay *>(ctx);
  KSP_FusedSGMRES *g = r->g;

  PetscFunctionBegin;
  if (r->entry == CycleEntry::RESTART) g->counters.reductions++; /* as SGMRESCycleStart() counts its norm */
  *r->rho      = r->host.rho;
  *r->res      = *r->rho;
  g->cycle_rho = *r->rho;
  g->zz        = 1;
  PetscCall(SGMRESCycleTest(r->ksp, r->entry == CycleEntry::SOLVE_START ? 0 : r->its, r->estimate, *r->rho, stop));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Step i0 + j, which the backend ran (no cancellation test: its column passed there) */
PetscErrorCode SGMRESReplayStep(void *ctx, PetscInt j, PetscInt, PetscInt performed, const PetscScalar *prev, const PetscScalar *cur, PetscReal *rnorm, PetscBool *stop)
{
  SGMRESReplay    *r = static_cast<SGMRESReplay *>(ctx);
  KSP_FusedSGMRES *g = r->g;
  const PetscInt   m = g->restart, step = r->i0 + j;
  PetscScalar      h, eta;

  PetscFunctionBegin;
  *stop = j > performed ? PETSC_TRUE : PETSC_FALSE;
  if (*stop) PetscFunctionReturn(PETSC_SUCCESS);
  const int fails = SGMRESChunkStep(r->host, j, step, m, -1.0, prev, cur, &h, &eta, r->res);
  PetscCheck(fails < 0, PETSC_COMM_SELF, PETSC_ERR_PLIB, "Step %" PetscInt_FMT " ran on the backend but its column fails on the host", step);
  for (PetscInt q = 1; q < step; ++q) Rij(g, q, step) = cur[q - 1];
  Rij(g, step, step) = h;
  g->xi[step]        = eta;
  *r->k = g->cycle_k = step;
  g->counters.reductions++;
  *rnorm = r->ksp->normtype == KSP_NORM_NONE ? 0.0 : *r->res;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   SGMRESChunkedCycle - the steps of a restart cycle (*rho: its residual norm), k at a time with the
   scalars on the backend; the host replays each chunk's steps (R, xi, estimates, monitors, test).
   entry SOLVE_START: the first chunk starts the solve from a zero initial guess (Z[1] = b / ||b||,
   *rho = ||b|| on return) and the host replays iteration 0 after it; RESTART: the first chunk
   starts the cycle from the true residual r in ksp->work[VEC_T] (Z[1] = r / ||r||, *rho = ||r||), the
   norm the host then tests as the restart's (SGMRESCycleTest(), `estimate`: the one it replaces) -
   one host wait per cycle instead of two.  On return *i is the first step left to the per-step
   path: restart + 1 when the cycle is complete or the solve stopped (also when rho = 0), or a step
   whose column of R needs the host (cancellation, lucky breakdown, NaN).  *its, *k and *res are
   updated as the per-step path does.
*/
PetscErrorCode SGMRESChunkedCycle(KSP ksp, KSP_FusedSGMRES *g, Mat A, CycleEntry entry, PetscReal estimate, PetscReal *rho, PetscInt *i, PetscInt *its, PetscInt *k, PetscReal *res)
{
  const ChunkReplayOps      ops = {nullptr, SGMRESReplayStart, SGMRESReplayStep, nullptr, PETSC_FALSE};
  Chunker                  *c   = &g->chunk;
  const PetscInt            m = g->restart, nd = SGMRESChunkSlot(m);
  std::vector<PetscScalar>  entering;
  std::vector<const void *> key;

  PetscFunctionBegin;
  FusedKSPCallCXX(entering.assign(nd, 0.0));
  PetscCall(KSPFusedChunkReserve(c, nd, PetscMin(c->k, m)));
  entering[m + 1] = 1; /* <z_1, z_1> */
  entering[m + 2] = *rho * *rho;
  while (*i <= m && *its < ksp->max_it && !ksp->reason) {
    const PetscInt i0   = *i - 1;
    SGMRESChunk    body = {ksp, g, A, i0, PetscMin(PetscMin(c->k, m - i0), ksp->max_it - *its), entry == CycleEntry::SOLVE_START ? ksp->vec_rhs : (entry == CycleEntry::RESTART ? ksp->work[VEC_T] : nullptr)};
    SGMRESReplay   replay{ksp, g, {}, entry, *its, i0, estimate, rho, res, k};
    PetscInt       performed;
    PetscBool      stopped;

    key.clear();
    PetscCall(OpsChunkKey(A, {ksp->vec_sol, body.b, g->w, ksp->work[VEC_WORK]}, &key));
    for (PetscInt v = 1; v <= m + 1; ++v) PetscCall(OpsChunkKey(A, {v <= m ? g->V[v] : nullptr, g->Z[v]}, &key));
    PetscCall(KSPFusedPCKernelKey(ksp, &key));
    FusedKSPCallCXX(key.push_back(reinterpret_cast<const void *>((uintptr_t)(i0 * 4 + (PetscInt)g->mode))));
    ChunkHostControl(c)->rho = *rho;
    if (entry == CycleEntry::RESTART)
      PetscCall(KSPFusedChunkRestart(ksp, c, *its, ksp->normtype == KSP_NORM_NONE ? -1 : 0));
    else
      PetscCall(KSPFusedChunkStart(ksp, c, *its, ksp->normtype == KSP_NORM_NONE ? -1 : 0, entry == CycleEntry::SOLVE_START ? nullptr : entering.data()));
    PetscCall(KSPFusedChunkRun(c, body.k, PETSC_TRUE, key, SGMRESChunkBody, &body));
    PetscCall(OpsMarkWritten({ksp->work[VEC_WORK]}));
    if (entry != CycleEntry::ENTERED) PetscCall(OpsMarkWritten({g->Z[1]}));
    for (PetscInt v = i0 + 1; v <= i0 + body.k; ++v) PetscCall(OpsMarkWritten({g->V[v], g->Z[v + 1]}));
    performed           = ChunkPerformed(c, body.k);
    replay.host         = *ChunkHostControl(c);
    replay.host.normdot = -1;
    PetscCall(KSPFusedChunkReplay(ksp, c, body.k, performed, entry != CycleEntry::ENTERED ? PETSC_TRUE : PETSC_FALSE, ops, &replay, entering.data(), its, &stopped));
    entry = CycleEntry::ENTERED;
    if (stopped) {
      *i = m + 1;
      break;
    }
    *i = i0 + performed + 1;
    if (performed < body.k && ChunkHostControl(c)->stage == 1) { /* the column of step *i needs the host */
      PetscCall(PetscInfo(ksp, "Step %" PetscInt_FMT " of the cycle: its column of R needs the host (explicit norm, lucky breakdown or NaN); the cycle goes on step by step\n", *i));
      g->zz_local = ChunkHostSlot(c, performed)[m + 1];
      break;
    }
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* x += M^{-1} Z_k y (left preconditioning: x += Z_k y) with R_k y = rho xi_{1..k} */
PetscErrorCode SGMRESUpdateSolution(KSP ksp, KSP_FusedSGMRES *g, PetscInt k, PetscReal rho, Vec x)
{
  std::vector<PetscScalar> y, negy;

  PetscFunctionBegin;
  if (k == 0) PetscFunctionReturn(PETSC_SUCCESS);
  FusedKSPCallCXX(y.assign(k + 1, 0.0); negy.assign(k + 1, 0.0));
  for (PetscInt i = k; i >= 1; --i) {
    PetscScalar s = rho * g->xi[i]; /* xi_i = rho eta_i */
    for (PetscInt j = i + 1; j <= k; ++j) s -= Rij(g, i, j) * y[j];
    y[i] = s / Rij(g, i, i);
  }
  for (PetscInt j = 1; j <= k; ++j) negy[j - 1] = -y[j];
  PetscCall(KSPFusedRightUpdate(ksp, g->left ? PCMode::NONE : g->mode, g->w, k, negy.data(), g->Z + 1, x, ksp->work[VEC_T], ksp->work[VEC_T2]));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The start of a restart cycle on the host: the true residual r = b - A x (right preconditioning:
   unpreconditioned; left: M^{-1} r), rho = ||r||, its test (SGMRESCycleTest()), z_1 = r / rho; *stop
   when the solve ends here                                                                         */
PetscErrorCode SGMRESCycleStart(KSP ksp, KSP_FusedSGMRES *g, Mat A, PetscInt its, PetscReal estimate, PetscReal *rho, PetscBool *stop)
{
  PetscFunctionBegin;
  if (g->left)
    PetscCall(KSPFusedResidualNorm(ksp, A, ksp->work[VEC_T], g->Z[1], g->mode, g->w, &g->counters, rho));
  else
    PetscCall(KSPFusedResidualNorm(ksp, A, g->Z[1], nullptr, g->mode, g->w, &g->counters, rho));
  PetscCall(SGMRESCycleTest(ksp, its, estimate, *rho, stop));
  if (*stop) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(VecScale(g->Z[1], 1.0 / *rho));
  g->zz        = 1;
  g->cycle_rho = *rho;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPSolve_FusedSGMRES(KSP ksp)
{
  KSP_FusedSGMRES *g = static_cast<KSP_FusedSGMRES *>(ksp->data);
  Mat              A;
  PetscInt         its      = 0;
  PetscReal        estimate = -1;

  TrueResidualGuard guard;

  PetscFunctionBegin;
  PetscCall(KSPGetOperators(ksp, &A, NULL));
  PetscCall(KSPFusedPCMode(ksp, ksp->work[VEC_T], &g->mode, &g->w));
  g->left     = ksp->pc_side == PC_LEFT && g->mode != PCMode::NONE ? PETSC_TRUE : PETSC_FALSE;
  g->nreorth  = 0;
  g->counters = SolveCounters();
  g->cycle_k  = 0;
  ksp->reason = KSP_CONVERGED_ITERATING;
  if (ksp->guess_zero) PetscCall(VecSet(ksp->vec_sol, 0.0));
  {
    const char *unsupported;
    PetscCall(KSPFusedChunkOperands(&g->chunk, A, {ksp->vec_sol, ksp->vec_rhs, g->w, ksp->work[VEC_WORK], g->V[1], g->Z[1]}, &unsupported));
    if (!unsupported && g->mode == PCMode::GENERAL) {
      PetscBool pckernel;
      PetscCall(KSPFusedPCIsKernel(ksp, &pckernel));
      if (!pckernel)
        unsupported = "a general PC runs with k = 1";
      else if (g->chunk.parallel)
        unsupported = "a general PC with several processes runs with k = 1";
    }
    if (!unsupported && g->left) unsupported = "left preconditioning runs with k = 1";
    if (!unsupported && g->cgs2) unsupported = "CGS2 runs with k = 1";
    if (!unsupported && g->restart - 1 > 240) unsupported = "a restart above 241 runs with k = 1";
    g->chunk.whole = g->mode == PCMode::GENERAL ? PETSC_FALSE : PETSC_TRUE;
    PetscCall(KSPFusedChunkInterval(ksp, &g->chunk, unsupported));
    if (!unsupported && g->chunk.k > 1 && g->chunk.settings.interval < 1) { /* default: one chunk per restart cycle */
      g->chunk.k   = g->restart;
      g->chunk.why = "default: one chunk per restart cycle";
    }
    if (g->chunk.k > g->restart) g->chunk.k = g->restart;
  }

  while (PETSC_TRUE) {
    PetscReal rho = 0, res = 0;
    PetscInt  k = 0, i = 1;

    /* the cycle's first chunk computes its start (the solve's from a zero initial guess, or the restart's; one process) */
    const PetscBool chunk_starts = g->mode != PCMode::GENERAL && !g->left && !g->chunk.parallel && KSPFusedChunkMayStart(ksp, &g->chunk, its > 0 ? PETSC_TRUE : PETSC_FALSE) ? PETSC_TRUE : PETSC_FALSE;

    if (chunk_starts && its == 0) {
      PetscCall(SGMRESChunkedCycle(ksp, g, A, CycleEntry::SOLVE_START, estimate, &rho, &i, &its, &k, &res));
      if (k == 0 && (ksp->reason || rho == 0)) break; /* stopped at iteration 0 */
    } else if (chunk_starts) {
      PetscCall(KSP_MatMult(ksp, A, ksp->vec_sol, ksp->work[VEC_T]));
      PetscCall(VecAYPX(ksp->work[VEC_T], -1.0, ksp->vec_rhs));
      PetscCall(SGMRESChunkedCycle(ksp, g, A, CycleEntry::RESTART, estimate, &rho, &i, &its, &k, &res));
      if (k == 0 && (ksp->reason || rho == 0)) break; /* stopped at the restart */
    } else {
      PetscBool stop = PETSC_FALSE;

      PetscCall(SGMRESCycleStart(ksp, g, A, its, estimate, &rho, &stop));
      if (stop) break;
      res = rho;
      if (g->chunk.k > 1) PetscCall(SGMRESChunkedCycle(ksp, g, A, CycleEntry::ENTERED, estimate, &rho, &i, &its, &k, &res));
    }
    for (; i <= g->restart && its < ksp->max_it && !ksp->reason; ++i) {
      PetscBool        lucky;
      RecurrenceStatus status = RecurrenceStatus::OK;
      PetscCall(SGMRESStep(ksp, g, A, i, &lucky, &status));
      if (KSPFusedStatusStops(ksp, status)) break;
      if (lucky) break;
      k = g->cycle_k = i;
      its++;
      /* ||r_{i-1}|| = rho ||z_i|| (explicit, from the multi-dot), then one factor sqrt(1 - c^2) */
      const PetscReal prev = i > 1 ? rho * PetscSqrtReal(PetscAbsScalar(g->zz)) : rho;
      const PetscReal c    = prev > 0 ? PetscMin(1.0, PetscAbsScalar(rho * g->xi[i]) / prev) : 1.0;
      res                  = prev * PetscSqrtReal(PetscMax(0.0, (1.0 - c) * (1.0 + c)));
      PetscCall(KSPFusedMonitorAndTest(ksp, its, ksp->normtype == KSP_NORM_NONE ? 0.0 : res));
      if (ksp->reason) break;
    }
    if (OpsBatchIsOpen()) PetscCall(OpsBatchEnd());
    estimate = res;
    PetscCall(SGMRESUpdateSolution(ksp, g, k, rho, ksp->vec_sol));
    g->cycle_k = 0;
    {
      PetscReal truenorm;
      PetscBool replaced, stop;

      PetscCall(KSPFusedCycleEnd(ksp, g->mode, g->w, g->left, ksp->work[VEC_T], ksp->work[VEC_T2], k, its, &guard, &truenorm, &replaced, &stop));
      if (replaced) PetscCall(PetscInfo(ksp, "Iteration %" PetscInt_FMT ": estimated residual %g passed but true residual %g did not; restarting\n", its, (double)res, (double)truenorm));
      if (stop) break;
    }
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The current iterate: x plus the part of the cycle not yet added to it (for -ksp_monitor_true_residual) */
PetscErrorCode KSPBuildSolution_FusedSGMRES(KSP ksp, Vec v, Vec *V)
{
  KSP_FusedSGMRES *g      = static_cast<KSP_FusedSGMRES *>(ksp->data);
  Vec              target = v ? v : ksp->work[VEC_SOL];

  PetscFunctionBegin;
  PetscCall(VecCopy(ksp->vec_sol, target));
  PetscCall(SGMRESUpdateSolution(ksp, g, g->cycle_k, g->cycle_rho, target));
  if (V) *V = target;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPView_FusedSGMRES(KSP ksp, PetscViewer viewer)
{
  KSP_FusedSGMRES *g = static_cast<KSP_FusedSGMRES *>(ksp->data);
  PetscBool        ascii;

  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERASCII, &ascii));
  if (ascii)
    PetscCall(PetscViewerASCIIPrintf(viewer, "  restart=%" PetscInt_FMT ", orthogonalization: %s\n", g->restart,
                                     g->cgs2 ? "classical Gram-Schmidt with one reorthogonalization pass (CGS2)" : "classical Gram-Schmidt, a second pass where it lost orthogonality (selective CGS2)"));
  if (ascii) PetscCall(PetscViewerASCIIPrintf(viewer, "  %s preconditioning%s\n", ksp->pc_side == PC_LEFT ? "left" : "right", ksp->pc_side == PC_LEFT ? " (the PC after the product, one step at a time)" : ""));
  if (ascii) PetscCall(PetscViewerASCIIPrintf(viewer, "  last solve: %" PetscInt_FMT " steps reorthogonalized (second Gram-Schmidt pass when h^2 < %g <w,w>)\n", g->nreorth, (double)SGMRESKeep(g)));
  PetscCall(KSPFusedViewChunked<KSP_FusedSGMRES>(ksp, viewer,
                                                 g->cgs2 ? "5 per inner step (SpMV, multi-dot, update, multi-dot, update + scale), 2 reductions"
                                                         : "3 per inner step (SpMV, multi-dot, update + scale), or one persistent kernel per chunk (below), 1 reduction; one host wait per step with k = 1, per chunk of k steps otherwise"));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPSetFromOptions_FusedSGMRES(KSP ksp, PetscOptionItems PetscOptionsObject)
{
  KSP_FusedSGMRES *g = static_cast<KSP_FusedSGMRES *>(ksp->data);

  PetscFunctionBegin;
  PetscOptionsHeadBegin(PetscOptionsObject, "KSP fused simpler GMRES options");
  PetscCall(KSPFusedGMRESRestartOption<KSP_FusedSGMRES>(PetscOptionsObject, ksp, "Number of Krylov directions before restart"));
  PetscCall(PetscOptionsReal("-ksp_fusedsgmres_reorth_tol", "Reorthogonalize a step (one more reduction) when the projection keeps less than this fraction of <w,w> (0: only against cancellation; see -ksp_fusedsgmres_cgs2 for every step)",
                             "KSPFUSEDSGMRES", g->reorth_tol, &g->reorth_tol, NULL));
  PetscCall(PetscOptionsBool("-ksp_fusedsgmres_cgs2", "One reorthogonalization pass (CGS2)", "KSPFusedSGMRESSetCGS2", g->cgs2, &g->cgs2, NULL));
  PetscCall(KSPFusedChunkSetFromOptions(PetscOptionsObject, &g->chunk));
  PetscOptionsHeadEnd();
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPFusedSGMRESSetCGS2_FusedSGMRES(KSP ksp, PetscBool cgs2)
{
  PetscFunctionBegin;
  static_cast<KSP_FusedSGMRES *>(ksp->data)->cgs2 = cgs2;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPFusedSGMRESGetCGS2_FusedSGMRES(KSP ksp, PetscBool *cgs2)
{
  PetscFunctionBegin;
  *cgs2 = static_cast<KSP_FusedSGMRES *>(ksp->data)->cgs2;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPReset_FusedSGMRES(KSP ksp)
{
  KSP_FusedSGMRES *g = static_cast<KSP_FusedSGMRES *>(ksp->data);

  PetscFunctionBegin;
  if (g->V) PetscCall(VecDestroyVecs(g->nV, &g->V));
  if (g->Z) PetscCall(VecDestroyVecs(g->nV + 1, &g->Z));
  g->nV = 0;
  PetscCall(VecDestroy(&g->w));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* KSPFusedSGMRESSetCGS2() and KSPFusedSGMRESGetCGS2() */
const KSPFusedMethod SGMRESCGS2Methods[] = {
    {"KSPFusedSGMRESSetCGS2_C", (PetscErrorCodeFn *)KSPFusedSGMRESSetCGS2_FusedSGMRES},
    {"KSPFusedSGMRESGetCGS2_C", (PetscErrorCodeFn *)KSPFusedSGMRESGetCGS2_FusedSGMRES},
};

PetscErrorCode KSPDestroy_FusedSGMRES(KSP ksp)
{
  PetscFunctionBegin;
  PetscCall(KSPReset_FusedSGMRES(ksp));
  PetscCall(KSPFusedComposeGMRESRestart<KSP_FusedSGMRES>(ksp, PETSC_FALSE));
  PetscCall(KSPFusedComposeMethods(ksp, PETSC_STATIC_ARRAY_LENGTH(SGMRESCGS2Methods), SGMRESCGS2Methods, PETSC_FALSE));
  PetscCall(KSPFusedDestroyChunked<KSP_FusedSGMRES>(ksp));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The operations KSPCreate_FusedSGMRES() sets */
const KSPFusedOps FusedSGMRESOps = {KSPSetUp_FusedSGMRES, KSPSolveScoped<KSPSolve_FusedSGMRES>, KSPDestroy_FusedSGMRES, KSPView_FusedSGMRES, KSPSetFromOptions_FusedSGMRES, KSPReset_FusedSGMRES, KSPBuildSolution_FusedSGMRES};

} // namespace
} // namespace fusedksp

/*@
  KSPFusedSGMRESSetCGS2 - Adds one reorthogonalization pass (CGS2) to the classical Gram-Schmidt
  process of `KSPFUSEDSGMRES`.

  Logically Collective

  Input Parameters:
+ ksp  - the solver
- cgs2 - `PETSC_TRUE` to reorthogonalize

  Options Database Key:
. -ksp_fusedsgmres_cgs2 - reorthogonalize

  Level: intermediate

  Note:
  Use it when GMRES stagnates or its iteration counts change with the number of MPI processes, with
  large restarts, or for ill-conditioned nonsymmetric problems: classical Gram-Schmidt alone can lose
  orthogonality there.  Each inner step then costs one more global reduction and two more kernels.

.seealso: `KSPFUSEDSGMRES`, `KSPGMRESSetRestart()`
@*/
PetscErrorCode KSPFusedSGMRESSetCGS2(KSP ksp, PetscBool cgs2)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(ksp, KSP_CLASSID, 1);
  PetscValidLogicalCollectiveBool(ksp, cgs2, 2);
  PetscTryMethod(ksp, "KSPFusedSGMRESSetCGS2_C", (KSP, PetscBool), (ksp, cgs2));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*@
  KSPFusedSGMRESGetCGS2 - Whether `KSPFUSEDSGMRES` reorthogonalizes (see `KSPFusedSGMRESSetCGS2()`).

  Not Collective

  Input Parameter:
. ksp - the solver

  Output Parameter:
. cgs2 - `PETSC_TRUE` if it reorthogonalizes

  Level: intermediate

.seealso: `KSPFusedSGMRESSetCGS2()`
@*/
PetscErrorCode KSPFusedSGMRESGetCGS2(KSP ksp, PetscBool *cgs2)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(ksp, KSP_CLASSID, 1);
  PetscUseMethod(ksp, "KSPFusedSGMRESGetCGS2_C", (KSP, PetscBool *), (ksp, cgs2));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*MC
   KSPFUSEDSGMRES - "fusedsgmres" - Pipelined simpler GMRES(m) with kernel fusion (Walker & Zhou;
   Rupp et al., ACM TOMS, Algorithm 6) in its residual-based form (Jiranek, Rozloznik & Gutknecht),
   right (default) or left preconditioned.  Each inner step is an SpMV, one multi-dot of the new vector against the
   basis, the current residual and itself, one global reduction, and one fused "subtract projections,
   normalize, update the residual" kernel; the residual norm comes from xi = <r_{i-1}, v_i>.

   Options Database Keys:
+  -ksp_type fusedsgmres - selects this solver
.  -ksp_gmres_restart <m> - restart (default 30); `KSPGMRESSetRestart()` works too
.  -ksp_fusedsgmres_cgs2 - one reorthogonalization pass (see `KSPFusedSGMRESSetCGS2()` for when to use it)
.  -ksp_fused_check_interval <k> - steps between host checks inside a restart cycle (default on the GPU: one chunk per cycle, see `KSPFusedSetCheckInterval()`)
.  -ksp_fused_graph <bool> - record a whole-cycle chunk as a CUDA graph and replay it
-  -ksp_fused_persistent <bool> - run a chunk as one persistent kernel on the CUDA backend (restart <= 128, `PCNONE` or `PCJACOBI`; up to restart 30 and 16K rows a resident kernel of one thread block or one cluster; see `KSPFusedSetUsePersistent()`)

   Level: beginner

   Notes:
   Right preconditioning by default (the residual norm is the true, unpreconditioned one);
   `-ksp_pc_side left` gives `KSPGMRES`'s default, the preconditioned residual norm (the same
   iterations as `KSPGMRES` to the same rtol), with the PC applied after the product (Jacobi in the
   product's kernel, other PCs through `PCApply()`) and one step at a time (k = 1).  A cycle ends
   early when the estimated residual meets the tolerance; the true residual is then computed and
   decides, and it is recomputed at every restart.  At max_it the solve stops after the cycle's
   update with `KSP_DIVERGED_ITS` and the estimated residual, as `KSPGMRES` does.  With chunks
   (`PCNONE` or `PCJACOBI`), a zero initial guess and `KSPConvergedDefault()` or `KSPConvergedSkip()`,
   the first chunk also computes the start of the solve on the backend (||b|| and z_1 = b/||b||, no
   host round trip); iteration 0 is then monitored and tested after that chunk, with the other
   iterations it ran.  Likewise the first chunk of every later cycle computes the restart: r = b - A x
   queued before it, ||r|| and z_1 = r/||r|| inside it, tested as the restart's true residual after
   it - one host wait per cycle.  Each inner step makes one blocking
   `MPI_Allreduce()` of its multi-dot (two with CGS2): the update of the new basis vector needs
   its projections, so there is no independent work to overlap with an `MPI_Iallreduce()`.

.seealso: `KSPFUSEDCG`, `KSPFUSEDBCGS`, `KSPGMRES`, `KSPFusedSGMRESSetCGS2()`
M*/
PETSC_INTERN PetscErrorCode KSPCreate_FusedSGMRES(KSP ksp)
{
  PetscFunctionBegin;
  PetscCall(fusedksp::KSPFusedCreateChunked<fusedksp::KSP_FusedSGMRES>(ksp, fusedksp::FusedSGMRESOps, {{KSP_NORM_UNPRECONDITIONED, PC_RIGHT}, {KSP_NORM_PRECONDITIONED, PC_LEFT}}));
  ksp->guess_not_read = PETSC_TRUE; /* KSPSolve() need not zero x: the solve zeroes it itself */
  PetscCall(fusedksp::KSPFusedComposeGMRESRestart<fusedksp::KSP_FusedSGMRES>(ksp, PETSC_TRUE));
  PetscCall(fusedksp::KSPFusedComposeMethods(ksp, PETSC_STATIC_ARRAY_LENGTH(fusedksp::SGMRESCGS2Methods), fusedksp::SGMRESCGS2Methods, PETSC_TRUE));
  PetscFunctionReturn(PETSC_SUCCESS);
}
