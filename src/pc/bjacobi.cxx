/*
   Block Jacobi (PCBJACOBI) with one block per process: its transposed application on the backend for fused vectors.

   PETSc's PCApply() of a single-block PCBJACOBI lends the block's solver the local part of the vectors
   (VecGetLocalVectorRead()/VecGetLocalVector(), which fused vectors implement by lending their backend arrays), so
   with a fused ILU(0)/ICC(0) block it runs on the device.  Its PCApplyTranspose() instead places the vectors' host
   arrays (VecGetArrayRead()/VecPlaceArray()), which on a device backend copies both vectors each application.
   The plugin registers the type name again, with a constructor that creates PETSc's PC and wraps its setup: after
   PETSc's, PCApplyTranspose() is wrapped: with one block on the process and fused vectors it lends the local parts as
   PCApply() does and solves with KSPSolveTranspose() of the block's KSP; otherwise it calls PETSc's.  Everything else
   (several blocks per process, blocks over several processes, the views, reset, destroy) is PETSc's.
*/
#include "sys/fusedksp_impl.hpp"
#include "vec/vecfused.hpp"
#include <petsc/private/pcimpl.h>

namespace fusedksp
{

static const char COMPOSED_NAME[] = "FusedKSPBJacobiTranspose";

/* PETSc's constructor of PCBJACOBI, found in PCList before the type is registered again */
static PetscErrorCode (*petsc_create_bjacobi)(PC) = nullptr;

struct BJacobiData {
  PetscErrorCode (*setup)(PC)                    = nullptr; /* PETSc's PCSetUp_BJacobi() */
  PetscErrorCode (*applytranspose)(PC, Vec, Vec) = nullptr; /* PETSc's, as its setup left it */
  Vec x = nullptr, y = nullptr;                             /* the local parts lent to the block's KSP */
};

static PetscErrorCode BJacobiDestroyData(void *ctx)
{
  BJacobiData *d = *(BJacobiData **)ctx;

  PetscFunctionBegin;
  PetscCall(VecDestroy(&d->x));
  PetscCall(VecDestroy(&d->y));
  PetscCall(PetscFree(d));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode BJacobiGet(PC pc, BJacobiData **d)
{
  PetscFunctionBegin;
  PetscCall(PetscObjectContainerQuery((PetscObject)pc, COMPOSED_NAME, (PetscCtxRt)d));
  PetscCheck(*d, PetscObjectComm((PetscObject)pc), PETSC_ERR_PLIB, "PC %s without the data of FusedKSP's block Jacobi", ((PetscObject)pc)->type_name);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* y = B^{-T} x: with fused vectors and one block on this process solved by a KSP of this process alone, the local
   parts of x and y lent to KSPSolveTranspose() of its KSP; otherwise PETSc's operation */
static PetscErrorCode PCApplyTranspose_BJacobiFused(PC pc, Vec x, Vec y)
{
  BJacobiData *d;
  KSP         *ksp;
  PetscInt     nlocal, n;
  PetscMPIInt  size = 0;
  PetscBool    fx, fy;

  PetscFunctionBegin;
  PetscCall(BJacobiGet(pc, &d));
  PetscCall(VecIsFused(x, &fx));
  PetscCall(VecIsFused(y, &fy));
  PetscCall(PCBJacobiGetSubKSP(pc, &nlocal, NULL, &ksp));
  if (nlocal == 1) PetscCallMPI(MPI_Comm_size(PetscObjectComm((PetscObject)ksp[0]), &size));
  if (!fx || !fy || size != 1) {
    PetscCall((*d->applytranspose)(pc, x, y));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(VecGetLocalSize(x, &n));
  if (d->x) {
    PetscInt m;
    PetscCall(VecGetLocalSize(d->x, &m));
    if (m != n) {
      PetscCall(VecDestroy(&d->x));
      PetscCall(VecDestroy(&d->y));
    }
  }
  if (!d->x) { /* vectors of the block's matrix, so that they live where its solves run */
    Mat B;
    PetscCall(KSPGetOperators(ksp[0], NULL, &B));
    PetscCall(MatCreateVecs(B, &d->y, &d->x));
  }
  PetscCall(VecGetLocalVectorRead(x, d->x));
  PetscCall(VecGetLocalVector(y, d->y));
  PetscCall(PetscLogEventBegin(PC_ApplyTransposeOnBlocks, ksp[0], d->x, d->y, 0));
  PetscCall(KSPSolveTranspose(ksp[0], d->x, d->y));
  PetscCall(KSPCheckSolve(ksp[0], pc, d->y));
  PetscCall(PetscLogEventEnd(PC_ApplyTransposeOnBlocks, ksp[0], d->x, d->y, 0));
  PetscCall(VecRestoreLocalVectorRead(x, d->x));
  PetscCall(VecRestoreLocalVector(y, d->y));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* PETSc's setup (which installs the operations of the block layout), then the transposed application wrapped */
static PetscErrorCode PCSetUp_BJacobiFused(PC pc)
{
  BJacobiData *d;

  PetscFunctionBegin;
  PetscCall(BJacobiGet(pc, &d));
  PetscCall((*d->setup)(pc));
  if (!pc->ops->applytranspose || pc->ops->applytranspose == PCApplyTranspose_BJacobiFused) PetscFunctionReturn(PETSC_SUCCESS);
  d->applytranspose       = pc->ops->applytranspose;
  pc->ops->applytranspose = PCApplyTranspose_BJacobiFused;
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode PCCreate_BJacobiFused(PC pc)
{
  BJacobiData *d;

  PetscFunctionBegin;
  PetscCall((*petsc_create_bjacobi)(pc));
  PetscCall(PetscNew(&d));
  *d             = BJacobiData(); /* the member defaults (PetscNew() zeroes) */
  d->setup       = pc->ops->setup;
  pc->ops->setup = PCSetUp_BJacobiFused;
  PetscCall(PetscObjectContainerCompose((PetscObject)pc, COMPOSED_NAME, d, BJacobiDestroyData));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode PCRegisterBJacobiFused(void)
{
  PetscFunctionBegin;
  PetscCall(PCInitializePackage());
  if (!petsc_create_bjacobi) PetscCall(PetscFunctionListFind(PCList, PCBJACOBI, &petsc_create_bjacobi));
  PetscCheck(petsc_create_bjacobi, PETSC_COMM_SELF, PETSC_ERR_PLIB, "PETSc's %s is not registered", PCBJACOBI);
  PetscCall(PCRegister(PCBJACOBI, PCCreate_BJacobiFused));
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace fusedksp
