static char help[] = "ILU(0)/ICC(0) of MatSolverType fused (MATSOLVERFUSED) against PETSc's own (petsc) on one problem.\n\
The same KSP and PC solve twice: on a MATAIJFUSED copy of the matrix with fused vectors and the default solver type\n\
(which must be fused for -pc_type ilu/icc), and on the plain AIJ matrix with -pc_factor_mat_solver_type petsc.\n\
Checks: the two preconditioners applied to one random vector agree to 1e-10 (relative), also on plain VECSEQ\n\
vectors (the host path of the fused solver), and (ICC) the two halves of the symmetric application; transposed\n\
(PCApplyTranspose) to 1e-12 (other PCs than ILU/ICC: 1e-10) into NaN-poisoned vectors, fused and plain, for PCILU/PCICC with the fused factor the fused one\n\
repeated with no host<->device copy (FusedKSPGetBackendCounters(); meaningful on a device backend or with -fused_debug_mirror);\n\
both solves converge with iteration counts within -its_abs and solutions within -sol_tol; -ksp_view of the fused KSP\n\
names \"FusedKSP ILU(0)\" or \"FusedKSP ICC(0)\" (either for the blocks of PCBJACOBI, on every rank count; -expect_fused 0:\n\
must not, e.g. with fill levels) and has the I-node line of PETSc's; after MatScale() and\n\
after MatShift() (same pattern) the factor is reused (numeric phase only) and the checks hold again.  With -zero_pivot the matrix gets\n\
a zero diagonal entry in its first row: the solve must stop with KSP_DIVERGED_PC_FAILED, and fail with\n\
PETSC_ERR_MAT_LU_ZRPVT under KSPSetErrorIfNotConverged(), and the factorization must succeed with a shift (ILU:\n\
nonzero, which PCILU turns into inblocks; ICC: positive_definite).  Ends with 'test_ilu: PASS' or 'test_ilu: FAIL'.\n\
Options: -ksp_type <gmres> (both), -pc_type <ilu|icc|bjacobi> (both; -sub_pc_type ...), -rtol <1e-10>, -its_abs <1>,\n\
  -sol_tol <1e-6>, -expect_fused <1>, -zero_pivot, -problem ... -n ... (tutorials/problems.h),\n\
  -max_h2d_per_it <r>: each comparison solves again with the fused types, to rtol and to sqrt(rtol), and counts the\n\
  backend's host->device copies (FusedKSPGetBackendCounters()): their difference over the difference of the iterations\n\
  is at most r (0: the preconditioner is applied on the backend; the copies of a solve's start and end cancel).\n\n";

#include <fusedksp.h>
#include "problems.h"
#include "check.h"
#include "vectors.h"
#include "kspview.h"
#include "copies.h"
#include <string.h>

typedef struct {
  KSP ksp;
  Mat A;
  Vec b, x;
} Solve;

static PetscErrorCode SolveCreate(Mat A, Vec b, const char prefix[], KSPType type, PCType pctype, PetscBool petsc_factor, PetscReal rtol, Solve *s)
{
  PC pc;

  PetscFunctionBeginUser;
  s->A = A;
  s->b = b;
  PetscCall(MatCreateVecs(A, &s->x, NULL));
  PetscCall(KSPCreate(PETSC_COMM_WORLD, &s->ksp));
  PetscCall(KSPSetOptionsPrefix(s->ksp, prefix));
  PetscCall(KSPSetType(s->ksp, type));
  PetscCall(KSPSetOperators(s->ksp, A, A));
  PetscCall(KSPSetTolerances(s->ksp, rtol, PETSC_CURRENT, PETSC_CURRENT, 10000));
  PetscCall(KSPGetPC(s->ksp, &pc));
  PetscCall(PCSetType(pc, pctype));
  if (petsc_factor) {
    PetscBool blocks;

    PetscCall(PetscStrcmpAny(pctype, &blocks, PCBJACOBI, PCASM, ""));
    if (blocks)
      PetscCall(PetscOptionsSetValue(NULL, "-ref_sub_pc_factor_mat_solver_type", MATSOLVERPETSC)); /* the ILU/ICC of the blocks */
    else
      PetscCall(PCFactorSetMatSolverType(pc, MATSOLVERPETSC));
  }
  PetscCall(KSPSetFromOptions(s->ksp));
  PetscCall(KSPSetUp(s->ksp));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode SolveDestroy(Solve *s)
{
  PetscFunctionBeginUser;
  PetscCall(KSPDestroy(&s->ksp));
  PetscCall(VecDestroy(&s->x));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Both preconditioners on one random vector (fused vectors and plain ones for the fused PC), then both solves */
static PetscReal max_h2d_per_it = -1;         /* -max_h2d_per_it: host->device copies per iteration of a repeated fused solve */
static PetscBool fused_factor   = PETSC_TRUE; /* -expect_fused: the factor is MATSOLVERFUSED's (else PETSc's host solves copy) */

static PetscErrorCode Compare(Solve *fs, Solve *rs, const char *what, PetscInt its_abs, PetscReal sol_tol)
{
  PC                 pcf, pcr;
  Vec                r, zf, zr, rp, zp, bf;
  PetscRandom        rnd;
  PetscReal          d, ttol;
  PetscInt           itsf, itsr;
  KSPConvergedReason reasonf, reasonr;
  PetscBool          icc, factor;

  PetscFunctionBeginUser;
  PetscCall(KSPGetPC(fs->ksp, &pcf));
  PetscCall(KSPGetPC(rs->ksp, &pcr));
  PetscCall(PCSetUp(pcf)); /* refactors when the matrix changed */
  PetscCall(PCSetUp(pcr));
  PetscCall(MatCreateVecs(rs->A, &r, &zr)); /* plain */
  PetscCall(VecDuplicate(r, &rp));
  PetscCall(VecDuplicate(r, &zp));
  PetscCall(VecDuplicate(fs->x, &bf)); /* fused */
  PetscCall(VecDuplicate(fs->x, &zf));
  PetscCall(PetscRandomCreate(PETSC_COMM_WORLD, &rnd));
  PetscCall(PetscRandomSetSeed(rnd, 17));
  PetscCall(PetscRandomSeed(rnd));
  PetscCall(VecSetRandom(r, rnd));
  PetscCall(PetscRandomDestroy(&rnd));
  PetscCall(CopyValues(r, bf));
  PetscCall(CopyValues(r, rp));
  PetscCall(PCApply(pcr, r, zr));
  PetscCall(PCApply(pcf, bf, zf));
  PetscCall(RelDiff(zf, zr, &d));
  PetscCall(Check((PetscBool)(d <= 1e-10), "%s: PCApply fused vectors vs petsc (%g <= 1e-10)", what, (double)d));
  PetscCall(PCApply(pcf, rp, zp));
  PetscCall(RelDiff(zp, zr, &d));
  PetscCall(Check((PetscBool)(d <= 1e-10), "%s: PCApply plain VECSEQ vectors vs petsc (%g <= 1e-10)", what, (double)d));
  PetscCall(PetscObjectTypeCompareAny((PetscObject)pcf, &factor, PCILU, PCICC, ""));
  ttol = factor ? 1e-12 : 1e-10; /* other PCs (GAMG's Galerkin operators formed on the backend) round like PCApply() */
  PetscCall(PCApplyTranspose(pcr, r, zr));
  PetscCall(VecSet(zf, NAN)); /* every entry must be written */
  PetscCall(PCApplyTranspose(pcf, bf, zf));
  PetscCall(RelDiff(zf, zr, &d));
  PetscCall(Check((PetscBool)(d <= ttol), "%s: PCApplyTranspose fused vectors vs petsc (%g <= %g)", what, (double)d, (double)ttol));
  if (!factor) { /* PCBJACOBI with one block per process: its transposed application lends the block the local parts */
    PetscBool bjacobi;
    PetscInt  nlocal = 0;
    KSP      *sub;
    PC        subpc;

    PetscCall(PetscObjectTypeCompare((PetscObject)pcf, PCBJACOBI, &bjacobi));
    if (bjacobi) PetscCall(PCBJacobiGetSubKSP(pcf, &nlocal, NULL, &sub));
    if (nlocal == 1) {
      PetscCall(KSPGetPC(sub[0], &subpc));
      PetscCall(PetscObjectTypeCompareAny((PetscObject)subpc, &factor, PCILU, PCICC, ""));
    }
  }
  if (factor && fused_factor) { /* again, its input and output on the backend: no host<->device copy (the transposed factors exist now) */
    PetscInt64 d2h[2], h2d[2];

    PetscCall(VecSet(zf, NAN));
    PetscCall(FusedKSPGetBackendCounters(NULL, &d2h[0], &h2d[0]));
    PetscCall(PCApplyTranspose(pcf, bf, zf));
    PetscCall(FusedKSPGetBackendCounters(NULL, &d2h[1], &h2d[1]));
    PetscCall(Check((PetscBool)(h2d[1] == h2d[0] && d2h[1] == d2h[0]), "%s: PCApplyTranspose on the backend made %" PetscInt64_FMT " host->device and %" PetscInt64_FMT " device->host copies (0)", what, h2d[1] - h2d[0], d2h[1] - d2h[0]));
    PetscCall(RelDiff(zf, zr, &d));
    PetscCall(Check((PetscBool)(d <= ttol), "%s: PCApplyTranspose repeated vs petsc (%g <= %g)", what, (double)d, (double)ttol));
  }
  PetscCall(VecSet(zp, NAN));
  PetscCall(PCApplyTranspose(pcf, rp, zp));
  PetscCall(RelDiff(zp, zr, &d));
  PetscCall(Check((PetscBool)(d <= ttol), "%s: PCApplyTranspose plain VECSEQ vectors vs petsc (%g <= %g)", what, (double)d, (double)ttol));
  PetscCall(PetscObjectTypeCompare((PetscObject)pcf, PCICC, &icc));
  if (icc) { /* the halves of the factor (MatForwardSolve, MatBackwardSolve): -ksp_pc_side symmetric */
    PetscCall(PCApplySymmetricLeft(pcr, r, zr));
    PetscCall(PCApplySymmetricLeft(pcf, bf, zf));
    PetscCall(RelDiff(zf, zr, &d));
    PetscCall(Check((PetscBool)(d <= 1e-10), "%s: PCApplySymmetricLeft vs petsc (%g <= 1e-10)", what, (double)d));
    PetscCall(PCApplySymmetricRight(pcr, r, zr));
    PetscCall(PCApplySymmetricRight(pcf, bf, zf));
    PetscCall(RelDiff(zf, zr, &d));
    PetscCall(Check((PetscBool)(d <= 1e-10), "%s: PCApplySymmetricRight vs petsc (%g <= 1e-10)", what, (double)d));
  }
  PetscCall(VecDestroy(&r));
  PetscCall(VecDestroy(&zr));
  PetscCall(VecDestroy(&rp));
  PetscCall(VecDestroy(&zp));
  PetscCall(VecDestroy(&bf));
  PetscCall(VecDestroy(&zf));

  PetscCall(KSPSolve(fs->ksp, fs->b, fs->x));
  PetscCall(KSPSolve(rs->ksp, rs->b, rs->x));
  PetscCall(KSPGetIterationNumber(fs->ksp, &itsf));
  PetscCall(KSPGetIterationNumber(rs->ksp, &itsr));
  PetscCall(KSPGetConvergedReason(fs->ksp, &reasonf));
  PetscCall(KSPGetConvergedReason(rs->ksp, &reasonr));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%s: fused its=%" PetscInt_FMT " (%s), petsc its=%" PetscInt_FMT " (%s)\n", what, itsf, KSPConvergedReasons[reasonf], itsr, KSPConvergedReasons[reasonr]));
  PetscCall(Check((PetscBool)(reasonf > 0 && reasonr > 0), "%s: both converged", what));
  PetscCall(Check((PetscBool)(PetscAbsInt(itsf - itsr) <= its_abs), "%s: iterations %" PetscInt_FMT " vs %" PetscInt_FMT " (within %" PetscInt_FMT ")", what, itsf, itsr, its_abs));
  PetscCall(RelDiff(fs->x, rs->x, &d));
  PetscCall(Check((PetscBool)(d <= sol_tol), "%s: solutions differ by %g <= %g", what, (double)d, (double)sol_tol));
  if (max_h2d_per_it >= 0) PetscCall(CheckH2DPerIteration(fs->ksp, fs->b, fs->x, max_h2d_per_it, what));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* A zero pivot: KSP_DIVERGED_PC_FAILED, and PETSC_ERR_MAT_LU_ZRPVT with KSPSetErrorIfNotConverged() */
static PetscErrorCode ZeroPivot(Mat Af, Vec b, KSPType type, PCType pctype)
{
  KSP                ksp;
  PC                 pc;
  Vec                x;
  KSPConvergedReason reason;
  PetscErrorCode     ierr;
  PetscInt           rstart;

  PetscFunctionBeginUser;
  PetscCall(MatGetOwnershipRange(Af, &rstart, NULL));
  PetscCall(MatSetValue(Af, rstart, rstart, 0.0, INSERT_VALUES));
  PetscCall(MatAssemblyBegin(Af, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(Af, MAT_FINAL_ASSEMBLY));
  PetscCall(MatCreateVecs(Af, &x, NULL));
  PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
  PetscCall(KSPSetType(ksp, type));
  PetscCall(KSPSetOperators(ksp, Af, Af));
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(PCSetType(pc, pctype));
  PetscCall(PCFactorSetShiftType(pc, MAT_SHIFT_NONE));
  PetscCall(KSPSolve(ksp, b, x));
  PetscCall(KSPGetConvergedReason(ksp, &reason));
  PetscCall(Check((PetscBool)(reason == KSP_DIVERGED_PC_FAILED), "zero pivot: reason %s is DIVERGED_PC_FAILED", KSPConvergedReasons[reason]));
  PetscCall(KSPDestroy(&ksp));

  PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
  PetscCall(KSPSetType(ksp, type));
  PetscCall(KSPSetOperators(ksp, Af, Af));
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(PCSetType(pc, pctype));
  PetscCall(PCFactorSetShiftType(pc, MAT_SHIFT_NONE));
  PetscCall(KSPSetErrorIfNotConverged(ksp, PETSC_TRUE));
  PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
  ierr = KSPSolve(ksp, b, x);
  PetscCall(PetscPopErrorHandler());
  PetscCall(Check((PetscBool)(ierr == PETSC_ERR_MAT_LU_ZRPVT), "zero pivot with KSPSetErrorIfNotConverged: error %d is PETSC_ERR_MAT_LU_ZRPVT (%d)", (int)ierr, (int)PETSC_ERR_MAT_LU_ZRPVT));
  PetscCall(KSPDestroy(&ksp));

  PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
  PetscCall(KSPSetType(ksp, type));
  PetscCall(KSPSetOperators(ksp, Af, Af));
  PetscCall(KSPSetTolerances(ksp, PETSC_CURRENT, PETSC_CURRENT, PETSC_CURRENT, 20));
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(PCSetType(pc, pctype));
  PetscCall(PCFactorSetShiftType(pc, strcmp(pctype, PCICC) ? MAT_SHIFT_NONZERO : MAT_SHIFT_POSITIVE_DEFINITE));
  PetscCall(KSPSolve(ksp, b, x));
  PetscCall(KSPGetConvergedReason(ksp, &reason));
  PetscCall(Check((PetscBool)(reason != KSP_DIVERGED_PC_FAILED), "zero pivot with a shift: the factorization succeeds (reason %s)", KSPConvergedReasons[reason]));
  PetscCall(KSPDestroy(&ksp));
  PetscCall(VecDestroy(&x));
  PetscFunctionReturn(PETSC_SUCCESS);
}

int main(int argc, char **argv)
{
  Problem   prob;
  Mat       Af, F0 = NULL, F1 = NULL;
  Vec       bf;
  Solve     fs, rs;
  char      ksptype[64] = KSPGMRES, pctype[64] = PCILU, text[64];
  PetscReal rtol = 1e-10, sol_tol = 1e-6;
  PetscInt  its_abs      = 1;
  PetscBool expect_fused = PETSC_TRUE, zero_pivot = PETSC_FALSE, found, isfactor;
  PC        pc;

  PetscFunctionBeginUser;
  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(FusedKSPInitializePackage());
  PetscCall(PetscOptionsGetString(NULL, NULL, "-ksp_type", ksptype, sizeof(ksptype), NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-pc_type", pctype, sizeof(pctype), NULL));
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-rtol", &rtol, NULL));
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-sol_tol", &sol_tol, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-its_abs", &its_abs, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-expect_fused", &expect_fused, NULL));
  fused_factor = expect_fused;
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-zero_pivot", &zero_pivot, NULL));
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-max_h2d_per_it", &max_h2d_per_it, NULL));
  PetscCall(ProblemCreate(PETSC_COMM_WORLD, NULL, &prob));
  PetscCall(MatConvert(prob.A, MATAIJFUSED, MAT_INITIAL_MATRIX, &Af));
  PetscCall(MatCreateVecs(Af, NULL, &bf));
  PetscCall(CopyValues(prob.b, bf));
  if (zero_pivot) {
    PetscCall(ZeroPivot(Af, bf, ksptype, pctype));
  } else {
    PetscCall(SolveCreate(Af, bf, "fused_", ksptype, pctype, PETSC_FALSE, rtol, &fs));
    PetscCall(SolveCreate(prob.A, prob.b, "ref_", ksptype, pctype, PETSC_TRUE, rtol, &rs));
    PetscCall(KSPGetPC(fs.ksp, &pc));
    PetscCall(PetscObjectTypeCompareAny((PetscObject)pc, &isfactor, PCILU, PCICC, ""));
    if (isfactor) {
      MatSolverType st;

      PetscCall(PCFactorGetMatSolverType(pc, &st));
      PetscCall(Check((PetscBool)(st && !strcmp(st, MATSOLVERFUSED)), "default solver type of %s on aijfused is %s (%s)", pctype, MATSOLVERFUSED, st ? st : "none"));
      PetscCall(PCFactorGetMatrix(pc, &F0));
    }
    /* the blocks of PCBJACOBI may take ICC (PETSc's default sub-PC for a symmetric matrix) */
    PetscCall(PetscSNPrintf(text, sizeof(text), "FusedKSP %s", isfactor ? (!strcmp(pctype, PCICC) ? "ICC(0)" : "ILU(0)") : "I"));
    PetscCall(Compare(&fs, &rs, "first solve", its_abs, sol_tol)); /* sets up the blocks of PCBJACOBI */
    PetscCall(ViewContains(fs.ksp, text, &found));
    PetscCall(Check((PetscBool)(found == expect_fused), "-ksp_view %s \"%s\"", expect_fused ? "shows" : "does not show", text));
    { /* the factor's view ends as MATSEQAIJ's does */
      PetscBool inode_f, inode_r;

      PetscCall(ViewContains(fs.ksp, "not using I-node routines", &inode_f));
      PetscCall(ViewContains(rs.ksp, "not using I-node routines", &inode_r));
      PetscCall(Check((PetscBool)(inode_f == inode_r), "-ksp_view %s \"not using I-node routines\" as PETSc's factor does", inode_r ? "shows" : "does not show"));
    }

    PetscCall(MatScale(Af, 2.0));
    PetscCall(MatScale(prob.A, 2.0));
    PetscCall(Compare(&fs, &rs, "after MatScale", its_abs, sol_tol));
    PetscCall(MatShift(Af, 1.0));
    PetscCall(MatShift(prob.A, 1.0));
    PetscCall(Compare(&fs, &rs, "after MatShift", its_abs, sol_tol));
    if (isfactor) {
      PetscCall(PCFactorGetMatrix(pc, &F1));
      PetscCall(Check((PetscBool)(F0 == F1), "the factor of the same pattern is refactored in place (numeric phase only)"));
    }
    PetscCall(SolveDestroy(&fs));
    PetscCall(SolveDestroy(&rs));
  }
  PetscCall(VecDestroy(&bf));
  PetscCall(MatDestroy(&Af));
  PetscCall(ProblemDestroy(&prob));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "test_ilu: %s\n", check_failures ? "FAIL" : "PASS"));
  PetscCall(PetscFinalize());
  return check_failures ? 1 : 0;
}
