static char help[] = "Paths of fusedcagmres that test_compare does not reach:\n\
  lucky     a diagonal matrix with 3 distinct values: the solution lies in a Krylov space of dimension 3, so the first\n\
            block of s = 5 steps is rank deficient (monomial basis; with the Newton basis the standard cycle stops\n\
            at step 3): converged in 3 iterations with a true residual at rounding level, one lucky breakdown\n\
            counted (-ksp_view), and with CholQR (either basis) one fallback to CGS2 (the Gram matrix is singular)\n\
  fallback  the 2D Laplacian with the monomial basis and s = 15: CholQR cannot handle the blocks, each falls back\n\
            to CGS2; the iterations stay within 10%% + 2 of KSPGMRES (right preconditioned, same restart); with\n\
            -ksp_cagmres_orth svqr no block falls back, same iteration bound\n\
  onepass   the 2D Laplacian, Newton basis: the default -ksp_cagmres_reorth_tol orthogonalizes blocks in one CholQR pass\n\
            (counted by -ksp_view, one reduction each fewer than with tol 0, which counts none); both within 10%% + 2\n\
            of KSPGMRES's iterations, true residuals below 1e-9\n\
  powers    the matrix powers kernel (one halo exchange per block under MPI) against one exchange per product, before and\n\
            after MatShift(): the same iterations, true residuals below 1e-9; -ksp_view names the kernel (several ranks);\n\
            a third solve with the operators unchanged reuses the Newton shifts (no standard cycle, iterations +- 2)\n\
  onecycle  solves that end in their first cycle (converged, or -ksp_max_it = restart with the convergence test skipped):\n\
            the second reuses the Newton shifts the first computed at its end (no standard cycle)\n\
  options   bad options give PETSc errors with clear messages: a restart that is not a multiple of s, s = 0,\n\
            s above the largest block size (an unknown -ksp_cagmres_basis or -ksp_cagmres_orth is PETSc's own\n\
            PetscOptionsEnum() error, not tested here: PETSc 3.26.1 leaks memory on that error path)\n\
Options: -mat_type aijfused (the matrices' type), -n <32> (Laplacian grid), -pc_type <jacobi> (fallback case).\n\
Ends with 'test_cagmres: PASS' or 'test_cagmres: FAIL' (exit code 1).\n\n";

#include <fusedksp.h>
#include <string.h>
#include <unistd.h>
#include "check.h"

static PetscErrorCode CreateMatrix(PetscInt n, PetscBool laplacian, Mat *A)
{
  PetscInt rstart, rend, N = laplacian ? n * n : n;

  PetscFunctionBeginUser;
  PetscCall(MatCreate(PETSC_COMM_WORLD, A));
  PetscCall(MatSetSizes(*A, PETSC_DECIDE, PETSC_DECIDE, N, N));
  PetscCall(MatSetType(*A, MATAIJFUSED));
  PetscCall(MatSetFromOptions(*A));
  PetscCall(MatSetUp(*A));
  PetscCall(MatGetOwnershipRange(*A, &rstart, &rend));
  for (PetscInt i = rstart; i < rend; i++) {
    if (!laplacian)
      PetscCall(MatSetValue(*A, i, i, 1.0 + (PetscScalar)(i % 3), INSERT_VALUES));
    else {
      const PetscInt r = i / n, c = i % n;

      PetscCall(MatSetValue(*A, i, i, 4.0, INSERT_VALUES));
      if (r > 0) PetscCall(MatSetValue(*A, i, i - n, -1.0, INSERT_VALUES));
      if (r < n - 1) PetscCall(MatSetValue(*A, i, i + n, -1.0, INSERT_VALUES));
      if (c > 0) PetscCall(MatSetValue(*A, i, i - 1, -1.0, INSERT_VALUES));
      if (c < n - 1) PetscCall(MatSetValue(*A, i, i + 1, -1.0, INSERT_VALUES));
    }
  }
  PetscCall(MatAssemblyBegin(*A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(*A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* A solver on A with the options in `opts` (set as options of its prefix) */
static PetscErrorCode CreateKSP(Mat A, const char prefix[], KSPType type, PCType pctype, const char opts[], KSP *ksp)
{
  PC pc;

  PetscFunctionBeginUser;
  PetscCall(PetscOptionsPrefixPush(NULL, prefix));
  PetscCall(PetscOptionsInsertString(NULL, opts));
  PetscCall(PetscOptionsPrefixPop(NULL));
  PetscCall(KSPCreate(PETSC_COMM_WORLD, ksp));
  PetscCall(KSPSetOptionsPrefix(*ksp, prefix));
  PetscCall(KSPSetOperators(*ksp, A, A));
  PetscCall(KSPSetType(*ksp, type));
  PetscCall(KSPSetPCSide(*ksp, PC_RIGHT));
  PetscCall(KSPGetPC(*ksp, &pc));
  PetscCall(PCSetType(pc, pctype));
  PetscCall(KSPSetTolerances(*ksp, 1e-10, PETSC_CURRENT, PETSC_CURRENT, 10000));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Removes the fusedcagmres options of a prefix, so that the next sub-case with that prefix starts from the defaults */
static PetscErrorCode ClearOptions(const char prefix[])
{
  char name[128];

  PetscFunctionBeginUser;
  for (const char *const *o = (const char *const[]){"ksp_gmres_restart", "ksp_cagmres_s", "ksp_cagmres_basis", "ksp_cagmres_orth", "ksp_cagmres_reorth_tol", NULL}; *o; o++) {
    PetscCall(PetscSNPrintf(name, sizeof(name), "-%s%s", prefix, *o));
    PetscCall(PetscOptionsClearValue(NULL, name));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Solves A x = ones; its, reason, true ||b - A x|| / ||b|| and the -ksp_view text of the solver */
static PetscErrorCode Solve(KSP ksp, PetscInt *its, KSPConvergedReason *reason, PetscReal *resid, char view[], size_t len)
{
  Mat         A;
  Vec         x, b, r;
  PetscReal   rn, bn;
  PetscViewer v;

  PetscFunctionBeginUser;
  PetscCall(KSPGetOperators(ksp, &A, NULL));
  PetscCall(MatCreateVecs(A, &x, &b));
  PetscCall(VecDuplicate(b, &r));
  PetscCall(VecSet(b, 1.0));
  PetscCall(KSPSolve(ksp, b, x));
  PetscCall(KSPGetIterationNumber(ksp, its));
  PetscCall(KSPGetConvergedReason(ksp, reason));
  PetscCall(MatMult(A, x, r));
  PetscCall(VecAYPX(r, -1.0, b));
  PetscCall(VecNorm(r, NORM_2, &rn));
  PetscCall(VecNorm(b, NORM_2, &bn));
  *resid = rn / bn;
  if (view) { /* -ksp_view through a file: the string viewer shows only a one-line summary */
    char        fname[PETSC_MAX_PATH_LEN];
    PetscMPIInt rank;

    PetscCall(PetscMemzero(view, len));
    PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
    PetscCall(PetscSNPrintf(fname, sizeof(fname), "test_cagmres-view-%d.txt", (int)getpid()));
    PetscCallMPI(MPI_Bcast(fname, sizeof(fname), MPI_CHAR, 0, PETSC_COMM_WORLD));
    PetscCall(PetscViewerASCIIOpen(PETSC_COMM_WORLD, fname, &v));
    PetscCall(KSPView(ksp, v));
    PetscCall(PetscViewerDestroy(&v));
    if (rank == 0) {
      FILE *f = fopen(fname, "r");

      PetscCheck(f, PETSC_COMM_SELF, PETSC_ERR_FILE_OPEN, "Cannot read back %s", fname);
      (void)!fread(view, 1, len - 1, f);
      fclose(f);
      remove(fname);
    }
    PetscCallMPI(MPI_Bcast(view, (PetscMPIInt)len, MPI_CHAR, 0, PETSC_COMM_WORLD));
  }
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&b));
  PetscCall(VecDestroy(&r));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The counts of the -ksp_view line "last solve: N standard cycles, N blocks of s steps, N blocks orthogonalized in one pass,
   N CGS2 fallbacks, N lucky breakdowns" (single may be NULL) */
static PetscErrorCode ViewCounts(const char view[], int *fallbacks, int *lucky, int *single)
{
  const char *line = strstr(view, "standard cycles, ");
  int         std = -1, blocks = -1, one = -1;

  PetscFunctionBeginUser;
  *fallbacks = *lucky = -1;
  while (line && line > view && line[-1] != ':') line--;
  if (line && sscanf(line, " %d standard cycles, %d blocks of s steps, %d blocks orthogonalized in one pass, %d CGS2 fallbacks, %d lucky breakdowns", &std, &blocks, &one, fallbacks, lucky) != 5) *fallbacks = *lucky = one = -1;
  if (single) *single = one;
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode TestLucky(const char opts[], PetscBool fallback)
{
  Mat                A;
  KSP                ksp;
  PetscInt           its;
  KSPConvergedReason reason;
  PetscReal          resid;
  char               view[8192];
  int                nfall, nlucky;

  PetscFunctionBeginUser;
  PetscCall(CreateMatrix(60, PETSC_FALSE, &A));
  PetscCall(CreateKSP(A, "lucky_", KSPFUSEDCAGMRES, PCNONE, opts, &ksp));
  PetscCall(KSPSetFromOptions(ksp));
  PetscCall(Solve(ksp, &its, &reason, &resid, view, sizeof(view)));
  PetscCall(ViewCounts(view, &nfall, &nlucky, NULL));
  PetscCall(Check((PetscBool)(reason > 0 && its == 3 && resid < 1e-12), "lucky (%s): %s after %" PetscInt_FMT " iterations (3 expected), true residual %.2e < 1e-12", opts, KSPConvergedReasons[reason], its, (double)resid));
  PetscCall(Check((PetscBool)(nlucky == 1 && (fallback ? nfall == 1 : nfall == 0)), "lucky (%s): -ksp_view counts %d lucky breakdowns (1 expected), %d CGS2 fallbacks (%d expected)", opts, nlucky, nfall, fallback ? 1 : 0));
  PetscCall(ClearOptions("lucky_"));
  PetscCall(KSPDestroy(&ksp));
  PetscCall(MatDestroy(&A));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* One CholQR pass for the well-conditioned blocks (default -ksp_cagmres_reorth_tol) against two for every block
   (-ksp_cagmres_reorth_tol 0): the solve without second passes saves exactly one reduction per block it
   orthogonalizes in one pass, and both take gmres's iterations within 10% + 2 with true residuals below 1e-9 */
static PetscErrorCode TestOnePass(PetscInt n, PCType pctype)
{
  Mat                A;
  KSP                ksp, ref;
  PetscInt           its[2], itsref, count[2];
  KSPConvergedReason reason[2], reasonref;
  PetscReal          resid[2], residref;
  char               view[8192];
  int                nfall, nlucky, single[2];

  PetscFunctionBeginUser;
  PetscCall(CreateMatrix(n, PETSC_TRUE, &A));
  PetscCall(CreateKSP(A, "opref_", KSPGMRES, pctype, "-ksp_gmres_restart 30", &ref));
  PetscCall(KSPSetFromOptions(ref));
  PetscCall(Solve(ref, &itsref, &reasonref, &residref, NULL, 0));
  for (int k = 0; k < 2; k++) {
    PetscCall(CreateKSP(A, "op_", KSPFUSEDCAGMRES, pctype, k ? "-ksp_gmres_restart 30 -ksp_cagmres_reorth_tol 0" : "-ksp_gmres_restart 30", &ksp));
    PetscCall(KSPSetFromOptions(ksp));
    PetscCall(Solve(ksp, &its[k], &reason[k], &resid[k], view, sizeof(view)));
    PetscCall(KSPFusedGetReductionCount(ksp, &count[k]));
    PetscCall(ViewCounts(view, &nfall, &nlucky, &single[k]));
    PetscCall(Check((PetscBool)(reason[k] > 0 && resid[k] < 1e-9 && PetscAbsInt(its[k] - itsref) <= 0.1 * itsref + 2), "one pass (tol %s): %s, true residual %.2e < 1e-9, iterations %" PetscInt_FMT " within 10%% + 2 of gmres's %" PetscInt_FMT,
                    k ? "0" : "default", KSPConvergedReasons[reason[k]], (double)resid[k], its[k], itsref));
    PetscCall(ClearOptions("op_"));
    PetscCall(KSPDestroy(&ksp));
  }
  PetscCall(Check((PetscBool)(single[0] > 0 && single[1] == 0), "one pass: %d blocks in one pass with the default tol (> 0 expected), %d with tol 0 (0 expected)", single[0], single[1]));
  PetscCall(Check((PetscBool)(its[0] != its[1] || count[1] - count[0] == single[0]), "one pass: %" PetscInt_FMT " - %" PetscInt_FMT " reductions = %d blocks in one pass (same iterations %" PetscInt_FMT ")", count[1], count[0], single[0], its[0]));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "one pass: %" PetscInt_FMT " / %" PetscInt_FMT " iterations (gmres %" PetscInt_FMT "), %" PetscInt_FMT " / %" PetscInt_FMT " reductions, %d blocks in one pass\n", its[0], its[1], itsref, count[0], count[1],
                        single[0]));
  PetscCall(ClearOptions("opref_"));
  PetscCall(KSPDestroy(&ref));
  PetscCall(MatDestroy(&A));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode TestFallback(PetscInt n, PCType pctype)
{
  Mat                A;
  KSP                ksp, ref;
  PetscInt           its, itsref;
  KSPConvergedReason reason, reasonref;
  PetscReal          resid, residref;
  char               view[8192];
  int                nfall, nlucky;

  PetscFunctionBeginUser;
  PetscCall(CreateMatrix(n, PETSC_TRUE, &A));
  PetscCall(CreateKSP(A, "fb_", KSPFUSEDCAGMRES, pctype, "-ksp_cagmres_basis monomial -ksp_cagmres_s 15 -ksp_gmres_restart 30", &ksp));
  PetscCall(CreateKSP(A, "fbref_", KSPGMRES, pctype, "-ksp_gmres_restart 30", &ref));
  PetscCall(KSPSetFromOptions(ksp));
  PetscCall(KSPSetFromOptions(ref));
  PetscCall(Solve(ksp, &its, &reason, &resid, view, sizeof(view)));
  PetscCall(Solve(ref, &itsref, &reasonref, &residref, NULL, 0));
  PetscCall(ViewCounts(view, &nfall, &nlucky, NULL));
  PetscCall(Check((PetscBool)(reason > 0 && resid < 1e-9), "fallback: %s, true residual %.2e < 1e-9", KSPConvergedReasons[reason], (double)resid));
  PetscCall(Check((PetscBool)(nfall > 0), "fallback: %d blocks fell back to CGS2 (> 0 expected)", nfall));
  PetscCall(Check((PetscBool)(PetscAbsInt(its - itsref) <= 0.1 * itsref + 2), "fallback: iterations %" PetscInt_FMT " within 10%% + 2 of gmres's %" PetscInt_FMT, its, itsref));
  PetscCall(KSPDestroy(&ksp));
  /* SVQR orthogonalizes the same blocks without falling back */
  PetscCall(CreateKSP(A, "fbsv_", KSPFUSEDCAGMRES, pctype, "-ksp_cagmres_basis monomial -ksp_cagmres_s 15 -ksp_gmres_restart 30 -ksp_cagmres_orth svqr", &ksp));
  PetscCall(KSPSetFromOptions(ksp));
  PetscCall(Solve(ksp, &its, &reason, &resid, view, sizeof(view)));
  PetscCall(ViewCounts(view, &nfall, &nlucky, NULL));
  PetscCall(Check((PetscBool)(reason > 0 && resid < 1e-9 && nfall == 0 && PetscAbsInt(its - itsref) <= 0.1 * itsref + 2),
                  "svqr: %s, true residual %.2e < 1e-9, %d CGS2 fallbacks (0), iterations %" PetscInt_FMT " within 10%% + 2 of gmres's %" PetscInt_FMT, KSPConvergedReasons[reason], (double)resid, nfall, its, itsref));
  PetscCall(KSPDestroy(&ksp));
  PetscCall(KSPDestroy(&ref));
  PetscCall(MatDestroy(&A));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The matrix powers kernel (default under MPI) against one exchange per product (-ksp_cagmres_matrix_powers 0) on the
   Laplacian with Jacobi, s = 6, then again after MatShift() (new values: the ghost rows are fetched again): the same
   iterations and true residuals below 1e-9 each time; -ksp_view names the kernel on several ranks */
static PetscErrorCode TestPowers(PetscInt n)
{
  Mat                A;
  KSP                ksp, ref;
  PetscInt           its, itsref;
  KSPConvergedReason reason, reasonref;
  PetscReal          resid, residref;
  char               view[8192], viewref[8192];
  PetscMPIInt        size;

  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscCall(CreateMatrix(n, PETSC_TRUE, &A));
  PetscCall(CreateKSP(A, "mp_", KSPFUSEDCAGMRES, PCJACOBI, "-ksp_cagmres_s 6 -ksp_gmres_restart 30", &ksp));
  PetscCall(CreateKSP(A, "mpref_", KSPFUSEDCAGMRES, PCJACOBI, "-ksp_cagmres_s 6 -ksp_gmres_restart 30 -ksp_cagmres_matrix_powers 0", &ref));
  PetscCall(KSPSetFromOptions(ksp));
  PetscCall(KSPSetFromOptions(ref));
  for (int pass = 0; pass < 2; ++pass) {
    if (pass) PetscCall(MatShift(A, 0.5));
    PetscCall(Solve(ksp, &its, &reason, &resid, view, sizeof(view)));
    PetscCall(Solve(ref, &itsref, &reasonref, &residref, viewref, sizeof(viewref)));
    PetscCall(Check((PetscBool)(reason > 0 && reasonref > 0 && resid < 1e-9 && residref < 1e-9 && its == itsref), "powers (%s): %s after %" PetscInt_FMT " iterations, true residual %.2e; one exchange per product: %s after %" PetscInt_FMT ", %.2e",
                    pass ? "after MatShift" : "first solve", KSPConvergedReasons[reason], its, (double)resid, KSPConvergedReasons[reasonref], itsref, (double)residref));
  }
  { /* a third solve with the operators unchanged takes the shifts of the second: no standard cycle */
    const char *line;
    int         std = -1;

    PetscCall(Solve(ksp, &its, &reason, &resid, view, sizeof(view)));
    line = strstr(view, "last solve:");
    if (line) (void)!sscanf(line, "last solve: %d standard cycles", &std);
    PetscCall(Check((PetscBool)(reason > 0 && resid < 1e-9 && PetscAbsInt(its - itsref) <= 2 && std == 0 && strstr(view, "Newton shifts (of an earlier solve") != NULL),
                    "shift reuse: %s after %" PetscInt_FMT " iterations (%" PetscInt_FMT " +- 2), true residual %.2e, %d standard cycles (0), -ksp_view names the reused shifts", KSPConvergedReasons[reason], its, itsref, (double)resid, std));
  }
  if (size > 1) {
    PetscCall(Check((PetscBool)(strstr(view, "matrix powers: one halo exchange of depth s per block") != NULL), "powers: -ksp_view names the matrix powers kernel"));
    PetscCall(Check((PetscBool)(strstr(viewref, "matrix powers: one halo exchange per product (-ksp_cagmres_matrix_powers 0)") != NULL), "powers: -ksp_view names one exchange per product with -ksp_cagmres_matrix_powers 0"));
  }
  PetscCall(KSPDestroy(&ksp));
  PetscCall(KSPDestroy(&ref));
  PetscCall(MatDestroy(&A));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Solves that end in their first, standard cycle, repeated with the same operators: the first computes the Newton
   shifts at its end, so the second runs in blocks (no standard cycle, the shifts of the earlier solve).  opts: how the
   solves end (converged within the cycle, or -its iterations with the convergence test skipped: KSP_CONVERGED_ITS) */
static PetscErrorCode TestOneCycle(PetscInt n, const char *prefix, const char *opts)
{
  Mat                A;
  KSP                ksp;
  PetscInt           its[2];
  KSPConvergedReason reason[2];
  PetscReal          resid;
  char               view[8192];
  int                std = -1;
  const char        *line;

  PetscFunctionBeginUser;
  PetscCall(CreateMatrix(n, PETSC_TRUE, &A));
  PetscCall(CreateKSP(A, prefix, KSPFUSEDCAGMRES, PCJACOBI, opts, &ksp));
  PetscCall(KSPSetFromOptions(ksp));
  for (int k = 0; k < 2; ++k) PetscCall(Solve(ksp, &its[k], &reason[k], &resid, view, sizeof(view)));
  line = strstr(view, "last solve:");
  if (line) (void)!sscanf(line, "last solve: %d standard cycles", &std);
  PetscCall(Check((PetscBool)(reason[0] > 0 && reason[1] > 0 && its[0] >= 6 && its[0] <= 30 && PetscAbsInt(its[1] - its[0]) <= 2 && std == 0 && strstr(view, "Newton shifts (of an earlier solve") != NULL),
                  "solves of one cycle (%s): %s / %s after %" PetscInt_FMT " / %" PetscInt_FMT " iterations (6-30, +- 2), the second with %d standard cycles (0) and the shifts of the first", opts, KSPConvergedReasons[reason[0]],
                  KSPConvergedReasons[reason[1]], its[0], its[1], std));
  PetscCall(KSPDestroy(&ksp));
  PetscCall(MatDestroy(&A));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The options opts (prefix bad_) must make KSPSetFromOptions() or KSPSetUp() fail with an error whose message
   contains `expect` */
static PetscErrorCode TestBadOption(const char opts[], const char expect[])
{
  Mat            A;
  KSP            ksp;
  PetscErrorCode ierr;
  const char    *text, *specific = NULL;

  PetscFunctionBeginUser;
  PetscCall(CreateMatrix(60, PETSC_FALSE, &A));
  PetscCall(CreateKSP(A, "bad_", KSPFUSEDCAGMRES, PCNONE, opts, &ksp));
  PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
  ierr = KSPSetFromOptions(ksp);
  if (!ierr) ierr = KSPSetUp(ksp);
  PetscCall(PetscPopErrorHandler());
  if (ierr) PetscCall(PetscErrorMessage(ierr, &text, &specific));
  PetscCall(Check((PetscBool)(ierr && specific && strstr(specific, expect)), "options '%s': error %d with message '%s' (containing '%s')", opts, (int)ierr, ierr && specific ? specific : "", expect));
  PetscCall(ClearOptions("bad_"));
  PetscCall(KSPDestroy(&ksp));
  PetscCall(MatDestroy(&A));
  PetscFunctionReturn(PETSC_SUCCESS);
}

int main(int argc, char **argv)
{
  PetscInt n          = 32;
  char     pctype[64] = PCJACOBI;

  PetscFunctionBeginUser;
  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(FusedKSPInitializePackage());
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-n", &n, NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-pc_type", pctype, sizeof(pctype), NULL));

  PetscCall(TestLucky("-ksp_cagmres_basis monomial -ksp_gmres_restart 10", PETSC_TRUE));
  PetscCall(TestLucky("-ksp_cagmres_basis monomial -ksp_cagmres_orth cgs2 -ksp_gmres_restart 10", PETSC_FALSE));
  PetscCall(TestLucky("-ksp_cagmres_basis newton -ksp_gmres_restart 10", PETSC_TRUE)); /* the standard cycle: blocks of one column, CholQR of the dependent one fails too */
  PetscCall(TestFallback(n, pctype));
  PetscCall(TestOnePass(n, pctype));
  PetscCall(TestPowers(n));
  PetscCall(TestOneCycle(n, "oc_", "-ksp_cagmres_s 6 -ksp_gmres_restart 30 -ksp_rtol 1e-1"));
  PetscCall(TestOneCycle(n, "ocs_", "-ksp_cagmres_s 6 -ksp_gmres_restart 30 -ksp_max_it 30 -ksp_convergence_test skip"));
  PetscCall(TestBadOption("-ksp_gmres_restart 30 -ksp_cagmres_s 4", "must be a multiple of the block size s = 4"));
  PetscCall(TestBadOption("-ksp_gmres_restart 4 -ksp_cagmres_s 5", "must be a multiple of the block size s = 5"));
  PetscCall(TestBadOption("-ksp_cagmres_s 0", "must be in [1, 64]"));
  PetscCall(TestBadOption("-ksp_cagmres_s 128 -ksp_gmres_restart 128", "must be in [1, 64]"));

  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "test_cagmres: %s\n", check_failures ? "FAIL" : "PASS"));
  PetscCall(PetscFinalize());
  return check_failures ? 1 : 0;
}
