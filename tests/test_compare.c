static char help[] = "Compares a fused solver with its classical PETSc counterpart on one problem (tutorials/problems.h).\n\
The fused solver (options prefix fused_) solves on a copy of the matrix converted to -fused_mat_type, with vectors\n\
from MatCreateVecs() of that copy; the classical one (prefix ref_) on the original matrix.  Checks:\n\
  both converged; the fused true residual is at most 10 times the classical one (or than rtol);\n\
  ||x_fused - x_ref|| / ||x_ref|| <= -sol_tol (derived from the residuals and the condition number, see below);\n\
  |its_fused - its_ref| <= its_tol its_ref + its_abs;\n\
  with -hist_its k: both rerun for exactly k iterations, residual norm histories agree to -hist_tol (relative).\n\
Prints 'fused: its=N checksum=C' (C = sum_i w_i x_i with fixed weights) so that tests/run can compare runs on\n\
several rank counts, and ends with 'test_compare: PASS' or 'test_compare: FAIL' (exit code 1).\n\
Options:\n\
  -fused_ksp_type <fusedcg> -ref_ksp_type <cg> ... : the two solvers (any KSP option with these prefixes)\n\
  -fused_mat_type <aijfused>: type of the fused solver's copy of the matrix\n\
  -fused_mat_format <csr,sell,auto>: its device format (MatAIJFusedSetFormat)\n\
  -ref_mat_type <type>: convert the classical solver's matrix too (default: the problem's matrix as created)\n\
  -pc_type <type>: PC of both solvers (-fused_pc_type / -ref_pc_type override)\n\
  -rtol <1e-8>, -max_it <10000>: tolerances of both solvers (-fused_ksp_rtol / -ref_ksp_rtol override)\n\
  -sol_tol <tol>: tolerance on the solution difference (default: derived, see the comment in main)\n\
  -its_tol <0.1> -its_abs <2>: iteration count tolerance (fusedbcgs: 0.2 and 3)\n\
  -hist_its <0> -hist_tol <1e-10>: residual history comparison\n\
  -hist_true_tol <1e-9>: true residual norms after -hist_its iterations (seed 000's comparison; computing\n\
     ||b - A x|| itself carries eps ||A|| ||x|| / ||r|| of rounding, ~1e-10 on the test problems)\n\
  -zero_copy: PETSc's own device types (e.g. -fused_mat_type aijcusparse -ref_mat_type aijcusparse, a PETSc built\n\
     with CUDA): both solve again, and the fused solve must have run fused kernels (at least one backend launch per\n\
     iteration on each rank with rows) on vectors of a PETSc device type and, when the classical one with the same preconditioner made no\n\
     host<->device vector copy (PETSc's log counts them), made none either\n\
  -pc_applies: PETSc's log counts the PCApply events of both solves: the fused solve's per (iterations + 1) are at most\n\
     the classical one's (fusedcg with a general PC applies it as often as KSPCG: iterations + 1 times)\n\
  -expect_streams <1,2>: fusedbicg's A and A^T sides (FusedKSPDebugGetSideCounts()): 2, the fused solve forked to\n\
     the backend's second stream and joined it at least once per iteration, and a rerun with\n\
     -fused_ksp_fusedbicg_streams 1 gives the same iterations, residual norm and solution checksum, bit for bit;\n\
     1, the solve used no second stream (a backend with one stream, or -fused_ksp_fusedbicg_streams 1)\n\
  -problem ... -n ... -rhs ... : the problem (tutorials/problems.h)\n\n";

#include <fusedksp.h>
#include "problems.h"

typedef struct {
  KSP                ksp;
  Mat                A;
  Vec                b, x;
  PetscInt           its;
  KSPConvergedReason reason;
  PetscReal          resid;     /* true ||b - A x|| / ||b|| */
  PetscInt           pcapplies; /* PCApply events of the last solve (PETSc's default log handler) */
} Solve;

#include "check.h"

static PetscErrorCode SolveCreate(Mat A, Vec b, const char prefix[], KSPType type, const char pctype[], PetscReal rtol, PetscInt maxit, Solve *s)
{
  PC pc;

  PetscFunctionBeginUser;
  s->A = A;
  PetscCall(MatCreateVecs(A, &s->x, &s->b));
  PetscCall(VecCopy(b, s->b));
  PetscCall(KSPCreate(PETSC_COMM_WORLD, &s->ksp));
  PetscCall(KSPSetOptionsPrefix(s->ksp, prefix));
  PetscCall(KSPSetOperators(s->ksp, A, A));
  PetscCall(KSPSetType(s->ksp, type));
  PetscCall(KSPGetPC(s->ksp, &pc));
  if (pctype[0]) PetscCall(PCSetType(pc, pctype));
  PetscCall(KSPSetTolerances(s->ksp, rtol, PETSC_CURRENT, PETSC_CURRENT, maxit));
  PetscCall(KSPSetFromOptions(s->ksp));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode SolveRun(Solve *s)
{
  Vec       r;
  PetscReal rnorm, bnorm;

  PetscLogEvent      pcapply;
  PetscEventPerfInfo before, after;

  PetscFunctionBeginUser;
  PetscCall(PetscLogEventGetId("PCApply", &pcapply));
  PetscCall(PetscLogEventGetPerfInfo(PETSC_DETERMINE, pcapply, &before));
  PetscCall(VecZeroEntries(s->x));
  PetscCall(KSPSolve(s->ksp, s->b, s->x));
  PetscCall(PetscLogEventGetPerfInfo(PETSC_DETERMINE, pcapply, &after));
  s->pcapplies = after.count - before.count;
  PetscCall(KSPGetIterationNumber(s->ksp, &s->its));
  PetscCall(KSPGetConvergedReason(s->ksp, &s->reason));
  PetscCall(VecDuplicate(s->b, &r));
  PetscCall(MatMult(s->A, s->x, r));
  PetscCall(VecAYPX(r, -1.0, s->b));
  PetscCall(VecNorm(r, NORM_2, &rnorm));
  PetscCall(VecNorm(s->b, NORM_2, &bnorm));
  PetscCall(VecDestroy(&r));
  s->resid = rnorm / bnorm;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* SolveRun() again (its PC set up), counting PETSc's host<->device vector copies and the backend's kernel launches */
static PetscErrorCode SolveRunCounted(Solve *s, PetscLogDouble *copies, PetscInt64 *launches)
{
  PetscLogDouble c0 = 0.0;
  PetscInt64     l0, l1;

  PetscFunctionBeginUser;
#if defined(PETSC_USE_LOG)
  c0 = petsc_ctog_ct + petsc_gtoc_ct;
#endif
  PetscCall(FusedKSPGetBackendCounters(&l0, NULL, NULL));
  PetscCall(SolveRun(s));
  PetscCall(FusedKSPGetBackendCounters(&l1, NULL, NULL));
  *copies = -c0;
#if defined(PETSC_USE_LOG)
  *copies += petsc_ctog_ct + petsc_gtoc_ct;
#endif
  *launches = l1 - l0;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* SolveRun() counting the forks to the backend's second stream and the joins of it (FusedKSPDebugGetSideCounts()) */
static PetscErrorCode SolveRunSides(Solve *s, PetscInt64 *forks, PetscInt64 *joins)
{
  PetscInt64 f0, j0, f1, j1;

  PetscFunctionBeginUser;
  PetscCall(FusedKSPDebugGetSideCounts(&f0, &j0));
  PetscCall(SolveRun(s));
  PetscCall(FusedKSPDebugGetSideCounts(&f1, &j1));
  *forks = f1 - f0;
  *joins = j1 - j0;
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode SolveDestroy(Solve *s)
{
  PetscFunctionBeginUser;
  PetscCall(KSPDestroy(&s->ksp));
  PetscCall(VecDestroy(&s->x));
  PetscCall(VecDestroy(&s->b));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode SolveView(const char label[], Solve *s)
{
  KSPType     type;
  PCType      pctype;
  PC          pc;
  KSPNormType ntype;

  PetscFunctionBeginUser;
  PetscCall(KSPGetType(s->ksp, &type));
  PetscCall(KSPGetPC(s->ksp, &pc));
  PetscCall(PCGetType(pc, &pctype));
  PetscCall(KSPGetNormType(s->ksp, &ntype));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%s ksp=%s pc=%s norm=%s its=%" PetscInt_FMT " reason=%s true_resid=%.3e\n", label, type, pctype, KSPNormTypes[ntype], s->its, KSPConvergedReasons[s->reason], (double)s->resid));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* sum_i w_i x_i with weights w_i in [1, 2) that depend on the global index: detects wrong values and wrong order */
static PetscErrorCode Checksum(Vec x, PetscReal *sum)
{
  const PetscScalar *a;
  PetscInt           rstart, rend;
  PetscReal          local = 0.0;

  PetscFunctionBeginUser;
  PetscCall(VecGetOwnershipRange(x, &rstart, &rend));
  PetscCall(VecGetArrayRead(x, &a));
  for (PetscInt i = rstart; i < rend; i++) local += (1.0 + (PetscReal)((i * 7919) % 1000) / 1000.0) * PetscRealPart(a[i - rstart]);
  PetscCall(VecRestoreArrayRead(x, &a));
  PetscCallMPI(MPIU_Allreduce(&local, sum, 1, MPIU_REAL, MPIU_SUM, PetscObjectComm((PetscObject)x)));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Estimate of the 2-norm condition number of A from the extreme singular values of a Krylov run (CG for symmetric
   matrices, full GMRES otherwise, no preconditioner).  It runs on a sequential copy of A on every rank, so the
   estimate is the same for any number of ranks and costs no communication.  Krylov estimates of sigma_min converge
   from above, so this is a lower bound of the condition number; the caller allows for that with a safety factor. */
static PetscErrorCode EstimateCondition(Mat A, PetscBool symmetric, PetscReal *kappa)
{
  Mat         Aseq;
  KSP         ksp;
  PC          pc;
  Vec         x, b;
  PetscMPIInt size;
  PetscInt    N, maxit;
  PetscReal   emax, emin;

  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_size(PetscObjectComm((PetscObject)A), &size));
  PetscCall(MatCreateRedundantMatrix(A, size, PETSC_COMM_SELF, MAT_INITIAL_MATRIX, &Aseq));
  PetscCall(MatGetSize(Aseq, &N, NULL));
  maxit = PetscMin(N, 500);
  PetscCall(MatCreateVecs(Aseq, &x, &b));
  PetscCall(VecSet(b, 1.0));
  PetscCall(KSPCreate(PETSC_COMM_SELF, &ksp));
  PetscCall(KSPSetOptionsPrefix(ksp, "est_"));
  PetscCall(KSPSetOperators(ksp, Aseq, Aseq));
  PetscCall(KSPSetType(ksp, symmetric ? KSPCG : KSPGMRES));
  if (!symmetric) PetscCall(KSPGMRESSetRestart(ksp, maxit));
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(PCSetType(pc, PCNONE));
  PetscCall(KSPSetTolerances(ksp, 1e-14, PETSC_CURRENT, PETSC_CURRENT, maxit));
  PetscCall(KSPSetComputeSingularValues(ksp, PETSC_TRUE));
  PetscCall(KSPSetFromOptions(ksp));
  PetscCall(KSPSolve(ksp, b, x));
  PetscCall(KSPComputeExtremeSingularValues(ksp, &emax, &emin));
  *kappa = emax / emin;
  PetscCall(KSPDestroy(&ksp));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&b));
  PetscCall(MatDestroy(&Aseq));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* reruns a solver for exactly k iterations and returns its residual history (k+1 norms when nothing broke down)
   and the true residual norm ||b - A x_k|| after those k iterations */
static PetscErrorCode History(Solve *s, PetscInt k, PetscReal hist[], PetscInt *nh, PetscReal *truenorm)
{
  const PetscReal *h;
  Vec              r;

  PetscFunctionBeginUser;
  PetscCall(KSPSetTolerances(s->ksp, 1e-50, 0.0, PETSC_CURRENT, k));
  PetscCall(KSPSetResidualHistory(s->ksp, hist, k + 1, PETSC_TRUE));
  PetscCall(VecZeroEntries(s->x));
  PetscCall(KSPSolve(s->ksp, s->b, s->x));
  PetscCall(KSPGetResidualHistory(s->ksp, &h, nh));
  PetscCall(VecDuplicate(s->b, &r));
  PetscCall(MatMult(s->A, s->x, r));
  PetscCall(VecAYPX(r, -1.0, s->b));
  PetscCall(VecNorm(r, NORM_2, truenorm));
  PetscCall(VecDestroy(&r));
  PetscFunctionReturn(PETSC_SUCCESS);
}

int main(int argc, char **argv)
{
  Problem    prob;
  Mat        Af, Ar;
  Vec        diff;
  Solve      fused, ref;
  char       fusedtype[64] = KSPFUSEDCG, reftype[64] = KSPCG, mattype[64] = MATAIJFUSED, refmattype[64] = "", pctype[64] = "";
  PetscReal  rtol = 1e-8, soltol = -1.0, itstol, dnorm, xnorm, checksum, histtol = 1e-10, histtruetol = 1e-9;
  PetscInt   maxit = 10000, itsabs, histits = 0, N, expectstreams = 0;
  PetscBool  isbcgs, setformat, zerocopy = PETSC_FALSE, pcapplies = PETSC_FALSE;
  PetscInt64 forks, joins;

  MatAIJFusedFormat format;
  const char *const formats[] = {"csr", "sell", "auto", "MatAIJFusedFormat", "MAT_AIJFUSED_", NULL};

  PetscFunctionBeginUser;
  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(FusedKSPInitializePackage());
  PetscCall(PetscOptionsGetString(NULL, "fused_", "-ksp_type", fusedtype, sizeof(fusedtype), NULL));
  PetscCall(PetscOptionsGetString(NULL, "ref_", "-ksp_type", reftype, sizeof(reftype), NULL));
  PetscCall(PetscStrcmp(fusedtype, KSPFUSEDBCGS, &isbcgs));
  /* Pipelined BiCGStab is mathematically equivalent to BiCGStab but not in floating point: seed 000 (Rupp et al.)
     reports classical and pipelined residuals differing by up to 41% after 30 iterations, neither systematically
     worse.  So the iteration counts to reach rtol spread more than for CG and GMRES (whose histories agree to 1e-10):
     fusedbcgs gets 20% + 3, the others 10% + 2. */
  itstol = isbcgs ? 0.2 : 0.1;
  format = MAT_AIJFUSED_AUTO;
  itsabs = isbcgs ? 3 : 2;
  PetscOptionsBegin(PETSC_COMM_WORLD, NULL, "Fused vs classical solver comparison", "test_compare");
  PetscCall(PetscOptionsString("-fused_mat_type", "Matrix type of the fused solver's copy", "MatConvert", mattype, mattype, sizeof(mattype), NULL));
  PetscCall(PetscOptionsEnum("-fused_mat_format", "Device format of the fused solver's copy", "MatAIJFusedSetFormat", formats, (PetscEnum)format, (PetscEnum *)&format, &setformat));
  PetscCall(PetscOptionsString("-ref_mat_type", "Matrix type of the classical solver's copy (default: no copy)", "MatConvert", refmattype, refmattype, sizeof(refmattype), NULL));
  PetscCall(PetscOptionsString("-pc_type", "PC of both solvers", "PCSetType", pctype, pctype, sizeof(pctype), NULL));
  PetscCall(PetscOptionsReal("-rtol", "Relative tolerance of both solvers", "KSPSetTolerances", rtol, &rtol, NULL));
  PetscCall(PetscOptionsInt("-max_it", "Iteration limit of both solvers", "KSPSetTolerances", maxit, &maxit, NULL));
  PetscCall(PetscOptionsReal("-sol_tol", "Tolerance of ||x_fused - x_ref||/||x_ref|| (default: derived from the residuals and the condition)", "", soltol, &soltol, NULL));
  PetscCall(PetscOptionsReal("-its_tol", "Relative tolerance on the iteration counts", "", itstol, &itstol, NULL));
  PetscCall(PetscOptionsInt("-its_abs", "Absolute slack on the iteration counts", "", itsabs, &itsabs, NULL));
  PetscCall(PetscOptionsInt("-hist_its", "Compare the residual histories of this many iterations (0: no)", "", histits, &histits, NULL));
  PetscCall(PetscOptionsReal("-hist_tol", "Relative tolerance on the residual histories", "", histtol, &histtol, NULL));
  PetscCall(PetscOptionsReal("-hist_true_tol", "Relative tolerance on the true residual norms after -hist_its iterations", "", histtruetol, &histtruetol, NULL));
  PetscCall(PetscOptionsBool("-zero_copy", "Check the fused kernels ran on PETSc's device vectors with no more copies than the classical solver", "", zerocopy, &zerocopy, NULL));
  PetscCall(PetscOptionsRangeInt("-expect_streams", "fusedbicg: 2, its sides ran on two streams (a fork and a join per iteration) with the results of one; 1, on one stream (0: no check)", "", expectstreams, &expectstreams, NULL, 0, 2));
  PetscCall(PetscOptionsBool("-pc_applies", "Check the fused solve applies the PC no more often per iteration than the classical one", "", pcapplies, &pcapplies, NULL));
  PetscOptionsEnd();
  if (pcapplies) PetscCall(PetscLogDefaultBegin()); /* the PCApply events are counted by the default log handler */

  PetscCall(ProblemCreate(PETSC_COMM_WORLD, NULL, &prob));
  PetscCall(MatConvert(prob.A, mattype, MAT_INITIAL_MATRIX, &Af));
  if (setformat) PetscCall(MatAIJFusedSetFormat(Af, format));
  if (refmattype[0])
    PetscCall(MatConvert(prob.A, refmattype, MAT_INITIAL_MATRIX, &Ar));
  else {
    PetscCall(PetscObjectReference((PetscObject)prob.A));
    Ar = prob.A;
  }
  { /* elasticity3d's rigid body modes, which MatConvert() leaves behind (PCGAMG's near null space) */
    MatNullSpace nns;

    PetscCall(MatGetNearNullSpace(prob.A, &nns));
    if (nns) PetscCall(MatSetNearNullSpace(Af, nns));
    if (nns) PetscCall(MatSetNearNullSpace(Ar, nns));
  }
  PetscCall(SolveCreate(Ar, prob.b, "ref_", reftype, pctype, rtol, maxit, &ref));
  PetscCall(SolveCreate(Af, prob.b, "fused_", fusedtype, pctype, rtol, maxit, &fused));
  PetscCall(SolveRun(&ref));
  PetscCall(SolveRunSides(&fused, &forks, &joins));
  PetscCall(MatGetSize(prob.A, &N, NULL));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "problem %s N=%" PetscInt_FMT "\n", prob.name, N));
  PetscCall(SolveView("ref:  ", &ref));
  PetscCall(SolveView("fused:", &fused));

  PetscCall(Check((PetscBool)(ref.reason > 0), "classical solver converged (%s)", KSPConvergedReasons[ref.reason]));
  PetscCall(Check((PetscBool)(fused.reason > 0), "fused solver converged (%s)", KSPConvergedReasons[fused.reason]));
  /* both met rtol in their norm; a classical solve that happens to land far below rtol does not tighten the check */
  PetscCall(Check((PetscBool)(fused.resid <= 10.0 * PetscMax(ref.resid, rtol)), "fused true residual %.3e <= 10 x max(classical %.3e, rtol)", (double)fused.resid, (double)ref.resid));

  /* Solution tolerance.  For any x~, ||x~ - x*|| / ||x*|| <= kappa(A) ||b - A x~|| / ||b||, so
       ||x_fused - x_ref|| / ||x_ref|| <~ kappa(A) (resid_fused + resid_ref)
     with the true relative residuals measured above (both about rtol, up to the preconditioner's scaling when the
     solvers test the preconditioned norm).  kappa(A) is a Krylov lower estimate: allow a factor 10 for it. */
  if (soltol < 0.0) {
    PetscReal kappa = 0.0;

    PetscCall(EstimateCondition(prob.A, prob.symmetric, &kappa));
    soltol = 10.0 * kappa * (fused.resid + ref.resid);
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "condition estimate %.3e: solution tolerance 10 kappa (resid_fused + resid_ref) = %.3e\n", (double)kappa, (double)soltol));
  }
  PetscCall(VecDuplicate(ref.x, &diff));
  PetscCall(VecCopy(fused.x, diff));
  PetscCall(Checksum(diff, &checksum));
  PetscCall(VecAXPY(diff, -1.0, ref.x));
  PetscCall(VecNorm(diff, NORM_2, &dnorm));
  PetscCall(VecNorm(ref.x, NORM_2, &xnorm));
  PetscCall(VecDestroy(&diff));
  PetscCall(Check((PetscBool)(dnorm <= soltol * xnorm), "solution ||x_fused - x_ref||/||x_ref|| = %.3e <= %.3e", (double)(dnorm / xnorm), (double)soltol));
  PetscCall(Check((PetscBool)(PetscAbsInt(fused.its - ref.its) <= itstol * ref.its + itsabs), "iterations |%" PetscInt_FMT " - %" PetscInt_FMT "| <= %g x %" PetscInt_FMT " + %" PetscInt_FMT, fused.its, ref.its, (double)itstol, ref.its, itsabs));
  if (pcapplies) {
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "PCApply events: fused %" PetscInt_FMT ", classical %" PetscInt_FMT "\n", fused.pcapplies, ref.pcapplies));
    PetscCall(Check((PetscBool)(ref.pcapplies > ref.its), "the log counted the classical solve's PCApply events (%" PetscInt_FMT " > %" PetscInt_FMT " iterations)", ref.pcapplies, ref.its));
    PetscCall(Check((PetscBool)(fused.pcapplies * (ref.its + 1) <= ref.pcapplies * (fused.its + 1)), "PCApply events per (iterations + 1): fused %" PetscInt_FMT " / %" PetscInt_FMT " <= classical %" PetscInt_FMT " / %" PetscInt_FMT, fused.pcapplies,
                    fused.its + 1, ref.pcapplies, ref.its + 1));
  }
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "fused: its=%" PetscInt_FMT " checksum=%.12e\n", fused.its, (double)checksum));

  if (expectstreams == 1) PetscCall(Check((PetscBool)(forks == 0 && joins == 0), "the fused solve used one stream: %" PetscInt64_FMT " forks to the second stream, %" PetscInt64_FMT " joins == 0", forks, joins));
  if (expectstreams == 2) {
    PetscReal rnorm2, rnorm1, checksum1;
    PetscInt  its2 = fused.its;

    PetscCall(Check((PetscBool)(forks >= fused.its && joins >= fused.its), "the fused solve used the second stream: %" PetscInt64_FMT " forks and %" PetscInt64_FMT " joins >= %" PetscInt_FMT " iterations", forks, joins, fused.its));
    PetscCall(KSPGetResidualNorm(fused.ksp, &rnorm2));
    PetscCall(PetscOptionsSetValue(NULL, "-fused_ksp_fusedbicg_streams", "1"));
    PetscCall(KSPSetFromOptions(fused.ksp));
    PetscCall(SolveRunSides(&fused, &forks, &joins));
    PetscCall(KSPGetResidualNorm(fused.ksp, &rnorm1));
    PetscCall(Checksum(fused.x, &checksum1));
    PetscCall(Check((PetscBool)(forks == 0 && joins == 0), "the rerun with -fused_ksp_fusedbicg_streams 1 used one stream (%" PetscInt64_FMT " forks, %" PetscInt64_FMT " joins)", forks, joins));
    PetscCall(Check((PetscBool)(fused.its == its2 && rnorm1 == rnorm2 && checksum1 == checksum),
                    "two streams and one give the same results: iterations %" PetscInt_FMT " and %" PetscInt_FMT ", residual norms %.17e and %.17e, checksums %.17e and %.17e", its2, fused.its, (double)rnorm2, (double)rnorm1, (double)checksum,
                    (double)checksum1));
  }

  if (zerocopy) {
    PetscLogDouble cf, cr;
    PetscInt64     lf, lr;
    PetscBool      device;
    VecType        vtype;

    PetscCall(VecGetType(fused.x, &vtype));
    PetscCall(PetscObjectTypeCompareAny((PetscObject)fused.x, &device, VECSEQCUDA, VECMPICUDA, VECSEQHIP, VECMPIHIP, VECSEQKOKKOS, VECMPIKOKKOS, ""));
    PetscCall(Check(device, "the fused solver's vectors are of a PETSc device type (%s)", vtype));
    PetscCall(SolveRunCounted(&ref, &cr, &lr));
    PetscCall(SolveRunCounted(&fused, &cf, &lf));
    { /* a rank without rows launches nothing; the copies compared over all ranks (every rank takes the same branch) */
      PetscLogDouble c[2] = {cf, cr}, cmax[2];
      PetscInt       n;

      PetscCall(VecGetLocalSize(fused.x, &n));
      PetscCallMPI(MPI_Allreduce(c, cmax, 2, MPI_DOUBLE, MPI_MAX, PETSC_COMM_WORLD));
      cf = cmax[0];
      cr = cmax[1];
      PetscCall(PetscPrintf(PETSC_COMM_WORLD, "zero copy: fused %g copies, %" PetscInt64_FMT " backend launches in %" PetscInt_FMT " iterations; classical %g copies in %" PetscInt_FMT "\n", (double)cf, lf, fused.its, (double)cr, ref.its));
      PetscCall(Check((PetscBool)(n == 0 || lf >= fused.its), "fused kernels ran: %" PetscInt64_FMT " backend launches >= %" PetscInt_FMT " iterations (a rank with rows)", lf, fused.its));
    }
    if (cr == 0.0)
      PetscCall(Check((PetscBool)(cf == 0.0), "no host<->device vector copy in the fused solve, as in the classical one (%g copies)", (double)cf));
    else
      PetscCall(PetscPrintf(PETSC_COMM_WORLD, "copies not compared: the classical solve made some (PETSc's own operator or PC: host halos of an MPI without GPU support), and the fused solve may apply them a few more times\n"));
  }

  if (histits > 0) {
    PetscReal *hf, *hr, maxrel = 0.0, tf, tr;
    PetscInt   nf, nr, imax    = 0;

    PetscCall(PetscMalloc2(histits + 1, &hf, histits + 1, &hr));
    PetscCall(History(&ref, histits, hr, &nr, &tr));
    PetscCall(History(&fused, histits, hf, &nf, &tf));
    PetscCall(Check((PetscBool)(PetscAbsReal(tf - tr) <= histtruetol * tr), "true residual norms after %" PetscInt_FMT " iterations: relative difference %.3e <= %.3e (fused %.12e, classical %.12e)", histits, (double)(PetscAbsReal(tf - tr) / tr),
                    (double)histtruetol, (double)tf, (double)tr));
    PetscCall(Check((PetscBool)(nf == histits + 1 && nr == histits + 1), "history lengths fused %" PetscInt_FMT ", classical %" PetscInt_FMT " == %" PetscInt_FMT, nf, nr, histits + 1));
    for (PetscInt i = 0; i < PetscMin(nf, nr); i++) {
      const PetscReal rel = PetscAbsReal(hf[i] - hr[i]) / hr[i];

      if (rel > maxrel) {
        maxrel = rel;
        imax   = i;
      }
    }
    PetscCall(Check((PetscBool)(maxrel <= histtol), "residual histories of %" PetscInt_FMT " iterations: max relative difference %.3e <= %.3e (iteration %" PetscInt_FMT ": fused %.10e, classical %.10e)", histits, (double)maxrel, (double)histtol,
                    imax, (double)hf[imax], (double)hr[imax]));
    PetscCall(PetscFree2(hf, hr));
  }

  PetscCall(SolveDestroy(&fused));
  PetscCall(SolveDestroy(&ref));
  PetscCall(MatDestroy(&Af));
  PetscCall(MatDestroy(&Ar));
  PetscCall(ProblemDestroy(&prob));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "test_compare: %s\n", check_failures ? "FAIL" : "PASS"));
  PetscCall(PetscFinalize());
  return check_failures ? 1 : 0;
}
