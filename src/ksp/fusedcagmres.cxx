/*
   KSPFUSEDCAGMRES: communication-avoiding GMRES(s, m) (Hoemmen 2010; Yamazaki, Anzt, Tomov, Hoemmen &
   Dongarra, seed 001), right preconditioned.

   A restart cycle builds an orthonormal basis Q = [q_0 .. q_m] of the Krylov space of Op = A M^{-1} and r_0
   in blocks of s vectors.  A block starting from the last orthonormal vector q_b is
     (1) the matrix powers loop: y_0 = q_b, y_{i+1} = (Op - theta_i) y_i (Newton basis) or Op y_i (monomial),
         s operator applications and no reduction, so that Op Y(:, 0:s) = Y B with the (s+1) x s change-of-basis
         matrix B (theta_i on the diagonal, ones below it);
     (2) ONE block orthogonalization of W = [y_1 .. y_s] against Q(:, 0:b) and inside itself, here CholQR2 with
         the projection fused into each pass (block classical Gram-Schmidt with Pythagorean inner products):
           [C; G] = [Q(:, 0:b) W]^T W        (one multi-dot per column of W, ONE global reduction)
           R^T R = G - C^T C                 (Cholesky of the s x s projected Gram matrix, on the host)
           W := (W - Q(:, 0:b) C) R^{-1}     (one multi-axpy per column)
         once or twice.  One pass leaves the new block orthogonal to about eps kappa^2 inside itself and to
         about loss x kappa against Q(:, 0:b), whose own loss of orthogonality is loss (kappa from the
         condition number of the projected block and the cancellation of the projection:
         CAGMRESPassCondition()), so the cycle's estimated loss after one pass is
           loss_new = loss kappa + eps kappa^2     (loss = eps at the start of a cycle),
         and the second pass (its C and R close to 0 and I; the loss stays where it was) runs only when
         loss_new would exceed -ksp_cagmres_reorth_tol (1e-10).  The Newton blocks of s = 5 have kappa of
         15-60, more (up to 1e5) where a cycle starts or converges, so the first blocks of a cycle take one
         pass and the later ones two; the standard cycle's blocks of one vector (kappa 2-3) are CGS for
         the first dozen steps and CGS2 after.  The estimate is a bound: propagated losses grow by kappa per
         block at worst, which is what decides when CGS loses orthogonality.  W = Q(:, 0:b) C + Q_new R with C = C1 + C2 R1,
         R = R2 R1: 1 or 2 global reductions per s steps instead of 1 or 2 per step.  When a projected Gram matrix is not
         numerically positive definite (a pivot below CAGMRES_CHOL_TOL of its column's squared norm: the block
         is nearly rank deficient, or so ill-conditioned that CholQR cannot orthogonalize it) the block falls
         back to CGS2 column by column (2 reductions per column, reported by -info and in -ksp_view).
         -ksp_cagmres_orth cgs2 takes that path for every block.
     (3) the s new columns of the Hessenberg matrix: with Y(:, 0:s+1) = [Q(:, 0:b+s)] T (T from e_b, C and R),
         Op Y(:, 0:s) = Y B and Op Q(:, 0:b-1) = Q(:, 0:b) H_prev give
           H(:, b:b+s-1) = (T B - H_prev T(0:b-1, 0:s-1)) T(b:b+s-1, 0:s-1)^{-1}
         (the last factor upper triangular), then Givens rotations update the least-squares problem column by
         column: the residual estimate of every step is monitored and tested, and a cycle that converges in
         the middle of a block ends there, so the iteration counts are those of GMRES.
   A column of W that CGS2 reduces to less than CAGMRES_LUCKY_TOL of its norm lies in the span of the previous
   ones: the Krylov space is invariant (lucky breakdown), the block is cut there and the Hessenberg matrix is
   square.  At the end of a cycle x += M^{-1} Q(:, 0:k-1) y; the next cycle starts from the true residual.

   Newton basis (default): the shifts are the Ritz values of Op, the eigenvalues of the Hessenberg matrix of a
   first standard cycle (blocks of one vector: Arnoldi with CGS2, 2 reductions per step), in Leja order so that
   consecutive factors (Op - theta_i) damp different parts of the spectrum and the basis stays well conditioned.
   A complex pair a +- ib is applied in real arithmetic (the modified Newton basis of Bai, Hu & Reichel):
   y_{i+1} = (Op - a) y_i, y_{i+2} = (Op - a) y_{i+1} + b^2 y_i, so B has -b^2 above its diagonal there.  When
   the s-th shift would split a pair, its real part is used.  The monomial basis (theta = 0) needs no first
   cycle but its vectors converge to the dominant eigenvector: use it with a small s.

   Convergence is decided as in KSPGMRES by the least-squares residual, and a converged estimate is confirmed
   by the true residual (a failed confirmation restarts; three that do not improve end the solve with
   KSP_DIVERGED_BREAKDOWN).  A restart whose true residual exceeds the previous one by more than
   CAGMRES_GROWTH means that the basis lost orthogonality (GMRES cannot increase the residual): the solve ends
   with KSP_DIVERGED_BREAKDOWN and -info says so.
*/
#include "ksp/fusedcommon.hpp"
#include <petscblaslapack.h>
#include <cmath>
#include <vector>

namespace fusedksp
{
namespace
{

constexpr PetscReal CAGMRES_CHOL_TOL  = 1.0e-12; /* least pivot of the projected Gram matrix, relative to its column's <w,w> */
constexpr PetscReal CAGMRES_LUCKY_TOL = 1.0e-13; /* CGS2: a column keeping less of its norm lies in the previous span        */
constexpr PetscReal CAGMRES_GROWTH    = 1.001;   /* a cycle may not raise the true residual by more than this factor        */
constexpr PetscInt  CAGMRES_MAX_S     = 64;      /* largest block size (host arrays of s entries on the stack)               */

enum class CABasis { NEWTON, MONOMIAL };
enum class CAOrth { CHOLQR, CGS2, SVQR };
const char *const CABasisTypes[] = {"newton", "monomial", "KSPFusedCAGMRESBasis", "KSP_CAGMRES_BASIS_", nullptr};
const char *const CAOrthTypes[]  = {"cholqr", "cgs2", "svqr", "KSPFusedCAGMRESOrth", "KSP_CAGMRES_ORTH_", nullptr};

struct KSP_FusedCAGMRES {
  Vec           w    = nullptr;
  PCMode        mode = PCMode::NONE;
  SolveCounters counters;
  PetscInt      restart = 30, s = 5;
  CABasis       basis      = CABasis::NEWTON;
  CAOrth        orth       = CAOrth::CHOLQR;
  PetscReal     reorth_tol = 1e-10;                 /* -ksp_cagmres_reorth_tol                                   */
  PetscReal     loss       = PETSC_MACHINE_EPSILON; /* estimated loss of orthogonality of the cycle's basis so far */
  Vec          *Q          = nullptr;               /* q_0 .. q_m */
  PetscInt      nQ         = 0;
  /* the cycle: H (m+1) x m column-major (ld m+1) as assembled, HR its Givens-rotated upper triangle, the
     rotations (cs, sn) and the rotated right-hand side gr = rho Q^T e_1                                     */
  std::vector<PetscScalar> H, HR, cs, sn, gr;
  std::vector<PetscScalar> K, D, S, C1, R1, C2, R2, coef, B, T, X; /* block work (CAGMRESOrthogonalize(), CAGMRESAssemble()) */
  std::vector<PetscReal>   re, im;                                 /* shifts: real parts, imaginary parts (pairs +b, -b) */
  PetscBool                have_shifts    = PETSC_FALSE;           /* Newton: the shifts of this solve are known          */
  PetscBool                use_powers     = PETSC_TRUE;            /* -ksp_cagmres_matrix_powers                          */
  PetscBool                reuse_shifts   = PETSC_TRUE;            /* -ksp_cagmres_reuse_shifts                           */
  PetscBool                shifts_known   = PETSC_FALSE;           /* g->re/im hold the shifts of an earlier solve ...     */
  PetscObjectState         shift_state[2] = {-1, -1};              /* ... with the operators in these states               */
  PetscBool                shifts_reused  = PETSC_FALSE;           /* the last solve took them from an earlier one         */
  MatPowers               *powers         = nullptr;               /* the matrix powers kernel of the last solve, or NULL  */
  PetscInt                 cycle_k        = 0;                     /* columns of the current cycle                        */
  /* what the last solve did (-ksp_view) */
  PetscInt nstd = 0, nblocks = 0, nfallback = 0, nlucky = 0, nsingle = 0;
};

enum { VEC_T, VEC_T2, VEC_WORK, VEC_SOL, NWORK };

inline PetscScalar &Hij(std::vector<PetscScalar> &h, const KSP_FusedCAGMRES *g, PetscInt i, PetscInt j)
{
  return h[j * (g->restart + 1) + i];
}

/* The matrix powers kernel for this solve: with several processes, a block size above 1, Jacobi or no
   preconditioner and fused operands (else the products of a block run one at a time).  Collective. */
PetscErrorCode CAGMRESPowersSetUp(KSP ksp, KSP_FusedCAGMRES *g, Mat A, PCMode mode)
{
  PetscMPIInt size;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_size(PetscObjectComm((PetscObject)ksp), &size));
  if (size > 1 && g->use_powers && g->s > 1 && (mode == PCMode::NONE || mode == PCMode::JACOBI))
    PetscCall(OpsMatrixPowersSetUp(A, g->s, mode == PCMode::JACOBI ? g->w : nullptr, g->Q[0], &g->powers));
  else
    PetscCall(OpsMatrixPowersDestroy(&g->powers));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPSetUp_FusedCAGMRES(KSP ksp)
{
  KSP_FusedCAGMRES *g = static_cast<KSP_FusedCAGMRES *>(ksp->data);
  const PetscInt    m = g->restart, s = g->s, ld = m + 1 + s;

  PetscFunctionBegin;
  /* checked here, not in KSPSetFromOptions(): an error inside PetscOptionsBegin() leaks PETSc's option strings */
  PetscCheck(s >= 1 && s <= CAGMRES_MAX_S, PetscObjectComm((PetscObject)ksp), PETSC_ERR_ARG_OUTOFRANGE, "KSPFUSEDCAGMRES: the block size s = %" PetscInt_FMT " (-ksp_cagmres_s) must be in [1, %" PetscInt_FMT "]", s, CAGMRES_MAX_S);
  PetscCheck(m % s == 0, PetscObjectComm((PetscObject)ksp), PETSC_ERR_ARG_INCOMP, "KSPFUSEDCAGMRES: the restart %" PetscInt_FMT " (-ksp_gmres_restart) must be a multiple of the block size s = %" PetscInt_FMT " (-ksp_cagmres_s), e.g. %" PetscInt_FMT,
             m, s, PetscMax(s, (m / s) * s));
  PetscCall(KSPSetWorkVecs(ksp, NWORK));
  g->shifts_known = PETSC_FALSE; /* s may have changed */
  if (g->nQ != m + 1) {
    if (g->Q) PetscCall(VecDestroyVecs(g->nQ, &g->Q));
    PetscCall(KSPCreateVecs(ksp, m + 1, &g->Q, 0, NULL));
    g->nQ = m + 1;
  }
  { /* the ghost region of the matrix powers kernel is found here, not in the first solve */
    PC        pc;
    PetscBool none, jacobi;
    Mat       A;

    PetscCall(KSPGetPC(ksp, &pc));
    PetscCall(PetscObjectTypeCompare((PetscObject)pc, PCNONE, &none));
    PetscCall(PetscObjectTypeCompare((PetscObject)pc, PCJACOBI, &jacobi));
    PetscCall(KSPGetOperators(ksp, &A, NULL));
    if (none || jacobi) PetscCall(CAGMRESPowersSetUp(ksp, g, A, PCMode::NONE));
  }
  FusedKSPCallCXX(g->H.assign((size_t)(m + 1) * m, 0.0); g->HR.assign((size_t)(m + 1) * m, 0.0); g->cs.assign(m, 0.0); g->sn.assign(m, 0.0); g->gr.assign(m + 1, 0.0); g->K.assign((size_t)s * ld, 0.0); g->D.assign((size_t)(s + 2) * ld, 0.0);
                  g->coef.assign((size_t)s * ld, 0.0); g->C1.assign((size_t)s * ld, 0.0); g->C2.assign((size_t)s * ld, 0.0); g->S.assign((size_t)s * s, 0.0); g->R1.assign((size_t)s * s, 0.0); g->R2.assign((size_t)s * s, 0.0);
                  g->B.assign((size_t)(s + 1) * s, 0.0); g->T.assign((size_t)(m + 1) * (s + 1), 0.0); g->X.assign((size_t)(m + 1) * s, 0.0); g->re.assign(s, 0.0); g->im.assign(s, 0.0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The matrix powers loop of a block of sb vectors from q_b: Q[b+1..b+sb] = the basis vectors, and the change of
   basis matrix B ((sb+1) x sb, column-major) with Op Y(:, 0:sb) = Y B.  Shifts from g->re/im (sb == s) or none
   (sb == 1: a step of the standard cycle).  With the matrix powers kernel (g->powers: a MATMPIAIJFUSED on several
   processes, Jacobi or no preconditioner) the sb products exchange one halo of depth s; otherwise one operator
   application (and under MPI one halo exchange) and one multi-axpy per vector.                               */
PetscErrorCode CAGMRESMatrixPowers(KSP ksp, KSP_FusedCAGMRES *g, Mat A, PetscInt b, PetscInt sb)
{
  PetscScalar *B = g->B.data();
  PetscScalar  c[2 * CAGMRES_MAX_S];

  PetscFunctionBegin;
  for (PetscInt i = 0; i < (sb + 1) * sb; ++i) B[i] = 0.0;
  for (PetscInt i = 0; i < sb; ++i) { /* y_{i+1} = Op y_i - c[2i] y_i - c[2i+1] y_{i-1} */
    const PetscReal a = sb == g->s ? g->re[i] : 0.0, bi = sb == g->s ? g->im[i] : 0.0;

    c[2 * i]                = a;
    c[2 * i + 1]            = 0.0;
    B[i * (sb + 1) + i]     = a;
    B[i * (sb + 1) + i + 1] = 1.0;
    if (bi < 0) { /* second of a complex pair a +- i|bi|: y_{i+1} = (Op - a) y_i + bi^2 y_{i-1} */
      c[2 * i + 1]            = -bi * bi;
      B[i * (sb + 1) + i - 1] = -bi * bi;
    }
  }
  if (g->powers && sb == g->s) {
    PetscCall(OpsMatrixPowers(g->powers, g->mode == PCMode::JACOBI ? g->w : nullptr, sb, c, g->Q + b));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  for (PetscInt i = 0; i < sb; ++i) {
    const PetscInt nv   = c[2 * i + 1] != 0.0 ? 2 : c[2 * i] != 0.0 ? 1 : 0;
    Vec            V[2] = {g->Q[b + i], i > 0 ? g->Q[b + i - 1] : nullptr};

    PetscCall(KSPFusedRightOperator(ksp, g->mode, g->w, A, g->Q[b + i], g->Q[b + i + 1], ksp->work[VEC_WORK]));
    if (nv) PetscCall(OpsMAXPYScale(nv, c + 2 * i, V, g->Q[b + i + 1], 1.0, nullptr, nullptr));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* R^T R = S by SVQR (Stathopoulos & Wu): S = U diag(lambda) U^T (LAPACK syev), eigenvalues below eps lambda_max raised
   to it (a numerically rank deficient block is orthogonalized, not refused: the second pass restores what the
   raised ones lose), then R from the QR factorization of diag(sqrt(lambda)) U^T (geqrf), rows signed so that R has a
   positive diagonal.  S: sb x sb column-major, upper triangle given (overwritten); R column-major upper.
   *ok = PETSC_FALSE when lambda_max is not positive or LAPACK fails.                                           */
PetscErrorCode CAGMRESSVQRFactor(PetscInt sb, PetscScalar *S, PetscScalar *R, PetscBool *ok)
{
  PetscBLASInt n, lwork, info = 0;
  PetscScalar  work[8 * CAGMRES_MAX_S + 64], tau[CAGMRES_MAX_S];
  PetscReal    lambda[CAGMRES_MAX_S], lmax;

  PetscFunctionBegin;
  *ok = PETSC_FALSE;
  PetscCall(PetscBLASIntCast(sb, &n));
  PetscCall(PetscBLASIntCast((PetscInt)PETSC_STATIC_ARRAY_LENGTH(work), &lwork));
  PetscCall(PetscFPTrapPush(PETSC_FP_TRAP_OFF));
  PetscCallBLAS("LAPACKsyev", LAPACKsyev_("V", "U", &n, S, &n, lambda, work, &lwork, &info));
  PetscCall(PetscFPTrapPop());
  lmax = lambda[sb - 1];
  if (info != 0 || !(lmax > 0) || PetscIsInfOrNanReal(lmax)) PetscFunctionReturn(PETSC_SUCCESS);
  for (PetscInt i = 0; i < sb; ++i) { /* R = diag(sqrt(lambda)) U^T, column-major: R(i, j) = sqrt(lambda_i) U(j, i) */
    const PetscReal l = PetscSqrtReal(PetscMax(lambda[i], PETSC_MACHINE_EPSILON * lmax));
    for (PetscInt j = 0; j < sb; ++j) R[j * sb + i] = l * S[i * sb + j];
  }
  PetscCall(PetscFPTrapPush(PETSC_FP_TRAP_OFF));
  PetscCallBLAS("LAPACKgeqrf", LAPACKgeqrf_(&n, &n, R, &n, tau, work, &lwork, &info));
  PetscCall(PetscFPTrapPop());
  if (info != 0) PetscFunctionReturn(PETSC_SUCCESS);
  for (PetscInt i = 0; i < sb; ++i) {
    const PetscScalar sign = PetscRealPart(R[i * sb + i]) < 0 ? -1.0 : 1.0;
    for (PetscInt j = 0; j < sb; ++j) R[j * sb + i] = j < i ? 0.0 : sign * R[j * sb + i];
    if (!(PetscAbsScalar(R[i * sb + i]) > 0)) PetscFunctionReturn(PETSC_SUCCESS);
  }
  *ok = PETSC_TRUE;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* One pass of CholQR with the projection fused in, on the block W = Q[b+1..b+sb] against Q[0..b] (nv = b+1
   vectors): [C; G] = [Q(:, 0:b) W]^T W (ONE global reduction), R^T R = G - C^T C on the host (Cholesky, or SVQR with
   -ksp_cagmres_orth svqr), and, when that is
   positive definite, W := (W - Q(:, 0:b) C) R^{-1}.  C goes to the rows of Cp (row j: C(:, j), stride nv + sb), R to
   Rp (sb x sb, column-major, upper).  *ok = PETSC_FALSE (W unchanged) when a pivot is below CAGMRES_CHOL_TOL of
   its column's <w,w>; *nan when a reduced value is not finite (W unchanged).                                  */
PetscErrorCode CAGMRESCholQRPass(KSP ksp, KSP_FusedCAGMRES *g, PetscInt b, PetscInt sb, PetscScalar *Cp, PetscScalar *Rp, PetscBool *ok, PetscBool *nan)
{
  const PetscInt nv = b + 1, ld = nv + sb;
  PetscScalar   *D = g->D.data(), *S = g->S.data(), *coef = g->coef.data();
  PetscScalar    scale[CAGMRES_MAX_S];

  PetscFunctionBegin;
  *ok  = PETSC_TRUE;
  *nan = PETSC_FALSE;
  PetscCall(OpsBatchBegin(PETSC_TRUE));
  PetscCall(OpsBlockMDot(nv, g->Q, sb, g->Q + b + 1, D));
  PetscCall(OpsBatchEnd());
  PetscCall(OpsAllreduce(PetscObjectComm((PetscObject)ksp), D, sb * ld, &g->counters));
  for (PetscInt i = 0; i < sb * ld; ++i)
    if (PetscIsInfOrNanScalar(D[i])) *nan = PETSC_TRUE;
  if (*nan) PetscFunctionReturn(PETSC_SUCCESS);
  for (PetscInt j = 0; j < sb; ++j) /* S = G - C^T C, upper triangle */
    for (PetscInt i = 0; i <= j; ++i) {
      PetscScalar v = D[j * ld + nv + i];
      for (PetscInt q = 0; q < nv; ++q) v -= D[i * ld + q] * D[j * ld + q];
      S[j * sb + i] = v;
    }
  if (g->orth == CAOrth::SVQR) {
    PetscCall(CAGMRESSVQRFactor(sb, S, Rp, ok));
    if (!*ok) PetscFunctionReturn(PETSC_SUCCESS);
  } else
    for (PetscInt j = 0; j < sb; ++j) { /* Cholesky S = R^T R, column by column */
      PetscScalar d = S[j * sb + j];

      for (PetscInt i = 0; i < j; ++i) {
        PetscScalar v = S[j * sb + i];
        for (PetscInt q = 0; q < i; ++q) v -= Rp[i * sb + q] * Rp[j * sb + q];
        Rp[j * sb + i] = v / Rp[i * sb + i];
        d -= Rp[j * sb + i] * Rp[j * sb + i];
      }
      for (PetscInt i = j + 1; i < sb; ++i) Rp[j * sb + i] = 0.0;
      if (!(PetscRealPart(d) > CAGMRES_CHOL_TOL * PetscAbsScalar(D[j * ld + nv + j]))) {
        *ok = PETSC_FALSE;
        PetscFunctionReturn(PETSC_SUCCESS);
      }
      Rp[j * sb + j] = PetscSqrtScalar(d);
    }
  for (PetscInt j = 0; j < sb; ++j) {
    for (PetscInt q = 0; q < nv; ++q) Cp[j * ld + q] = coef[j * ld + q] = D[j * ld + q];
    for (PetscInt i = 0; i < j; ++i) coef[j * ld + nv + i] = Rp[j * sb + i];
    scale[j] = 1.0 / Rp[j * sb + j];
  }
  PetscCall(OpsBlockMAXPY(nv, g->Q, sb, g->Q + b + 1, coef, scale));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* CGS2 of the block W = Q[b+1..b+sb], column by column against Q[0..b] and the columns before it (two multi-dots,
   two global reductions and two multi-axpys per column): W = Q(:, 0:b) C + Q_new R with C in the rows of Cp, R in
   Rp as CAGMRESCholQRPass().  A column that keeps less than CAGMRES_LUCKY_TOL of its norm lies in the span of the
   previous vectors: *nvalid is its index (R(nvalid, nvalid) = 0, the later columns untouched), else sb.        */
PetscErrorCode CAGMRESCGS2(KSP ksp, KSP_FusedCAGMRES *g, PetscInt b, PetscInt sb, PetscScalar *Cp, PetscScalar *Rp, PetscInt *nvalid, PetscBool *nan)
{
  const PetscInt nv = b + 1, ld = nv + sb;
  PetscScalar   *d = g->D.data(), *e = g->D.data() + ld + 1;

  PetscFunctionBegin;
  *nvalid = sb;
  *nan    = PETSC_FALSE;
  for (PetscInt j = 0; j < sb; ++j) {
    const PetscInt nl = nv + j; /* Q[0..b+j]: the basis and the block's columns before j */
    Vec            wj = g->Q[b + 1 + j];
    PetscScalar    h2;

    for (PetscInt pass = 0; pass < 2; ++pass) {
      PetscScalar *v = pass ? e : d;

      PetscCall(OpsBatchBegin(PETSC_TRUE));
      PetscCall(OpsMDot(nl, g->Q, wj, PETSC_TRUE, v));
      PetscCall(OpsBatchEnd());
      PetscCall(OpsAllreduce(PetscObjectComm((PetscObject)ksp), v, nl + 1, &g->counters));
      for (PetscInt i = 0; i <= nl; ++i)
        if (PetscIsInfOrNanScalar(v[i])) *nan = PETSC_TRUE;
      if (*nan) PetscFunctionReturn(PETSC_SUCCESS);
      if (!pass) PetscCall(OpsMAXPYScale(nl, d, g->Q, wj, 1.0, nullptr, nullptr));
    }
    h2 = e[nl];
    for (PetscInt i = 0; i < nl; ++i) h2 -= e[i] * e[i];
    for (PetscInt q = 0; q < nv; ++q) Cp[j * ld + q] = d[q] + e[q];
    for (PetscInt i = 0; i < sb; ++i) Rp[j * sb + i] = i < j ? d[nv + i] + e[nv + i] : 0.0;
    if (!(PetscRealPart(h2) > CAGMRES_LUCKY_TOL * CAGMRES_LUCKY_TOL * PetscAbsScalar(d[nl]))) {
      *nvalid = j;
      PetscFunctionReturn(PETSC_SUCCESS);
    }
    Rp[j * sb + j] = PetscSqrtScalar(h2);
    PetscCall(OpsMAXPYScale(nl, e, g->Q, wj, 1.0 / Rp[j * sb + j], nullptr, nullptr));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* How far one pass of CholQR with the projection fused in may leave the block from orthogonal, as a condition
   number kappa (the loss is about eps kappa^2): the condition number of the projected block with its columns scaled
   to unit norm (its R factor R D^{-1}, D = diag(||R(:, j)||); the norms' growth along the basis costs CholQR
   nothing), bounded by kappa_F(R D^{-1}) = sqrt(sb) ||(R D^{-1})^{-1}||_F, times the largest ratio of a column's norm
   to its norm after the projection, sqrt(G_jj) / ||R(:, j)|| (the Pythagorean G - C^T C cancels that much).  R is
   sb x sb, column-major, upper; G the Gram matrix's diagonal as the pass reduced it (entry j at G[j * ldg]).  */
PetscReal CAGMRESPassCondition(PetscInt sb, const PetscScalar *R, const PetscScalar *G, PetscInt ldg)
{
  PetscScalar Rs[CAGMRES_MAX_S * CAGMRES_MAX_S], X[CAGMRES_MAX_S];
  PetscReal   inv2 = 0.0, cancel = 1.0;

  for (PetscInt j = 0; j < sb; ++j) {
    PetscReal nrm = 0.0;

    for (PetscInt i = 0; i <= j; ++i) nrm += PetscRealPart(R[j * sb + i] * PetscConj(R[j * sb + i]));
    nrm = PetscSqrtReal(nrm);
    if (!(nrm > 0.0)) return PETSC_INFINITY;
    cancel = PetscMax(cancel, PetscSqrtReal(PetscAbsScalar(G[j * ldg])) / nrm);
    for (PetscInt i = 0; i <= j; ++i) Rs[j * sb + i] = R[j * sb + i] / nrm;
  }
  for (PetscInt k = 0; k < sb; ++k) { /* column k of (R D^{-1})^{-1}: solve with e_k by back substitution */
    for (PetscInt i = k; i >= 0; --i) {
      PetscScalar v = i == k ? 1.0 : 0.0;

      for (PetscInt q = i + 1; q <= k; ++q) v -= Rs[q * sb + i] * X[q];
      X[i] = v / Rs[i * sb + i];
      inv2 += PetscRealPart(X[i] * PetscConj(X[i]));
    }
  }
  return PetscSqrtReal(sb * inv2) * cancel;
}

/* Orthogonalizes the block W = Q[b+1..b+sb] against Q[0..b] and inside itself (CholQR2, or CGS2 where CholQR
   fails or is not chosen): on return the block is orthonormal and its original columns are
   W = Q(:, 0:b) C + Q_new R, stored in the rows of g->K (row j: C(:, j), then R(0:j, j); stride b+1+sb).
   *nvalid: the leading columns of W that are independent (sb but at a lucky breakdown); *nan: a value is not
   finite.                                                                                                    */
PetscErrorCode CAGMRESOrthogonalize(KSP ksp, KSP_FusedCAGMRES *g, PetscInt b, PetscInt sb, PetscInt *nvalid, PetscBool *nan)
{
  const PetscInt nv = b + 1, ld = nv + sb;
  PetscScalar   *K = g->K.data(), *C1 = g->C1.data(), *R1 = g->R1.data(), *C2 = g->C2.data(), *R2 = g->R2.data();
  PetscBool      ok = PETSC_FALSE;

  PetscFunctionBegin;
  *nvalid = sb;
  if (g->orth != CAOrth::CGS2) {
    PetscCall(CAGMRESCholQRPass(ksp, g, b, sb, C1, R1, &ok, nan));
    if (*nan) PetscFunctionReturn(PETSC_SUCCESS);
    const PetscReal kappa = ok ? CAGMRESPassCondition(sb, R1, g->D.data() + nv, ld + 1) : PETSC_INFINITY;

    const PetscReal loss = g->loss * kappa + PETSC_MACHINE_EPSILON * kappa * kappa;

    PetscCall(PetscInfo(ksp, "Block at %" PetscInt_FMT ": first pass kappa %g loss %g\n", b, (double)kappa, (double)loss));
    if (ok && loss <= g->reorth_tol) { /* one pass is enough: C2 = 0, R2 = I */
      g->loss = loss;
      for (PetscInt i = 0; i < sb * ld; ++i) C2[i] = 0.0;
      for (PetscInt i = 0; i < sb * sb; ++i) R2[i] = i % (sb + 1) == 0 ? 1.0 : 0.0;
      g->nsingle++;
    } else if (ok) {
      PetscCall(CAGMRESCholQRPass(ksp, g, b, sb, C2, R2, &ok, nan));
      if (*nan) PetscFunctionReturn(PETSC_SUCCESS);
      if (!ok) PetscCall(PetscInfo(ksp, "Block at %" PetscInt_FMT ": the second CholQR pass is not positive definite; CGS2 of the block\n", b));
    } else {
      PetscCall(PetscInfo(ksp, "Block at %" PetscInt_FMT ": the projected Gram matrix is not numerically positive definite; CGS2 of the block\n", b));
      for (PetscInt i = 0; i < sb * ld; ++i) C1[i] = 0.0; /* the fallback starts from W itself: C1 = 0, R1 = I */
      for (PetscInt i = 0; i < sb * sb; ++i) R1[i] = i % (sb + 1) == 0 ? 1.0 : 0.0;
    }
  } else {
    for (PetscInt i = 0; i < sb * ld; ++i) C1[i] = 0.0;
    for (PetscInt i = 0; i < sb * sb; ++i) R1[i] = i % (sb + 1) == 0 ? 1.0 : 0.0;
  }
  if (!ok) {
    if (g->orth != CAOrth::CGS2) g->nfallback++;
    PetscCall(CAGMRESCGS2(ksp, g, b, sb, C2, R2, nvalid, nan));
    if (*nan) PetscFunctionReturn(PETSC_SUCCESS);
  }
  /* W = Q C1 + W1 R1 and W1 = Q C2 + Q_new R2: C = C1 + C2 R1, R = R2 R1 (the columns up to a breakdown) */
  for (PetscInt j = 0; j < PetscMin(sb, *nvalid + 1); ++j) {
    for (PetscInt q = 0; q < nv; ++q) {
      PetscScalar v = C1[j * ld + q];
      for (PetscInt k = 0; k <= j; ++k) v += C2[k * ld + q] * R1[j * sb + k];
      K[j * ld + q] = v;
    }
    for (PetscInt i = 0; i < sb; ++i) {
      PetscScalar v = 0.0;
      for (PetscInt k = i; k <= j; ++k) v += R2[k * sb + i] * R1[j * sb + k];
      K[j * ld + nv + i] = i <= j ? v : 0.0;
    }
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The Hessenberg columns b .. b+ncols-1 of the block (ncols = min(sb, nvalid + 1)), rows 0 .. b+nvalid:
   with Y = [q_b, W] = Q(:, 0:b+nvalid) T (T from e_b and g->K), Op Y(:, 0:ncols) = Y(:, 0:ncols+1) B and
   Op Q(:, 0:b-1) = Q(:, 0:b) H_prev:  H(:, b:b+ncols-1) = (T B - H_prev T(0:b-1, :)) T(b:b+ncols-1, :)^{-1}.
   nvalid < sb (lucky breakdown): the Krylov space is invariant and the last column has no subdiagonal entry. */
PetscErrorCode CAGMRESAssemble(KSP_FusedCAGMRES *g, PetscInt b, PetscInt sb, PetscInt nvalid)
{
  const PetscInt     nv = b + 1, ld = nv + sb, ncols = PetscMin(sb, nvalid + 1), nrows = b + 1 + nvalid, lt = g->restart + 1;
  const PetscScalar *K = g->K.data(), *B = g->B.data();
  PetscScalar       *T = g->T.data(), *X = g->X.data();

  PetscFunctionBegin;
  for (PetscInt r = 0; r < nrows; ++r) T[r] = r == b ? 1.0 : 0.0;
  for (PetscInt c = 1; c <= ncols; ++c) {
    const PetscInt j = c - 1;
    for (PetscInt r = 0; r < nv; ++r) T[c * lt + r] = K[j * ld + r];
    for (PetscInt i = 0; i < nvalid; ++i) T[c * lt + nv + i] = i <= j ? K[j * ld + nv + i] : 0.0;
  }
  for (PetscInt c = 0; c < ncols; ++c) {
    for (PetscInt r = 0; r < nrows; ++r) {
      PetscScalar v = 0.0;
      for (PetscInt q = 0; q <= ncols; ++q) v += T[q * lt + r] * B[c * (sb + 1) + q];
      if (r <= b)
        for (PetscInt q = 0; q < b; ++q) v -= Hij(g->H, g, r, q) * T[c * lt + q];
      for (PetscInt p = 0; p < c; ++p) v -= X[p * lt + r] * T[c * lt + b + p];
      X[c * lt + r] = v / T[c * lt + b + c];
    }
    for (PetscInt r = 0; r <= g->restart; ++r) Hij(g->H, g, r, b + c) = r < nrows ? X[c * lt + r] : 0.0;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Column j of the least-squares problem: the previous Givens rotations and a new one applied to H(:, j); the
   rotated right-hand side gr gives the residual estimate |gr[j+1]|.  *singular when the column is dependent on
   the previous ones (Op q_j in their span: a singular operator).                                            */
void CAGMRESGivens(KSP_FusedCAGMRES *g, PetscInt j, PetscBool *singular)
{
  for (PetscInt r = 0; r <= j + 1; ++r) Hij(g->HR, g, r, j) = Hij(g->H, g, r, j);
  for (PetscInt i = 0; i < j; ++i) {
    const PetscScalar a = Hij(g->HR, g, i, j), c = Hij(g->HR, g, i + 1, j);
    Hij(g->HR, g, i, j)     = g->cs[i] * a + g->sn[i] * c;
    Hij(g->HR, g, i + 1, j) = -g->sn[i] * a + g->cs[i] * c;
  }
  const PetscScalar a = Hij(g->HR, g, j, j), c = Hij(g->HR, g, j + 1, j);
  const PetscReal   r = PetscSqrtReal(PetscRealPart(a * a + c * c));
  *singular           = r > 0 ? PETSC_FALSE : PETSC_TRUE;
  if (*singular) return;
  g->cs[j]                = a / r;
  g->sn[j]                = c / r;
  Hij(g->HR, g, j, j)     = r;
  Hij(g->HR, g, j + 1, j) = 0.0;
  g->gr[j + 1]            = -g->sn[j] * g->gr[j];
  g->gr[j]                = g->cs[j] * g->gr[j];
}

/* x += M^{-1} Q(:, 0:k-1) y with HR(0:k-1, 0:k-1) y = gr(0:k-1) */
PetscErrorCode CAGMRESUpdateSolution(KSP ksp, KSP_FusedCAGMRES *g, PetscInt k, Vec x)
{
  std::vector<PetscScalar> negy;

  PetscFunctionBegin;
  if (k == 0) PetscFunctionReturn(PETSC_SUCCESS);
  FusedKSPCallCXX(negy.assign(k, 0.0));
  for (PetscInt i = k - 1; i >= 0; --i) { /* negy = -y */
    PetscScalar v = -g->gr[i];
    for (PetscInt j = i + 1; j < k; ++j) v -= Hij(g->HR, g, i, j) * negy[j];
    negy[i] = v / Hij(g->HR, g, i, i);
  }
  PetscCall(KSPFusedRightUpdate(ksp, g->mode, g->w, k, negy.data(), g->Q, x, ksp->work[VEC_T], ksp->work[VEC_T2]));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The Newton shifts: the Ritz values of Op (eigenvalues of the square Hessenberg H(0:k-1, 0:k-1) of the standard
   cycle) in Leja order: the largest in modulus first, then each maximizing the product of its distances to those
   chosen (a sum of logarithms), a complex pair together (+b then -b in g->im); the s-th shift of a split pair
   becomes its real part.  Fewer than s Ritz values: the chosen ones repeat, as real parts.                     */
PetscErrorCode CAGMRESLejaShifts(KSP ksp, KSP_FusedCAGMRES *g, PetscInt k)
{
  std::vector<PetscScalar> h, work;
  std::vector<PetscReal>   wr, wi;
  std::vector<char>        used;
  PetscBLASInt             n, one = 1, info, lwork;
  PetscScalar              z   = 0;
  PetscInt                 nsh = 0;

  PetscFunctionBegin;
  PetscCall(PetscBLASIntCast(k, &n));
  FusedKSPCallCXX(h.resize((size_t)k * k); work.resize(4 * (size_t)k + 16); wr.resize(k); wi.resize(k); used.assign(k, 0));
  for (PetscInt j = 0; j < k; ++j)
    for (PetscInt i = 0; i < k; ++i) h[j * k + i] = Hij(g->H, g, i, j);
  PetscCall(PetscBLASIntCast((PetscInt)work.size(), &lwork));
  PetscCall(PetscFPTrapPush(PETSC_FP_TRAP_OFF));
  PetscCallBLAS("LAPACKhseqr", LAPACKhseqr_("E", "N", &n, &one, &n, h.data(), &n, wr.data(), wi.data(), &z, &one, work.data(), &lwork, &info));
  PetscCall(PetscFPTrapPop());
  PetscCheck(info == 0, PETSC_COMM_SELF, PETSC_ERR_LIB, "LAPACK hseqr (Ritz values for the Newton basis) failed with info %d", (int)info);
  while (nsh < g->s) {
    PetscInt  best    = -1;
    PetscReal bestval = 0;

    for (PetscInt i = 0; i < k; ++i) {
      PetscReal val = 0;

      if (used[i] || wi[i] < 0) continue; /* a pair is represented by its member with positive imaginary part */
      if (nsh == 0)
        val = std::hypot(wr[i], wi[i]);
      else
        for (PetscInt t = 0; t < nsh; ++t) val += std::log(std::hypot(wr[i] - g->re[t], wi[i] - g->im[t]));
      if (best < 0 || val > bestval) {
        best    = i;
        bestval = val;
      }
    }
    if (best < 0) break;
    used[best] = 1;
    g->re[nsh] = wr[best];
    g->im[nsh] = 0.0;
    if (wi[best] > 0 && nsh + 1 < g->s) {
      g->im[nsh]     = wi[best];
      g->re[nsh + 1] = wr[best];
      g->im[nsh + 1] = -wi[best];
      nsh++;
    }
    nsh++;
  }
  for (PetscInt i = nsh; i < g->s; ++i) {
    g->re[i] = g->re[i % nsh];
    g->im[i] = 0.0;
  }
  for (PetscInt i = 0; i < g->s; ++i) PetscCall(PetscInfo(ksp, "Newton shift %" PetscInt_FMT ": %g %+g i\n", i, (double)g->re[i], (double)g->im[i]));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The start of a cycle: the true residual r = b - A x in q_0, rho = ||r|| (one reduction), its test (iteration 0,
   or the restart after `its` iterations: the KSP's test and ksp->rnorm, `estimate` the one it replaces), q_0 = r/rho;
   *stop when the solve ends here (a reason, max_it, or rho = 0)                                                   */
PetscErrorCode CAGMRESCycleStart(KSP ksp, KSP_FusedCAGMRES *g, Mat A, PetscInt its, PetscReal estimate, PetscReal *rho, PetscBool *stop)
{
  PetscFunctionBegin;
  PetscCall(KSPFusedResidualNorm(ksp, A, g->Q[0], nullptr, g->mode, g->w, &g->counters, rho));
  if (its > 0) PetscCall(PetscInfo(ksp, "Restart after %" PetscInt_FMT " iterations: estimated residual %g, true residual %g\n", its, (double)estimate, (double)*rho));
  PetscCall(KSPFusedCycleTest(ksp, its, *rho, stop));
  if (*stop) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(VecScale(g->Q[0], 1.0 / *rho));
  g->loss = PETSC_MACHINE_EPSILON;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPSolve_FusedCAGMRES(KSP ksp)
{
  KSP_FusedCAGMRES *g = static_cast<KSP_FusedCAGMRES *>(ksp->data);
  Mat               A;
  PetscInt          its      = 0;
  PetscReal         estimate = -1, prev = -1;

  TrueResidualGuard guard;

  PetscFunctionBegin;
  PetscCall(KSPGetOperators(ksp, &A, NULL));
  PetscCall(KSPFusedPCMode(ksp, ksp->work[VEC_T], &g->mode, &g->w));
  PetscCall(CAGMRESPowersSetUp(ksp, g, A, g->mode));
  g->counters = SolveCounters();
  g->cycle_k  = 0;
  g->nstd = g->nblocks = g->nfallback = g->nlucky = g->nsingle = 0;
  {
    Mat              P;
    PetscObjectState state[2];

    PetscCall(KSPGetOperators(ksp, nullptr, &P));
    PetscCall(PetscObjectStateGet((PetscObject)A, &state[0]));
    PetscCall(PetscObjectStateGet((PetscObject)P, &state[1]));
    g->shifts_reused  = (g->basis == CABasis::NEWTON && g->reuse_shifts && g->shifts_known && state[0] == g->shift_state[0] && state[1] == g->shift_state[1]) ? PETSC_TRUE : PETSC_FALSE;
    g->shift_state[0] = state[0];
    g->shift_state[1] = state[1];
  }
  g->have_shifts = (g->basis == CABasis::MONOMIAL || g->shifts_reused) ? PETSC_TRUE : PETSC_FALSE;
  if (g->basis == CABasis::MONOMIAL) {
    for (PetscInt i = 0; i < g->s; ++i) g->re[i] = g->im[i] = 0.0;
    g->shifts_known = PETSC_FALSE;
  }
  ksp->reason = KSP_CONVERGED_ITERATING;
  if (ksp->guess_zero) PetscCall(VecSet(ksp->vec_sol, 0.0));

  while (PETSC_TRUE) {
    const PetscInt m   = g->restart;
    PetscReal      rho = 0, res = 0;
    PetscInt       k    = 0, sb;
    PetscBool      stop = PETSC_FALSE, cut = PETSC_FALSE;

    PetscCall(CAGMRESCycleStart(ksp, g, A, its, estimate, &rho, &stop));
    if (stop) break;
    if (prev > 0 && rho > CAGMRES_GROWTH * prev) {
      PetscCall(PetscInfo(ksp, "The cycle raised the true residual from %g to %g: its basis lost orthogonality (try a smaller s or -ksp_cagmres_orth cgs2)\n", (double)prev, (double)rho));
      ksp->reason = KSP_DIVERGED_BREAKDOWN;
      break;
    }
    prev = rho;
    res  = rho;
    sb   = g->have_shifts ? g->s : 1;
    if (sb == 1) g->nstd++;
    for (PetscInt i = 0; i <= m; ++i) g->gr[i] = 0.0;
    g->gr[0] = rho;
    for (PetscInt b = 0; b < m && !cut; b += sb) {
      PetscInt  nvalid;
      PetscBool nan;

      PetscCall(CAGMRESMatrixPowers(ksp, g, A, b, sb));
      PetscCall(CAGMRESOrthogonalize(ksp, g, b, sb, &nvalid, &nan));
      if (nan) {
        ksp->reason = KSP_DIVERGED_NANORINF;
        break;
      }
      if (sb == g->s) g->nblocks++;
      PetscCall(CAGMRESAssemble(g, b, sb, nvalid));
      for (PetscInt c = 0; c < PetscMin(sb, nvalid + 1); ++c) {
        PetscBool singular;

        CAGMRESGivens(g, b + c, &singular);
        if (singular) {
          PetscCall(PetscInfo(ksp, "Step %" PetscInt_FMT " of the cycle: the Hessenberg column is dependent on the previous ones (singular operator)\n", b + c));
          ksp->reason = KSP_DIVERGED_BREAKDOWN;
          break;
        }
        k = g->cycle_k = b + c + 1;
        its++;
        res = PetscAbsScalar(g->gr[b + c + 1]);
        PetscCall(KSPFusedMonitorAndTest(ksp, its, ksp->normtype == KSP_NORM_NONE ? 0.0 : res));
        if (ksp->reason || its >= ksp->max_it) break;
      }
      if (nvalid < sb) {
        PetscCall(PetscInfo(ksp, "Lucky breakdown at step %" PetscInt_FMT " of the cycle: the Krylov space is invariant\n", b + nvalid + 1));
        g->nlucky++;
        cut = PETSC_TRUE;
      }
      if (ksp->reason || its >= ksp->max_it) cut = PETSC_TRUE;
    }
    estimate = res;
    /* the shifts also when the standard cycle ends the solve (converged, or max_it): a later solve with the same
       operators reuses them (-ksp_cagmres_reuse_shifts), so repeated solves of one cycle run in blocks too */
    if (sb == 1 && g->basis == CABasis::NEWTON && k >= g->s && (ksp->reason >= 0 || ksp->reason == KSP_DIVERGED_ITS)) {
      PetscCall(CAGMRESLejaShifts(ksp, g, k));
      g->have_shifts  = PETSC_TRUE;
      g->shifts_known = PETSC_TRUE;
    }
    PetscCall(CAGMRESUpdateSolution(ksp, g, k, ksp->vec_sol));
    g->cycle_k = 0;
    {
      PetscReal truenorm;
      PetscBool replaced;

      PetscCall(KSPFusedCycleEnd(ksp, g->mode, g->w, PETSC_FALSE, ksp->work[VEC_T], ksp->work[VEC_T2], k, its, &guard, &truenorm, &replaced, &stop));
      if (replaced) {
        PetscCall(PetscInfo(ksp, "Iteration %" PetscInt_FMT ": estimated residual %g passed but true residual %g did not; restarting\n", its, (double)res, (double)truenorm));
        prev = -1; /* the restart compares with this true residual, not with the estimate */
      }
      if (stop) break;
    }
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The current iterate: x plus the part of the cycle not yet added to it (for -ksp_monitor_true_residual) */
PetscErrorCode KSPBuildSolution_FusedCAGMRES(KSP ksp, Vec v, Vec *V)
{
  KSP_FusedCAGMRES *g      = static_cast<KSP_FusedCAGMRES *>(ksp->data);
  Vec               target = v ? v : ksp->work[VEC_SOL];

  PetscFunctionBegin;
  PetscCall(VecCopy(ksp->vec_sol, target));
  PetscCall(CAGMRESUpdateSolution(ksp, g, g->cycle_k, target));
  if (V) *V = target;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPView_FusedCAGMRES(KSP ksp, PetscViewer viewer)
{
  KSP_FusedCAGMRES *g = static_cast<KSP_FusedCAGMRES *>(ksp->data);
  PetscBool         ascii;

  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERASCII, &ascii));
  if (ascii) {
    PetscCall(PetscViewerASCIIPrintf(viewer, "  s=%" PetscInt_FMT " (steps per block), restart=%" PetscInt_FMT "\n", g->s, g->restart));
    if (g->orth != CAOrth::CGS2) PetscCall(PetscViewerASCIIPrintf(viewer, "  second pass of a block when one would let the basis's estimated loss of orthogonality exceed %g (-ksp_cagmres_reorth_tol)\n", (double)g->reorth_tol));
    PetscCall(PetscViewerASCIIPrintf(viewer, "  basis: %s\n", g->basis == CABasis::NEWTON ? "newton (Leja-ordered Ritz values of a first standard cycle)" : "monomial"));
    PetscCall(PetscViewerASCIIPrintf(viewer, "  orthogonalization: %s\n",
                                     g->orth == CAOrth::CHOLQR ? "cholqr (block CGS + CholQR, a second pass where the first one's block is ill-conditioned: 1-2 reductions per block; CGS2 of a block whose Gram matrix is not positive definite)"
                                     : g->orth == CAOrth::SVQR ? "svqr (block CGS + SVQR, a second pass where the first one's block is ill-conditioned: 1-2 reductions per block; the Gram matrix's small eigenvalues raised to eps of the largest)"
                                                               : "cgs2 (column by column: 2 reductions per step)"));
    PetscCall(PetscViewerASCIIPrintf(viewer,
                                     "  last solve: %" PetscInt_FMT " standard cycles, %" PetscInt_FMT " blocks of s steps, %" PetscInt_FMT " blocks orthogonalized in one pass, %" PetscInt_FMT " CGS2 fallbacks, %" PetscInt_FMT " lucky breakdowns\n",
                                     g->nstd, g->nblocks, g->nsingle, g->nfallback, g->nlucky));
    if (g->have_shifts && g->basis == CABasis::NEWTON) {
      PetscCall(PetscViewerASCIIPrintf(viewer, "  Newton shifts%s:", g->shifts_reused ? " (of an earlier solve: the operators are unchanged)" : ""));
      PetscCall(PetscViewerASCIIUseTabs(viewer, PETSC_FALSE));
      for (PetscInt i = 0; i < g->s; ++i) PetscCall(PetscViewerASCIIPrintf(viewer, " %g%+gi", (double)g->re[i], (double)g->im[i]));
      PetscCall(PetscViewerASCIIPrintf(viewer, "\n"));
      PetscCall(PetscViewerASCIIUseTabs(viewer, PETSC_TRUE));
    }
  }
  if (ascii) {
    PetscMPIInt size;

    PetscCallMPI(MPI_Comm_size(PetscObjectComm((PetscObject)ksp), &size));
    if (g->powers) {
      PetscInt   info[2];
      PetscInt64 exchanges;

      PetscCall(OpsMatrixPowersGetInfo(g->powers, &info[0], &info[1], &exchanges));
      PetscCallMPI(MPIU_Allreduce(MPI_IN_PLACE, info, 2, MPIU_INT, MPI_SUM, PetscObjectComm((PetscObject)ksp)));
      PetscCall(PetscViewerASCIIPrintf(viewer, "  matrix powers: one halo exchange of depth s per block (%" PetscInt_FMT " ghost entries, %" PetscInt_FMT " ghost rows computed on all ranks)\n", info[0], info[1]));
    } else if (size > 1)
      PetscCall(PetscViewerASCIIPrintf(viewer, "  matrix powers: one halo exchange per product (%s)\n",
                                       !g->use_powers ? "-ksp_cagmres_matrix_powers 0"
                                       : g->s == 1    ? "s = 1"
                                                      : "the kernel needs a MATMPIAIJFUSED, fused vectors and Jacobi or no preconditioner"));
  }
  PetscCall(KSPFusedViewCommon(ksp, viewer, g->mode,
                               "per block of s steps: s operator applications and s shift updates (under MPI one halo exchange of depth s with the matrix powers kernel, else one per product), one or two passes of a block multi-dot, a global "
                               "reduction and a block multi-axpy"));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPSetFromOptions_FusedCAGMRES(KSP ksp, PetscOptionItems PetscOptionsObject)
{
  KSP_FusedCAGMRES *g = static_cast<KSP_FusedCAGMRES *>(ksp->data);
  PetscInt          s = g->s;
  PetscBool         flg;

  PetscFunctionBegin;
  PetscOptionsHeadBegin(PetscOptionsObject, "KSP fused communication-avoiding GMRES options");
  PetscCall(KSPFusedGMRESRestartOption<KSP_FusedCAGMRES>(PetscOptionsObject, ksp, "Number of Krylov directions before restart (a multiple of -ksp_cagmres_s)"));
  PetscCall(PetscOptionsInt("-ksp_cagmres_s", "Steps per block: basis vectors from s operator applications, orthogonalized together (1 to 64)", "KSPFUSEDCAGMRES", s, &s, &flg));
  if (flg && s != g->s) {
    g->s            = s;
    ksp->setupstage = KSP_SETUP_NEW;
  }
  PetscCall(PetscOptionsEnum("-ksp_cagmres_basis", "Basis of a block: newton (Leja-ordered Ritz values of a first standard cycle as shifts) or monomial", "KSPFUSEDCAGMRES", CABasisTypes, (PetscEnum)g->basis, (PetscEnum *)&g->basis, NULL));
  PetscCall(
      PetscOptionsBool("-ksp_cagmres_reuse_shifts", "Newton basis: a solve with the operators of the previous solve unchanged takes its shifts instead of running a standard cycle first", "KSPFUSEDCAGMRES", g->reuse_shifts, &g->reuse_shifts, NULL));
  PetscCall(PetscOptionsBool("-ksp_cagmres_matrix_powers",
                             "Under MPI, the s products of a block with one halo exchange of depth s (ghost region from the matrix graph) instead of one exchange per product (MATMPIAIJFUSED, Jacobi or no preconditioner)", "KSPFUSEDCAGMRES",
                             g->use_powers, &g->use_powers, NULL));
  PetscCall(PetscOptionsReal("-ksp_cagmres_reorth_tol", "CholQR/SVQR: a block keeps its first pass (no second pass and reduction) while the basis's estimated loss of orthogonality stays at most this; 0: always two passes", "KSPFUSEDCAGMRES",
                             g->reorth_tol, &g->reorth_tol, NULL));
  PetscCall(PetscOptionsEnum(
      "-ksp_cagmres_orth",
      "Orthogonalization of a block: cholqr (block CGS + CholQR, once or twice: 1-2 reductions per block), svqr (the same with SVQR: eigenvalues of the Gram matrix, for ill-conditioned blocks) or cgs2 (column by column, 2 reductions per step)",
      "KSPFUSEDCAGMRES", CAOrthTypes, (PetscEnum)g->orth, (PetscEnum *)&g->orth, NULL));
  PetscOptionsHeadEnd();
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPReset_FusedCAGMRES(KSP ksp)
{
  KSP_FusedCAGMRES *g = static_cast<KSP_FusedCAGMRES *>(ksp->data);

  PetscFunctionBegin;
  if (g->Q) PetscCall(VecDestroyVecs(g->nQ, &g->Q));
  g->nQ = 0;
  PetscCall(VecDestroy(&g->w));
  PetscCall(OpsMatrixPowersDestroy(&g->powers));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPDestroy_FusedCAGMRES(KSP ksp)
{
  PetscFunctionBegin;
  PetscCall(KSPReset_FusedCAGMRES(ksp));
  PetscCall(KSPFusedComposeGMRESRestart<KSP_FusedCAGMRES>(ksp, PETSC_FALSE));
  PetscCall(KSPFusedDestroyData<KSP_FusedCAGMRES>(ksp));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The operations KSPCreate_FusedCAGMRES() sets */
const KSPFusedOps FusedCAGMRESOps = {KSPSetUp_FusedCAGMRES, KSPSolveScoped<KSPSolve_FusedCAGMRES>, KSPDestroy_FusedCAGMRES, KSPView_FusedCAGMRES, KSPSetFromOptions_FusedCAGMRES, KSPReset_FusedCAGMRES, KSPBuildSolution_FusedCAGMRES};

} // namespace
} // namespace fusedksp

/*MC
   KSPFUSEDCAGMRES - "fusedcagmres" - Communication-avoiding GMRES(s, m) (Hoemmen; Yamazaki, Anzt, Tomov, Hoemmen &
   Dongarra, seed 001), right preconditioned: the Krylov basis grows in blocks of s vectors, each from s operator
   applications (the matrix powers loop) followed by ONE block orthogonalization - block classical Gram-Schmidt
   against the previous vectors fused with CholQR of the block, done again where the block is ill-conditioned
   (CholQR2) - so a block of s steps costs 1 or 2 global reductions instead of the 1-2 per step of `KSPGMRES` or
   `KSPFUSEDSGMRES`.

   Options Database Keys:
+  -ksp_type fusedcagmres - selects this solver
.  -ksp_gmres_restart <m> - restart (default 30), a multiple of s; `KSPGMRESSetRestart()` works too
.  -ksp_cagmres_s <s> - steps per block (default 5, at most 64)
.  -ksp_cagmres_basis <newton,monomial> - Newton basis with Leja-ordered Ritz values of a first standard cycle as
                                          shifts (default), or the monomial basis
.  -ksp_cagmres_reuse_shifts <bool> - a solve whose operators are unchanged since the previous one takes its shifts
                                      and starts with blocks of s at once (default true)
.  -ksp_cagmres_orth <cholqr,svqr,cgs2> - block orthogonalization: CholQR (twice where needed) with a CGS2
                                     fallback (default), SVQR (R from the eigendecomposition of the projected Gram matrix, its small
                                     eigenvalues raised to eps of the largest: blocks too ill-conditioned for
                                     Cholesky are still orthogonalized), or CGS2 of every block column by column
                                     (2 reductions per step, a reference)
.  -ksp_cagmres_reorth_tol <1e-10> - CholQR/SVQR: the second pass of a block only where one pass would let the
                                    estimated loss of orthogonality of the cycle's basis exceed this (0: always two
                                    passes)
-  -ksp_cagmres_matrix_powers <bool> - under MPI, one halo exchange of depth s per block (default) instead of one
                                       per product

   Level: intermediate

   Notes:
   Use it where global reductions dominate the time of an iteration: many MPI processes, or a GPU whose
   reductions cost host round trips, with an operator cheap to apply.  The default s = 5 divides the default
   restart 30 and cuts the reductions of a cycle about five-fold while keeping the condition number of a block
   low enough for CholQR, which squares it (the paper's s of 10-30 needs larger restarts and well-chosen shifts;
   a block that CholQR cannot handle falls back to CGS2 with 2 reductions per step, counted in -ksp_view).

   The first solve starts with one standard cycle (blocks of one vector, Arnoldi with CGS2) whose Hessenberg matrix
   gives the Ritz values for the Newton basis (also when that cycle ends the solve, converged or at the maximum
   number of iterations, with at least s steps); later solves with unchanged operators (their object states) reuse
   those shifts and start with blocks of s at once (a changed preconditioner with the same matrices keeps them too:
   the shifts only condition the basis, the iterates stay those of GMRES); with the monomial basis, blocks of s
   start at once.  The residual
   estimate of every step is monitored and tested (the Givens rotations of each Hessenberg column), so the
   iteration counts are those of `KSPGMRES` with the same restart; a cycle that converges inside a block ends
   there, the true residual confirms convergence, and the next cycle starts from the true residual.

   Under MPI, with a `MATMPIAIJFUSED` operator and Jacobi or no preconditioner, the s products of a block run as
   the matrix powers kernel: the entries other processes own within graph distance s of the local rows (the ghost
   region, found from the matrix graph at the first solve and again after the matrix changes) arrive in ONE halo
   exchange per block, and each process computes the rows of the ghost region it needs itself (about 4 s sqrt(n)
   rows for a 2D 5-point stencil with n rows per process); -ksp_cagmres_matrix_powers 0 exchanges once per
   product instead.  The block products run as one multi-dot or multi-axpy per column of the block on the fused
   backends, their dot products completing in one reduction per pass.

   A lucky breakdown (the solution in a Krylov space smaller than the block) cuts the cycle; a projected Gram
   matrix that is not positive definite falls back to CGS2 of that block (-info reports both); a cycle that
   raises the true residual (loss of orthogonality) ends the solve with `KSP_DIVERGED_BREAKDOWN`.

   References:
+  * - M. Hoemmen, Communication-avoiding Krylov subspace methods, PhD thesis, UC Berkeley, 2010.
.  * - I. Yamazaki, H. Anzt, S. Tomov, M. Hoemmen, J. Dongarra, Improving the performance of CA-GMRES on multicores
       with multiple GPUs, IPDPS 2014.
-  * - Z. Bai, D. Hu, L. Reichel, A Newton basis GMRES implementation, IMA J. Numer. Anal. 14 (1994).

.seealso: `KSPGMRES`, `KSPFUSEDSGMRES`, `KSPGMRESSetRestart()`
M*/
PETSC_INTERN PetscErrorCode KSPCreate_FusedCAGMRES(KSP ksp)
{
  PetscFunctionBegin;
  PetscCall(fusedksp::KSPFusedCreate<fusedksp::KSP_FusedCAGMRES>(ksp, fusedksp::FusedCAGMRESOps, {{KSP_NORM_UNPRECONDITIONED, PC_RIGHT}}));
  ksp->guess_not_read = PETSC_TRUE; /* KSPSolve() need not zero x: the solve zeroes it itself */
  PetscCall(fusedksp::KSPFusedComposeGMRESRestart<fusedksp::KSP_FusedCAGMRES>(ksp, PETSC_TRUE));
  PetscFunctionReturn(PETSC_SUCCESS);
}
