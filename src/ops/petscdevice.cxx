/* PETSc's own device vectors and matrices as operands of the fused operations: see petscdevice.hpp */
#include "ops/petscdevice.hpp"
#include <petscdevice.h>
#include <petsc/private/vecimpl.h>
#include <petsc/private/matimpl.h>

namespace fusedksp
{

PetscErrorCode VecIsPETScDevice(Vec v, PetscBool *yes)
{
  PetscFunctionBegin;
  *yes = PETSC_FALSE;
#if defined(PETSC_HAVE_CUDA)
  if (ActiveBackend()->wait_foreign) {
    PetscCall(PetscObjectTypeCompareAny((PetscObject)v, yes, VECSEQCUDA, VECMPICUDA, ""));
    if (*yes) {
      PetscBool cpu;

      PetscCall(VecBoundToCPU(v, &cpu));
      if (cpu) *yes = PETSC_FALSE;
    }
  }
#else
  (void)v;
#endif
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The stream of PETSc's current device context (a cudaStream_t) */
static PetscErrorCode PETScStream(void **stream)
{
  PetscDeviceContext dctx;
  PetscDeviceType    type;
  void              *handle;

  PetscFunctionBegin;
  PetscCall(PetscDeviceContextGetCurrentContext(&dctx));
  PetscCall(PetscDeviceContextGetDeviceType(dctx, &type));
  PetscCheck(type == PETSC_DEVICE_CUDA, PETSC_COMM_SELF, PETSC_ERR_SUP, "PETSc's current device context is of type %s, not CUDA: its vectors cannot take part in the kernels of the CUDA backend", PetscDeviceTypes[type]);
  PetscCall(PetscDeviceContextGetStreamHandle(dctx, &handle));
  *stream = *(void **)handle;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode VecPETScDeviceGetArray(Vec v, PetscMemoryAccessMode mode, PetscScalar **a, PetscBool *ordered)
{
  PetscMemType mtype;
  void        *stream;

  PetscFunctionBegin;
  if (v->offloadmask == PETSC_OFFLOAD_CPU || v->offloadmask == PETSC_OFFLOAD_UNALLOCATED) *ordered = PETSC_FALSE; /* a copy or allocation comes */
  if (mode == PETSC_MEMORY_ACCESS_READ)
    PetscCall(VecGetArrayReadAndMemType(v, (const PetscScalar **)a, &mtype));
  else
    PetscCall(VecGetArrayAndMemType(v, a, &mtype));
  PetscCheck(PetscMemTypeDevice(mtype), PETSC_COMM_SELF, PETSC_ERR_PLIB, "Vector of type %s gave a host array for a fused kernel on the device", ((PetscObject)v)->type_name);
  if (!*ordered) { /* after PETSc's work on the vectors, a copy to the device included */
    PetscCall(PETScStream(&stream));
    PetscCall(ActiveBackend()->wait_foreign(stream));
    *ordered = PETSC_TRUE;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode VecPETScDeviceRestoreArray(Vec v, PetscMemoryAccessMode mode, PetscBool written, PetscScalar **a)
{
  PetscMemType mtype;

  PetscFunctionBegin;
  if (mode == PETSC_MEMORY_ACCESS_READ) {
    PetscCall(VecRestoreArrayReadAndMemType(v, (const PetscScalar **)a));
    if (written) { /* the device copy is the valid one, and the vector changed */
      PetscScalar *w;

      PetscCall(VecGetArrayAndMemType(v, &w, &mtype));
      PetscCall(VecRestoreArrayAndMemType(v, &w));
    }
  } else
    PetscCall(VecRestoreArrayAndMemType(v, a));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* What the plugin reads of the host structure of a PETSc device matrix, for one nonzero state of it */
struct PETScCSRStructure {
  static constexpr const char *name         = "FusedKSPPETScCSRStructure";
  PetscObjectState             nonzerostate = -1;
  PetscInt64                   nnz          = 0;
  PetscBool                    emptyrow     = PETSC_FALSE; /* a row without entries */
};

/* The structure of A (composed on it), read again from the host row offsets after a change of nonzero pattern */
static PetscErrorCode PETScCSRStructureGet(Mat A, const PETScCSRStructure **out)
{
  PETScCSRStructure *s = nullptr;

  PetscFunctionBegin;
  PetscCall(PetscObjectContainerQuery((PetscObject)A, PETScCSRStructure::name, (PetscCtxRt)&s));
  if (!s) {
    PetscCall(PetscNew(&s));
    *s = PETScCSRStructure();
    PetscCall(PetscObjectContainerCompose((PetscObject)A, PETScCSRStructure::name, s, PetscCtxDestroyDefault));
  }
  if (s->nonzerostate != A->nonzerostate) {
    const PetscInt *ai, *aj;
    PetscInt        n;
    PetscBool       done;

    PetscCall(MatGetRowIJ(A, 0, PETSC_FALSE, PETSC_FALSE, &n, &ai, &aj, &done));
    PetscCheck(done, PetscObjectComm((PetscObject)A), PETSC_ERR_SUP, "Matrix of type %s gave no row offsets", ((PetscObject)A)->type_name);
    s->emptyrow = PETSC_FALSE;
    for (PetscInt i = 0; i < n && !s->emptyrow; ++i) s->emptyrow = (PetscBool)(ai[i + 1] == ai[i]);
    s->nnz = ai[n];
    PetscCall(MatRestoreRowIJ(A, 0, PETSC_FALSE, PETSC_FALSE, &n, &ai, &aj, &done));
    s->nonzerostate = A->nonzerostate;
  }
  *out = s;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MatIsPETScDevice(Mat A, PetscBool *yes, const char **why)
{
  const char *whynot = nullptr;

  PetscFunctionBegin;
  *yes = PETSC_FALSE;
#if defined(PETSC_HAVE_CUDA) && !defined(PETSC_USE_64BIT_INDICES)
  if (ActiveBackend()->wait_foreign) {
    PetscBool cusparse;

    PetscCall(PetscObjectTypeCompare((PetscObject)A, MATSEQAIJCUSPARSE, &cusparse));
    if (cusparse) {
      if (!A->assembled || A->structure_only)
        whynot = "PETSc's seqaijcusparse operator is not assembled or has no values";
      else if (A->factortype != MAT_FACTOR_NONE)
        whynot = "PETSc's seqaijcusparse operator is a factor";
      else if (A->boundtocpu)
        whynot = "PETSc's seqaijcusparse operator is bound to the CPU";
      else {
        const PETScCSRStructure *s = nullptr;

        PetscCall(PETScCSRStructureGet(A, &s));
        if (s->emptyrow)
          whynot = "PETSc's seqaijcusparse operator has a row without entries (its device copy may hold compressed rows)";
        else
          *yes = PETSC_TRUE;
      }
    }
  }
#else
  (void)A;
#endif
  if (why) *why = whynot;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MatPETScDeviceGetMirror(Mat A, Mirror *m, PetscBool *ordered)
{
  const PETScCSRStructure *s = nullptr;
  const PetscInt          *ai, *aj;
  PetscScalar             *aa;
  PetscMemType             mtype;
  void                    *stream;

  PetscFunctionBegin;
  PetscCall(PETScCSRStructureGet(A, &s));
  PetscCall(MatSeqAIJGetCSRAndMemType(A, &ai, &aj, &aa, &mtype));
  PetscCheck(PetscMemTypeDevice(mtype), PETSC_COMM_SELF, PETSC_ERR_PLIB, "Matrix of type %s gave host arrays for a fused kernel on the device", ((PetscObject)A)->type_name);
  *m            = Mirror();
  m->format     = MAT_AIJFUSED_CSR;
  m->csr.nrows  = A->rmap->n;
  m->csr.ncols  = A->cmap->n;
  m->csr.rowptr = ai;
  m->csr.colidx = aj;
  m->csr.vals   = aa;
  m->csr.nnz    = s->nnz;
  m->nnz        = s->nnz;
  m->nvals      = s->nnz;
  if (!*ordered) { /* after PETSc's work on the matrix */
    PetscCall(PETScStream(&stream));
    PetscCall(ActiveBackend()->wait_foreign(stream));
    *ordered = PETSC_TRUE;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode PETScDeviceAfterBackend(void)
{
  void *stream;

  PetscFunctionBegin;
  PetscCall(PETScStream(&stream));
  PetscCall(ActiveBackend()->foreign_wait(stream));
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace fusedksp
