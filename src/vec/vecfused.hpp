/* Fused vectors: access to the array in the backend's memory space (for src/ops) */
#pragma once

#include "sys/fusedksp_impl.hpp"

namespace fusedksp
{
/* PETSC_TRUE if v is a VECSEQFUSED or VECMPIFUSED whose storage lives with the active backend */
PetscErrorCode VecIsFused(Vec v, PetscBool *fused);

/* The local array of a fused vector in the backend's memory (device memory for the CUDA backend),
   synchronized for the access mode; restore marks where the valid data now lives.             */
PetscErrorCode VecFusedGetArray(Vec v, PetscMemoryAccessMode mode, PetscScalar **a);
PetscErrorCode VecFusedRestoreArray(Vec v, PetscMemoryAccessMode mode, PetscScalar **a);

/* Gives a VECSEQ/VECMPI becoming fused the device versions of the standard BLAS-1 operations
   (src/vec/vecfused_ops.cxx), saving its host operations for the host backend and plain operands */
PetscErrorCode VecFusedInstallDeviceOps(Vec v);
} // namespace fusedksp
