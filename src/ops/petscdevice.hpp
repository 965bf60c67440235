/*
   PETSc's own device vectors and matrices as operands of the fused operations (zero-copy on a PETSc built with CUDA).

   With the CUDA backend active, a VECSEQCUDA or VECMPICUDA vector takes part in the fused kernels like a fused
   vector: the kernels get its device array (VecGetArrayAndMemType() and friends) and run on it without a copy.
   PETSc's operations on such vectors (its MatMult() of MATAIJCUSPARSE, its GPU preconditioners, VecNorm(), ...)
   run on the stream of PETSc's current device context, the fused kernels on the backend's: each fused operation
   makes the backend wait for PETSc's stream before its kernels (PETScDeviceGetArray()) and PETSc's stream wait
   for the backend after them (PETScDeviceAfterBackend()), so both see each other's results in program order
   without blocking the host.
*/
#pragma once

#include "sys/fusedksp_impl.hpp"
#include "mat/mirror.hpp"
#include "mat/halo.hpp"

namespace fusedksp
{

/* PETSC_TRUE when v is a PETSc device vector whose array the active backend can use (PETSc built with CUDA, the
   CUDA backend active, v of type VECSEQCUDA or VECMPICUDA and not bound to the CPU) */
PetscErrorCode VecIsPETScDevice(Vec v, PetscBool *yes);

/* The device array of such a vector for a fused kernel.  mode PETSC_MEMORY_ACCESS_WRITE is taken as READ_WRITE (the
   kernels may read what they write).  The backend's work then waits for PETSc's stream when *ordered is PETSC_FALSE or
   the vector's data had to be copied to the device (on PETSc's stream), and *ordered becomes PETSC_TRUE: the vectors
   of one kernel cost one wait.  Restore with the same mode; written: the kernel wrote through an array got for
   reading (PETSc is then told so).                                                                              */
PetscErrorCode VecPETScDeviceGetArray(Vec v, PetscMemoryAccessMode mode, PetscScalar **a, PetscBool *ordered);
PetscErrorCode VecPETScDeviceRestoreArray(Vec v, PetscMemoryAccessMode mode, PetscBool written, PetscScalar **a);

/* PETSC_TRUE when the fused products can read A, a PETSc device matrix: PETSc built with CUDA (32-bit PetscInt, the
   width of cuSPARSE's indices), the CUDA backend active, A a MATSEQAIJCUSPARSE that is assembled, has values and is
   not factored nor bound to the CPU, or a MATMPIAIJCUSPARSE so assembled whose diagonal block is such a matrix (*sell
   and *why then that block's).  *sell (may be NULL): the backend reads it through a SELL-P copy of its own (the
   format MirrorChooseFormat() picks for its pattern, unless -fused_tune_petsc_sell_copy false), else PETSc's CSR arrays
   in place (the fused CSR product is slower
   than cuSPARSE's on short rows: OpsApplyOperator() leaves those products to PETSc).  Otherwise PETSC_FALSE.  When why
   is not NULL, *why says why not (NULL for a matrix of another type), or, for a matrix read in place, why not SELL-P. */
PetscErrorCode MatIsPETScDevice(Mat A, PetscBool *yes, PetscBool *sell, const char **why);

/* The backend's copy of such a matrix (MatSeqAIJGetCSRAndMemType(): PETSc's values go to the device first when only the
   host has them): SELL-P made at the first call after a change of its nonzero pattern, its values copied on the device
   after a change of its state; or CSR on PETSc's device column indices and values, with row offsets of its own.
   Composed on A, freed with it.  The backend's work (the copy included) then waits for PETSc's stream unless
   *ordered (as VecPETScDeviceGetArray()), and *ordered becomes PETSC_TRUE.  Valid until A changes.            */
PetscErrorCode MatPETScDeviceGetMirror(Mat A, const Mirror **m, PetscBool *ordered);

/* The parts of such a MATMPIAIJCUSPARSE for the fused parallel products (ParallelProductDots(), ParallelProductUpdate()):
   its diagonal block's copy (MatPETScDeviceGetMirror()), its off-diagonal block's rows on the backend (from PETSc's host
   arrays, the values brought to the host first when only the device has them, after each change of the block's
   state), the halo exchange of PETSc's product PetscSF (MatGetMultPetscSF(); through pinned host buffers), and a work
   array of the local rows.  Composed on A, rebuilt after a change of its nonzero pattern.  *ordered as
   MatPETScDeviceGetMirror().  Collective (the halo's build).                                                     */
PetscErrorCode MatPETScDeviceGetParallelProduct(Mat A, ParallelProduct *p, PetscScalar **work, PetscBool *ordered);

/* PETSc's stream waits for the backend's work queued so far (after the kernels of a fused operation on PETSc's
   vectors) */
PetscErrorCode PETScDeviceAfterBackend(void);

} // namespace fusedksp
