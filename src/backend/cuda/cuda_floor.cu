/*
   CUDA backend: the benchmark floor behind FusedKSPMeasureDeviceFloor() (src/sys/floor.cxx).

   The floor is what one iteration of a fused solver cannot go below on the active device:
     latency    two empty kernel launches + one 1 KB device->pinned host copy + cudaStreamSynchronize
                on a non-blocking stream of its own, timed on the host (std::chrono::steady_clock)
                after a warm-up; minimum and median over `reps` repetitions, in microseconds.  It
                is the cost of seed 000's fused CG iteration (2 kernels + 1 transfer) with no work.
     bandwidth  cudaMemcpyAsync device->device of min(1 GiB, free memory / 4) bytes, timed with CUDA
                events, median of 10 copies after one warm-up copy; 2 * bytes / time (bytes read
                plus bytes written) in GB/s (10^9 bytes per second).
     graph      `its` iterations of two empty kernels, then one 1 KB device->pinned host copy, recorded
                as one CUDA graph; a replay + cudaStreamSynchronize timed on the host after a warm-up,
                minimum and median over `reps` replays, divided by `its`: the floor of an iteration
                of a chunk replayed from a record (-ksp_fused_check_interval its).
   Every stream, event and buffer is released before returning, also when a step fails.
*/
#include "backend/cuda/cuda_common.cuh"
#include <chrono>

namespace
{

constexpr PetscInt FLOOR_WARMUP      = 20;              /* untimed repetitions before the latency */
constexpr size_t   FLOOR_SMALL_BYTES = 1024;            /* the device->host copy of the latency   */
constexpr size_t   FLOOR_COPY_BYTES  = (size_t)1 << 30; /* the device->device copy, at most       */
constexpr size_t   FLOOR_COPY_MIN    = (size_t)1 << 20; /* below this, no meaningful bandwidth    */
constexpr PetscInt FLOOR_COPY_REPS   = 10;              /* timed device->device copies            */

__global__ void EmptyKernel() {}

struct FloorResources {
  cudaStream_t    stream = nullptr;
  cudaEvent_t     start = nullptr, stop = nullptr;
  void           *small_device = nullptr, *small_host = nullptr; /* the 1 KB copy (host side pinned) */
  void           *copy_src = nullptr, *copy_dst = nullptr;       /* the bandwidth copy               */
  PetscReal      *times = nullptr;
  cudaGraphExec_t graph = nullptr; /* the graph floor's record */
};

/* Frees whatever was created, in any state; reports the first CUDA error */
PetscErrorCode ReleaseFloorResources(FloorResources *res)
{
  cudaError_t err  = cudaSuccess;
  auto        keep = [&err](cudaError_t e) {
    if (err == cudaSuccess) err = e;
  };

  PetscFunctionBegin;
  if (res->stream) keep(cudaStreamSynchronize(res->stream));
  if (res->graph) keep(cudaGraphExecDestroy(res->graph));
  if (res->start) keep(cudaEventDestroy(res->start));
  if (res->stop) keep(cudaEventDestroy(res->stop));
  keep(cudaFree(res->small_device));
  keep(cudaFreeHost(res->small_host));
  keep(cudaFree(res->copy_src));
  keep(cudaFree(res->copy_dst));
  if (res->stream) keep(cudaStreamDestroy(res->stream));
  PetscCall(PetscFree(res->times));
  PetscCheck(err == cudaSuccess, PETSC_COMM_SELF, PETSC_ERR_LIB, "Releasing the device floor measurement failed: CUDA error %d (%s): %s", (int)err, cudaGetErrorName(err), cudaGetErrorString(err));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Sorts v[0..n) and gives its median */
PetscErrorCode SortedMedian(PetscInt n, PetscReal v[], PetscReal *median)
{
  PetscFunctionBegin;
  PetscCall(PetscSortReal(n, v));
  *median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Two empty kernels + 1 KB device->pinned host copy + stream synchronization, `reps` times */
PetscErrorCode MeasureLatency(FloorResources *res, PetscInt reps, PetscReal *latency_min_us, PetscReal *latency_median_us)
{
  using clock = std::chrono::steady_clock;

  PetscFunctionBegin;
  FusedKSPCallCUDA(cudaMalloc(&res->small_device, FLOOR_SMALL_BYTES));
  FusedKSPCallCUDA(cudaMallocHost(&res->small_host, FLOOR_SMALL_BYTES));
  FusedKSPCallCUDA(cudaMemsetAsync(res->small_device, 0, FLOOR_SMALL_BYTES, res->stream));
  PetscCall(PetscMalloc1(reps, &res->times));
  for (PetscInt k = -FLOOR_WARMUP; k < reps; k++) {
    const clock::time_point t0 = clock::now();

    EmptyKernel<<<1, 1, 0, res->stream>>>();
    EmptyKernel<<<1, 1, 0, res->stream>>>();
    FusedKSPCallCUDA(cudaMemcpyAsync(res->small_host, res->small_device, FLOOR_SMALL_BYTES, cudaMemcpyDeviceToHost, res->stream));
    FusedKSPCallCUDA(cudaStreamSynchronize(res->stream));
    const clock::time_point t1 = clock::now();

    FusedKSPCheckLaunch();
    if (k >= 0) res->times[k] = std::chrono::duration<PetscReal, std::micro>(t1 - t0).count();
  }
  PetscCall(SortedMedian(reps, res->times, latency_median_us));
  *latency_min_us = res->times[0];
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Device->device copy of min(1 GiB, free / 4) bytes, median of FLOOR_COPY_REPS, timed with events */
PetscErrorCode MeasureBandwidth(FloorResources *res, PetscReal *copy_bandwidth_GBs)
{
  size_t    free_bytes, total_bytes, bytes;
  PetscReal ms[FLOOR_COPY_REPS], median_ms = 0;

  PetscFunctionBegin;
  FusedKSPCallCUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  bytes = PetscMin(FLOOR_COPY_BYTES, free_bytes / 4) & ~(FLOOR_COPY_MIN - 1); /* whole MiB */
  PetscCheck(bytes >= FLOOR_COPY_MIN, PETSC_COMM_SELF, PETSC_ERR_MEM, "Too little free device memory to measure the copy bandwidth: %zu of %zu bytes free, need at least %zu", free_bytes, total_bytes, 4 * FLOOR_COPY_MIN);
  FusedKSPCallCUDA(cudaMalloc(&res->copy_src, bytes));
  FusedKSPCallCUDA(cudaMalloc(&res->copy_dst, bytes));
  FusedKSPCallCUDA(cudaEventCreate(&res->start));
  FusedKSPCallCUDA(cudaEventCreate(&res->stop));
  FusedKSPCallCUDA(cudaMemsetAsync(res->copy_src, 0, bytes, res->stream));
  FusedKSPCallCUDA(cudaMemcpyAsync(res->copy_dst, res->copy_src, bytes, cudaMemcpyDeviceToDevice, res->stream)); /* warm-up */
  for (PetscInt k = 0; k < FLOOR_COPY_REPS; k++) {
    float elapsed;

    FusedKSPCallCUDA(cudaEventRecord(res->start, res->stream));
    FusedKSPCallCUDA(cudaMemcpyAsync(res->copy_dst, res->copy_src, bytes, cudaMemcpyDeviceToDevice, res->stream));
    FusedKSPCallCUDA(cudaEventRecord(res->stop, res->stream));
    FusedKSPCallCUDA(cudaEventSynchronize(res->stop));
    FusedKSPCallCUDA(cudaEventElapsedTime(&elapsed, res->start, res->stop));
    ms[k] = elapsed;
  }
  PetscCall(SortedMedian(FLOOR_COPY_REPS, ms, &median_ms));
  *copy_bandwidth_GBs = 2.0 * (PetscReal)bytes / (median_ms * 1.0e-3) * 1.0e-9;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MeasureFloor(FloorResources *res, PetscInt reps, PetscReal *latency_min_us, PetscReal *latency_median_us, PetscReal *copy_bandwidth_GBs)
{
  PetscFunctionBegin;
  FusedKSPCallCUDA(cudaStreamCreateWithFlags(&res->stream, cudaStreamNonBlocking));
  PetscCall(MeasureLatency(res, reps, latency_min_us, latency_median_us));
  PetscCall(MeasureBandwidth(res, copy_bandwidth_GBs));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* `its` x (two empty kernels), then the 1 KB copy, as one graph: replay + synchronization, `reps` times */
PetscErrorCode MeasureGraphFloor(FloorResources *res, PetscInt reps, PetscInt its, PetscReal *min_us, PetscReal *median_us)
{
  using clock        = std::chrono::steady_clock;
  cudaGraph_t record = nullptr;

  PetscFunctionBegin;
  FusedKSPCallCUDA(cudaStreamCreateWithFlags(&res->stream, cudaStreamNonBlocking));
  FusedKSPCallCUDA(cudaMalloc(&res->small_device, FLOOR_SMALL_BYTES));
  FusedKSPCallCUDA(cudaMallocHost(&res->small_host, FLOOR_SMALL_BYTES));
  FusedKSPCallCUDA(cudaMemsetAsync(res->small_device, 0, FLOOR_SMALL_BYTES, res->stream));
  FusedKSPCallCUDA(cudaStreamSynchronize(res->stream));
  PetscCall(PetscMalloc1(reps, &res->times));
  FusedKSPCallCUDA(cudaStreamBeginCapture(res->stream, cudaStreamCaptureModeThreadLocal));
  for (PetscInt k = 0; k < its; k++) {
    EmptyKernel<<<1, 1, 0, res->stream>>>();
    EmptyKernel<<<1, 1, 0, res->stream>>>();
  }
  (void)cudaMemcpyAsync(res->small_host, res->small_device, FLOOR_SMALL_BYTES, cudaMemcpyDeviceToHost, res->stream);
  FusedKSPCallCUDA(cudaStreamEndCapture(res->stream, &record));
  {
    const cudaError_t err = cudaGraphInstantiate(&res->graph, record, 0);
    (void)cudaGraphDestroy(record);
    FusedKSPCallCUDA(err);
  }
  for (PetscInt k = -FLOOR_WARMUP; k < reps; k++) {
    const clock::time_point t0 = clock::now();
    FusedKSPCallCUDA(cudaGraphLaunch(res->graph, res->stream));
    FusedKSPCallCUDA(cudaStreamSynchronize(res->stream));
    const clock::time_point t1 = clock::now();
    if (k >= 0) res->times[k] = std::chrono::duration<PetscReal, std::micro>(t1 - t0).count() / its;
  }
  PetscCall(SortedMedian(reps, res->times, median_us));
  *min_us = res->times[0];
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace

namespace fusedksp
{
/*
   CUDAMeasureFloor - the CUDA backend's floor measurement behind FusedKSPMeasureDeviceFloor()
   (src/sys/floor.cxx, which has the manual page and checks the active backend)
*/
PetscErrorCode CUDAMeasureFloor(PetscInt reps, PetscReal *latency_min_us, PetscReal *latency_median_us, PetscReal *copy_bandwidth_GBs)
{
  int            ndevices = 0;
  cudaError_t    err;
  FloorResources res;
  PetscErrorCode merr;

  PetscFunctionBegin;
  err = cudaGetDeviceCount(&ndevices);
  if (err != cudaSuccess) (void)cudaGetLastError(); /* clear the error: the host backend goes on */
  PetscCheck(err == cudaSuccess && ndevices > 0, PETSC_COMM_SELF, PETSC_ERR_SUP, "No CUDA device to measure the floor on (%s)", err == cudaSuccess ? "0 devices" : cudaGetErrorString(err));
  merr = MeasureFloor(&res, reps, latency_min_us, latency_median_us, copy_bandwidth_GBs);
  PetscCall(ReleaseFloorResources(&res));
  PetscCall(merr);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   CUDAMeasureGraphFloor - the graph floor behind FusedKSPMeasureDeviceGraphFloor() (src/sys/floor.cxx)
*/
PetscErrorCode CUDAMeasureGraphFloor(PetscInt reps, PetscInt its, PetscReal *min_us, PetscReal *median_us)
{
  FloorResources res;
  PetscErrorCode merr;

  PetscFunctionBegin;
  merr = MeasureGraphFloor(&res, reps, its, min_us, median_us);
  PetscCall(ReleaseFloorResources(&res));
  PetscCall(merr);
  PetscFunctionReturn(PETSC_SUCCESS);
}
} // namespace fusedksp
