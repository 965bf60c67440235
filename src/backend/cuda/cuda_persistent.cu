/* CUDA backend: launching persistent (cooperative) kernels, see cuda_persistent.cuh */
#include "backend/cuda/cuda_persistent.cuh"

namespace fusedksp
{
namespace cuda
{

PetscErrorCode ResidentBlocks(const void *kernel, size_t smem_bytes, int *max_blocks)
{
  int device, cooperative, sms, per_sm = 0;

  PetscFunctionBegin;
  FusedKSPCallCUDA(cudaGetDevice(&device));
  FusedKSPCallCUDA(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device));
  FusedKSPCallCUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  FusedKSPCallCUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, BLOCK_SIZE, smem_bytes));
  *max_blocks = cooperative ? per_sm * sms : 0;
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

PetscErrorCode LaunchResident(const void *kernel, const Partition &part, void **params, size_t smem_bytes)
{
  cudaStream_t stream;
  int          clusters = 0;

  PetscFunctionBegin;
  PetscCall(GetStream(&stream));
  NotePersistentLaunch();
  if (part.nblocks > 1 && part.nblocks <= MAX_CLUSTER) {
    cudaLaunchConfig_t  config = {};
    cudaLaunchAttribute attr;

    attr.id                 = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x   = part.nblocks;
    attr.val.clusterDim.y   = 1;
    attr.val.clusterDim.z   = 1;
    config.gridDim          = dim3(part.nblocks);
    config.blockDim         = dim3(BLOCK_SIZE);
    config.dynamicSmemBytes = smem_bytes;
    config.stream           = stream;
    config.attrs            = &attr;
    config.numAttrs         = 1;
    FusedKSPCallCUDA(cudaOccupancyMaxActiveClusters(&clusters, kernel, &config));
    if (clusters > 0) {
      FusedKSPCallCUDA(cudaLaunchKernelExC(&config, kernel, params));
      counters.launches++;
      PetscFunctionReturn(PETSC_SUCCESS);
    }
  }
  FusedKSPCallCUDA(cudaLaunchCooperativeKernel(kernel, part.nblocks, BLOCK_SIZE, params, smem_bytes, stream));
  counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace cuda
} // namespace fusedksp
