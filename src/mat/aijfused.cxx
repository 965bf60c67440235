/*
   MATSEQAIJFUSED: PETSc's MATSEQAIJ (assembly, MatSetValues,
   factorizations and every host operation stay PETSc's) whose vectors are fused (MatCreateVecs
   gives VECFUSED) and whose local rows are mirrored in the backend's memory, in CSR or SELL-P
   (-mat_aijfused_format), for the fused "SpMV + partial reductions" kernels and the device
   MatMult, MatMultAdd, MatMultTranspose(Add), MatGetDiagonal, MatScale and MatShift.

   The mirror is made at the first use on the backend (a product, a view for the solvers); from then on
   MatAssemblyEnd (MAT_FINAL_ASSEMBLY) brings it up to date: the values, copied into its existing arrays,
   and first the structure when the nonzero state changed.
   Every product checks the object state too, and refreshes the mirror the same way when the matrix
   changed without an assembly (MatZeroEntries, MatDiagonalScale, ...).  MatScale and MatShift
   update a current mirror in place instead.  MatAIJFusedGetArraysGeneration() tells when the
   mirror's arrays were allocated anew.  With the host backend a CSR mirror is PETSc's own arrays;
   the operations on fused vectors go through the mirror on every backend (so the host backend
   checks that code), PETSc's host operations run when a vector is not fused.  MATMPIAIJFUSED is in
   mpiaijfused.cxx.

   The type's data lives in Mat->spptr, so it stays with the matrix when PETSc swaps headers
   (MatHeaderReplace() in in-place conversions and transposes, MatHeaderMerge() in MatAXPY() with a new
   pattern, GAMG's graph), and the operations it replaces are saved and restored as one table
   (FUSED_SEQAIJ_OPS).  MatConvert() between MATSEQAIJ and MATSEQAIJFUSED (every reuse mode, and
   MatSetType() of an assembled MATSEQAIJ) installs or removes that table around the same MATSEQAIJ
   data; conversions to other types are PETSc's generic ones.  Products pick PETSc's AIJ
   implementations (aijfused_shared.cxx) and their results take A's type, so Galerkin coarse
   operators are fused.
*/
#include "mat/aijfused.hpp"
#include "mat/mirror.hpp"
#include "vec/vecfused.hpp"
#include "backend/blas.hpp"
#include <petsc/private/matimpl.h>
#include "mat/aijfused_private.hpp"

namespace fusedksp
{
namespace
{

/* The operations MATSEQAIJFUSED replaces in MATSEQAIJ's table: X(op, fused implementation) */
#define FUSED_SEQAIJ_OPS(X)                                                                                                                                                                                                                              \
  FUSED_AIJ_SHARED_OPS(X, SeqAIJFusedType)                                                                                                                                                                                                               \
  X(getdiagonal, MatGetDiagonal_SeqAIJFused)                                                                                                                                                                                                             \
  X(scale, MatScale_SeqAIJFused)                                                                                                                                                                                                                         \
  X(shift, MatShift_SeqAIJFused)                                                                                                                                                                                                                         \
  X(view, MatView_AIJFused)                                                                                                                                                                                                                              \
  X(setfromoptions, MatSetFromOptions_SeqAIJFused)                                                                                                                                                                                                       \
  X(lufactor, MatLUFactor_SeqAIJFused)                                                                                                                                                                                                                   \
  X(ilufactor, MatILUFactor_SeqAIJFused)                                                                                                                                                                                                                 \
  X(choleskyfactor, MatCholeskyFactor_SeqAIJFused)                                                                                                                                                                                                       \
  X(iccfactor, MatICCFactor_SeqAIJFused)                                                                                                                                                                                                                 \
  X(axpy, MatAXPY_SeqAIJFused)

/* MATSEQAIJ's implementations of those operations, called for the host work */
struct HostOps {
  FUSED_SEQAIJ_OPS(FUSED_DECLARE_HOST_OP)
  decltype(_MatOps::residual) residual = nullptr;
};

/* The data of a MATSEQAIJFUSED, in Mat->spptr (the slot PETSc leaves to AIJ subclasses): it moves with
   the rest of the header when PETSc replaces or merges headers (MatHeaderReplace(), MatHeaderMerge()) */
struct MatFusedData {
  const Backend    *backend        = nullptr;
  MatAIJFusedFormat requested      = MAT_AIJFUSED_AUTO;
  PetscBool         keep_transpose = PETSC_FALSE; /* -mat_aijfused_transpose: build A^T with the mirror */
  Mirror            mirror;
  Mirror            transpose; /* of A^T, built at the first MatMultTranspose() and kept */
  Mirror            operand;   /* A in CSR, without diagonal positions, for the backend's sparse products (see
                                  MatSeqAIJFusedOperand()); once there, the source of A's other copies      */
  HostOps host;
};

inline MatFusedData *Data(Mat A)
{
  return static_cast<MatFusedData *>(A->spptr);
}

/* Brings the CSR copy of A for the backend's products up to date with A as of the object state `state` (as
   RefreshMirror()): its structure when A's nonzero state changed (or at the first call), then its values; made
   on the backend from A's mirror when that is current (nothing uploaded), else from A's host arrays          */
PetscErrorCode RefreshOperand(Mat A, PetscObjectState state)
{
  MatFusedData   *d = Data(A);
  Mirror         *c = &d->operand;
  const Mirror   *m = &d->mirror;
  const PetscInt *ai, *aj;
  PetscScalar    *aa;
  PetscInt        nr, nc;
  PetscBool       structure, mirrored;

  PetscFunctionBegin;
  if (c->generation >= 0 && state == c->state && A->nonzerostate == c->nonzerostate) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(SeqAIJHostCSR(A, &nr, &nc, &ai, &aj, &aa));
  structure = (c->generation < 0 || A->nonzerostate != c->nonzerostate) ? PETSC_TRUE : PETSC_FALSE;
  mirrored  = (m->generation >= 0 && m->state == state && m->nonzerostate == A->nonzerostate && m->rowptr && m->vals && d->backend->csr_from_sell) ? PETSC_TRUE : PETSC_FALSE;
  if (mirrored)
    PetscCall(MirrorCSRFrom(d->backend, ai, m, structure, c));
  else {
    if (structure) PetscCall(MirrorBuildOperand(d->backend, nr, nc, ai, aj, c));
    PetscCall(MirrorSetValues(d->backend, aa, PETSC_FALSE, c));
  }
  c->nonzerostate = A->nonzerostate; /* after a build, which resets the mirror */
  c->state        = state;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Brings the mirror of A up to date with A as of the object state `state` (the current one, or the
   one A will have when the PETSc operation now running returns): nothing when it is current at that
   state, else the values, into the existing arrays, and first the structure (a new generation) when
   the nonzero state changed or a CSR mirror aliasing PETSc's arrays no longer finds them there.  When
   A has a CSR copy for products, the mirror is made from it on the backend (only it is refreshed from
   the host arrays)                                                                                  */
PetscErrorCode RefreshMirror(Mat A, PetscObjectState state)
{
  MatFusedData   *d     = Data(A);
  Mirror         *m     = &d->mirror;
  const PetscBool alias = d->backend->host_memory;
  const bool      from  = d->operand.generation >= 0; /* from the operand copy */
  const PetscInt *ai, *aj;
  PetscScalar    *aa;
  PetscInt        nr, nc;
  PetscBool       moved;

  PetscFunctionBegin;
  if (state == m->state) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(SeqAIJHostCSR(A, &nr, &nc, &ai, &aj, &aa));
  if (from) PetscCall(RefreshOperand(A, state));
  moved = (alias && m->format == MAT_AIJFUSED_CSR && (m->csr.rowptr != ai || m->csr.colidx != aj || m->csr.vals != aa)) ? PETSC_TRUE : PETSC_FALSE;
  if (A->nonzerostate != m->nonzerostate || moved) {
    if (from)
      PetscCall(MirrorBuildOnBackend(d->backend, d->requested, nr, nc, ai, d->operand.csr.rowptr, d->operand.csr.colidx, m));
    else
      PetscCall(MirrorBuild(d->backend, d->requested, nr, nc, ai, aj, alias, m));
    m->nonzerostate = A->nonzerostate;
  }
  if (from)
    PetscCall(MirrorSetBackendValues(d->backend, d->operand.csr.vals, m));
  else
    PetscCall(MirrorSetValues(d->backend, aa, alias, m));
  m->state = state;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The mirror of A^T (from A's CSR arrays, MirrorTransposeRefresh()), brought up to date with A as of
   the object state `state` with the mirror of A, so that its structure changes only with the
   generation of A's mirror                                                                     */
PetscErrorCode RefreshTransposeMirror(Mat A, PetscObjectState state)
{
  MatFusedData   *d     = Data(A);
  Mirror         *m     = &d->transpose;
  const PetscInt  nrows = A->rmap->n, ncols = A->cmap->n;
  const PetscInt *ai, *aj;
  PetscScalar    *aa;
  PetscInt        nr, nc;

  PetscFunctionBegin;
  PetscCall(RefreshMirror(A, state));
  if (state == m->state) PetscFunctionReturn(PETSC_SUCCESS);
  if (d->operand.generation >= 0 && d->backend->csr_transpose) {
    PetscCall(RefreshOperand(A, state)); /* a mirror updated in place (MatScale()) leaves it behind */
    PetscCall(MirrorTransposeFromBackend(d->backend, d->requested, &d->operand.csr, A->nonzerostate != m->nonzerostate ? PETSC_TRUE : PETSC_FALSE, m));
  } else {
    PetscCall(SeqAIJHostCSR(A, &nr, &nc, &ai, &aj, &aa));
    PetscCall(MirrorTransposeRefresh(d->backend, d->requested, nrows, ncols, ai, aj, aa, A->nonzerostate != m->nonzerostate ? PETSC_TRUE : PETSC_FALSE, m));
  }
  m->nonzerostate = A->nonzerostate;
  m->state        = state;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The mirror of A (transpose: of A^T) for a product, refreshed if A changed since the last refresh */
PetscErrorCode GetMirror(Mat A, PetscBool transpose, Mirror **mirror)
{
  PetscObjectState state;

  PetscFunctionBegin;
  PetscCheck(A->assembled, PetscObjectComm((PetscObject)A), PETSC_ERR_ARG_WRONGSTATE, "Matrix must be assembled before a fused product");
  PetscCheck(!A->structure_only, PetscObjectComm((PetscObject)A), PETSC_ERR_ARG_WRONGSTATE, "A structure-only matrix (MatSetOption(A, MAT_STRUCTURE_ONLY, PETSC_TRUE)) has no values for a product");
  PetscCall(PetscObjectStateGet((PetscObject)A, &state));
  PetscCall(transpose ? RefreshTransposeMirror(A, state) : RefreshMirror(A, state));
  *mirror = transpose ? &Data(A)->transpose : &Data(A)->mirror;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* MirrorProduct() for the mirror m of A or of A^T, logged as A's FusedSpMVDots event */
PetscErrorCode Product(Mat A, const Mirror *m, const PetscScalar *wl, const PetscScalar *wr, const PetscScalar *in, PetscScalar *out, int ndots, const DotSpec *specs, PetscScalar *dots)
{
  PetscFunctionBegin;
  PetscCall(PetscLogEventBegin(events.spmv_dots, A, 0, 0, 0));
  PetscCall(MirrorProduct(Data(A)->backend, m, wl, wr, in, out, ndots, specs, dots));
  PetscCall(PetscLogEventEnd(events.spmv_dots, A, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* MirrorProductUpdate() for the mirror m of A or of A^T, logged as A's FusedSpMVDots event */
static PetscErrorCode ProductUpdate(Mat A, const Mirror *m, const RowUpdate *f, const PetscScalar *in, PetscScalar *out)
{
  PetscFunctionBegin;
  PetscCall(PetscLogEventBegin(events.spmv_dots, A, 0, 0, 0));
  PetscCall(MirrorProductUpdate(Data(A)->backend, m, f, in, out));
  PetscCall(PetscLogEventEnd(events.spmv_dots, A, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* y = op(A) x on the backend's arrays (fused vectors); op(A) = A or A^T */
PetscErrorCode MultDevice(Mat A, PetscBool transpose, Vec x, Vec y)
{
  Mirror      *m;
  PetscScalar *xa, *ya;

  PetscFunctionBegin;
  PetscCall(GetMirror(A, transpose, &m));
  PetscCall(VecFusedGetArray(x, PETSC_MEMORY_ACCESS_READ, &xa));
  PetscCall(VecFusedGetArray(y, PETSC_MEMORY_ACCESS_WRITE, &ya));
  PetscCall(Product(A, m, nullptr, nullptr, xa, ya, 0, nullptr, nullptr));
  PetscCall(VecFusedRestoreArray(y, PETSC_MEMORY_ACCESS_WRITE, &ya));
  PetscCall(VecFusedRestoreArray(x, PETSC_MEMORY_ACCESS_READ, &xa));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* y = the update `terms` of op(A) x on the backend's arrays (fused vectors): one kernel.  A term's vector may be y (its
   entries are read before they are overwritten), not x.                                                            */
static PetscErrorCode UpdateDevice(Mat A, PetscBool transpose, const MatUpdateTerms &terms, Vec x, Vec y)
{
  Vec const    tv[4] = {terms.wl, terms.add, terms.u, terms.v};
  PetscScalar *ta[4] = {}, *xa, *ya;
  PetscBool    yread = PETSC_FALSE;
  Mirror      *m;
  RowUpdate    f;

  PetscFunctionBegin;
  PetscCheck(x != y, PetscObjectComm((PetscObject)A), PETSC_ERR_ARG_IDN, "The input and the output of a sparse product must be different vectors");
  for (Vec v : tv) yread = (PetscBool)(yread || v == y);
  PetscCall(GetMirror(A, transpose, &m));
  PetscCall(VecFusedGetArray(x, PETSC_MEMORY_ACCESS_READ, &xa));
  for (int k = 0; k < 4; ++k)
    if (tv[k] && tv[k] != y) PetscCall(VecFusedGetArray(tv[k], PETSC_MEMORY_ACCESS_READ, &ta[k]));
  PetscCall(VecFusedGetArray(y, yread ? PETSC_MEMORY_ACCESS_READ_WRITE : PETSC_MEMORY_ACCESS_WRITE, &ya));
  for (int k = 0; k < 4; ++k)
    if (tv[k] == y) ta[k] = ya;
  f.wl    = ta[0];
  f.add   = ta[1];
  f.u     = ta[2];
  f.v     = ta[3];
  f.sign  = terms.sign;
  f.gamma = terms.gamma;
  f.alpha = terms.alpha;
  f.beta  = terms.beta;
  PetscCall(ProductUpdate(A, m, &f, xa, ya));
  PetscCall(VecFusedRestoreArray(y, yread ? PETSC_MEMORY_ACCESS_READ_WRITE : PETSC_MEMORY_ACCESS_WRITE, &ya));
  for (int k = 0; k < 4; ++k)
    if (tv[k] && tv[k] != y) PetscCall(VecFusedRestoreArray(tv[k], PETSC_MEMORY_ACCESS_READ, &ta[k]));
  PetscCall(VecFusedRestoreArray(x, PETSC_MEMORY_ACCESS_READ, &xa));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* y = op(A) x + z on the backend's arrays: one kernel */
PetscErrorCode MultAddDevice(Mat A, PetscBool transpose, Vec x, Vec z, Vec y)
{
  MatUpdateTerms terms;

  PetscFunctionBegin;
  terms.add = z;
  PetscCall(UpdateDevice(A, transpose, terms, x, y));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* MatResidual(): r = b - A x, on the backend in one kernel when the vectors are fused, else PETSc's default (MatMult(),
   VecAYPX()) */
PetscErrorCode MatResidual_SeqAIJFused(Mat A, Vec b, Vec x, Vec r)
{
  PetscBool backend;

  PetscFunctionBegin;
  PetscCall(MatFusedOnBackend({b, x, r}, &backend));
  if (backend) {
    MatUpdateTerms terms;

    terms.add  = b;
    terms.sign = -1;
    PetscCall(UpdateDevice(A, PETSC_FALSE, terms, x, r));
  } else {
    PetscCall(MatMult(A, x, r));
    PetscCall(VecAYPX(r, -1.0, b));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* MATSEQAIJFUSED for the templates of aijfused_private.hpp.  Its products run on the backend when the vectors are
   fused; y = A^T x with the explicit transpose, kept after its first use                                          */
struct SeqAIJFusedType {
  using DataType                     = MatFusedData;
  static constexpr const char *base  = MATSEQAIJ;
  static constexpr const char *fused = MATSEQAIJFUSED;

  static PetscErrorCode OnBackend(Mat, std::initializer_list<Vec> vecs, PetscBool *backend)
  {
    PetscFunctionBegin;
    PetscCall(MatFusedOnBackend(vecs, backend));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  static PetscErrorCode Device(Mat A, PetscBool transpose, Vec x, Vec z, Vec y)
  {
    PetscFunctionBegin;
    if (z)
      PetscCall(MultAddDevice(A, transpose, x, z, y));
    else
      PetscCall(MultDevice(A, transpose, x, y));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  static PetscErrorCode FreeContents(MatFusedData *d)
  {
    PetscFunctionBegin;
    PetscCall(MirrorFree(d->backend, &d->mirror));
    PetscCall(MirrorFree(d->backend, &d->transpose));
    PetscCall(MirrorFree(d->backend, &d->operand));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  /* A new format frees the mirror and the transpose (their generation becomes -1): they are built again, in that
     format, at the next final assembly or product.  The CSR copy of the products stays (products made before
     read it).                                                                                              */
  static PetscErrorCode SetFormat(Mat A, MatAIJFusedFormat format)
  {
    MatFusedData *d = Data(A);

    PetscFunctionBegin;
    if (format != d->requested) {
      PetscCall(MirrorFree(d->backend, &d->mirror));
      PetscCall(MirrorFree(d->backend, &d->transpose));
    }
    d->requested = format;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  /* A matrix that has a mirror (it was used on the backend) gets it (and with -mat_aijfused_transpose the one of A^T)
     up to date: the values into its existing arrays when the nonzero pattern is the same, else first a new structure.
     A matrix never used on the backend gets its mirror at its first use (GetMirror()): the matrices a setup makes and
     uses only on the host (PCGAMG's graphs, intermediate products) are never copied.                              */
  static PetscErrorCode AssemblyRefresh(Mat A, PetscObjectState state)
  {
    MatFusedData *d = Data(A);

    PetscFunctionBegin;
    if (d->mirror.generation < 0) PetscFunctionReturn(PETSC_SUCCESS);
    PetscCall(d->keep_transpose ? RefreshTransposeMirror(A, state) : RefreshMirror(A, state));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  static void InstallOps(Mat A, MatFusedData *d);
  static void RestoreOps(Mat A, const HostOps &host);
};

/* The diagonal positions of A's mirror (MirrorDiagonal()) when the mirror has A's current pattern */
PetscErrorCode MirrorDiagonalOf(Mat A)
{
  MatFusedData   *d = Data(A);
  const PetscInt *ai, *aj;
  PetscScalar    *aa;
  PetscInt        nr, nc;

  PetscFunctionBegin;
  if (d->mirror.generation < 0 || d->mirror.diagonal || A->nonzerostate != d->mirror.nonzerostate) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(SeqAIJHostCSR(A, &nr, &nc, &ai, &aj, &aa));
  PetscCall(MirrorDiagonal(d->backend, ai, aj, &d->mirror));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* On the backend from the mirror when A has one; else on the host: a matrix used only on the host (PCGAMG's graph,
   whose diagonal scales it) gets no mirror for its diagonal                                                     */
PetscErrorCode MatGetDiagonal_SeqAIJFused(Mat A, Vec v)
{
  MatFusedData *d = Data(A);
  PetscBool     device;
  Mirror       *m;
  PetscScalar  *va;
  PetscInt      n;

  PetscFunctionBegin;
  PetscCall(MatFusedOnBackend({v}, &device));
  if (!device || d->mirror.generation < 0) {
    PetscCall(d->host.getdiagonal(A, v));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(VecGetLocalSize(v, &n));
  PetscCheck(n == A->rmap->n, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "Vector has %" PetscInt_FMT " local entries, the matrix %" PetscInt_FMT " rows", n, A->rmap->n);
  PetscCall(GetMirror(A, PETSC_FALSE, &m));
  PetscCall(MirrorDiagonalOf(A));
  PetscCall(VecFusedGetArray(v, PETSC_MEMORY_ACCESS_WRITE, &va));
  PetscCall(d->backend->diag_get(A->rmap->n, m->diagpos, MirrorValues(m), va));
  PetscCall(VecFusedRestoreArray(v, PETSC_MEMORY_ACCESS_WRITE, &va));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Y = a X + Y with X a MATSEQAIJ (fused or not), on the host, row by row through both sorted rows: X's pattern a subset
   of Y's (PCGAMG's prolongator smoothing, MatAYPX()), X added in place; a different pattern, the union into a new
   matrix preallocated with every column index at once, whose header is merged into Y as MATSEQAIJ does.  MATSEQAIJ
   adds each entry of X through MatSetValues() in both cases (a search per entry: 0.35 s of GAMG's setup on laplace3d
   4e6).  The same pattern, and a "subset" that is not one: MATSEQAIJ's.                                              */
PetscErrorCode MatAXPY_SeqAIJFused(Mat Y, PetscScalar a, Mat X, MatStructure str)
{
  MatFusedData         *d = Data(Y);
  const PetscInt       *yi, *yj, *xi, *xj;
  PetscScalar          *ya, *xa, *ba;
  PetscInt              m, n, xm, xn;
  PetscBool             seqaij, same = PETSC_FALSE;
  std::vector<PetscInt> lengths, cols;
  Mat                   B;

  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompareAny((PetscObject)X, &seqaij, MATSEQAIJ, MATSEQAIJFUSED, ""));
  if (str == SAME_NONZERO_PATTERN || !seqaij || X->structure_only || Y->structure_only || !X->assembled || !Y->assembled) {
    PetscCall(d->host.axpy(Y, a, X, str));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(SeqAIJHostCSR(Y, &m, &n, &yi, &yj, &ya));
  PetscCall(SeqAIJHostCSR(X, &xm, &xn, &xi, &xj, &xa));
  PetscCheck(m == xm && n == xn, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "MatAXPY of a %" PetscInt_FMT " x %" PetscInt_FMT " and a %" PetscInt_FMT " x %" PetscInt_FMT " matrix", m, n, xm, xn);
  if (str == SUBSET_NONZERO_PATTERN) {
    PetscBool subset = PETSC_TRUE;

    for (PetscInt i = 0; i < m && subset; ++i)
      for (PetscInt p = yi[i], q = xi[i]; q < xi[i + 1] && subset; ++q) {
        while (p < yi[i + 1] && yj[p] < xj[q]) ++p;
        subset = p < yi[i + 1] && yj[p] == xj[q] ? PETSC_TRUE : PETSC_FALSE;
      }
    if (!subset) {
      PetscCall(d->host.axpy(Y, a, X, str));
      PetscFunctionReturn(PETSC_SUCCESS);
    }
    PetscCall(MatSeqAIJGetArray(Y, &ya));
    for (PetscInt i = 0; i < m; ++i)
      for (PetscInt p = yi[i], q = xi[i]; q < xi[i + 1]; ++q) {
        while (yj[p] < xj[q]) ++p;
        ya[p] += a * xa[q];
      }
    PetscCall(MatSeqAIJRestoreArray(Y, &ya));
    PetscCall(PetscLogFlops(2.0 * xi[m]));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  if (str == UNKNOWN_NONZERO_PATTERN && xi[m] == yi[m]) {
    PetscCall(PetscArraycmp(xi, yi, m + 1, &same));
    if (same) PetscCall(PetscArraycmp(xj, yj, yi[m], &same));
  }
  if (same) {
    PetscCall(d->host.axpy(Y, a, X, SAME_NONZERO_PATTERN));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  FusedKSPCallCXX(lengths.assign(m, 0); cols.reserve(PetscMax(xi[m], yi[m])));
  for (PetscInt i = 0; i < m; ++i) {
    PetscInt p = yi[i], q = xi[i];

    while (p < yi[i + 1] || q < xi[i + 1]) {
      const PetscInt c = q == xi[i + 1] || (p < yi[i + 1] && yj[p] < xj[q]) ? yj[p] : xj[q];

      if (p < yi[i + 1] && yj[p] == c) ++p;
      if (q < xi[i + 1] && xj[q] == c) ++q;
      FusedKSPCallCXX(cols.push_back(c));
      ++lengths[i];
    }
  }
  PetscCall(MatCreate(PetscObjectComm((PetscObject)Y), &B));
  PetscCall(PetscObjectSetName((PetscObject)B, ((PetscObject)Y)->name));
  PetscCall(MatSetLayouts(B, Y->rmap, Y->cmap));
  PetscCall(MatSetType(B, ((PetscObject)Y)->type_name));
  PetscCall(MatSeqAIJSetPreallocation(B, 0, lengths.data()));
  if (!cols.empty()) PetscCall(MatSeqAIJSetColumnIndices(B, cols.data()));
  PetscCall(MatSeqAIJGetArrayWrite(B, &ba));
  for (PetscInt i = 0, k = 0; i < m; ++i) {
    PetscInt p = yi[i], q = xi[i];

    for (PetscInt e = 0; e < lengths[i]; ++e, ++k) {
      ba[k] = 0;
      if (p < yi[i + 1] && yj[p] == cols[k]) ba[k] += ya[p++];
      if (q < xi[i + 1] && xj[q] == cols[k]) ba[k] += a * xa[q++];
    }
  }
  PetscCall(MatSeqAIJRestoreArrayWrite(B, &ba));
  PetscCall(MatAssemblyBegin(B, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(B, MAT_FINAL_ASSEMBLY));
  PetscCall(PetscLogFlops(2.0 * xi[m]));
  PetscCall(MatHeaderMerge(Y, &B));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* MatScale() and MatShift(): MATSEQAIJ's operation `host`, then `device`, the same operation on the mirror, instead of
   a refresh at the next product, when it can be repeated there (`inplace`) and the mirror was current and has its own
   value array.  Not when the host operation changed the nonzero pattern or refreshed the mirror itself (it assembled
   A: MatShift() of a matrix missing diagonal entries).  The mirror is then marked current at the state A has after the
   operation (MatScale() and MatShift() increase the object state after the type's method).                          */
template <class Host, class Device> PetscErrorCode RepeatOnMirror(Mat A, PetscBool inplace, Host host, Device device)
{
  Mirror                *m      = &Data(A)->mirror;
  const PetscObjectState before = m->state;
  PetscObjectState       state;
  PetscBool              current;

  PetscFunctionBegin;
  PetscCall(PetscObjectStateGet((PetscObject)A, &state));
  current = (inplace && m->vals && state == m->state && A->nonzerostate == m->nonzerostate) ? PETSC_TRUE : PETSC_FALSE;
  PetscCall(host());
  if (current && m->state == before && A->nonzerostate == m->nonzerostate) {
    PetscCall(device());
    PetscCall(StateAfterOperation((PetscObject)A, &m->state));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MatScale_SeqAIJFused(Mat A, PetscScalar a)
{
  MatFusedData *d = Data(A);

  PetscFunctionBegin;
  PetscCall(RepeatOnMirror(
      A, PETSC_TRUE, [&] { return d->host.scale(A, a); }, [&] { return MatFusedBlas(d->backend)->scale(d->mirror.nvals, a, d->mirror.vals); }));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* repeated on the mirror only when every row stores its diagonal entry */
PetscErrorCode MatShift_SeqAIJFused(Mat A, PetscScalar a)
{
  MatFusedData *d = Data(A);

  PetscFunctionBegin;
  PetscCall(MirrorDiagonalOf(A));
  PetscCall(RepeatOnMirror(
      A, d->mirror.alldiag, [&] { return d->host.shift(A, a); }, [&] { return d->backend->diag_shift(PetscMin(A->rmap->n, A->cmap->n), d->mirror.diagpos, a, d->mirror.vals); }));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MatSetFromOptions_SeqAIJFused(Mat A, PetscOptionItems PetscOptionsObject)
{
  MatFusedData     *d      = Data(A);
  MatAIJFusedFormat format = d->requested;

  PetscFunctionBegin;
  if (d->host.setfromoptions) PetscCall(d->host.setfromoptions(A, PetscOptionsObject));
  PetscOptionsHeadBegin(PetscOptionsObject, "MATSEQAIJFUSED options");
  PetscCall(PetscOptionsEnum("-mat_aijfused_format", "Storage of the matrix on the backend", "MatAIJFusedSetFormat", MatAIJFusedFormats, (PetscEnum)format, (PetscEnum *)&format, nullptr));
  PetscCall(SeqAIJFusedType::SetFormat(A, format));
  PetscCall(PetscOptionsBool("-mat_aijfused_transpose", "Build and keep the explicit transpose with the mirror (else at the first MatMultTranspose)", "MATSEQAIJFUSED", d->keep_transpose, &d->keep_transpose, nullptr));
  PetscOptionsHeadEnd();
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MatView_AIJFused(Mat A, PetscViewer viewer)
{
  MatFusedData     *d = Data(A);
  PetscBool         ascii;
  PetscViewerFormat format;
  char              backend[PETSC_MAX_PATH_LEN];

  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERASCII, &ascii));
  if (ascii) {
    PetscCall(PetscViewerGetFormat(viewer, &format));
    if (format == PETSC_VIEWER_ASCII_INFO || format == PETSC_VIEWER_ASCII_INFO_DETAIL) {
      const Mirror *m = &d->mirror;
      /* -ksp_view shows the matrix too: the KSP line already says why the host backend runs */
      PetscCall(BackendDescription(d->backend, PETSC_FALSE, backend, sizeof(backend)));
      if (!MatAIJFusedIsType<SeqAIJFusedType>(A))
        PetscCall(PetscViewerASCIIPrintf(viewer, "FusedKSP matrix, backend: %s\n", backend));
      else if (m->nonzerostate < 0)
        PetscCall(PetscViewerASCIIPrintf(viewer, "FusedKSP matrix, backend: %s, device format: %s (chosen when the copy is built: at assembly or the next product)\n", backend, MatAIJFusedFormats[d->requested]));
      else if (m->format == MAT_AIJFUSED_SELL)
        PetscCall(PetscViewerASCIIPrintf(viewer, "FusedKSP matrix, backend: %s, device format: SELL-P (slice height %" PetscInt_FMT ", %d threads per row, %.1f%% padding)\n", backend, FUSED_SELL_HEIGHT, m->sell.threads,
                                         m->nvals ? 100.0 * (m->nvals - (double)MirrorEntries(m)) / (double)m->nvals : 0.0));
      else
        PetscCall(PetscViewerASCIIPrintf(viewer, "FusedKSP matrix, backend: %s, device format: CSR\n", backend));
    }
  }
  PetscCall(d->host.view(A, viewer));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* In-place factorizations: the factors replace A's data (MatHeaderMerge()), after which A is a factored
   MATSEQAIJ with no products, so A becomes a plain MATSEQAIJ first and MATSEQAIJ factors it */
PetscErrorCode MatLUFactor_SeqAIJFused(Mat A, IS row, IS col, const MatFactorInfo *info)
{
  PetscFunctionBegin;
  PetscCall(MatAIJFusedToBase<SeqAIJFusedType>(A));
  PetscUseTypeMethod(A, lufactor, row, col, info);
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MatILUFactor_SeqAIJFused(Mat A, IS row, IS col, const MatFactorInfo *info)
{
  PetscFunctionBegin;
  PetscCall(MatAIJFusedToBase<SeqAIJFusedType>(A));
  PetscUseTypeMethod(A, ilufactor, row, col, info);
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MatCholeskyFactor_SeqAIJFused(Mat A, IS perm, const MatFactorInfo *info)
{
  PetscFunctionBegin;
  PetscCall(MatAIJFusedToBase<SeqAIJFusedType>(A));
  PetscUseTypeMethod(A, choleskyfactor, perm, info);
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MatICCFactor_SeqAIJFused(Mat A, IS perm, const MatFactorInfo *info)
{
  PetscFunctionBegin;
  PetscCall(MatAIJFusedToBase<SeqAIJFusedType>(A));
  PetscUseTypeMethod(A, iccfactor, perm, info);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The table of FUSED_SEQAIJ_OPS, and MatResidual(), which MATSEQAIJ leaves to PETSc's default (no `residual`) */
void SeqAIJFusedType::InstallOps(Mat A, MatFusedData *d)
{
  FUSED_SEQAIJ_OPS(FUSED_INSTALL_OP)
  A->ops->setfromoptions = MatSetFromOptions_SeqAIJFused; /* also where MATSEQAIJ has none (3.26): the type's own options */
  d->host.residual       = A->ops->residual;
  A->ops->residual       = MatResidual_SeqAIJFused;
}

void SeqAIJFusedType::RestoreOps(Mat A, const HostOps &host)
{
  FUSED_SEQAIJ_OPS(FUSED_RESTORE_OP)
  A->ops->residual = host.residual;
}

} // namespace

PetscErrorCode MatIsSeqAIJFused(Mat A, PetscBool *fused)
{
  PetscFunctionBegin;
  *fused = (MatAIJFusedIsType<SeqAIJFusedType>(A) && Data(A)->backend == ActiveBackend()) ? PETSC_TRUE : PETSC_FALSE;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MatSeqAIJFusedHostProductSetFromOptions(Mat A, PetscErrorCode (**f)(Mat))
{
  PetscFunctionBegin;
  *f = MatAIJFusedIsType<SeqAIJFusedType>(A) ? Data(A)->host.productsetfromoptions : nullptr;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
  MatSeqAIJFusedMultUpdate - see aijfused.hpp
*/
PetscErrorCode MatSeqAIJFusedMultUpdate(Mat A, const RowUpdate *f, const PetscScalar *in, PetscScalar *out)
{
  Mirror *m;

  PetscFunctionBegin;
  PetscCall(GetMirror(A, PETSC_FALSE, &m));
  PetscCall(ProductUpdate(A, m, f, in, out));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
  MatSeqAIJFusedGetView - see aijfused.hpp
*/
PetscErrorCode MatSeqAIJFusedGetView(Mat A, const CSRView **csr, const SELLView **sell, PetscInt64 *nnz)
{
  Mirror *m;

  PetscFunctionBegin;
  PetscCall(GetMirror(A, PETSC_FALSE, &m));
  *csr  = m->format == MAT_AIJFUSED_CSR ? &m->csr : nullptr;
  *sell = m->format == MAT_AIJFUSED_SELL ? &m->sell : nullptr;
  *nnz  = MirrorEntries(m);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
  MatSeqAIJFusedOperand - see aijfused_private.hpp
*/
PetscErrorCode MatSeqAIJFusedOperand(Mat A, const Backend *be, const Mirror **csr)
{
  PetscObjectState state;

  PetscFunctionBegin;
  *csr = nullptr;
  if (!MatAIJFusedIsType<SeqAIJFusedType>(A) || Data(A)->backend != be || be->host_memory || !A->assembled || A->structure_only) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(PetscObjectStateGet((PetscObject)A, &state));
  PetscCall(RefreshOperand(A, state));
  *csr = &Data(A)->operand;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
  MatSeqAIJFusedOperandFromProduct - see aijfused_private.hpp
*/
PetscErrorCode MatSeqAIJFusedOperandFromProduct(Mat C, const Backend *be, const SpGEMMView *G)
{
  MatFusedData   *d;
  Mirror         *c;
  const PetscInt *ci, *cj;
  PetscScalar    *ca;
  PetscInt        m, n;

  PetscFunctionBegin;
  if (!MatAIJFusedIsType<SeqAIJFusedType>(C) || Data(C)->backend != be || be->host_memory) PetscFunctionReturn(PETSC_SUCCESS);
  d = Data(C);
  c = &d->operand;
  PetscCall(SeqAIJHostCSR(C, &m, &n, &ci, &cj, &ca));
  PetscCheck(ci[m] == G->nnz, PETSC_COMM_SELF, PETSC_ERR_PLIB, "A product's result has %" PetscInt_FMT " entries on the host and %" PetscInt64_FMT " on the backend", ci[m], G->nnz);
  if (c->generation < 0 || C->nonzerostate != c->nonzerostate) {
    PetscCall(MirrorBuildOnBackend(be, MAT_AIJFUSED_CSR, m, n, ci, G->rowptr, G->colidx, c));
    c->nonzerostate = C->nonzerostate;
  }
  PetscCall(MirrorSetBackendValues(be, G->vals, c));
  PetscCall(StateAfterOperation((PetscObject)C, &c->state));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
  MatSeqAIJFusedKeepCurrent - see aijfused_private.hpp
*/
PetscErrorCode MatSeqAIJFusedKeepCurrent(Mat C)
{
  PetscObjectState state;

  PetscFunctionBegin;
  if (!MatAIJFusedIsType<SeqAIJFusedType>(C)) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(PetscObjectStateGet((PetscObject)C, &state));
  for (Mirror *m : {&Data(C)->mirror, &Data(C)->transpose, &Data(C)->operand})
    if (m->generation >= 0 && m->state == state) m->state = state + 1;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
  MatAIJFusedGetArraysGeneration - see aijfused.hpp
*/
PetscErrorCode MatAIJFusedGetArraysGeneration(Mat A, PetscInt64 *generation)
{
  PetscFunctionBegin;
  *generation = MatAIJFusedIsType<SeqAIJFusedType>(A) ? Data(A)->mirror.generation : -1;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MatSeqAIJFusedMultDots(Mat A, const PetscScalar *wl, const PetscScalar *wr, const PetscScalar *in, PetscScalar *out, int ndots, const DotSpec *specs, PetscScalar *dots)
{
  Mirror *m;

  PetscFunctionBegin;
  if (Data(A)->keep_transpose) PetscCall(GetMirror(A, PETSC_TRUE, &m)); /* -mat_aijfused_transpose */
  PetscCall(GetMirror(A, PETSC_FALSE, &m));
  PetscCall(Product(A, m, wl, wr, in, out, ndots, specs, dots));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MatSeqAIJFusedMultTransposeDots(Mat A, const PetscScalar *in, PetscScalar *out, int ndots, const DotSpec *specs, PetscScalar *dots)
{
  Mirror *m;

  PetscFunctionBegin;
  PetscCall(GetMirror(A, PETSC_TRUE, &m));
  PetscCall(Product(A, m, nullptr, nullptr, in, out, ndots, specs, dots));
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace fusedksp

/*MC
   MATSEQAIJFUSED - "seqaijfused" - A `MATSEQAIJ` matrix mirrored on the active FusedKSP backend in
   CSR or SELL-P format, so the fused solvers run "SpMV + partial dot products" in one kernel.
   `MatCreateVecs()` returns `VECFUSED` vectors; assembly and all host operations are `MATSEQAIJ`'s;
   `MatMult()`, `MatMultAdd()`, `MatMultTranspose()`, `MatMultTransposeAdd()`, `MatGetDiagonal()`,
   `MatScale()` and `MatShift()` run on the device when the vectors are fused.  Every other `MATSEQAIJ`
   operation works unchanged (host path): `MatConvert()` to and from `MATSEQAIJ` in every reuse mode keeps
   the values in place, products (`MatMatMult()`, `MatPtAP()`, ...) use `MATSEQAIJ`'s algorithms and
   give a `MATSEQAIJFUSED` result.

   Options Database Keys:
+  -mat_type seqaijfused - sets the matrix type in `MatSetFromOptions()`
.  -mat_aijfused_format <csr,sell,auto> - storage on the backend (default auto, see `MatAIJFusedSetFormat()`)
-  -mat_aijfused_transpose - build the explicit transpose with the mirror (else at the first `MatMultTranspose()`)

   Level: beginner

   Notes:
   The backend copy is made at the first product on fused vectors (or the first solve of a fused KSP); from
   then on `MatAssemblyEnd()` (`MAT_FINAL_ASSEMBLY`) refreshes it: when only the values changed (same nonzero
   state), only the values are copied again, into the same device arrays.  Matrices only used on the host
   (the graphs and intermediate products of `PCGAMG`'s setup) are never copied.  A product
   after a change made without assembly (`MatZeroEntries()`, `MatDiagonalScale()`, ...) copies the
   values first.  `MatScale()` and `MatShift()` (when every row stores its diagonal entry) update
   the copy in place.  `MatMultTranspose()` on the device uses
   an explicit transpose, built at its first use (or with the mirror, -mat_aijfused_transpose) and
   kept, refreshed when the matrix changes; it costs the memory of a second copy of the matrix.

.seealso: `MATAIJFUSED`, `MATMPIAIJFUSED`, `VECFUSED`, `KSPFUSEDCG`
M*/
PETSC_INTERN PetscErrorCode MatCreate_SeqAIJFused(Mat A)
{
  PetscFunctionBegin;
  PetscCall(fusedksp::MatCreate_AIJFusedType<fusedksp::SeqAIJFusedType>(A));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*MC
   MATAIJFUSED - "aijfused" - `MATSEQAIJFUSED` on one process, `MATMPIAIJFUSED` on several.

   Options Database Keys:
+  -mat_type aijfused - sets the matrix type in `MatSetFromOptions()`
-  -dm_mat_type aijfused - matrices created by a `DM`

   Level: beginner

.seealso: `MATSEQAIJFUSED`, `MATMPIAIJFUSED`, `VECFUSED`
M*/
PETSC_INTERN PetscErrorCode MatCreate_AIJFused(Mat A)
{
  PetscFunctionBegin;
  PetscCall(fusedksp::FusedSetTypeForComm(A, MATSEQAIJFUSED, MATMPIAIJFUSED, MatSetType));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*@
  MatAIJFusedSetFormat - Sets how a `MATAIJFUSED` matrix is stored on the FusedKSP backend.

  Logically Collective

  Input Parameters:
+ A      - the matrix
- format - `MAT_AIJFUSED_CSR`, `MAT_AIJFUSED_SELL` (SELL-P, slices of 32 rows padded to their longest
           row) or `MAT_AIJFUSED_AUTO` (default)

  Options Database Key:
. -mat_aijfused_format <csr,sell,auto> - the format

  Level: intermediate

  Notes:
  The rule of `MAT_AIJFUSED_AUTO`: SELL-P on the CUDA backend when its padding adds at most 25% to the
  stored entries (matrices whose rows in each group of 32 have similar lengths, such as stencils and
  finite elements on structured or smooth meshes), else CSR; on the host backend always CSR.  The
  threads per row of SELL-P come from the average row length: 1 below 16 entries, 2 below 32, 4
  below 64, else 8.  CSR uses the smallest power of two >= the average row length (2 to 32).  SELL-P
  reads each entry with fully coalesced loads and no row-pointer indirection; CSR wastes no memory
  on padding.  After a change of format the backend copy is built again, in the new format, at the
  next assembly or product.

.seealso: `MATAIJFUSED`, `MATSEQAIJFUSED`
@*/
PetscErrorCode MatAIJFusedSetFormat(Mat A, MatAIJFusedFormat format)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(A, MAT_CLASSID, 1);
  PetscValidLogicalCollectiveEnum(A, format, 2);
  PetscTryMethod(A, "MatAIJFusedSetFormat_C", (Mat, MatAIJFusedFormat), (A, format));
  PetscFunctionReturn(PETSC_SUCCESS);
}
