/*
   KSPFUSEDBICG: preconditioned biconjugate gradients with kernel fusion, one global reduction per iteration (seed 004,
   Aliaga et al.: the recurrence of A and the one of A^T are independent within an iteration).

   The method is KSPBICG's (left preconditioning; M^{-1} = PCApply, M^{-T} = PCApplyTranspose): with r~_0 = r_0,
       z = M^{-1} r,  z~ = M^{-T} r~,  rho_i = <z_i, r~_i>,  beta_{i-1} = rho_i / rho_{i-1},
       p = z + beta p,  p~ = z~ + beta p~,  q = A p,  q~ = A^T p~,  alpha_i = rho_i / <q_i, p~_i>,
       x += alpha p,  r -= alpha q,  r~ -= alpha q~,
   which needs three reductions per iteration (rho, <q,p~> and the norm), each waiting for the previous step.

   Derivation of the one-reduction form.  With u_i = M^{-1} q_i and u~_i = M^{-T} q~_i, the preconditioned residuals
   follow z_{i+1} = z_i - alpha u_i and z~_{i+1} = z~_i - alpha u~_i (exact: M^{-1} is linear), so
       rho_{i+1} = <z_i - alpha u_i, r~_i - alpha q~_i>
                 = rho_i - alpha (<u_i, r~_i> + <z_i, q~_i>) + alpha^2 <u_i, q~_i>,
   known from dot products of iteration i before z_{i+1} and r~_{i+1} exist: beta_i = rho_{i+1} / rho_i is predicted, so
   the updates of x, r, z, p (and of r~, z~, p~) run in one pass each.  The next iteration recomputes rho_{i+1} =
   <z_{i+1}, r~_{i+1}> directly and takes alpha from it (predict and recompute, as fusedcg does; Chen & Carson), so the
   iterates follow KSPBICG's to rounding.  <q, p~> = <A p, p~> is computed as <p, A^T p~> = <p, q~>, fused into the
   transposed product.  One iteration:
     A side   (1) x += alpha p; r -= alpha q; z = w.*r (Jacobi) | z -= alpha u (PCApply) | z = r; p = z + beta p;
                  partial <r,z>, <r,r>, <z,z>                                           (OpsCGUpdate)
              (2) q = A p                                                                  (OpsApplyOperator)
              (3) u = M^{-1} q: inline w.*q for Jacobi (no kernel), PCApply otherwise
     A^T side (4) x~ += alpha p~; r~ -= alpha q~; z~ likewise; p~ = z~ + beta p~               (OpsCGUpdate)
              (5) partial <z,r~>, <u,r~>                                                   (OpsDots)
              (6) q~ = A^T p~ with partial <p,q~>, <z,q~>, <u,q~>                          (OpsApplyOperatorTranspose)
              (7) u~ = M^{-T} q~: inline for Jacobi, PCApplyTranspose otherwise
     one reduction of the 8 values (one MPI_Allreduce), then alpha, beta and the norm on the host
     (src/core/recurrences.hpp, BiCGCoefficients()).
   With PCNONE or PCJACOBI that is 5 kernels and one device->host copy of partial sums per iteration (a MATMPIAIJFUSED
   transposed product is MatMultTranspose() on the device plus a dot-product kernel: 6).  x~ is the iterate of the
   dual system A^T x~ = r_0 that BiCG solves alongside; the fused update computes it with the residual, nothing reads it.
   The products and preconditioner applications of an iteration run before its convergence test (they complete the
   same reduction), so the last iteration does one product with A and one with A^T more than KSPBICG.

   Two streams.  Steps (1)-(3) read and write only the A-side vectors and (4), (6), (7) only the A^T-side ones; (5) and
   the dot products of (6) read both.  The calls are grouped so that a backend with a second stream (the CUDA backend
   has one stream per solve today, Backend in backend.hpp has no notion of another) can run (1)-(3) on one stream and
   (4), (6)'s product and (7) on another, as seed 004 does: what that needs is a stream argument (or a "side" scope
   like the batches of OpsBatchBegin()) on the fused operations and the product of MATSEQAIJFUSED, an event that
   joins the two streams before (5) and the dot products of (6) (split from the transposed product, or the product
   started after the join), PCApply()/PCApplyTranspose() of a general preconditioner on the stream of its side (PETSc's
   PCs use the default stream), and the partial sums of both sides in the one copy to the host.  Until then both sides
   run in order on one stream.

   Norms (as KSPBICG): preconditioned sqrt<z,z> (default), unpreconditioned sqrt<r,r>, none.  Breakdown: rho = 0 stops
   with KSP_DIVERGED_BREAKDOWN_BICG (KSPBICG's reason), <p~, A p> = 0 with KSP_DIVERGED_BREAKDOWN; NaN or Inf with
   KSP_DIVERGED_NANORINF.  When the recurrence residual passes the (default) convergence test, the true residual b - A x
   is checked; if it does not pass, the solve restarts from it (r~ = r), so "converged" means the true residual met the
   tolerance.
*/
#include "ksp/fusedcommon.hpp"

namespace fusedksp
{
namespace
{

struct KSP_FusedBiCG {
  Vec           w    = nullptr; /* Jacobi weights */
  PCMode        mode = PCMode::NONE;
  SolveCounters counters;
};

enum { VEC_R, VEC_Z, VEC_P, VEC_Q, VEC_U, VEC_RT, VEC_ZT, VEC_PT, VEC_QT, VEC_UT, VEC_XT, VEC_T, VEC_T2, NWORK };

/* The dot-product operand that is z (side 0) or u (side 1) in the given mode: w.*r or w.*q (Jacobi, not stored), r or
   q (no preconditioner), the stored vector (general PC) */
OpDot PreconditionedSpec(const KSP_FusedBiCG *bi, const Vec *V, int side)
{
  const Vec plain = side ? V[VEC_Q] : V[VEC_R], stored = side ? V[VEC_U] : V[VEC_Z];

  switch (bi->mode) {
  case PCMode::JACOBI:
    return {DotKind::DOT_VECTOR_W, plain, bi->w};
  case PCMode::NONE:
    return {DotKind::DOT_VECTOR, plain, nullptr};
  default:
    return {DotKind::DOT_VECTOR, stored, nullptr};
  }
}

/* The A side of an iteration: with update, x, r, z, p from alpha and beta (<r,z>, <r,r>, <z,z> into d[BICG_RZ..]);
   then q = A p and u = M^{-1} q (a general PC; inline otherwise) */
PetscErrorCode SideA(KSP ksp, KSP_FusedBiCG *bi, Mat A, Vec *V, PetscBool update, PetscScalar alpha, PetscScalar beta, PetscScalar *d)
{
  const PetscBool general = bi->mode == PCMode::GENERAL ? PETSC_TRUE : PETSC_FALSE;

  PetscFunctionBegin;
  if (update) PetscCall(OpsCGUpdate(alpha, beta, ksp->vec_sol, V[VEC_R], V[VEC_Z], V[VEC_P], V[VEC_Q], general ? V[VEC_U] : nullptr, bi->mode == PCMode::JACOBI ? bi->w : nullptr, d + BICG_RZ));
  PetscCall(OpsApplyOperator(A, nullptr, nullptr, V[VEC_P], V[VEC_Q], nullptr, 0, nullptr, nullptr));
  if (general) PetscCall(KSPFusedApplyPC(ksp, V[VEC_Q], V[VEC_U]));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The A^T side: with update, x~, r~, z~, p~ (their dot products into unused[3]); the dot products of r~ with z and u;
   q~ = A^T p~ with <p,q~>, <z,q~>, <u,q~>; u~ = M^{-T} q~ (a general PC).  Reads the A side's p, z, u. */
PetscErrorCode SideAt(KSP ksp, KSP_FusedBiCG *bi, Mat A, Vec *V, PetscBool update, PetscScalar alpha, PetscScalar beta, PetscScalar *d, PetscScalar *unused)
{
  const PetscBool general = bi->mode == PCMode::GENERAL ? PETSC_TRUE : PETSC_FALSE;
  const OpDot     zu[2]   = {PreconditionedSpec(bi, V, 0), PreconditionedSpec(bi, V, 1)};
  const OpDot     pzu[3]  = {{DotKind::DOT_VECTOR, V[VEC_P], nullptr}, zu[0], zu[1]};

  PetscFunctionBegin;
  if (update) PetscCall(OpsCGUpdate(alpha, beta, V[VEC_XT], V[VEC_RT], V[VEC_ZT], V[VEC_PT], V[VEC_QT], general ? V[VEC_UT] : nullptr, bi->mode == PCMode::JACOBI ? bi->w : nullptr, unused));
  PetscCall(OpsDots(nullptr, V[VEC_RT], 2, zu, d + BICG_RHO));
  PetscCall(OpsApplyOperatorTranspose(A, V[VEC_PT], V[VEC_QT], 3, pzu, d + BICG_PQ));
  if (general) PetscCall(KSPFusedApplyPCTranspose(ksp, V[VEC_QT], V[VEC_UT]));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Starts (or restarts) BiCG from the residual in r: r~ = r, x~ = 0, z = M^{-1} r, z~ = M^{-T} r~, p = z, p~ = z~, both
   sides' products, and the reduced values in d */
PetscErrorCode BiCGStart(KSP ksp, KSP_FusedBiCG *bi, Mat A, Vec *V, PetscScalar *d)
{
  const OpDot rz_rr[2] = {{DotKind::DOT_INPUT, nullptr}, {DotKind::DOT_SELF, nullptr}};
  const OpDot zz       = {DotKind::DOT_SELF, nullptr};
  PetscScalar unused[3];

  PetscFunctionBegin;
  PetscCall(VecCopy(V[VEC_R], V[VEC_RT]));
  PetscCall(VecSet(V[VEC_XT], 0.0));
  PetscCall(KSPFusedPCApply(ksp, bi->mode, bi->w, V[VEC_R], V[VEC_Z]));
  PetscCall(KSPFusedPCApplyTranspose(ksp, bi->mode, bi->w, V[VEC_RT], V[VEC_ZT]));
  PetscCall(VecCopy(V[VEC_Z], V[VEC_P]));
  PetscCall(VecCopy(V[VEC_ZT], V[VEC_PT]));
  PetscCall(OpsBatchBegin(bi->mode == PCMode::GENERAL ? PETSC_FALSE : PETSC_TRUE));
  PetscCall(OpsDots(V[VEC_Z], V[VEC_R], 2, rz_rr, d + BICG_RZ));
  PetscCall(OpsDots(nullptr, V[VEC_Z], 1, &zz, d + BICG_ZZ));
  PetscCall(SideA(ksp, bi, A, V, PETSC_FALSE, 0, 0, d));
  PetscCall(SideAt(ksp, bi, A, V, PETSC_FALSE, 0, 0, d, unused));
  PetscCall(OpsBatchEnd());
  PetscCall(OpsAllreduce(PetscObjectComm((PetscObject)ksp), d, BICG_NSLOT, &bi->counters));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscReal BiCGNorm(KSP ksp, const PetscScalar *d)
{
  return KSPFusedNormOf(d, KSPFusedNormDot(ksp, BICG_ZZ, BICG_RR, -1));
}

/* The operator needs MatMultTranspose() and a general preconditioner PCApplyTranspose(), as in KSPBICG */
PetscErrorCode BiCGCheckTransposes(KSP ksp, KSP_FusedBiCG *bi, Mat A)
{
  PetscBool has;
  PC        pc;

  PetscFunctionBegin;
  PetscCheck(!ksp->transpose_solve, PetscObjectComm((PetscObject)ksp), PETSC_ERR_SUP, "KSPSolveTranspose() is not supported by %s; use KSPSolve() with the transposed operator, or KSPBICG", KSPFUSEDBICG);
  PetscCall(MatHasOperation(A, MATOP_MULT_TRANSPOSE, &has));
  PetscCheck(has, PetscObjectComm((PetscObject)ksp), PETSC_ERR_SUP, "%s needs MatMultTranspose() of the operator, which the matrix type %s does not provide", KSPFUSEDBICG, ((PetscObject)A)->type_name);
  if (bi->mode != PCMode::GENERAL) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(KSPFusedPCHasTranspose(pc, &has));
  PetscCheck(has, PetscObjectComm((PetscObject)ksp), PETSC_ERR_SUP, "%s needs PCApplyTranspose() of the preconditioner, which the PC type %s does not provide", KSPFUSEDBICG, ((PetscObject)pc)->type_name);
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPSolve_FusedBiCG(KSP ksp)
{
  KSP_FusedBiCG *bi = static_cast<KSP_FusedBiCG *>(ksp->data);
  Vec           *V  = ksp->work;
  Mat            A;
  PetscScalar    d[BICG_NSLOT] = {}, unused[3], alpha = 0, beta = 0;
  PetscReal      rnorm;

  TrueResidualGuard guard;

  PetscFunctionBegin;
  PetscCall(KSPGetOperators(ksp, &A, NULL));
  PetscCall(KSPFusedPCMode(ksp, V[VEC_T], &bi->mode, &bi->w));
  PetscCall(BiCGCheckTransposes(ksp, bi, A));
  bi->counters = SolveCounters();
  ksp->reason  = KSP_CONVERGED_ITERATING;
  if (ksp->guess_zero) {
    PetscCall(VecCopy(ksp->vec_rhs, V[VEC_R]));
  } else {
    PetscCall(KSP_MatMult(ksp, A, ksp->vec_sol, V[VEC_R]));
    PetscCall(VecAYPX(V[VEC_R], -1.0, ksp->vec_rhs));
  }
  PetscCall(BiCGStart(ksp, bi, A, V, d));
  PetscCall(KSPFusedMonitorAndTest(ksp, 0, BiCGNorm(ksp, d)));
  for (PetscInt it = 1; !ksp->reason; ++it) {
    if (it > ksp->max_it) {
      ksp->reason = KSP_DIVERGED_ITS;
      break;
    }
    if (KSPFusedStatusStops(ksp, BiCGCoefficients(d, &alpha, &beta))) {
      if (d[BICG_RHO] == 0.0) ksp->reason = KSP_DIVERGED_BREAKDOWN_BICG;
      break;
    }
    /* the A side, then the A^T side (see the top: the two streams); their dot products come back together */
    PetscCall(OpsBatchBegin(bi->mode == PCMode::GENERAL ? PETSC_FALSE : PETSC_TRUE));
    PetscCall(SideA(ksp, bi, A, V, PETSC_TRUE, alpha, beta, d));
    PetscCall(SideAt(ksp, bi, A, V, PETSC_TRUE, alpha, beta, d, unused));
    PetscCall(OpsBatchEnd());
    PetscCall(OpsAllreduce(PetscObjectComm((PetscObject)ksp), d, BICG_NSLOT, &bi->counters));
    rnorm = BiCGNorm(ksp, d);
    PetscCall(KSPFusedMonitorAndTest(ksp, it, rnorm));
    if (ksp->reason > 0) {
      PetscBool replace;
      PetscReal truenorm;

      PetscCall(KSPFusedTrueResidualReplace(ksp, bi->mode, bi->w, PETSC_TRUE, V[VEC_T], V[VEC_T2], &guard, &truenorm, &replace));
      if (replace) {
        PetscCall(PetscInfo(ksp, "Iteration %" PetscInt_FMT ": recurrence residual %g passed but true residual %g did not; restarting from it\n", it, (double)rnorm, (double)truenorm));
        PetscCall(VecCopy(V[VEC_T], V[VEC_R]));
        PetscCall(BiCGStart(ksp, bi, A, V, d));
        ksp->rnorm = BiCGNorm(ksp, d);
      }
    }
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPView_FusedBiCG(KSP ksp, PetscViewer viewer)
{
  KSP_FusedBiCG *bi = static_cast<KSP_FusedBiCG *>(ksp->data);

  PetscFunctionBegin;
  PetscCall(KSPFusedViewCommon(ksp, viewer, bi->mode, "5 per iteration (A side: x/r/z/p update + 3 dots, SpMV; A^T side: r~/z~/p~ update, 2 dots of r~, SpMV with A^T + 3 dots), 1 reduction of 8 values; both sides on one stream"));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The operations KSPCreate_FusedBiCG() sets */
const KSPFusedOps FusedBiCGOps = {KSPFusedSetUpWork<NWORK>, KSPSolveScoped<KSPSolve_FusedBiCG>, KSPFusedDestroyData<KSP_FusedBiCG>, KSPView_FusedBiCG};

} // namespace
} // namespace fusedksp

/*MC
   KSPFUSEDBICG - "fusedbicg" - Preconditioned biconjugate gradients (`KSPBICG`) with kernel fusion and one global
   reduction per iteration (Aliaga, Dufrechou, Ezzatti, Quintana-Orti: the A and A^T recurrences of BiCG run as two
   independent groups of operations).

   Each iteration runs, on the A side, the update of x, r, z, p with the partial sums of <r,r> and <z,z> and the product
   q = A p; on the A^T side, the update of r~, z~, p~, the partial sums of <z,r~> and <M^{-1}q,r~>, and the product
   q~ = A^T p~ fused with <p,q~>, <z,q~>, <M^{-1}q,q~>; then one global reduction of the values (one `MPI_Allreduce()`
   with several processes), from which alpha = <z,r~>/<p,q~> and the next beta (predicted, the next <z,r~> recomputed)
   follow.  Its iterates follow `KSPBICG`'s to rounding.

   Options Database Keys:
.  -ksp_type fusedbicg - selects this solver; all standard KSP options apply

   Level: intermediate

   Notes:
   As `KSPBICG`: left preconditioning only; norm types `KSP_NORM_PRECONDITIONED` (default), `KSP_NORM_UNPRECONDITIONED`
   and `KSP_NORM_NONE`; the operator needs `MatMultTranspose()` and the preconditioner `PCApplyTranspose()` (an error
   says so otherwise); breakdown <z,r~> = 0 stops with `KSP_DIVERGED_BREAKDOWN_BICG`, <p~,A p> = 0 with
   `KSP_DIVERGED_BREAKDOWN`.  `KSPSolveTranspose()` is not supported.
   `PCNONE` and `PCJACOBI` are fused into the kernels; any other PC is applied with `PCApply()` and `PCApplyTranspose()`
   once each per iteration (to A p and A^T p~).  With `MATAIJFUSED` the transposed product runs on the device with an
   explicit transpose of the matrix (built at the first use, as `MatMultTranspose()` does: the memory of a second copy),
   and the fused ILU(0)/ICC(0) (`MATSOLVERFUSED`) applies its transpose on the device too, also as the block solver
   of `PCBJACOBI` with one block per process (whose `PCApplyTranspose()` the plugin lends the local parts).
   The fused kernels run when the vectors are `VECFUSED` and the matrix `MATAIJFUSED`; otherwise the same algorithm runs
   with standard PETSc operations.  The products of an iteration run before its convergence test, so a solve does one
   product with A and one with A^T more than `KSPBICG`.  When the recurrence residual meets the tolerance the true
   residual is checked; if it does not meet it, the iteration restarts from it (see -info).  The A and A^T sides run one
   after the other on one stream; the source says what running them on two streams needs.

.seealso: `KSPBICG`, `KSPFUSEDBCGS`, `KSPFUSEDCG`, `VECFUSED`, `MATAIJFUSED`, `MATSOLVERFUSED`
M*/
PETSC_INTERN PetscErrorCode KSPCreate_FusedBiCG(KSP ksp)
{
  PetscFunctionBegin;
  PetscCall(fusedksp::KSPFusedCreate<fusedksp::KSP_FusedBiCG>(ksp, fusedksp::FusedBiCGOps, {{KSP_NORM_PRECONDITIONED, PC_LEFT}, {KSP_NORM_UNPRECONDITIONED, PC_LEFT}}));
  PetscFunctionReturn(PETSC_SUCCESS);
}
