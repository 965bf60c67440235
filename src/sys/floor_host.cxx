/*
   FusedKSPMeasureDeviceFloor() for builds without the CUDA backend (no nvcc at build time): there
   is no device to measure.  The CUDA backend's version, with the manual page, is in
   src/backend/cuda/cuda_floor.cu.
*/
#include <fusedksp.h>

#if !defined(FUSEDKSP_HAVE_CUDA)
PetscErrorCode FusedKSPMeasureDeviceFloor(PetscInt reps, PetscReal *latency_min_us, PetscReal *latency_median_us, PetscReal *copy_bandwidth_GBs)
{
  PetscFunctionBegin;
  SETERRQ(PETSC_COMM_SELF, PETSC_ERR_SUP, "FusedKSPMeasureDeviceFloor() needs the CUDA backend: this libfusedksp was built without the CUDA backend (no nvcc at build time)");
}
#endif
