/* FusedKSPMeasureDeviceFloor(): the benchmark floor of the active device (CUDA backend) */
#include "sys/fusedksp_impl.hpp"

/* PETSC_ERR_SUP unless the active backend is the CUDA one (`name`: the measuring function, for the message) */
static PetscErrorCode CheckCUDABackend([[maybe_unused]] const char *name)
{
  PetscFunctionBegin;
#if defined(FUSEDKSP_HAVE_CUDA)
  const char *backend;
  PetscBool   cuda;

  PetscCall(FusedKSPGetBackendName(&backend));
  PetscCall(PetscStrcmp(backend, "cuda", &cuda));
  PetscCheck(cuda, PETSC_COMM_SELF, PETSC_ERR_SUP, "The active FusedKSP backend is %s, not cuda (-fused_backend; FusedKSPInitializePackage() selects it)", backend);
#else
  SETERRQ(PETSC_COMM_SELF, PETSC_ERR_SUP, "%s() needs the CUDA backend: this libfusedksp was built without it (no nvcc at build time)", name);
#endif
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*@
  FusedKSPMeasureDeviceFloor - Measures the benchmark floor of the CUDA backend on the active device

  Not Collective

  Input Parameter:
. reps - number of timed repetitions of the latency measurement (at least 1)

  Output Parameters:
+ latency_min_us     - minimum time of two empty kernel launches + a 1 KB device->host copy + stream synchronization, in microseconds
. latency_median_us  - median of the same
- copy_bandwidth_GBs - device-to-device copy bandwidth, bytes read plus written, in GB/s

  Level: advanced

  Notes:
  The latency is what one iteration of `KSPFUSEDCG` costs on the device with no work to do (seed 000:
  2 kernels + 1 transfer per iteration); a benchmark reports time per iteration against
  latency + bytes moved / bandwidth.  The measurement uses a stream of its own and frees everything
  it allocates.  It raises `PETSC_ERR_SUP` when the library was built without the CUDA backend, no
  CUDA device is present, or the active FusedKSP backend is not "cuda" (`-fused_backend`).

.seealso: `FusedKSPGetBackendName()`, `KSPFUSEDCG`
@*/
PetscErrorCode FusedKSPMeasureDeviceFloor(PetscInt reps, PetscReal *latency_min_us, PetscReal *latency_median_us, PetscReal *copy_bandwidth_GBs)
{
  PetscFunctionBegin;
  PetscCheck(latency_min_us && latency_median_us && copy_bandwidth_GBs, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "The three output arguments must be non-NULL");
  PetscCheck(reps >= 1, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "reps must be at least 1, got %" PetscInt_FMT, reps);
  PetscCall(CheckCUDABackend("FusedKSPMeasureDeviceFloor"));
#if defined(FUSEDKSP_HAVE_CUDA)
  PetscCall(fusedksp::CUDAMeasureFloor(reps, latency_min_us, latency_median_us, copy_bandwidth_GBs));
#endif
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*@
  FusedKSPMeasureDeviceGraphFloor - Measures the floor of an iteration replayed from a recorded chunk
  (CUDA graph) on the active device

  Not Collective

  Input Parameters:
+ reps - number of timed replays (at least 1)
- its  - iterations per record (at least 1)

  Output Parameters:
+ min_us    - minimum time per iteration, in microseconds
- median_us - median of the same

  Level: advanced

  Notes:
  The record holds `its` iterations of two empty kernels and one 1 KB device->host copy; a replay and one
  stream synchronization are timed on the host and divided by `its`.  It is what an iteration of
  `KSPFUSEDCG` with -ksp_fused_check_interval its costs with no work to do.  Errors as
  `FusedKSPMeasureDeviceFloor()`.

.seealso: `FusedKSPMeasureDeviceFloor()`, `KSPFusedSetCheckInterval()`
@*/
PetscErrorCode FusedKSPMeasureDeviceGraphFloor(PetscInt reps, PetscInt its, PetscReal *min_us, PetscReal *median_us)
{
  PetscFunctionBegin;
  PetscCheck(min_us && median_us, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "The two output arguments must be non-NULL");
  PetscCheck(reps >= 1 && its >= 1, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "reps and its must be at least 1, got %" PetscInt_FMT " and %" PetscInt_FMT, reps, its);
  PetscCall(CheckCUDABackend("FusedKSPMeasureDeviceGraphFloor"));
#if defined(FUSEDKSP_HAVE_CUDA)
  PetscCall(fusedksp::CUDAMeasureGraphFloor(reps, its, min_us, median_us));
#endif
  PetscFunctionReturn(PETSC_SUCCESS);
}
