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

/* The backend's copy of a PETSc device matrix (composed on the matrix), in the format MirrorChooseFormat() picks for
   its pattern: SELL-P, a copy of its own whose structure comes from PETSc's host pattern and device column indices and
   whose values come from PETSc's device values after a change of the matrix's state; CSR, PETSc's device column
   indices and values read in place with row offsets of its own from PETSc's host pattern (PETSc's device row offsets
   skip the empty rows when it compresses them).  Made again after a change of nonzero pattern or backend.  Always CSR
   with -fused_tune_petsc_sell_copy false (no copy of the matrix).                                              */
struct PETScMirror {
  static constexpr const char *name         = "FusedKSPPETScMirror";
  const Backend               *be           = nullptr; /* of m */
  PetscObjectState             nonzerostate = -1, state = -1;
  PetscBool                    sell  = PETSC_FALSE; /* the format for the pattern */
  PetscBool                    built = PETSC_FALSE; /* m has its structure */
  Mirror                       m;
};

static PetscErrorCode PETScMirrorDestroy(PetscCtxRt ctx)
{
  PETScMirror *p = *(PETScMirror **)ctx;

  PetscFunctionBegin;
  if (p->be) PetscCall(MirrorFree(p->be, &p->m));
  PetscCall(PetscFree(p));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The record of A (created at the first call), its format decided again after a change of pattern or backend */
static PetscErrorCode PETScMirrorGet(Mat A, PETScMirror **out)
{
  PETScMirror *p = nullptr;

  PetscFunctionBegin;
  PetscCall(PetscObjectContainerQuery((PetscObject)A, PETScMirror::name, (PetscCtxRt)&p));
  if (!p) {
    PetscCall(PetscNew(&p));
    *p = PETScMirror();
    PetscCall(PetscObjectContainerCompose((PetscObject)A, PETScMirror::name, p, PETScMirrorDestroy));
  }
  if (p->nonzerostate != A->nonzerostate || p->be != ActiveBackend()) {
    const PetscInt *ai, *aj;
    PetscInt        n;
    PetscBool       done;

    if (p->be) PetscCall(MirrorFree(p->be, &p->m));
    p->be    = ActiveBackend();
    p->state = -1;
    p->built = PETSC_FALSE;
    PetscCall(MatGetRowIJ(A, 0, PETSC_FALSE, PETSC_FALSE, &n, &ai, &aj, &done));
    PetscCheck(done, PetscObjectComm((PetscObject)A), PETSC_ERR_SUP, "Matrix of type %s gave no row offsets", ((PetscObject)A)->type_name);
    p->sell = (PetscBool)(tuning.petsc_sell_copy && MirrorChooseFormat(p->be, MAT_AIJFUSED_AUTO, n, ai) == MAT_AIJFUSED_SELL);
    PetscCall(MatRestoreRowIJ(A, 0, PETSC_FALSE, PETSC_FALSE, &n, &ai, &aj, &done));
    p->nonzerostate = A->nonzerostate;
  }
  *out = p;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MatIsPETScDevice(Mat A, PetscBool *yes, PetscBool *sell, const char **why)
{
  const char *whynot = nullptr;

  PetscFunctionBegin;
  *yes = PETSC_FALSE;
  if (sell) *sell = PETSC_FALSE;
#if defined(PETSC_HAVE_CUDA) && !defined(PETSC_USE_64BIT_INDICES)
  if (ActiveBackend()->wait_foreign) {
    PetscBool cusparse, mpicusparse;

    PetscCall(PetscObjectTypeCompare((PetscObject)A, MATSEQAIJCUSPARSE, &cusparse));
    PetscCall(PetscObjectTypeCompare((PetscObject)A, MATMPIAIJCUSPARSE, &mpicusparse));
    if (mpicusparse) {
      if (!A->assembled || A->structure_only)
        whynot = "PETSc's mpiaijcusparse operator is not assembled or has no values";
      else if (A->boundtocpu)
        whynot = "PETSc's mpiaijcusparse operator is bound to the CPU";
      else {
        Mat Ad;

        PetscCall(MatMPIAIJGetSeqAIJ(A, &Ad, nullptr, nullptr));
        PetscCall(MatIsPETScDevice(Ad, yes, sell, why));
        PetscFunctionReturn(PETSC_SUCCESS);
      }
    } else if (cusparse) {
      if (!A->assembled || A->structure_only)
        whynot = "PETSc's seqaijcusparse operator is not assembled or has no values";
      else if (A->factortype != MAT_FACTOR_NONE)
        whynot = "PETSc's seqaijcusparse operator is a factor";
      else if (A->boundtocpu)
        whynot = "PETSc's seqaijcusparse operator is bound to the CPU";
      else {
        PETScMirror *p = nullptr;

        PetscCall(PETScMirrorGet(A, &p));
        *yes = PETSC_TRUE;
        if (sell) *sell = p->sell;
        if (!p->sell) whynot = tuning.petsc_sell_copy ? "its rows suit SELL-P badly (over 25% padding): cuSPARSE's CSR product is faster than the fused one" : "-fused_tune_petsc_sell_copy false";
      }
    }
  }
#else
  (void)A;
#endif
  if (why) *why = whynot;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MatPETScDeviceGetMirror(Mat A, const Mirror **m, PetscBool *ordered)
{
  PETScMirror     *p = nullptr;
  const PetscInt  *ai, *aj, *dai, *daj;
  PetscScalar     *daa;
  PetscMemType     mtype;
  PetscObjectState state;
  PetscInt         n;
  PetscBool        done;
  void            *stream;

  PetscFunctionBegin;
  PetscCall(PETScMirrorGet(A, &p));
  PetscCall(MatSeqAIJGetCSRAndMemType(A, &dai, &daj, &daa, &mtype)); /* the values copied to the device if they are not there */
  PetscCheck(PetscMemTypeDevice(mtype), PETSC_COMM_SELF, PETSC_ERR_PLIB, "Matrix of type %s gave host arrays for a fused kernel on the device", ((PetscObject)A)->type_name);
  if (!*ordered) { /* the backend's work from here on after PETSc's on the matrix and the vectors */
    PetscCall(PETScStream(&stream));
    PetscCall(ActiveBackend()->wait_foreign(stream));
    *ordered = PETSC_TRUE;
  }
  if (!p->built) { /* the structure from PETSc's host row offsets and its device column indices */
    PetscCall(MatGetRowIJ(A, 0, PETSC_FALSE, PETSC_FALSE, &n, &ai, &aj, &done));
    if (p->sell)
      PetscCall(MirrorBuildOnBackend(p->be, MAT_AIJFUSED_SELL, n, A->cmap->n, ai, nullptr, daj, &p->m));
    else
      PetscCall(MirrorBuildRowOffsets(p->be, n, A->cmap->n, ai, &p->m));
    PetscCall(MatRestoreRowIJ(A, 0, PETSC_FALSE, PETSC_FALSE, &n, &ai, &aj, &done));
    p->built = PETSC_TRUE;
  }
  if (p->sell) {
    PetscCall(PetscObjectStateGet((PetscObject)A, &state));
    if (state != p->state) { /* the values, in the CSR order of both copies */
      PetscCall(PetscLogEventBegin(events.mirror, A, 0, 0, 0));
      PetscCall(MirrorSetBackendValues(p->be, daa, &p->m));
      PetscCall(PetscLogEventEnd(events.mirror, A, 0, 0, 0));
      p->state = state;
    }
  } else {
    p->m.csr.colidx = daj;
    p->m.csr.vals   = daa;
  }
  *m = &p->m;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The record of a MATMPIAIJCUSPARSE's parallel product, composed on it */
struct PETScParallel {
  static constexpr const char *name         = "FusedKSPPETScParallel";
  const Backend               *be           = nullptr; /* of the arrays below */
  PetscObjectState             nonzerostate = -1, offdiag_state = -1, offdiag_nonzerostate = -1;
  PetscSF                      sf = nullptr; /* PETSc's, referenced: the halo's pattern */
  OffDiagRows                  offdiag;
  Halo                         halo;
  PetscScalar                 *work = nullptr;
};

static PetscErrorCode PETScParallelFree(PETScParallel *p)
{
  PetscFunctionBegin;
  if (p->be) {
    PetscCall(OffDiagRowsFree(p->be, &p->offdiag));
    PetscCall(HaloFree(p->be, &p->halo));
    PetscCall(p->be->free_bytes(p->work));
  }
  p->work = nullptr;
  PetscCall(PetscSFDestroy(&p->sf));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode PETScParallelDestroy(PetscCtxRt ctx)
{
  PETScParallel *p = *(PETScParallel **)ctx;

  PetscFunctionBegin;
  PetscCall(PETScParallelFree(p));
  p->~PETScParallel();
  PetscCall(PetscFree(p));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MatPETScDeviceGetParallelProduct(Mat A, ParallelProduct *pp, PetscScalar **work, PetscBool *ordered)
{
  PETScParallel     *p = nullptr;
  Mat                Ad, Ao;
  PetscObjectState   state;
  const PetscInt    *ai, *aj;
  const PetscScalar *aa;
  PetscInt           m, n;
  PetscBool          done;
  PetscSF            sf;

  PetscFunctionBegin;
  PetscCall(MatMPIAIJGetSeqAIJ(A, &Ad, &Ao, nullptr));
  PetscCall(PetscObjectContainerQuery((PetscObject)A, PETScParallel::name, (PetscCtxRt)&p));
  if (!p) {
    PetscCall(PetscNew(&p));
    new (p) PETScParallel();
    PetscCall(PetscObjectContainerCompose((PetscObject)A, PETScParallel::name, p, PETScParallelDestroy));
  }
  PetscCall(MatGetMultPetscSF(A, &sf));
  if (p->nonzerostate != A->nonzerostate || p->sf != sf || p->be != ActiveBackend()) { /* the same on every rank */
    PetscCall(PETScParallelFree(p));
    p->be = ActiveBackend();
    PetscCall(PetscObjectReference((PetscObject)sf));
    p->sf = sf;
    PetscCall(MatGetLocalSize(Ao, nullptr, &n));
    PetscCall(HaloBuild((PetscObject)A, p->be, PETSC_FALSE, sf, n, &p->halo));
    PetscCall(p->be->malloc_bytes(sizeof(PetscScalar) * PetscMax(A->rmap->n, 1), (void **)&p->work));
    p->nonzerostate         = A->nonzerostate;
    p->offdiag_state        = -1;
    p->offdiag_nonzerostate = -1;
  }
  PetscCall(MatPETScDeviceGetMirror(Ad, &pp->diag, ordered));
  PetscCall(PetscObjectStateGet((PetscObject)Ao, &state));
  if (state != p->offdiag_state) {
    PetscCall(PetscLogEventBegin(events.mirror, A, 0, 0, 0));
    PetscCall(MatGetRowIJ(Ao, 0, PETSC_FALSE, PETSC_FALSE, &m, &ai, &aj, &done));
    PetscCheck(done, PETSC_COMM_SELF, PETSC_ERR_SUP, "Matrix of type %s gave no row offsets", ((PetscObject)Ao)->type_name);
    PetscCall(MatSeqAIJGetArrayRead(Ao, &aa)); /* PETSc copies the values to the host when only the device has them */
    PetscCall(MatGetLocalSize(Ao, nullptr, &n));
    PetscCall(OffDiagRowsMirror(p->be, m, n, ai, aj, aa, Ao->nonzerostate != p->offdiag_nonzerostate ? PETSC_TRUE : PETSC_FALSE, &p->offdiag));
    PetscCall(MatSeqAIJRestoreArrayRead(Ao, &aa));
    PetscCall(MatRestoreRowIJ(Ao, 0, PETSC_FALSE, PETSC_FALSE, &m, &ai, &aj, &done));
    PetscCall(PetscLogEventEnd(events.mirror, A, 0, 0, 0));
    p->offdiag_state        = state;
    p->offdiag_nonzerostate = Ao->nonzerostate;
  }
  pp->A       = A;
  pp->offdiag = &p->offdiag;
  pp->halo    = &p->halo;
  *work       = p->work;
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
