static char help[] = "Checks the operations of MATSEQAIJFUSED against MATSEQAIJ: MatMult, MatMultAdd (y != z and y == z),\n\
MatResidual (with MatMultAdd one kernel on a device backend), MatMultTranspose, MatMultTransposeAdd, MatGetDiagonal, and MatMult after MatScale, MatShift and a change of\n\
values, in each device format (csr, sell, auto).  Random matrices (seeded; values in [-1, 1], never 0)\n\
with short rows (0..6 entries, some rows without a diagonal entry) and long rows (20..70), of several\n\
sizes; outputs are filled with NaN before each product; vectors must agree to 1e-12 relative to their\n\
largest entry.  With -fused_backend cuda or kokkos the backend counters must show the device path (kernels, no\n\
host->device copy once the matrix is on the device).\n\
Options:\n\
  -sizes <0,1,31,33,1000,100003>: numbers of rows\n\n";

#include <fusedksp.h>
#include "check.h"
#include <math.h>

#define VEC_RTOL 1e-12

typedef struct {
  PetscRandom rnd;
  PetscBool   device; /* the backend runs the products with its own kernels (cuda, kokkos) */
} Ctx;

/* A random value in [-1, 1] that is not 0 */
static PetscErrorCode RandomValue(Ctx *ctx, PetscScalar *v)
{
  PetscFunctionBeginUser;
  do PetscCall(PetscRandomGetValue(ctx->rnd, v));
  while (*v == 0);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The same random n x n matrix as MATSEQAIJ (ref) and MATSEQAIJFUSED (fused): row i has minlen..maxlen
   entries in random columns; its diagonal entry unless `nodiag` and i % 7 == 3                      */
static PetscErrorCode RandomMatrices(Ctx *ctx, PetscInt n, PetscInt minlen, PetscInt maxlen, PetscBool nodiag, Mat *ref, Mat *fused)
{
  PetscInt   *nnz, cols[128];
  PetscScalar vals[128], r;
  const char *types[2] = {MATSEQAIJ, MATSEQAIJFUSED};
  Mat         M[2];

  PetscFunctionBeginUser;
  PetscCall(PetscMalloc1(n + 1, &nnz));
  for (PetscInt i = 0; i < n; ++i) {
    PetscCall(PetscRandomGetValue(ctx->rnd, &r));
    nnz[i] = PetscMin(n - ((nodiag && i % 7 == 3) ? 1 : 0), minlen + (PetscInt)((maxlen - minlen + 1) * (0.5 * (r + 1.0))) % (maxlen - minlen + 1));
  }
  for (int k = 0; k < 2; ++k) {
    PetscCall(MatCreate(PETSC_COMM_SELF, &M[k]));
    PetscCall(MatSetSizes(M[k], n, n, n, n));
    PetscCall(MatSetType(M[k], types[k]));
    PetscCall(MatSeqAIJSetPreallocation(M[k], 0, nnz));
  }
  for (PetscInt i = 0; i < n; ++i) {
    PetscInt len = 0;
    if (nnz[i] && !(nodiag && i % 7 == 3)) cols[len++] = i;
    while (len < nnz[i]) {
      PetscInt  c;
      PetscBool dup = PETSC_FALSE;
      PetscCall(PetscRandomGetValue(ctx->rnd, &r));
      c = PetscMin(n - 1, (PetscInt)(0.5 * (r + 1.0) * n));
      if (nodiag && i % 7 == 3 && c == i) continue;
      for (PetscInt j = 0; j < len; ++j) dup = (PetscBool)(dup || cols[j] == c);
      if (!dup) cols[len++] = c;
    }
    for (PetscInt j = 0; j < len; ++j) PetscCall(RandomValue(ctx, &vals[j]));
    for (int k = 0; k < 2; ++k) PetscCall(MatSetValues(M[k], 1, &i, len, cols, vals, INSERT_VALUES));
  }
  for (int k = 0; k < 2; ++k) {
    PetscCall(MatAssemblyBegin(M[k], MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(M[k], MAT_FINAL_ASSEMBLY));
  }
  PetscCall(PetscFree(nnz));
  *ref   = M[0];
  *fused = M[1];
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* max |a - b| <= VEC_RTOL max |b| (NaN fails) */
static PetscErrorCode CheckVectors(Vec fused, Vec ref, const char *what, PetscInt n, const char *format)
{
  Vec       d;
  PetscReal diff, size;

  PetscFunctionBeginUser;
  PetscCall(VecDuplicate(ref, &d));
  PetscCall(VecWAXPY(d, -1.0, ref, fused));
  PetscCall(VecNorm(d, NORM_INFINITY, &diff));
  PetscCall(VecNorm(ref, NORM_INFINITY, &size));
  PetscCall(Check((PetscBool)(diff <= VEC_RTOL * size && !PetscIsInfOrNanReal(diff)), "%s n=%" PetscInt_FMT " format=%s (difference %g of %g)", what, n, format, (double)diff, (double)size));
  PetscCall(VecDestroy(&d));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The fused vector of the same values as the standard vector `ref` */
static PetscErrorCode FusedCopy(Mat fused, Vec ref, Vec *v)
{
  PetscFunctionBeginUser;
  PetscCall(MatCreateVecs(fused, v, NULL));
  PetscCall(VecCopy(ref, *v));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Every operation on one matrix pair, in one format */
static PetscErrorCode CheckOperations(Ctx *ctx, PetscInt n, PetscInt minlen, PetscInt maxlen, PetscBool nodiag, MatAIJFusedFormat format)
{
  const char *names[] = {"csr", "sell", "auto"};
  Mat         A, Af;
  Vec         x, z, y, xf, zf, yf;
  PetscInt64  l0, d0, h0, l1, d1, h1;
  PetscInt    row = n / 2, col;
  PetscScalar v;

  PetscFunctionBeginUser;
  PetscCall(RandomMatrices(ctx, n, minlen, maxlen, nodiag, &A, &Af));
  PetscCall(MatAIJFusedSetFormat(Af, format));
  PetscCall(MatCreateVecs(A, &x, &y));
  PetscCall(VecDuplicate(y, &z));
  PetscCall(VecSetRandom(x, ctx->rnd));
  PetscCall(VecSetRandom(z, ctx->rnd));
  PetscCall(FusedCopy(Af, x, &xf));
  PetscCall(FusedCopy(Af, z, &zf));
  PetscCall(MatCreateVecs(Af, NULL, &yf));

#define POISON() PetscCall(VecSet(yf, NAN))
  /* before any product: the diagonal on the host, no copy of the matrix to the backend */
  POISON();
  PetscCall(FusedKSPGetBackendCounters(&l0, &d0, &h0));
  PetscCall(MatGetDiagonal(Af, yf));
  PetscCall(FusedKSPGetBackendCounters(&l1, &d1, &h1));
  PetscCall(MatGetDiagonal(A, y));
  PetscCall(CheckVectors(yf, y, "MatGetDiagonal before a product", n, names[format]));
  if (ctx->device && n)
    PetscCall(Check((PetscBool)(l1 == l0 && h1 == h0), "MatGetDiagonal n=%" PetscInt_FMT " format=%s before a product: no kernel, no upload (%" PetscInt64_FMT " kernels, %" PetscInt64_FMT " uploads)", n, names[format], l1 - l0, h1 - h0));

  POISON();
  PetscCall(MatMult(A, x, y));
  PetscCall(MatMult(Af, xf, yf));
  PetscCall(CheckVectors(yf, y, "MatMult", n, names[format]));

  PetscCall(FusedKSPGetBackendCounters(&l0, &d0, &h0));
  PetscCall(MatMult(Af, xf, yf));
  PetscCall(FusedKSPGetBackendCounters(&l1, &d1, &h1));
  if (ctx->device && n)
    PetscCall(Check((PetscBool)(l1 - l0 == 1 && h1 == h0 && d1 == d0), "MatMult n=%" PetscInt_FMT " format=%s: one kernel, no copy (%" PetscInt64_FMT " kernels, %" PetscInt64_FMT " + %" PetscInt64_FMT " copies)", n, names[format], l1 - l0, h1 - h0,
                    d1 - d0));

  POISON();
  PetscCall(MatMultAdd(A, x, z, y));
  PetscCall(MatMultAdd(Af, xf, zf, yf));
  PetscCall(CheckVectors(yf, y, "MatMultAdd", n, names[format]));
  PetscCall(VecCopy(z, y));
  PetscCall(VecCopy(zf, yf));
  PetscCall(MatMultAdd(A, x, y, y));
  PetscCall(MatMultAdd(Af, xf, yf, yf));
  PetscCall(CheckVectors(yf, y, "MatMultAdd y == z", n, names[format]));
  PetscCall(FusedKSPGetBackendCounters(&l0, &d0, &h0));
  PetscCall(MatMultAdd(Af, xf, zf, yf));
  PetscCall(FusedKSPGetBackendCounters(&l1, &d1, &h1));
  if (ctx->device && n)
    PetscCall(Check((PetscBool)(l1 - l0 == 1 && h1 == h0 && d1 == d0), "MatMultAdd n=%" PetscInt_FMT " format=%s: one kernel, no copy (%" PetscInt64_FMT " kernels, %" PetscInt64_FMT " + %" PetscInt64_FMT " copies)", n, names[format], l1 - l0,
                    h1 - h0, d1 - d0));

  /* r = b - A x (PETSc's default MatResidual() of MATSEQAIJ overwrites b when r is b: not compared) */
  POISON();
  PetscCall(MatResidual(A, z, x, y));
  PetscCall(MatResidual(Af, zf, xf, yf));
  PetscCall(CheckVectors(yf, y, "MatResidual", n, names[format]));
  PetscCall(FusedKSPGetBackendCounters(&l0, &d0, &h0));
  PetscCall(MatResidual(Af, zf, xf, yf));
  PetscCall(FusedKSPGetBackendCounters(&l1, &d1, &h1));
  if (ctx->device && n)
    PetscCall(Check((PetscBool)(l1 - l0 == 1 && h1 == h0 && d1 == d0), "MatResidual n=%" PetscInt_FMT " format=%s: one kernel, no copy (%" PetscInt64_FMT " kernels, %" PetscInt64_FMT " + %" PetscInt64_FMT " copies)", n, names[format], l1 - l0,
                    h1 - h0, d1 - d0));

  POISON();
  PetscCall(MatMultTranspose(A, x, y));
  PetscCall(MatMultTranspose(Af, xf, yf));
  PetscCall(CheckVectors(yf, y, "MatMultTranspose", n, names[format]));
  POISON();
  PetscCall(MatMultTransposeAdd(A, x, z, y));
  PetscCall(MatMultTransposeAdd(Af, xf, zf, yf));
  PetscCall(CheckVectors(yf, y, "MatMultTransposeAdd", n, names[format]));

  POISON();
  PetscCall(MatGetDiagonal(A, y));
  PetscCall(MatGetDiagonal(Af, yf));
  PetscCall(CheckVectors(yf, y, "MatGetDiagonal", n, names[format]));

  PetscCall(MatScale(A, 2.5));
  PetscCall(MatScale(Af, 2.5));
  POISON();
  PetscCall(MatMult(A, x, y));
  PetscCall(MatMult(Af, xf, yf));
  PetscCall(CheckVectors(yf, y, "MatMult after MatScale", n, names[format]));

  PetscCall(MatShift(A, 1.5));
  PetscCall(MatShift(Af, 1.5));
  POISON();
  PetscCall(MatMult(A, x, y));
  PetscCall(MatMult(Af, xf, yf));
  PetscCall(CheckVectors(yf, y, "MatMult after MatShift", n, names[format]));
  POISON();
  PetscCall(MatMultTranspose(A, x, y));
  PetscCall(MatMultTranspose(Af, xf, yf));
  PetscCall(CheckVectors(yf, y, "MatMultTranspose after MatShift", n, names[format]));

  if (n) { /* new values, same pattern: the values-only refresh */
    col = row;
    PetscCall(RandomValue(ctx, &v));
    PetscCall(MatSetValues(A, 1, &row, 1, &col, &v, ADD_VALUES));
    PetscCall(MatSetValues(Af, 1, &row, 1, &col, &v, ADD_VALUES));
    PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyBegin(Af, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(Af, MAT_FINAL_ASSEMBLY));
    POISON();
    PetscCall(MatMult(A, x, y));
    PetscCall(MatMult(Af, xf, yf));
    PetscCall(CheckVectors(yf, y, "MatMult after new values", n, names[format]));
  }
#undef POISON
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&y));
  PetscCall(VecDestroy(&z));
  PetscCall(VecDestroy(&xf));
  PetscCall(VecDestroy(&yf));
  PetscCall(VecDestroy(&zf));
  PetscCall(MatDestroy(&A));
  PetscCall(MatDestroy(&Af));
  PetscFunctionReturn(PETSC_SUCCESS);
}

int main(int argc, char **argv)
{
  PetscInt    sizes[16] = {0, 1, 31, 33, 1000, 100003}, nsizes = 16;
  PetscBool   set;
  const char *backend;
  Ctx         ctx;

  PetscFunctionBeginUser;
  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(FusedKSPInitializePackage());
  PetscCall(PetscOptionsGetIntArray(NULL, NULL, "-sizes", sizes, &nsizes, &set));
  if (!set) nsizes = 6;
  PetscCall(FusedKSPGetBackendName(&backend));
  PetscCall(PetscStrcmp(backend, "host", &ctx.device));
  ctx.device = ctx.device ? PETSC_FALSE : PETSC_TRUE;
  PetscCall(PetscRandomCreate(PETSC_COMM_SELF, &ctx.rnd));
  PetscCall(PetscRandomSetInterval(ctx.rnd, -1.0, 1.0));
  PetscCall(PetscRandomSetSeed(ctx.rnd, 20261121));
  PetscCall(PetscRandomSeed(ctx.rnd));
  for (PetscInt s = 0; s < nsizes; ++s)
    for (int f = MAT_AIJFUSED_CSR; f <= MAT_AIJFUSED_AUTO; ++f) {
      PetscCall(CheckOperations(&ctx, sizes[s], 0, 6, PETSC_TRUE, (MatAIJFusedFormat)f));
      PetscCall(CheckOperations(&ctx, sizes[s], 20, 70, PETSC_FALSE, (MatAIJFusedFormat)f));
    }
  PetscCall(PetscRandomDestroy(&ctx.rnd));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "backend: %s\ntest_matops: %s\n", backend, check_failures ? "FAIL" : "PASS"));
  PetscCall(PetscFinalize());
  return check_failures ? 1 : 0;
}
