/*
   MATSEQAIJFUSED: PETSc's MATSEQAIJ (assembly, MatSetValues,
   factorizations and every host operation stay PETSc's) whose vectors are fused (MatCreateVecs
   gives VECFUSED) and whose CSR arrays are mirrored in the backend's memory for the fused
   "SpMV + partial reductions" kernels.  The mirror is refreshed lazily: when the matrix's object
   state changed since the last copy, the values are copied again, and the structure too when its
   nonzero state changed.  With the host backend the mirror is PETSc's own CSR arrays.
   MATMPIAIJFUSED is in mpiaijfused.cxx.
*/
#include "mat/aijfused.hpp"
#include "vec/vecfused.hpp"
#include <petsc/private/matimpl.h>
#include "sys/objectdata.hpp"

namespace fusedksp
{
namespace
{

struct MatFusedData {
  const Backend   *backend = nullptr;
  CSRView          csr; /* backend arrays (mirrored backends) or PETSc's (host) */
  PetscInt        *browptr = nullptr, *bcolidx = nullptr;
  PetscScalar     *bvals = nullptr;
  PetscInt         nnz   = 0;
  PetscObjectState state = -1, nonzerostate = -1;
  PetscErrorCode (*host_destroy)(Mat)           = nullptr;
  PetscErrorCode (*host_mult)(Mat, Vec, Vec)    = nullptr;
  PetscErrorCode (*host_view)(Mat, PetscViewer) = nullptr;
};

ObjectData<MatFusedData> registry;

inline MatFusedData *Data(Mat A)
{
  return registry.Get(A);
}

PetscErrorCode FreeMirror(MatFusedData *d)
{
  PetscFunctionBegin;
  if (d->backend != HostBackend()) {
    if (d->browptr) PetscCall(d->backend->free_bytes(d->browptr));
    if (d->bcolidx) PetscCall(d->backend->free_bytes(d->bcolidx));
    if (d->bvals) PetscCall(d->backend->free_bytes(d->bvals));
  }
  d->browptr = d->bcolidx = nullptr;
  d->bvals                = nullptr;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MatDestroy_SeqAIJFused(Mat A)
{
  MatFusedData *d = Data(A);

  PetscFunctionBegin;
  PetscCall(FreeMirror(d));
  PetscErrorCode (*host_destroy)(Mat) = d->host_destroy;
  delete registry.Take(A);
  PetscCall(host_destroy(A));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* y = A x on the backend when both vectors are fused, else PETSc's host product */
PetscErrorCode MatMult_SeqAIJFused(Mat A, Vec x, Vec y)
{
  PetscBool    fx, fy;
  CSRView      csr;
  PetscScalar *xa, *ya;

  PetscFunctionBegin;
  PetscCall(VecIsFused(x, &fx));
  PetscCall(VecIsFused(y, &fy));
  if (!fx || !fy || Data(A)->backend == HostBackend()) {
    PetscCall(Data(A)->host_mult(A, x, y));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(MatSeqAIJFusedGetCSR(A, &csr));
  PetscCall(VecFusedGetArray(x, PETSC_MEMORY_ACCESS_READ, &xa));
  PetscCall(VecFusedGetArray(y, PETSC_MEMORY_ACCESS_WRITE, &ya));
  PetscCall(PetscLogEventBegin(events.spmv_dots, A, x, y, 0));
  PetscCall(Data(A)->backend->spmv_dots(&csr, nullptr, nullptr, xa, ya, 0, nullptr, nullptr));
  PetscCall(PetscLogEventEnd(events.spmv_dots, A, x, y, 0));
  PetscCall(PetscLogGpuFlops(2.0 * Data(A)->nnz));
  PetscCall(VecFusedRestoreArray(y, PETSC_MEMORY_ACCESS_WRITE, &ya));
  PetscCall(VecFusedRestoreArray(x, PETSC_MEMORY_ACCESS_READ, &xa));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MatView_AIJFused(Mat A, PetscViewer viewer)
{
  PetscBool         ascii;
  PetscViewerFormat format;

  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERASCII, &ascii));
  if (ascii) {
    PetscCall(PetscViewerGetFormat(viewer, &format));
    if (format == PETSC_VIEWER_ASCII_INFO || format == PETSC_VIEWER_ASCII_INFO_DETAIL) PetscCall(PetscViewerASCIIPrintf(viewer, "FusedKSP matrix, backend: %s, device format: CSR\n", Data(A)->backend->name));
  }
  PetscCall(Data(A)->host_view(A, viewer));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MatConvertToFused(Mat A, const char *name)
{
  MatFusedData *d = new MatFusedData;

  PetscFunctionBegin;
  d->backend      = ActiveBackend();
  d->host_destroy = A->ops->destroy;
  d->host_mult    = A->ops->mult;
  d->host_view    = A->ops->view;
  registry.Set(A, d);
  A->ops->destroy = MatDestroy_SeqAIJFused;
  A->ops->view    = MatView_AIJFused;
  A->ops->mult    = MatMult_SeqAIJFused;
  PetscCall(MatSetVecType(A, VECFUSED));
  PetscCall(PetscObjectChangeTypeName((PetscObject)A, name));
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace

PetscErrorCode MatIsSeqAIJFused(Mat A, PetscBool *fused)
{
  PetscFunctionBegin;
  *fused = (A && Data(A) && A->ops->destroy == MatDestroy_SeqAIJFused && Data(A)->backend == ActiveBackend()) ? PETSC_TRUE : PETSC_FALSE;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MatSeqAIJFusedGetCSR(Mat A, CSRView *csr)
{
  MatFusedData    *d = Data(A);
  const PetscInt  *ai, *aj;
  PetscScalar     *aa;
  PetscMemType     mtype;
  PetscObjectState state;

  PetscFunctionBegin;
  PetscCheck(A->assembled, PetscObjectComm((PetscObject)A), PETSC_ERR_ARG_WRONGSTATE, "Matrix must be assembled before a fused product");
  PetscCall(PetscObjectStateGet((PetscObject)A, &state));
  if (state != d->state) {
    PetscCall(MatSeqAIJGetCSRAndMemType(A, &ai, &aj, &aa, &mtype));
    PetscCheck(mtype == PETSC_MEMTYPE_HOST, PETSC_COMM_SELF, PETSC_ERR_SUP, "Expected host CSR arrays");
    d->csr.nrows = A->rmap->n;
    d->csr.ncols = A->cmap->n;
    d->nnz       = ai[A->rmap->n];
    if (d->backend == HostBackend()) {
      d->csr.rowptr = ai;
      d->csr.colidx = aj;
      d->csr.vals   = aa;
    } else {
      const Backend *be = d->backend;
      if (A->nonzerostate != d->nonzerostate) {
        PetscCall(FreeMirror(d));
        PetscCall(be->malloc_bytes(sizeof(PetscInt) * (A->rmap->n + 1), (void **)&d->browptr));
        PetscCall(be->malloc_bytes(sizeof(PetscInt) * PetscMax(d->nnz, 1), (void **)&d->bcolidx));
        PetscCall(be->malloc_bytes(sizeof(PetscScalar) * PetscMax(d->nnz, 1), (void **)&d->bvals));
        PetscCall(be->copy_to_backend(d->browptr, ai, sizeof(PetscInt) * (A->rmap->n + 1)));
        PetscCall(be->copy_to_backend(d->bcolidx, aj, sizeof(PetscInt) * d->nnz));
        d->nonzerostate = A->nonzerostate;
      }
      PetscCall(be->copy_to_backend(d->bvals, aa, sizeof(PetscScalar) * d->nnz));
      PetscCall(PetscLogCpuToGpu((PetscLogDouble)(sizeof(PetscScalar) * d->nnz)));
      d->csr.rowptr = d->browptr;
      d->csr.colidx = d->bcolidx;
      d->csr.vals   = d->bvals;
    }
    d->state = state;
  }
  *csr = d->csr;
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace fusedksp

/*MC
   MATSEQAIJFUSED - "seqaijfused" - A `MATSEQAIJ` matrix whose CSR arrays are mirrored on the active
   FusedKSP backend, so the fused solvers run "SpMV + partial dot products" in one kernel.
   `MatCreateVecs()` returns `VECFUSED` vectors; assembly and all host operations are `MATSEQAIJ`'s.

   Options Database Key:
.  -mat_type seqaijfused - sets the matrix type in `MatSetFromOptions()`

   Level: beginner

.seealso: `MATAIJFUSED`, `MATMPIAIJFUSED`, `VECFUSED`, `KSPFUSEDCG`
M*/
PETSC_INTERN PetscErrorCode MatCreate_SeqAIJFused(Mat A)
{
  PetscFunctionBegin;
  PetscCall(MatSetType(A, MATSEQAIJ));
  PetscCall(fusedksp::MatConvertToFused(A, MATSEQAIJFUSED));
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
  PetscMPIInt size;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_size(PetscObjectComm((PetscObject)A), &size));
  PetscCall(MatSetType(A, size == 1 ? MATSEQAIJFUSED : MATMPIAIJFUSED));
  PetscFunctionReturn(PETSC_SUCCESS);
}
