/*
   MatSolverType "fused" (MATSOLVERFUSED): ILU(0) and ICC(0) of a MATSEQAIJFUSED matrix, factorized on the
   device where the backend can (Backend::ilu0_numeric; else, and for shifted factorizations, on the host), the
   triangular solves on the active backend (Backend::trsv_csr), with no host<->device vector copy per application
   when the vectors are fused.

   Factor storage: A = L U with L unit lower triangular and U upper triangular, both on the pattern of A
   (level 0: no fill).  L holds the strictly lower part, U the strictly upper part and the inverted
   diagonal, as TriangularView describes (backend.hpp).  The pattern is split once by the symbolic
   phase (with the level schedule of each factor and the backend's analysis); the numeric phase, called
   again by PETSc when only the values of A change, refactors on the host and copies the values.

   A request beyond that (fill levels, a drop tolerance, an ordering other than the natural one) is handed
   to PETSc's own factorization (MATSOLVERPETSC) and its host solves, so every ILU/ICC that runs on MATAIJ
   runs on MATAIJFUSED too; -ksp_view says so.

   ICC(0) is ILU(0) of the whole matrix: for a symmetric A the factors satisfy U = D L^T, so
   M = L U = L D L^T is the incomplete Cholesky factorization of the same pattern (PETSc's ICC(0) in
   exact arithmetic).  For a nonsymmetric A it is ILU(0), where PETSc's ICC reads the upper triangle only.
*/
#include "sys/fusedksp_impl.hpp"
#include "sys/tuning.hpp"
#include "vec/vecfused.hpp"
#include "mat/mirror.hpp"
#include <petsc/private/matimpl.h>

namespace fusedksp
{

/* -pc_factor_fused_trsv */
enum class TrsvChoice { SYNCFREE, LEVELS, JACOBI, AUTO, CUSPARSE };
static const char *const TrsvChoices[] = {"syncfree", "levels", "jacobi", "auto", "cusparse", "TrsvChoice", "TRSV_", nullptr};

/* The default is CUSPARSE (exact, as PETSc's factors): cuSPARSE's SpSV on the cuda backend (faster than LEVELS, whose
   kernel per level leaves the GPU mostly idle on 3D problems: tutorials/results/RESULTS.md), LEVELS on the others.  AUTO decides per matrix, at the first numeric phase of a pattern: JACOBI when
   theta = max over the rows of both factors of the absolute row sum of D^{-1} N (TriangularView: the infinity norm of
   the Jacobi iteration matrix, which bounds the error of s sweeps by theta^(s+1)) is at most
   tuning.trsv_jacobi_max_theta (-fused_tune_trsv_jacobi_max_theta), else the default's exact solves.  SYNCFREE is never chosen: it passes its tests but did not finish an
   ICC(0)-preconditioned CG solve of 262144 rows on an H100.  CUSPARSE (cuSPARSE's SpSV) is the CUDA backend's; the
   other backends solve by LEVELS for it.                                                                            */
/* One triangular factor: host arrays (the reference, and the solves on non-fused vectors) and the
   backend's copy (the same arrays on the host backend) */
struct Triangle {
  PetscInt      *rowptr = nullptr, *colidx = nullptr; /* host */
  PetscScalar   *vals = nullptr, *invdiag = nullptr;  /* host; invdiag: upper only */
  PetscInt       nlevels = 0;
  TriangularView host, dev; /* views of the host arrays, of the backend's */
};

struct FusedFactor {
  const Backend *be     = nullptr; /* the backend of the symbolic phase */
  TrsvChoice     choice = TrsvChoice::CUSPARSE;
  PetscInt       sweeps = 2;  /* -pc_factor_fused_trsv_sweeps */
  PetscReal      theta  = -1; /* AUTO: the measure of its decision (see tuning.trsv_jacobi_max_theta); -1: not made */
  PetscInt       n      = 0;
  PetscInt64     nnz    = 0;       /* entries of A */
  PetscInt      *diag   = nullptr; /* position of the diagonal entry of each row in A's CSR */
  PetscInt      *mark   = nullptr; /* numeric phase: position in the row of each column, -1 if none */
  PetscScalar   *lu     = nullptr; /* numeric phase: the factors on A's pattern */
  PetscScalar   *work   = nullptr; /* host, n: L^{-1} b */
  PetscScalar   *dwork  = nullptr; /* backend, n (NULL on the host backend: work) */
  PetscScalar   *dwork1 = nullptr; /* backend, n: dwork of the solves queued on the backend's second stream, made at the first
                                      (KSPFUSEDBICG's A^T side: M^{-T}, or M^{-1} of a symmetric PC such as PCICC, runs there
                                      while the A side's solve runs on the first stream)                                   */
  Triangle       L, U;
  ILU0View       dilu;                     /* the numeric phase on the backend (Backend::ilu0_numeric), when it has one */
  PetscLogDouble flops      = 0;           /* of a numeric phase without shifts */
  PetscBool      host_stale = PETSC_FALSE; /* the backend factored: the host arrays of L, U and lu are not current */
  PetscBool      on_backend = PETSC_FALSE; /* the last numeric phase ran on the backend */
  Triangle       Lt, Ut;                   /* the factors of M^T (MatSolveTranspose(), see TransposeFactors()), built at its first use */
  PetscInt64     numeric    = 0;           /* successful numeric phases since the symbolic one */
  PetscInt64     transposed = -1;          /* the numeric phase whose values Lt and Ut hold (-1: none) */
  /* L and U with schedules of their own for the solves with them queued on the backend's second stream: a schedule
     holds the state of a solve in flight (the level graph's {b, x}, the sweeps' vector, the sync-free flags), so
     M^{-1} on both streams at once (KSPFUSEDBICG with PCICC, whose transposed application is M^{-1}) needs two.
     They share L's and U's backend arrays; made at the first such solve after each numeric phase.                */
  TriangularView   L1, U1;
  PetscInt64       side1        = -1;      /* the numeric phase L1, U1 were made for (-1: none) */
  PetscObjectState nonzerostate = -1;      /* of A at the symbolic phase */
  Mat              host         = nullptr; /* PETSc's factor, for a factorization beyond ILU(0)/ICC(0) */
};

/* Backend copies of a triangle's arrays (allocated by the symbolic phase) and its host view */
static PetscErrorCode TriangleViews(const Backend *be, PetscInt n, PetscBool upper, TrsvAlgorithm alg, PetscInt sweeps, Triangle *t)
{
  const PetscInt nz = t->rowptr[n];

  PetscFunctionBegin;
  t->host.n         = n;
  t->host.upper     = upper;
  t->host.rowptr    = t->rowptr;
  t->host.colidx    = t->colidx;
  t->host.vals      = t->vals;
  t->host.invdiag   = t->invdiag;
  t->host.algorithm = alg; /* the host solves of non-fused vectors apply the same (approximate) solve */
  t->host.sweeps    = sweeps;
  t->dev            = t->host;
  PetscCall(HostBackend()->trsv_analysis(&t->host, 0, nullptr, nullptr));
  t->dev.schedule = nullptr;
  if (be != HostBackend()) {
    PetscInt    *rowptr, *colidx;
    PetscScalar *vals, *invdiag = nullptr;

    PetscCall(be->malloc_bytes((n + 1) * sizeof(PetscInt), (void **)&rowptr));
    PetscCall(be->malloc_bytes(nz * sizeof(PetscInt), (void **)&colidx));
    PetscCall(be->malloc_bytes(nz * sizeof(PetscScalar), (void **)&vals));
    if (upper) PetscCall(be->malloc_bytes(n * sizeof(PetscScalar), (void **)&invdiag));
    PetscCall(be->copy_to_backend(rowptr, t->rowptr, (n + 1) * sizeof(PetscInt)));
    PetscCall(be->copy_to_backend(colidx, t->colidx, nz * sizeof(PetscInt)));
    t->dev.rowptr  = rowptr;
    t->dev.colidx  = colidx;
    t->dev.vals    = vals;
    t->dev.invdiag = invdiag;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode TriangleFree(const Backend *be, Triangle *t)
{
  PetscFunctionBegin;
  PetscCall(HostBackend()->trsv_free(&t->host));
  if (be) {
    PetscCall(be->trsv_free(&t->dev));
    if (be != HostBackend() && t->dev.rowptr) {
      PetscCall(be->free_bytes((void *)t->dev.rowptr));
      PetscCall(be->free_bytes((void *)t->dev.colidx));
      PetscCall(be->free_bytes((void *)t->dev.vals));
      PetscCall(be->free_bytes((void *)t->dev.invdiag));
    }
  }
  PetscCall(PetscFree4(t->rowptr, t->colidx, t->vals, t->invdiag));
  *t = Triangle();
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Releases everything the symbolic phase made (a new pattern, or destroy) */
static PetscErrorCode FusedFactorReset(FusedFactor *f)
{
  PetscFunctionBegin;
  PetscCall(TriangleFree(f->be, &f->L));
  PetscCall(TriangleFree(f->be, &f->U));
  PetscCall(TriangleFree(f->be, &f->Lt));
  PetscCall(TriangleFree(f->be, &f->Ut));
  if (f->side1 >= 0) {
    PetscCall(f->be->trsv_free(&f->L1));
    PetscCall(f->be->trsv_free(&f->U1));
    f->side1 = -1;
  }
  f->numeric    = 0;
  f->transposed = -1;
  f->theta      = -1;
  if (f->dilu.schedule) PetscCall(f->be->ilu0_free(&f->dilu));
  if (f->dilu.lu) {
    PetscCall(f->be->free_bytes((void *)f->dilu.rowptr));
    PetscCall(f->be->free_bytes((void *)f->dilu.colidx));
    PetscCall(f->be->free_bytes((void *)f->dilu.diag));
    PetscCall(f->be->free_bytes(f->dilu.lu));
  }
  f->dilu       = ILU0View();
  f->flops      = 0;
  f->host_stale = PETSC_FALSE;
  f->on_backend = PETSC_FALSE;
  if (f->be && f->dwork) PetscCall(f->be->free_bytes(f->dwork));
  if (f->be && f->dwork1) PetscCall(f->be->free_bytes(f->dwork1));
  f->dwork  = nullptr;
  f->dwork1 = nullptr;
  PetscCall(PetscFree4(f->diag, f->mark, f->lu, f->work));
  f->be           = nullptr;
  f->nonzerostate = -1;
  PetscCall(MatDestroy(&f->host));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The symbolic phase of PETSc's own factorization of A into f->host, for a request the device's ILU(0)/ICC(0)
   does not cover (`why`) */
static PetscErrorCode HostFactorSymbolic(Mat F, Mat A, IS row, IS col, const MatFactorInfo *info, const char *why)
{
  FusedFactor *f = (FusedFactor *)F->data;

  PetscFunctionBegin;
  PetscCall(FusedFactorReset(f));
  PetscCall(PetscInfo(A, "MatSolverType %s: %s: PETSc's factorization and host solves\n", MATSOLVERFUSED, why));
  PetscCall(MatGetFactor(A, MATSOLVERPETSC, F->factortype, &f->host));
  if (F->factortype == MAT_FACTOR_ICC)
    PetscCall(MatICCFactorSymbolic(f->host, A, row, info));
  else
    PetscCall(MatILUFactorSymbolic(f->host, A, row, col, info));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The algorithm -pc_factor_fused_trsv asks for (auto: the exact solves of cusparse until the first numeric phase, see
   above; cusparse: levels but on the cuda backend) */
static TrsvAlgorithm ChooseAlgorithm(TrsvChoice choice, PetscBool cuda)
{
  switch (choice) {
  case TrsvChoice::SYNCFREE:
    return TrsvAlgorithm::SYNCFREE;
  case TrsvChoice::JACOBI:
    return TrsvAlgorithm::JACOBI;
  case TrsvChoice::CUSPARSE:
  case TrsvChoice::AUTO:
    return cuda ? TrsvAlgorithm::CUSPARSE : TrsvAlgorithm::LEVELS;
  default:
    return TrsvAlgorithm::LEVELS;
  }
}

/* CUSPARSE's analysis (Backend::trsv_analysis) reads the factor's values: it is made for the values of each numeric
   phase, after them (not by the symbolic phase, before any); the other algorithms' is kept */
static PetscErrorCode AnalyzeValues(const Backend *be, TriangularView *T)
{
  PetscFunctionBegin;
  if (T->algorithm == TrsvAlgorithm::CUSPARSE) {
    PetscCall(be->trsv_free(T));
    PetscCall(be->trsv_analysis(T, 0, nullptr, nullptr));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Symbolic phase of ILU(0) and ICC(0): split A's pattern into L and U, level schedules, backend copies */
static PetscErrorCode FactorSymbolic(Mat F, Mat A, IS perm)
{
  FusedFactor    *f = (FusedFactor *)F->data;
  const PetscInt *ai, *aj;
  PetscScalar    *aa;
  PetscInt        m, n, nlevels[2];
  PetscInt       *levelptr[2], *rows[2];
  const char     *name     = F->factortype == MAT_FACTOR_ICC ? "ICC(0)" : "ILU(0)";
  PetscBool       identity = PETSC_TRUE;
  TrsvChoice      choice   = f->choice;
  PetscInt        sweeps   = f->sweeps;

  PetscFunctionBegin;
  PetscCheck(A->assembled, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONGSTATE, "The matrix must be assembled before its factorization");
  if (perm) PetscCall(ISIdentity(perm, &identity));
  PetscCheck(identity, PETSC_COMM_SELF, PETSC_ERR_SUP, "MatSolverType %s: %s with the natural ordering only (-pc_factor_mat_ordering_type natural), or use -pc_factor_mat_solver_type petsc", MATSOLVERFUSED, name);
  PetscOptionsBegin(PetscObjectComm((PetscObject)F), ((PetscObject)F)->prefix, "FusedKSP factorization options", "Mat");
  PetscCall(PetscOptionsEnum("-pc_factor_fused_trsv",
                             "Triangular solve algorithm of the fused ILU(0)/ICC(0): cusparse (default; exact, cuSPARSE's SpSV on the cuda backend, else levels), levels (exact, one kernel per level, replayed as a CUDA graph), jacobi (approximate: "
                             "-pc_factor_fused_trsv_sweeps Jacobi sweeps, one kernel each), syncfree (exact, "
                             "one kernel; experimental), auto (per matrix at the first factorization: jacobi when the factors are diagonally dominant enough, else the default's exact solves)",
                             "MATSOLVERFUSED", TrsvChoices, (PetscEnum)choice, (PetscEnum *)&choice, NULL));
  PetscCall(PetscOptionsRangeInt("-pc_factor_fused_trsv_sweeps", "Sweeps of -pc_factor_fused_trsv jacobi (0: the diagonal of the factors alone)", "MATSOLVERFUSED", sweeps, &sweeps, NULL, 0, PETSC_INT_MAX));
  PetscOptionsEnd();
  PetscCall(FusedFactorReset(f));
  f->choice = choice;
  f->sweeps = sweeps;
  f->be     = ActiveBackend();
  PetscCall(SeqAIJHostCSR(A, &m, &n, &ai, &aj, &aa));
  PetscCheck(m == n, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "%s needs a square matrix, not %" PetscInt_FMT " x %" PetscInt_FMT, name, m, n);
  f->n   = n;
  f->nnz = ai[n];
  PetscCall(PetscMalloc4(n, &f->diag, n, &f->mark, ai[n], &f->lu, n, &f->work));
  for (PetscInt i = 0; i < n; ++i) {
    f->diag[i] = -1;
    f->mark[i] = -1;
    for (PetscInt k = ai[i]; k < ai[i + 1]; ++k) {
      if (aj[k] == i) f->diag[i] = k;
      PetscCheck(k == ai[i] || aj[k] > aj[k - 1], PETSC_COMM_SELF, PETSC_ERR_PLIB, "Row %" PetscInt_FMT " of the matrix has unsorted column indices", i);
    }
    PetscCheck(f->diag[i] >= 0, PETSC_COMM_SELF, PETSC_ERR_MAT_LU_ZRPVT, "%s: row %" PetscInt_FMT " has no stored diagonal entry (a structurally zero pivot); store the diagonal, or use -pc_factor_mat_solver_type petsc", name, i);
  }
  /* L: entries left of the diagonal; U: right of it, plus the inverted diagonal */
  PetscCall(PetscMalloc4(n + 1, &f->L.rowptr, ai[n], &f->L.colidx, ai[n], &f->L.vals, 0, &f->L.invdiag));
  PetscCall(PetscMalloc4(n + 1, &f->U.rowptr, ai[n], &f->U.colidx, ai[n], &f->U.vals, n, &f->U.invdiag));
  f->L.rowptr[0] = f->U.rowptr[0] = 0;
  for (PetscInt i = 0; i < n; ++i) {
    PetscInt l = f->L.rowptr[i], u = f->U.rowptr[i];

    for (PetscInt k = ai[i]; k < f->diag[i]; ++k) f->L.colidx[l++] = aj[k];
    for (PetscInt k = f->diag[i] + 1; k < ai[i + 1]; ++k) f->U.colidx[u++] = aj[k];
    f->L.rowptr[i + 1] = l;
    f->U.rowptr[i + 1] = u;
  }
  PetscCall(PetscMalloc4(n + 1, &levelptr[0], n, &rows[0], n + 1, &levelptr[1], n, &rows[1]));
  PetscCall(TriangularLevels(n, PETSC_FALSE, f->L.rowptr, f->L.colidx, &nlevels[0], levelptr[0], rows[0]));
  PetscCall(TriangularLevels(n, PETSC_TRUE, f->U.rowptr, f->U.colidx, &nlevels[1], levelptr[1], rows[1]));
  f->L.nlevels = nlevels[0];
  f->U.nlevels = nlevels[1];
  {
    PetscBool     cuda;
    TrsvAlgorithm alg;

    PetscCall(PetscStrcmp(f->be->name, "cuda", &cuda));
    alg = ChooseAlgorithm(choice, cuda);
    if (choice == TrsvChoice::CUSPARSE && !cuda) PetscCall(PetscInfo(F, "-pc_factor_fused_trsv cusparse (the default): the %s backend solves by levels (cuSPARSE is the cuda backend's)\n", f->be->name));
    PetscCall(TriangleViews(f->be, n, PETSC_FALSE, alg, sweeps, &f->L));
    PetscCall(TriangleViews(f->be, n, PETSC_TRUE, alg, sweeps, &f->U));
    if (alg != TrsvAlgorithm::CUSPARSE) { /* else AnalyzeValues() at each numeric phase */
      PetscCall(f->be->trsv_analysis(&f->L.dev, nlevels[0], levelptr[0], rows[0]));
      PetscCall(f->be->trsv_analysis(&f->U.dev, nlevels[1], levelptr[1], rows[1]));
    }
  }
  if (f->be->ilu0_numeric) { /* the numeric phase on the backend, in L's level schedule */
    PetscInt *rowptr, *colidx, *diag;

    f->dilu.n = n;
    PetscCall(f->be->malloc_bytes((n + 1) * sizeof(PetscInt), (void **)&rowptr));
    PetscCall(f->be->malloc_bytes(PetscMax(ai[n], 1) * sizeof(PetscInt), (void **)&colidx));
    PetscCall(f->be->malloc_bytes(PetscMax(n, 1) * sizeof(PetscInt), (void **)&diag));
    PetscCall(f->be->malloc_bytes(PetscMax(ai[n], 1) * sizeof(PetscScalar), (void **)&f->dilu.lu));
    PetscCall(f->be->copy_to_backend(rowptr, ai, (n + 1) * sizeof(PetscInt)));
    PetscCall(f->be->copy_to_backend(colidx, aj, ai[n] * sizeof(PetscInt)));
    PetscCall(f->be->copy_to_backend(diag, f->diag, n * sizeof(PetscInt)));
    f->dilu.rowptr = rowptr;
    f->dilu.colidx = colidx;
    f->dilu.diag   = diag;
    PetscCall(f->be->ilu0_analysis(&f->dilu, nlevels[0], levelptr[0], rows[0]));
  }
  PetscCall(PetscFree4(levelptr[0], rows[0], levelptr[1], rows[1]));
  for (PetscInt i = 0; i < n; ++i)
    for (PetscInt k = ai[i]; k < f->diag[i]; ++k) f->flops += 1 + 2 * (ai[aj[k] + 1] - f->diag[aj[k]] - 1);
  if (f->be != HostBackend()) PetscCall(f->be->malloc_bytes(n * sizeof(PetscScalar), (void **)&f->dwork));
  PetscCall(MatGetNonzeroState(A, &f->nonzerostate));
  F->assembled    = PETSC_FALSE; /* until the numeric phase */
  F->preallocated = PETSC_TRUE;
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode MatILUFactorSymbolic_FusedFactor(Mat F, Mat A, IS row, IS col, const MatFactorInfo *info)
{
  PetscBool identity = PETSC_TRUE;

  PetscFunctionBegin;
  if (col) PetscCall(ISIdentity(col, &identity));
  if (row && identity) PetscCall(ISIdentity(row, &identity));
  if (info->levels > 0 || info->dt > 0 || !identity)
    PetscCall(HostFactorSymbolic(F, A, row, col, info, info->levels > 0 ? "fill levels" : (info->dt > 0 ? "a drop tolerance" : "an ordering other than the natural one")));
  else
    PetscCall(FactorSymbolic(F, A, row));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode MatICCFactorSymbolic_FusedFactor(Mat F, Mat A, IS perm, const MatFactorInfo *info)
{
  PetscBool identity = PETSC_TRUE;

  PetscFunctionBegin;
  if (perm) PetscCall(ISIdentity(perm, &identity));
  if (info->levels > 0 || !identity)
    PetscCall(HostFactorSymbolic(F, A, perm, perm, info, info->levels > 0 ? "fill levels" : "an ordering other than the natural one"));
  else
    PetscCall(FactorSymbolic(F, A, perm));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The shift of the diagonal a factorization restarts with (-pc_factor_shift_type nonzero|positive_definite), as
   PETSc's FactorShiftCtx and MatPivotCheck() (petsc/private/matimpl.h) do it */
struct Shift {
  PetscReal amount = 0, top = 0, lo = 0, hi = 1, fraction = 0;
  PetscInt  nshift = 0, nshift_max = 5;
};

/* The host arrays of the factors (L, U, lu) from the backend's, after a numeric phase on the backend */
static PetscErrorCode SyncHostFactors(FusedFactor *f)
{
  const PetscInt n = f->n;

  PetscFunctionBegin;
  if (!f->host_stale) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(f->be->copy_to_host(f->L.vals, f->L.dev.vals, f->L.rowptr[n] * sizeof(PetscScalar)));
  PetscCall(f->be->copy_to_host(f->U.vals, f->U.dev.vals, f->U.rowptr[n] * sizeof(PetscScalar)));
  PetscCall(f->be->copy_to_host(f->U.invdiag, f->U.dev.invdiag, n * sizeof(PetscScalar)));
  PetscCall(f->be->copy_to_host(f->lu, f->dilu.lu, f->nnz * sizeof(PetscScalar)));
  f->host_stale = PETSC_FALSE;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The infinity norm of D^{-1} N of a triangle (TriangularView) */
static PetscReal JacobiNorm(PetscInt n, const Triangle *t)
{
  PetscReal theta = 0;

  for (PetscInt i = 0; i < n; ++i) {
    PetscReal sum = 0;

    for (PetscInt k = t->rowptr[i]; k < t->rowptr[i + 1]; ++k) sum += PetscAbsScalar(t->vals[k]);
    theta = PetscMax(theta, t->invdiag ? sum * PetscAbsScalar(t->invdiag[i]) : sum);
  }
  return theta;
}

/* -pc_factor_fused_trsv auto, at the first numeric phase of a pattern: JACOBI when theta <= tuning.trsv_jacobi_max_theta (the
   triangles' schedules are made again for it), else the exact solves of the symbolic phase (CUSPARSE or LEVELS); theta as the backend's numeric
   phase measured it, or < 0: measured here on the host factors */
static PetscErrorCode AutoChoose(Mat F, PetscReal theta)
{
  FusedFactor *f = (FusedFactor *)F->data;

  PetscFunctionBegin;
  f->theta = theta >= 0 ? theta : PetscMax(JacobiNorm(f->n, &f->L), JacobiNorm(f->n, &f->U)); /* < 0: not measured by the backend */
  PetscCall(PetscInfo(F, "-pc_factor_fused_trsv auto: theta %g (largest absolute row sum of the Jacobi iteration matrices of L and U), %s\n", (double)f->theta, f->theta <= tuning.trsv_jacobi_max_theta ? "Jacobi sweeps" : "exact solves"));
  if (!(f->theta <= tuning.trsv_jacobi_max_theta)) PetscFunctionReturn(PETSC_SUCCESS); /* NaN factors too: exact solves */
  for (Triangle *t : {&f->L, &f->U}) {
    PetscCall(f->be->trsv_free(&t->dev));
    PetscCall(HostBackend()->trsv_free(&t->host));
    t->dev.algorithm = t->host.algorithm = TrsvAlgorithm::JACOBI;
    t->dev.sweeps = t->host.sweeps = f->sweeps;
    PetscCall(f->be->trsv_analysis(&t->dev, 0, nullptr, nullptr));
    PetscCall(HostBackend()->trsv_analysis(&t->host, 0, nullptr, nullptr));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   Numeric phase (ILU(0); ICC(0) too, see the top): row by row (IKJ), l_ik = a_ik / u_kk for the entries
   left of the diagonal in increasing column order, each subtracting l_ik times row k of U from the
   entries of row i that are in the pattern.  Pivots follow PETSc's rules for -pc_factor_shift_type
   (rs: the sum of the absolute values of the row's factored off-diagonal entries):
     none (ILU's default): |u_ii| <= zeropivot is a zero pivot;
     nonzero: |u_ii| <= zeropivot rs restarts with the diagonal of A shifted by shift_amount, doubled each time;
     positive_definite (ICC's default): Re u_ii <= zeropivot rs restarts with the diagonal shifted by a fraction
       of the largest off-diagonal row sum, bisected over at most 5 restarts (Manteuffel);
     inblocks: |u_ii| <= zeropivot gets u_ii += shift_amount.
   A zero pivot (none) is handled as PETSc's MAT_SHIFT_NONE does: an error when A's MatSetErrorIfFailure() is set
   (-ksp_error_if_not_converged), else the factor's error MAT_FACTOR_NUMERIC_ZEROPIVOT (MatSolve() then flags its
   output and the KSP stops with KSP_DIVERGED_PC_FAILED).  A NaN or Inf pivot is no zero pivot, as in PETSc (a NaN in
   A, e.g. from a function outside its domain): it goes into the factor, and the KSP stops with KSP_DIVERGED_NANORINF.
   On a backend with ilu0_numeric the first attempt (no shift) runs there, straight into the backend's L and U; when a
   pivot fails its test the host factors from the start, with the shifts and errors above.
*/
static PetscErrorCode FactorNumeric(Mat F, Mat A, const MatFactorInfo *info)
{
  FusedFactor             *f = (FusedFactor *)F->data;
  const PetscInt          *ai, *aj;
  PetscScalar             *aa, *lu = f->lu;
  PetscInt                 m, n;
  PetscObjectState         nzstate;
  const char              *name  = F->factortype == MAT_FACTOR_ICC ? "ICC(0)" : "ILU(0)";
  const MatFactorShiftType stype = (MatFactorShiftType)(int)info->shifttype;
  PetscLogDouble           flops = 0;
  Shift                    sh;
  PetscBool                restart;

  PetscFunctionBegin;
  PetscCall(MatGetNonzeroState(A, &nzstate));
  PetscCheck(f->be && nzstate == f->nonzerostate, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONGSTATE, "%s: the nonzero pattern of the matrix changed since the symbolic factorization", name);
  PetscCall(SeqAIJHostCSR(A, &m, &n, &ai, &aj, &aa));
  F->factorerrortype = MAT_FACTOR_NOERROR;
  if (f->dilu.schedule) {
    PetscInt  failrow;
    PetscReal theta;

    f->dilu.shifttype   = (int)stype;
    f->dilu.zeropivot   = info->zeropivot;
    f->dilu.shiftamount = info->shiftamount;
    PetscCall(f->be->copy_to_backend(f->dilu.lu, aa, ai[n] * sizeof(PetscScalar)));
    PetscCall(f->be->ilu0_numeric(&f->dilu, &f->L.dev, &f->U.dev, &failrow, &theta));
    if (failrow < 0) {
      f->host_stale = PETSC_TRUE;
      f->on_backend = PETSC_TRUE;
      PetscCall(AnalyzeValues(f->be, &f->L.dev));
      PetscCall(AnalyzeValues(f->be, &f->U.dev));
      if (f->choice == TrsvChoice::AUTO && !f->numeric) PetscCall(AutoChoose(F, theta));
      f->numeric++;
      PetscCall(PetscLogFlops(f->flops + n));
      F->assembled = PETSC_TRUE;
      PetscFunctionReturn(PETSC_SUCCESS);
    }
    PetscCall(PetscInfo(A, "%s: the pivot of row %" PetscInt_FMT " fails its test on the device: the factorization runs on the host (shifts, errors)\n", name, failrow));
  }
  f->host_stale = PETSC_FALSE;
  f->on_backend = PETSC_FALSE;
  if (stype == MAT_SHIFT_POSITIVE_DEFINITE) { /* top: the largest shift a row needs to be diagonally dominant */
    sh.top = info->zeropivot;
    for (PetscInt i = 0; i < n; ++i) {
      PetscReal rs = -PetscAbsScalar(aa[f->diag[i]]) - PetscRealPart(aa[f->diag[i]]);

      for (PetscInt k = ai[i]; k < ai[i + 1]; ++k) rs += PetscAbsScalar(aa[k]);
      sh.top = PetscMax(sh.top, rs);
    }
    sh.top *= 1.1;
  }
  do {
    restart = PETSC_FALSE;
    PetscCall(PetscArraycpy(lu, aa, ai[n]));
    for (PetscInt i = 0; i < n && !restart; ++i) {
      PetscScalar pivot;
      PetscReal   rs = 0;

      lu[f->diag[i]] += sh.amount;
      for (PetscInt k = ai[i]; k < ai[i + 1]; ++k) f->mark[aj[k]] = k;
      for (PetscInt k = ai[i]; k < f->diag[i]; ++k) {
        const PetscInt    c = aj[k];
        const PetscScalar l = lu[k] * f->U.invdiag[c];

        lu[k] = l;
        for (PetscInt kk = f->diag[c] + 1; kk < ai[c + 1]; ++kk) {
          const PetscInt pos = f->mark[aj[kk]];

          if (pos >= 0) lu[pos] -= l * lu[kk];
        }
        flops += 1 + 2 * (ai[c + 1] - f->diag[c] - 1);
      }
      for (PetscInt k = ai[i]; k < ai[i + 1]; ++k) {
        f->mark[aj[k]] = -1;
        if (k != f->diag[i]) rs += PetscAbsScalar(lu[k]);
      }
      pivot = lu[f->diag[i]];
      if (!PetscIsInfOrNanScalar(pivot)) {
        if (stype == MAT_SHIFT_NONZERO && PetscAbsScalar(pivot) <= info->zeropivot * rs) {
          sh.amount = sh.nshift++ ? 2 * sh.amount : info->shiftamount;
          restart   = PETSC_TRUE;
          continue;
        }
        if (stype == MAT_SHIFT_POSITIVE_DEFINITE && PetscRealPart(pivot) <= info->zeropivot * rs) {
          if (sh.nshift == sh.nshift_max)
            sh.fraction = sh.hi;
          else {
            sh.lo       = sh.fraction;
            sh.fraction = (sh.hi + sh.lo) / 2;
          }
          sh.amount = sh.fraction * sh.top;
          sh.nshift++;
          restart = PETSC_TRUE;
          continue;
        }
        if (stype == MAT_SHIFT_INBLOCKS && PetscAbsScalar(pivot) <= info->zeropivot) {
          pivot += info->shiftamount;
          sh.nshift++;
        }
      }
      if (stype == MAT_SHIFT_NONE && PetscAbsScalar(pivot) <= info->zeropivot) {
        PetscCheck(!A->erroriffailure, PETSC_COMM_SELF, PETSC_ERR_MAT_LU_ZRPVT, "%s: zero pivot %g in row %" PetscInt_FMT " (zero pivot tolerance %g, -pc_factor_zeropivot; shift type %s, -pc_factor_shift_type)", name, (double)PetscAbsScalar(pivot),
                   i, (double)info->zeropivot, MatFactorShiftTypes[stype]);
        PetscCall(PetscInfo(A, "%s: zero pivot %g in row %" PetscInt_FMT " (tolerance %g)\n", name, (double)PetscAbsScalar(pivot), i, (double)info->zeropivot));
        F->factorerrortype             = MAT_FACTOR_NUMERIC_ZEROPIVOT;
        F->factorerror_zeropivot_value = PetscAbsScalar(pivot);
        F->factorerror_zeropivot_row   = i;
        break;
      }
      lu[f->diag[i]]  = pivot;
      f->U.invdiag[i] = 1.0 / pivot;
    }
    /* positive_definite: a shift that worked is bisected down while restarts remain */
    if (stype == MAT_SHIFT_POSITIVE_DEFINITE && !restart && !F->factorerrortype && sh.fraction > 0 && sh.nshift < sh.nshift_max) {
      sh.hi       = sh.fraction;
      sh.fraction = (sh.hi + sh.lo) / 2;
      sh.amount   = sh.fraction * sh.top;
      sh.nshift++;
      restart = PETSC_TRUE;
    }
  } while (restart);
  if (sh.nshift) PetscCall(PetscInfo(A, "%s: %" PetscInt_FMT " shifts (%s), final diagonal shift %g\n", name, sh.nshift, MatFactorShiftTypes[stype], (double)sh.amount));
  if (!F->factorerrortype) {
    for (PetscInt i = 0; i < n; ++i) {
      PetscCall(PetscArraycpy(f->L.vals + f->L.rowptr[i], lu + ai[i], f->diag[i] - ai[i]));
      PetscCall(PetscArraycpy(f->U.vals + f->U.rowptr[i], lu + f->diag[i] + 1, ai[i + 1] - f->diag[i] - 1));
    }
    if (f->be != HostBackend()) {
      PetscCall(f->be->copy_to_backend((void *)f->L.dev.vals, f->L.vals, f->L.rowptr[n] * sizeof(PetscScalar)));
      PetscCall(f->be->copy_to_backend((void *)f->U.dev.vals, f->U.vals, f->U.rowptr[n] * sizeof(PetscScalar)));
      PetscCall(f->be->copy_to_backend((void *)f->U.dev.invdiag, f->U.invdiag, n * sizeof(PetscScalar)));
    }
    PetscCall(AnalyzeValues(f->be, &f->L.dev));
    PetscCall(AnalyzeValues(f->be, &f->U.dev));
    if (f->choice == TrsvChoice::AUTO && !f->numeric) PetscCall(AutoChoose(F, -1));
    f->numeric++; /* the transposed factors, if any, are refreshed at the next MatSolveTranspose() */
  }
  PetscCall(PetscLogFlops(flops + n));
  F->assembled = PETSC_TRUE;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* PETSc's numeric phase into f->host, its outcome (a zero pivot) reported by F */
static PetscErrorCode HostFactorNumeric(Mat F, Mat A, const MatFactorInfo *info)
{
  FusedFactor *f = (FusedFactor *)F->data;

  PetscFunctionBegin;
  if (F->factortype == MAT_FACTOR_ICC)
    PetscCall(MatCholeskyFactorNumeric(f->host, A, info));
  else
    PetscCall(MatLUFactorNumeric(f->host, A, info));
  F->factorerrortype             = f->host->factorerrortype;
  F->factorerror_zeropivot_value = f->host->factorerror_zeropivot_value;
  F->factorerror_zeropivot_row   = f->host->factorerror_zeropivot_row;
  F->assembled                   = PETSC_TRUE;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The numeric phase of ILU(0) and ICC(0) */
static PetscErrorCode MatFactorNumeric_FusedFactor(Mat F, Mat A, const MatFactorInfo *info)
{
  PetscFunctionBegin;
  if (((FusedFactor *)F->data)->host)
    PetscCall(HostFactorNumeric(F, A, info));
  else
    PetscCall(FactorNumeric(F, A, info));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* dst := the transpose of the strictly triangular src (n rows), entry (j, i) = src_ij scaled by rowscale[i] and by
   colscale[j] (either may be NULL: 1), by a counting sort: the rows of dst keep their columns in increasing order.  With
   pattern, dst->rowptr is computed first (dst's arrays allocated by the caller); next: n scratch entries.          */
static void TransposeTriangle(PetscInt n, const Triangle *src, const PetscScalar *rowscale, const PetscScalar *colscale, PetscBool pattern, PetscInt *next, Triangle *dst)
{
  if (pattern) {
    for (PetscInt j = 0; j <= n; ++j) dst->rowptr[j] = 0;
    for (PetscInt k = 0; k < src->rowptr[n]; ++k) dst->rowptr[src->colidx[k] + 1]++;
    for (PetscInt j = 0; j < n; ++j) dst->rowptr[j + 1] += dst->rowptr[j];
  }
  for (PetscInt j = 0; j < n; ++j) next[j] = dst->rowptr[j];
  for (PetscInt i = 0; i < n; ++i)
    for (PetscInt k = src->rowptr[i]; k < src->rowptr[i + 1]; ++k) {
      const PetscInt j = src->colidx[k], t = next[j]++;

      dst->colidx[t] = i;
      dst->vals[t]   = src->vals[k] * (rowscale ? rowscale[i] : 1.0) * (colscale ? colscale[j] : 1.0);
    }
}

/*
   The factors of M^T = (L U)^T = U^T L^T in the forms Backend::trsv_csr solves (unit lower; upper with an inverted
   diagonal).  With U = D U' (D = diag(U), U' unit upper): M^T = U'^T (D L^T), so
     Lt = U'^T, unit lower triangular: entry (j, i) = u_ij / u_ii  (u_ij of U's strictly upper part, i < j);
     Ut = D L^T, upper triangular with U's diagonal: entry (j, i) = u_jj l_ij  (l_ij of L, j < i), inverted diagonal 1/u_jj;
   and M^T x = b is Lt y = b, then Ut x = y.  Their pattern, level schedules and backend analysis are made at the
   first call after a symbolic phase (users who never transpose pay no memory); their values are refreshed when a
   numeric phase ran since the last call.
*/
static PetscErrorCode TransposeFactors(FusedFactor *f)
{
  const PetscInt  n       = f->n;
  const PetscBool pattern = f->Lt.rowptr ? PETSC_FALSE : PETSC_TRUE;
  PetscInt       *next;
  PetscScalar    *pivot;

  PetscFunctionBegin;
  if (f->transposed == f->numeric) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(SyncHostFactors(f));
  if (pattern) {
    PetscCall(PetscMalloc4(n + 1, &f->Lt.rowptr, f->U.rowptr[n], &f->Lt.colidx, f->U.rowptr[n], &f->Lt.vals, 0, &f->Lt.invdiag));
    PetscCall(PetscMalloc4(n + 1, &f->Ut.rowptr, f->L.rowptr[n], &f->Ut.colidx, f->L.rowptr[n], &f->Ut.vals, n, &f->Ut.invdiag));
  }
  PetscCall(PetscMalloc2(n, &next, n, &pivot));
  for (PetscInt i = 0; i < n; ++i) pivot[i] = f->lu[f->diag[i]];
  TransposeTriangle(n, &f->U, f->U.invdiag, nullptr, pattern, next, &f->Lt);
  TransposeTriangle(n, &f->L, nullptr, pivot, pattern, next, &f->Ut);
  PetscCall(PetscFree2(next, pivot));
  PetscCall(PetscArraycpy(f->Ut.invdiag, f->U.invdiag, n));
  if (pattern) {
    const TrsvAlgorithm alg = f->L.dev.algorithm; /* the one chosen for M */
    PetscInt            nlevels[2], *levelptr[2], *rows[2];

    PetscCall(PetscMalloc4(n + 1, &levelptr[0], n, &rows[0], n + 1, &levelptr[1], n, &rows[1]));
    PetscCall(TriangularLevels(n, PETSC_FALSE, f->Lt.rowptr, f->Lt.colidx, &nlevels[0], levelptr[0], rows[0]));
    PetscCall(TriangularLevels(n, PETSC_TRUE, f->Ut.rowptr, f->Ut.colidx, &nlevels[1], levelptr[1], rows[1]));
    f->Lt.nlevels = nlevels[0];
    f->Ut.nlevels = nlevels[1];
    PetscCall(TriangleViews(f->be, n, PETSC_FALSE, alg, f->sweeps, &f->Lt));
    PetscCall(TriangleViews(f->be, n, PETSC_TRUE, alg, f->sweeps, &f->Ut));
    if (alg != TrsvAlgorithm::CUSPARSE) { /* else AnalyzeValues() below */
      PetscCall(f->be->trsv_analysis(&f->Lt.dev, nlevels[0], levelptr[0], rows[0]));
      PetscCall(f->be->trsv_analysis(&f->Ut.dev, nlevels[1], levelptr[1], rows[1]));
    }
    PetscCall(PetscFree4(levelptr[0], rows[0], levelptr[1], rows[1]));
  }
  if (f->be != HostBackend()) {
    PetscCall(f->be->copy_to_backend((void *)f->Lt.dev.vals, f->Lt.vals, f->Lt.rowptr[n] * sizeof(PetscScalar)));
    PetscCall(f->be->copy_to_backend((void *)f->Ut.dev.vals, f->Ut.vals, f->Ut.rowptr[n] * sizeof(PetscScalar)));
    PetscCall(f->be->copy_to_backend((void *)f->Ut.dev.invdiag, f->Ut.invdiag, n * sizeof(PetscScalar)));
  }
  PetscCall(AnalyzeValues(f->be, &f->Lt.dev));
  PetscCall(AnalyzeValues(f->be, &f->Ut.dev));
  PetscCall(PetscLogFlops(f->L.rowptr[n] + f->U.rowptr[n]));
  f->transposed = f->numeric;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The stream side the fused operations queue on (MatFusedFactorSetSide()) */
static int solve_side = 0;

void MatFusedFactorSetSide(int side)
{
  solve_side = side;
}

/* x = second^{-1} first^{-1} b (first lower, second upper): on the backend for fused vectors (no copy), with the
   intermediate vector in the work vector of the stream side (dwork, dwork1), else on the host arrays */
static PetscErrorCode SolveTriangles(Mat F, const Triangle *first, const Triangle *second, Vec b, Vec x)
{
  FusedFactor *f = (FusedFactor *)F->data;
  PetscBool    fb, fx;

  PetscFunctionBegin;
  PetscCall(VecIsFused(b, &fb));
  PetscCall(VecIsFused(x, &fx));
  PetscCall(PetscLogEventBegin(events.trsv, F, b, x, 0));
  if (fb && fx) {
    const Backend *be = f->be;
    PetscScalar   *bp, *xp, *work;

    if (solve_side && be != HostBackend() && !f->dwork1) PetscCall(be->malloc_bytes(f->n * sizeof(PetscScalar), (void **)&f->dwork1));
    work = be == HostBackend() ? f->work : solve_side ? f->dwork1 : f->dwork;
    PetscCheck(be == ActiveBackend(), PETSC_COMM_SELF, PETSC_ERR_ARG_WRONGSTATE, "The factorization was made for the %s backend, the vectors are on %s", be->name, ActiveBackend()->name);
    PetscCall(VecFusedGetArray(b, PETSC_MEMORY_ACCESS_READ, &bp));
    PetscCall(VecFusedGetArray(x, PETSC_MEMORY_ACCESS_WRITE, &xp));
    PetscCall(be->trsv_csr(&first->dev, bp, work));
    PetscCall(be->trsv_csr(&second->dev, work, xp));
    PetscCall(VecFusedRestoreArray(x, PETSC_MEMORY_ACCESS_WRITE, &xp));
    PetscCall(VecFusedRestoreArray(b, PETSC_MEMORY_ACCESS_READ, &bp));
  } else {
    const PetscScalar *bp;
    PetscScalar       *xp;

    PetscCall(SyncHostFactors(f));
    PetscCall(VecGetArrayRead(b, &bp));
    PetscCall(VecGetArrayWrite(x, &xp));
    PetscCall(HostBackend()->trsv_csr(&first->host, bp, f->work));
    PetscCall(HostBackend()->trsv_csr(&second->host, f->work, xp));
    PetscCall(VecRestoreArrayWrite(x, &xp));
    PetscCall(VecRestoreArrayRead(b, &bp));
  }
  PetscCall(PetscLogFlops(2.0 * (first->rowptr[f->n] + second->rowptr[f->n]) + f->n));
  PetscCall(PetscLogEventEnd(events.trsv, F, b, x, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* f->L1, f->U1 (see FusedFactor) for the current numeric phase: L's and U's views with schedules of their own */
static PetscErrorCode SideOneSchedules(FusedFactor *f)
{
  const PetscInt n = f->n;
  PetscInt      *levelptr[2], *rows[2], nlevels[2];

  PetscFunctionBegin;
  if (f->side1 == f->numeric) PetscFunctionReturn(PETSC_SUCCESS);
  if (f->side1 >= 0) {
    PetscCall(f->be->trsv_free(&f->L1));
    PetscCall(f->be->trsv_free(&f->U1));
  }
  f->L1          = f->L.dev;
  f->U1          = f->U.dev;
  f->L1.schedule = f->U1.schedule = nullptr;
  PetscCall(PetscMalloc4(n + 1, &levelptr[0], n, &rows[0], n + 1, &levelptr[1], n, &rows[1]));
  PetscCall(TriangularLevels(n, PETSC_FALSE, f->L.rowptr, f->L.colidx, &nlevels[0], levelptr[0], rows[0]));
  PetscCall(TriangularLevels(n, PETSC_TRUE, f->U.rowptr, f->U.colidx, &nlevels[1], levelptr[1], rows[1]));
  PetscCall(f->be->trsv_analysis(&f->L1, nlevels[0], levelptr[0], rows[0]));
  PetscCall(f->be->trsv_analysis(&f->U1, nlevels[1], levelptr[1], rows[1]));
  PetscCall(PetscFree4(levelptr[0], rows[0], levelptr[1], rows[1]));
  f->side1 = f->numeric;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* MatSolve(): x = M^{-1} b = U^{-1} L^{-1} b; MatSolveTranspose() (transpose): x = M^{-T} b = Ut^{-1} Lt^{-1} b with the
   transposed factors (TransposeFactors()), where MatSolve() runs.  ICC(0) too: its factor is ILU(0) of the whole
   matrix (see the top), whose transpose is M's only for a symmetric A.                                         */
template <PetscBool transpose> static PetscErrorCode MatSolve_FusedFactor(Mat F, Vec b, Vec x)
{
  FusedFactor *f = (FusedFactor *)F->data;

  PetscFunctionBegin;
  if (f->host) {
    PetscCall(transpose ? MatSolveTranspose(f->host, b, x) : MatSolve(f->host, b, x));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  if (transpose) PetscCall(TransposeFactors(f));
  if (!transpose && solve_side && f->be != HostBackend()) { /* L and U with the second stream's schedules */
    Triangle L = f->L, U = f->U;

    PetscCall(SideOneSchedules(f));
    L.dev = f->L1;
    U.dev = f->U1;
    PetscCall(SolveTriangles(F, &L, &U, b, x));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(transpose ? SolveTriangles(F, &f->Lt, &f->Ut, b, x) : SolveTriangles(F, &f->L, &f->U, b, x));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The halves of the ICC(0) factor M = L D U' (U' = D^{-1} U unit upper; U' = L^T for a symmetric A) that
   PCApplySymmetricLeft/Right apply: forward x = D^{-1/2} L^{-1} b, backward x = U^{-1} D^{1/2} b, whose product is
   M^{-1} (for a symmetric A: S^{-1} and S^{-T} with M = S S^T, S = L D^{1/2}, as PETSc's ICC splits its factor).  On
   the host (fused vectors are synchronized to the host). */
template <PetscBool forward> static PetscErrorCode HalfSolve(Mat F, Vec b, Vec x)
{
  FusedFactor       *f = (FusedFactor *)F->data;
  const PetscScalar *bp;
  PetscScalar       *xp;
  const PetscInt     n = f->n;

  PetscFunctionBegin;
  if (f->host) {
    if (forward)
      PetscCall(MatForwardSolve(f->host, b, x));
    else
      PetscCall(MatBackwardSolve(f->host, b, x));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(SyncHostFactors(f));
  for (PetscInt i = 0; i < n; ++i)
    PetscCheck(PetscRealPart(f->U.invdiag[i]) > 0, PETSC_COMM_SELF, PETSC_ERR_SUP, "%s: the pivot of row %" PetscInt_FMT " is %g: the symmetric split of the ICC factor needs positive pivots", forward ? "MatForwardSolve()" : "MatBackwardSolve()", i,
               (double)PetscRealPart(1.0 / f->U.invdiag[i]));
  PetscCall(VecGetArrayRead(b, &bp));
  PetscCall(VecGetArrayWrite(x, &xp));
  if (forward) {
    PetscCall(HostBackend()->trsv_csr(&f->L.host, bp, xp));
    for (PetscInt i = 0; i < n; ++i) xp[i] *= PetscSqrtScalar(f->U.invdiag[i]);
    PetscCall(PetscLogFlops(2.0 * f->L.rowptr[n] + n));
  } else {
    for (PetscInt i = 0; i < n; ++i) f->work[i] = bp[i] / PetscSqrtScalar(f->U.invdiag[i]);
    PetscCall(HostBackend()->trsv_csr(&f->U.host, f->work, xp));
    PetscCall(PetscLogFlops(2.0 * f->U.rowptr[n] + 2.0 * n));
  }
  PetscCall(VecRestoreArrayWrite(x, &xp));
  PetscCall(VecRestoreArrayRead(b, &bp));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode MatGetInfo_FusedFactor(Mat F, MatInfoType, MatInfo *info)
{
  FusedFactor *f = (FusedFactor *)F->data;

  PetscFunctionBegin;
  if (f->host) {
    PetscCall(MatGetInfo(f->host, MAT_LOCAL, info));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(PetscMemzero(info, sizeof(*info)));
  info->block_size        = 1.0;
  info->nz_used           = f->be ? (PetscLogDouble)(f->L.rowptr[f->n] + f->U.rowptr[f->n] + f->n) : 0;
  info->nz_allocated      = info->nz_used;
  info->assemblies        = F->num_ass;
  info->fill_ratio_given  = 1.0;
  info->fill_ratio_needed = 1.0;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The solver's lines, then what MATSEQAIJ's factor says in the same place: PETSc's own factor (f->host) views itself,
   and the device factor, which has no I-node routines, says so as a MATSEQAIJ factor without I-nodes does */
static PetscErrorCode MatView_FusedFactor(Mat F, PetscViewer viewer)
{
  FusedFactor      *f = (FusedFactor *)F->data;
  PetscBool         isascii;
  PetscViewerFormat format;
  char              where[320], sweeps[64] = "";

  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERASCII, &isascii));
  if (isascii && f->host) {
    PetscCall(PetscViewerASCIIPrintf(viewer, "FusedKSP: beyond the device's %s (fill levels, a drop tolerance or an ordering): PETSc's factorization, solves on the host\n", F->factortype == MAT_FACTOR_ICC ? "ICC(0)" : "ILU(0)"));
    PetscTryTypeMethod(f->host, view, viewer);
  }
  if (!isascii || !f->be) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(BackendDescription(f->be, PETSC_FALSE, where, sizeof(where)));
  if (f->choice == TrsvChoice::AUTO && f->theta >= 0)
    PetscCall(PetscSNPrintf(sweeps, sizeof(sweeps), ": theta %.3g, %s", (double)f->theta, f->L.dev.algorithm == TrsvAlgorithm::JACOBI ? "jacobi" : f->L.dev.algorithm == TrsvAlgorithm::CUSPARSE ? "cusparse" : "levels"));
  if (f->choice == TrsvChoice::CUSPARSE && f->L.dev.algorithm != TrsvAlgorithm::CUSPARSE) PetscCall(PetscSNPrintf(sweeps, sizeof(sweeps), ": levels, cuSPARSE is the cuda backend's"));
  if (f->L.dev.algorithm == TrsvAlgorithm::JACOBI) {
    size_t len;

    PetscCall(PetscStrlen(sweeps, &len));
    PetscCall(PetscSNPrintf(sweeps + len, sizeof(sweeps) - len, ", %" PetscInt_FMT " sweeps", f->sweeps));
  }
  if (f->be == HostBackend())
    PetscCall(PetscViewerASCIIPrintf(viewer, "FusedKSP %s: factorization on the %s, triangular solves on the %s (%s)\n", F->factortype == MAT_FACTOR_ICC ? "ICC(0)" : "ILU(0)", f->on_backend ? "device" : "host", where,
                                     f->L.dev.algorithm == TrsvAlgorithm::JACOBI ? "approximate: Jacobi sweeps" : "row by row, the reference"));
  else
    PetscCall(PetscViewerASCIIPrintf(viewer, "FusedKSP %s: factorization on the %s, triangular solves on the %s (%s)\n", F->factortype == MAT_FACTOR_ICC ? "ICC(0)" : "ILU(0)", f->on_backend ? "device" : "host", where,
                                     f->L.dev.algorithm == TrsvAlgorithm::JACOBI                         ? "approximate: Jacobi sweeps, one kernel each"
                                     : f->L.dev.algorithm == TrsvAlgorithm::CUSPARSE                     ? "cuSPARSE SpSV, one call each"
                                     : f->be->host_memory || f->L.dev.algorithm == TrsvAlgorithm::LEVELS ? "level scheduling, one kernel per level"
                                                                                                         : "sync-free, one kernel, one warp per row"));
  if (f->Lt.rowptr)
    PetscCall(PetscViewerASCIIPrintf(viewer, "levels: L %" PetscInt_FMT ", U %" PetscInt_FMT " (-pc_factor_fused_trsv %s%s); MatSolveTranspose() where MatSolve() runs: transposed factors, levels U^T %" PetscInt_FMT ", L^T %" PetscInt_FMT "\n",
                                     f->L.nlevels, f->U.nlevels, TrsvChoices[(int)f->choice], sweeps, f->Lt.nlevels, f->Ut.nlevels));
  else
    PetscCall(PetscViewerASCIIPrintf(viewer, "levels: L %" PetscInt_FMT ", U %" PetscInt_FMT " (-pc_factor_fused_trsv %s%s); MatSolveTranspose() where MatSolve() runs: transposed factors built at its first use\n", f->L.nlevels, f->U.nlevels,
                                     TrsvChoices[(int)f->choice], sweeps));
  PetscCall(PetscViewerGetFormat(viewer, &format));
  if (format == PETSC_VIEWER_ASCII_INFO || format == PETSC_VIEWER_ASCII_INFO_DETAIL) PetscCall(PetscViewerASCIIPrintf(viewer, "not using I-node routines\n"));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode MatDestroy_FusedFactor(Mat F)
{
  FusedFactor *f = (FusedFactor *)F->data;

  PetscFunctionBegin;
  PetscCall(FusedFactorReset(f));
  PetscCall(PetscFree(F->data));
  PetscCall(PetscObjectComposeFunction((PetscObject)F, "MatFactorGetSolverType_C", NULL));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode MatFactorGetSolverType_FusedFactor(Mat, MatSolverType *type)
{
  PetscFunctionBegin;
  *type = MATSOLVERFUSED;
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace fusedksp

/*MC
  MATSOLVERFUSED = "fused" - ILU(0) and ICC(0) of a `MATSEQAIJFUSED` matrix whose triangular solves run on the
  FusedKSP backend: the default `MatSolverType` of `PCILU` and `PCICC` (and of their sub-solves in `PCBJACOBI`
  and `PCASM` when the block is a `MATSEQAIJFUSED`)

  Options Database Keys:
+ -pc_factor_mat_solver_type fused       - this solver (the default for `MATSEQAIJFUSED`); `petsc` gives PETSc's host ILU/ICC
. -pc_factor_fused_trsv <cusparse,levels,jacobi,syncfree,auto> - the algorithm of the triangular solves (default cusparse:
                                           cuSPARSE's SpSV on the cuda backend, levels on the others; auto: jacobi for
                                           factors whose Jacobi iteration matrices have infinity norm <= 0.75, else the
                                           default's exact solves; syncfree is experimental: it did not finish at 262144
                                           rows on an H100)
- -pc_factor_fused_trsv_sweeps <2>      - the sweeps of the approximate solves of `jacobi`

  Level: beginner

  Notes:
  The symbolic factorization (the split of the pattern, the level schedules) runs on the host, the numeric one on
  the GPU with the CUDA backend (one kernel per level of L, replayed as a CUDA graph; a pivot that needs a shift
  sends it to the host), else on the host, whose factors are copied to the backend and `MatSolve()` with fused vectors runs two triangular solves there, with no
  host<->device vector copy.  Plain `VECSEQ` vectors are solved on the host copy of the factors.
  `MatSolveTranspose()` (`PCApplyTranspose()`, used by `KSPFUSEDBICG` and `KSPBICG`) runs where `MatSolve()` runs, with
  explicit transposes of the two factors built at its first use (memory of a second copy of the factors; refreshed after
  a refactorization), for ILU(0) and ICC(0). `MatForwardSolve()` and `MatBackwardSolve()` of an ICC(0) factor (the
  symmetric application of `PCICC`, `-ksp_pc_side symmetric`) run on the host.  A new matrix with the same pattern
  reruns only the numeric phase.

  `levels` solves exactly, one kernel per level of the factor, the kernels replayed as one CUDA graph. `jacobi` applies an
  approximate inverse of each factor: s sweeps of Jacobi's iteration from the diagonal's solve, the first s + 1 terms of
  the Neumann series (exact once s reaches the number of levels less one), s kernels of the cost of a product with the
  factor each. It changes the preconditioner (a weaker one, usually some more iterations, each much cheaper), and keeps it
  symmetric for ICC(0); see tutorials/results/RESULTS.md for measurements. `cusparse` (the default) solves exactly with cuSPARSE's SpSV
  (the solver of PETSc's `MATAIJCUSPARSE` ILU/ICC), one call per solve, on copies of the factors with their diagonal (memory
  of a second copy of each factor; its analysis is made again at each numeric factorization); on a backend other than
  cuda it is `levels`, and -ksp_view says so.

  Level 0 with the natural ordering and no drop tolerance runs on the device; other requests (`-pc_factor_levels`,
  `-pc_factor_mat_ordering_type`, a drop tolerance) get PETSc's own factorization and host solves. `-pc_factor_shift_type` and `-pc_factor_zeropivot` follow
  PETSc's rules (ICC's default is positive_definite, ILU's none; `PCILU` turns nonzero into inblocks for every matrix type
  but seqaij/mpiaij); without a shift the factors equal PETSc's to rounding, a shifted factorization may take other shifts
  than PETSc's (its ICC tests pivots on its own form). A zero pivot that no shift removes is an error under
  `-ksp_error_if_not_converged`, else `KSP_DIVERGED_PC_FAILED`, as with PETSc's solver. ICC(0) is computed as ILU(0) of the whole matrix, which for a symmetric matrix
  is the incomplete Cholesky factorization L D L^T of the same pattern.

.seealso: `PCILU`, `PCICC`, `MATSEQAIJFUSED`, `PCFactorSetMatSolverType()`
M*/

/* Creates the factor matrix of A for ILU(0) or ICC(0) (registered with MatSolverTypeRegister()) */
PETSC_INTERN PetscErrorCode MatGetFactor_SeqAIJFused_Fused(Mat A, MatFactorType ftype, Mat *F)
{
  Mat                    B;
  fusedksp::FusedFactor *f;
  PetscInt               n;

  PetscFunctionBegin;
  PetscCheck(ftype == MAT_FACTOR_ILU || ftype == MAT_FACTOR_ICC, PETSC_COMM_SELF, PETSC_ERR_SUP, "MatSolverType %s: ILU and ICC only", MATSOLVERFUSED);
  PetscCall(MatGetLocalSize(A, &n, NULL));
  PetscCall(MatCreate(PETSC_COMM_SELF, &B));
  PetscCall(MatSetSizes(B, n, n, n, n));
  PetscCall(MatSetBlockSizesFromMats(B, A, A)); /* as PETSc's factors: views and PCs see A's block size */
  PetscCall(PetscLayoutSetUp(B->rmap));
  PetscCall(PetscLayoutSetUp(B->cmap));
  PetscCall(PetscObjectChangeTypeName((PetscObject)B, "seqaijfusedfactor"));
  PetscCall(PetscNew(&f));
  *f                = fusedksp::FusedFactor(); /* the member defaults (PetscNew() zeroes) */
  B->data           = f;
  B->factortype     = ftype;
  B->canuseordering = PETSC_TRUE; /* the PC passes the ordering, which must be natural */
  B->preallocated   = PETSC_TRUE;
  PetscCall(PetscStrallocpy(MATORDERINGNATURAL, (char **)&B->preferredordering[ftype]));
  PetscCall(PetscFree(B->solvertype));
  PetscCall(PetscStrallocpy(MATSOLVERFUSED, &B->solvertype));
  B->ops->ilufactorsymbolic     = fusedksp::MatILUFactorSymbolic_FusedFactor;
  B->ops->iccfactorsymbolic     = fusedksp::MatICCFactorSymbolic_FusedFactor;
  B->ops->lufactornumeric       = fusedksp::MatFactorNumeric_FusedFactor;
  B->ops->choleskyfactornumeric = fusedksp::MatFactorNumeric_FusedFactor;
  B->ops->solve                 = fusedksp::MatSolve_FusedFactor<PETSC_FALSE>;
  B->ops->solvetranspose        = fusedksp::MatSolve_FusedFactor<PETSC_TRUE>;
  if (ftype == MAT_FACTOR_ICC) { /* PCICC's symmetric application; MATSEQAIJ's ILU factor has none either */
    B->ops->forwardsolve  = fusedksp::HalfSolve<PETSC_TRUE>;
    B->ops->backwardsolve = fusedksp::HalfSolve<PETSC_FALSE>;
  }
  B->ops->getinfo = fusedksp::MatGetInfo_FusedFactor;
  B->ops->view    = fusedksp::MatView_FusedFactor;
  B->ops->destroy = fusedksp::MatDestroy_FusedFactor;
  PetscCall(PetscObjectComposeFunction((PetscObject)B, "MatFactorGetSolverType_C", fusedksp::MatFactorGetSolverType_FusedFactor));
  *F = B;
  PetscFunctionReturn(PETSC_SUCCESS);
}
