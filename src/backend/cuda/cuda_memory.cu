/* CUDA backend: device memory, copies, the stream, the reduction buffers and the Backend table */
#include "backend/cuda/cuda_common.cuh"
#include <vector>

namespace fusedksp
{
namespace cuda
{

BackendCounters counters;

static cudaStream_t    stream             = nullptr;
static PetscScalar    *partials           = nullptr; /* first stage, reused by every launch          */
static size_t          partials_capacity  = 0;
static PetscScalar    *results_device     = nullptr; /* second stage: the results of a batch, in order */
static PetscScalar    *results_host       = nullptr; /* pinned mirror of results_device                */
static size_t          results_capacity   = 0;
static unsigned int   *tickets            = nullptr; /* MAX_GRID_ROWS counters, zero between launches  */
static PetscBool       finalize_scheduled = PETSC_FALSE;
static PetscScalar    *target_slot        = nullptr; /* reduce_target of the next reducing launch     */
static const PetscInt *target_stop        = nullptr;

bool               recording          = false;
unsigned long long buffers_generation = 0;

/* A batch of deferred results: those of the deferred calls lie one after the other in
   results_device[0, batch_used); calls that complete at once use the slots after them.      */
struct PendingResult {
  int          ndots;
  size_t       offset;
  PetscScalar *dots;
  bool         add; /* dots[] += results (else =) */
};
static bool                       batch_open  = false;
static bool                       batch_defer = false;
static size_t                     batch_used  = 0;
static std::vector<PendingResult> batch_pending;

/* Releases the stream and the reduction buffers; registered with PetscRegisterFinalize() */
static PetscErrorCode Finalize(void)
{
  PetscFunctionBegin;
  if (stream) FusedKSPCallCUDA(cudaStreamSynchronize(stream));
  FusedKSPCallCUDA(cudaFree(partials));
  FusedKSPCallCUDA(cudaFree(results_device));
  FusedKSPCallCUDA(cudaFreeHost(results_host));
  FusedKSPCallCUDA(cudaFree(tickets));
  if (stream) FusedKSPCallCUDA(cudaStreamDestroy(stream));
  stream             = nullptr;
  partials           = nullptr;
  results_device     = nullptr;
  results_host       = nullptr;
  tickets            = nullptr;
  partials_capacity  = 0;
  results_capacity   = 0;
  finalize_scheduled = PETSC_FALSE;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   GetStream - the backend's non-blocking stream, created on the current device at first use
*/
PetscErrorCode GetStream(cudaStream_t *s)
{
  PetscFunctionBegin;
  if (!stream) {
    FusedKSPCallCUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    if (!finalize_scheduled) {
      PetscCall(PetscRegisterFinalize(Finalize));
      finalize_scheduled = PETSC_TRUE;
    }
  }
  *s = stream;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   GetPartials - the partial-sum buffer, grown to at least count entries (geometrically: after the
   first iterations of a solve it is never reallocated; growing waits for the stream, whose kernels
   may still use the old buffer)
*/
PetscErrorCode GetPartials(size_t count, PetscScalar **buffer)
{
  cudaStream_t s;

  PetscFunctionBegin;
  PetscCall(GetStream(&s));
  if (count > partials_capacity) {
    const size_t capacity = PetscMax(count, 2 * partials_capacity);

    PetscCheck(!recording, PETSC_COMM_SELF, PETSC_ERR_PLIB, "The partial-sum buffer must grow to %zu entries while a graph is recorded; run the operations once before recording them", count);
    buffers_generation++;

    FusedKSPCallCUDA(cudaStreamSynchronize(s));
    FusedKSPCallCUDA(cudaFree(partials));
    FusedKSPCallCUDA(cudaMalloc((void **)&partials, capacity * sizeof(PetscScalar)));
    partials_capacity = capacity;
  }
  *buffer = partials;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   GetReduction - the reduction target of the next launch: the partial-sum buffer (at least
   ndots * nblocks entries, grown geometrically, so after the first iterations of a solve it is
   never reallocated) and ndots result slots after those of the deferred calls of an open batch.
   Growing waits for the stream (the old buffers may be in use) and, inside a batch, moves the
   pending results to the new buffer.
*/
PetscErrorCode GetReduction(int ndots, int nblocks, Reduction *red)
{
  const size_t count = (size_t)ndots * nblocks;
  cudaStream_t s;

  PetscFunctionBegin;
  PetscCall(GetStream(&s));
  if (!tickets) {
    FusedKSPCallCUDA(cudaMalloc((void **)&tickets, MAX_GRID_ROWS * sizeof(unsigned int)));
    FusedKSPCallCUDA(cudaMemsetAsync(tickets, 0, MAX_GRID_ROWS * sizeof(unsigned int), s));
  }
  PetscCall(GetPartials(count, &red->partials));
  red->tickets = tickets;
  red->stop    = target_stop;
  if (target_slot) {
    red->result = target_slot;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  if (batch_used + ndots > results_capacity) {
    const size_t capacity = PetscMax(PetscMax(batch_used + ndots, 2 * results_capacity), (size_t)64);
    PetscScalar *device, *host;

    FusedKSPCallCUDA(cudaMalloc((void **)&device, capacity * sizeof(PetscScalar)));
    FusedKSPCallCUDA(cudaMallocHost((void **)&host, capacity * sizeof(PetscScalar)));
    if (batch_used) FusedKSPCallCUDA(cudaMemcpyAsync(device, results_device, batch_used * sizeof(PetscScalar), cudaMemcpyDeviceToDevice, s));
    FusedKSPCallCUDA(cudaStreamSynchronize(s));
    FusedKSPCallCUDA(cudaFree(results_device));
    FusedKSPCallCUDA(cudaFreeHost(results_host));
    PetscCheck(!recording, PETSC_COMM_SELF, PETSC_ERR_PLIB, "The result buffer must grow while a graph is recorded");
    buffers_generation++;
    results_device   = device;
    results_host     = host;
    results_capacity = capacity;
  }
  red->result = results_device + batch_used;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   FinishReduction - the host's side of the second stage (see cuda_common.cuh)
*/
PetscErrorCode FinishReduction(int ndots, int nblocks, PetscScalar *dots, bool add)
{
  cudaStream_t s;

  PetscFunctionBegin;
  if (target_slot) { /* the results stay in backend memory; an empty range has zero sums */
    if (ndots && !nblocks) {
      PetscCall(GetStream(&s));
      FusedKSPCallCUDA(cudaMemsetAsync(target_slot, 0, ndots * sizeof(PetscScalar), s));
    }
    target_slot = nullptr;
    target_stop = nullptr;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  if (!ndots) PetscFunctionReturn(PETSC_SUCCESS);
  if (!nblocks) {
    if (!add)
      for (int d = 0; d < ndots; ++d) dots[d] = 0;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  if (batch_open && batch_defer) {
    batch_pending.push_back({ndots, batch_used, dots, add});
    batch_used += ndots;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(GetStream(&s));
  PetscCheck(batch_used + ndots <= results_capacity, PETSC_COMM_SELF, PETSC_ERR_PLIB, "%d results requested, the buffer holds %zu", ndots, results_capacity - batch_used);
  FusedKSPCallCUDA(cudaMemcpyAsync(results_host + batch_used, results_device + batch_used, ndots * sizeof(PetscScalar), cudaMemcpyDeviceToHost, s));
  PetscCall(LogTransfer(true, ndots * sizeof(PetscScalar)));
  FusedKSPCallCUDA(cudaStreamSynchronize(s));
  for (int d = 0; d < ndots; ++d) dots[d] = (add ? dots[d] : 0) + results_host[batch_used + d];
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   ReduceTargetSet - Backend::reduce_target: the next reducing launch writes its results to slot
   (device memory) and honours the stop flag; FinishReduction() then copies nothing
*/
PetscErrorCode ReduceTargetSet(PetscScalar *slot, const PetscInt *stop)
{
  PetscFunctionBegin;
  target_slot = slot;
  target_stop = stop;
  PetscFunctionReturn(PETSC_SUCCESS);
}

bool ReduceTargetIsSet(void)
{
  return target_slot != nullptr;
}

/*
   BatchBegin - opens a batch; BatchDefer(PETSC_TRUE) then makes FinishReduction() defer
*/
PetscErrorCode BatchBegin(void)
{
  PetscFunctionBegin;
  PetscCheck(!batch_open, PETSC_COMM_SELF, PETSC_ERR_ORDER, "A batch of reductions is already open");
  batch_open  = true;
  batch_defer = false;
  batch_used  = 0;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode BatchDefer(PetscBool defer)
{
  PetscFunctionBegin;
  batch_defer = defer ? true : false;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   BatchEnd - completes the deferred reductions: ONE copy of all their results, ONE wait
*/
PetscErrorCode BatchEnd(void)
{
  cudaStream_t s;

  PetscFunctionBegin;
  PetscCheck(batch_open, PETSC_COMM_SELF, PETSC_ERR_ORDER, "No batch of reductions is open");
  if (batch_used) {
    PetscCall(GetStream(&s));
    FusedKSPCallCUDA(cudaMemcpyAsync(results_host, results_device, batch_used * sizeof(PetscScalar), cudaMemcpyDeviceToHost, s));
    PetscCall(LogTransfer(true, batch_used * sizeof(PetscScalar)));
    FusedKSPCallCUDA(cudaStreamSynchronize(s));
  }
  for (const PendingResult &p : batch_pending)
    for (int d = 0; d < p.ndots; ++d) p.dots[d] = (p.add ? p.dots[d] : 0) + results_host[p.offset + d];
  batch_pending.clear();
  batch_open  = false;
  batch_defer = false;
  batch_used  = 0;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   MallocBytes - cudaMalloc (never managed memory); a failure is a PETSC_ERR_MEM error naming the
   bytes requested and the free and total device memory
*/
static PetscErrorCode MallocBytes(size_t bytes, void **ptr)
{
  cudaError_t err;

  PetscFunctionBegin;
  *ptr = nullptr;
  if (!bytes) PetscFunctionReturn(PETSC_SUCCESS);
  err = cudaMalloc(ptr, bytes);
  if (err != cudaSuccess) {
    size_t free_bytes = 0, total_bytes = 0;

    *ptr = nullptr;
    (void)cudaGetLastError(); /* clear the (non-sticky) allocation error */
    if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) (void)cudaGetLastError();
    SETERRQ(PETSC_COMM_SELF, PETSC_ERR_MEM, "cudaMalloc of %zu bytes failed (%s): %zu of %zu bytes of device memory are free", bytes, cudaGetErrorName(err), free_bytes, total_bytes);
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   FreeBytes - cudaFree; NULL is allowed
*/
static PetscErrorCode FreeBytes(void *ptr)
{
  PetscFunctionBegin;
  FusedKSPCallCUDA(cudaFree(ptr));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   CopyToBackend - host -> device copy on the backend's stream, complete on return
*/
static PetscErrorCode CopyToBackend(void *dst, const void *hostsrc, size_t bytes)
{
  cudaStream_t s;

  PetscFunctionBegin;
  if (!bytes) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(GetStream(&s));
  FusedKSPCallCUDA(cudaMemcpyAsync(dst, hostsrc, bytes, cudaMemcpyHostToDevice, s));
  counters.h2d++;
  FusedKSPCallCUDA(cudaStreamSynchronize(s));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   CopyToHost - device -> host copy on the backend's stream (after the kernels queued there),
   complete on return
*/
static PetscErrorCode CopyToHost(void *hostdst, const void *src, size_t bytes)
{
  cudaStream_t s;

  PetscFunctionBegin;
  if (!bytes) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(GetStream(&s));
  FusedKSPCallCUDA(cudaMemcpyAsync(hostdst, src, bytes, cudaMemcpyDeviceToHost, s));
  counters.d2h++;
  FusedKSPCallCUDA(cudaStreamSynchronize(s));
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace cuda

/*
   CUDABackend - the CUDA backend: fused kernels on the current device, one stream, both stages of
   the reductions on the device (see cuda_common.cuh).  Returns NULL, without raising an error, when the
   CUDA runtime finds no device (no driver, or 0 devices).
*/
const Backend *CUDABackend()
{
  static const Backend backend = {"cuda",
                                  cuda::MallocBytes,
                                  cuda::FreeBytes,
                                  cuda::CopyToBackend,
                                  cuda::CopyToHost,
                                  &cuda::counters,
                                  cuda::CGUpdate,
                                  cuda::SpMVDots,
                                  cuda::SpMVSELLDots,
                                  cuda::DiagGet,
                                  cuda::DiagShift,
                                  cuda::Dots,
                                  cuda::WAXPYDot,
                                  cuda::BCGSUpdate,
                                  cuda::MDot,
                                  cuda::MAXPYScale,
                                  cuda::SGMRESUpdate,
                                  cuda::BatchBegin,
                                  cuda::BatchDefer,
                                  cuda::BatchEnd,
                                  cuda::Gather,
                                  cuda::Scatter,
                                  cuda::SpMVOffDiagDots,
                                  cuda::MallocHost,
                                  cuda::FreeHost,
                                  cuda::CopyToHostAsync,
                                  cuda::CopyToBackendAsync,
                                  cuda::FenceRecord,
                                  cuda::FenceWait,
                                  cuda::ReduceTargetSet,
                                  cuda::CGUpdateChained,
                                  cuda::WAXPYDotChained,
                                  cuda::BCGSUpdateChained,
                                  cuda::SGMRESUpdateChained,
                                  cuda::CGChunk,
                                  cuda::BCGSChunk,
                                  cuda::SGMRESChunk,
                                  cuda::GraphBegin,
                                  cuda::GraphEnd,
                                  cuda::GraphAbort,
                                  cuda::GraphLaunch,
                                  cuda::GraphDestroy,
                                  cuda::TrsvAnalysis,
                                  cuda::TrsvCSR,
                                  cuda::TrsvFree};
  static int           usable  = -1;

  if (usable < 0) {
    int               ndevices = 0;
    const cudaError_t err      = cudaGetDeviceCount(&ndevices);

    if (err != cudaSuccess) (void)cudaGetLastError();
    usable = (err == cudaSuccess && ndevices > 0) ? 1 : 0;
  }
  return usable ? &backend : nullptr;
}

} // namespace fusedksp
