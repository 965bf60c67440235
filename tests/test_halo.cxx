static char help[] = "Checks the products of MATMPIAIJFUSED (halo exchange on the active backend) against MATMPIAIJ.\n\
A random matrix with uneven row splits, rank 0 without off-diagonal entries (it only sends halo values) and,\n\
on 2 or more ranks, a last rank that owns no rows.  Random x in [0.5, 1.5] (never 0).  Checks, after assembly,\n\
after MatScale() (new values) and after new off-process nonzeros (new halo pattern):\n\
  MatMult() on fused vectors, on plain vectors, MatMultAdd() and MatMultTranspose() equal MATMPIAIJ's;\n\
  MatMPIAIJFusedMultDots() with Jacobi-like weights wl, wr and the four dot kinds equals wl .* (A (wr .* x))\n\
  and VecDot() of that vector; without weights and with no dots too.\n\
Vectors to 1e-12 relative to their largest entry, dots to 1e-12 relative to the sum of |terms|.\n\
Ends with 'test_halo: PASS' or 'test_halo: FAIL' (exit code 1).\n\
Options:\n\
  -m <1500>: rows of rank 1 (rank 0 has 1.5 m, rank r > 1 m + 500 (r - 1), the last one 0 on 2 or more ranks)\n\
  -mat_view ::ascii_info shows the halo exchange of each rank; -fused_cuda_aware_mpi <0,1> selects its mode\n\
  -unsupported_ok: with -fused_cuda_aware_mpi 1 on an MPI that reports no CUDA support, the clear error of the fused\n\
   matrix's assembly (PETSC_ERR_SUP_SYS) passes too (it is the expected answer there), after which nothing else runs\n\n";

#include <fusedksp.h>
#include "mat/aijfused.hpp"
#include "vec/vecfused.hpp"
#include "check.h"
#include <algorithm>
#include <cmath>
#include <random>

using namespace fusedksp;

constexpr PetscReal RTOL = 1e-12;

/* max_i |a_i - b_i| / max_i |b_i| over all ranks (a, b of any types with the same layout) */
static PetscErrorCode RelDiff(Vec a, Vec b, PetscReal *rel)
{
  const PetscScalar *x, *y;
  PetscInt           n;
  PetscReal          v[2] = {0, 0};

  PetscFunctionBeginUser;
  PetscCall(VecGetLocalSize(a, &n));
  PetscCall(VecGetArrayRead(a, &x));
  PetscCall(VecGetArrayRead(b, &y));
  for (PetscInt i = 0; i < n; ++i) {
    v[0] = std::max(v[0], (PetscReal)PetscAbsScalar(x[i] - y[i]));
    v[1] = std::max(v[1], (PetscReal)PetscAbsScalar(y[i]));
  }
  PetscCall(VecRestoreArrayRead(a, &x));
  PetscCall(VecRestoreArrayRead(b, &y));
  PetscCallMPI(MPIU_Allreduce(MPI_IN_PLACE, v, 2, MPIU_REAL, MPIU_MAX, PetscObjectComm((PetscObject)a)));
  *rel = v[1] > 0 ? v[0] / v[1] : v[0];
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode CheckVec(const char *stage, const char *what, Vec a, Vec ref)
{
  PetscReal rel;

  PetscFunctionBeginUser;
  PetscCall(RelDiff(a, ref, &rel));
  PetscCall(Check((PetscBool)(rel <= RTOL), "%s: %s: relative difference %.2e <= %.0e", stage, what, (double)rel, (double)RTOL));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* sum_i |a_i b_i| over all ranks: the scale of a dot product's rounding */
static PetscErrorCode AbsDot(Vec a, Vec b, PetscReal *s)
{
  const PetscScalar *x, *y;
  PetscInt           n;

  PetscFunctionBeginUser;
  *s = 0;
  PetscCall(VecGetLocalSize(a, &n));
  PetscCall(VecGetArrayRead(a, &x));
  PetscCall(VecGetArrayRead(b, &y));
  for (PetscInt i = 0; i < n; ++i) *s += PetscAbsScalar(x[i] * y[i]);
  PetscCall(VecRestoreArrayRead(a, &x));
  PetscCall(VecRestoreArrayRead(b, &y));
  PetscCallMPI(MPIU_Allreduce(MPI_IN_PLACE, s, 1, MPIU_REAL, MPIU_SUM, PetscObjectComm((PetscObject)a)));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Random values in [lo, hi] into a vector of any type */
static PetscErrorCode FillRandom(Vec v, std::mt19937_64 &rng, PetscReal lo, PetscReal hi)
{
  std::uniform_real_distribution<PetscReal> u(lo, hi);
  PetscScalar                              *a;
  PetscInt                                  n;

  PetscFunctionBeginUser;
  PetscCall(VecGetLocalSize(v, &n));
  PetscCall(VecGetArrayWrite(v, &a));
  for (PetscInt i = 0; i < n; ++i) a[i] = u(rng);
  PetscCall(VecRestoreArrayWrite(v, &a));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Adds the rows of this rank to A (fused) and B (MATMPIAIJ): a diagonal entry and up to 4 random
   columns of the own range, and on ranks > 0 up to 3 random columns of the whole range */
static PetscErrorCode AddRandomRows(Mat A, Mat B, std::mt19937_64 &rng)
{
  PetscInt                                  rstart, rend, N;
  PetscMPIInt                               rank;
  std::uniform_real_distribution<PetscReal> val(-1.0, 1.0);

  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_rank(PetscObjectComm((PetscObject)A), &rank));
  PetscCall(MatGetOwnershipRange(A, &rstart, &rend));
  PetscCall(MatGetSize(A, &N, nullptr));
  for (PetscInt i = rstart; i < rend; ++i) {
    PetscInt    cols[8], nc = 0;
    PetscScalar vals[8];

    cols[nc++] = i;
    for (int k = (int)(rng() % 5); k > 0; --k) cols[nc++] = rstart + (PetscInt)(rng() % (rend - rstart));
    if (rank > 0)
      for (int k = (int)(rng() % 4); k > 0; --k) cols[nc++] = (PetscInt)(rng() % N);
    for (PetscInt k = 0; k < nc; ++k) {
      vals[k] = val(rng);
      if (vals[k] == 0) vals[k] = 0.5;
    }
    vals[0] += 8.0;
    PetscCall(MatSetValues(A, 1, &i, nc, cols, vals, ADD_VALUES));
    PetscCall(MatSetValues(B, 1, &i, nc, cols, vals, ADD_VALUES));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode Assemble(Mat A, Mat B)
{
  PetscFunctionBeginUser;
  PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyBegin(B, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(B, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* MatMPIAIJFusedMultDots(A, wl, wr, x, y) with ndots dot products (weight w, vector r) against
   wl .* (B (wr .* x)) and VecDot(); dot d has kind ALL[(d + ndots - 1) % 5], so the calls with 1..4
   dots cover every kind                                                                       */
static PetscErrorCode CheckMultDots(const char *stage, Mat A, Mat B, Vec x, Vec wl, Vec wr, Vec w, Vec r, int ndots, std::mt19937_64 &rng)
{
  const DotKind ALL[5] = {DotKind::DOT_INPUT, DotKind::DOT_SELF, DotKind::DOT_SELF_W, DotKind::DOT_VECTOR, DotKind::DOT_VECTOR_W};
  DotKind       kinds[FUSED_MAX_DOTS];
  Vec           y, yref, t;
  PetscScalar  *xa, *ya, *wla = nullptr, *wra = nullptr, *wa, *ra, dots[FUSED_MAX_DOTS], ref;
  DotSpec       specs[FUSED_MAX_DOTS];
  PetscReal     scale;
  char          label[128];

  PetscFunctionBeginUser;
  PetscCall(PetscSNPrintf(label, sizeof(label), "%s: MatMPIAIJFusedMultDots%s, %d dots", stage, wl ? " with wl, wr" : "", ndots));
  PetscCall(VecDuplicate(x, &y));
  PetscCall(FillRandom(y, rng, 0.5, 1.5)); /* overwritten by the product */
  PetscCall(MatCreateVecs(B, &t, &yref));
  PetscCall(VecCopy(x, t));
  if (wr) PetscCall(VecPointwiseMult(t, t, wr));
  PetscCall(MatMult(B, t, yref));
  if (wl) PetscCall(VecPointwiseMult(yref, yref, wl));

  PetscCall(VecFusedGetArray(x, PETSC_MEMORY_ACCESS_READ, &xa));
  PetscCall(VecFusedGetArray(y, PETSC_MEMORY_ACCESS_WRITE, &ya));
  if (wl) PetscCall(VecFusedGetArray(wl, PETSC_MEMORY_ACCESS_READ, &wla));
  if (wr) PetscCall(VecFusedGetArray(wr, PETSC_MEMORY_ACCESS_READ, &wra));
  PetscCall(VecFusedGetArray(w, PETSC_MEMORY_ACCESS_READ, &wa));
  PetscCall(VecFusedGetArray(r, PETSC_MEMORY_ACCESS_READ, &ra));
  for (int d = 0; d < ndots; ++d) {
    kinds[d] = ALL[(d + ndots - 1) % 5];
    specs[d] = {kinds[d], kinds[d] == DotKind::DOT_SELF_W ? wa : kinds[d] == DotKind::DOT_VECTOR || kinds[d] == DotKind::DOT_VECTOR_W ? ra : nullptr, kinds[d] == DotKind::DOT_VECTOR_W ? wa : nullptr};
  }
  PetscCall(MatMPIAIJFusedMultDots(A, wla, wra, xa, ya, ndots, specs, dots));
  PetscCall(VecFusedRestoreArray(r, PETSC_MEMORY_ACCESS_READ, &ra));
  PetscCall(VecFusedRestoreArray(w, PETSC_MEMORY_ACCESS_READ, &wa));
  if (wr) PetscCall(VecFusedRestoreArray(wr, PETSC_MEMORY_ACCESS_READ, &wra));
  if (wl) PetscCall(VecFusedRestoreArray(wl, PETSC_MEMORY_ACCESS_READ, &wla));
  PetscCall(VecFusedRestoreArray(y, PETSC_MEMORY_ACCESS_WRITE, &ya));
  PetscCall(VecFusedRestoreArray(x, PETSC_MEMORY_ACCESS_READ, &xa));
  if (ndots) PetscCallMPI(MPIU_Allreduce(MPI_IN_PLACE, dots, ndots, MPIU_SCALAR, MPIU_SUM, PetscObjectComm((PetscObject)A)));
  PetscCall(CheckVec(label, "out", y, yref));

  for (int d = 0; d < ndots; ++d) {
    switch (kinds[d]) {
    case DotKind::DOT_INPUT:
      PetscCall(VecCopy(x, t));
      break;
    case DotKind::DOT_SELF:
      PetscCall(VecCopy(yref, t));
      break;
    case DotKind::DOT_SELF_W:
      PetscCall(VecCopy(w, t));
      PetscCall(VecPointwiseMult(t, t, yref));
      break;
    case DotKind::DOT_VECTOR:
      PetscCall(VecCopy(r, t));
      break;
    case DotKind::DOT_VECTOR_W:
      PetscCall(VecPointwiseMult(t, w, r));
      break;
    }
    PetscCall(VecDot(t, yref, &ref));
    PetscCall(AbsDot(t, yref, &scale));
    PetscCall(Check((PetscBool)(PetscAbsScalar(dots[d] - ref) <= RTOL * scale), "%s: dots[%d] = %.15g, VecDot %.15g", label, d, (double)PetscRealPart(dots[d]), (double)PetscRealPart(ref)));
  }
  PetscCall(VecDestroy(&t));
  PetscCall(VecDestroy(&yref));
  PetscCall(VecDestroy(&y));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Every product of A (fused) against B (MATMPIAIJ with the same entries) */
static PetscErrorCode CheckProducts(const char *stage, Mat A, Mat B, std::mt19937_64 &rng)
{
  Vec x, y, xp, yp, yref, wl, wr, w, r;

  PetscFunctionBeginUser;
  PetscCall(MatCreateVecs(A, &x, &y));
  PetscCall(MatCreateVecs(B, &xp, &yref));
  PetscCall(VecDuplicate(yref, &yp));
  PetscCall(FillRandom(x, rng, 0.5, 1.5));
  PetscCall(VecCopy(x, xp));

  PetscCall(MatMult(A, x, y));
  PetscCall(MatMult(B, xp, yref));
  PetscCall(CheckVec(stage, "MatMult, fused vectors", y, yref));
  PetscCall(MatMult(A, xp, yp));
  PetscCall(CheckVec(stage, "MatMult, plain vectors", yp, yref));
  PetscCall(MatMult(A, x, y)); /* the same product again: persistent requests restarted */
  PetscCall(CheckVec(stage, "MatMult, fused vectors, second time", y, yref));

  PetscCall(FillRandom(y, rng, 0.5, 1.5));
  PetscCall(VecCopy(y, yp));
  PetscCall(MatMultAdd(A, x, y, y));
  PetscCall(MatMultAdd(B, xp, yp, yp));
  PetscCall(CheckVec(stage, "MatMultAdd, fused vectors", y, yp));
  PetscCall(MatMultTranspose(A, x, y));
  PetscCall(MatMultTranspose(B, xp, yp));
  PetscCall(CheckVec(stage, "MatMultTranspose, fused vectors", y, yp));

  PetscCall(VecDuplicate(x, &wl));
  PetscCall(VecDuplicate(x, &wr));
  PetscCall(VecDuplicate(x, &w));
  PetscCall(VecDuplicate(x, &r));
  PetscCall(FillRandom(wl, rng, 0.5, 1.5));
  PetscCall(FillRandom(wr, rng, 0.5, 1.5));
  PetscCall(FillRandom(w, rng, 0.5, 1.5));
  PetscCall(FillRandom(r, rng, -1.0, 1.0));
  PetscCall(CheckMultDots(stage, A, B, x, wl, wr, w, r, FUSED_MAX_DOTS, rng));
  PetscCall(CheckMultDots(stage, A, B, x, nullptr, nullptr, w, r, 2, rng));
  PetscCall(CheckMultDots(stage, A, B, x, wl, wr, w, r, 0, rng));

  PetscCall(VecDestroy(&r));
  PetscCall(VecDestroy(&w));
  PetscCall(VecDestroy(&wr));
  PetscCall(VecDestroy(&wl));
  PetscCall(VecDestroy(&yp));
  PetscCall(VecDestroy(&yref));
  PetscCall(VecDestroy(&xp));
  PetscCall(VecDestroy(&y));
  PetscCall(VecDestroy(&x));
  PetscFunctionReturn(PETSC_SUCCESS);
}

int main(int argc, char **argv)
{
  Mat         A, B;
  PetscMPIInt rank, size;
  PetscInt    m = 1500, mlocal, rstart, rend, N;
  PetscBool   fused, unsupported_ok = PETSC_FALSE;

  PetscFunctionBeginUser;
  PetscCall(PetscInitialize(&argc, &argv, nullptr, help));
  PetscCall(FusedKSPInitializePackage());
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscCall(PetscOptionsGetInt(nullptr, nullptr, "-m", &m, nullptr));
  PetscCall(PetscOptionsGetBool(nullptr, nullptr, "-unsupported_ok", &unsupported_ok, nullptr));
  mlocal = rank == 0 ? m + m / 2 : m + 500 * (rank - 1);
  if (size > 1 && rank == size - 1) mlocal = 0;
  std::mt19937_64 rng(20240601 + 7919 * (unsigned)rank);

  PetscCall(MatCreate(PETSC_COMM_WORLD, &A));
  PetscCall(MatSetSizes(A, mlocal, mlocal, PETSC_DETERMINE, PETSC_DETERMINE));
  PetscCall(MatSetType(A, MATMPIAIJFUSED));
  PetscCall(MatCreate(PETSC_COMM_WORLD, &B));
  PetscCall(MatSetSizes(B, mlocal, mlocal, PETSC_DETERMINE, PETSC_DETERMINE));
  PetscCall(MatSetType(B, MATMPIAIJ));
  PetscCall(MatMPIAIJSetPreallocation(A, 8, nullptr, 4, nullptr));
  PetscCall(MatMPIAIJSetPreallocation(B, 8, nullptr, 4, nullptr));
  PetscCall(MatSetFromOptions(A));
  PetscCall(MatIsMPIAIJFused(A, &fused));
  PetscCall(Check(fused, "the matrix is a MATMPIAIJFUSED on the active backend"));
  PetscCall(AddRandomRows(A, B, rng));
  if (unsupported_ok) { /* the fused matrix alone: its assembly reads -fused_cuda_aware_mpi */
    PetscErrorCode ierr;

    PetscCall(MatAssemblyBegin(B, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(B, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
    PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, nullptr));
    ierr = MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY);
    PetscCall(PetscPopErrorHandler());
    if (ierr == PETSC_ERR_SUP_SYS) {
      PetscCall(PetscPrintf(PETSC_COMM_WORLD, "CUDA-aware MPI requested, and this MPI reports no CUDA support: the clear error (PETSC_ERR_SUP_SYS) on every rank\n"));
      PetscCall(MatDestroy(&A));
      PetscCall(MatDestroy(&B));
      PetscCall(PetscPrintf(PETSC_COMM_WORLD, "test_halo: %s\n", check_failures ? "FAIL" : "PASS"));
      PetscCall(PetscFinalize());
      return check_failures ? 1 : 0;
    }
    PetscCall(ierr);
  } else
    PetscCall(Assemble(A, B));
  PetscCall(CheckProducts("assembled", A, B, rng));

  PetscCall(MatScale(A, -2.0));
  PetscCall(MatScale(B, -2.0));
  PetscCall(CheckProducts("after MatScale", A, B, rng));

  /* new off-process nonzeros on the ranks > 0: a new halo pattern */
  PetscCall(MatSetOption(A, MAT_NEW_NONZERO_ALLOCATION_ERR, PETSC_FALSE));
  PetscCall(MatSetOption(B, MAT_NEW_NONZERO_ALLOCATION_ERR, PETSC_FALSE));
  PetscCall(MatGetOwnershipRange(A, &rstart, &rend));
  PetscCall(MatGetSize(A, &N, nullptr));
  if (rank > 0)
    for (PetscInt i = rstart; i < rend; i += 7) {
      const PetscInt    j = (i + N / 2) % N;
      const PetscScalar v = 0.25;
      PetscCall(MatSetValues(A, 1, &i, 1, &j, &v, ADD_VALUES));
      PetscCall(MatSetValues(B, 1, &i, 1, &j, &v, ADD_VALUES));
    }
  PetscCall(Assemble(A, B));
  PetscCall(CheckProducts("after new nonzeros", A, B, rng));

  PetscCall(MatDestroy(&A));
  PetscCall(MatDestroy(&B));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "test_halo: %s\n", check_failures ? "FAIL" : "PASS"));
  PetscCall(PetscFinalize());
  return check_failures ? 1 : 0;
}
