/*
   The cost of one synchronisation round among co-resident thread blocks (the measurement behind the
   "grid of clusters" experiment of tutorials/results/README.md, 2026-11-22).  Standalone:
     nvcc -O3 -arch=sm_90 -std=c++17 -o barrier-bench barrier-bench.cu && ./barrier-bench
   Every launch is cooperative; the cluster modes add a cluster dimension.  Median of 5 launches of
   2000 rounds each (a sixth, the first, is warm-up), per round.
*/
#include <algorithm>
#include <cooperative_groups.h>
#include <cstdio>
#include <vector>

namespace cg = cooperative_groups;

__device__ __forceinline__ void AddRelease(unsigned int *p, unsigned int v)
{
  asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ unsigned int LoadAcquire(const unsigned int *p)
{
  unsigned int v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void StoreRelease(unsigned int *p, unsigned int v)
{
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

/* The calling thread (when `arrive`) adds its arrival to the counter and waits until it reaches target */
__device__ void CounterBarrier(bool arrive, unsigned int *counter, unsigned target)
{
  if (!arrive) return;
  AddRelease(counter, 1);
  while (LoadAcquire(counter) < target)
    ;
}

/* Round r of an exchange among `count` publishers: publisher `me` (when `publish`) stores 32 values
   and its flag; warp 0 of every block waits for all flags and sums the values; returns a sum      */
__device__ double Exchange(bool publish, unsigned count, unsigned me, int r, unsigned int *flags, double *vals, double *sums)
{
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;

  if (warp == 0) {
    double v = 0;
    if (publish) {
      __stcg(vals + ((size_t)(r % 2) * count + me) * 32 + lane, (double)(r + lane));
      __syncwarp();
      if (lane == 0) StoreRelease(flags + me, r);
    }
    for (unsigned b = lane; b < count; b += 32)
      while (LoadAcquire(flags + b) < (unsigned)r)
        ;
    __syncwarp();
    for (unsigned b = 0; b < count; ++b) v += __ldcg(vals + ((size_t)(r % 2) * count + b) * 32 + lane);
    sums[lane] = v;
  }
  __syncthreads();
  return sums[warp % 32];
}

enum Mode { CLUSTER_SYNC, HIER_BARRIER, FLAT_BARRIER, FLAT_EXCHANGE, GRID_SYNC, HIER_EXCHANGE, GRID_SYNC_IN_CLUSTERS, CLUSTER_AROUND_GRID_SYNC, NMODES };
const char *names[] = {"cluster.sync (one cluster)", "cluster.sync + leader's atomic and spin + cluster.sync",      "every block's atomic and spin (flat)", "every block publishes 32 doubles + flag, polls all (flat)",
                       "grid.sync, no clusters",     "cluster.sync + leader publishes 32 doubles + flag, all poll", "grid.sync in a cluster launch",        "cluster arrive + grid.sync + cluster wait"};

__global__ void Rounds(int mode, int rounds, unsigned int *counter, unsigned int *flags, double *vals, double *out)
{
  __shared__ double sums[32];
  const unsigned    G   = gridDim.x;
  cg::cluster_group cl  = cg::this_cluster(); /* one block without a cluster dimension */
  double            acc = 0;

  for (int r = 1; r <= rounds; ++r) {
    switch (mode) {
    case CLUSTER_SYNC:
      cl.sync();
      break;
    case HIER_BARRIER:
      cl.sync();
      CounterBarrier(cl.block_rank() == 0 && threadIdx.x == 0, counter, (unsigned)r * (G / cl.num_blocks()));
      cl.sync();
      break;
    case FLAT_BARRIER:
      __syncthreads();
      CounterBarrier(threadIdx.x == 0, counter, (unsigned)r * G);
      __syncthreads();
      break;
    case FLAT_EXCHANGE:
      acc += Exchange(true, G, blockIdx.x, r, flags, vals, sums);
      break;
    case GRID_SYNC:
    case GRID_SYNC_IN_CLUSTERS:
      cg::this_grid().sync();
      break;
    case HIER_EXCHANGE:
      cl.sync();
      acc += Exchange(cl.block_rank() == 0, G / cl.num_blocks(), blockIdx.x / cl.num_blocks(), r, flags, vals, sums);
      break;
    case CLUSTER_AROUND_GRID_SYNC:
      cl.barrier_arrive();
      cg::this_grid().sync();
      cl.barrier_wait();
      break;
    }
  }
  if (acc == 12345.678) out[0] = acc; /* keeps the exchanges' sums */
}

int main()
{
  unsigned int *counter, *flags;
  double       *vals, *out;
  cudaEvent_t   e0, e1;
  const int     rounds = 2000;

  cudaMalloc(&counter, sizeof(unsigned int));
  cudaMalloc(&flags, 4096 * sizeof(unsigned int));
  cudaMalloc(&vals, 2 * 4096 * 32 * sizeof(double));
  cudaMalloc(&out, sizeof(double));
  cudaFuncSetAttribute((const void *)Rounds, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  for (int threads : {256, 512})
    for (int mode = 0; mode < NMODES; ++mode)
      for (int cs : {8, 16})
        for (int G : {8, 16, 32, 48, 64, 96, 128}) {
          const bool          clusters = mode == CLUSTER_SYNC || mode == HIER_BARRIER || mode == HIER_EXCHANGE || mode == GRID_SYNC_IN_CLUSTERS || mode == CLUSTER_AROUND_GRID_SYNC;
          cudaLaunchConfig_t  config   = {};
          cudaLaunchAttribute attr[2];
          std::vector<float>  times;
          int                 most = -1;

          if (G % cs || (mode == CLUSTER_SYNC) != (G == cs) || (!clusters && cs != 16)) continue;
          attr[0].id              = cudaLaunchAttributeCooperative;
          attr[0].val.cooperative = 1;
          attr[1].id              = cudaLaunchAttributeClusterDimension;
          attr[1].val.clusterDim  = {(unsigned)cs, 1, 1};
          config.gridDim          = dim3(G);
          config.blockDim         = dim3(threads);
          config.attrs            = attr;
          config.numAttrs         = clusters ? 2 : 1;
          if (clusters) {
            cudaLaunchConfig_t query = config;
            query.attrs              = attr + 1;
            query.numAttrs           = 1;
            if (cudaOccupancyMaxActiveClusters(&most, (const void *)Rounds, &query) != cudaSuccess) (void)cudaGetLastError();
          }
          for (int rep = 0; rep < 6; ++rep) {
            cudaError_t err;
            float       ms;

            cudaMemset(counter, 0, sizeof(unsigned int));
            cudaMemset(flags, 0, 4096 * sizeof(unsigned int));
            cudaEventRecord(e0);
            err = cudaLaunchKernelEx(&config, Rounds, mode, rounds, counter, flags, vals, out);
            cudaEventRecord(e1);
            if (err == cudaSuccess) err = cudaEventSynchronize(e1);
            if (err != cudaSuccess) {
              printf("%-58s cluster %2d blocks %3d threads %d: %s\n", names[mode], clusters ? cs : 1, G, threads, cudaGetErrorString(err));
              (void)cudaGetLastError();
              times.clear();
              break;
            }
            cudaEventElapsedTime(&ms, e0, e1);
            if (rep) times.push_back(ms);
          }
          if (times.empty()) continue;
          std::sort(times.begin(), times.end());
          printf("%-58s cluster %2d blocks %3d threads %d (clusters the device holds: %d): %.3f us per round\n", names[mode], clusters ? cs : 1, G, threads, most, times[times.size() / 2] * 1e3 / rounds);
        }
  return 0;
}
