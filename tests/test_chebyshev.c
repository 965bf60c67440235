static char help[] = "Chebyshev (KSPCHEBYSHEV) on fused types (or PETSc's CUDA types, -fused_mat_type aijcusparse) against PETSc's on\n\
plain AIJ, on one problem (tutorials/problems.h).\n\
The smoother's form (first kind, no residual norms) with -pc_type jacobi and none, a zero and a random initial guess,\n\
1, 2, 3 and 6 steps and set eigenvalue bounds: the solutions agree to 1e-12 (relative); the fused KSP ran its steps on\n\
the backend (-ksp_view: \"solves with one kernel per step\"; aijfused and aijcusparse on any number of processes),\n\
on one process a repeated solve with a nonzero guess\n\
taking at most one kernel launch per step plus one copy and no host<->device copy (FusedKSPGetBackendCounters()).\n\
After MatScale() of both matrices (new Jacobi weights) they agree again.  The forms PETSc runs itself (fourth kind,\n\
residual norms, a PC other than jacobi/none, -ksp_chebyshev_fused false) agree too\n\
and -ksp_view\n\
says why.  With the eigenvalues estimated by the KSP (no bounds set) the solutions agree to 1e-8.  -gamg: CG with\n\
PCGAMG on both matrices, iterations at most 1 apart, solutions within 1e-8, and every level's smoother ran the fused\n\
steps (where the fused side does).  Matrices with most rows empty (PETSc's aijcusparse compresses them), with and without a long row (CSR,\n\
else SELL-P): the same solutions, by the fused steps.\n\
Ends with 'test_chebyshev: PASS' or 'test_chebyshev: FAIL'.\n\
Options: -gamg, -fused_mat_type <aijfused> (the type the fused side converts to), -problem ... -n ... (tutorials/problems.h).\n\n";

#include <fusedksp.h>
#include "problems.h"
#include "check.h"
#include "vectors.h"
#include "kspview.h"
#include <string.h>

/* A Chebyshev KSP as a smoother: first kind, no norms, max_it steps, the bounds (emax, emin) unless emax is 0 */
static PetscErrorCode ChebyshevCreate(Mat A, const char prefix[], PCType pctype, PetscInt steps, PetscReal emax, PetscReal emin, KSP *ksp)
{
  PC pc;

  PetscFunctionBeginUser;
  PetscCall(KSPCreate(PETSC_COMM_WORLD, ksp));
  PetscCall(KSPSetOptionsPrefix(*ksp, prefix));
  PetscCall(KSPSetType(*ksp, KSPCHEBYSHEV));
  PetscCall(KSPSetOperators(*ksp, A, A));
  PetscCall(KSPSetTolerances(*ksp, PETSC_CURRENT, PETSC_CURRENT, PETSC_CURRENT, steps));
  PetscCall(KSPSetNormType(*ksp, KSP_NORM_NONE));
  PetscCall(KSPSetConvergenceTest(*ksp, KSPConvergedSkip, NULL, NULL));
  if (emax > 0) PetscCall(KSPChebyshevSetEigenvalues(*ksp, emax, emin));
  PetscCall(KSPGetPC(*ksp, &pc));
  PetscCall(PCSetType(pc, pctype));
  PetscCall(KSPSetFromOptions(*ksp));
  PetscFunctionReturn(PETSC_SUCCESS);
}

typedef struct {
  Mat       Af, Ar;          /* the fused copy and PETSc's matrix */
  Vec       bf, br;          /* right-hand sides */
  Vec       xf, xr, x0, x0f; /* solutions, and the random initial guess (plain, and fused) */
  PetscBool serial;
  PetscBool fused;       /* the fused side runs the fused steps: an aijfused matrix, PETSc's mpiaijcusparse, or one process */
  char      mattype[64]; /* the fused side's type (-fused_mat_type) */
} Setting;

/* Both KSPs from the same initial guess (zero, or x0); *d: the relative difference of the solutions */
static PetscErrorCode SolveBoth(Setting *s, KSP kf, KSP kr, PetscBool guess, PetscReal *d)
{
  PetscFunctionBeginUser;
  if (guess) {
    PetscCall(CopyValues(s->x0, s->xf));
    PetscCall(CopyValues(s->x0, s->xr));
  }
  PetscCall(KSPSetInitialGuessNonzero(kf, guess));
  PetscCall(KSPSetInitialGuessNonzero(kr, guess));
  PetscCall(KSPSolve(kf, s->bf, s->xf));
  PetscCall(KSPSolve(kr, s->br, s->xr));
  PetscCall(RelDiff(s->xf, s->xr, d));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The smoother's form: fused steps on one process, checked against PETSc's, its kernels counted */
static PetscErrorCode CheckSmoother(Setting *s, PCType pctype, PetscReal emax, PetscReal emin)
{
  PetscFunctionBeginUser;
  for (PetscInt steps = 1; steps <= 6; steps += (steps == 3 ? 3 : 1)) {
    for (int guess = 0; guess < 2; ++guess) {
      KSP        kf, kr;
      PetscReal  d;
      PetscInt64 l0, d0, h0, l1, d1, h1;
      PetscBool  found;

      PetscCall(ChebyshevCreate(s->Af, "fused_", pctype, steps, emax, emin, &kf));
      PetscCall(ChebyshevCreate(s->Ar, "ref_", pctype, steps, emax, emin, &kr));
      PetscCall(SolveBoth(s, kf, kr, (PetscBool)guess, &d));
      PetscCall(Check((PetscBool)(d <= 1e-12), "pc %s, %" PetscInt_FMT " steps, %s guess: fused and PETSc's solutions differ by %g <= 1e-12", pctype, steps, guess ? "random" : "zero", (double)d));
      if (s->fused) {
        PetscCall(ViewContains(kf, "solves with one kernel per step on the", &found));
        PetscCall(Check(found, "pc %s, %" PetscInt_FMT " steps, %s guess: -ksp_view says the steps ran on the backend", pctype, steps, guess ? "random" : "zero"));
        if (guess && s->serial) { /* again, the weights computed: one kernel a step, the last copy (the guess copied on the backend first) */
          PetscCall(VecCopy(s->x0f, s->xf));
          PetscCall(FusedKSPGetBackendCounters(&l0, &d0, &h0));
          PetscCall(KSPSolve(kf, s->bf, s->xf));
          PetscCall(FusedKSPGetBackendCounters(&l1, &d1, &h1));
          PetscCall(Check((PetscBool)(l1 - l0 >= steps && l1 - l0 <= steps + 1), "pc %s, %" PetscInt_FMT " steps: %lld kernel launches in a repeated solve, between %" PetscInt_FMT " and %" PetscInt_FMT, pctype, steps, (long long)(l1 - l0), steps,
                          steps + 1));
          PetscCall(Check((PetscBool)(d1 == d0 && h1 == h0), "pc %s, %" PetscInt_FMT " steps: no host<->device copy in a repeated solve (%lld, %lld)", pctype, steps, (long long)(d1 - d0), (long long)(h1 - h0)));
        }
      } else {
        PetscCall(ViewContains(kf, "by PETSc's steps (the operator is neither an aijfused matrix", &found));
        PetscCall(Check(found, "pc %s on several processes: -ksp_view says the steps are PETSc's, and why", pctype));
      }
      PetscCall(KSPDestroy(&kf));
      PetscCall(KSPDestroy(&kr));
    }
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* A form PETSc runs itself (set up by `modify` on both KSPs): the same solution, -ksp_view gives the reason `why` */
static PetscErrorCode CheckFallback(Setting *s, const char *what, PCType pctype, PetscErrorCode (*modify)(KSP), const char *why)
{
  KSP       kf, kr;
  PetscReal d;
  PetscBool found;
  char      text[256];

  PetscFunctionBeginUser;
  PetscCall(ChebyshevCreate(s->Af, "fused_", pctype, 3, 2.0, 0.2, &kf));
  PetscCall(ChebyshevCreate(s->Ar, "ref_", pctype, 3, 2.0, 0.2, &kr));
  if (modify) {
    PetscCall((*modify)(kf));
    PetscCall((*modify)(kr));
  }
  PetscCall(SolveBoth(s, kf, kr, PETSC_TRUE, &d));
  PetscCall(Check((PetscBool)(d <= 1e-12), "%s: fused and PETSc's solutions differ by %g <= 1e-12", what, (double)d));
  PetscCall(PetscSNPrintf(text, sizeof(text), "by PETSc's steps (%s", s->fused ? why : ""));
  PetscCall(ViewContains(kf, text, &found));
  PetscCall(Check(found, "%s: -ksp_view says \"%s\"", what, text));
  PetscCall(KSPDestroy(&kf));
  PetscCall(KSPDestroy(&kr));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode FourthKind(KSP ksp)
{
  PetscFunctionBeginUser;
  PetscCall(KSPChebyshevSetKind(ksp, KSP_CHEBYSHEV_FOURTH));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode WithNorms(KSP ksp)
{
  PetscFunctionBeginUser;
  PetscCall(KSPSetNormType(ksp, KSP_NORM_PRECONDITIONED));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* A 128 x 128 matrix of type `type` (NULL: MATSEQAIJ) whose rows 1..95 have no entries (PETSc compresses such rows: its
   device copy of an aijcusparse matrix holds the others only) and rows 96..127 a diagonal entry; row 0 `sparse`: empty,
   else full (one long row: SELL-P would pad its slice to 128 entries a row, so the fused products read CSR) */
static PetscErrorCode PatternMatrix(PetscBool sparse, MatType type, Mat *A)
{
  const PetscInt n = 128;

  PetscFunctionBeginUser;
  PetscCall(MatCreateSeqAIJ(PETSC_COMM_SELF, n, n, 0, NULL, A));
  PetscCall(MatSetOption(*A, MAT_NEW_NONZERO_ALLOCATION_ERR, PETSC_FALSE));
  for (PetscInt i = 96; i < n; ++i) PetscCall(MatSetValue(*A, i, i, (PetscScalar)(i + 2), INSERT_VALUES));
  for (PetscInt j = 0; j < n && !sparse; ++j) PetscCall(MatSetValue(*A, 0, j, j ? 0.01 : 2.0, INSERT_VALUES));
  PetscCall(MatAssemblyBegin(*A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(*A, MAT_FINAL_ASSEMBLY));
  if (type) PetscCall(MatConvert(*A, type, MAT_INPLACE_MATRIX, A));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Chebyshev (pc none) on a PatternMatrix(): the fused side's type and PETSc's AIJ agree, and the fused steps ran (on
   aijcusparse: a SELL-P copy without the long row, PETSc's CSR arrays in place with it) */
static PetscErrorCode CheckPattern(Setting *s, PetscBool sparse)
{
  Mat       Af, Ar;
  Vec       xf, bf, xr, br;
  KSP       kf, kr;
  PetscReal d;
  PetscBool found;

  PetscFunctionBeginUser;
  PetscCall(PatternMatrix(sparse, s->mattype, &Af));
  PetscCall(PatternMatrix(sparse, NULL, &Ar));
  PetscCall(MatCreateVecs(Af, &xf, &bf));
  PetscCall(MatCreateVecs(Ar, &xr, &br));
  PetscCall(VecSet(br, 1.0));
  PetscCall(VecSet(bf, 1.0));
  PetscCall(VecSet(xr, 0.5));
  PetscCall(VecSet(xf, 0.5));
  PetscCall(KSPCreate(PETSC_COMM_SELF, &kf));
  PetscCall(KSPCreate(PETSC_COMM_SELF, &kr));
  for (int k = 0; k < 2; ++k) {
    KSP ksp = k ? kr : kf;
    PC  pc;

    PetscCall(KSPSetType(ksp, KSPCHEBYSHEV));
    PetscCall(KSPSetOperators(ksp, k ? Ar : Af, k ? Ar : Af));
    PetscCall(KSPSetTolerances(ksp, PETSC_CURRENT, PETSC_CURRENT, PETSC_CURRENT, 4));
    PetscCall(KSPSetNormType(ksp, KSP_NORM_NONE));
    PetscCall(KSPSetConvergenceTest(ksp, KSPConvergedSkip, NULL, NULL));
    PetscCall(KSPChebyshevSetEigenvalues(ksp, 130.0, 2.0));
    PetscCall(KSPSetInitialGuessNonzero(ksp, PETSC_TRUE));
    PetscCall(KSPGetPC(ksp, &pc));
    PetscCall(PCSetType(pc, PCNONE));
    PetscCall(KSPSolve(ksp, k ? br : bf, k ? xr : xf));
  }
  PetscCall(RelDiff(xf, xr, &d));
  PetscCall(Check((PetscBool)(d <= 1e-12), "%s: %s and PETSc's solutions differ by %g <= 1e-12", sparse ? "rows without entries" : "one long row", s->mattype, (double)d));
  PetscCall(ViewContains(kf, "solves with one kernel per step on the", &found));
  PetscCall(Check(found, "%s on %s: -ksp_view says the fused steps ran", sparse ? "rows without entries" : "one long row", s->mattype));
  PetscCall(KSPDestroy(&kf));
  PetscCall(KSPDestroy(&kr));
  PetscCall(VecDestroy(&xf));
  PetscCall(VecDestroy(&bf));
  PetscCall(VecDestroy(&xr));
  PetscCall(VecDestroy(&br));
  PetscCall(MatDestroy(&Af));
  PetscCall(MatDestroy(&Ar));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* CG with PCGAMG on both matrices: the same iterations, close solutions, the fused smoothers' steps on the backend */
static PetscErrorCode CheckGAMG(Setting *s)
{
  KSP       ksp[2];
  PC        pc;
  PetscInt  its[2], levels;
  PetscReal d;

  PetscFunctionBeginUser;
  for (int k = 0; k < 2; ++k) {
    PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp[k]));
    PetscCall(KSPSetOptionsPrefix(ksp[k], k ? "ref_" : "fused_"));
    PetscCall(KSPSetType(ksp[k], KSPCG));
    PetscCall(KSPSetOperators(ksp[k], k ? s->Ar : s->Af, k ? s->Ar : s->Af));
    PetscCall(KSPSetTolerances(ksp[k], 1e-10, PETSC_CURRENT, PETSC_CURRENT, 200));
    PetscCall(KSPGetPC(ksp[k], &pc));
    PetscCall(PCSetType(pc, PCGAMG));
    PetscCall(KSPSetFromOptions(ksp[k]));
    PetscCall(KSPSolve(ksp[k], k ? s->br : s->bf, k ? s->xr : s->xf));
    PetscCall(KSPGetIterationNumber(ksp[k], &its[k]));
  }
  PetscCall(RelDiff(s->xf, s->xr, &d));
  PetscCall(Check((PetscBool)(PetscAbsInt(its[0] - its[1]) <= 1), "CG with GAMG: %" PetscInt_FMT " iterations on the fused types, %" PetscInt_FMT " on PETSc's (at most 1 apart)", its[0], its[1]));
  PetscCall(Check((PetscBool)(d <= 1e-8), "CG with GAMG: the solutions differ by %g <= 1e-8", (double)d));
  PetscCall(KSPGetPC(ksp[0], &pc));
  PetscCall(PCMGGetLevels(pc, &levels));
  PetscCall(Check((PetscBool)(levels > 1), "GAMG made %" PetscInt_FMT " levels (> 1)", levels));
  for (PetscInt l = 1; l < levels && s->fused; ++l) {
    KSP       smoother;
    PetscBool found;

    PetscCall(PCMGGetSmoother(pc, l, &smoother));
    PetscCall(ViewContains(smoother, "solves with one kernel per step on the", &found));
    PetscCall(Check(found, "GAMG level %" PetscInt_FMT ": the smoother ran the fused steps", l));
  }
  PetscCall(KSPDestroy(&ksp[0]));
  PetscCall(KSPDestroy(&ksp[1]));
  PetscFunctionReturn(PETSC_SUCCESS);
}

int main(int argc, char **argv)
{
  Problem      prob;
  Setting      s;
  PetscMPIInt  size;
  PetscBool    gamg = PETSC_FALSE;
  PetscRandom  rnd;
  MatNullSpace nns;

  PetscFunctionBeginUser;
  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(FusedKSPInitializePackage());
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-gamg", &gamg, NULL));
  PetscCall(PetscStrncpy(s.mattype, MATAIJFUSED, sizeof(s.mattype)));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-fused_mat_type", s.mattype, sizeof(s.mattype), NULL));
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  s.serial = size == 1 ? PETSC_TRUE : PETSC_FALSE;
  PetscCall(ProblemCreate(PETSC_COMM_WORLD, NULL, &prob));
  s.Ar = prob.A;
  s.br = prob.b;
  PetscCall(MatConvert(prob.A, s.mattype, MAT_INITIAL_MATRIX, &s.Af));
  PetscCall(PetscObjectTypeCompareAny((PetscObject)s.Af, &s.fused, MATSEQAIJFUSED, MATMPIAIJFUSED, MATMPIAIJCUSPARSE, ""));
  s.fused = (PetscBool)(s.fused || s.serial);
  PetscCall(MatGetNearNullSpace(prob.A, &nns)); /* elasticity3d's rigid body modes, which MatConvert() leaves behind */
  if (nns) PetscCall(MatSetNearNullSpace(s.Af, nns));
  PetscCall(MatCreateVecs(s.Af, &s.xf, &s.bf));
  PetscCall(CopyValues(s.br, s.bf));
  PetscCall(VecDuplicate(s.br, &s.xr));
  PetscCall(VecDuplicate(s.br, &s.x0));
  PetscCall(PetscRandomCreate(PETSC_COMM_WORLD, &rnd));
  PetscCall(PetscRandomSetInterval(rnd, -1.0, 1.0));
  PetscCall(PetscRandomSetSeed(rnd, 7));
  PetscCall(PetscRandomSeed(rnd));
  PetscCall(VecSetRandom(s.x0, rnd));
  PetscCall(VecDuplicate(s.xf, &s.x0f));
  PetscCall(CopyValues(s.x0, s.x0f));
  PetscCall(PetscRandomDestroy(&rnd));
  if (gamg)
    PetscCall(CheckGAMG(&s));
  else {
    KSP       kf, kr;
    PetscReal d, emax;

    /* bounds of the Jacobi-preconditioned spectrum of the test problems (in (0, 2]), and of the plain one */
    PetscCall(CheckSmoother(&s, PCJACOBI, 2.0, 0.2));
    PetscCall(MatNorm(s.Ar, NORM_INFINITY, &emax));
    PetscCall(CheckSmoother(&s, PCNONE, emax, 0.1 * emax));
    PetscCall(CheckFallback(&s, "fourth kind", PCJACOBI, FourthKind, "fourth-kind Chebyshev"));
    PetscCall(CheckFallback(&s, "residual norms", PCJACOBI, WithNorms, "residual norms requested"));
    PetscCall(CheckFallback(&s, "pc sor", PCSOR, NULL, "a preconditioner other than none or jacobi"));
    PetscCall(PetscOptionsSetValue(NULL, "-fused_ksp_chebyshev_fused", "false"));
    PetscCall(CheckFallback(&s, "-ksp_chebyshev_fused false", PCJACOBI, NULL, "-ksp_chebyshev_fused false"));
    PetscCall(PetscOptionsClearValue(NULL, "-fused_ksp_chebyshev_fused"));

    /* the bounds estimated by the KSP, then new values of the matrices (the Jacobi weights follow) */
    PetscCall(ChebyshevCreate(s.Af, "fused_", PCJACOBI, 4, 0, 0, &kf));
    PetscCall(ChebyshevCreate(s.Ar, "ref_", PCJACOBI, 4, 0, 0, &kr));
    PetscCall(SolveBoth(&s, kf, kr, PETSC_TRUE, &d));
    PetscCall(Check((PetscBool)(d <= 1e-8), "estimated bounds: fused and PETSc's solutions differ by %g <= 1e-8", (double)d));
    PetscCall(KSPDestroy(&kf));
    PetscCall(KSPDestroy(&kr));
    PetscCall(ChebyshevCreate(s.Af, "fused_", PCJACOBI, 3, 2.0, 0.2, &kf));
    PetscCall(ChebyshevCreate(s.Ar, "ref_", PCJACOBI, 3, 2.0, 0.2, &kr));
    PetscCall(SolveBoth(&s, kf, kr, PETSC_TRUE, &d));
    PetscCall(MatScale(s.Af, 3.0));
    PetscCall(MatScale(s.Ar, 3.0));
    PetscCall(SolveBoth(&s, kf, kr, PETSC_TRUE, &d));
    PetscCall(Check((PetscBool)(d <= 1e-12), "after MatScale(): fused and PETSc's solutions differ by %g <= 1e-12", (double)d));
    PetscCall(KSPDestroy(&kf));
    PetscCall(KSPDestroy(&kr));
    if (s.serial) PetscCall(CheckPattern(&s, PETSC_TRUE));
    if (s.serial) PetscCall(CheckPattern(&s, PETSC_FALSE));
  }
  PetscCall(MatDestroy(&s.Af));
  PetscCall(VecDestroy(&s.bf));
  PetscCall(VecDestroy(&s.xf));
  PetscCall(VecDestroy(&s.xr));
  PetscCall(VecDestroy(&s.x0));
  PetscCall(VecDestroy(&s.x0f));
  PetscCall(ProblemDestroy(&prob));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "test_chebyshev: %s\n", check_failures ? "FAIL" : "PASS"));
  PetscCall(PetscFinalize());
  return check_failures ? 1 : 0;
}
