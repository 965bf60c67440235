/* CUDA backend: launching persistent (cooperative) kernels, see cuda_persistent.cuh */
#include "backend/cuda/cuda_persistent.cuh"

namespace fusedksp
{
namespace cuda
{

PetscErrorCode ResidentBlocks(const void *kernel, size_t smem_bytes, int *max_blocks)
{
  int device, cooperative;

  PetscFunctionBegin;
  FusedKSPCallCUDA(cudaGetDevice(&device));
  FusedKSPCallCUDA(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device));
  PetscCall(DeviceBlocks(kernel, smem_bytes, max_blocks));
  if (!cooperative) *max_blocks = 0;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode PrepareResident(const void *kernel, PetscInt n, int lanes, size_t partials_per_block, Partition *part, PetscScalar **partials)
{
  int max_blocks;

  PetscFunctionBegin;
  PetscCall(ResidentBlocks(kernel, 0, &max_blocks));
  *part = Partition();
  if (max_blocks < 1 || n < 1) PetscFunctionReturn(PETSC_SUCCESS);
  *part = PartitionResident(n, lanes, max_blocks);
  PetscCall(GetPartials(partials_per_block * part->nblocks, partials));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Launches `kernel` as ONE cluster of nblocks blocks when the device can schedule it; *launched
   says whether it did (a cluster above the portable 8 blocks needs the kernel's permission)       */
static PetscErrorCode LaunchCluster(const void *kernel, int nblocks, int threads, void **params, size_t smem_bytes, cudaStream_t stream, bool *launched)
{
  cudaLaunchConfig_t  config = {};
  cudaLaunchAttribute attr;
  int                 clusters = 0;

  PetscFunctionBegin;
  *launched = false;
  if (nblocks > 8 && cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess) {
    (void)cudaGetLastError(); /* no clusters above the portable size on this device */
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  attr.id                 = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x   = nblocks;
  attr.val.clusterDim.y   = 1;
  attr.val.clusterDim.z   = 1;
  config.gridDim          = dim3(nblocks);
  config.blockDim         = dim3(threads);
  config.dynamicSmemBytes = smem_bytes;
  config.stream           = stream;
  config.attrs            = &attr;
  config.numAttrs         = 1;
  if (cudaOccupancyMaxActiveClusters(&clusters, kernel, &config) != cudaSuccess) {
    (void)cudaGetLastError(); /* a device without clusters */
    clusters = 0;
  }
  if (clusters > 0) {
    FusedKSPCallCUDA(cudaLaunchKernelExC(&config, kernel, params));
    counters.launches++;
    *launched = true;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode LaunchResident(const void *kernel, const Partition &part, void **params, size_t smem_bytes)
{
  cudaStream_t stream;
  bool         launched = false;

  PetscFunctionBegin;
  PetscCall(GetStream(&stream));
  NotePersistentLaunch();
  if (part.nblocks > 1 && part.nblocks <= MAX_CLUSTER) PetscCall(LaunchCluster(kernel, part.nblocks, BLOCK_SIZE, params, smem_bytes, stream, &launched));
  counters.chunk_form   = launched ? "grid as one cluster" : "cooperative grid";
  counters.chunk_blocks = part.nblocks;
  if (!launched) {
    FusedKSPCallCUDA(cudaLaunchCooperativeKernel(kernel, part.nblocks, BLOCK_SIZE, params, smem_bytes, stream));
    counters.launches++;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode LaunchResidentChunk(const void *kernel, int nblocks, int threads, void **params, size_t vector_bytes, size_t matrix_need, size_t *matrix_bytes, bool *launched)
{
  cudaStream_t       stream;
  cudaFuncAttributes attr;
  int                device, optin;
  size_t             room;

  PetscFunctionBegin;
  PetscCheck(nblocks >= 1 && nblocks <= FUSED_RESIDENT_CHUNK_BLOCKS, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "A resident chunk runs on 1 to %d blocks, not %d", (int)FUSED_RESIDENT_CHUNK_BLOCKS, nblocks);
  *launched = false;
  FusedKSPCallCUDA(cudaGetDevice(&device));
  FusedKSPCallCUDA(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  FusedKSPCallCUDA(cudaFuncGetAttributes(&attr, kernel));
  room = (size_t)optin > attr.sharedSizeBytes ? (size_t)optin - attr.sharedSizeBytes : 0;
  if (room < vector_bytes) PetscFunctionReturn(PETSC_SUCCESS);
  *matrix_bytes = PetscMin(room - vector_bytes, matrix_need) / sizeof(PetscScalar) * sizeof(PetscScalar);
  FusedKSPCallCUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)(vector_bytes + *matrix_bytes)));
  PetscCall(GetStream(&stream));
  if (nblocks == 1) {
    FusedKSPCallCUDA(cudaLaunchKernel(kernel, 1, threads, params, vector_bytes + *matrix_bytes, stream));
    counters.launches++;
    *launched = true;
  } else
    PetscCall(LaunchCluster(kernel, nblocks, threads, params, vector_bytes + *matrix_bytes, stream, launched));
  if (*launched) {
    NotePersistentLaunch();
    counters.chunk_form   = "resident";
    counters.chunk_blocks = nblocks;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace cuda
} // namespace fusedksp
