/*
   CUDA backend: which GPU this MPI rank runs on (called by FusedKSPInitializePackage(), see
   src/sys/package.cxx, before the backend creates its stream or allocates anything).

   The default maps the node-local rank (the rank in MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)) to
   device local_rank % ndevices, so ranks fill the GPUs of their node round robin; -fused_device_id
   picks one device id for every rank.  Ranks that share a GPU are detected by the device's UUID,
   not by its id: with CUDA_VISIBLE_DEVICES set per rank (one GPU per task, as Slurm's
   --gpus-per-task does) every rank sees "device 0", yet the physical GPUs differ.
*/
#include "backend/cuda/cuda_common.cuh"
#include <cstring>
#include <unordered_map>
#include <vector>

namespace fusedksp
{
namespace cuda
{
static CUDADeviceInfo selected; /* id -1 until CUDASelectDevice() */

PetscErrorCode DeviceBlocks(const void *kernel, size_t smem_bytes, int *nblocks)
{
  int device, sms, per_sm = 0;

  PetscFunctionBegin;
  FusedKSPCallCUDA(cudaGetDevice(&device));
  FusedKSPCallCUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  FusedKSPCallCUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, BLOCK_SIZE, smem_bytes));
  *nblocks = per_sm * sms;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode WaveBlocks(const void *kernel, PetscInt *nblocks)
{
  static std::unordered_map<const void *, PetscInt> known; /* the process's device does not change once selected */
  const auto                                        it = known.find(kernel);

  PetscFunctionBegin;
  if (it != known.end())
    *nblocks = it->second;
  else {
    int wave;

    PetscCall(DeviceBlocks(kernel, 0, &wave));
    *nblocks      = PetscMax(1, PetscMin((PetscInt)wave, FUSED_REDUCE_BLOCKS));
    known[kernel] = *nblocks;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}
} // namespace cuda

/*
   CUDASelectDevice - binds the calling process to a GPU; collective on comm

   Input Parameters:
+  comm      - the processes that run the CUDA backend (every one of them calls this)
-  requested - a device id for every rank, or -1: the node-local rank modulo the node's device count

   Errors (collective, raised on every rank): a device id out of range for the node with the fewest
   GPUs, or a rank that finds no CUDA device.
*/
PetscErrorCode CUDASelectDevice(MPI_Comm comm, PetscInt requested)
{
  int               ndevices = 0, min_devices = 0, device;
  PetscMPIInt       rank, local_rank, local_size;
  MPI_Comm          node;
  cudaDeviceProp    prop;
  std::vector<char> uuids;
  struct {
    int ranks, id;
  } sharing, max_sharing;

  PetscFunctionBegin;
  PetscCheck(requested >= -1, comm, PETSC_ERR_ARG_OUTOFRANGE, "CUDA device id %" PetscInt_FMT ": use -1 (node-local rank modulo the number of GPUs) or an id >= 0", requested);
  if (cudaGetDeviceCount(&ndevices) != cudaSuccess) { /* no driver: as 0 devices, and the error is not left pending */
    (void)cudaGetLastError();
    ndevices = 0;
  }
  PetscCallMPI(MPI_Allreduce(&ndevices, &min_devices, 1, MPI_INT, MPI_MIN, comm));
  PetscCheck(min_devices > 0, comm, PETSC_ERR_SUP_SYS, "The CUDA backend needs a GPU on every MPI rank, and %s no CUDA device", ndevices ? "another rank finds" : "this rank finds");
  PetscCheck(requested < min_devices, comm, PETSC_ERR_ARG_OUTOFRANGE, "-fused_device_id %" PetscInt_FMT " is out of range: %s %d CUDA device%s, ids 0 to %d", requested, ndevices == min_devices ? "this node has" : "a node of this run has only",
             min_devices, min_devices == 1 ? "" : "s", min_devices - 1);

  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCallMPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
  PetscCallMPI(MPI_Comm_rank(node, &local_rank));
  PetscCallMPI(MPI_Comm_size(node, &local_size));
  device = requested >= 0 ? (int)requested : local_rank % ndevices;
  FusedKSPCallCUDA(cudaGetDeviceProperties(&prop, device));
  FusedKSPCallCXX(uuids.resize((size_t)local_size * sizeof(prop.uuid)));
  PetscCallMPI(MPI_Allgather(&prop.uuid, (PetscMPIInt)sizeof(prop.uuid), MPI_BYTE, uuids.data(), (PetscMPIInt)sizeof(prop.uuid), MPI_BYTE, node));
  PetscCallMPI(MPI_Comm_free(&node));
  sharing.ranks = 0;
  sharing.id    = device;
  for (PetscMPIInt r = 0; r < local_size; ++r)
    if (!std::memcmp(uuids.data() + (size_t)r * sizeof(prop.uuid), &prop.uuid, sizeof(prop.uuid))) sharing.ranks++;
  /* the most ranks on one GPU of one node, over comm (ties: the lowest device id) */
  PetscCallMPI(MPI_Allreduce(&sharing, &max_sharing, 1, MPI_2INT, MPI_MAXLOC, comm));

  FusedKSPCallCUDA(cudaSetDevice(device));
  cuda::selected.id = device;
  PetscCall(PetscStrncpy(cuda::selected.name, prop.name, sizeof(cuda::selected.name)));
  cuda::selected.sharing_ranks     = sharing.ranks;
  cuda::selected.max_sharing_ranks = max_sharing.ranks;
  cuda::selected.max_sharing_id    = max_sharing.id;
  PetscCall(PetscInfo(NULL, "MPI rank %d (node-local rank %d of %d) uses CUDA device %d of %d: %s (%s)\n", rank, local_rank, local_size, device, ndevices, prop.name, requested >= 0 ? "-fused_device_id" : "node-local rank modulo device count"));
  if (sharing.ranks > 1) PetscCall(PetscInfo(NULL, "WARNING: %d MPI ranks of this node share CUDA device %d (%s): run as many ranks per node as GPUs, unless the sharing is intended (CUDA MPS)\n", sharing.ranks, device, prop.name));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   CUDAGetDeviceInfo - the choice of CUDASelectDevice() (id -1 before it ran)
*/
PetscErrorCode CUDAGetDeviceInfo(CUDADeviceInfo *info)
{
  PetscFunctionBegin;
  *info = cuda::selected;
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace fusedksp
