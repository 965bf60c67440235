static char help[] = "Checks that MatAssemblyEnd() builds or refreshes the backend copy of MATSEQAIJFUSED and MATMPIAIJFUSED, and\n\
MatAIJFusedGetArraysGeneration().  Random matrices (values in [-1, 1], never 0, a dominant diagonal), random x in\n\
[0.5, 1.5]; products compared with MATSEQAIJ's / MATMPIAIJ's to 1e-12 relative to the largest entry.\n\
MATSEQAIJFUSED, in each format (csr, sell, auto), on every rank:\n\
  after the first MatAssemblyEnd() no copy exists (generation -1: a matrix never used on the backend is not copied);\n\
  the first product makes it (generation >= 0); then a second product copies nothing more; new values with the same pattern and a reassembly, MatScale(), MatShift()\n\
  keep the generation and leave the copy current; MatDiagonalScale(), MatZeroEntries() (no assembly) keep it and the\n\
  product refreshes the values; MatZeroRows() and a new nonzero (MAT_NEW_NONZERO_ALLOCATION_ERR off) give a new\n\
  generation; a new format frees the copy (generation -1) until the next product; no two copies share a generation;\n\
  MATSEQAIJ and MATMPIAIJFUSED have generation -1.\n\
MATMPIAIJFUSED (SELL-P diagonal block) on 2 or more ranks: a reassembly with new values leaves the blocks current\n\
(the first product copies no more than a second), before and after new off-process nonzeros.\n\
Ends with 'test_assembly: PASS' or 'test_assembly: FAIL' (exit code 1).\n\
Options:\n\
  -n <300>: rows of the sequential matrices and of each rank's block of the parallel one\n\n";

#include <fusedksp.h>
#include "mat/aijfused.hpp"
#include "vec/vecfused.hpp"
#include "check.h"
#include <algorithm>
#include <random>
#include <vector>

using namespace fusedksp;

constexpr PetscReal RTOL = 1e-12;

/* A random value in [-1, 1] that is not 0 */
static PetscScalar RandomValue(std::mt19937_64 &rng)
{
  std::uniform_real_distribution<PetscReal> u(-1.0, 1.0);
  PetscReal                                 v;

  do v = u(rng);
  while (v == 0);
  return v;
}

/* Random values in [0.5, 1.5] into a vector of any type */
static PetscErrorCode FillRandom(Vec v, std::mt19937_64 &rng)
{
  std::uniform_real_distribution<PetscReal> u(0.5, 1.5);
  PetscScalar                              *a;
  PetscInt                                  n;

  PetscFunctionBeginUser;
  PetscCall(VecGetLocalSize(v, &n));
  PetscCall(VecGetArrayWrite(v, &a));
  for (PetscInt i = 0; i < n; ++i) a[i] = u(rng);
  PetscCall(VecRestoreArrayWrite(v, &a));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* max |a - b| <= RTOL max |b| over all ranks (NaN fails) */
static PetscErrorCode CheckVec(const char *stage, const char *what, Vec a, Vec ref)
{
  Vec       d;
  PetscReal diff, size;

  PetscFunctionBeginUser;
  PetscCall(VecDuplicate(ref, &d));
  PetscCall(VecWAXPY(d, -1.0, ref, a));
  PetscCall(VecNorm(d, NORM_INFINITY, &diff));
  PetscCall(VecNorm(ref, NORM_INFINITY, &size));
  PetscCall(Check((PetscBool)(diff <= RTOL * size && !PetscIsInfOrNanReal(diff) && size > 0), "%s: %s (difference %g of %g)", stage, what, (double)diff, (double)size));
  PetscCall(VecDestroy(&d));
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

/* New random values at the stored entries of this rank's rows of ref (the same pattern), into ref and fused */
static PetscErrorCode NewValues(Mat fused, Mat ref, std::mt19937_64 &rng)
{
  PetscInt rstart, rend;

  PetscFunctionBeginUser;
  PetscCall(MatGetOwnershipRange(ref, &rstart, &rend));
  for (PetscInt i = rstart; i < rend; ++i) {
    const PetscInt       *c;
    PetscInt              nc;
    std::vector<PetscInt> cols;

    PetscCall(MatGetRow(ref, i, &nc, &c, nullptr));
    cols.assign(c, c + nc);
    PetscCall(MatRestoreRow(ref, i, &nc, &c, nullptr));
    std::vector<PetscScalar> vals(cols.size());
    for (size_t k = 0; k < cols.size(); ++k) vals[k] = RandomValue(rng) + (cols[k] == i ? 8.0 : 0.0);
    PetscCall(MatSetValues(ref, 1, &i, nc, cols.data(), vals.data(), INSERT_VALUES));
    PetscCall(MatSetValues(fused, 1, &i, nc, cols.data(), vals.data(), INSERT_VALUES));
  }
  PetscCall(Assemble(fused, ref));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* MatMult() (and MatMultTranspose() when `transpose`) of fused against ref on a random x; when `current`
   (the copy is expected up to date), the first product copies no more to the backend than a second one */
static PetscErrorCode CheckProducts(const char *stage, Mat fused, Mat ref, PetscBool current, PetscBool transpose, std::mt19937_64 &rng)
{
  Vec          x, y, xf, yf;
  PetscScalar *xa;
  PetscInt64   h0, h1, h2;

  PetscFunctionBeginUser;
  PetscCall(MatCreateVecs(ref, &x, &y));
  PetscCall(MatCreateVecs(fused, &xf, &yf));
  PetscCall(FillRandom(x, rng));
  PetscCall(VecCopy(x, xf));
  PetscCall(VecFusedGetArray(xf, PETSC_MEMORY_ACCESS_READ, &xa)); /* x on the backend before counting */
  PetscCall(VecFusedRestoreArray(xf, PETSC_MEMORY_ACCESS_READ, &xa));

  PetscCall(FusedKSPGetBackendCounters(nullptr, nullptr, &h0));
  PetscCall(MatMult(fused, xf, yf));
  PetscCall(FusedKSPGetBackendCounters(nullptr, nullptr, &h1));
  PetscCall(MatMult(ref, x, y));
  PetscCall(CheckVec(stage, "MatMult", yf, y));
  PetscCall(MatMult(fused, xf, yf));
  PetscCall(FusedKSPGetBackendCounters(nullptr, nullptr, &h2));
  PetscCall(CheckVec(stage, "MatMult, second time", yf, y));
  if (current) PetscCall(Check((PetscBool)(h1 - h0 == h2 - h1), "%s: the copy is current: the first product copies %" PetscInt64_FMT " times to the backend, a second %" PetscInt64_FMT, stage, h1 - h0, h2 - h1));
  if (transpose) {
    PetscCall(MatMultTranspose(fused, xf, yf));
    PetscCall(MatMultTranspose(ref, x, y));
    PetscCall(CheckVec(stage, "MatMultTranspose", yf, y));
  }
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&y));
  PetscCall(VecDestroy(&xf));
  PetscCall(VecDestroy(&yf));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode CheckGeneration(const char *stage, Mat A, PetscBool same, PetscInt64 *generation)
{
  PetscInt64 g;

  PetscFunctionBeginUser;
  PetscCall(MatAIJFusedGetArraysGeneration(A, &g));
  if (same)
    PetscCall(Check((PetscBool)(g == *generation), "%s: generation unchanged (%" PetscInt64_FMT ", was %" PetscInt64_FMT ")", stage, g, *generation));
  else
    PetscCall(Check((PetscBool)(g >= 0 && g != *generation), "%s: a new generation (%" PetscInt64_FMT ", was %" PetscInt64_FMT ")", stage, g, *generation));
  *generation = g;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The sequence of changes on one MATSEQAIJFUSED in one format; the generations it had go to `seen` */
static PetscErrorCode CheckSeq(PetscInt n, MatAIJFusedFormat format, std::mt19937_64 &rng, std::vector<PetscInt64> &seen)
{
  const char *names[] = {"csr", "sell", "auto"};
  Mat         A, Af;
  Vec         l, r;
  PetscInt64  gen     = -1;
  PetscInt    rows[3] = {0, n / 2, n - 1};
  char        stage[128];

  PetscFunctionBeginUser;
  PetscCall(MatCreateSeqAIJ(PETSC_COMM_SELF, n, n, 7, nullptr, &A));
  PetscCall(MatCreate(PETSC_COMM_SELF, &Af));
  PetscCall(MatSetSizes(Af, n, n, n, n));
  PetscCall(MatSetType(Af, MATSEQAIJFUSED));
  PetscCall(MatSeqAIJSetPreallocation(Af, 7, nullptr));
  PetscCall(MatAIJFusedSetFormat(Af, format));
  for (PetscInt i = 0; i < n; ++i) { /* the diagonal and a random subset of the band |i - j| <= 3 */
    PetscInt    cols[7], nc = 0;
    PetscScalar vals[7];

    for (PetscInt j = PetscMax(0, i - 3); j <= PetscMin(n - 1, i + 3); ++j)
      if (j == i || rng() % 2) {
        cols[nc]   = j;
        vals[nc++] = RandomValue(rng) + (j == i ? 8.0 : 0.0);
      }
    PetscCall(MatSetValues(A, 1, &i, nc, cols, vals, INSERT_VALUES));
    PetscCall(MatSetValues(Af, 1, &i, nc, cols, vals, INSERT_VALUES));
  }
  PetscCall(Assemble(Af, A));
#define STAGE(what) (PetscSNPrintf(stage, sizeof(stage), "seq %s: %s", names[format], what), stage)
  PetscCall(MatAIJFusedGetArraysGeneration(Af, &gen));
  PetscCall(Check((PetscBool)(gen == -1), "%s: generation -1 (%" PetscInt64_FMT ")", STAGE("after MatAssemblyEnd, before any product: no copy yet"), gen));
  PetscCall(CheckProducts(STAGE("assembled, first product"), Af, A, PETSC_FALSE, PETSC_TRUE, rng));
  PetscCall(CheckGeneration(STAGE("after the first product"), Af, PETSC_FALSE, &gen));
  seen.push_back(gen);
  PetscCall(CheckProducts(STAGE("assembled"), Af, A, PETSC_TRUE, PETSC_TRUE, rng));

  PetscCall(NewValues(Af, A, rng));
  PetscCall(CheckGeneration(STAGE("new values, reassembled"), Af, PETSC_TRUE, &gen));
  PetscCall(CheckProducts(STAGE("new values, reassembled"), Af, A, PETSC_TRUE, PETSC_TRUE, rng));

  PetscCall(MatScale(A, -1.75));
  PetscCall(MatScale(Af, -1.75));
  PetscCall(CheckGeneration(STAGE("MatScale"), Af, PETSC_TRUE, &gen));
  PetscCall(CheckProducts(STAGE("MatScale"), Af, A, PETSC_TRUE, PETSC_FALSE, rng));

  PetscCall(MatShift(A, 0.625));
  PetscCall(MatShift(Af, 0.625));
  PetscCall(CheckGeneration(STAGE("MatShift"), Af, PETSC_TRUE, &gen));
  PetscCall(CheckProducts(STAGE("MatShift"), Af, A, PETSC_TRUE, PETSC_TRUE, rng));

  PetscCall(MatCreateVecs(A, &r, &l));
  PetscCall(FillRandom(l, rng));
  PetscCall(FillRandom(r, rng));
  PetscCall(MatDiagonalScale(A, l, r));
  PetscCall(MatDiagonalScale(Af, l, r));
  PetscCall(CheckGeneration(STAGE("MatDiagonalScale"), Af, PETSC_TRUE, &gen));
  PetscCall(CheckProducts(STAGE("MatDiagonalScale"), Af, A, PETSC_FALSE, PETSC_TRUE, rng));

  PetscCall(MatZeroRows(A, 3, rows, 3.0, nullptr, nullptr));
  PetscCall(MatZeroRows(Af, 3, rows, 3.0, nullptr, nullptr));
  PetscCall(CheckGeneration(STAGE("MatZeroRows (new pattern)"), Af, PETSC_FALSE, &gen));
  seen.push_back(gen);
  PetscCall(CheckProducts(STAGE("MatZeroRows"), Af, A, PETSC_TRUE, PETSC_TRUE, rng));

  PetscCall(MatSetOption(A, MAT_NEW_NONZERO_ALLOCATION_ERR, PETSC_FALSE));
  PetscCall(MatSetOption(Af, MAT_NEW_NONZERO_ALLOCATION_ERR, PETSC_FALSE));
  for (PetscInt i = 1; i < n; i += 5) { /* outside the band (n >= 10) */
    const PetscInt    j = (i + n / 2) % n;
    const PetscScalar v = RandomValue(rng);

    PetscCall(MatSetValues(A, 1, &i, 1, &j, &v, INSERT_VALUES));
    PetscCall(MatSetValues(Af, 1, &i, 1, &j, &v, INSERT_VALUES));
  }
  PetscCall(Assemble(Af, A));
  PetscCall(CheckGeneration(STAGE("new nonzeros"), Af, PETSC_FALSE, &gen));
  seen.push_back(gen);
  PetscCall(CheckProducts(STAGE("new nonzeros"), Af, A, PETSC_TRUE, PETSC_TRUE, rng));

  PetscCall(MatZeroEntries(A));
  PetscCall(MatZeroEntries(Af));
  PetscCall(MatShift(A, 2.0));
  PetscCall(MatShift(Af, 2.0));
  PetscCall(MatDiagonalScale(A, l, r));
  PetscCall(MatDiagonalScale(Af, l, r));
  PetscCall(CheckGeneration(STAGE("MatZeroEntries, MatShift, MatDiagonalScale"), Af, PETSC_TRUE, &gen));
  PetscCall(CheckProducts(STAGE("MatZeroEntries, MatShift, MatDiagonalScale"), Af, A, PETSC_FALSE, PETSC_TRUE, rng));

  PetscCall(MatAIJFusedSetFormat(Af, format == MAT_AIJFUSED_SELL ? MAT_AIJFUSED_CSR : MAT_AIJFUSED_SELL));
  PetscCall(MatAIJFusedGetArraysGeneration(Af, &gen));
  PetscCall(Check((PetscBool)(gen == -1), "%s: generation -1 (%" PetscInt64_FMT ")", STAGE("new format, the copy freed"), gen));
  PetscCall(NewValues(Af, A, rng));
  PetscCall(MatAIJFusedGetArraysGeneration(Af, &gen));
  PetscCall(Check((PetscBool)(gen == -1), "%s: generation -1 (%" PetscInt64_FMT ")", STAGE("new format, reassembled: no copy until the next product"), gen));
  PetscCall(CheckProducts(STAGE("new format, first product"), Af, A, PETSC_FALSE, PETSC_TRUE, rng));
  PetscCall(CheckGeneration(STAGE("new format, after the first product"), Af, PETSC_FALSE, &gen));
  seen.push_back(gen);
  PetscCall(CheckProducts(STAGE("new format"), Af, A, PETSC_TRUE, PETSC_TRUE, rng));

  PetscCall(MatAIJFusedGetArraysGeneration(A, &gen));
  PetscCall(Check((PetscBool)(gen == -1), "%s: a MATSEQAIJ has generation -1 (%" PetscInt64_FMT ")", STAGE("MATSEQAIJ"), gen));
#undef STAGE
  PetscCall(VecDestroy(&l));
  PetscCall(VecDestroy(&r));
  PetscCall(MatDestroy(&A));
  PetscCall(MatDestroy(&Af));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Adds this rank's rows to fused and ref: the diagonal, i +- 1 and an entry in the block of the next
   rank (off-process with 2 or more ranks) */
static PetscErrorCode AddMPIRows(Mat fused, Mat ref, std::mt19937_64 &rng)
{
  PetscInt rstart, rend, N;

  PetscFunctionBeginUser;
  PetscCall(MatGetOwnershipRange(ref, &rstart, &rend));
  PetscCall(MatGetSize(ref, &N, nullptr));
  for (PetscInt i = rstart; i < rend; ++i) {
    PetscInt    cols[4] = {i, (i + 1) % N, (i + N - 1) % N, (i + (rend - rstart) + 2) % N};
    PetscScalar vals[4];

    for (int k = 0; k < 4; ++k) vals[k] = RandomValue(rng) + (k == 0 ? 8.0 : 0.0);
    PetscCall(MatSetValues(ref, 1, &i, 4, cols, vals, ADD_VALUES));
    PetscCall(MatSetValues(fused, 1, &i, 4, cols, vals, ADD_VALUES));
  }
  PetscCall(Assemble(fused, ref));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* MATMPIAIJFUSED: reassemblies with new values leave the blocks current, before and after a new pattern */
static PetscErrorCode CheckMPI(PetscInt n, std::mt19937_64 &rng)
{
  Mat        A, Af;
  PetscInt64 gen;
  PetscInt   rstart, rend, N;

  PetscFunctionBeginUser;
  PetscCall(MatCreateAIJ(PETSC_COMM_WORLD, n, n, PETSC_DETERMINE, PETSC_DETERMINE, 4, nullptr, 2, nullptr, &A));
  PetscCall(MatCreate(PETSC_COMM_WORLD, &Af));
  PetscCall(MatSetSizes(Af, n, n, PETSC_DETERMINE, PETSC_DETERMINE));
  PetscCall(MatSetType(Af, MATMPIAIJFUSED));
  PetscCall(MatMPIAIJSetPreallocation(Af, 4, nullptr, 2, nullptr));
  PetscCall(MatAIJFusedSetFormat(Af, MAT_AIJFUSED_SELL)); /* the diagonal block's values are copied on every backend */
  PetscCall(AddMPIRows(Af, A, rng));
  PetscCall(MatAIJFusedGetArraysGeneration(Af, &gen));
  PetscCall(Check((PetscBool)(gen == -1), "mpi: a MATMPIAIJFUSED has generation -1 (%" PetscInt64_FMT ")", gen));
  PetscCall(CheckProducts("mpi: assembled", Af, A, PETSC_FALSE, PETSC_TRUE, rng));
  PetscCall(NewValues(Af, A, rng));
  PetscCall(CheckProducts("mpi: new values, reassembled", Af, A, PETSC_TRUE, PETSC_TRUE, rng));

  PetscCall(MatSetOption(A, MAT_NEW_NONZERO_ALLOCATION_ERR, PETSC_FALSE));
  PetscCall(MatSetOption(Af, MAT_NEW_NONZERO_ALLOCATION_ERR, PETSC_FALSE));
  PetscCall(MatGetOwnershipRange(A, &rstart, &rend));
  PetscCall(MatGetSize(A, &N, nullptr));
  for (PetscInt i = rstart; i < rend; i += 3) {
    const PetscInt    j = (i + N / 2 + 5) % N;
    const PetscScalar v = RandomValue(rng);

    PetscCall(MatSetValues(A, 1, &i, 1, &j, &v, ADD_VALUES));
    PetscCall(MatSetValues(Af, 1, &i, 1, &j, &v, ADD_VALUES));
  }
  PetscCall(Assemble(Af, A));
  PetscCall(CheckProducts("mpi: new nonzeros", Af, A, PETSC_FALSE, PETSC_TRUE, rng));
  PetscCall(NewValues(Af, A, rng));
  PetscCall(CheckProducts("mpi: new nonzeros, new values, reassembled", Af, A, PETSC_TRUE, PETSC_TRUE, rng));
  PetscCall(MatDestroy(&A));
  PetscCall(MatDestroy(&Af));
  PetscFunctionReturn(PETSC_SUCCESS);
}

int main(int argc, char **argv)
{
  PetscInt                n = 300;
  PetscMPIInt             rank, size;
  std::vector<PetscInt64> seen;

  PetscFunctionBeginUser;
  PetscCall(PetscInitialize(&argc, &argv, nullptr, help));
  PetscCall(FusedKSPInitializePackage());
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscCall(PetscOptionsGetInt(nullptr, nullptr, "-n", &n, nullptr));
  PetscCheck(n >= 10, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-n %" PetscInt_FMT ": at least 10 rows", n);
  std::mt19937_64 rng(20261122 + 7919 * (unsigned)rank);

  for (int f = MAT_AIJFUSED_CSR; f <= MAT_AIJFUSED_AUTO; ++f) PetscCall(CheckSeq(n, (MatAIJFusedFormat)f, rng, seen));
  std::sort(seen.begin(), seen.end());
  PetscCall(Check((PetscBool)(std::adjacent_find(seen.begin(), seen.end()) == seen.end()), "seq: the %zu generations of the copies are distinct", seen.size()));
  if (size > 1) PetscCall(CheckMPI(n, rng));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "test_assembly: %s\n", check_failures ? "FAIL" : "PASS"));
  PetscCall(PetscFinalize());
  return check_failures ? 1 : 0;
}
