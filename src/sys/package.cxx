/* Package initialization: type registration, logging events, backend selection */
#include "sys/fusedksp_impl.hpp"
#include "sys/tuning.hpp"
#include <cstdlib>
#include <unistd.h>

namespace fusedksp
{
Events                events;
static const Backend *active_backend = nullptr;
static PetscBool      initialized    = PETSC_FALSE;

/* Why the host backend runs: the user asked for it, or no rank could use a GPU */
enum class HostReason { REQUESTED, NO_GPU, NO_CUDA };
static HostReason host_reason = HostReason::REQUESTED;
#if defined(FUSEDKSP_HAVE_KOKKOS)
static PetscBool kokkos_default = PETSC_FALSE; /* the kokkos backend runs for want of a GPU, not on request */
#endif

const Backend *ActiveBackend()
{
  return active_backend ? active_backend : HostBackend();
}

const BlasKernels *BackendBlas(const Backend *backend)
{
#if defined(FUSEDKSP_HAVE_KOKKOS)
  if (backend == KokkosBackend()) return KokkosBlas();
#endif
#if defined(FUSEDKSP_HAVE_CUDA)
  if (backend == CUDABackend()) return CUDABlas();
#endif
  return HostBlas();
}

/* Chooses the backend: -fused_backend host|cuda|kokkos; the default is cuda when every rank has a usable GPU,
   else kokkos when the library has it on CPU threads (the faster one on CPU cores: tutorials/results/RESULTS.md),
   else host.  On cuda, binds each rank to a GPU (-fused_device_id, default: node-local rank modulo the node's GPUs);
   on kokkos, starts Kokkos (-fused_kokkos_threads; built for CUDA, on the GPU bound as for cuda).     */
static PetscErrorCode SelectBackend()
{
  enum { HOST = 0, CUDA = 1, KOKKOS = 2 };
  const char    *names[] = {"host", "cuda", "kokkos"};
  PetscInt       choice = HOST, device = -1, fail = 0, threads = 0;
  PetscBool      set = PETSC_FALSE, device_set = PETSC_FALSE, fail_set = PETSC_FALSE, mirror = PETSC_FALSE;
  const Backend *cuda = nullptr;
  PetscMPIInt    usable, usable_everywhere;

  PetscFunctionBegin;
#if defined(FUSEDKSP_HAVE_CUDA)
  cuda = CUDABackend();
#endif
  usable = cuda ? 1 : 0; /* one backend for all ranks: their fused operations meet in MPI calls */
  PetscCallMPI(MPI_Allreduce(&usable, &usable_everywhere, 1, MPI_INT, MPI_LAND, PETSC_COMM_WORLD));
  if (!usable_everywhere) cuda = nullptr;
#if defined(FUSEDKSP_HAVE_KOKKOS)
  choice = cuda ? CUDA : (KokkosBackend()->host_memory ? KOKKOS : HOST);
#else
  choice = cuda ? CUDA : HOST;
#endif
  PetscOptionsBegin(PETSC_COMM_WORLD, NULL, "FusedKSP package options", "KSP");
  PetscCall(PetscOptionsEList("-fused_backend", "Backend of the fused operations", "FusedKSPInitializePackage", names, 3, names[choice], &choice, &set));
  PetscCall(PetscOptionsRangeInt("-fused_device_id", "CUDA device of every rank; -1: node-local rank modulo the number of GPUs of the node (ignored by the host backend)", "FusedKSPInitializePackage", device, &device, &device_set, -1, PETSC_INT_MAX));
  PetscCall(
      PetscOptionsRangeInt("-fused_kokkos_threads", "Threads of the kokkos backend per MPI rank (0: OMP_NUM_THREADS if set, else the node's cores divided among its ranks)", "FusedKSPInitializePackage", threads, &threads, nullptr, 0, PETSC_INT_MAX));
  PetscCall(PetscOptionsRangeInt("-fused_debug_fail_alloc", "Make the n-th allocation of FusedKSP fail, for tests of the error paths (0: none)", "FusedKSPDebugFailAllocation", fail, &fail, &fail_set, 0, PETSC_INT_MAX));
  PetscCall(TuningSetFromOptions(PetscOptionsObject));
  PetscCall(PetscOptionsBool("-fused_debug_mirror", "Host backend: keep the fused types' data in buffers of its own, copied as for a GPU (tests the host/device bookkeeping without a GPU)", "FusedKSPInitializePackage", mirror, &mirror, nullptr));
  PetscOptionsEnd();
  if (fail_set) PetscCall(FusedKSPDebugFailAllocation(fail));
#if defined(FUSEDKSP_HAVE_KOKKOS)
  if (choice == KOKKOS && !set && !KokkosBackendCanStart()) { /* a second PetscInitialize() of the process */
    PetscCall(PetscInfo(NULL, "Kokkos was finalized by an earlier PetscFinalize() and cannot start again: the fused operations run on the host backend\n"));
    choice = HOST;
  }
#endif
  if (choice == KOKKOS) {
#if defined(FUSEDKSP_HAVE_KOKKOS)
    const PetscBool on_host = KokkosBackend()->host_memory;
    PetscInt        gpu     = -1;

#if defined(FUSEDKSP_HAVE_CUDA)
    if (!on_host) { /* Kokkos built for CUDA: every rank on the GPU the cuda backend would bind it to */
      CUDADeviceInfo info;

      PetscCheck(usable_everywhere, PETSC_COMM_WORLD, PETSC_ERR_SUP_SYS, "-fused_backend kokkos: Kokkos is built for CUDA, and %s", usable ? "another MPI rank finds no usable CUDA device" : "no usable CUDA device was found");
      PetscCall(CUDASelectDevice(PETSC_COMM_WORLD, device));
      PetscCall(CUDAGetDeviceInfo(&info));
      gpu = info.id;
    }
#endif
    if (on_host && threads == 0 && !getenv("OMP_NUM_THREADS")) {
      MPI_Comm    node;
      PetscMPIInt ranks;
      const long  cores = sysconf(_SC_NPROCESSORS_ONLN);

      PetscCallMPI(MPI_Comm_split_type(PETSC_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
      PetscCallMPI(MPI_Comm_size(node, &ranks));
      PetscCallMPI(MPI_Comm_free(&node));
      threads = PetscMax(1, (PetscInt)(cores / ranks));
    }
    PetscCall(KokkosBackendInitialize(threads, gpu));
    active_backend = KokkosBackend();
    kokkos_default = set ? PETSC_FALSE : PETSC_TRUE;
    if (device_set && on_host) PetscCall(PetscInfo(NULL, "-fused_device_id %" PetscInt_FMT " ignored: the fused operations run on the kokkos backend (host threads)\n", device));
    PetscFunctionReturn(PETSC_SUCCESS);
#else
    SETERRQ(PETSC_COMM_WORLD, PETSC_ERR_SUP_SYS, "-fused_backend kokkos: this libfusedksp was built without the Kokkos backend (no KOKKOS_DIR at build time; config/kokkos builds Kokkos and sets it)");
#endif
  }
  if (choice == CUDA && !cuda) {
    PetscCheck(!set, PETSC_COMM_WORLD, PETSC_ERR_SUP_SYS, "-fused_backend cuda: %s",
#if defined(FUSEDKSP_HAVE_CUDA)
               usable ? "another MPI rank finds no usable CUDA device" : "no usable CUDA device was found"
#else
               "this libfusedksp was built without the CUDA backend (no nvcc at build time)"
#endif
    );
    choice = HOST;
  }
#if defined(FUSEDKSP_HAVE_CUDA)
  if (choice == CUDA) {
    PetscCall(CUDASelectDevice(PETSC_COMM_WORLD, device));
    active_backend = cuda;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  host_reason = set ? HostReason::REQUESTED : HostReason::NO_GPU;
#else
  host_reason = set ? HostReason::REQUESTED : HostReason::NO_CUDA;
#endif
  active_backend = mirror ? HostMirroredBackend() : HostBackend();
  if (device_set) PetscCall(PetscInfo(NULL, "-fused_device_id %" PetscInt_FMT " ignored: the fused operations run on the host backend\n", device));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode BackendDescription(const Backend *backend, PetscBool why, char text[], size_t len)
{
  PetscFunctionBegin;
#if defined(FUSEDKSP_HAVE_KOKKOS)
  if (backend == KokkosBackend()) {
#if defined(FUSEDKSP_HAVE_CUDA)
    if (!backend->host_memory) { /* Kokkos built for CUDA, on the device SelectBackend() bound */
      CUDADeviceInfo info;

      PetscCall(CUDAGetDeviceInfo(&info));
      PetscCall(PetscSNPrintf(text, len, "kokkos, %s, device %d (%s)", KokkosBackendSpaceName(), info.id, info.name));
      PetscFunctionReturn(PETSC_SUCCESS);
    }
#endif
    PetscCall(PetscSNPrintf(text, len, "%skokkos, %s, %" PetscInt_FMT " thread%s", why && kokkos_default ? "no GPU found: " : "", KokkosBackendSpaceName(), KokkosBackendThreads(), KokkosBackendThreads() == 1 ? "" : "s"));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
#endif
#if defined(FUSEDKSP_HAVE_CUDA)
  if (backend == CUDABackend()) {
    CUDADeviceInfo info;

    PetscCall(CUDAGetDeviceInfo(&info));
    PetscCall(PetscSNPrintf(text, len, "%s, device %d (%s)", backend->name, info.id, info.name));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
#endif
  if (backend == HostMirroredBackend())
    PetscCall(PetscStrncpy(text, "host, mirrored (-fused_debug_mirror)", len));
  else if (!why)
    PetscCall(PetscStrncpy(text, "host", len));
  else if (host_reason == HostReason::REQUESTED)
    PetscCall(PetscStrncpy(text, "host (-fused_backend host)", len));
  else
    PetscCall(PetscStrncpy(text, host_reason == HostReason::NO_GPU ? "no GPU found: host backend" : "no GPU found: host backend (libfusedksp built without CUDA)", len));
  PetscFunctionReturn(PETSC_SUCCESS);
}

#if defined(FUSEDKSP_HAVE_CUDA)
/* Whether the active backend runs on the GPU CUDASelectDevice() bound: the cuda backend, or kokkos built for CUDA */
static bool ActiveOnCUDADevice()
{
  const Backend *be = ActiveBackend();

  if (CUDABackend() && be == CUDABackend()) return true;
#if defined(FUSEDKSP_HAVE_KOKKOS)
  if (be == KokkosBackend() && !be->host_memory) return true;
#endif
  return false;
}
#endif

PetscErrorCode DeviceSharingWarning(char text[], size_t len)
{
  PetscFunctionBegin;
  text[0] = 0;
#if defined(FUSEDKSP_HAVE_CUDA)
  if (ActiveOnCUDADevice()) {
    CUDADeviceInfo info;

    PetscCall(CUDAGetDeviceInfo(&info));
    if (info.sharing_ranks > 1)
      PetscCall(PetscSNPrintf(text, len, "WARNING: %d MPI ranks on this node share GPU %d", info.sharing_ranks, info.id));
    else if (info.max_sharing_ranks > 1)
      PetscCall(PetscSNPrintf(text, len, "WARNING: %d MPI ranks on another node share GPU %d", info.max_sharing_ranks, info.max_sharing_id));
  }
#endif
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

/* A logging event of the package.  Not collective: its kernels and halo steps run on some ranks only (a rank
   without neighbours has no halo exchange), so with -log_sync (or -petsc_ci) a collective event would wait at a
   barrier the other ranks never reach */
static PetscErrorCode RegisterEvent(const char name[], PetscClassId classid, PetscLogEvent *event)
{
  PetscFunctionBegin;
  PetscCall(PetscLogEventRegister(name, classid, event));
  PetscCall(PetscLogEventSetCollective(*event, PETSC_FALSE));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*@C
  FusedKSPInitializePackage - Registers the FusedKSP types with PETSc: KSP `fusedcg`, `fusedbcgs`,
  `fusedsgmres`, `fusedcagmres`, `fusedbicg`; Vec `fused`, `seqfused`, `mpifused`; Mat `aijfused`, `seqaijfused`, `mpiaijfused`;
  the `MatSolverType` `fused` (`MATSOLVERFUSED`: ILU(0)/ICC(0) of `seqaijfused`, its default); PETSc's `PCPBJACOBI` and `PCVPBJACOBI`
  again, applying their blocks on the backend when the matrix is `aijfused` (see `PCPBJACOBI_FUSED`); PETSc's `PCBJACOBI` and `PCASM`
  again, whose transfers and single-block solves run on the backend with fused vectors; the logging events of the fused
  kernels; and selects the backend.

  Collective on `PETSC_COMM_WORLD`

  Options Database Keys:
+ -fused_backend <host,cuda,kokkos> - where the fused operations run (default: cuda when every MPI rank has a usable GPU, else
                               kokkos when the library is built with Kokkos (config/kokkos), else host)
. -fused_device_id <id>      - the CUDA device of every MPI rank (default -1: the node-local rank modulo the number of GPUs of the node)
. -fused_kokkos_threads <n>  - threads of the kokkos backend per MPI rank (default 0: `OMP_NUM_THREADS` if set, else the node's cores divided
                               among its MPI ranks)
- -fused_debug_fail_alloc <n> - make the n-th allocation of FusedKSP fail (tests of the error paths, see `FusedKSPDebugFailAllocation()`)

  Level: beginner

  Notes:
  Called automatically when the library is loaded with `-dll_append /path/libfusedksp.so` (or through
  `PETSC_OPTIONS`); applications that link `-lfusedksp` call it once after `PetscInitialize()`.
  Calling it more than once is harmless.

  Device selection: with the cuda backend each MPI rank binds to one GPU before anything is allocated
  on it. By default rank r of a node (its rank in `MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)`) takes
  device r modulo the node's device count, so one rank per GPU gets distinct GPUs, also when
  `CUDA_VISIBLE_DEVICES` gives each rank a single device. `-fused_device_id` sets the same device id for
  every rank (use `CUDA_VISIBLE_DEVICES` for per-rank choices); an id that a node does not have is an error
  naming its device count. Ranks of a node that end up on one GPU (more ranks than GPUs, or
  `-fused_device_id` with several ranks per node) are reported by `-info` and by a WARNING line in
  `-ksp_view`. With the host backend (`-fused_backend host`, no GPU, or a library built without CUDA)
  `-fused_device_id` is accepted and ignored (said by `-info`). `-ksp_view`, `-vec_view ::ascii_info`
  and `-mat_view ::ascii_info` name the backend and the device; without a GPU they say
  "no GPU found: host backend". A PETSc configured with CUDA chooses its own device with `-device_select`:
  keep the two consistent when FusedKSP objects meet PETSc's CUDA types.

.seealso: `KSPFUSEDCG`, `KSPFUSEDBCGS`, `KSPFUSEDSGMRES`, `KSPFUSEDCAGMRES`, `KSPFUSEDBICG`, `VECFUSED`, `MATAIJFUSED`, `FusedKSPGetBackendName()`, `FusedKSPGetDevice()`
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
  PetscCall(KSPRegister(KSPFUSEDCAGMRES, KSPCreate_FusedCAGMRES));
  PetscCall(KSPRegister(KSPFUSEDBICG, KSPCreate_FusedBiCG));
  PetscCall(VecRegister(VECFUSED, VecCreate_Fused));
  PetscCall(VecRegister(VECSEQFUSED, VecCreate_SeqFused));
  PetscCall(VecRegister(VECMPIFUSED, VecCreate_MPIFused));
  PetscCall(MatRegister(MATAIJFUSED, MatCreate_AIJFused));
  PetscCall(MatRegister(MATSEQAIJFUSED, MatCreate_SeqAIJFused));
  PetscCall(MatRegister(MATMPIAIJFUSED, MatCreate_MPIAIJFused));
  PetscCall(MatRegisterRootName(MATAIJFUSED, MATSEQAIJFUSED, MATMPIAIJFUSED));
  PetscCall(MatSolverTypeRegister(MATSOLVERFUSED, MATSEQAIJFUSED, MAT_FACTOR_ILU, MatGetFactor_SeqAIJFused_Fused));
  PetscCall(MatSolverTypeRegister(MATSOLVERFUSED, MATSEQAIJFUSED, MAT_FACTOR_ICC, MatGetFactor_SeqAIJFused_Fused));
  PetscCall(fusedksp::PCRegisterBlockDiagFused());
  PetscCall(fusedksp::PCRegisterBJacobiFused());
  PetscCall(fusedksp::PCRegisterASMFused());
  PetscCall(fusedksp::KSPRegisterChebyshevFused());
  PetscCall(PetscClassIdRegister("FusedKSP", &classid));
  PetscCall(RegisterEvent("FusedCGUpdate", classid, &fusedksp::events.cg_update));
  PetscCall(RegisterEvent("FusedSpMVDots", classid, &fusedksp::events.spmv_dots));
  PetscCall(RegisterEvent("FusedDots", classid, &fusedksp::events.dots));
  PetscCall(RegisterEvent("FusedWAXPYDot", classid, &fusedksp::events.waxpy_dot));
  PetscCall(RegisterEvent("FusedBCGSUpdate", classid, &fusedksp::events.bcgs_update));
  PetscCall(RegisterEvent("FusedMDot", classid, &fusedksp::events.mdot));
  PetscCall(RegisterEvent("FusedMAXPYScale", classid, &fusedksp::events.maxpy));
  PetscCall(RegisterEvent("FusedAllreduce", classid, &fusedksp::events.allreduce));
  PetscCall(RegisterEvent("FusedCopyToDev", classid, &fusedksp::events.to_device));
  PetscCall(RegisterEvent("FusedCopyToHost", classid, &fusedksp::events.to_host));
  PetscCall(RegisterEvent("FusedHaloPack", classid, &fusedksp::events.halo_pack));
  PetscCall(RegisterEvent("FusedHaloMPI", classid, &fusedksp::events.halo_mpi));
  PetscCall(RegisterEvent("FusedSpMVOffDiag", classid, &fusedksp::events.spmv_offdiag));
  PetscCall(RegisterEvent("FusedChunkWait", classid, &fusedksp::events.chunk_wait));
  PetscCall(RegisterEvent("FusedGraphLaunch", classid, &fusedksp::events.graph_launch));
  PetscCall(RegisterEvent("FusedCGChunk", classid, &fusedksp::events.cg_chunk));
  PetscCall(RegisterEvent("FusedBCGSChunk", classid, &fusedksp::events.bcgs_chunk));
  PetscCall(RegisterEvent("FusedSGMRESChunk", classid, &fusedksp::events.sgmres_chunk));
  PetscCall(RegisterEvent("FusedTrSolve", classid, &fusedksp::events.trsv));
  PetscCall(RegisterEvent("FusedBlockDiag", classid, &fusedksp::events.blockdiag));
  PetscCall(RegisterEvent("FusedSpGEMM", classid, &fusedksp::events.spgemm));
  PetscCall(RegisterEvent("FusedMatMirror", classid, &fusedksp::events.mirror));
  PetscCall(fusedksp::SelectBackend());
  PetscCall(PetscRegisterFinalize(FusedKSPFinalizePackage));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*@C
  FusedKSPGetBackendName - The backend the fused operations run on.

  Not Collective

  Output Parameter:
. name - "host", "cuda" or "kokkos"

  Level: intermediate

.seealso: `FusedKSPInitializePackage()`
@*/
PetscErrorCode FusedKSPGetBackendName(const char *name[])
{
  PetscFunctionBegin;
  *name = fusedksp::ActiveBackend()->name;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*@
  FusedKSPGetDevice - The CUDA device this MPI rank runs the fused operations on.

  Not Collective

  Output Parameter:
. id - the CUDA device id (as the CUDA runtime of this process numbers devices), or -1 on the host backend and on the
       kokkos backend on CPU threads

  Level: intermediate

  Note:
  The device is chosen by `FusedKSPInitializePackage()`: `-fused_device_id`, else the node-local MPI rank
  modulo the number of GPUs of the node.

.seealso: `FusedKSPInitializePackage()`, `FusedKSPGetBackendName()`
@*/
PetscErrorCode FusedKSPGetDevice(PetscInt *id)
{
  PetscFunctionBegin;
  PetscCheck(id, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "The output argument id must be non-NULL");
  *id = -1;
#if defined(FUSEDKSP_HAVE_CUDA)
  if (fusedksp::ActiveOnCUDADevice()) {
    fusedksp::CUDADeviceInfo info;

    PetscCall(fusedksp::CUDAGetDeviceInfo(&info));
    *id = info.id;
  }
#endif
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*@C
  FusedKSPSynchronize - Waits until the work the active backend has queued (kernels, copies) is complete

  Not Collective

  Level: intermediate

  Note:
  The fused solvers return from `KSPSolve()` with their work complete, but PETSc's own solvers and
  vector operations on fused vectors and matrices may return with their last operations still queued
  on the backend's stream, as on PETSc's CUDA types (`PetscDeviceContextSynchronize()`).  Call this
  before reading a clock.  On the host backend there is nothing to wait for.

.seealso: `FusedKSPGetBackendName()`
@*/
PetscErrorCode FusedKSPSynchronize(void)
{
  PetscFunctionBegin;
  PetscCall(fusedksp::ActiveBackend()->fence_record());
  PetscCall(fusedksp::ActiveBackend()->fence_wait());
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*@C
  FusedKSPGetDeviceName - The name of the CUDA device this MPI rank runs the fused operations on.

  Not Collective

  Input Parameter:
. len - the size of `name`

  Output Parameter:
. name - the device's name (`cudaDeviceProp::name`), or "none" when the fused operations do not run on a CUDA device
         (the cuda backend, or the kokkos backend built for CUDA)

  Level: intermediate

.seealso: `FusedKSPGetDevice()`, `FusedKSPGetBackendName()`
@*/
PetscErrorCode FusedKSPGetDeviceName(char name[], size_t len)
{
  PetscFunctionBegin;
  PetscCheck(name && len > 0, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "The output argument name must be non-NULL with a positive length");
  PetscCall(PetscStrncpy(name, "none", len));
#if defined(FUSEDKSP_HAVE_CUDA)
  if (fusedksp::ActiveOnCUDADevice()) {
    fusedksp::CUDADeviceInfo info;

    PetscCall(fusedksp::CUDAGetDeviceInfo(&info));
    if (info.name[0]) PetscCall(PetscStrncpy(name, info.name, len));
  }
#endif
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

/*@C
  FusedKSPGetBackendUploadedBytes - Bytes the active backend copied from the host to its memory as data (the
  backend copies of matrices and factors) since the program started.

  Not Collective

  Output Parameter:
. bytes - the bytes

  Level: developer

  Note:
  Tests use differences to check which operations copy a matrix's entries (with -fused_debug_mirror too, where
  PETSc's own transfer log, `PetscLogCpuToGpu()`, counts nothing without a device).

.seealso: `FusedKSPGetBackendCounters()`
@*/
PetscErrorCode FusedKSPGetBackendUploadedBytes(PetscInt64 *bytes)
{
  PetscFunctionBegin;
  *bytes = fusedksp::ActiveBackend()->counters->h2d_bytes;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*@C
  FusedKSPGetLastChunkForm - How the last chunk of iterations ran on the active backend.

  Not Collective

  Output Parameters:
+ form   - "steps" (one backend operation per step), "cooperative grid" or "grid as one cluster" (one persistent
           kernel whose thread blocks meet at grid barriers), "resident" (one thread block, or one cluster of blocks
           that keep the chunk's vectors and matrix rows in shared memory); "none" before the first chunk
- blocks - the thread blocks of the persistent kernel (0 for steps)

  Level: developer

  Note:
  A chunk is a run of `-ksp_fused_check_interval` iterations with device-resident scalars; the CUDA backend chooses its
  form from the matrix and the device (see `KSPFusedSetUsePersistent()`). Tests and sanitizer runs use this to show
  which form they covered.

.seealso: `FusedKSPGetBackendCounters()`, `KSPFusedSetCheckInterval()`, `KSPFusedSetUsePersistent()`
@*/
PetscErrorCode FusedKSPGetLastChunkForm(const char **form, PetscInt *blocks)
{
  const fusedksp::BackendCounters *c = fusedksp::ActiveBackend()->counters;

  PetscFunctionBegin;
  if (form) *form = c->chunk_form ? c->chunk_form : "none";
  if (blocks) *blocks = (PetscInt)c->chunk_blocks;
  PetscFunctionReturn(PETSC_SUCCESS);
}
