/* Microbenchmark behind barriers-h200-2026-11-22.txt: the cost of one cluster barrier (cluster.sync()), one
   grid barrier (grid.sync() of a cooperative launch) and one __syncthreads, and the latency of a dependent
   load from shared memory, from another block's shared memory (distributed shared memory) and from L2.
   Each figure is (time of 11000 steps - time of 1000 steps) / 10000, median of 7 launches, 256 threads
   per block.  Build: nvcc -O3 -std=c++17 -arch=sm_90 cluster-barriers.cu -o cluster-barriers            */
#include <cooperative_groups.h>
#include <algorithm>
#include <cstdio>
#include <functional>
#include <vector>
namespace cg = cooperative_groups;

__global__ void ClusterBarriers(int steps, double *out)
{
  double acc = 0;
  for (int i = 0; i < steps; ++i) {
    cg::this_cluster().sync();
    acc += i;
  }
  if (acc < 0) out[0] = acc;
}
__global__ void DistributedSharedLoads(int steps, double *out)
{
  __shared__ double buf[256];
  cg::cluster_group cluster = cg::this_cluster();
  buf[threadIdx.x]          = 0;
  cluster.sync();
  const double *next = cluster.map_shared_rank(buf, (cluster.block_rank() + 1) % cluster.num_blocks());
  double        acc  = 0;
  for (int i = 0; i < steps; ++i) acc += next[(threadIdx.x + (int)acc) % 256];
  cluster.sync();
  if (acc < 0) out[0] = acc;
}
__global__ void GridBarriers(int steps, double *out)
{
  double acc = 0;
  for (int i = 0; i < steps; ++i) {
    cg::this_grid().sync();
    acc += i;
  }
  if (acc < 0) out[0] = acc;
}
__global__ void BlockBarriers(int steps, double *out)
{
  double acc = 0;
  for (int i = 0; i < steps; ++i) {
    __syncthreads();
    acc += i;
  }
  if (acc < 0) out[0] = acc;
}
__global__ void SharedLoads(int steps, double *out)
{
  __shared__ double buf[256];
  buf[threadIdx.x] = 0;
  __syncthreads();
  double acc = 0;
  for (int i = 0; i < steps; ++i) acc += buf[(threadIdx.x + (int)acc) % 256];
  if (acc < 0) out[0] = acc;
}
__global__ void L2Loads(int steps, const double *buf, double *out)
{
  double acc = 0;
  for (int i = 0; i < steps; ++i) acc += __ldcg(buf + (threadIdx.x + (int)acc) % 256);
  if (acc < 0) out[0] = acc;
}

/* ns per step of launch(steps) */
static float PerStep(const std::function<void(int)> &launch)
{
  auto time = [&](int steps) {
    cudaEvent_t        a, b;
    std::vector<float> t;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    for (int r = 0; r < 7; ++r) {
      float ms;
      cudaEventRecord(a);
      launch(steps);
      cudaEventRecord(b);
      cudaEventSynchronize(b);
      cudaEventElapsedTime(&ms, a, b);
      t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    return t[3];
  };
  return (time(11000) - time(1000)) * 1e6f / 10000;
}

static void LaunchCluster(void *kernel, int blocks, int steps, double *out)
{
  cudaLaunchConfig_t  config = {};
  cudaLaunchAttribute attr;
  void               *params[] = {&steps, &out};
  attr.id                      = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x        = blocks;
  attr.val.clusterDim.y = attr.val.clusterDim.z = 1;
  config.gridDim                                = dim3(blocks);
  config.blockDim                               = dim3(256);
  config.attrs                                  = &attr;
  config.numAttrs                               = 1;
  cudaLaunchKernelExC(&config, kernel, params);
}

int main()
{
  double *out, *buf;
  cudaMalloc(&out, sizeof(double));
  cudaMalloc(&buf, 256 * sizeof(double));
  cudaMemset(buf, 0, 256 * sizeof(double));
  for (void *k : {(void *)ClusterBarriers, (void *)DistributedSharedLoads}) cudaFuncSetAttribute(k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  for (int blocks : {1, 2, 4, 8, 16}) {
    const float bar = PerStep([&](int s) { LaunchCluster((void *)ClusterBarriers, blocks, s, out); });
    const float dsm = PerStep([&](int s) { LaunchCluster((void *)DistributedSharedLoads, blocks, s, out); });
    printf("cluster %2d blocks: cluster.sync %.1f ns, dependent DSMEM load %.1f ns (%s)\n", blocks, bar, dsm, cudaGetErrorString(cudaGetLastError()));
  }
  for (int blocks : {1, 16, 64, 132, 264, 512}) {
    const float bar = PerStep([&](int s) {
      void *params[] = {&s, &out};
      cudaLaunchCooperativeKernel((void *)GridBarriers, blocks, 256, params, 0, 0);
    });
    printf("cooperative grid %3d blocks: grid.sync %.1f ns (%s)\n", blocks, bar, cudaGetErrorString(cudaGetLastError()));
  }
  const float block  = PerStep([&](int s) { BlockBarriers<<<1, 256>>>(s, out); });
  const float shared = PerStep([&](int s) { SharedLoads<<<1, 256>>>(s, out); });
  const float l2     = PerStep([&](int s) { L2Loads<<<1, 256>>>(s, buf, out); });
  printf("__syncthreads (256 threads) %.1f ns; dependent shared load %.1f ns; dependent L2 (__ldcg) load %.1f ns\n", block, shared, l2);
  return 0;
}
