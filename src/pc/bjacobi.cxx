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
#include "pc/wrapped.hpp"

namespace fusedksp
{

/* PETSc's constructor of PCBJACOBI, found in PCList before the type is registered again */
static PetscErrorCode (*petsc_create_bjacobi)(PC) = nullptr;

struct BJacobiData {
  static constexpr const char *name = "FusedKSPBJacobiTranspose", *what = "FusedKSP's block Jacobi";
  static PetscErrorCode        Free(BJacobiData *d);        /* the local parts' vectors */
  PetscErrorCode (*setup)(PC)                    = nullptr; /* PETSc's PCSetUp_BJacobi() */
  PetscErrorCode (*applytranspose)(PC, Vec, Vec) = nullptr; /* PETSc's, as its setup left it */
  Vec x = nullptr, y = nullptr;                             /* the local parts lent to the block's KSP */
};

PetscErrorCode BJacobiData::Free(BJacobiData *d)
{
  PetscFunctionBegin;
  PetscCall(VecDestroy(&d->x));
  PetscCall(VecDestroy(&d->y));
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
  PetscCall(WrappedPCGet(pc, &d));
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
  PetscCall(WrappedPCGet(pc, &d));
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
  PetscCall(WrappedPCCreate(pc, petsc_create_bjacobi, &d));
  d->setup       = pc->ops->setup;
  pc->ops->setup = PCSetUp_BJacobiFused;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode PCRegisterBJacobiFused(void)
{
  PetscFunctionBegin;
  PetscCall(WrappedPCRegister(PCBJACOBI, &petsc_create_bjacobi, PCCreate_BJacobiFused));
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace fusedksp
