static char help[] = "Bad input gives a clear PETSc error or a divergence reason, never a crash or a false convergence:\n\
  indefinite  CG (prefix indef_, default fusedcg) on a symmetric indefinite matrix: KSP_DIVERGED_INDEFINITE_MAT/PC;\n\
              with KSPSetErrorIfNotConverged() a PETSc error whose message names the reason\n\
  nan         NaN or Inf in the right-hand side, NaN in the matrix: KSP_DIVERGED_NANORINF (solver: -ksp_type)\n\
  size        a right-hand side of the wrong length, a non-square operator: a PETSc error (caught)\n\
  plainvec    the fused matrix with plain PETSc vectors: converges with a small true residual, or a PETSc error\n\
  skew        BiCGStab (prefix skew_, default fusedbcgs; fusedbicg too) on a skew-symmetric matrix (r0^T A r0 = 0):\n\
              KSP_DIVERGED_BREAKDOWN, or converged with a true residual that confirms it; fusedbcgs restarts once\n\
              with r* = r (counted as a residual replacement), breaks down again from the same residual and stops\n\
  transposes  fusedbicg (prefix transpose_) on a MATSHELL without MatMultTranspose(), with a PCSHELL without\n\
              PCApplyTranspose(): a PETSC_ERR_SUP error naming what is missing\n\
  recovery    each fused solver (also nested in another through PCKSP): a PCSHELL that fails once, a user MATSHELL\n\
              operator that fails once or gives NaN once (inside a batch of deferred dot products); the error is caught\n\
              (or the solve ends with KSP_DIVERGED_NANORINF), and the next solve converges\n\
  alloc       (one rank) each fused solver with the n-th allocation of FusedKSP failing (FusedKSPDebugFailAllocation),\n\
              for every n that a solve reaches: a PETSC_ERR_MEM error whose message names the bytes (or std::bad_alloc),\n\
              nothing leaked, and the next solve gives the solution of a solve without failures\n\
Every solver gets PCNONE unless its options say otherwise.  Each sub-case prints a PASS/FAIL line; the program ends\n\
with 'test_errors: PASS' or 'test_errors: FAIL' (exit code 1).  Options:\n\
  -ksp_type <fusedcg> -indef_ksp_type <fusedcg> -skew_ksp_type <fusedbcgs>: the solvers (and any KSP option)\n\
  -mat_type aijfused: the matrix type of every problem; -n: grid size (each sub-case picks its own -problem)\n\
  -rtol <1e-8>: relative tolerance of the solves\n\
  -alloc_n <8>: grid size of the alloc sub-case\n\n";

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
  for (PetscInt k = 1; k <= 4; k *= 4) { /* k = 4: on one rank, chunks whose first one computes the start from b */
    PetscCall(VecDestroy(&bad));
    PetscCall(VecCreate(PETSC_COMM_WORLD, &bad));
    PetscCall(VecSetSizes(bad, m + 1, PETSC_DETERMINE));
    PetscCall(VecSetType(bad, vtype));
    PetscCall(VecSet(bad, 1.0));
    PetscCall(CreateKSP(p.A, NULL, KSPFUSEDCG, rtol, &ksp));
    PetscCall(KSPFusedSetCheckInterval(ksp, k));
    PetscCall(SolveCatch(ksp, bad, x, &ierr, msg, sizeof(msg)));
    PetscCall(Check((PetscBool)(ierr != 0), "check interval %" PetscInt_FMT ": right-hand side one entry per rank too long for the %" PetscInt_FMT " x %" PetscInt_FMT " matrix: error %d (%s)", k, N, N, (int)ierr, msg));
    PetscCall(KSPDestroy(&ksp));
  }

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

/* Vectors whose layout differs from the matrix's (the same global length, other local lengths: two ranks or more)
   and a right-hand side of a different global length: every fused solver stops with a PETSc error naming the
   lengths, before any kernel runs                                                                             */
static PetscErrorCode TestLayouts(PetscReal rtol)
{
  const KSPType  types[] = {KSPFUSEDCG, KSPFUSEDBCGS, KSPFUSEDSGMRES, KSPFUSEDBICG};
  Problem        p;
  Vec            x, b, shifted;
  VecType        vtype;
  PetscInt       m, N;
  PetscMPIInt    rank, size;
  PetscErrorCode ierr;
  char           msg[1024];

  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscCall(CreateProblem("poisson2d", &p));
  PetscCall(MatCreateVecs(p.A, &x, &b));
  PetscCall(VecGetType(x, &vtype));
  PetscCall(MatGetLocalSize(p.A, &m, NULL));
  PetscCall(MatGetSize(p.A, &N, NULL));
  for (size_t t = 0; t < sizeof(types) / sizeof(types[0]) && size > 1; t++) {
    for (PetscInt k = 1; k <= 4; k *= 4) { /* k = 4: chunks of iterations, whose first one computes the start from b */
      for (int which = 0; which < 2; which++) {
        KSP ksp;

        /* one row of every other rank moves to the first: every rank meets the error (errors are not collective) */
        PetscCall(VecCreate(PETSC_COMM_WORLD, &shifted));
        PetscCall(VecSetSizes(shifted, rank == 0 ? m + size - 1 : m - 1, N));
        PetscCall(VecSetType(shifted, vtype));
        PetscCall(VecSet(shifted, 1.0));
        PetscCall(CreateKSP(p.A, "layout_", types[t], rtol, &ksp));
        PetscCall(KSPFusedSetCheckInterval(ksp, k));
        PetscCall(SolveCatch(ksp, which ? b : shifted, which ? shifted : x, &ierr, msg, sizeof(msg)));
        PetscCall(Check((PetscBool)(ierr != 0), "%s, check interval %" PetscInt_FMT ": %s with another layout than the matrix: error %d (%s)", types[t], k, which ? "solution" : "right-hand side", (int)ierr, msg));
        PetscCall(KSPDestroy(&ksp));
        PetscCall(VecDestroy(&shifted));
      }
    }
  }
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&b));
  PetscCall(ProblemDestroy(&p));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Options of the chunks: -fused_reduction nccl is accepted by every fused solver (NCCL is loaded only for chunks
   with several processes on a GPU; where it is missing the solve keeps k = 1, see tests/run's no-nccl case);
   a check interval below 1 is an error of KSPFusedSetCheckInterval()                                           */
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
    PetscCall(Check((PetscBool)(ierr == 0), "%s with -fused_reduction nccl: error %d (%s)", types[t], (int)ierr, msg));
    PetscCall(KSPDestroy(&ksp));
  }
  PetscCall(PetscOptionsClearValue(NULL, "-nccl_fused_reduction"));
  PetscCall(CreateKSP(p.A, "interval_", KSPFUSEDCG, rtol, &ksp)); /* a prefix: -ksp_type may name a solver without chunks */
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
  KSPType            type;
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
  PetscCall(KSPGetType(ksp, &type));
  PetscCall(KSPSolve(ksp, p.b, x));
  PetscCall(KSPGetConvergedReason(ksp, &reason));
  PetscCall(KSPGetIterationNumber(ksp, &its));
  PetscCall(TrueResidual(p.A, p.b, x, &rel));
  if (reason > 0)
    PetscCall(Check((PetscBool)(rel <= 10.0 * rtol), "skew-symmetric, %s: %s after %" PetscInt_FMT " iterations, true residual %.3e <= 10 rtol", type, KSPConvergedReasons[reason], its, (double)rel));
  else
    PetscCall(Check((PetscBool)(reason == KSP_DIVERGED_BREAKDOWN), "skew-symmetric, %s: %s after %" PetscInt_FMT " iterations (true residual %.3e)", type, KSPConvergedReasons[reason], its, (double)rel));
  if (!strcmp(type, KSPFUSEDBCGS)) {
    PetscInt restarts;
    PetscCall(KSPFusedGetResidualReplacementCount(ksp, &restarts));
    PetscCall(Check((PetscBool)(restarts == 1), "skew-symmetric, %s: one restart after the breakdown, none after the second (from the same residual): %" PetscInt_FMT, type, restarts));
  }
  PetscCall(KSPDestroy(&ksp));
  PetscCall(VecDestroy(&x));
  PetscCall(ProblemDestroy(&p));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* A PCSHELL (Jacobi) that fails at its call number fail_at, and a MATSHELL (y = A x) that fails or puts a NaN in
   y at its call number fail_at (then no more) */
typedef struct {
  Mat       A;
  Vec       diag;
  PetscInt  calls, fail_at;
  PetscBool nan; /* MATSHELL: a NaN instead of an error */
} Faulty;

static PetscErrorCode FaultyPCApply(PC pc, Vec x, Vec y)
{
  Faulty *f;

  PetscFunctionBeginUser;
  PetscCall(PCShellGetContext(pc, &f));
  PetscCheck(++f->calls != f->fail_at, PETSC_COMM_SELF, PETSC_ERR_USER, "PCSHELL fails at its call %" PetscInt_FMT " (test)", f->calls);
  PetscCall(VecPointwiseDivide(y, x, f->diag));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode FaultyMult(Mat S, Vec x, Vec y)
{
  Faulty *f;

  PetscFunctionBeginUser;
  PetscCall(MatShellGetContext(S, &f));
  f->calls++;
  PetscCheck(f->nan || f->calls != f->fail_at, PETSC_COMM_SELF, PETSC_ERR_USER, "MATSHELL fails at its call %" PetscInt_FMT " (test)", f->calls);
  PetscCall(MatMult(f->A, x, y));
  if (f->nan && f->calls == f->fail_at) PetscCall(SetFirstEntry(y, (PetscReal)NAN));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* fusedbicg needs A^T and M^{-T}: a MATSHELL without MatMultTranspose() and a PCSHELL without PCApplyTranspose() are a
   PETSC_ERR_SUP error naming what is missing, before any iteration (the shells of the recovery sub-case, never failing) */
static PetscErrorCode TestTransposes(PetscReal rtol)
{
  Problem        p;
  Mat            S;
  Faulty         f = {NULL, NULL, 0, -1, PETSC_FALSE};
  KSP            ksp;
  PC             pc;
  Vec            x;
  PetscInt       m, M;
  PetscErrorCode ierr;
  char           msg[1024];

  PetscFunctionBeginUser;
  PetscCall(CreateProblem("convdiff3d", &p));
  PetscCall(MatCreateVecs(p.A, &x, NULL));
  PetscCall(MatGetLocalSize(p.A, &m, NULL));
  PetscCall(MatGetSize(p.A, &M, NULL));
  f.A = p.A;
  PetscCall(MatCreateVecs(p.A, &f.diag, NULL));
  PetscCall(MatGetDiagonal(p.A, f.diag));
  PetscCall(MatCreateShell(PETSC_COMM_WORLD, m, m, M, M, &f, &S));
  PetscCall(MatShellSetOperation(S, MATOP_MULT, (PetscErrorCodeFn *)FaultyMult));
  PetscCall(CreateKSP(S, "transpose_", KSPFUSEDBICG, rtol, &ksp));
  PetscCall(SolveCatch(ksp, p.b, x, &ierr, msg, sizeof(msg)));
  PetscCall(Check((PetscBool)(ierr == PETSC_ERR_SUP && strstr(msg, "needs MatMultTranspose()")), "fusedbicg on a MATSHELL without MatMultTranspose(): error %d (%s)", (int)ierr, msg));
  PetscCall(KSPDestroy(&ksp));
  PetscCall(CreateKSP(p.A, "transpose_", KSPFUSEDBICG, rtol, &ksp));
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(PCSetType(pc, PCSHELL));
  PetscCall(PCShellSetContext(pc, &f));
  PetscCall(PCShellSetApply(pc, FaultyPCApply));
  PetscCall(SolveCatch(ksp, p.b, x, &ierr, msg, sizeof(msg)));
  PetscCall(Check((PetscBool)(ierr == PETSC_ERR_SUP && strstr(msg, "needs PCApplyTranspose()")), "fusedbicg with a PCSHELL without PCApplyTranspose(): error %d (%s)", (int)ierr, msg));
  PetscCall(KSPDestroy(&ksp));
  PetscCall(MatDestroy(&S));
  PetscCall(VecDestroy(&f.diag));
  PetscCall(VecDestroy(&x));
  PetscCall(ProblemDestroy(&p));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The solver of a recovery sub-case on A (p.A or a MATSHELL around it): types[t], with nested: a fusedcg in
   PCKSP (tight tolerance) whose PC is the PCSHELL of f, else the PCSHELL of f itself (f->diag set) or, for a
   MATSHELL, no PC                                                                                          */
static PetscErrorCode RecoveryKSP(Mat A, KSPType type, PetscBool nested, Faulty *f, PetscReal rtol, KSP *ksp)
{
  PC  pc;
  KSP inner;

  PetscFunctionBeginUser;
  PetscCall(CreateKSP(A, "rec_", type, rtol, ksp));
  if (!f->diag) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(KSPGetPC(*ksp, &pc));
  if (nested) {
    PetscCall(PCSetType(pc, PCKSP));
    PetscCall(PCKSPGetKSP(pc, &inner));
    PetscCall(KSPSetType(inner, KSPFUSEDCG));
    PetscCall(KSPSetTolerances(inner, 1e-10, PETSC_CURRENT, PETSC_CURRENT, 1000));
    PetscCall(KSPGetPC(inner, &pc));
  }
  PetscCall(PCSetType(pc, PCSHELL));
  PetscCall(PCShellSetContext(pc, f));
  PetscCall(PCShellSetApply(pc, FaultyPCApply));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Each fused solver, alone and nested: a fault in a PCSHELL or a MATSHELL (an error, or NaN) in the middle of a
   solve (inside a batch of deferred dot products), then a solve without faults.  After an error the solve runs
   with a new KSP and solution vector: PETSc leaves the vectors an error interrupted locked for reading (its
   KSPSolve() and PCApply() are not written to be called again after an error); after NaN, with the same KSP.  */
static PetscErrorCode TestRecovery(PetscReal rtol)
{
  const KSPType  types[]  = {KSPFUSEDCG, KSPFUSEDBCGS, KSPFUSEDSGMRES};
  const char    *faults[] = {"a PCSHELL that fails once", "a PCSHELL of a fusedcg in PCKSP that fails once", "a MATSHELL that fails once", "a MATSHELL that gives NaN once"};
  Problem        p;
  VecType        vtype;
  PetscInt       m, M;
  PetscErrorCode ierr;
  char           msg[1024], expect[64];

  PetscFunctionBeginUser;
  PetscCall(CreateProblem("poisson2d", &p));
  PetscCall(MatGetVecType(p.A, &vtype));
  PetscCall(MatGetLocalSize(p.A, &m, NULL));
  PetscCall(MatGetSize(p.A, &M, NULL));
  for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
    for (int fault = 0; fault < 4; fault++) {
      const PetscBool    shellmat = fault >= 2 ? PETSC_TRUE : PETSC_FALSE, nan = fault == 3 ? PETSC_TRUE : PETSC_FALSE;
      Faulty             f = {p.A, NULL, 0, shellmat ? 4 : 3, nan};
      Mat                A = p.A;
      Vec                x;
      KSP                ksp;
      KSPConvergedReason reason;
      PetscReal          rel = -1;

      if (shellmat) { /* a user operator with fused vectors: its products run inside the solvers' batches */
        PetscCall(MatCreateShell(PETSC_COMM_WORLD, m, m, M, M, &f, &A));
        PetscCall(MatShellSetOperation(A, MATOP_MULT, (PetscErrorCodeFn *)FaultyMult));
        PetscCall(MatShellSetVecType(A, vtype));
      } else {
        PetscCall(MatCreateVecs(p.A, &f.diag, NULL));
        PetscCall(MatGetDiagonal(p.A, f.diag));
      }
      PetscCall(MatCreateVecs(p.A, &x, NULL));
      PetscCall(RecoveryKSP(A, types[t], fault == 1 ? PETSC_TRUE : PETSC_FALSE, &f, rtol, &ksp));
      PetscCall(SolveCatch(ksp, p.b, x, &ierr, msg, sizeof(msg)));
      PetscCall(KSPGetConvergedReason(ksp, &reason));
      PetscCall(PetscSNPrintf(expect, sizeof(expect), "%s fails at its call %" PetscInt_FMT, shellmat ? "MATSHELL" : "PCSHELL", f.fail_at));
      if (nan)
        PetscCall(Check((PetscBool)(!ierr && reason == KSP_DIVERGED_NANORINF), "%s, %s: %s (error %d %s)", types[t], faults[fault], KSPConvergedReasons[reason], (int)ierr, msg));
      else
        PetscCall(Check((PetscBool)(ierr == PETSC_ERR_USER && strstr(msg, expect)), "%s, %s: error %d (%s)", types[t], faults[fault], (int)ierr, msg));
      if (ierr) {
        PetscCall(KSPDestroy(&ksp));
        PetscCall(VecDestroy(&x));
        PetscCall(MatCreateVecs(p.A, &x, NULL));
        f.calls = 0;
        PetscCall(RecoveryKSP(A, types[t], fault == 1 ? PETSC_TRUE : PETSC_FALSE, &f, rtol, &ksp));
      }
      f.fail_at = -1;
      PetscCall(SolveCatch(ksp, p.b, x, &ierr, msg, sizeof(msg)));
      PetscCall(KSPGetConvergedReason(ksp, &reason));
      if (!ierr) PetscCall(TrueResidual(p.A, p.b, x, &rel));
      PetscCall(Check((PetscBool)(!ierr && reason > 0 && rel <= 10 * rtol), "%s, %s, then a solve without faults: %s, true residual %.3e (error %d %s)", types[t], faults[fault], KSPConvergedReasons[reason], (double)rel, (int)ierr, msg));
      PetscCall(KSPDestroy(&ksp));
      PetscCall(VecDestroy(&x));
      PetscCall(VecDestroy(&f.diag));
      if (shellmat) PetscCall(MatDestroy(&A));
    }
  }
  PetscCall(ProblemDestroy(&p));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The objects of one solve of the alloc sub-case, destroyed by AllocDestroy() whatever happened */
typedef struct {
  Mat F;
  Vec b, x;
  KSP ksp;
} AllocRun;

static PetscErrorCode AllocDestroy(AllocRun *r)
{
  PetscFunctionBeginUser;
  PetscCall(KSPDestroy(&r->ksp));
  PetscCall(VecDestroy(&r->x));
  PetscCall(VecDestroy(&r->b));
  PetscCall(MatDestroy(&r->F));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The 5-point Laplacian on an n x n grid into *M, created here: a matrix of the caller whatever fails */
static PetscErrorCode Laplacian(PetscInt n, Mat *M)
{
  PetscFunctionBeginUser;
  PetscCall(MatCreate(PETSC_COMM_SELF, M));
  PetscCall(MatSetSizes(*M, n * n, n * n, n * n, n * n));
  PetscCall(MatSetType(*M, MATSEQAIJFUSED));
  PetscCall(MatSeqAIJSetPreallocation(*M, 5, NULL));
  for (PetscInt i = 0; i < n * n; i++) {
    PetscCall(MatSetValue(*M, i, i, 4.0, INSERT_VALUES));
    if (i % n) PetscCall(MatSetValue(*M, i, i - 1, -1.0, INSERT_VALUES));
    if ((i + 1) % n) PetscCall(MatSetValue(*M, i, i + 1, -1.0, INSERT_VALUES));
    if (i >= n) PetscCall(MatSetValue(*M, i, i - n, -1.0, INSERT_VALUES));
    if (i + n < n * n) PetscCall(MatSetValue(*M, i, i + n, -1.0, INSERT_VALUES));
  }
  PetscCall(MatAssemblyBegin(*M, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(*M, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* One solve, with the allocation k of phase failing (k = 0: none): phase 0 makes the fused matrix (created, filled
   and assembled: PETSc's MatConvert() does not destroy the matrix it made when the new type fails) and its vectors,
   phase 1 is KSPSolve() after KSPSetUp().  KSPSetUp() itself runs without failures: PETSc's KSPSetWorkVecs()
   leaves a KSP that KSPDestroy() cannot destroy when duplicating a vector fails.                               */
static PetscErrorCode AllocSolve(PetscInt n, KSPType type, PetscInt phase, PetscInt64 k, AllocRun *r, PetscInt64 *count)
{
  PC pc;

  PetscFunctionBeginUser;
  if (phase == 0) PetscCall(FusedKSPDebugFailAllocation(k));
  PetscCall(Laplacian(n, &r->F));
  PetscCall(MatCreateVecs(r->F, &r->x, &r->b));
  PetscCall(VecSet(r->b, 1.0));
  if (phase == 0) PetscCall(FusedKSPDebugGetAllocationCount(count));
  PetscCall(FusedKSPDebugFailAllocation(0));
  PetscCall(KSPCreate(PETSC_COMM_WORLD, &r->ksp));
  PetscCall(KSPSetOptionsPrefix(r->ksp, "alloc_"));
  PetscCall(KSPSetOperators(r->ksp, r->F, r->F));
  PetscCall(KSPSetType(r->ksp, type));
  PetscCall(KSPGetPC(r->ksp, &pc));
  PetscCall(PCSetType(pc, PCNONE));
  PetscCall(KSPSetTolerances(r->ksp, 1e-30, PETSC_CURRENT, PETSC_CURRENT, 6));
  PetscCall(KSPSetFromOptions(r->ksp));
  PetscCall(KSPSetUp(r->ksp));
  if (phase == 1) PetscCall(FusedKSPDebugFailAllocation(k));
  PetscCall(KSPSolve(r->ksp, r->b, r->x));
  if (phase == 1) PetscCall(FusedKSPDebugGetAllocationCount(count));
  PetscCall(FusedKSPDebugFailAllocation(0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Every allocation of FusedKSP that a solve (the fused matrix, its vectors, 6 iterations of the
   solver) makes fails in turn: a PETSC_ERR_MEM error, nothing leaked (-malloc_dump), and then a solve without
   failures gives the solution of the reference solve, to the bit                                            */
static PetscErrorCode TestAllocationFailures(PetscInt n)
{
  const KSPType types[]  = {KSPFUSEDCG, KSPFUSEDBCGS, KSPFUSEDSGMRES, KSPFUSEDBICG};
  const char   *phases[] = {"matrix and vectors", "KSPSolve"};
  PetscMPIInt   size;

  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  if (size > 1) PetscFunctionReturn(PETSC_SUCCESS); /* an error on one rank would leave the others waiting */
  for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
    for (PetscInt phase = 0; phase < 2; phase++) {
      AllocRun       ref = {NULL, NULL, NULL, NULL};
      PetscInt64     total, failed = 0, bad = 0, wrong = 0;
      PetscErrorCode ierr;

      PetscCall(AllocSolve(n, types[t], phase, 0, &ref, &total));
      for (PetscInt64 k = 1; k <= total + 1; k++) {
        AllocRun    run = {NULL, NULL, NULL, NULL}, again = {NULL, NULL, NULL, NULL};
        PetscInt64  count = 0, unused;
        const char *text, *specific = NULL;
        PetscReal   diff;

        PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
        ierr = AllocSolve(n, types[t], phase, k, &run, &count);
        PetscCall(PetscPopErrorHandler());
        if (ierr) PetscCall(FusedKSPDebugGetAllocationCount(&count));
        PetscCall(FusedKSPDebugFailAllocation(0));
        PetscCall(AllocDestroy(&run));
        if (count < k) { /* the solve made fewer allocations: none failed */
          PetscCall(Check((PetscBool)!ierr, "%s, %s: with no allocation failing, no error (error %d)", types[t], phases[phase], (int)ierr));
          break;
        }
        failed++;
        PetscCall(PetscErrorMessage(ierr, &text, &specific));
        if (ierr != PETSC_ERR_MEM || !specific || (!strstr(specific, " bytes") && !strstr(specific, "std::bad_alloc"))) {
          if (!bad++) PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%s, %s: allocation %" PetscInt64_FMT " failing gives error %d: %s\n", types[t], phases[phase], k, (int)ierr, specific ? specific : ""));
        }
        PetscCall(AllocSolve(n, types[t], phase, 0, &again, &unused));
        PetscCall(VecAXPY(again.x, -1.0, ref.x));
        PetscCall(VecNorm(again.x, NORM_INFINITY, &diff));
        if (diff != 0.0 && !wrong++) PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%s, %s: after allocation %" PetscInt64_FMT " failed, the next solve differs by %g\n", types[t], phases[phase], k, (double)diff));
        PetscCall(AllocDestroy(&again));
      }
      PetscCall(Check((PetscBool)(failed > 0 && failed == total), "%s, %s: each of the %" PetscInt64_FMT " allocations failed once (%" PetscInt64_FMT " runs)", types[t], phases[phase], total, failed));
      PetscCall(Check((PetscBool)!bad, "%s, %s: every failure is PETSC_ERR_MEM naming the bytes or std::bad_alloc (%" PetscInt64_FMT " are not)", types[t], phases[phase], bad));
      PetscCall(Check((PetscBool)!wrong, "%s, %s: after each failure, a new solve gives the reference solution (%" PetscInt64_FMT " do not)", types[t], phases[phase], wrong));
      PetscCall(AllocDestroy(&ref));
    }
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

int main(int argc, char **argv)
{
  PetscReal rtol    = 1e-8;
  PetscInt  alloc_n = 8;

  PetscFunctionBeginUser;
  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(FusedKSPInitializePackage());
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-rtol", &rtol, NULL));
  PetscCall(TestIndefinite(rtol));
  PetscCall(TestNaN(rtol));
  PetscCall(TestSizes(rtol));
  PetscCall(TestPlainVec(rtol));
  PetscCall(TestLayouts(rtol));
  PetscCall(TestChunkOptions(rtol));
  PetscCall(TestSkew(rtol));
  PetscCall(TestTransposes(rtol));
  PetscCall(TestRecovery(rtol));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-alloc_n", &alloc_n, NULL));
  PetscCall(TestAllocationFailures(alloc_n));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "test_errors: %s\n", check_failures ? "FAIL" : "PASS"));
  PetscCall(PetscFinalize());
  return check_failures ? 1 : 0;
}
