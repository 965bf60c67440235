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
   transposed product.  One iteration, in the order it is queued:
     A^T side (7) u~ = M^{-T} q~ of the previous iteration: inline for Jacobi, PCApplyTranspose otherwise
              (4) x~ += alpha p~; r~ -= alpha q~; z~ likewise; p~ = z~ + beta p~               (OpsCGUpdate)
     A side   (1) x += alpha p; r -= alpha q; z = w.*r (Jacobi) | z -= alpha u (PCApply) | z = r; p = z + beta p;
                  partial <r,z>, <r,r>, <z,z>                                           (OpsCGUpdate)
              (2) q = A p                                                                  (OpsApplyOperator)
              (3) u = M^{-1} q: inline w.*q for Jacobi (no kernel), PCApply otherwise
     both     (5) partial <z,r~>, <u,r~>                                                   (OpsDots)
              (6) q~ = A^T p~ with partial <p,q~>, <z,q~>, <u,q~>                          (OpsApplyOperatorTranspose)
     one reduction of the 8 values (one MPI_Allreduce), then alpha, beta and the norm on the host
     (src/core/recurrences.hpp, BiCGCoefficients()).
   u~ is read only by the next iteration's (4), so (7) runs there, first (the start, BiCGStart(), leaves it to the
   first iteration too).  With PCNONE or PCJACOBI that is 5 kernels and one device->host copy of partial sums per
   iteration (a MATMPIAIJFUSED transposed product is MatMultTranspose() on the device plus a dot-product kernel: 6).  x~
   is the iterate of the dual system A^T x~ = r_0 that BiCG solves alongside; the fused update computes it with the
   residual, nothing reads it.  The products of an iteration run before its convergence test (they complete the same
   reduction), so the last iteration does one product with A and one with A^T more than KSPBICG (and one PCApply()).

   Two streams (-ksp_fusedbicg_streams 2, the default on a backend that has a second stream: CUDA).  (7) and (4) read
   and write only A^T-side vectors and (1)-(3) only A-side ones, so they run on two streams of the backend at the same
   time, as seed 004's Set A and Set B do (OpsSideBegin()): side 1 = (7), (4), opened first, so that its fork waits only
   for the previous iteration's work; side 0 = (1)-(3).  The join comes before (5) and (6), which run on stream 0: (5)
   and the dot products of (6) read vectors of both sides.  That is where the gain is: with the plugin's ILU(0)/ICC(0)
   (MATSOLVERFUSED: level-scheduled triangular solves, many small latency-bound kernels or a graph of them) the M^{-T}
   solves of (7) overlap the product and the M^{-1} solves of the A side.  Running the transposed product after the
   join, instead of on side 1 with its dot products split off, keeps 5 kernels and one reduction per iteration, keeps
   the product and the transposed product on one stream (MATMPIAIJFUSED's use the same halo buffers), and costs only
   that product's overlap, small next to the triangular solves'.  The fork and the join are events on the device: the
   host still waits once per iteration, for the one copy of the partial sums of both sides, on stream 0 after the
   join.  The products of MATSEQAIJFUSED and MATMPIAIJFUSED and the fused ILU's MatSolve()/MatSolveTranspose() (also as
   PCBJACOBI's block solver; the two have work vectors of their own) run on the stream of their side; a preconditioner
   that is not the plugin's (PETSc's own PCs, on the host) runs in order as always, so its M^{-T} and M^{-1} do not
   overlap.  The batch of the iteration defers its dot
   products with a general PC too (its own reductions complete at once; a fused solve nested in it has its own
   batches): a wait for side 1's partial sums inside the iteration would keep the host from queuing side 0.  On
   backends with one stream (host, kokkos), or with -ksp_fusedbicg_streams 1, the same operations run in the same
   order on one stream, with the same results.

   Norms (as KSPBICG): preconditioned sqrt<z,z> (default), unpreconditioned sqrt<r,r>, none.  Breakdown: rho = 0 stops
   with KSP_DIVERGED_BREAKDOWN_BICG (KSPBICG's reason), <p~, A p> = 0 with KSP_DIVERGED_BREAKDOWN; NaN or Inf with
   KSP_DIVERGED_NANORINF.  When the recurrence residual passes the (default) convergence test, the true residual b - A x
   is checked; if it does not pass, the solve restarts from it (r~ = r), so "converged" means the true residual met the
   tolerance.
*/
#include "ksp/fusedcommon.hpp"
#include <petsc/private/pcimpl.h>

namespace fusedksp
{
namespace
{

struct KSP_FusedBiCG {
  Vec           w              = nullptr; /* Jacobi weights */
  PCMode        mode           = PCMode::NONE;
  PetscInt      streams_option = 0;           /* -ksp_fusedbicg_streams; 0: the default (2 where the backend has them) */
  PetscBool     two_streams    = PETSC_FALSE; /* the last solve ran its sides on two streams                          */
  PetscBool     same_solves    = PETSC_FALSE; /* the last solve's PC applies M^{-1} on both sides (PCICC), see BiCGStreams() */
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

/* The A side of an iteration (side 0): with update, x, r, z, p from alpha and beta (<r,z>, <r,r>, <z,z> into
   d[BICG_RZ..]); then q = A p and u = M^{-1} q (a general PC; inline otherwise) */
PetscErrorCode SideA(KSP ksp, KSP_FusedBiCG *bi, Mat A, Vec *V, PetscBool update, PetscScalar alpha, PetscScalar beta, PetscScalar *d)
{
  const PetscBool general = bi->mode == PCMode::GENERAL ? PETSC_TRUE : PETSC_FALSE;

  PetscFunctionBegin;
  PetscCall(OpsSideBegin(bi->two_streams, 0));
  if (update) PetscCall(OpsCGUpdate(alpha, beta, ksp->vec_sol, V[VEC_R], V[VEC_Z], V[VEC_P], V[VEC_Q], general ? V[VEC_U] : nullptr, bi->mode == PCMode::JACOBI ? bi->w : nullptr, d + BICG_RZ));
  PetscCall(OpsApplyOperator(A, nullptr, nullptr, V[VEC_P], V[VEC_Q], nullptr, 0, nullptr, nullptr));
  if (general) PetscCall(KSPFusedApplyPC(ksp, V[VEC_Q], V[VEC_U]));
  PetscCall(OpsSideEnd());
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The A^T side of an iteration (side 1): u~ = M^{-T} q~ of the previous iteration (a general PC), then x~, r~, z~,
   p~ from alpha and beta (their dot products, not used, into unused[3]) */
PetscErrorCode SideAt(KSP ksp, KSP_FusedBiCG *bi, Vec *V, PetscScalar alpha, PetscScalar beta, PetscScalar *unused)
{
  const PetscBool general = bi->mode == PCMode::GENERAL ? PETSC_TRUE : PETSC_FALSE;

  PetscFunctionBegin;
  PetscCall(OpsSideBegin(bi->two_streams, 1));
  if (general) PetscCall(KSPFusedApplyPCTranspose(ksp, V[VEC_QT], V[VEC_UT]));
  PetscCall(OpsCGUpdate(alpha, beta, V[VEC_XT], V[VEC_RT], V[VEC_ZT], V[VEC_PT], V[VEC_QT], general ? V[VEC_UT] : nullptr, bi->mode == PCMode::JACOBI ? bi->w : nullptr, unused));
  PetscCall(OpsSideEnd());
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* After the join, on stream 0: the dot products of r~ with z and u; q~ = A^T p~ with <p,q~>, <z,q~>, <u,q~>.  Reads
   both sides' vectors. */
PetscErrorCode Meet(KSP_FusedBiCG *bi, Mat A, Vec *V, PetscScalar *d)
{
  const OpDot zu[2]  = {PreconditionedSpec(bi, V, 0), PreconditionedSpec(bi, V, 1)};
  const OpDot pzu[3] = {{DotKind::DOT_VECTOR, V[VEC_P], nullptr}, zu[0], zu[1]};

  PetscFunctionBegin;
  PetscCall(OpsSidesJoin());
  PetscCall(OpsDots(nullptr, V[VEC_RT], 2, zu, d + BICG_RHO));
  PetscCall(OpsApplyOperatorTranspose(A, V[VEC_PT], V[VEC_QT], 3, pzu, d + BICG_PQ));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Starts (or restarts) BiCG from the residual in r: r~ = r, x~ = 0, z = M^{-1} r, z~ = M^{-T} r~, p = z, p~ = z~, both
   sides' products (u~ = M^{-T} q~ is left to the first iteration), and the reduced values in d */
PetscErrorCode BiCGStart(KSP ksp, KSP_FusedBiCG *bi, Mat A, Vec *V, PetscScalar *d)
{
  const OpDot rz_rr[2] = {{DotKind::DOT_INPUT, nullptr}, {DotKind::DOT_SELF, nullptr}};
  const OpDot zz       = {DotKind::DOT_SELF, nullptr};

  PetscFunctionBegin;
  PetscCall(VecCopy(V[VEC_R], V[VEC_RT]));
  PetscCall(VecSet(V[VEC_XT], 0.0));
  PetscCall(KSPFusedPCApply(ksp, bi->mode, bi->w, V[VEC_R], V[VEC_Z]));
  PetscCall(KSPFusedPCApplyTranspose(ksp, bi->mode, bi->w, V[VEC_RT], V[VEC_ZT]));
  PetscCall(VecCopy(V[VEC_Z], V[VEC_P]));
  PetscCall(VecCopy(V[VEC_ZT], V[VEC_PT]));
  PetscCall(OpsBatchBegin(PETSC_TRUE));
  PetscCall(OpsDots(V[VEC_Z], V[VEC_R], 2, rz_rr, d + BICG_RZ));
  PetscCall(OpsDots(nullptr, V[VEC_Z], 1, &zz, d + BICG_ZZ));
  PetscCall(SideA(ksp, bi, A, V, PETSC_FALSE, 0, 0, d));
  PetscCall(Meet(bi, A, V, d));
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

/* Whether the sides run on two streams in this solve.  PCICC's transposed application is its application (M symmetric),
   so both sides would run the same factor's triangular solves at once; the factor keeps second schedules for that
   (src/mat/fusedfactor.cxx), but that path has not run on a GPU yet, so such PCs (PCICC, or PCBJACOBI/PCASM with ICC
   blocks on this rank) keep one stream unless -ksp_fusedbicg_streams 2 asks for two.  The choice is this rank's own
   (the streams are). */
static PetscErrorCode BiCGStreams(KSP ksp, KSP_FusedBiCG *bi)
{
  PC        pc;
  PetscBool icc, bjacobi, asm_;

  PetscFunctionBegin;
  bi->same_solves = PETSC_FALSE;
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(PetscObjectTypeCompare((PetscObject)pc, PCICC, &icc));
  PetscCall(PetscObjectTypeCompare((PetscObject)pc, PCBJACOBI, &bjacobi));
  PetscCall(PetscObjectTypeCompare((PetscObject)pc, PCASM, &asm_));
  if (icc)
    bi->same_solves = PETSC_TRUE;
  else if ((bjacobi || asm_) && pc->setupcalled) {
    KSP     *sub;
    PetscInt nsub = 0;

    if (bjacobi)
      PetscCall(PCBJacobiGetSubKSP(pc, &nsub, nullptr, &sub));
    else
      PetscCall(PCASMGetSubKSP(pc, &nsub, nullptr, &sub));
    for (PetscInt k = 0; k < nsub; ++k) {
      PC        subpc;
      PetscBool subicc;

      PetscCall(KSPGetPC(sub[k], &subpc));
      PetscCall(PetscObjectTypeCompare((PetscObject)subpc, PCICC, &subicc));
      if (subicc) bi->same_solves = PETSC_TRUE;
    }
  }
  bi->two_streams = (bi->streams_option != 1 && OpsHasSecondStream() && (bi->streams_option == 2 || !bi->same_solves)) ? PETSC_TRUE : PETSC_FALSE;
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
  PetscCall(BiCGStreams(ksp, bi));
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
    /* the A^T side and the A side (on two streams, see the top), then what reads both; their dot products come back
       together */
    PetscCall(OpsBatchBegin(PETSC_TRUE));
    PetscCall(SideAt(ksp, bi, V, alpha, beta, unused));
    PetscCall(SideA(ksp, bi, A, V, PETSC_TRUE, alpha, beta, d));
    PetscCall(Meet(bi, A, V, d));
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

PetscErrorCode KSPSetFromOptions_FusedBiCG(KSP ksp, PetscOptionItems PetscOptionsObject)
{
  KSP_FusedBiCG *bi = static_cast<KSP_FusedBiCG *>(ksp->data);
  PetscInt       streams;
  PetscBool      set;

  PetscFunctionBegin;
  PetscOptionsHeadBegin(PetscOptionsObject, "KSP fused BiCG options");
  streams = bi->streams_option ? bi->streams_option : (OpsHasSecondStream() ? 2 : 1);
  PetscCall(PetscOptionsRangeInt("-ksp_fusedbicg_streams", "Streams of the A and A^T sides: 2 runs them at the same time on a backend with a second stream (default there: CUDA), 1 one after the other", "KSPFUSEDBICG", streams, &streams, &set, 1, 2));
  if (set) bi->streams_option = streams;
  PetscOptionsHeadEnd();
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPView_FusedBiCG(KSP ksp, PetscViewer viewer)
{
  KSP_FusedBiCG *bi      = static_cast<KSP_FusedBiCG *>(ksp->data);
  const char    *streams = "A and A^T sides on one stream";
  char           kernels[512];

  PetscFunctionBegin;
  if (bi->streams_option != 1 && OpsHasSecondStream() && bi->same_solves && bi->streams_option != 2)
    streams = "A and A^T sides on one stream (the PC applies M^{-1} on both sides, PCICC: -ksp_fusedbicg_streams 2 for two)";
  else if (bi->streams_option != 1 && OpsHasSecondStream())
    streams = "A and A^T sides on two streams (M^{-T} and the r~ update on the second, joined before the dots and the SpMV with A^T)";
  else if (bi->streams_option == 2)
    streams = "A and A^T sides on one stream (-ksp_fusedbicg_streams 2: the backend has one stream)";
  PetscCall(PetscSNPrintf(kernels, sizeof(kernels), "5 per iteration (A^T side: r~/z~/p~ update; A side: x/r/z/p update + 3 dots, SpMV; then 2 dots of r~, SpMV with A^T + 3 dots), 1 reduction of 8 values; %s", streams));
  PetscCall(KSPFusedViewCommon(ksp, viewer, bi->mode, kernels));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The operations KSPCreate_FusedBiCG() sets */
const KSPFusedOps FusedBiCGOps = {KSPFusedSetUpWork<NWORK>, KSPSolveScoped<KSPSolve_FusedBiCG>, KSPFusedDestroyData<KSP_FusedBiCG>, KSPView_FusedBiCG, KSPSetFromOptions_FusedBiCG};

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
+  -ksp_type fusedbicg - selects this solver; all standard KSP options apply
-  -ksp_fusedbicg_streams <1,2> - the A and A^T sides on two streams of the backend at the same time (default 2 on a
   backend with a second stream: CUDA, but 1 with PCICC or ICC blocks, whose transposed application is M^{-1}
   itself) or one after the other on one stream (1; the default on the host and kokkos backends, which have one
   stream)

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
   residual is checked; if it does not meet it, the iteration restarts from it (see -info).  On the CUDA backend the
   A^T side (M^{-T} and the update of r~, z~, p~) runs on a second stream at the same time as the A side (the update of
   x, r, z, p, q = A p and M^{-1}), as seed 004 does; the two join (an event, no host wait) before the dot products
   that read both and the product with A^T.  The overlap pays with the fused ILU(0)/ICC(0), whose triangular solves are
   many small kernels; a PC that is not the plugin's runs in order.  Iterates and counts are the same with one stream
   (-ksp_fusedbicg_streams 1).

.seealso: `KSPBICG`, `KSPFUSEDBCGS`, `KSPFUSEDCG`, `VECFUSED`, `MATAIJFUSED`, `MATSOLVERFUSED`
M*/
PETSC_INTERN PetscErrorCode KSPCreate_FusedBiCG(KSP ksp)
{
  PetscFunctionBegin;
  PetscCall(fusedksp::KSPFusedCreate<fusedksp::KSP_FusedBiCG>(ksp, fusedksp::FusedBiCGOps, {{KSP_NORM_PRECONDITIONED, PC_LEFT}, {KSP_NORM_UNPRECONDITIONED, PC_LEFT}}));
  PetscFunctionReturn(PETSC_SUCCESS);
}
