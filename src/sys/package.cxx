/* Package initialization: type registration, logging events, backend selection */
#include "sys/fusedksp_impl.hpp"

namespace fusedksp
{
Events                events;
static const Backend *active_backend = nullptr;
static PetscBool      initialized    = PETSC_FALSE;

const Backend *ActiveBackend()
{
  return active_backend ? active_backend : HostBackend();
}

/* Chooses the backend: -fused_backend host|cuda; the default is cuda when a GPU is usable */
static PetscErrorCode SelectBackend()
{
  const char    *names[] = {"host", "cuda"};
  PetscInt       choice  = 0;
  PetscBool      set     = PETSC_FALSE;
  const Backend *cuda    = nullptr;

  PetscFunctionBegin;
#if defined(FUSEDKSP_HAVE_CUDA)
  cuda = CUDABackend();
#endif
  choice = cuda ? 1 : 0;
  PetscOptionsBegin(PETSC_COMM_WORLD, NULL, "FusedKSP package options", "KSP");
  PetscCall(PetscOptionsEList("-fused_backend", "Backend of the fused operations", "FusedKSPInitializePackage", names, 2, names[choice], &choice, &set));
  PetscOptionsEnd();
  if (choice == 1 && !cuda) {
    PetscCheck(!set, PETSC_COMM_WORLD, PETSC_ERR_SUP_SYS, "-fused_backend cuda: %s",
#if defined(FUSEDKSP_HAVE_CUDA)
               "no usable CUDA device was found"
#else
               "this libfusedksp was built without the CUDA backend (no nvcc at build time)"
#endif
    );
    choice = 0;
  }
  active_backend = choice == 1 ? cuda : HostBackend();
  PetscFunctionReturn(PETSC_SUCCESS);
}
} // namespace fusedksp

/*@C
  FusedKSPFinalizePackage - Called by `PetscFinalize()`; resets the package state.

  Level: developer

.seealso: `FusedKSPInitializePackage()`
@*/
PetscErrorCode FusedKSPFinalizePackage(void)
{
  PetscFunctionBegin;
  fusedksp::initialized    = PETSC_FALSE;
  fusedksp::active_backend = nullptr;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*@C
  FusedKSPInitializePackage - Registers the FusedKSP types with PETSc: KSP `fusedcg`, `fusedbcgs`,
  `fusedsgmres`; Vec `fused`, `seqfused`, `mpifused`; Mat `aijfused`, `seqaijfused`, `mpiaijfused`;
  the logging events of the fused kernels; and selects the backend.

  Options Database Key:
. -fused_backend <host,cuda> - where the fused operations run (default: cuda when a GPU is usable, else host)

  Level: beginner

  Notes:
  Called automatically when the library is loaded with `-dll_append /path/libfusedksp.so` (or through
  `PETSC_OPTIONS`); applications that link `-lfusedksp` call it once after `PetscInitialize()`.
  Calling it more than once is harmless.

.seealso: `KSPFUSEDCG`, `KSPFUSEDBCGS`, `KSPFUSEDSGMRES`, `VECFUSED`, `MATAIJFUSED`
@*/
PetscErrorCode FusedKSPInitializePackage(void)
{
  PetscClassId classid;

  PetscFunctionBegin;
  if (fusedksp::initialized) PetscFunctionReturn(PETSC_SUCCESS);
  fusedksp::initialized = PETSC_TRUE;
  PetscCall(KSPInitializePackage());
  PetscCall(KSPRegister(KSPFUSEDCG, KSPCreate_FusedCG));
  PetscCall(KSPRegister(KSPFUSEDBCGS, KSPCreate_FusedBCGS));
  PetscCall(KSPRegister(KSPFUSEDSGMRES, KSPCreate_FusedSGMRES));
  PetscCall(VecRegister(VECFUSED, VecCreate_Fused));
  PetscCall(VecRegister(VECSEQFUSED, VecCreate_SeqFused));
  PetscCall(VecRegister(VECMPIFUSED, VecCreate_MPIFused));
  PetscCall(MatRegister(MATAIJFUSED, MatCreate_AIJFused));
  PetscCall(MatRegister(MATSEQAIJFUSED, MatCreate_SeqAIJFused));
  PetscCall(MatRegister(MATMPIAIJFUSED, MatCreate_MPIAIJFused));
  PetscCall(PetscClassIdRegister("FusedKSP", &classid));
  PetscCall(PetscLogEventRegister("FusedCGUpdate", classid, &fusedksp::events.cg_update));
  PetscCall(PetscLogEventRegister("FusedSpMVDots", classid, &fusedksp::events.spmv_dots));
  PetscCall(PetscLogEventRegister("FusedDots", classid, &fusedksp::events.dots));
  PetscCall(PetscLogEventRegister("FusedWAXPYDot", classid, &fusedksp::events.waxpy_dot));
  PetscCall(PetscLogEventRegister("FusedBCGSUpdate", classid, &fusedksp::events.bcgs_update));
  PetscCall(PetscLogEventRegister("FusedMDot", classid, &fusedksp::events.mdot));
  PetscCall(PetscLogEventRegister("FusedMAXPYScale", classid, &fusedksp::events.maxpy));
  PetscCall(PetscLogEventRegister("FusedAllreduce", classid, &fusedksp::events.allreduce));
  PetscCall(PetscLogEventRegister("FusedCopyToDev", classid, &fusedksp::events.to_device));
  PetscCall(PetscLogEventRegister("FusedCopyToHost", classid, &fusedksp::events.to_host));
  PetscCall(PetscLogEventRegister("FusedHaloPack", classid, &fusedksp::events.halo_pack));
  PetscCall(PetscLogEventRegister("FusedHaloMPI", classid, &fusedksp::events.halo_mpi));
  PetscCall(PetscLogEventRegister("FusedSpMVOffDiag", classid, &fusedksp::events.spmv_offdiag));
  PetscCall(fusedksp::SelectBackend());
  PetscCall(PetscRegisterFinalize(FusedKSPFinalizePackage));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*@C
  FusedKSPGetBackendName - The backend the fused operations run on.

  Not Collective

  Output Parameter:
. name - "host" or "cuda"

  Level: intermediate

.seealso: `FusedKSPInitializePackage()`
@*/
PetscErrorCode FusedKSPGetBackendName(const char *name[])
{
  PetscFunctionBegin;
  *name = fusedksp::ActiveBackend()->name;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*@C
  FusedKSPGetBackendCounters - Work done by the active backend since the program started.

  Not Collective

  Output Parameters:
+ launches       - fused kernel launches (on the host backend: fused loops run)
. device_to_host - device->host copies (partial sums and data)
- host_to_device - host->device copies

  Level: developer

  Note:
  Tests use differences of these counts to check the kernels and transfers per iteration of a solver.

.seealso: `FusedKSPGetBackendName()`
@*/
PetscErrorCode FusedKSPGetBackendCounters(PetscInt64 *launches, PetscInt64 *device_to_host, PetscInt64 *host_to_device)
{
  const fusedksp::BackendCounters *c = fusedksp::ActiveBackend()->counters;

  PetscFunctionBegin;
  if (launches) *launches = c->launches;
  if (device_to_host) *device_to_host = c->d2h;
  if (host_to_device) *host_to_device = c->h2d;
  PetscFunctionReturn(PETSC_SUCCESS);
}
