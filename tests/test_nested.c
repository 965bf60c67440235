static char help[] = "Fused solves nested inside another solve's preconditioner or operator, against the same nesting of PETSc's\n\
classical solvers (fusedcg -> cg, fusedbcgs -> bcgs, fusedsgmres -> gmres right preconditioned).  The fused run\n\
solves on an aijfused copy of the matrix (fused vectors), the classical one on the aij matrix.  Checks: both\n\
converged; |its_fused - its_ref| <= -its_abs + -its_tol its_ref; the fused true residual <= 10 max(rtol, the\n\
classical one); ||x_fused - x_ref|| / ||x_ref|| <= -sol_tol.  The inner solves are tight by default: a Krylov\n\
solver is a nonlinear preconditioner, and the pipelined recurrences assume a linear one.  Ends with\n\
'test_nested: PASS' or 'test_nested: FAIL' (exit code 1).\n\
Options:\n\
  -kind <pcksp>  how the inner solver enters the outer one:\n\
      pcksp       PCKSP: the inner solver (Jacobi, -inner_rtol) is the outer solver's preconditioner\n\
      shell       a PCSHELL whose apply calls KSPSolve() of the inner solver (Jacobi, -inner_rtol)\n\
      fieldsplit  PCFIELDSPLIT additive on the 2-field problem: field 0 solved by -inner, field 1 by -inner2\n\
      schur       PCFIELDSPLIT Schur (full factorization): A00 solved by -inner inside the operator of the\n\
                  Schur complement, whose solver is -inner2 (no PC): a fused solve inside a fused operator\n\
      gamg        PCGAMG with -inner as level smoother (Jacobi, 2 iterations) and -inner2 as coarse solver (Jacobi)\n\
  -outer <fusedcg> -inner <fusedcg> -inner2 <fusedcg>: the fused solvers\n\
  -n <16>: grid points per direction (poisson2d; fieldsplit and schur: 2 fields on the grid, interleaved)\n\
  -rtol <1e-8> -inner_rtol <1e-8>: outer and inner tolerances\n\
  -its_abs <2> -its_tol <0.2> -sol_tol <1e-5>: the tolerances of the comparison\n\n";

#include <fusedksp.h>
#include <string.h>
#include "check.h"

typedef struct {
  KSP inner;
} ShellCtx;

static PetscErrorCode ShellApply(PC pc, Vec x, Vec y)
{
  ShellCtx *ctx;

  PetscFunctionBeginUser;
  PetscCall(PCShellGetContext(pc, &ctx));
  PetscCall(KSPSolve(ctx->inner, x, y));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The classical counterpart of a fused solver */
static const char *Classical(const char fused[])
{
  if (!strcmp(fused, "fusedcg")) return "cg";
  if (!strcmp(fused, "fusedbcgs")) return "bcgs";
  if (!strcmp(fused, "fusedsgmres")) return "gmres";
  return fused;
}

/* -PREFIXksp_type TYPE (and the right preconditioning of GMRES, as fusedsgmres has) */
static PetscErrorCode SetSolver(const char prefix[], const char fused[], PetscBool classical)
{
  char name[256];

  PetscFunctionBeginUser;
  PetscCall(PetscSNPrintf(name, sizeof(name), "-%sksp_type", prefix));
  PetscCall(PetscOptionsSetValue(NULL, name, classical ? Classical(fused) : fused));
  if (!strcmp(fused, "fusedsgmres") && classical) {
    PetscCall(PetscSNPrintf(name, sizeof(name), "-%sksp_pc_side", prefix));
    PetscCall(PetscOptionsSetValue(NULL, name, "right"));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode SetOption(const char prefix[], const char option[], const char value[])
{
  char name[256];

  PetscFunctionBeginUser;
  PetscCall(PetscSNPrintf(name, sizeof(name), "-%s%s", prefix, option));
  PetscCall(PetscOptionsSetValue(NULL, name, value));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* poisson2d on an n x n grid (5-point Laplacian, diagonal 4); with fields = 2 two unknowns per grid point,
   interleaved (block size 2), each field's Laplacian shifted by 1 and the two coupled by 0.5 on the diagonal:
   SPD (eigenvalues of the Laplacian + 1 -+ 0.5)                                                             */
static PetscErrorCode CreateMatrix(PetscInt n, PetscInt fields, Mat *A)
{
  PetscInt rstart, rend;

  PetscFunctionBeginUser;
  PetscCall(MatCreate(PETSC_COMM_WORLD, A));
  PetscCall(MatSetSizes(*A, PETSC_DECIDE, PETSC_DECIDE, fields * n * n, fields * n * n));
  PetscCall(MatSetBlockSize(*A, fields));
  PetscCall(MatSetType(*A, MATAIJ));
  PetscCall(MatSeqAIJSetPreallocation(*A, 6, NULL));
  PetscCall(MatMPIAIJSetPreallocation(*A, 6, NULL, 4, NULL));
  PetscCall(MatGetOwnershipRange(*A, &rstart, &rend));
  for (PetscInt row = rstart; row < rend; row++) {
    const PetscInt f = row % fields, k = row / fields, i = k / n, j = k % n;

    PetscCall(MatSetValue(*A, row, row, fields > 1 ? 5.0 : 4.0, INSERT_VALUES));
    if (i > 0) PetscCall(MatSetValue(*A, row, row - fields * n, -1.0, INSERT_VALUES));
    if (i < n - 1) PetscCall(MatSetValue(*A, row, row + fields * n, -1.0, INSERT_VALUES));
    if (j > 0) PetscCall(MatSetValue(*A, row, row - fields, -1.0, INSERT_VALUES));
    if (j < n - 1) PetscCall(MatSetValue(*A, row, row + fields, -1.0, INSERT_VALUES));
    if (fields > 1) PetscCall(MatSetValue(*A, row, f ? row - 1 : row + 1, 0.5, INSERT_VALUES));
  }
  PetscCall(MatAssemblyBegin(*A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(*A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ||b - A x|| / ||b|| with A of type aij, b and x of any type */
static PetscErrorCode TrueResidual(Mat A, Vec b, Vec x, PetscReal *rel)
{
  Vec       xa, r;
  PetscReal rn, bn;

  PetscFunctionBeginUser;
  PetscCall(MatCreateVecs(A, &xa, &r));
  PetscCall(VecCopy(x, xa));
  PetscCall(MatMult(A, xa, r));
  PetscCall(VecCopy(b, xa));
  PetscCall(VecAXPY(r, -1.0, xa));
  PetscCall(VecNorm(r, NORM_2, &rn));
  PetscCall(VecNorm(xa, NORM_2, &bn));
  PetscCall(VecDestroy(&xa));
  PetscCall(VecDestroy(&r));
  *rel = rn / bn;
  PetscFunctionReturn(PETSC_SUCCESS);
}

typedef struct {
  char      kind[32], outer[32], inner[32], inner2[32];
  PetscReal rtol, inner_rtol;
} Nesting;

/* One solve of the nesting (classical: PETSc's solvers) on A from b into x (a vector of A's type) */
static PetscErrorCode NestedSolve(const Nesting *c, PetscBool classical, Mat A, Vec b, Vec x, PetscInt *its, KSPConvergedReason *reason)
{
  const char *prefix = classical ? "ref_" : "fused_";
  KSP         ksp, inner = NULL;
  PC          pc;
  ShellCtx    shell;
  char        pre[64], value[64];

  PetscFunctionBeginUser;
  PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
  PetscCall(KSPSetOptionsPrefix(ksp, prefix));
  PetscCall(KSPSetOperators(ksp, A, A));
  PetscCall(KSPSetTolerances(ksp, c->rtol, PETSC_CURRENT, PETSC_CURRENT, 1000));
  PetscCall(SetSolver(prefix, c->outer, classical));
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(PetscSNPrintf(value, sizeof(value), "%g", (double)c->inner_rtol));
  if (!strcmp(c->kind, "pcksp")) {
    PetscCall(PCSetType(pc, PCKSP));
    PetscCall(PetscSNPrintf(pre, sizeof(pre), "%sksp_", prefix));
    PetscCall(SetSolver(pre, c->inner, classical));
    PetscCall(SetOption(pre, "pc_type", "jacobi"));
    PetscCall(SetOption(pre, "ksp_rtol", value));
  } else if (!strcmp(c->kind, "shell")) {
    PetscCall(KSPCreate(PETSC_COMM_WORLD, &inner));
    PetscCall(PetscSNPrintf(pre, sizeof(pre), "%sinner_", prefix));
    PetscCall(KSPSetOptionsPrefix(inner, pre));
    PetscCall(KSPSetOperators(inner, A, A));
    PetscCall(SetSolver(pre, c->inner, classical));
    PetscCall(SetOption(pre, "pc_type", "jacobi"));
    PetscCall(SetOption(pre, "ksp_rtol", value));
    PetscCall(KSPSetFromOptions(inner));
    shell.inner = inner;
    PetscCall(PCSetType(pc, PCSHELL));
    PetscCall(PCShellSetContext(pc, &shell));
    PetscCall(PCShellSetApply(pc, ShellApply));
  } else if (!strcmp(c->kind, "fieldsplit") || !strcmp(c->kind, "schur")) {
    const PetscBool schur = strcmp(c->kind, "schur") ? PETSC_FALSE : PETSC_TRUE;

    PetscCall(SetOption(prefix, "pc_type", "fieldsplit"));
    if (!schur)
      PetscCall(SetOption(prefix, "pc_fieldsplit_type", "additive")); /* symmetric, for CG */
    else {
      PetscCall(SetOption(prefix, "pc_fieldsplit_type", "schur"));
      PetscCall(SetOption(prefix, "pc_fieldsplit_schur_fact_type", "full"));
    }
    PetscCall(PetscSNPrintf(pre, sizeof(pre), "%sfieldsplit_0_", prefix));
    PetscCall(SetSolver(pre, c->inner, classical));
    PetscCall(SetOption(pre, "pc_type", "jacobi"));
    PetscCall(SetOption(pre, "ksp_rtol", schur ? "1e-10" : value));
    PetscCall(PetscSNPrintf(pre, sizeof(pre), "%sfieldsplit_1_", prefix));
    PetscCall(SetSolver(pre, c->inner2, classical));
    PetscCall(SetOption(pre, "pc_type", schur ? "none" : "jacobi"));
    PetscCall(SetOption(pre, "ksp_rtol", schur ? "1e-10" : value));
  } else if (!strcmp(c->kind, "gamg")) {
    PetscCall(SetOption(prefix, "pc_type", "gamg"));
    PetscCall(PetscSNPrintf(pre, sizeof(pre), "%smg_levels_", prefix));
    PetscCall(SetSolver(pre, c->inner, classical));
    PetscCall(SetOption(pre, "pc_type", "jacobi"));
    PetscCall(SetOption(pre, "ksp_max_it", "2"));
    PetscCall(PetscSNPrintf(pre, sizeof(pre), "%smg_coarse_", prefix));
    PetscCall(SetSolver(pre, c->inner2, classical));
    PetscCall(SetOption(pre, "pc_type", "jacobi"));
    PetscCall(SetOption(pre, "ksp_rtol", "1e-10"));
    PetscCall(SetOption(pre, "ksp_max_it", "200"));
    /* PCMG gives the coarse solver no norm and no convergence test (fit for a direct solver) */
    PetscCall(SetOption(pre, "ksp_norm_type", strcmp(c->inner2, "fusedsgmres") ? "preconditioned" : "unpreconditioned"));
    PetscCall(SetOption(pre, "ksp_convergence_test", "default"));
  } else
    SETERRQ(PETSC_COMM_WORLD, PETSC_ERR_ARG_WRONG, "Unknown -kind %s", c->kind);
  PetscCall(KSPSetFromOptions(ksp));
  PetscCall(KSPSolve(ksp, b, x));
  PetscCall(KSPGetIterationNumber(ksp, its));
  PetscCall(KSPGetConvergedReason(ksp, reason));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%s: %s, %" PetscInt_FMT " iterations\n", classical ? "classical" : "fused", KSPConvergedReasons[*reason], *its));
  PetscCall(KSPDestroy(&ksp));
  PetscCall(KSPDestroy(&inner));
  PetscFunctionReturn(PETSC_SUCCESS);
}

int main(int argc, char **argv)
{
  Nesting            c = {"pcksp", "fusedcg", "fusedcg", "fusedcg", 1e-8, 1e-8};
  PetscInt           n = 16, itsf, itsr, itsabs = 2;
  PetscReal          itstol = 0.2, soltol = 1e-5, rf, rr, diff, xn;
  KSPConvergedReason reasonf, reasonr;
  Mat                A, Af;
  Vec                b, bf, xf, xr, r;

  PetscFunctionBeginUser;
  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(FusedKSPInitializePackage());
  PetscOptionsBegin(PETSC_COMM_WORLD, NULL, "test_nested options", NULL);
  PetscCall(PetscOptionsString("-kind", "how the inner solver enters the outer one", NULL, c.kind, c.kind, sizeof(c.kind), NULL));
  PetscCall(PetscOptionsString("-outer", "outer fused solver", NULL, c.outer, c.outer, sizeof(c.outer), NULL));
  PetscCall(PetscOptionsString("-inner", "inner fused solver", NULL, c.inner, c.inner, sizeof(c.inner), NULL));
  PetscCall(PetscOptionsString("-inner2", "second inner fused solver (field 1, coarse level)", NULL, c.inner2, c.inner2, sizeof(c.inner2), NULL));
  PetscCall(PetscOptionsInt("-n", "grid points per direction", NULL, n, &n, NULL));
  PetscCall(PetscOptionsReal("-rtol", "outer tolerance", NULL, c.rtol, &c.rtol, NULL));
  PetscCall(PetscOptionsReal("-inner_rtol", "inner tolerance", NULL, c.inner_rtol, &c.inner_rtol, NULL));
  PetscCall(PetscOptionsInt("-its_abs", "iteration count tolerance (absolute)", NULL, itsabs, &itsabs, NULL));
  PetscCall(PetscOptionsReal("-its_tol", "iteration count tolerance (relative)", NULL, itstol, &itstol, NULL));
  PetscCall(PetscOptionsReal("-sol_tol", "solution difference tolerance (relative)", NULL, soltol, &soltol, NULL));
  PetscOptionsEnd();

  PetscCall(CreateMatrix(n, strcmp(c.kind, "fieldsplit") && strcmp(c.kind, "schur") ? 1 : 2, &A));
  PetscCall(MatConvert(A, MATAIJFUSED, MAT_INITIAL_MATRIX, &Af));
  PetscCall(MatCreateVecs(A, &xr, &b));
  PetscCall(MatCreateVecs(Af, &xf, &bf));
  PetscCall(VecSet(b, 1.0));
  PetscCall(VecSet(bf, 1.0));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%s: outer %s, inner %s, %s\n", c.kind, c.outer, c.inner, c.inner2));

  PetscCall(NestedSolve(&c, PETSC_TRUE, A, b, xr, &itsr, &reasonr));
  PetscCall(NestedSolve(&c, PETSC_FALSE, Af, bf, xf, &itsf, &reasonf));

  PetscCall(VecDuplicate(b, &r));
  PetscCall(TrueResidual(A, bf, xr, &rr));
  PetscCall(VecCopy(xf, r));
  PetscCall(TrueResidual(A, bf, r, &rf));
  PetscCall(VecAXPY(r, -1.0, xr));
  PetscCall(VecNorm(r, NORM_2, &diff));
  PetscCall(VecNorm(xr, NORM_2, &xn));
  diff /= xn;

  PetscCall(Check((PetscBool)(reasonr > 0 && reasonf > 0), "both converged (classical %s, fused %s)", KSPConvergedReasons[reasonr], KSPConvergedReasons[reasonf]));
  PetscCall(Check((PetscBool)(PetscAbsInt(itsf - itsr) <= itsabs + itstol * itsr), "iterations: fused %" PetscInt_FMT ", classical %" PetscInt_FMT, itsf, itsr));
  PetscCall(Check((PetscBool)(rf <= 10 * PetscMax(c.rtol, rr)), "fused true residual %.3e <= 10 max(rtol, classical %.3e)", (double)rf, (double)rr));
  PetscCall(Check((PetscBool)(diff <= soltol), "||x_fused - x_classical|| / ||x_classical|| = %.3e <= %.1e", (double)diff, (double)soltol));

  PetscCall(VecDestroy(&r));
  PetscCall(VecDestroy(&b));
  PetscCall(VecDestroy(&bf));
  PetscCall(VecDestroy(&xr));
  PetscCall(VecDestroy(&xf));
  PetscCall(MatDestroy(&A));
  PetscCall(MatDestroy(&Af));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "test_nested: %s\n", check_failures ? "FAIL" : "PASS"));
  PetscCall(PetscFinalize());
  return check_failures ? 1 : 0;
}
