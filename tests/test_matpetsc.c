static char help[] = "Checks that PETSc's own matrix operations work on MATAIJFUSED (seq and MPI) as they do on MATAIJ: each\n\
operation runs on a fused matrix and on the same MATAIJ one, and the results must agree (products with a random\n\
vector, to 1e-12 relative) and have the expected type (fused where the result is used in products).  Covers\n\
MatDuplicate, MatConvert to and from AIJ (initial, reuse, in place), to and from dense/BAIJ, MatSetType() of an\n\
assembled AIJ matrix, MatCopy, MatAXPY with every nonzero pattern, MatEliminateZeros, MatHeaderReplace/Merge,\n\
MatTranspose (all reuse modes), MatProduct (AB, AtB, ABt, PtAP, RARt, ABC with AIJ operands, AB/AtB/ABt with dense,\n\
PtAP with MAIJ), MatCreateSubMatrix(ces), MatIncreaseOverlap, MatGetDiagonalBlock, MatZeroRows(Columns),\n\
MatDiagonalScale, MatSetValuesCOO, MatGetRowIJ, MatCreateGraph, MatView/MatLoad (binary),\n\
MatCreateMPIMatConcatenateSeqMat, and solves with PCGAMG, PCILU/PCBJACOBI, PCASM on the fused types.\n\
Options:\n\
  -n <12>: the matrix is the 2D n x n 5-point operator with a nonsymmetric perturbation\n\
  -expect_backend_products <bool>: also check the sparse products of aijfused on the backend (AB, AtB, PtAP; one\n\
     process): against MATAIJ's, random operands, reuse, and that they ran on the backend (true) or not (false)\n\n";

#include <petscksp.h>
#include <stdio.h>
#include <unistd.h>
#include <fusedksp.h>
#include "check.h"

#define RTOL 1e-12

/* The test matrix: 2D 5-point Laplacian on n x n plus a small nonsymmetric convection term, in `type` */
static PetscErrorCode Operator(MPI_Comm comm, PetscInt n, MatType type, Mat *A)
{
  PetscInt rstart, rend;

  PetscFunctionBeginUser;
  PetscCall(MatCreate(comm, A));
  PetscCall(MatSetSizes(*A, PETSC_DECIDE, PETSC_DECIDE, n * n, n * n));
  PetscCall(MatSetType(*A, type));
  PetscCall(MatSeqAIJSetPreallocation(*A, 5, NULL));
  PetscCall(MatMPIAIJSetPreallocation(*A, 5, NULL, 2, NULL));
  PetscCall(MatGetOwnershipRange(*A, &rstart, &rend));
  for (PetscInt row = rstart; row < rend; ++row) {
    const PetscInt i = row / n, j = row % n;
    PetscInt       cols[5], k     = 0;
    PetscScalar    vals[5];
    cols[k] = row, vals[k++] = 4.0 + 0.01 * (row % 7);
    if (i > 0) cols[k] = row - n, vals[k++] = -1.0 - 0.1;
    if (i < n - 1) cols[k] = row + n, vals[k++] = -1.0 + 0.1;
    if (j > 0) cols[k] = row - 1, vals[k++] = -1.0 - 0.05;
    if (j < n - 1) cols[k] = row + 1, vals[k++] = -1.0 + 0.05;
    PetscCall(MatSetValues(*A, 1, &row, k, cols, vals, INSERT_VALUES));
  }
  PetscCall(MatAssemblyBegin(*A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(*A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* A rectangular N x (N/2) interpolation-like matrix P (for PtAP, RARt^T, AB) in `type` */
static PetscErrorCode Prolongation(MPI_Comm comm, PetscInt N, MatType type, Mat *P)
{
  PetscInt rstart, rend, nc = N / 2;

  PetscFunctionBeginUser;
  PetscCall(MatCreate(comm, P));
  PetscCall(MatSetSizes(*P, PETSC_DECIDE, PETSC_DECIDE, N, nc));
  PetscCall(MatSetType(*P, type));
  PetscCall(MatSeqAIJSetPreallocation(*P, 2, NULL));
  PetscCall(MatMPIAIJSetPreallocation(*P, 2, NULL, 2, NULL));
  PetscCall(MatGetOwnershipRange(*P, &rstart, &rend));
  for (PetscInt row = rstart; row < rend; ++row) {
    PetscInt    cols[2] = {PetscMin(row / 2, nc - 1), PetscMin(row / 2 + 1, nc - 1)};
    PetscScalar vals[2] = {0.75, 0.25};
    PetscCall(MatSetValues(*P, 1, &row, cols[0] == cols[1] ? 1 : 2, cols, vals, ADD_VALUES));
  }
  PetscCall(MatAssemblyBegin(*P, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(*P, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static const char *TypeName(Mat M)
{
  MatType type = NULL;
  return MatGetType(M, &type) == PETSC_SUCCESS && type ? type : "none";
}

static PetscErrorCode IsFused(Mat M, PetscBool *fused)
{
  PetscFunctionBeginUser;
  PetscCall(PetscObjectTypeCompareAny((PetscObject)M, fused, MATSEQAIJFUSED, MATMPIAIJFUSED, ""));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Whether F x == R x for a random x (F's product with the vectors F creates: fused ones for a fused F), and
   whether F is fused when `fused` says it must be (PETSC_BOOL3_UNKNOWN: either) */
static PetscErrorCode Agree(Mat F, Mat R, PetscBool3 fused, const char *what)
{
  Vec       xf, yf, xr, yr;
  PetscReal err, ref;
  PetscBool isfused, typeok;
  PetscInt  fm, fn, rm, rn;

  PetscFunctionBeginUser;
  PetscCall(MatGetSize(F, &fm, &fn));
  PetscCall(MatGetSize(R, &rm, &rn));
  if (fm != rm || fn != rn) {
    PetscCall(Check(PETSC_FALSE, "%s: sizes %" PetscInt_FMT "x%" PetscInt_FMT " and %" PetscInt_FMT "x%" PetscInt_FMT, what, fm, fn, rm, rn));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(MatCreateVecs(F, &xf, &yf));
  PetscCall(MatCreateVecs(R, &xr, &yr));
  PetscCall(VecSetRandom(xr, NULL));
  PetscCall(VecShift(xr, 0.25));
  PetscCall(VecCopy(xr, xf));
  PetscCall(VecSet(yf, NAN));
  PetscCall(MatMult(F, xf, yf));
  PetscCall(MatMult(R, xr, yr));
  PetscCall(VecNorm(yr, NORM_INFINITY, &ref));
  PetscCall(VecAXPY(yf, -1.0, yr));
  PetscCall(VecNorm(yf, NORM_INFINITY, &err));
  PetscCall(IsFused(F, &isfused));
  typeok = fused == PETSC_BOOL3_UNKNOWN || (fused == PETSC_BOOL3_TRUE) == isfused ? PETSC_TRUE : PETSC_FALSE;
  PetscCall(Check((PetscBool)(err <= RTOL * PetscMax(ref, 1.0) && typeok), "%s (%s; product error %g)", what, TypeName(F), (double)err));
  PetscCall(VecDestroy(&xf));
  PetscCall(VecDestroy(&yf));
  PetscCall(VecDestroy(&xr));
  PetscCall(VecDestroy(&yr));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The device products of F (fused vectors) against R's: MatMultTranspose, MatMultAdd and MatMultTransposeAdd
   (into a third vector and in place), MatGetDiagonal for square matrices; outputs poisoned with NaN first */
static PetscErrorCode AgreeProducts(Mat F, Mat R, const char *what)
{
  Vec       xf[2], yf[2], zf[2], xr[2], yr[2], zr[2]; /* [0]: the column space (x of A x), [1]: the row space */
  PetscReal err, ref;
  PetscInt  m, n;

  PetscFunctionBeginUser;
  PetscCall(MatGetSize(F, &m, &n));
  for (int k = 0; k < 2; ++k) {
    Vec *vf = k == 0 ? xf : yf, *vr = k == 0 ? xr : yr;
    PetscCall(MatCreateVecs(F, &vf[0], &vf[1]));
    PetscCall(MatCreateVecs(R, &vr[0], &vr[1]));
  }
  PetscCall(MatCreateVecs(F, &zf[0], &zf[1]));
  PetscCall(MatCreateVecs(R, &zr[0], &zr[1]));
  for (int s = 0; s < 2; ++s) {
    PetscCall(VecSetRandom(xr[s], NULL));
    PetscCall(VecShift(xr[s], 0.5));
    PetscCall(VecCopy(xr[s], xf[s]));
    PetscCall(VecSetRandom(zr[s], NULL));
    PetscCall(VecCopy(zr[s], zf[s]));
  }
  /* op 0: A^T x, 1: A x + z, 2: A x + y in place, 3: A^T x + z, 4: A^T x + y in place, 5: diag(A) */
  for (int op = 0; op < 6; ++op) {
    const char *names[6] = {"MatMultTranspose", "MatMultAdd", "MatMultAdd in place", "MatMultTransposeAdd", "MatMultTransposeAdd in place", "MatGetDiagonal"};
    const int   in = (op == 0 || op == 3 || op == 4) ? 1 : 0, out = 1 - in; /* spaces of the input and the output */
    if (op == 5 && m != n) continue;
    PetscCall(VecSet(yf[out], NAN));
    if (op == 2 || op == 4) {
      PetscCall(VecCopy(zr[out], yf[out]));
      PetscCall(VecCopy(zr[out], yr[out]));
    }
    switch (op) {
    case 0:
      PetscCall(MatMultTranspose(F, xf[in], yf[out]));
      PetscCall(MatMultTranspose(R, xr[in], yr[out]));
      break;
    case 1:
      PetscCall(MatMultAdd(F, xf[in], zf[out], yf[out]));
      PetscCall(MatMultAdd(R, xr[in], zr[out], yr[out]));
      break;
    case 2:
      PetscCall(MatMultAdd(F, xf[in], yf[out], yf[out]));
      PetscCall(MatMultAdd(R, xr[in], yr[out], yr[out]));
      break;
    case 3:
      PetscCall(MatMultTransposeAdd(F, xf[in], zf[out], yf[out]));
      PetscCall(MatMultTransposeAdd(R, xr[in], zr[out], yr[out]));
      break;
    case 4:
      PetscCall(MatMultTransposeAdd(F, xf[in], yf[out], yf[out]));
      PetscCall(MatMultTransposeAdd(R, xr[in], yr[out], yr[out]));
      break;
    case 5:
      PetscCall(MatGetDiagonal(F, yf[out]));
      PetscCall(MatGetDiagonal(R, yr[out]));
      break;
    }
    PetscCall(VecNorm(yr[out], NORM_INFINITY, &ref));
    PetscCall(VecAXPY(yf[out], -1.0, yr[out]));
    PetscCall(VecNorm(yf[out], NORM_INFINITY, &err));
    PetscCall(Check((PetscBool)(err <= RTOL * PetscMax(ref, 1.0)), "%s: %s on fused vectors (%s; error %g)", what, names[op], TypeName(F), (double)err));
  }
  for (int s = 0; s < 2; ++s) {
    PetscCall(VecDestroy(&xf[s]));
    PetscCall(VecDestroy(&yf[s]));
    PetscCall(VecDestroy(&zf[s]));
    PetscCall(VecDestroy(&xr[s]));
    PetscCall(VecDestroy(&yr[s]));
    PetscCall(VecDestroy(&zr[s]));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Whether F stores as many entries as R (over all ranks) */
static PetscErrorCode SameNonzeros(Mat F, Mat R, const char *what)
{
  MatInfo fi, ri;

  PetscFunctionBeginUser;
  PetscCall(MatGetInfo(F, MAT_GLOBAL_SUM, &fi));
  PetscCall(MatGetInfo(R, MAT_GLOBAL_SUM, &ri));
  PetscCall(Check((PetscBool)(fi.nz_used == ri.nz_used), "%s: %g stored entries, as MATAIJ's %g", what, fi.nz_used, ri.nz_used));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode Conversions(MPI_Comm comm, PetscInt n, Mat F, Mat R)
{
  Mat B, C, D;

  PetscFunctionBeginUser;
  PetscCall(MatDuplicate(F, MAT_COPY_VALUES, &B));
  PetscCall(Agree(B, R, PETSC_BOOL3_TRUE, "MatDuplicate"));
  PetscCall(MatConvert(F, MATAIJ, MAT_INITIAL_MATRIX, &C));
  PetscCall(Agree(C, R, PETSC_BOOL3_FALSE, "MatConvert fused -> aij, initial"));
  PetscCall(MatScale(B, 2.0));
  PetscCall(MatConvert(B, MATAIJ, MAT_REUSE_MATRIX, &C));
  PetscCall(MatScale(C, 0.5));
  PetscCall(Agree(C, R, PETSC_BOOL3_FALSE, "MatConvert fused -> aij, reuse"));
  PetscCall(MatConvert(C, MATAIJFUSED, MAT_INITIAL_MATRIX, &D));
  PetscCall(Agree(D, R, PETSC_BOOL3_TRUE, "MatConvert aij -> aijfused, initial"));
  PetscCall(MatConvert(C, MATAIJFUSED, MAT_REUSE_MATRIX, &D));
  PetscCall(Agree(D, R, PETSC_BOOL3_TRUE, "MatConvert aij -> aijfused, reuse"));
  PetscCall(MatConvert(D, MATAIJ, MAT_INPLACE_MATRIX, &D));
  PetscCall(Agree(D, R, PETSC_BOOL3_FALSE, "MatConvert fused -> aij, in place"));
  PetscCall(MatConvert(D, MATAIJFUSED, MAT_INPLACE_MATRIX, &D));
  PetscCall(Agree(D, R, PETSC_BOOL3_TRUE, "MatConvert aij -> aijfused, in place"));
  PetscCall(MatSetType(C, MATAIJFUSED));
  PetscCall(Agree(C, R, PETSC_BOOL3_TRUE, "MatSetType(assembled aij, aijfused) keeps the values"));
  PetscCall(MatDestroy(&D));
  PetscCall(MatConvert(F, MATDENSE, MAT_INITIAL_MATRIX, &D));
  PetscCall(Agree(D, R, PETSC_BOOL3_FALSE, "MatConvert fused -> dense"));
  PetscCall(MatConvert(D, MATAIJFUSED, MAT_INPLACE_MATRIX, &D));
  PetscCall(Agree(D, R, PETSC_BOOL3_TRUE, "MatConvert dense -> aijfused, in place"));
  PetscCall(SameNonzeros(D, R, "MatConvert dense -> aijfused, in place"));
  PetscCall(MatDestroy(&D));
  { /* from other types, initial and reuse: the matrix MATAIJ gets, made fused (a dense matrix keeps its nonzeros only) */
    Mat Dd, Fd;

    PetscCall(MatConvert(F, MATDENSE, MAT_INITIAL_MATRIX, &Dd));
    PetscCall(MatConvert(Dd, MATAIJFUSED, MAT_INITIAL_MATRIX, &Fd));
    PetscCall(Agree(Fd, R, PETSC_BOOL3_TRUE, "MatConvert dense -> aijfused, initial"));
    PetscCall(SameNonzeros(Fd, R, "MatConvert dense -> aijfused, initial"));
    PetscCall(MatScale(Dd, 2.0));
    PetscCall(MatConvert(Dd, MATAIJFUSED, MAT_REUSE_MATRIX, &Fd));
    PetscCall(MatScale(Fd, 0.5));
    PetscCall(Agree(Fd, R, PETSC_BOOL3_TRUE, "MatConvert dense -> aijfused, reuse"));
    PetscCall(MatDestroy(&Fd));
    PetscCall(MatDestroy(&Dd));
    PetscCall(MatConvert(F, MATBAIJ, MAT_INITIAL_MATRIX, &D));
    PetscCall(Agree(D, R, PETSC_BOOL3_FALSE, "MatConvert fused -> baij"));
    PetscCall(MatConvert(D, MATAIJFUSED, MAT_INITIAL_MATRIX, &Fd));
    PetscCall(Agree(Fd, R, PETSC_BOOL3_TRUE, "MatConvert baij -> aijfused, initial"));
    PetscCall(SameNonzeros(Fd, R, "MatConvert baij -> aijfused, initial"));
    PetscCall(MatDestroy(&Fd));
    PetscCall(MatDestroy(&D));
  }
  PetscCall(MatDuplicate(B, MAT_COPY_VALUES, &D));
  { /* as from MATAIJ (PETSc's AIJ converters): sequential ones refuse a matrix not known to be symmetric; the upper triangle is kept */
    Mat            Ra;
    PetscBool      assembled;
    PetscErrorCode err_fused, err_aij;

    PetscCall(MatDuplicate(R, MAT_COPY_VALUES, &Ra));
    PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
    err_fused = MatConvert(D, MATSBAIJ, MAT_INPLACE_MATRIX, &D);
    err_aij   = MatConvert(Ra, MATSBAIJ, MAT_INPLACE_MATRIX, &Ra);
    PetscCall(PetscPopErrorHandler());
    PetscCall(Check((PetscBool)(err_fused == err_aij), "MatConvert fused -> sbaij of a matrix not known to be symmetric: error %d, as aij's %d", (int)err_fused, (int)err_aij));
    if (err_fused) {
      PetscCall(MatSetOption(D, MAT_SYMMETRIC, PETSC_TRUE));
      PetscCall(MatConvert(D, MATSBAIJ, MAT_INPLACE_MATRIX, &D));
    }
    PetscCall(MatAssembled(D, &assembled));
    PetscCall(Check(assembled, "MatConvert fused -> sbaij, in place (upper triangle)"));
    PetscCall(MatDestroy(&Ra));
  }
  PetscCall(MatDestroy(&D));
  PetscCall(MatCopy(R, B, SAME_NONZERO_PATTERN));
  PetscCall(Agree(B, R, PETSC_BOOL3_TRUE, "MatCopy aij -> fused, same pattern"));
  PetscCall(MatScale(B, 3.0));
  PetscCall(MatCopy(F, B, DIFFERENT_NONZERO_PATTERN));
  PetscCall(Agree(B, R, PETSC_BOOL3_TRUE, "MatCopy fused -> fused, different pattern"));
  /* header replacement and merge: the matrix in the handle changes, its fused data must follow it */
  PetscCall(MatDuplicate(F, MAT_COPY_VALUES, &D));
  PetscCall(MatScale(B, 5.0));
  PetscCall(MatHeaderReplace(B, &D));
  PetscCall(MatScale(B, 1.0));
  PetscCall(Agree(B, R, PETSC_BOOL3_TRUE, "MatHeaderReplace fused <- fused"));
  PetscCall(MatDuplicate(F, MAT_COPY_VALUES, &D));
  PetscCall(MatHeaderMerge(B, &D));
  PetscCall(MatShift(B, 0.0));
  PetscCall(Agree(B, R, PETSC_BOOL3_TRUE, "MatHeaderMerge fused <- fused"));
  PetscCall(MatConvert(R, MATAIJ, MAT_INITIAL_MATRIX, &D));
  PetscCall(MatHeaderReplace(B, &D));
  PetscCall(Agree(B, R, PETSC_BOOL3_FALSE, "MatHeaderReplace fused <- aij"));
  PetscCall(MatDestroy(&B));
  PetscCall(MatDestroy(&C));
  (void)comm;
  (void)n;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Entries of both blocks (on 2+ ranks) set to zero, then MatEliminateZeros(): the MPI type compresses the rows of its
   blocks in place, which changes their nonzero states but not the matrix's (PCGAMG's prolongator filter does this) */
static PetscErrorCode EliminateZeros(PetscInt n, Mat F, Mat R)
{
  Mat         B, Rb, M[2];
  PetscInt    rstart, rend;
  PetscScalar zero = 0.0;

  PetscFunctionBeginUser;
  PetscCall(MatDuplicate(F, MAT_COPY_VALUES, &B));
  PetscCall(MatDuplicate(R, MAT_COPY_VALUES, &Rb));
  M[0] = B;
  M[1] = Rb;
  PetscCall(MatGetOwnershipRange(B, &rstart, &rend));
  for (int k = 0; k < 2; ++k) {
    PetscCall(MatSetOption(M[k], MAT_NO_OFF_PROC_ENTRIES, PETSC_TRUE));
    for (PetscInt row = rstart; row < rend; ++row) {
      const PetscInt up = row - n, down = row + n, right = row + 1;
      if (row % 3 == 0 && up >= 0) PetscCall(MatSetValues(M[k], 1, &row, 1, &up, &zero, INSERT_VALUES));
      if (row % 3 == 1 && down < n * n) PetscCall(MatSetValues(M[k], 1, &row, 1, &down, &zero, INSERT_VALUES));
      if (row % 2 == 0 && right % n) PetscCall(MatSetValues(M[k], 1, &row, 1, &right, &zero, INSERT_VALUES));
    }
    PetscCall(MatAssemblyBegin(M[k], MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(M[k], MAT_FINAL_ASSEMBLY));
    PetscCall(MatSetOption(M[k], MAT_NO_OFF_PROC_ENTRIES, PETSC_FALSE));
  }
  PetscCall(Agree(B, Rb, PETSC_BOOL3_TRUE, "entries set to zero"));
  PetscCall(MatEliminateZeros(B, PETSC_TRUE));
  PetscCall(MatEliminateZeros(Rb, PETSC_TRUE));
  PetscCall(Agree(B, Rb, PETSC_BOOL3_TRUE, "MatEliminateZeros"));
  PetscCall(AgreeProducts(B, Rb, "after MatEliminateZeros"));
  PetscCall(MatDestroy(&B));
  PetscCall(MatDestroy(&Rb));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode Arithmetic(MPI_Comm comm, PetscInt n, Mat F, Mat R)
{
  Mat         B, X, Rb, Rx;
  Vec         l, r, lr, rr;
  PetscInt    rstart, rend, rows[2], nrows = 0;
  MatReuse    reuse[3] = {MAT_INITIAL_MATRIX, MAT_REUSE_MATRIX, MAT_INPLACE_MATRIX};
  const char *names[3] = {"MatTranspose initial", "MatTranspose reuse", "MatTranspose in place"};

  PetscFunctionBeginUser;
  PetscCall(EliminateZeros(n, F, R));
  /* MatAXPY with an identity-like X of a smaller pattern, the same pattern and a different one */
  PetscCall(MatDuplicate(F, MAT_COPY_VALUES, &B));
  PetscCall(MatDuplicate(R, MAT_COPY_VALUES, &Rb));
  PetscCall(MatCreateConstantDiagonal(comm, PETSC_DECIDE, PETSC_DECIDE, n * n, n * n, 1.0, &Rx));
  PetscCall(MatConvert(Rx, MATAIJFUSED, MAT_INITIAL_MATRIX, &X));
  PetscCall(MatDestroy(&Rx));
  PetscCall(MatConvert(X, MATAIJ, MAT_INITIAL_MATRIX, &Rx));
  PetscCall(MatAXPY(B, 2.0, X, SUBSET_NONZERO_PATTERN));
  PetscCall(MatAXPY(Rb, 2.0, Rx, SUBSET_NONZERO_PATTERN));
  PetscCall(Agree(B, Rb, PETSC_BOOL3_TRUE, "MatAXPY subset pattern"));
  PetscCall(MatAXPY(B, -1.0, F, SAME_NONZERO_PATTERN));
  PetscCall(MatAXPY(Rb, -1.0, R, SAME_NONZERO_PATTERN));
  PetscCall(Agree(B, Rb, PETSC_BOOL3_TRUE, "MatAXPY same pattern"));
  PetscCall(MatAXPY(X, 0.5, B, DIFFERENT_NONZERO_PATTERN)); /* X gets a new pattern through MatHeaderMerge() */
  PetscCall(MatAXPY(Rx, 0.5, Rb, DIFFERENT_NONZERO_PATTERN));
  PetscCall(MatScale(X, 2.0));
  PetscCall(MatScale(Rx, 2.0));
  PetscCall(Agree(X, Rx, PETSC_BOOL3_TRUE, "MatAXPY different pattern, then MatScale"));
  PetscCall(MatDestroy(&X));
  PetscCall(MatDestroy(&Rx));
  /* MatAXPY with patterns of which each has entries of its own (a cyclic shift by 2n + 1 against the 5-point stencil),
     the caller not knowing; then with the same pattern, not known either; the union pattern as PETSc's */
  PetscCall(MatCreateAIJ(comm, PETSC_DECIDE, PETSC_DECIDE, n * n, n * n, 1, NULL, 1, NULL, &Rx));
  PetscCall(MatGetOwnershipRange(Rx, &rstart, &rend));
  for (PetscInt row = rstart; row < rend; ++row) {
    const PetscInt    col = (row + 2 * n + 1) % (n * n);
    const PetscScalar v   = 1.0 + (PetscScalar)(row % 7);

    PetscCall(MatSetValues(Rx, 1, &row, 1, &col, &v, INSERT_VALUES));
  }
  PetscCall(MatAssemblyBegin(Rx, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(Rx, MAT_FINAL_ASSEMBLY));
  PetscCall(MatConvert(Rx, MATAIJFUSED, MAT_INITIAL_MATRIX, &X));
  PetscCall(MatAXPY(X, -1.5, B, UNKNOWN_NONZERO_PATTERN));
  PetscCall(MatAXPY(Rx, -1.5, Rb, UNKNOWN_NONZERO_PATTERN));
  PetscCall(Agree(X, Rx, PETSC_BOOL3_TRUE, "MatAXPY unknown pattern, each with entries of its own"));
  {
    MatInfo fi, ri;

    PetscCall(MatGetInfo(X, MAT_GLOBAL_SUM, &fi));
    PetscCall(MatGetInfo(Rx, MAT_GLOBAL_SUM, &ri));
    PetscCall(Check((PetscBool)(fi.nz_used == ri.nz_used), "MatAXPY unknown pattern: %g entries, PETSc's %g", (double)fi.nz_used, (double)ri.nz_used));
  }
  {
    Mat Xd, Rd;

    PetscCall(MatDuplicate(X, MAT_COPY_VALUES, &Xd));
    PetscCall(MatDuplicate(Rx, MAT_COPY_VALUES, &Rd));
    PetscCall(MatAXPY(X, 0.5, Xd, UNKNOWN_NONZERO_PATTERN));
    PetscCall(MatAXPY(Rx, 0.5, Rd, UNKNOWN_NONZERO_PATTERN));
    PetscCall(Agree(X, Rx, PETSC_BOOL3_TRUE, "MatAXPY unknown pattern, the same"));
    PetscCall(MatDestroy(&Xd));
    PetscCall(MatDestroy(&Rd));
  }
  PetscCall(MatDestroy(&X));
  PetscCall(MatDestroy(&Rx));
  /* MatDiagonalScale, MatZeroRows, MatZeroRowsColumns */
  PetscCall(MatCreateVecs(B, &r, &l));
  PetscCall(MatCreateVecs(Rb, &rr, &lr));
  PetscCall(VecSetRandom(lr, NULL));
  PetscCall(VecShift(lr, 1.0));
  PetscCall(VecSetRandom(rr, NULL));
  PetscCall(VecShift(rr, 1.0));
  PetscCall(VecCopy(lr, l));
  PetscCall(VecCopy(rr, r));
  PetscCall(MatDiagonalScale(B, l, r));
  PetscCall(MatDiagonalScale(Rb, lr, rr));
  PetscCall(Agree(B, Rb, PETSC_BOOL3_TRUE, "MatDiagonalScale"));
  PetscCall(MatGetOwnershipRange(B, &rstart, &rend));
  if (rend > rstart) rows[nrows++] = rstart;
  if (rend - 1 > rstart) rows[nrows++] = rend - 1;
  PetscCall(MatZeroRows(B, nrows, rows, 2.0, NULL, NULL));
  PetscCall(MatZeroRows(Rb, nrows, rows, 2.0, NULL, NULL));
  PetscCall(Agree(B, Rb, PETSC_BOOL3_TRUE, "MatZeroRows"));
  PetscCall(MatZeroRowsColumns(B, nrows, rows, 3.0, NULL, NULL));
  PetscCall(MatZeroRowsColumns(Rb, nrows, rows, 3.0, NULL, NULL));
  PetscCall(Agree(B, Rb, PETSC_BOOL3_TRUE, "MatZeroRowsColumns"));
  PetscCall(VecDestroy(&l));
  PetscCall(VecDestroy(&r));
  PetscCall(VecDestroy(&lr));
  PetscCall(VecDestroy(&rr));
  /* MatTranspose in each reuse mode */
  for (int k = 0; k < 3; ++k) {
    Mat T = NULL, Rt = NULL;
    if (reuse[k] == MAT_INPLACE_MATRIX) {
      PetscCall(MatDuplicate(B, MAT_COPY_VALUES, &T));
      PetscCall(MatTranspose(T, MAT_INPLACE_MATRIX, &T));
    } else {
      PetscCall(MatTranspose(B, MAT_INITIAL_MATRIX, &T));
      if (reuse[k] == MAT_REUSE_MATRIX) {
        PetscCall(MatScale(B, 2.0));
        PetscCall(MatTranspose(B, MAT_REUSE_MATRIX, &T));
        PetscCall(MatScale(T, 0.5));
        PetscCall(MatScale(B, 0.5));
      }
    }
    PetscCall(MatTranspose(Rb, MAT_INITIAL_MATRIX, &Rt));
    PetscCall(Agree(T, Rt, PETSC_BOOL3_TRUE, names[k]));
    PetscCall(MatDestroy(&T));
    PetscCall(MatDestroy(&Rt));
  }
  PetscCall(MatDestroy(&B));
  PetscCall(MatDestroy(&Rb));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode Products(MPI_Comm comm, PetscInt n, Mat F, Mat R)
{
  Mat         Pf, Pr, Cf, Cr, Df, Dr, Bd;
  PetscMPIInt size;

  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCall(Prolongation(comm, n * n, MATAIJFUSED, &Pf));
  PetscCall(Prolongation(comm, n * n, MATAIJ, &Pr));
  PetscCall(MatPtAP(F, Pf, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &Cf));
  PetscCall(MatPtAP(R, Pr, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &Cr));
  PetscCall(Agree(Cf, Cr, PETSC_BOOL3_TRUE, "MatPtAP fused, fused P (Galerkin product stays fused)"));
  PetscCall(MatScale(F, 2.0));
  PetscCall(MatScale(R, 2.0));
  PetscCall(MatPtAP(F, Pf, MAT_REUSE_MATRIX, PETSC_DETERMINE, &Cf));
  PetscCall(MatPtAP(R, Pr, MAT_REUSE_MATRIX, PETSC_DETERMINE, &Cr));
  PetscCall(Agree(Cf, Cr, PETSC_BOOL3_TRUE, "MatPtAP reuse after a change of values"));
  PetscCall(MatScale(F, 0.5));
  PetscCall(MatScale(R, 0.5));
  PetscCall(MatPtAP(R, Pr, MAT_REUSE_MATRIX, PETSC_DETERMINE, &Cr));
  PetscCall(MatDestroy(&Cf));
  PetscCall(MatPtAP(F, Pr, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &Cf));
  PetscCall(Agree(Cf, Cr, PETSC_BOOL3_TRUE, "MatPtAP fused, aij P"));
  PetscCall(MatDestroy(&Cf));
  PetscCall(MatPtAP(R, Pf, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &Cf));
  PetscCall(Agree(Cf, Cr, PETSC_BOOL3_UNKNOWN, "MatPtAP aij, fused P"));
  PetscCall(MatDestroy(&Cf));
  PetscCall(MatDestroy(&Cr));
  PetscCall(MatMatMult(F, Pf, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &Cf));
  PetscCall(MatMatMult(R, Pr, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &Cr));
  PetscCall(Agree(Cf, Cr, PETSC_BOOL3_TRUE, "MatMatMult (AB)"));
  PetscCall(MatTransposeMatMult(Pf, Cf, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &Df));
  PetscCall(MatTransposeMatMult(Pr, Cr, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &Dr));
  PetscCall(Agree(Df, Dr, PETSC_BOOL3_TRUE, "MatTransposeMatMult (AtB)"));
  PetscCall(MatDestroy(&Df));
  PetscCall(MatDestroy(&Dr));
  PetscCall(MatMatTransposeMult(F, F, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &Df));
  PetscCall(MatMatTransposeMult(R, R, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &Dr));
  PetscCall(Agree(Df, Dr, PETSC_BOOL3_TRUE, "MatMatTransposeMult (ABt)"));
  PetscCall(MatDestroy(&Df));
  PetscCall(MatDestroy(&Dr));
  PetscCall(MatDestroy(&Cf));
  PetscCall(MatDestroy(&Cr));
  {
    Mat Rf, Rr;
    PetscCall(MatTranspose(Pf, MAT_INITIAL_MATRIX, &Rf));
    PetscCall(MatTranspose(Pr, MAT_INITIAL_MATRIX, &Rr));
    PetscCall(MatRARt(F, Rf, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &Cf));
    PetscCall(MatRARt(R, Rr, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &Cr));
    PetscCall(Agree(Cf, Cr, PETSC_BOOL3_TRUE, "MatRARt"));
    PetscCall(MatDestroy(&Cf));
    PetscCall(MatDestroy(&Cr));
    PetscCall(MatMatMatMult(Rf, F, Pf, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &Cf));
    PetscCall(MatMatMatMult(Rr, R, Pr, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &Cr));
    PetscCall(Agree(Cf, Cr, PETSC_BOOL3_TRUE, "MatMatMatMult (ABC)"));
    PetscCall(MatDestroy(&Cf));
    PetscCall(MatDestroy(&Cr));
    PetscCall(MatDestroy(&Rf));
    PetscCall(MatDestroy(&Rr));
  }
  /* dense operands: C = A B and C = A^T B, checked column by column through a product with a vector */
  PetscCall(MatCreateDense(comm, PETSC_DECIDE, PETSC_DECIDE, n * n, 3, NULL, &Bd));
  PetscCall(MatSetRandom(Bd, NULL));
  PetscCall(MatMatMult(F, Bd, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &Cf));
  PetscCall(MatMatMult(R, Bd, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &Cr));
  PetscCall(Agree(Cf, Cr, PETSC_BOOL3_FALSE, "MatMatMult with a dense B"));
  PetscCall(MatDestroy(&Cf));
  PetscCall(MatDestroy(&Cr));
  PetscCall(MatTransposeMatMult(F, Bd, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &Cf));
  PetscCall(MatTransposeMatMult(R, Bd, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &Cr));
  PetscCall(Agree(Cf, Cr, PETSC_BOOL3_FALSE, "MatTransposeMatMult with a dense B"));
  PetscCall(MatDestroy(&Cf));
  PetscCall(MatDestroy(&Cr));
  PetscCall(MatDestroy(&Bd));
  /* C = A B^T with a dense B: PETSc has it for MATSEQAIJ only (MATMPIAIJ with MATMPIDENSE: "Unspecified symbolic
     phase for product ABt"), so the fused type must give the same result, or the same error */
  {
    PetscErrorCode ef, er;

    PetscCall(MatCreateDense(comm, PETSC_DECIDE, PETSC_DECIDE, 3, n * n, NULL, &Bd));
    PetscCall(MatSetRandom(Bd, NULL));
    Cf = Cr = NULL;
    PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
    ef = MatMatTransposeMult(F, Bd, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &Cf);
    er = MatMatTransposeMult(R, Bd, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &Cr);
    PetscCall(PetscPopErrorHandler());
    PetscCall(Check((PetscBool)(ef == er && (size > 1 || !ef)), "MatMatTransposeMult with a dense B: error %d, with MATAIJ %d (%d ranks)", (int)ef, (int)er, size));
    if (!ef && !er) PetscCall(Agree(Cf, Cr, PETSC_BOOL3_UNKNOWN, "MatMatTransposeMult with a dense B"));
    PetscCall(MatDestroy(&Cf));
    PetscCall(MatDestroy(&Cr));
    PetscCall(MatDestroy(&Bd));
  }
  /* PtAP with a MAIJ P (2 components): the operator has 2 n^2 rows */
  {
    Mat A2f, A2r, Pm;
    PetscCall(Operator(comm, n, MATAIJ, &A2r));
    PetscCall(MatCreateMAIJ(Pr, 1, &Pm));
    PetscCall(MatConvert(A2r, MATAIJFUSED, MAT_INITIAL_MATRIX, &A2f));
    PetscCall(MatPtAP(A2f, Pm, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &Cf));
    PetscCall(MatPtAP(A2r, Pm, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &Cr));
    PetscCall(Agree(Cf, Cr, PETSC_BOOL3_UNKNOWN, "MatPtAP with a MAIJ P"));
    PetscCall(MatDestroy(&Cf));
    PetscCall(MatDestroy(&Cr));
    PetscCall(MatDestroy(&Pm));
    PetscCall(MatDestroy(&A2f));
    PetscCall(MatDestroy(&A2r));
  }
  PetscCall(MatDestroy(&Pf));
  PetscCall(MatDestroy(&Pr));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode Submatrices(MPI_Comm comm, PetscInt n, Mat F, Mat R)
{
  IS          is, isl[1];
  Mat         Sf, Sr, *Sfs, *Srs;
  PetscInt    rstart, rend;
  PetscMPIInt size;

  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCall(MatGetOwnershipRange(F, &rstart, &rend));
  PetscCall(ISCreateStride(comm, (rend - rstart + 1) / 2, rstart, 2, &is));
  PetscCall(MatCreateSubMatrix(F, is, is, MAT_INITIAL_MATRIX, &Sf));
  PetscCall(MatCreateSubMatrix(R, is, is, MAT_INITIAL_MATRIX, &Sr));
  PetscCall(Agree(Sf, Sr, PETSC_BOOL3_TRUE, "MatCreateSubMatrix"));
  PetscCall(MatCreateSubMatrix(F, is, is, MAT_REUSE_MATRIX, &Sf));
  PetscCall(Agree(Sf, Sr, PETSC_BOOL3_TRUE, "MatCreateSubMatrix reuse"));
  PetscCall(MatDestroy(&Sf));
  PetscCall(MatDestroy(&Sr));
  PetscCall(ISDestroy(&is));
  PetscCall(ISCreateStride(PETSC_COMM_SELF, rend - rstart, rstart, 1, &isl[0]));
  PetscCall(MatIncreaseOverlap(F, 1, isl, 1));
  PetscCall(MatCreateSubMatrices(F, 1, isl, isl, MAT_INITIAL_MATRIX, &Sfs));
  PetscCall(MatCreateSubMatrices(R, 1, isl, isl, MAT_INITIAL_MATRIX, &Srs));
  PetscCall(Agree(Sfs[0], Srs[0], PETSC_BOOL3_UNKNOWN, "MatIncreaseOverlap + MatCreateSubMatrices"));
  PetscCall(MatDestroySubMatrices(1, &Sfs));
  PetscCall(MatDestroySubMatrices(1, &Srs));
  PetscCall(ISDestroy(&isl[0]));
  PetscCall(MatGetDiagonalBlock(F, &Sf));
  PetscCall(MatGetDiagonalBlock(R, &Sr));
  PetscCall(Agree(Sf, Sr, PETSC_BOOL3_UNKNOWN, "MatGetDiagonalBlock"));
  if (size == 1) {
    const PetscInt *ia, *ja;
    PetscInt        nr;
    PetscBool       done;
    PetscCall(MatGetRowIJ(F, 0, PETSC_FALSE, PETSC_FALSE, &nr, &ia, &ja, &done));
    PetscCall(Check((PetscBool)(done && nr == n * n && ia[nr] == 5 * n * n - 4 * n), "MatGetRowIJ"));
    PetscCall(MatRestoreRowIJ(F, 0, PETSC_FALSE, PETSC_FALSE, &nr, &ia, &ja, &done));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode AssemblyAndIO(MPI_Comm comm, PetscInt n, Mat F, Mat R)
{
  Mat          C, G, L;
  PetscInt     rstart, rend, ncoo = 0, *ci, *cj;
  PetscScalar *cv;
  PetscViewer  viewer;
  PetscMPIInt  size, rank;

  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  /* COO assembly: every local entry of R, some twice (added) */
  PetscCall(MatGetOwnershipRange(R, &rstart, &rend));
  PetscCall(PetscMalloc3(10 * (rend - rstart) + 1, &ci, 10 * (rend - rstart) + 1, &cj, 10 * (rend - rstart) + 1, &cv));
  for (PetscInt row = rstart; row < rend; ++row) {
    PetscInt           nc;
    const PetscInt    *cols;
    const PetscScalar *vals;
    PetscCall(MatGetRow(R, row, &nc, &cols, &vals));
    for (PetscInt k = 0; k < nc; ++k) {
      ci[ncoo] = row, cj[ncoo] = cols[k], cv[ncoo++] = 0.5 * vals[k];
      ci[ncoo] = row, cj[ncoo] = cols[k], cv[ncoo++] = 0.5 * vals[k];
    }
    PetscCall(MatRestoreRow(R, row, &nc, &cols, &vals));
  }
  PetscCall(MatCreate(comm, &C));
  PetscCall(MatSetSizes(C, rend - rstart, rend - rstart, PETSC_DETERMINE, PETSC_DETERMINE));
  PetscCall(MatSetType(C, MATAIJFUSED));
  PetscCall(MatSetPreallocationCOO(C, ncoo, ci, cj));
  PetscCall(MatSetValuesCOO(C, cv, ADD_VALUES));
  PetscCall(Agree(C, R, PETSC_BOOL3_TRUE, "MatSetPreallocationCOO + MatSetValuesCOO"));
  PetscCall(MatSetValuesCOO(C, cv, INSERT_VALUES));
  PetscCall(Agree(C, R, PETSC_BOOL3_TRUE, "MatSetValuesCOO again (values refreshed)"));
  PetscCall(PetscFree3(ci, cj, cv));
  PetscCall(MatDestroy(&C));
  /* the graph GAMG builds */
  PetscCall(MatCreateGraph(F, PETSC_TRUE, PETSC_TRUE, -1.0, 0, NULL, &G));
  {
    PetscBool assembled;
    PetscCall(MatAssembled(G, &assembled));
    PetscCall(Check(assembled, "MatCreateGraph (%s)", TypeName(G)));
  }
  PetscCall(MatDestroy(&G));
  /* binary round trip into a fused matrix, through a file of this run's own (cases run at once share the directory) */
  {
    char file[64], info[72];
    int  pid = (int)getpid();

    PetscCallMPI(MPI_Bcast(&pid, 1, MPI_INT, 0, comm));
    PetscCall(PetscSNPrintf(file, sizeof(file), "test_matpetsc-%d.bin", pid));
    PetscCall(PetscSNPrintf(info, sizeof(info), "%s.info", file));
    PetscCall(PetscViewerBinaryOpen(comm, file, FILE_MODE_WRITE, &viewer));
    PetscCall(MatView(F, viewer));
    PetscCall(PetscViewerDestroy(&viewer));
    PetscCall(PetscViewerBinaryOpen(comm, file, FILE_MODE_READ, &viewer));
    PetscCall(MatCreate(comm, &L));
    PetscCall(MatSetType(L, MATAIJFUSED));
    PetscCall(MatLoad(L, viewer));
    PetscCall(PetscViewerDestroy(&viewer));
    PetscCall(Agree(L, R, PETSC_BOOL3_TRUE, "MatView/MatLoad binary"));
    PetscCall(MatDestroy(&L));
    PetscCallMPI(MPI_Barrier(comm)); /* every rank has closed the file */
    if (rank == 0) {
      (void)remove(file);
      (void)remove(info);
    }
  }
  /* each rank's sequential fused block concatenated into a parallel matrix: the type asked for is the root type */
  {
    Mat S, M, Sr, Mr;
    PetscCall(Operator(PETSC_COMM_SELF, 4, MATAIJFUSED, &S));
    PetscCall(Operator(PETSC_COMM_SELF, 4, MATAIJ, &Sr));
    PetscCall(MatCreateMPIMatConcatenateSeqMat(comm, S, PETSC_DECIDE, MAT_INITIAL_MATRIX, &M));
    PetscCall(MatCreateMPIMatConcatenateSeqMat(comm, Sr, PETSC_DECIDE, MAT_INITIAL_MATRIX, &Mr));
    PetscCall(Agree(M, Mr, PETSC_BOOL3_TRUE, "MatCreateMPIMatConcatenateSeqMat"));
    PetscCall(MatDestroy(&S));
    PetscCall(MatDestroy(&Sr));
    PetscCall(MatDestroy(&M));
    PetscCall(MatDestroy(&Mr));
  }
  (void)n;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The same solve (KSP type, PC type) on the fused and the AIJ operator: converged, the same solution */
static PetscErrorCode Solve(MPI_Comm comm, Mat F, Mat R, KSPType ksptype, PCType pctype, const char *subpc)
{
  KSP                ksp[2];
  Mat                M[2] = {F, R};
  Vec                x[2], b[2];
  KSPConvergedReason reason[2];
  PetscInt           its[2];
  PetscReal          err, ref;

  PetscFunctionBeginUser;
  for (int k = 0; k < 2; ++k) {
    PC pc;
    PetscCall(MatCreateVecs(M[k], &x[k], &b[k]));
    PetscCall(VecSet(b[k], 1.0));
    PetscCall(KSPCreate(comm, &ksp[k]));
    PetscCall(KSPSetOperators(ksp[k], M[k], M[k]));
    PetscCall(KSPSetType(ksp[k], k == 0 ? ksptype : KSPGMRES));
    PetscCall(KSPGetPC(ksp[k], &pc));
    PetscCall(PCSetType(pc, pctype));
    if (subpc) {
      KSP     *sub;
      PetscInt nlocal;
      PetscCall(KSPSetUp(ksp[k]));
      if (!strcmp(pctype, PCBJACOBI))
        PetscCall(PCBJacobiGetSubKSP(pc, &nlocal, NULL, &sub));
      else
        PetscCall(PCASMGetSubKSP(pc, &nlocal, NULL, &sub));
      for (PetscInt i = 0; i < nlocal; ++i) {
        PC subpcobj;
        PetscCall(KSPGetPC(sub[i], &subpcobj));
        PetscCall(PCSetType(subpcobj, subpc));
      }
    }
    PetscCall(KSPSetTolerances(ksp[k], 1e-10, PETSC_CURRENT, PETSC_CURRENT, 500));
    PetscCall(KSPSolve(ksp[k], b[k], x[k]));
    PetscCall(KSPGetConvergedReason(ksp[k], &reason[k]));
    PetscCall(KSPGetIterationNumber(ksp[k], &its[k]));
  }
  PetscCall(VecNorm(x[1], NORM_INFINITY, &ref));
  PetscCall(VecAXPY(x[0], -1.0, x[1]));
  PetscCall(VecNorm(x[0], NORM_INFINITY, &err));
  PetscCall(Check((PetscBool)(reason[0] > 0 && reason[1] > 0 && err <= 1e-7 * ref), "%s with %s%s%s on %s: converged in %" PetscInt_FMT " (gmres on aij: %" PetscInt_FMT "), solutions differ by %g", ksptype, pctype, subpc ? "/" : "",
                  subpc ? subpc : "", TypeName(F), its[0], its[1], (double)(err / ref)));
  for (int k = 0; k < 2; ++k) {
    PetscCall(KSPDestroy(&ksp[k]));
    PetscCall(VecDestroy(&x[k]));
    PetscCall(VecDestroy(&b[k]));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The host/backend bookkeeping of fused vectors and matrices where PETSc's own code reaches their host arrays (run with
   -fused_debug_mirror on the host backend, and on a GPU, for the mirrors to matter): a changed VecGetSubVector() view,
   a VecGetArray() that PETSc restores on another vector (PCApply_Redistribute()), a structure-only matrix */
static PetscErrorCode Bookkeeping(MPI_Comm comm, Mat F)
{
  Vec          x, w, sx;
  IS           half;
  PetscInt     lo, hi, nh, N;
  PetscReal    nrm, expect;
  PetscScalar *a;

  PetscFunctionBeginUser;
  PetscCall(MatCreateVecs(F, &x, &w));
  PetscCall(VecGetOwnershipRange(x, &lo, &hi));
  PetscCall(VecGetSize(x, &N));
  nh = (hi - lo) / 2;
  PetscCall(ISCreateStride(comm, nh, lo, 1, &half));
  PetscCall(VecSet(x, 1.0));
  PetscCall(VecGetSubVector(x, half, &sx));
  PetscCall(VecScale(sx, 2.0));
  PetscCall(VecRestoreSubVector(x, half, &sx));
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &nh, 1, MPIU_INT, MPI_SUM, comm));
  PetscCall(VecNorm(x, NORM_1, &nrm));
  expect = (PetscReal)(2 * nh + (N - nh));
  PetscCall(Check((PetscBool)(PetscAbsReal(nrm - expect) <= 1e-12 * expect), "VecRestoreSubVector() of a changed view: |x|_1 = %g (expected %g)", (double)nrm, (double)expect));

  PetscCall(VecSet(x, 0.0));
  PetscCall(VecGetArray(x, &a));
  for (PetscInt i = 0; i < hi - lo; ++i) a[i] = 1.0;
  PetscCall(VecRestoreArray(w, &a)); /* another vector than the one whose array it is, as PETSc's PCApply_Redistribute() */
  {
    PetscScalar dot;

    PetscCall(VecDot(x, x, &dot)); /* not a cached norm: x's state did not change (nor would a VECSEQ's) */
    PetscCall(Check((PetscBool)(PetscRealPart(dot) == (PetscReal)N), "VecGetArray() restored on another vector: (x, x) = %g (expected %" PetscInt_FMT ")", (double)PetscRealPart(dot), N));
  }
  PetscCall(ISDestroy(&half));

  for (PetscInt c = 0; c < 2; ++c) { /* a structure-only matrix, sequential and on the world communicator */
    MPI_Comm       comm = c ? PETSC_COMM_WORLD : PETSC_COMM_SELF;
    Mat            S;
    Vec            sy;
    PetscInt       rstart, rend;
    PetscErrorCode err;

    PetscCall(MatCreate(comm, &S));
    PetscCall(MatSetSizes(S, PETSC_DECIDE, PETSC_DECIDE, 8, 8));
    PetscCall(MatSetType(S, MATAIJFUSED));
    PetscCall(MatSetOption(S, MAT_STRUCTURE_ONLY, PETSC_TRUE));
    PetscCall(MatSeqAIJSetPreallocation(S, 2, NULL));
    PetscCall(MatMPIAIJSetPreallocation(S, 2, NULL, 1, NULL));
    PetscCall(MatGetOwnershipRange(S, &rstart, &rend));
    for (PetscInt i = rstart; i < rend; ++i) {
      PetscCall(MatSetValue(S, i, i, 1.0, INSERT_VALUES));
      PetscCall(MatSetValue(S, i, (i + 5) % 8, 1.0, INSERT_VALUES));
    }
    PetscCall(MatAssemblyBegin(S, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(S, MAT_FINAL_ASSEMBLY));
    PetscCall(MatCreateVecs(S, &sx, &sy));
    PetscCall(VecSet(sx, 1.0));
    PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
    err = MatMult(S, sx, sy);
    PetscCall(PetscPopErrorHandler());
    PetscCall(Check((PetscBool)(err == PETSC_ERR_ARG_WRONGSTATE), "a structure-only aijfused matrix (%s) assembles, and its product is an error (%d)", c ? "world" : "self", (int)err));
    PetscCall(VecDestroy(&sx));
    PetscCall(VecDestroy(&sy));
    PetscCall(MatDestroy(&S));
  }
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&w));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* A random m x k MATSEQAIJ(FUSED) with 0..maxrow entries a row at random columns (the same for every type, from `seed`) */
static PetscErrorCode RandomSparse(PetscInt m, PetscInt k, PetscInt maxrow, unsigned long seed, MatType type, Mat *M)
{
  PetscRandom rnd;

  PetscFunctionBeginUser;
  PetscCall(PetscRandomCreate(PETSC_COMM_SELF, &rnd));
  PetscCall(PetscRandomSetSeed(rnd, seed));
  PetscCall(PetscRandomSeed(rnd));
  PetscCall(MatCreate(PETSC_COMM_SELF, M));
  PetscCall(MatSetSizes(*M, m, k, m, k));
  PetscCall(MatSetType(*M, type));
  PetscCall(MatSeqAIJSetPreallocation(*M, maxrow, NULL));
  for (PetscInt i = 0; i < m; ++i) {
    PetscReal r;
    PetscInt  len;

    PetscCall(PetscRandomGetValueReal(rnd, &r));
    len = (PetscInt)(r * (maxrow + 1)) % (maxrow + 1);
    for (PetscInt e = 0; e < len; ++e) {
      PetscReal   c, v;
      PetscInt    col;
      PetscScalar val;

      PetscCall(PetscRandomGetValueReal(rnd, &c));
      PetscCall(PetscRandomGetValueReal(rnd, &v));
      col = (PetscInt)(c * k) % k;
      val = v - 0.5;
      PetscCall(MatSetValues(*M, 1, &i, 1, &col, &val, ADD_VALUES));
    }
  }
  PetscCall(MatAssemblyBegin(*M, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(*M, MAT_FINAL_ASSEMBLY));
  PetscCall(PetscRandomDestroy(&rnd));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Times the backend's sparse products ran (the FusedSpGEMM event: symbolic and numeric phases) */
static PetscErrorCode BackendProductCount(PetscLogDouble *count)
{
  PetscLogEvent      event;
  PetscEventPerfInfo info;

  PetscFunctionBeginUser;
  PetscCall(PetscLogEventGetId("FusedSpGEMM", &event));
  PetscCall(PetscLogEventGetPerfInfo(PETSC_DETERMINE, event, &info));
  *count = info.count;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* F's product against R's: the same values (through products with a random vector), the same stored entries, and
   whether it ran on the backend as `expect` says (the event count rose by `phases`, or did not change) */
static PetscErrorCode AgreeBackend(Mat F, Mat R, PetscBool expect, PetscLogDouble before, PetscInt phases, const char *what)
{
  MatInfo        fi, ri;
  PetscLogDouble after;

  PetscFunctionBeginUser;
  PetscCall(Agree(F, R, PETSC_BOOL3_TRUE, what));
  PetscCall(MatGetInfo(F, MAT_LOCAL, &fi));
  PetscCall(MatGetInfo(R, MAT_LOCAL, &ri));
  PetscCall(BackendProductCount(&after));
  PetscCall(Check((PetscBool)(fi.nz_used == ri.nz_used), "%s: %g stored entries, as MATAIJ's %g", what, fi.nz_used, ri.nz_used));
  PetscCall(Check((PetscBool)(after - before == (expect ? phases : 0)), "%s: %g phases on the backend (expected %d)", what, after - before, expect ? (int)phases : 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The backend's sparse products (C = A B, A^T B, P^T A P with a MATSEQAIJFUSED A, one process): against MATAIJ's on
   the test operator, on random rectangular matrices with empty rows, an empty product, reuse with new values, and a
   changed pattern (an error on the backend).  expect: they run on the backend (-expect_backend_products) */
static PetscErrorCode BackendProducts(PetscInt n, Mat F, Mat R, PetscBool expect)
{
  Mat            Pf, Pr, Cf, Cr, Xf, Xr, Yf, Yr, Wr;
  PetscLogDouble before, after;

  PetscFunctionBeginUser;
  PetscCall(Prolongation(PETSC_COMM_SELF, n * n, MATAIJFUSED, &Pf));
  PetscCall(Prolongation(PETSC_COMM_SELF, n * n, MATAIJ, &Pr));
  PetscCall(BackendProductCount(&before));
  PetscCall(MatPtAP(F, Pr, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &Cf));
  PetscCall(MatPtAP(R, Pr, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &Cr));
  PetscCall(AgreeBackend(Cf, Cr, expect, before, 2, "backend products: PtAP with an aij P"));
  PetscCall(MatScale(F, 2.0));
  PetscCall(MatScale(R, 2.0));
  PetscCall(BackendProductCount(&before));
  PetscCall(MatPtAP(F, Pr, MAT_REUSE_MATRIX, PETSC_DETERMINE, &Cf));
  PetscCall(MatPtAP(R, Pr, MAT_REUSE_MATRIX, PETSC_DETERMINE, &Cr));
  PetscCall(AgreeBackend(Cf, Cr, expect, before, 1, "backend products: PtAP reused after MatScale"));
  PetscCall(MatScale(F, 0.5));
  PetscCall(MatScale(R, 0.5));
  PetscCall(MatDestroy(&Cf));
  PetscCall(MatDestroy(&Cr));
  PetscCall(BackendProductCount(&before));
  PetscCall(MatMatMult(F, Pf, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &Cf));
  PetscCall(MatMatMult(R, Pr, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &Cr));
  PetscCall(AgreeBackend(Cf, Cr, expect, before, 2, "backend products: AB"));
  PetscCall(BackendProductCount(&before));
  PetscCall(MatTransposeMatMult(Pf, Cf, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &Yf));
  PetscCall(MatTransposeMatMult(Pr, Cr, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &Yr));
  PetscCall(AgreeBackend(Yf, Yr, expect, before, 2, "backend products: AtB"));
  PetscCall(MatDestroy(&Yf));
  PetscCall(MatDestroy(&Yr));
  PetscCall(MatDestroy(&Cf));
  PetscCall(MatDestroy(&Cr));
  /* random rectangular operands (columns in random order before assembly, empty rows), several sizes */
  for (PetscInt m = 1; m <= 1500; m = 7 * m + 3) {
    PetscCall(RandomSparse(m, m / 2 + 2, 9, 7 + m, MATAIJFUSED, &Xf));
    PetscCall(RandomSparse(m, m / 2 + 2, 9, 7 + m, MATAIJ, &Xr));
    PetscCall(RandomSparse(m / 2 + 2, m + 3, 6, 11 + m, MATAIJ, &Yr));
    PetscCall(BackendProductCount(&before));
    PetscCall(MatMatMult(Xf, Yr, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &Cf));
    PetscCall(MatMatMult(Xr, Yr, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &Cr));
    PetscCall(AgreeBackend(Cf, Cr, expect, before, 2, "backend products: AB of random matrices"));
    PetscCall(MatDestroy(&Cf));
    PetscCall(MatDestroy(&Cr));
    PetscCall(RandomSparse(m, m + 3, 5, 13 + m, MATAIJ, &Wr));
    PetscCall(BackendProductCount(&before));
    PetscCall(MatTransposeMatMult(Xf, Wr, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &Cf));
    PetscCall(MatTransposeMatMult(Xr, Wr, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &Cr));
    PetscCall(AgreeBackend(Cf, Cr, expect, before, 2, "backend products: AtB of random matrices"));
    PetscCall(MatDestroy(&Cf));
    PetscCall(MatDestroy(&Cr));
    PetscCall(MatDestroy(&Xf));
    PetscCall(MatDestroy(&Xr));
    PetscCall(MatDestroy(&Wr));
    PetscCall(MatDestroy(&Yr));
  }
  /* a structure-only A^T A (PCGAMG's squared graph): PETSc's host product, the same pattern as MATAIJ's */
  {
    Mat     S[2];
    MatInfo info[2];

    PetscCall(BackendProductCount(&before));
    for (int k = 0; k < 2; ++k) {
      PetscCall(MatProductCreate(k ? R : F, k ? R : F, NULL, &S[k]));
      PetscCall(MatSetOption(S[k], MAT_STRUCTURE_ONLY, PETSC_TRUE));
      PetscCall(MatProductSetType(S[k], MATPRODUCT_AtB));
      PetscCall(MatProductSetFromOptions(S[k]));
      PetscCall(MatProductSymbolic(S[k]));
      PetscCall(MatGetInfo(S[k], MAT_LOCAL, &info[k]));
    }
    PetscCall(BackendProductCount(&after));
    PetscCall(Check((PetscBool)(info[0].nz_used == info[1].nz_used && info[0].nz_used > 0), "backend products: a structure-only AtB has %g stored entries, as MATAIJ's %g", info[0].nz_used, info[1].nz_used));
    PetscCall(Check((PetscBool)(after == before), "backend products: a structure-only AtB runs on the host (%g phases on the backend)", after - before));
    PetscCall(MatDestroy(&S[0]));
    PetscCall(MatDestroy(&S[1]));
  }
  /* an empty P: an empty product */
  PetscCall(RandomSparse(n * n, 3, 0, 5, MATAIJ, &Yr));
  PetscCall(BackendProductCount(&before));
  PetscCall(MatPtAP(F, Yr, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &Cf));
  PetscCall(MatPtAP(R, Yr, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &Cr));
  PetscCall(AgreeBackend(Cf, Cr, expect, before, 2, "backend products: PtAP with an empty P"));
  PetscCall(MatDestroy(&Cf));
  PetscCall(MatDestroy(&Cr));
  PetscCall(MatDestroy(&Yr));
  /* a new nonzero pattern of A after the symbolic phase: the backend's numeric phase refuses it */
  if (expect) {
    PetscErrorCode ierr;
    PetscInt       row = 0, col = n * n - 1;
    PetscScalar    one = 1.0;

    PetscCall(MatDuplicate(F, MAT_COPY_VALUES, &Xf));
    PetscCall(MatPtAP(Xf, Pr, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &Cf));
    PetscCall(MatSetOption(Xf, MAT_NEW_NONZERO_ALLOCATION_ERR, PETSC_FALSE));
    PetscCall(MatSetValues(Xf, 1, &row, 1, &col, &one, INSERT_VALUES));
    PetscCall(MatAssemblyBegin(Xf, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(Xf, MAT_FINAL_ASSEMBLY));
    PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
    ierr = MatPtAP(Xf, Pr, MAT_REUSE_MATRIX, PETSC_DETERMINE, &Cf);
    PetscCall(PetscPopErrorHandler());
    PetscCall(Check((PetscBool)(ierr == PETSC_ERR_ARG_WRONGSTATE), "backend products: reuse after a new nonzero pattern is an error (%d)", (int)ierr));
    PetscCall(MatDestroy(&Cf));
    PetscCall(MatDestroy(&Xf));
  }
  PetscCall(MatDestroy(&Pf));
  PetscCall(MatDestroy(&Pr));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Bytes the backend copied from the host as data since `start` (FusedKSPGetBackendUploadedBytes()) */
static PetscErrorCode UploadedSince(PetscInt64 start, PetscInt64 *bytes)
{
  PetscFunctionBeginUser;
  PetscCall(FusedKSPGetBackendUploadedBytes(bytes));
  *bytes -= start;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Bytes the backend copied from the host (FusedKSPGetBackendUploadedBytes()) in the first MatMult() and MatMultTranspose()
   of F, on fused vectors already on the device: the copies of F these make                                         */
static PetscErrorCode FirstProductsUpload(Mat F, PetscInt64 *bytes)
{
  Vec        x, y;
  PetscInt64 start;

  PetscFunctionBeginUser;
  PetscCall(MatCreateVecs(F, &x, &y));
  PetscCall(VecSet(x, 1.0));
  PetscCall(VecSet(y, 1.0));
  PetscCall(FusedKSPGetBackendUploadedBytes(&start));
  PetscCall(MatMult(F, x, y));
  PetscCall(MatMultTranspose(F, y, x));
  PetscCall(UploadedSince(start, bytes));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&y));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Bytes of arrays with an entry per row or column (row offsets, diagonal and slice positions) of F and F^T: what
   making their mirrors may upload when no entry is copied                                                 */
static PetscInt64 RowArrayBytes(Mat F)
{
  PetscInt m = 0, n = 0;

  (void)MatGetLocalSize(F, &m, &n);
  return (PetscInt64)(m + n + 2) * (PetscInt64)(sizeof(PetscInt) + sizeof(PetscInt64));
}

/* The CSR copies the backend's products share (one process; expect: the products run on the backend).  P^T A P of
   fused A and P whose mirrors exist makes their copies from the mirrors, on the backend (no entry uploaded); the
   result's copy is the product's own result, so its mirror and transpose upload no entry; a P without a mirror gets
   its copy from the host, and its mirror and transpose from the copy; after MatScale() (the mirror updated in place,
   the copy left behind) A^T and the reused product see the new values; an operand changed in place to MATSEQAIJ
   after the symbolic phase makes the reuse an error                                                             */
static PetscErrorCode BackendOperandCopies(PetscInt n, Mat F, Mat R, PetscBool expect)
{
  Mat            Pf, Qf, Pr, Cf, Df, Cr, Af;
  PetscLogDouble before;
  PetscInt64     up, start;

  PetscFunctionBeginUser;
  PetscCall(MatDuplicate(F, MAT_COPY_VALUES, &Af));
  PetscCall(Prolongation(PETSC_COMM_SELF, n * n, MATAIJFUSED, &Pf));
  PetscCall(Prolongation(PETSC_COMM_SELF, n * n, MATAIJFUSED, &Qf));
  PetscCall(Prolongation(PETSC_COMM_SELF, n * n, MATAIJ, &Pr));
  PetscCall(FirstProductsUpload(Af, &up));
  PetscCall(FirstProductsUpload(Pf, &up));
  PetscCall(BackendProductCount(&before));
  PetscCall(FusedKSPGetBackendUploadedBytes(&start));
  PetscCall(MatPtAP(Af, Pf, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &Cf));
  PetscCall(UploadedSince(start, &up));
  if (expect) PetscCall(Check((PetscBool)(up <= RowArrayBytes(Af) + RowArrayBytes(Pf)), "operand copies: PtAP of A and P with mirrors uploaded %" PetscInt64_FMT " bytes (their copies made from the mirrors)", up));
  PetscCall(FirstProductsUpload(Cf, &up));
  if (expect) PetscCall(Check((PetscBool)(up <= RowArrayBytes(Cf)), "operand copies: the result's mirror and transpose uploaded %" PetscInt64_FMT " bytes (its copy is the product's result)", up));
  PetscCall(MatPtAP(R, Pr, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &Cr));
  PetscCall(AgreeBackend(Cf, Cr, expect, before, 2, "operand copies: PtAP of fused A and P"));
  PetscCall(AgreeProducts(Cf, Cr, "operand copies: the result's products"));
  PetscCall(BackendProductCount(&before));
  PetscCall(MatPtAP(Af, Qf, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &Df));
  PetscCall(AgreeBackend(Df, Cr, expect, before, 2, "operand copies: PtAP with a P without a mirror"));
  PetscCall(FirstProductsUpload(Qf, &up));
  if (expect) PetscCall(Check((PetscBool)(up <= RowArrayBytes(Qf)), "operand copies: P's mirror and transpose uploaded %" PetscInt64_FMT " bytes (made from P's copy)", up));
  PetscCall(AgreeProducts(Qf, Pr, "operand copies: P's products"));
  PetscCall(MatScale(Qf, 3.0));
  PetscCall(MatScale(Pr, 3.0));
  PetscCall(AgreeProducts(Qf, Pr, "operand copies: P's products after MatScale"));
  PetscCall(BackendProductCount(&before));
  PetscCall(MatPtAP(Af, Qf, MAT_REUSE_MATRIX, PETSC_DETERMINE, &Df));
  PetscCall(FirstProductsUpload(Df, &up));
  if (expect) PetscCall(Check((PetscBool)(up <= RowArrayBytes(Df)), "operand copies: the reused result's products uploaded %" PetscInt64_FMT " bytes (its copies refreshed on the device)", up));
  PetscCall(MatPtAP(R, Pr, MAT_REUSE_MATRIX, PETSC_DETERMINE, &Cr));
  PetscCall(AgreeBackend(Df, Cr, expect, before, 1, "operand copies: PtAP reused after MatScale of P"));
  PetscCall(AgreeProducts(Df, Cr, "operand copies: the reused result's products"));
  if (expect) {
    PetscErrorCode ierr;

    PetscCall(MatConvert(Qf, MATSEQAIJ, MAT_INPLACE_MATRIX, &Qf));
    PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
    ierr = MatPtAP(Af, Qf, MAT_REUSE_MATRIX, PETSC_DETERMINE, &Df);
    PetscCall(PetscPopErrorHandler());
    PetscCall(Check((PetscBool)(ierr == PETSC_ERR_ARG_WRONGSTATE), "operand copies: reuse after an operand became MATSEQAIJ is an error (%d)", (int)ierr));
  }
  PetscCall(MatDestroy(&Cf));
  PetscCall(MatDestroy(&Df));
  PetscCall(MatDestroy(&Cr));
  PetscCall(MatDestroy(&Pf));
  PetscCall(MatDestroy(&Qf));
  PetscCall(MatDestroy(&Pr));
  PetscCall(MatDestroy(&Af));
  PetscFunctionReturn(PETSC_SUCCESS);
}

int main(int argc, char **argv)
{
  MPI_Comm   comm;
  Mat        F, R;
  PetscInt   n                = 12;
  PetscBool3 backend_products = PETSC_BOOL3_UNKNOWN;

  PetscFunctionBeginUser;
  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(FusedKSPInitializePackage());
  comm = PETSC_COMM_WORLD;
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-n", &n, NULL));
  {
    PetscBool set, flag;

    PetscCall(PetscOptionsGetBool(NULL, NULL, "-expect_backend_products", &flag, &set));
    if (set) {
      PetscMPIInt size;

      PetscCallMPI(MPI_Comm_size(comm, &size));
      PetscCheck(size == 1, comm, PETSC_ERR_ARG_WRONG, "-expect_backend_products: one process");
      backend_products = flag ? PETSC_BOOL3_TRUE : PETSC_BOOL3_FALSE;
      PetscCall(PetscLogDefaultBegin());
    }
  }
  PetscCall(Operator(comm, n, MATAIJFUSED, &F));
  PetscCall(Operator(comm, n, MATAIJ, &R));
  PetscCall(Agree(F, R, PETSC_BOOL3_TRUE, "MatSetType(aijfused) gives the fused type of the communicator"));
  PetscCall(AgreeProducts(F, R, "square operator"));
  PetscCall(MatScale(F, 3.0));
  PetscCall(MatScale(R, 3.0));
  PetscCall(AgreeProducts(F, R, "square operator after MatScale"));
  PetscCall(MatScale(F, 1.0 / 3.0));
  PetscCall(MatScale(R, 1.0 / 3.0));
  {
    Mat Pf, Pr;
    PetscCall(Prolongation(comm, n * n, MATAIJFUSED, &Pf));
    PetscCall(Prolongation(comm, n * n, MATAIJ, &Pr));
    PetscCall(AgreeProducts(Pf, Pr, "rectangular P"));
    PetscCall(MatDestroy(&Pf));
    PetscCall(MatDestroy(&Pr));
  }
  PetscCall(Bookkeeping(comm, F));
  PetscCall(Conversions(comm, n, F, R));
  PetscCall(Arithmetic(comm, n, F, R));
  PetscCall(Products(comm, n, F, R));
  if (backend_products != PETSC_BOOL3_UNKNOWN) {
    PetscCall(BackendProducts(n, F, R, backend_products == PETSC_BOOL3_TRUE ? PETSC_TRUE : PETSC_FALSE));
    PetscCall(BackendOperandCopies(n, F, R, backend_products == PETSC_BOOL3_TRUE ? PETSC_TRUE : PETSC_FALSE));
  }
  PetscCall(Submatrices(comm, n, F, R));
  PetscCall(AssemblyAndIO(comm, n, F, R));
  PetscCall(Solve(comm, F, R, KSPGMRES, PCGAMG, NULL));
  PetscCall(Solve(comm, F, R, KSPFUSEDBCGS, PCGAMG, NULL));
  PetscCall(Solve(comm, F, R, KSPFUSEDSGMRES, PCBJACOBI, PCILU));
  PetscCall(Solve(comm, F, R, KSPFUSEDBCGS, PCASM, PCILU));
  PetscCall(MatDestroy(&F));
  PetscCall(MatDestroy(&R));
  PetscCall(PetscPrintf(comm, "test_matpetsc: %s\n", check_failures ? "FAIL" : "PASS"));
  PetscCall(PetscFinalize());
  return check_failures ? 1 : 0;
}
