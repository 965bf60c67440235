static char help[] = "The same fused solve repeated gives bitwise-identical results: residual history, iteration count,\n\
converged reason and solution.  The persistent grid and cluster kernels of the CUDA backend meet through\n\
global and distributed shared memory, where compute-sanitizer's racecheck does not look: a race between\n\
their blocks shows here as a history that changes from one solve to the next.  Also the driver of\n\
tests/sanitize, which runs it under each compute-sanitizer tool.  Ends with 'test_determinism: PASS' or\n\
'test_determinism: FAIL'.\n\
Options: the problem options of tutorials/problems.h (-problem, -n, ...) and the solver's (-ksp_type,\n\
-pc_type, -ksp_fused_check_interval, -ksp_fused_persistent, ...);\n\
  -repeats <20>            the number of solves;\n\
  -expect_converged <1>    every solve must converge (0: any reason, e.g. a fixed -ksp_max_it);\n\
  -expect_form <text>      the form of the last chunk contains this text (FusedKSPGetLastChunkForm(): steps,\n\
                           resident, cooperative grid, grid as one cluster; \"grid\" matches both grids);\n\
  -expect_blocks <n>       ... on this many thread blocks.\n\n";

#include <fusedksp.h>
#include "problems.h"
#include "check.h"

#define MAXHIST 100000

typedef struct {
  PetscInt           its, nhist;
  KSPConvergedReason reason;
  PetscReal         *hist; /* MAXHIST entries */
  PetscScalar       *x;    /* the local part of the solution */
} Result;

/* One solve from a zero initial guess, its results copied */
static PetscErrorCode SolveOnce(KSP ksp, Vec b, Vec x, PetscInt nlocal, Result *r)
{
  const PetscReal   *hist;
  const PetscScalar *xa;

  PetscFunctionBeginUser;
  PetscCall(VecSet(x, 0.0));
  PetscCall(KSPSolve(ksp, b, x));
  PetscCall(KSPGetIterationNumber(ksp, &r->its));
  PetscCall(KSPGetConvergedReason(ksp, &r->reason));
  PetscCall(KSPGetResidualHistory(ksp, &hist, &r->nhist));
  PetscCall(PetscArraycpy(r->hist, hist, PetscMin(r->nhist, MAXHIST)));
  PetscCall(VecGetArrayRead(x, &xa));
  PetscCall(PetscArraycpy(r->x, xa, nlocal));
  PetscCall(VecRestoreArrayRead(x, &xa));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The first position where two arrays differ bitwise, or -1 */
static PetscInt FirstDifference(const void *a, const void *b, PetscInt n, size_t size)
{
  for (PetscInt i = 0; i < n; ++i)
    if (memcmp((const char *)a + i * size, (const char *)b + i * size, size)) return i;
  return -1;
}

int main(int argc, char **argv)
{
  Problem     prob;
  KSP         ksp;
  Vec         x;
  Result      first, again;
  PetscInt    repeats = 20, nlocal, expect_blocks = -1, blocks, ndiffer = 0;
  PetscBool   expect_converged = PETSC_TRUE, form_set;
  char        expect_form[64]  = "";
  const char *form;

  PetscFunctionBeginUser;
  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(FusedKSPInitializePackage());
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-repeats", &repeats, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-expect_converged", &expect_converged, NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-expect_form", expect_form, sizeof(expect_form), &form_set));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-expect_blocks", &expect_blocks, NULL));
  PetscCheck(repeats >= 2, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-repeats must be at least 2, not %" PetscInt_FMT, repeats);

  PetscCall(ProblemCreate(PETSC_COMM_WORLD, NULL, &prob));
  PetscCall(MatCreateVecs(prob.A, &x, NULL));
  PetscCall(VecGetLocalSize(x, &nlocal));
  PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
  PetscCall(KSPSetOperators(ksp, prob.A, prob.A));
  PetscCall(KSPSetType(ksp, KSPFUSEDCG));
  PetscCall(KSPSetFromOptions(ksp));
  PetscCall(KSPSetResidualHistory(ksp, NULL, MAXHIST, PETSC_TRUE));
  PetscCall(PetscMalloc2(MAXHIST, &first.hist, nlocal, &first.x));
  PetscCall(PetscMalloc2(MAXHIST, &again.hist, nlocal, &again.x));

  PetscCall(SolveOnce(ksp, prob.b, x, nlocal, &first));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%s, %" PetscInt_FMT " iterations, %s\n", prob.name, first.its, KSPConvergedReasons[first.reason]));
  if (expect_converged) PetscCall(Check((PetscBool)(first.reason > 0), "the first solve converges (%s)", KSPConvergedReasons[first.reason]));
  PetscCall(Check((PetscBool)(first.its > 1 && first.nhist <= MAXHIST), "the first solve runs more than one iteration (%" PetscInt_FMT ") and its history fits (%" PetscInt_FMT ")", first.its, first.nhist));
  for (PetscInt k = 1; k < repeats; ++k) {
    PetscInt  hd, xd;
    PetscBool same;

    PetscCall(SolveOnce(ksp, prob.b, x, nlocal, &again));
    hd   = again.nhist == first.nhist ? FirstDifference(first.hist, again.hist, first.nhist, sizeof(PetscReal)) : 0;
    xd   = FirstDifference(first.x, again.x, nlocal, sizeof(PetscScalar));
    same = (PetscBool)(again.its == first.its && again.reason == first.reason && again.nhist == first.nhist && hd < 0 && xd < 0);
    if (!same) {
      ndiffer++;
      PetscCall(PetscPrintf(PETSC_COMM_SELF,
                            "solve %" PetscInt_FMT ": %" PetscInt_FMT " iterations (first %" PetscInt_FMT "), %s, history of %" PetscInt_FMT " (first %" PetscInt_FMT ") differs at %" PetscInt_FMT ", solution differs at local row %" PetscInt_FMT "\n",
                            k, again.its, first.its, KSPConvergedReasons[again.reason], again.nhist, first.nhist, hd, xd));
    }
  }
  PetscCall(Check((PetscBool)(ndiffer == 0), "%" PetscInt_FMT " solves repeat the first bit for bit (%" PetscInt_FMT " differ)", repeats - 1, ndiffer));
  PetscCall(FusedKSPGetLastChunkForm(&form, &blocks));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "last chunk: %s, %" PetscInt_FMT " blocks\n", form, blocks));
  if (form_set) {
    char *found;

    PetscCall(PetscStrstr(form, expect_form, &found));
    PetscCall(Check((PetscBool)(found != NULL), "the chunks ran as %s (%s)", expect_form, form));
  }
  if (expect_blocks >= 0) PetscCall(Check((PetscBool)(blocks == expect_blocks), "the persistent kernel ran on %" PetscInt_FMT " blocks (%" PetscInt_FMT ")", expect_blocks, blocks));

  PetscCall(PetscFree2(first.hist, first.x));
  PetscCall(PetscFree2(again.hist, again.x));
  PetscCall(KSPDestroy(&ksp));
  PetscCall(VecDestroy(&x));
  PetscCall(ProblemDestroy(&prob));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "test_determinism: %s\n", check_failures ? "FAIL" : "PASS"));
  PetscCall(PetscFinalize());
  return check_failures ? 1 : 0;
}
