/*
   What the PCs the plugin registers again share (src/pc/: PETSc's PC is created first, then some of its operations are
   wrapped): their data lives in a container composed on the PC, and PETSc's operations are kept there.

   Data names the container (static const char *name), says what it is in errors (static const char *what), and
   frees what it holds (static PetscErrorCode Free(Data *): on the backend, vectors); the view, reset and destroy
   wrappers below also use its members view, reset, destroy (PETSc's operations) and fusedmat (the matrix of the last
   setup is fused).
*/
#pragma once

#include "sys/fusedksp_impl.hpp"
#include "backend/backend.hpp"
#include <petsc/private/pcimpl.h>

namespace fusedksp
{

template <class Data> PetscErrorCode WrappedPCGet(PC pc, Data **d)
{
  PetscFunctionBegin;
  PetscCall(PetscObjectContainerQuery((PetscObject)pc, Data::name, (PetscCtxRt)d));
  PetscCheck(*d, PetscObjectComm((PetscObject)pc), PETSC_ERR_PLIB, "PC %s without the data of %s", ((PetscObject)pc)->type_name, Data::what);
  PetscFunctionReturn(PETSC_SUCCESS);
}

template <class Data> PetscErrorCode WrappedPCDestroyData(void *ctx)
{
  Data *d = *(Data **)ctx;

  PetscFunctionBegin;
  PetscCall(Data::Free(d));
  PetscCall(PetscFree(d));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* PETSc's constructor, then the data (the member defaults of Data) composed on the PC */
template <class Data> PetscErrorCode WrappedPCCreate(PC pc, PetscErrorCode (*create)(PC), Data **d)
{
  PetscFunctionBegin;
  PetscCall((*create)(pc));
  PetscCall(PetscNew(d));
  **d = Data(); /* PetscNew() zeroes */
  PetscCall(PetscObjectContainerCompose((PetscObject)pc, Data::name, *d, WrappedPCDestroyData<Data>));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* PETSc's view; *line: whether the wrapper adds its line (an ASCII viewer, the PC set up with a fused matrix) */
template <class Data> PetscErrorCode WrappedPCViewPETSc(PC pc, PetscViewer viewer, Data **d, PetscBool *line)
{
  PetscBool ascii;

  PetscFunctionBegin;
  PetscCall(WrappedPCGet(pc, d));
  if ((*d)->view) PetscCall((*(*d)->view)(pc, viewer));
  PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERASCII, &ascii));
  *line = (PetscBool)(ascii && pc->setupcalled && (*d)->fusedmat);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The wrapper's line of the view: "  NAME: WHAT on the B backend with fused vectors: N applications there, M by PETSc on the
   host (rank 0)DETAIL" (be: where the work runs, NULL: the line says it is PETSc's, WHY) */
inline PetscErrorCode WrappedPCViewLine(PetscViewer viewer, const char *name, const char *what, const Backend *be, PetscInt64 nbackend, PetscInt64 nhost, const char *detail, const char *why)
{
  char where[320];

  PetscFunctionBegin;
  if (!be) {
    PetscCall(PetscViewerASCIIPrintf(viewer, "  %s: %s\n", name, why));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(BackendDescription(be, PETSC_FALSE, where, sizeof(where)));
  PetscCall(PetscViewerASCIIPrintf(viewer, "  %s: %s on the %s backend with fused vectors%s: %" PetscInt64_FMT " applications there, %" PetscInt64_FMT " by PETSc on the host (rank 0)%s\n", name, what, where,
                                   be->host_memory ? "" : " (no host<->device vector copy)", nbackend, nhost, detail));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The backend's part freed, then PETSc's reset */
template <class Data> PetscErrorCode WrappedPCReset(PC pc)
{
  Data *d;

  PetscFunctionBegin;
  PetscCall(WrappedPCGet(pc, &d));
  PetscCall(Data::Free(d));
  d->fusedmat = PETSC_FALSE;
  if (d->reset) PetscCall((*d->reset)(pc));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The data freed, then PETSc's destroy */
template <class Data> PetscErrorCode WrappedPCDestroy(PC pc)
{
  Data *d;
  PetscErrorCode (*destroy)(PC);

  PetscFunctionBegin;
  PetscCall(WrappedPCGet(pc, &d));
  destroy = d->destroy;
  PetscCall(PetscObjectCompose((PetscObject)pc, Data::name, NULL)); /* frees d (WrappedPCDestroyData) */
  if (destroy) PetscCall((*destroy)(pc));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Registers `type` again with create, after finding PETSc's constructor of it (*petsc_create) in PCList */
inline PetscErrorCode WrappedPCRegister(PCType type, PetscErrorCode (**petsc_create)(PC), PetscErrorCode (*create)(PC))
{
  PetscFunctionBegin;
  PetscCall(PCInitializePackage());
  if (!*petsc_create) PetscCall(PetscFunctionListFind(PCList, type, petsc_create));
  PetscCheck(*petsc_create, PETSC_COMM_SELF, PETSC_ERR_PLIB, "PETSc's %s is not registered", type);
  PetscCall(PCRegister(type, create));
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace fusedksp
