static char help[] = "KSP behaviour of a solver (-ksp_type, default fusedcg) on one problem (tutorials/problems.h, default poisson2d):\n\
monitor (one line per iteration), residual norm of the norm type in use (-ksp_norm_type) against the true one,\n\
max_it (KSP_DIVERGED_ITS after exactly max_it iterations), divtol, zero right-hand side, nonzero initial guess\n\
(exact: 0 iterations; perturbed: converges), repeated solves, KSPSetOperators() after the matrix values changed,\n\
and a MATSHELL operator.  Prints one PASS/FAIL line per check and 'test_ksp: PASS' or 'test_ksp: FAIL' (exit code 1).\n\
Options:\n\
  -ksp_type <fusedcg> -pc_type <jacobi> -ksp_norm_type <type> ...: the solver (any KSP option)\n\
  -rtol <1e-10>: relative tolerance of the solves\n\
  -sol_tol <1e-6>: tolerance of the solution comparisons\n\
  -max_it_test <5>: the iteration limit of the max_it check\n\
  -problem ... -n ... -mat_type aijfused -vec_type fused: the problem (tutorials/problems.h)\n\n";

#include <fusedksp.h>
#include "problems.h"

#include "check.h"

/* ||x - y|| / ||y|| */
static PetscErrorCode RelDiff(Vec x, Vec y, PetscReal *rel)
{
  Vec       d;
  PetscReal dn, yn;

  PetscFunctionBeginUser;
  PetscCall(VecDuplicate(y, &d));
  PetscCall(VecWAXPY(d, -1.0, y, x));
  PetscCall(VecNorm(d, NORM_2, &dn));
  PetscCall(VecNorm(y, NORM_2, &yn));
  PetscCall(VecDestroy(&d));
  *rel = yn > 0.0 ? dn / yn : dn;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* the norm of v that the solver's convergence test uses: unpreconditioned ||v||, preconditioned ||B v||, natural sqrt(v^T B v) */
static PetscErrorCode NormOfType(KSP ksp, Vec v, PetscReal *nrm)
{
  KSPNormType type;
  PC          pc;
  Vec         z;
  PetscScalar vz;

  PetscFunctionBeginUser;
  PetscCall(KSPGetNormType(ksp, &type));
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(VecDuplicate(v, &z));
  switch (type) {
  case KSP_NORM_UNPRECONDITIONED:
    PetscCall(VecNorm(v, NORM_2, nrm));
    break;
  case KSP_NORM_PRECONDITIONED:
    PetscCall(PCApply(pc, v, z));
    PetscCall(VecNorm(z, NORM_2, nrm));
    break;
  case KSP_NORM_NATURAL:
    PetscCall(PCApply(pc, v, z));
    PetscCall(VecDot(v, z, &vz));
    *nrm = PetscSqrtReal(PetscAbsScalar(vz));
    break;
  default:
    SETERRQ(PetscObjectComm((PetscObject)ksp), PETSC_ERR_SUP, "Norm type %s has no residual norm to check", KSPNormTypes[type]);
  }
  PetscCall(VecDestroy(&z));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* solves from a zero initial guess (unless the KSP has a nonzero guess set) and returns iterations and reason */
static PetscErrorCode SolveInfo(KSP ksp, Vec b, Vec x, PetscInt *its, KSPConvergedReason *reason)
{
  PetscBool nonzero;

  PetscFunctionBeginUser;
  PetscCall(KSPGetInitialGuessNonzero(ksp, &nonzero));
  if (!nonzero) PetscCall(VecSet(x, 3.0)); /* garbage the solver must ignore */
  PetscCall(KSPSolve(ksp, b, x));
  PetscCall(KSPGetIterationNumber(ksp, its));
  PetscCall(KSPGetConvergedReason(ksp, reason));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* checks that the output of KSPMonitorResidual() has the lines "i KSP Residual norm ..." for i = 0, ..., its */
static PetscErrorCode CheckMonitorLines(const char *text, PetscInt its)
{
  PetscMPIInt rank;
  PetscInt    ok = 1, nlines = 0;
  const char *s = text;

  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  if (rank == 0) {
    while (s && *s) {
      int  it, nread;
      char word[32];

      nread = sscanf(s, "%d KSP %31s", &it, word);
      if (nread == 2 && !strcmp(word, "Residual")) {
        if (it != nlines) ok = 0;
        nlines++;
      }
      s = strchr(s, '\n');
      if (s) s++;
    }
    if (nlines != its + 1) ok = 0;
  }
  PetscCallMPI(MPI_Bcast(&ok, 1, MPIU_INT, 0, PETSC_COMM_WORLD));
  PetscCallMPI(MPI_Bcast(&nlines, 1, MPIU_INT, 0, PETSC_COMM_WORLD));
  PetscCall(Check((PetscBool)ok, "monitor: %" PetscInt_FMT " lines numbered 0..%" PetscInt_FMT " for %" PetscInt_FMT " iterations", nlines, nlines - 1, its));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode CheckMonitor(KSP ksp, Vec b, Vec x)
{
  char                 *buf = NULL;
  size_t                len = 0;
  FILE                 *fp;
  PetscViewer           viewer;
  PetscViewerAndFormat *vf;
  PetscInt              its;
  KSPConvergedReason    reason;

  PetscFunctionBeginUser;
  fp = open_memstream(&buf, &len); /* KSPMonitorResidual() prints to it: the lines are checked below */
  PetscCheck(fp, PETSC_COMM_SELF, PETSC_ERR_SYS, "open_memstream() failed");
  PetscCall(PetscViewerASCIIOpenWithFILE(PETSC_COMM_WORLD, fp, &viewer));
  PetscCall(PetscViewerAndFormatCreate(viewer, PETSC_VIEWER_DEFAULT, &vf));
  PetscCall(KSPMonitorSet(ksp, (KSPMonitorFn *)KSPMonitorResidual, vf, (PetscCtxDestroyFn *)PetscViewerAndFormatDestroy));
  PetscCall(SolveInfo(ksp, b, x, &its, &reason));
  PetscCall(KSPMonitorCancel(ksp));
  PetscCall(PetscViewerDestroy(&viewer));
  fclose(fp);
  PetscCall(CheckMonitorLines(buf, its));
  free(buf);
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode ShellMult(Mat S, Vec x, Vec y)
{
  Mat A;

  PetscFunctionBeginUser;
  PetscCall(MatShellGetContext(S, &A));
  PetscCall(MatMult(A, x, y));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode ShellMultTranspose(Mat S, Vec x, Vec y)
{
  Mat A;

  PetscFunctionBeginUser;
  PetscCall(MatShellGetContext(S, &A));
  PetscCall(MatMultTranspose(A, x, y));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode ShellGetDiagonal(Mat S, Vec d)
{
  Mat A;

  PetscFunctionBeginUser;
  PetscCall(MatShellGetContext(S, &A));
  PetscCall(MatGetDiagonal(A, d));
  PetscFunctionReturn(PETSC_SUCCESS);
}

int main(int argc, char **argv)
{
  Problem            prob;
  KSP                ksp;
  PC                 pc;
  Mat                A, S;
  Vec                b, x, x1, xe, r, zero;
  PetscRandom        rnd;
  KSPConvergedReason reason;
  KSPNormType        ntype;
  PetscInt           its, its1, maxit_test = 5, m, n, M, N;
  PetscReal          rtol = 1e-10, soltol = 1e-6, rel, rep, truen, norm0, atol, dtol, xnorm;
  PetscInt           maxit;

  PetscFunctionBeginUser;
  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(FusedKSPInitializePackage());
  /* poisson2d, n = 16 by default: kappa ~ 100, so a solve to rtol has a solution error <~ 100 rtol = 1e-8, far
     below sol_tol; a solver that ignores a change of operator or keeps stale state is off by O(1) */
  PetscOptionsBegin(PETSC_COMM_WORLD, NULL, "KSP behaviour test", "test_ksp");
  PetscCall(PetscOptionsReal("-rtol", "Relative tolerance of the solves", "KSPSetTolerances", rtol, &rtol, NULL));
  PetscCall(PetscOptionsReal("-sol_tol", "Tolerance of the solution comparisons", "", soltol, &soltol, NULL));
  PetscCall(PetscOptionsInt("-max_it_test", "Iteration limit of the max_it check", "", maxit_test, &maxit_test, NULL));
  PetscOptionsEnd();

  PetscCall(ProblemCreate(PETSC_COMM_WORLD, NULL, &prob));
  A = prob.A;
  b = prob.b;
  PetscCall(MatCreateVecs(A, &x, &r));
  PetscCall(VecDuplicate(x, &x1));
  PetscCall(VecDuplicate(x, &xe));
  PetscCall(VecDuplicate(x, &zero));
  PetscCall(VecZeroEntries(zero));
  PetscCall(PetscRandomCreate(PETSC_COMM_WORLD, &rnd));
  PetscCall(PetscRandomSetInterval(rnd, -1.0, 1.0));

  PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
  PetscCall(KSPSetOperators(ksp, A, A));
  PetscCall(KSPSetType(ksp, KSPFUSEDCG));
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(PCSetType(pc, PCJACOBI));
  PetscCall(KSPSetTolerances(ksp, rtol, PETSC_CURRENT, PETSC_CURRENT, PETSC_CURRENT));
  PetscCall(KSPSetFromOptions(ksp));
  PetscCall(KSPGetTolerances(ksp, &rtol, &atol, &dtol, &maxit));
  PetscCall(KSPGetNormType(ksp, &ntype));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "problem %s, norm type %s, rtol %g\n", prob.name, KSPNormTypes[ntype], (double)rtol));

  /* 1. converges; KSPGetResidualNorm() is the norm of the true residual (of the norm type in use), within a tenth of
        the convergence threshold rtol ||b||, so a reported convergence is a true one */
  PetscCall(SolveInfo(ksp, b, x1, &its1, &reason));
  PetscCall(Check((PetscBool)(reason > 0), "solve converged (%s) in %" PetscInt_FMT " iterations", KSPConvergedReasons[reason], its1));
  PetscCall(KSPGetResidualNorm(ksp, &rep));
  PetscCall(MatMult(A, x1, r));
  PetscCall(VecAYPX(r, -1.0, b));
  PetscCall(NormOfType(ksp, r, &truen));
  PetscCall(NormOfType(ksp, b, &norm0));
  PetscCall(Check((PetscBool)(PetscAbsReal(rep - truen) <= 0.1 * rtol * norm0), "%s residual norm: reported %.6e, true %.6e, |difference| <= 0.1 rtol ||b|| = %.3e", KSPNormTypes[ntype], (double)rep, (double)truen, (double)(0.1 * rtol * norm0)));

  /* 2. monitor: one line per iteration */
  PetscCall(CheckMonitor(ksp, b, x));

  /* 3. a second solve gives the same result (up to reduction order: the host and device reductions may sum in any
        order, which perturbs the iterates at rounding level; stale solver state would be far above 1e-10) */
  PetscCall(SolveInfo(ksp, b, x, &its, &reason));
  PetscCall(RelDiff(x, x1, &rel));
  PetscCall(Check((PetscBool)(reason > 0 && its == its1 && rel <= 1e-10), "second solve: %" PetscInt_FMT " iterations (first %" PetscInt_FMT "), ||x2 - x1||/||x1|| = %.3e <= 1e-10", its, its1, (double)rel));

  /* 4. max_it */
  PetscCall(KSPSetTolerances(ksp, 1e-30, 0.0, PETSC_CURRENT, maxit_test));
  PetscCall(SolveInfo(ksp, b, x, &its, &reason));
  PetscCall(Check((PetscBool)(reason == KSP_DIVERGED_ITS && its == maxit_test), "max_it %" PetscInt_FMT ": %s after %" PetscInt_FMT " iterations", maxit_test, KSPConvergedReasons[reason], its));
  PetscCall(KSPSetTolerances(ksp, rtol, atol, dtol, maxit));

  /* 5. divtol: an initial guess 1e4 times too large has a residual far above divtol ||b|| = 100 ||b|| */
  PetscCall(VecSetRandom(x, rnd));
  PetscCall(VecScale(x, 1e4));
  PetscCall(KSPSetInitialGuessNonzero(ksp, PETSC_TRUE));
  PetscCall(KSPSetTolerances(ksp, rtol, atol, 100.0, maxit));
  PetscCall(SolveInfo(ksp, b, x, &its, &reason));
  PetscCall(Check((PetscBool)(reason == KSP_DIVERGED_DTOL), "divtol 100 with a huge initial guess: %s after %" PetscInt_FMT " iterations", KSPConvergedReasons[reason], its));
  PetscCall(KSPSetTolerances(ksp, rtol, atol, dtol, maxit));

  /* 6. nonzero initial guess: the exact solution of b = A xe takes 0 iterations; a perturbed one converges */
  PetscCall(VecSetRandom(xe, rnd));
  PetscCall(MatMult(A, xe, r));
  PetscCall(VecCopy(xe, x));
  PetscCall(SolveInfo(ksp, r, x, &its, &reason));
  PetscCall(RelDiff(x, xe, &rel));
  PetscCall(Check((PetscBool)(reason > 0 && its == 0 && rel <= soltol), "exact initial guess: %s after %" PetscInt_FMT " iterations, ||x - xe||/||xe|| = %.3e", KSPConvergedReasons[reason], its, (double)rel));
  PetscCall(VecSetRandom(x, rnd));
  PetscCall(VecAYPX(x, 1e-2, xe));
  PetscCall(SolveInfo(ksp, r, x, &its, &reason));
  PetscCall(RelDiff(x, xe, &rel));
  PetscCall(Check((PetscBool)(reason > 0 && rel <= soltol), "perturbed initial guess: %s after %" PetscInt_FMT " iterations, ||x - xe||/||xe|| = %.3e <= %.1e", KSPConvergedReasons[reason], its, (double)rel, (double)soltol));
  PetscCall(KSPSetInitialGuessNonzero(ksp, PETSC_FALSE));

  /* 7. zero right-hand side: converged, 0 iterations, x = 0 (x holds garbage before the solve) */
  PetscCall(SolveInfo(ksp, zero, x, &its, &reason));
  PetscCall(VecNorm(x, NORM_2, &xnorm));
  PetscCall(Check((PetscBool)(reason > 0 && its == 0 && xnorm == 0.0), "zero right-hand side: %s after %" PetscInt_FMT " iterations, ||x|| = %g", KSPConvergedReasons[reason], its, (double)xnorm));

  /* 8. the matrix values change (scaled by 2 in place) and KSPSetOperators() is called again: the solution halves */
  PetscCall(MatScale(A, 2.0));
  PetscCall(KSPSetOperators(ksp, A, A));
  PetscCall(SolveInfo(ksp, b, x, &its, &reason));
  PetscCall(VecScale(x, 2.0));
  PetscCall(RelDiff(x, x1, &rel));
  PetscCall(Check((PetscBool)(reason > 0 && rel <= soltol), "matrix scaled by 2: %s, ||2 x - x1||/||x1|| = %.3e <= %.1e", KSPConvergedReasons[reason], (double)rel, (double)soltol));
  PetscCall(MatScale(A, 0.5));
  PetscCall(KSPSetOperators(ksp, A, A));
  PetscCall(SolveInfo(ksp, b, x, &its, &reason));
  PetscCall(RelDiff(x, x1, &rel));
  PetscCall(Check((PetscBool)(reason > 0 && rel <= soltol), "matrix scaled back: %s, ||x - x1||/||x1|| = %.3e <= %.1e", KSPConvergedReasons[reason], (double)rel, (double)soltol));

  /* 9. a MATSHELL operator wrapping A (the preconditioner still built from A) gives the assembled solve's result */
  PetscCall(MatGetLocalSize(A, &m, &n));
  PetscCall(MatGetSize(A, &M, &N));
  PetscCall(MatCreateShell(PETSC_COMM_WORLD, m, n, M, N, A, &S));
  PetscCall(MatShellSetOperation(S, MATOP_MULT, (PetscErrorCodeFn *)ShellMult));
  PetscCall(MatShellSetOperation(S, MATOP_MULT_TRANSPOSE, (PetscErrorCodeFn *)ShellMultTranspose)); /* fusedbicg */
  PetscCall(MatShellSetOperation(S, MATOP_GET_DIAGONAL, (PetscErrorCodeFn *)ShellGetDiagonal));
  PetscCall(KSPSetOperators(ksp, S, A));
  PetscCall(SolveInfo(ksp, b, x, &its, &reason));
  PetscCall(RelDiff(x, x1, &rel));
  PetscCall(Check((PetscBool)(reason > 0 && PetscAbsInt(its - its1) <= 1 && rel <= soltol), "MATSHELL operator: %s after %" PetscInt_FMT " iterations (assembled %" PetscInt_FMT "), ||x - x1||/||x1|| = %.3e <= %.1e", KSPConvergedReasons[reason], its,
                  its1, (double)rel, (double)soltol));

  PetscCall(KSPDestroy(&ksp));
  PetscCall(MatDestroy(&S));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&x1));
  PetscCall(VecDestroy(&xe));
  PetscCall(VecDestroy(&r));
  PetscCall(VecDestroy(&zero));
  PetscCall(PetscRandomDestroy(&rnd));
  PetscCall(ProblemDestroy(&prob));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "test_ksp: %s\n", check_failures ? "FAIL" : "PASS"));
  PetscCall(PetscFinalize());
  return check_failures ? 1 : 0;
}
