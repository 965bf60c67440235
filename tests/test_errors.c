static char help[] = "Bad input gives a clear PETSc error or a divergence reason, never a crash or a false convergence:\n\
  indefinite  CG (prefix indef_, default fusedcg) on a symmetric indefinite matrix: KSP_DIVERGED_INDEFINITE_MAT/PC;\n\
              with KSPSetErrorIfNotConverged() a PETSc error whose message names the reason\n\
  nan         NaN or Inf in the right-hand side, NaN in the matrix: KSP_DIVERGED_NANORINF (solver: -ksp_type)\n\
  size        a right-hand side of the wrong length, a non-square operator: a PETSc error (caught)\n\
  plainvec    the fused matrix with plain PETSc vectors: converges with a small true residual, or a PETSc error\n\
  skew        BiCGStab (prefix skew_, default fusedbcgs) on a skew-symmetric matrix (r0^T A r0 = 0):\n\
              KSP_DIVERGED_BREAKDOWN, or converged with a true residual that confirms it\n\
Every solver gets PCNONE unless its options say otherwise.  Each sub-case prints a PASS/FAIL line; the program ends\n\
with 'test_errors: PASS' or 'test_errors: FAIL' (exit code 1).  Options:\n\
  -ksp_type <fusedcg> -indef_ksp_type <fusedcg> -skew_ksp_type <fusedbcgs>: the solvers (and any KSP option)\n\
  -mat_type aijfused: the matrix type of every problem; -n: grid size (each sub-case picks its own -problem)\n\
  -rtol <1e-8>: relative tolerance of the solves\n\n";

#include <ctype.h>
#include <fusedksp.h>
#include "problems.h"

#include "check.h"
#include <string.h>

/* the problem of a sub-case: -problem is set here (the other problem options come from the command line) */
static PetscErrorCode CreateProblem(const char type[], Problem *p)
{
  PetscFunctionBeginUser;
  PetscCall(PetscOptionsSetValue(NULL, "-problem", type));
  PetscCall(ProblemCreate(PETSC_COMM_WORLD, NULL, p));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode CreateKSP(Mat A, const char prefix[], KSPType type, PetscReal rtol, KSP *ksp)
{
  PC pc;

  PetscFunctionBeginUser;
  PetscCall(KSPCreate(PETSC_COMM_WORLD, ksp));
  if (prefix) PetscCall(KSPSetOptionsPrefix(*ksp, prefix));
  PetscCall(KSPSetOperators(*ksp, A, A));
  PetscCall(KSPSetType(*ksp, type));
  PetscCall(KSPGetPC(*ksp, &pc));
  PetscCall(PCSetType(pc, PCNONE));
  PetscCall(KSPSetTolerances(*ksp, rtol, PETSC_CURRENT, PETSC_CURRENT, 2000));
  PetscCall(KSPSetFromOptions(*ksp));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* KSPSolve() with errors returned instead of aborting: *ierr is the error code, msg the error message */
static PetscErrorCode SolveCatch(KSP ksp, Vec b, Vec x, PetscErrorCode *ierr, char msg[], size_t len)
{
  const char *text, *specific = NULL;

  PetscFunctionBeginUser;
  PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
  *ierr = KSPSolve(ksp, b, x);
  PetscCall(PetscPopErrorHandler());
  msg[0] = 0;
  if (*ierr) {
    PetscCall(PetscErrorMessage(*ierr, &text, &specific));
    PetscCall(PetscSNPrintf(msg, len, "%s%s%s", text ? text : "", text && text[0] ? ": " : "", specific ? specific : ""));
    for (char *s = msg; *s; s++)
      if (*s == '\n') *s = ' ';
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* true ||b - A x|| / ||b|| */
static PetscErrorCode TrueResidual(Mat A, Vec b, Vec x, PetscReal *rel)
{
  Vec       r;
  PetscReal rn, bn;

  PetscFunctionBeginUser;
  PetscCall(VecDuplicate(b, &r));
  PetscCall(MatMult(A, x, r));
  PetscCall(VecAYPX(r, -1.0, b));
  PetscCall(VecNorm(r, NORM_2, &rn));
  PetscCall(VecNorm(b, NORM_2, &bn));
  PetscCall(VecDestroy(&r));
  *rel = rn / bn;
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode TestIndefinite(PetscReal rtol)
{
  Problem            p;
  KSP                ksp;
  Vec                x;
  KSPConvergedReason reason;
  PetscErrorCode     ierr;
  char               msg[1024], lower[1024];

  PetscFunctionBeginUser;
  PetscCall(CreateProblem("indefinite", &p));
  PetscCall(MatCreateVecs(p.A, &x, NULL));
  PetscCall(CreateKSP(p.A, "indef_", KSPFUSEDCG, rtol, &ksp));
  PetscCall(KSPSolve(ksp, p.b, x));
  PetscCall(KSPGetConvergedReason(ksp, &reason));
  PetscCall(Check((PetscBool)(reason == KSP_DIVERGED_INDEFINITE_MAT || reason == KSP_DIVERGED_INDEFINITE_PC), "indefinite: %s", KSPConvergedReasons[reason]));
  PetscCall(KSPSetErrorIfNotConverged(ksp, PETSC_TRUE));
  PetscCall(SolveCatch(ksp, p.b, x, &ierr, msg, sizeof(msg)));
  PetscCall(PetscStrncpy(lower, msg, sizeof(lower)));
  for (char *s = lower; *s; s++) *s = (char)tolower((unsigned char)*s);
  PetscCall(Check((PetscBool)(ierr == PETSC_ERR_NOT_CONVERGED && strstr(lower, "indefinite")), "indefinite with error_if_not_converged: error %d, message names the indefinite matrix (%s)", (int)ierr, msg));
  PetscCall(KSPDestroy(&ksp));
  PetscCall(VecDestroy(&x));
  PetscCall(ProblemDestroy(&p));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode SetFirstEntry(Vec v, PetscScalar value)
{
  PetscInt rstart;

  PetscFunctionBeginUser;
  PetscCall(VecGetOwnershipRange(v, &rstart, NULL));
  if (rstart == 0) PetscCall(VecSetValue(v, 0, value, INSERT_VALUES));
  PetscCall(VecAssemblyBegin(v));
  PetscCall(VecAssemblyEnd(v));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode TestNaN(PetscReal rtol)
{
  Problem            p;
  KSP                ksp;
  Vec                x, b;
  Mat                B;
  KSPConvergedReason reason;
  PetscInt           rstart, rend;
  const PetscReal    nan = (PetscReal)NAN, inf = (PetscReal)INFINITY;

  PetscFunctionBeginUser;
  PetscCall(CreateProblem("poisson2d", &p));
  PetscCall(MatCreateVecs(p.A, &x, &b));
  PetscCall(CreateKSP(p.A, NULL, KSPFUSEDCG, rtol, &ksp));

  PetscCall(VecCopy(p.b, b));
  PetscCall(SetFirstEntry(b, nan));
  PetscCall(KSPSolve(ksp, b, x));
  PetscCall(KSPGetConvergedReason(ksp, &reason));
  PetscCall(Check((PetscBool)(reason == KSP_DIVERGED_NANORINF), "NaN in the right-hand side: %s", KSPConvergedReasons[reason]));

  PetscCall(VecCopy(p.b, b));
  PetscCall(SetFirstEntry(b, inf));
  PetscCall(KSPSolve(ksp, b, x));
  PetscCall(KSPGetConvergedReason(ksp, &reason));
  PetscCall(Check((PetscBool)(reason == KSP_DIVERGED_NANORINF), "Inf in the right-hand side: %s", KSPConvergedReasons[reason]));

  PetscCall(MatDuplicate(p.A, MAT_COPY_VALUES, &B));
  PetscCall(MatGetOwnershipRange(B, &rstart, &rend));
  if (rstart == 0) PetscCall(MatSetValue(B, 0, 0, nan, INSERT_VALUES));
  PetscCall(MatAssemblyBegin(B, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(B, MAT_FINAL_ASSEMBLY));
  PetscCall(KSPSetOperators(ksp, B, B));
  PetscCall(KSPSolve(ksp, p.b, x));
  PetscCall(KSPGetConvergedReason(ksp, &reason));
  PetscCall(Check((PetscBool)(reason == KSP_DIVERGED_NANORINF), "NaN in the matrix: %s", KSPConvergedReasons[reason]));
  { /* a NaN pivot of ILU(0) is no zero pivot (as in PETSc's factorization): the NaN reaches the solver (on several
       ranks: in the ILU(0) of a block of PCBJACOBI) */
    PC             pc;
    PCFailedReason pcreason;
    PetscMPIInt    size;

    PetscCallMPI(MPI_Comm_size(PetscObjectComm((PetscObject)ksp), &size));
    PetscCall(KSPGetPC(ksp, &pc));
    PetscCall(PCSetType(pc, size == 1 ? PCILU : PCBJACOBI));
    PetscCall(KSPSolve(ksp, p.b, x));
    PetscCall(KSPGetConvergedReason(ksp, &reason));
    PetscCall(Check((PetscBool)(reason == KSP_DIVERGED_NANORINF), "NaN in the matrix, ILU(0): %s", KSPConvergedReasons[reason]));
    PetscCall(PCGetFailedReason(pc, &pcreason));
    PetscCall(Check((PetscBool)(pcreason == PC_NOERROR), "NaN in the matrix, ILU(0): the NaN pivot is no zero pivot (%s)", PCFailedReasons[pcreason]));
  }

  PetscCall(MatDestroy(&B));
  PetscCall(KSPDestroy(&ksp));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&b));
  PetscCall(ProblemDestroy(&p));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode TestSizes(PetscReal rtol)
{
  Problem        p;
  KSP            ksp;
  Mat            R;
  Vec            x, bad, xr, br;
  VecType        vtype;
  PetscInt       N, m, rstart, rend;
  PetscErrorCode ierr;
  char           msg[1024];

  PetscFunctionBeginUser;
  PetscCall(CreateProblem("poisson2d", &p));
  /* Errors are not collective: every rank gets one more row or column than the matrix has, so that every rank
     meets the error at the same check and none waits in a collective call the others left */
  PetscCall(MatGetSize(p.A, &N, NULL));
  PetscCall(MatGetLocalSize(p.A, &m, NULL));
  PetscCall(MatCreateVecs(p.A, &x, NULL));
  PetscCall(VecGetType(x, &vtype));
  PetscCall(VecCreate(PETSC_COMM_WORLD, &bad));
  PetscCall(VecSetSizes(bad, m + 1, PETSC_DETERMINE));
  PetscCall(VecSetType(bad, vtype));
  PetscCall(VecSet(bad, 1.0));
  PetscCall(CreateKSP(p.A, NULL, KSPFUSEDCG, rtol, &ksp));
  PetscCall(SolveCatch(ksp, bad, x, &ierr, msg, sizeof(msg)));
  PetscCall(Check((PetscBool)(ierr != 0), "right-hand side one entry per rank too long for the %" PetscInt_FMT " x %" PetscInt_FMT " matrix: error %d (%s)", N, N, (int)ierr, msg));
  PetscCall(KSPDestroy(&ksp));

  /* a non-square operator, one column per rank more than rows, ones on the diagonal, of the -mat_type of the problems */
  PetscCall(MatCreate(PETSC_COMM_WORLD, &R));
  PetscCall(MatSetSizes(R, m, m + 1, PETSC_DETERMINE, PETSC_DETERMINE));
  PetscCall(MatSetFromOptions(R));
  PetscCall(MatSetUp(R));
  PetscCall(MatGetOwnershipRange(R, &rstart, &rend));
  for (PetscInt i = rstart; i < rend; i++) PetscCall(MatSetValue(R, i, i, 1.0, INSERT_VALUES));
  PetscCall(MatAssemblyBegin(R, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(R, MAT_FINAL_ASSEMBLY));
  PetscCall(MatCreateVecs(R, &xr, &br));
  PetscCall(VecSet(br, 1.0));
  PetscCall(CreateKSP(R, NULL, KSPFUSEDCG, rtol, &ksp));
  PetscCall(SolveCatch(ksp, br, xr, &ierr, msg, sizeof(msg)));
  PetscCall(MatGetSize(R, NULL, &N));
  PetscCall(Check((PetscBool)(ierr != 0), "non-square operator with %" PetscInt_FMT " columns: error %d (%s)", N, (int)ierr, msg));
  PetscCall(KSPDestroy(&ksp));

  PetscCall(MatDestroy(&R));
  PetscCall(VecDestroy(&xr));
  PetscCall(VecDestroy(&br));
  PetscCall(VecDestroy(&bad));
  PetscCall(VecDestroy(&x));
  PetscCall(ProblemDestroy(&p));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Options of the chunks: -fused_reduction nccl (no NCCL in this build) is a clear error at the solve, in
   every fused solver; a check interval below 1 is an error of KSPFusedSetCheckInterval()               */
static PetscErrorCode TestChunkOptions(PetscReal rtol)
{
  const KSPType  types[] = {KSPFUSEDCG, KSPFUSEDBCGS, KSPFUSEDSGMRES};
  Problem        p;
  KSP            ksp;
  Vec            x;
  PetscErrorCode ierr;
  char           msg[1024];

  PetscFunctionBeginUser;
  PetscCall(CreateProblem("poisson2d", &p));
  PetscCall(MatCreateVecs(p.A, &x, NULL));
  PetscCall(PetscOptionsSetValue(NULL, "-nccl_fused_reduction", "nccl"));
  for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
    PetscCall(CreateKSP(p.A, "nccl_", types[t], rtol, &ksp));
    PetscCall(SolveCatch(ksp, p.b, x, &ierr, msg, sizeof(msg)));
    PetscCall(Check((PetscBool)(ierr == PETSC_ERR_SUP && strstr(msg, "-fused_reduction nccl needs a FusedKSP built with NCCL")), "%s with -fused_reduction nccl: error %d (%s)", types[t], (int)ierr, msg));
    PetscCall(KSPDestroy(&ksp));
  }
  PetscCall(PetscOptionsClearValue(NULL, "-nccl_fused_reduction"));
  PetscCall(CreateKSP(p.A, NULL, KSPFUSEDCG, rtol, &ksp));
  PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
  ierr = KSPFusedSetCheckInterval(ksp, 0);
  PetscCall(PetscPopErrorHandler());
  PetscCall(Check((PetscBool)(ierr == PETSC_ERR_ARG_OUTOFRANGE), "KSPFusedSetCheckInterval(ksp, 0): error %d", (int)ierr));
  PetscCall(KSPDestroy(&ksp));
  PetscCall(VecDestroy(&x));
  PetscCall(ProblemDestroy(&p));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode TestPlainVec(PetscReal rtol)
{
  Problem            p;
  KSP                ksp;
  Vec                x, b;
  PetscInt           m;
  PetscErrorCode     ierr;
  KSPConvergedReason reason;
  PetscReal          rel = 0.0;
  char               msg[1024];

  PetscFunctionBeginUser;
  PetscCall(CreateProblem("poisson2d", &p));
  PetscCall(VecGetLocalSize(p.b, &m));
  PetscCall(VecCreate(PETSC_COMM_WORLD, &b));
  PetscCall(VecSetSizes(b, m, PETSC_DETERMINE));
  PetscCall(VecSetType(b, VECSTANDARD));
  PetscCall(VecDuplicate(b, &x));
  PetscCall(VecCopy(p.b, b));
  PetscCall(CreateKSP(p.A, NULL, KSPFUSEDCG, rtol, &ksp));
  PetscCall(SolveCatch(ksp, b, x, &ierr, msg, sizeof(msg)));
  if (!ierr) {
    PetscCall(KSPGetConvergedReason(ksp, &reason));
    PetscCall(TrueResidual(p.A, b, x, &rel));
    PetscCall(Check((PetscBool)(reason > 0 && rel <= 10.0 * rtol), "fused matrix, plain vectors: %s, true residual %.3e <= 10 rtol", KSPConvergedReasons[reason], (double)rel));
  } else
    PetscCall(Check(PETSC_TRUE, "fused matrix, plain vectors: error %d (%s)", (int)ierr, msg));
  PetscCall(KSPDestroy(&ksp));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&b));
  PetscCall(ProblemDestroy(&p));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode TestSkew(PetscReal rtol)
{
  Problem            p;
  KSP                ksp;
  Vec                x;
  KSPConvergedReason reason;
  PetscInt           its;
  PetscReal          rel;

  PetscFunctionBeginUser;
  PetscCall(CreateProblem("skew", &p));
  PetscCall(MatCreateVecs(p.A, &x, NULL));
  PetscCall(CreateKSP(p.A, "skew_", KSPFUSEDBCGS, rtol, &ksp));
  PetscCall(KSPSolve(ksp, p.b, x));
  PetscCall(KSPGetConvergedReason(ksp, &reason));
  PetscCall(KSPGetIterationNumber(ksp, &its));
  PetscCall(TrueResidual(p.A, p.b, x, &rel));
  if (reason > 0)
    PetscCall(Check((PetscBool)(rel <= 10.0 * rtol), "skew-symmetric BiCGStab: %s after %" PetscInt_FMT " iterations, true residual %.3e <= 10 rtol", KSPConvergedReasons[reason], its, (double)rel));
  else
    PetscCall(Check((PetscBool)(reason == KSP_DIVERGED_BREAKDOWN), "skew-symmetric BiCGStab: %s after %" PetscInt_FMT " iterations (true residual %.3e)", KSPConvergedReasons[reason], its, (double)rel));
  PetscCall(KSPDestroy(&ksp));
  PetscCall(VecDestroy(&x));
  PetscCall(ProblemDestroy(&p));
  PetscFunctionReturn(PETSC_SUCCESS);
}

int main(int argc, char **argv)
{
  PetscReal rtol = 1e-8;

  PetscFunctionBeginUser;
  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(FusedKSPInitializePackage());
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-rtol", &rtol, NULL));
  PetscCall(TestIndefinite(rtol));
  PetscCall(TestNaN(rtol));
  PetscCall(TestSizes(rtol));
  PetscCall(TestPlainVec(rtol));
  PetscCall(TestChunkOptions(rtol));
  PetscCall(TestSkew(rtol));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "test_errors: %s\n", check_failures ? "FAIL" : "PASS"));
  PetscCall(PetscFinalize());
  return check_failures ? 1 : 0;
}
