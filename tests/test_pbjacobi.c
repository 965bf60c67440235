static char help[] = "Point-block Jacobi (PCPBJACOBI, PCVPBJACOBI) on fused types against PETSc's on plain AIJ, on one problem.\n\
A solver (-ksp_type: a fused one, or a classical one such as cg) with -pc_type pbjacobi|vpbjacobi on a MATAIJFUSED copy\n\
of the matrix with fused vectors, and PETSc's classical counterpart (-ref_ksp_type; default: cg for fusedcg, bcgs for\n\
fusedbcgs, right-preconditioned gmres for fusedsgmres, else -ksp_type) with the same PC on the plain AIJ matrix.\n\
The blocks: the matrix's block size (-mat_block_size) for pbjacobi; for vpbjacobi MatSetVariableBlockSizes() on both\n\
matrices with the sizes of -vblock_sizes (default 1,2,3,4,5,7) repeated over each rank's rows (the last one cut).\n\
Checks: the two PCs applied to one random vector agree to 1e-12 (relative), also on plain VECSEQ vectors (PETSc's host\n\
apply), transposed too; a second application on fused vectors is one kernel launch with no host<->device copy\n\
(FusedKSPGetBackendCounters()); both solves converge with iteration counts within -its_tol/-its_abs and solutions within\n\
-sol_tol; -ksp_view says \"FusedKSP point-block Jacobi: blocks of sizes ... applied on the\" the backend; after MatScale()\n\
and MatShift() the blocks follow the matrix and the checks hold again.  -max_h2d_per_it <r>: host->device copies per\n\
iteration of a repeated fused solve at most r (tests/copies.h).  -zero_pivot: the first block of both matrices made\n\
zero (singular): both solves must end with the same reason, and under KSPSetErrorIfNotConverged() fail with the same\n\
error code.  Ends with 'test_pbjacobi: PASS' or 'test_pbjacobi: FAIL'.\n\
Options: -ksp_type <fusedcg>, -ref_ksp_type, -pc_type <pbjacobi>, -vblock_sizes, -rtol <1e-8>, -its_tol <0> -its_abs <1>\n\
  (|its - its_ref| <= its_tol its_ref + its_abs; fusedbcgs: 0.2 and 3, as test_compare),\n\
  -sol_tol <1e-6>, -max_h2d_per_it <r>, -zero_pivot, -problem ... -n ... -mat_block_size ... (tutorials/problems.h).\n\n";

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

static PetscErrorCode SolveCreate(Mat A, Vec b, const char prefix[], const char type[], PCType pctype, PetscBool right, PetscReal rtol, Solve *s)
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
  if (right) PetscCall(KSPSetPCSide(s->ksp, PC_RIGHT));
  PetscCall(KSPGetPC(s->ksp, &pc));
  PetscCall(PCSetType(pc, pctype));
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

/* The applications of the blocks on the backend and by PETSc on the host (rank 0) that -ksp_view reports; -1 when
   the view has no such line */
static PetscErrorCode ViewApplications(KSP ksp, long long counts[2])
{
  const char *line;

  PetscFunctionBeginUser;
  PetscCall(ViewText(ksp, view, sizeof(view)));
  counts[0] = counts[1] = -1;
  line                  = strstr(view, "FusedKSP point-block Jacobi: blocks of sizes");
  if (line && (line = strstr(line, "fused vectors"))) line = strchr(line, ':');
  if (line && sscanf(line, ": %lld applications there, %lld by PETSc on the host", &counts[0], &counts[1]) != 2) counts[0] = counts[1] = -1;
  PetscCallMPI(MPI_Bcast(counts, 2, MPI_LONG_LONG, 0, PETSC_COMM_WORLD));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The sizes of -vblock_sizes repeated over the local rows of A (the last block cut to fit) */
static PetscErrorCode SetVariableBlocks(Mat A, Mat B, const PetscInt pattern[], PetscInt npattern)
{
  PetscInt n, nb = 0, rows = 0, *sizes;

  PetscFunctionBeginUser;
  PetscCall(MatGetLocalSize(A, &n, NULL));
  PetscCall(PetscMalloc1(n, &sizes));
  for (PetscInt k = 0; rows < n; ++k) {
    sizes[nb] = PetscMin(pattern[k % npattern], n - rows);
    rows += sizes[nb++];
  }
  PetscCall(MatSetVariableBlockSizes(A, nb, sizes));
  PetscCall(MatSetVariableBlockSizes(B, nb, sizes));
  PetscCall(PetscFree(sizes));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Both PCs on one random vector (fused vectors, and plain ones for the fused PC), then both solves */
static PetscReal max_h2d_per_it = -1;
static PetscReal its_tol        = 0; /* relative slack of the iteration counts (-its_tol) */

static PetscErrorCode ApplyBoth(PC pcf, PC pcr, PetscBool transpose, Vec r, Vec zr, Vec bf, Vec zf, Vec rp, Vec zp, const char *what)
{
  PetscReal d;

  PetscFunctionBeginUser;
  if (transpose) {
    PetscCall(PCApplyTranspose(pcr, r, zr));
    PetscCall(PCApplyTranspose(pcf, bf, zf));
  } else {
    PetscCall(PCApply(pcr, r, zr));
    PetscCall(PCApply(pcf, bf, zf));
  }
  PetscCall(RelDiff(zf, zr, &d));
  PetscCall(Check((PetscBool)(d <= 1e-12), "%s: %s fused vectors vs petsc (%g <= 1e-12)", what, transpose ? "PCApplyTranspose" : "PCApply", (double)d));
  if (transpose)
    PetscCall(PCApplyTranspose(pcf, rp, zp));
  else
    PetscCall(PCApply(pcf, rp, zp));
  PetscCall(RelDiff(zp, zr, &d));
  PetscCall(Check((PetscBool)(d <= 1e-12), "%s: %s plain VECSEQ vectors vs petsc (%g <= 1e-12)", what, transpose ? "PCApplyTranspose" : "PCApply", (double)d));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode Compare(Solve *fs, Solve *rs, const char *what, PetscInt its_abs, PetscReal sol_tol)
{
  PC                 pcf, pcr;
  Vec                r, zr, rp, zp, bf, zf;
  PetscRandom        rnd;
  PetscReal          d;
  PetscInt           itsf, itsr;
  PetscInt64         c0[3], c1[3];
  KSPConvergedReason reasonf, reasonr;
  PetscBool          hasf, hasr;
  long long          before[2], after[2];

  PetscFunctionBeginUser;
  PetscCall(KSPGetPC(fs->ksp, &pcf));
  PetscCall(KSPGetPC(rs->ksp, &pcr));
  PetscCall(PCSetUp(pcf)); /* new blocks when the matrix changed */
  PetscCall(PCSetUp(pcr));
  PetscCall(MatCreateVecs(rs->A, &r, &zr)); /* plain */
  PetscCall(VecDuplicate(r, &rp));
  PetscCall(VecDuplicate(r, &zp));
  PetscCall(VecDuplicate(fs->x, &bf)); /* fused */
  PetscCall(VecDuplicate(fs->x, &zf));
  PetscCall(PetscRandomCreate(PETSC_COMM_WORLD, &rnd));
  PetscCall(PetscRandomSetInterval(rnd, 0.5, 1.5)); /* never zero */
  PetscCall(PetscRandomSetSeed(rnd, 17));
  PetscCall(PetscRandomSeed(rnd));
  PetscCall(VecSetRandom(r, rnd));
  PetscCall(PetscRandomDestroy(&rnd));
  PetscCall(CopyValues(r, bf));
  PetscCall(CopyValues(r, rp));
  PetscCall(ApplyBoth(pcf, pcr, PETSC_FALSE, r, zr, bf, zf, rp, zp, what));
  PetscCall(PCApplyTransposeExists(pcf, &hasf));
  PetscCall(PCApplyTransposeExists(pcr, &hasr));
  PetscCall(Check((PetscBool)(hasf == hasr), "%s: PCApplyTransposeExists() %d as petsc's %d", what, (int)hasf, (int)hasr));
  if (hasf && hasr) PetscCall(ApplyBoth(pcf, pcr, PETSC_TRUE, r, zr, bf, zf, rp, zp, what));
  /* the vectors are on the backend now: one more application is one kernel and no copy */
  PetscCall(FusedKSPGetBackendCounters(&c0[0], &c0[1], &c0[2]));
  PetscCall(PCApply(pcf, bf, zf));
  PetscCall(FusedKSPGetBackendCounters(&c1[0], &c1[1], &c1[2]));
  {
    PetscInt local_rows;

    PetscCall(VecGetLocalSize(bf, &local_rows));
    PetscCall(Check((PetscBool)(c1[0] - c0[0] == (local_rows ? 1 : 0) && c1[1] == c0[1] && c1[2] == c0[2]),
                    "%s: PCApply on fused vectors: %" PetscInt64_FMT " kernel launches (1 with rows), %" PetscInt64_FMT " device->host and %" PetscInt64_FMT " host->device copies (0)", what, c1[0] - c0[0], c1[1] - c0[1], c1[2] - c0[2]));
  }
  PetscCall(VecDestroy(&r));
  PetscCall(VecDestroy(&zr));
  PetscCall(VecDestroy(&rp));
  PetscCall(VecDestroy(&zp));
  PetscCall(VecDestroy(&bf));
  PetscCall(VecDestroy(&zf));

  PetscCall(VecZeroEntries(fs->x));
  PetscCall(VecZeroEntries(rs->x));
  PetscCall(ViewApplications(fs->ksp, before));
  PetscCall(KSPSolve(fs->ksp, fs->b, fs->x));
  PetscCall(ViewApplications(fs->ksp, after));
  PetscCall(Check((PetscBool)(before[0] >= 0 && after[0] > before[0] && after[1] == before[1]), "%s: the solve applied the blocks on the backend only (-ksp_view: %lld -> %lld applications there, %lld -> %lld by PETSc on the host)", what, before[0],
                  after[0], before[1], after[1]));
  PetscCall(KSPSolve(rs->ksp, rs->b, rs->x));
  PetscCall(KSPGetIterationNumber(fs->ksp, &itsf));
  PetscCall(KSPGetIterationNumber(rs->ksp, &itsr));
  PetscCall(KSPGetConvergedReason(fs->ksp, &reasonf));
  PetscCall(KSPGetConvergedReason(rs->ksp, &reasonr));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%s: fused its=%" PetscInt_FMT " (%s), petsc its=%" PetscInt_FMT " (%s)\n", what, itsf, KSPConvergedReasons[reasonf], itsr, KSPConvergedReasons[reasonr]));
  PetscCall(Check((PetscBool)(reasonf > 0 && reasonr > 0), "%s: both converged", what));
  PetscCall(Check((PetscBool)(PetscAbsInt(itsf - itsr) <= its_tol * itsr + its_abs), "%s: iterations |%" PetscInt_FMT " - %" PetscInt_FMT "| <= %g x %" PetscInt_FMT " + %" PetscInt_FMT, what, itsf, itsr, (double)its_tol, itsr, its_abs));
  PetscCall(RelDiff(fs->x, rs->x, &d));
  PetscCall(Check((PetscBool)(d <= sol_tol), "%s: solutions differ by %g <= %g", what, (double)d, (double)sol_tol));
  if (max_h2d_per_it >= 0) PetscCall(CheckH2DPerIteration(fs->ksp, fs->b, fs->x, max_h2d_per_it, what));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The first block (rows and columns [rstart, rstart + bs) of rank 0, bs the first block's size) of A set to zero: its
   stored entries */
static PetscErrorCode ZeroFirstBlock(Mat A, PetscInt bs)
{
  PetscInt    rstart, nz = 0, *rows, *cols;
  PetscMPIInt rank;

  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  PetscCall(MatGetOwnershipRange(A, &rstart, NULL));
  PetscCall(PetscMalloc2(bs * bs, &rows, bs * bs, &cols));
  for (PetscInt i = rstart; rank == 0 && i < rstart + bs; ++i) { /* the stored entries of the block */
    const PetscInt *rcols;
    PetscInt        nc;

    PetscCall(MatGetRow(A, i, &nc, &rcols, NULL));
    for (PetscInt k = 0; k < nc; ++k)
      if (rcols[k] >= rstart && rcols[k] < rstart + bs) {
        rows[nz]   = i;
        cols[nz++] = rcols[k];
      }
    PetscCall(MatRestoreRow(A, i, &nc, &rcols, NULL));
  }
  for (PetscInt k = 0; k < nz; ++k) PetscCall(MatSetValue(A, rows[k], cols[k], 0.0, INSERT_VALUES));
  PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  PetscCall(PetscFree2(rows, cols));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* One solve of a singular first block: its reason, or with error_if_not the error code of KSPSolve() */
static PetscErrorCode SingularSolve(Mat A, Vec b, const char type[], PCType pctype, PetscBool error_if_not, KSPConvergedReason *reason, PetscErrorCode *err)
{
  KSP ksp;
  PC  pc;
  Vec x;

  PetscFunctionBeginUser;
  PetscCall(MatCreateVecs(A, &x, NULL));
  PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
  PetscCall(KSPSetType(ksp, type));
  PetscCall(KSPSetOperators(ksp, A, A));
  PetscCall(KSPSetTolerances(ksp, PETSC_CURRENT, PETSC_CURRENT, PETSC_CURRENT, 50));
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(PCSetType(pc, pctype));
  PetscCall(KSPSetErrorIfNotConverged(ksp, error_if_not));
  PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
  *err = KSPSolve(ksp, b, x);
  PetscCall(PetscPopErrorHandler());
  PetscCall(KSPGetConvergedReason(ksp, reason));
  PetscCall(KSPDestroy(&ksp));
  PetscCall(VecDestroy(&x));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode ZeroPivot(Mat Af, Vec bf, Mat A, Vec b, const char type[], const char reftype[], PCType pctype, PetscInt bs)
{
  KSPConvergedReason rf, rr;
  PetscErrorCode     ef, er;

  PetscFunctionBeginUser;
  PetscCall(ZeroFirstBlock(Af, bs));
  PetscCall(ZeroFirstBlock(A, bs));
  PetscCall(SingularSolve(Af, bf, type, pctype, PETSC_FALSE, &rf, &ef));
  PetscCall(SingularSolve(A, b, reftype, pctype, PETSC_FALSE, &rr, &er));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "singular block: fused %s (error %d), petsc %s (error %d)\n", KSPConvergedReasons[rf], (int)ef, KSPConvergedReasons[rr], (int)er));
  PetscCall(Check((PetscBool)(!ef && !er && rf == rr && rf < 0), "singular block: the same failure reason as petsc (%s, %s)", KSPConvergedReasons[rf], KSPConvergedReasons[rr]));
  PetscCall(SingularSolve(Af, bf, type, pctype, PETSC_TRUE, &rf, &ef));
  PetscCall(SingularSolve(A, b, reftype, pctype, PETSC_TRUE, &rr, &er));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "singular block, KSPSetErrorIfNotConverged(): fused error %d, petsc error %d\n", (int)ef, (int)er));
  PetscCall(Check((PetscBool)(ef && ef == er), "singular block with KSPSetErrorIfNotConverged(): the same error as petsc (%d, %d)", (int)ef, (int)er));
  PetscFunctionReturn(PETSC_SUCCESS);
}

int main(int argc, char **argv)
{
  Problem   prob;
  Mat       Af;
  Vec       bf;
  Solve     fs, rs;
  char      ksptype[64] = KSPFUSEDCG, reftype[64] = "", pctype[64] = PCPBJACOBI;
  PetscReal rtol = 1e-8, sol_tol = 1e-6;
  PetscInt  its_abs = 1, pattern[16] = {1, 2, 3, 4, 5, 7}, npattern = 16, bsf, bsr, firstbs;
  PetscBool zero_pivot = PETSC_FALSE, found = PETSC_FALSE, variable, right = PETSC_FALSE, set;

  PetscFunctionBeginUser;
  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(FusedKSPInitializePackage());
  PetscCall(PetscOptionsGetString(NULL, NULL, "-ksp_type", ksptype, sizeof(ksptype), NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-ref_ksp_type", reftype, sizeof(reftype), NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-pc_type", pctype, sizeof(pctype), NULL));
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-rtol", &rtol, NULL));
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-sol_tol", &sol_tol, NULL));
  /* pipelined BiCGStab is BiCGStab in exact arithmetic only: its iteration counts spread more (test_compare.c says why) */
  if (!strcmp(ksptype, KSPFUSEDBCGS)) {
    its_tol = 0.2;
    its_abs = 3;
  }
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-its_tol", &its_tol, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-its_abs", &its_abs, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-zero_pivot", &zero_pivot, NULL));
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-max_h2d_per_it", &max_h2d_per_it, NULL));
  PetscCall(PetscOptionsGetIntArray(NULL, NULL, "-vblock_sizes", pattern, &npattern, &set));
  if (!set) npattern = 6;
  PetscCheck(npattern > 0, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-vblock_sizes needs at least one size");
  for (PetscInt k = 0; k < npattern; ++k) PetscCheck(pattern[k] > 0, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-vblock_sizes: sizes must be positive");
  if (!reftype[0]) { /* PETSc's classical counterpart of a fused solver (fusedsgmres: right-preconditioned) */
    if (!strcmp(ksptype, KSPFUSEDCG))
      PetscCall(PetscStrncpy(reftype, KSPCG, sizeof(reftype)));
    else if (!strcmp(ksptype, KSPFUSEDBCGS))
      PetscCall(PetscStrncpy(reftype, KSPBCGS, sizeof(reftype)));
    else if (!strcmp(ksptype, KSPFUSEDSGMRES)) {
      PetscCall(PetscStrncpy(reftype, KSPGMRES, sizeof(reftype)));
      right = PETSC_TRUE;
    } else
      PetscCall(PetscStrncpy(reftype, ksptype, sizeof(reftype)));
  }
  PetscCall(PetscStrcmp(pctype, PCVPBJACOBI, &variable));
  PetscCall(ProblemCreate(PETSC_COMM_WORLD, NULL, &prob));
  PetscCall(MatConvert(prob.A, MATAIJFUSED, MAT_INITIAL_MATRIX, &Af));
  PetscCall(MatGetBlockSize(Af, &bsf));
  PetscCall(MatGetBlockSize(prob.A, &bsr));
  PetscCall(Check((PetscBool)(bsf == bsr), "the fused copy keeps the block size %" PetscInt_FMT " (%" PetscInt_FMT ")", bsr, bsf));
  firstbs = bsr;
  if (variable) {
    PetscCall(SetVariableBlocks(prob.A, Af, pattern, npattern));
    firstbs = pattern[0];
  }
  PetscCall(MatCreateVecs(Af, NULL, &bf));
  PetscCall(CopyValues(prob.b, bf));
  if (zero_pivot) {
    PetscCall(ZeroPivot(Af, bf, prob.A, prob.b, ksptype, reftype, pctype, firstbs));
  } else {
    PetscCall(SolveCreate(Af, bf, "fused_", ksptype, pctype, PETSC_FALSE, rtol, &fs));
    PetscCall(SolveCreate(prob.A, prob.b, "ref_", reftype, pctype, right, rtol, &rs));
    PetscCall(Compare(&fs, &rs, "first solve", its_abs, sol_tol));
    PetscCall(ViewContains(fs.ksp, "FusedKSP point-block Jacobi: blocks of sizes", &found));
    PetscCall(Check(found, "-ksp_view shows \"FusedKSP point-block Jacobi: blocks of sizes\""));
    PetscCall(MatScale(Af, 2.0));
    PetscCall(MatScale(prob.A, 2.0));
    PetscCall(Compare(&fs, &rs, "after MatScale", its_abs, sol_tol));
    PetscCall(MatShift(Af, 1.0));
    PetscCall(MatShift(prob.A, 1.0));
    PetscCall(Compare(&fs, &rs, "after MatShift", its_abs, sol_tol));
    PetscCall(SolveDestroy(&fs));
    PetscCall(SolveDestroy(&rs));
  }
  PetscCall(VecDestroy(&bf));
  PetscCall(MatDestroy(&Af));
  PetscCall(ProblemDestroy(&prob));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "test_pbjacobi: %s\n", check_failures ? "FAIL" : "PASS"));
  PetscCall(PetscFinalize());
  return check_failures ? 1 : 0;
}
