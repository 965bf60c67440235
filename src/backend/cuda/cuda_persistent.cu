/* CUDA backend: launching persistent (cooperative) kernels, see cuda_persistent.cuh */
#include "backend/cuda/cuda_persistent.cuh"

namespace fusedksp
{
namespace cuda
{

PetscErrorCode PrepareResident(const void *kernel, PetscInt n, int lanes, size_t partials_per_block, Partition *part, PetscScalar **partials)
{
  int device, cooperative, sms, per_sm;

  PetscFunctionBegin;
  FusedKSPCallCUDA(cudaGetDevice(&device));
  FusedKSPCallCUDA(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device));
  FusedKSPCallCUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  FusedKSPCallCUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, BLOCK_SIZE, 0));
  *part = Partition();
  if (!cooperative || per_sm < 1 || n < 1) PetscFunctionReturn(PETSC_SUCCESS);
  *part = PartitionResident(n, lanes, per_sm * sms);
  PetscCall(GetPartials(partials_per_block * part->nblocks, partials));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode LaunchResident(const void *kernel, const Partition &part, void **params)
{
  cudaStream_t stream;
  int          clusters = 0;

  PetscFunctionBegin;
  PetscCall(GetStream(&stream));
  NotePersistentLaunch();
  if (part.nblocks > 1 && part.nblocks <= MAX_CLUSTER) {
    cudaLaunchConfig_t  config = {};
    cudaLaunchAttribute attr;

    attr.id               = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = part.nblocks;
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    config.gridDim        = dim3(part.nblocks);
    config.blockDim       = dim3(BLOCK_SIZE);
    config.stream         = stream;
    config.attrs          = &attr;
    config.numAttrs       = 1;
    FusedKSPCallCUDA(cudaOccupancyMaxActiveClusters(&clusters, kernel, &config));
    if (clusters > 0) {
      FusedKSPCallCUDA(cudaLaunchKernelExC(&config, kernel, params));
      counters.launches++;
      PetscFunctionReturn(PETSC_SUCCESS);
    }
  }
  FusedKSPCallCUDA(cudaLaunchCooperativeKernel(kernel, part.nblocks, BLOCK_SIZE, params, 0, stream));
  counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace cuda
} // namespace fusedksp
