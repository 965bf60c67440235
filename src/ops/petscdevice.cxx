/* PETSc's own device vectors as operands of the fused operations: see petscdevice.hpp */
#include "ops/petscdevice.hpp"
#include <petscdevice.h>
#include <petsc/private/vecimpl.h>

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

PetscErrorCode PETScDeviceAfterBackend(void)
{
  void *stream;

  PetscFunctionBegin;
  PetscCall(PETScStream(&stream));
  PetscCall(ActiveBackend()->foreign_wait(stream));
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace fusedksp
