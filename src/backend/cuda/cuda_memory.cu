/* CUDA backend: device memory, copies, the streams, the reduction buffers and the Backend table */
#include "backend/cuda/cuda_common.cuh"
#include <vector>

namespace fusedksp
{
namespace cuda
{

BackendCounters counters;

/* The two streams of side scopes (Backend::side_begin): 0 the backend's stream, 1 the second one; GetStream() returns
   streams[side].  The first stage of the reductions has a buffer and tickets per stream (kernels of the two streams
   may run at the same time); the result slots are shared, each launch taking its own.                              */
static cudaStream_t    streams[2]           = {};
static int             side                 = 0;     /* the stream work goes to                          */
static int             side_depth           = 0;     /* open side scopes (nested ones keep the stream)   */
static bool            side_forked          = false; /* stream 1 has work that stream 0 has not joined   */
static PetscScalar    *partials[2]          = {};    /* first stage, reused by every launch of a stream  */
static size_t          partials_capacity[2] = {};
static unsigned int   *tickets[2]           = {};      /* MAX_GRID_ROWS counters, zero between launches  */
static PetscScalar    *results_device       = nullptr; /* second stage: the results of a batch, in order */
static PetscScalar    *results_host         = nullptr; /* pinned mirror of results_device                */
static size_t          results_capacity     = 0;
static PetscBool       finalize_scheduled   = PETSC_FALSE;
static PetscScalar    *target_slot          = nullptr; /* reduce_target of the next reducing launch     */
static const PetscInt *target_stop          = nullptr;

bool               recording          = false;
unsigned long long buffers_generation = 0;

/* The open batches of deferred results, innermost last: those of the deferred calls lie one after
   the other in results_device[0, batch_used), each batch's after those of the batches around it
   (from its frame's start); calls that complete at once use the slots after them.              */
struct PendingResult {
  int          ndots;
  size_t       offset;
  PetscScalar *dots;
  bool         add; /* dots[] += results (else =) */
};
struct BatchFrame {
  size_t start;   /* batch_used when the batch began        */
  size_t pending; /* batch_pending.size() when it began     */
};
constexpr int                     MAX_BATCHES = 64; /* nested solves (see OpsBatchBegin) */
static BatchFrame                 batch_frames[MAX_BATCHES];
static int                        nbatches    = 0;
static bool                       batch_defer = false;
static size_t                     batch_used  = 0;
static std::vector<PendingResult> batch_pending;

/* Releases the streams and the reduction buffers; registered with PetscRegisterFinalize() */
static PetscErrorCode Finalize(void)
{
  PetscFunctionBegin;
  PetscCall(SynchronizeStreams());
  for (int k = 0; k < 2; ++k) {
    FusedKSPCallCUDA(cudaFree(partials[k]));
    FusedKSPCallCUDA(cudaFree(tickets[k]));
    if (streams[k]) FusedKSPCallCUDA(cudaStreamDestroy(streams[k]));
    streams[k]           = nullptr;
    partials[k]          = nullptr;
    tickets[k]           = nullptr;
    partials_capacity[k] = 0;
  }
  FusedKSPCallCUDA(cudaFree(results_device));
  FusedKSPCallCUDA(cudaFreeHost(results_host));
  results_device     = nullptr;
  results_host       = nullptr;
  results_capacity   = 0;
  side               = 0;
  side_depth         = 0;
  side_forked        = false;
  finalize_scheduled = PETSC_FALSE;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   GetStream - the stream of the open side scope (the backend's stream outside any); both non-blocking streams are
   created on the current device at first use
*/
PetscErrorCode GetStream(cudaStream_t *s)
{
  PetscFunctionBegin;
  if (!streams[0]) {
    cudaStream_t created[2] = {};

    FusedKSPCallCUDA(cudaStreamCreateWithFlags(&created[0], cudaStreamNonBlocking));
    {
      const cudaError_t err = cudaStreamCreateWithFlags(&created[1], cudaStreamNonBlocking);
      if (err != cudaSuccess) (void)cudaStreamDestroy(created[0]);
      FusedKSPCallCUDA(err);
    }
    streams[0] = created[0];
    streams[1] = created[1];
    if (!finalize_scheduled) {
      PetscCall(PetscRegisterFinalize(Finalize));
      finalize_scheduled = PETSC_TRUE;
    }
  }
  *s = streams[side];
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* SynchronizeStreams - see cuda_common.cuh */
PetscErrorCode SynchronizeStreams(void)
{
  PetscFunctionBegin;
  for (cudaStream_t s : streams)
    if (s) FusedKSPCallCUDA(cudaStreamSynchronize(s));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   SideBegin - Backend::side_begin: outside any side scope and any recording, the work queued from now on goes to
   streams[s]; opening side 1 forks (stream 1 waits for the work queued on stream 0 so far).  A nested scope only
   counts its depth.  Nothing changes on an error.
*/
PetscErrorCode SideBegin(int s)
{
  cudaStream_t current;

  PetscFunctionBegin;
  PetscCheck(s == 0 || s == 1, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Side %d: the CUDA backend has streams 0 and 1", s);
  PetscCall(GetStream(&current));
  if (!side_depth && !recording) {
    if (s == 1) {
      PetscCall(StreamWaitStream(streams[1], streams[0]));
      side_forked = true;
      counters.side_forks++;
    }
    side = s;
  }
  side_depth++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   SideEnd - Backend::side_end: closes the innermost side scope; the outermost one goes back to stream 0
*/
PetscErrorCode SideEnd(void)
{
  PetscFunctionBegin;
  PetscCheck(side_depth > 0, PETSC_COMM_SELF, PETSC_ERR_ORDER, "No side scope is open");
  if (--side_depth == 0) side = 0;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   SidesJoin - Backend::sides_join: outside any side scope, stream 0 waits (on the device) for the work queued on
   stream 1 since the last fork; nothing when there is none
*/
PetscErrorCode SidesJoin(void)
{
  PetscFunctionBegin;
  if (side_depth || !side_forked) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(StreamWaitStream(streams[0], streams[1]));
  side_forked = false;
  counters.side_joins++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   DeviceAlloc - cudaMalloc of bytes into *ptr, which is changed only on success; a failure is a
   PETSC_ERR_MEM error naming the bytes requested and the free and total device memory, with the
   (non-sticky) allocation error cleared
*/
static PetscErrorCode DeviceAlloc(size_t bytes, void **ptr)
{
  void       *p   = nullptr;
  cudaError_t err = cudaErrorMemoryAllocation;

  PetscFunctionBegin;
  if (!AllocationFails()) err = cudaMalloc(&p, bytes);
  if (err != cudaSuccess) {
    size_t free_bytes = 0, total_bytes = 0;

    (void)cudaGetLastError();
    if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) (void)cudaGetLastError();
    SETERRQ(PETSC_COMM_SELF, PETSC_ERR_MEM, "cudaMalloc of %zu bytes failed (%s): %zu of %zu bytes of device memory are free", bytes, cudaGetErrorName(err), free_bytes, total_bytes);
  }
  *ptr = p;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   GetPartials - the partial-sum buffer of the current stream, grown to at least count entries
   (geometrically: after the first iterations of a solve it is never reallocated; growing waits for
   the stream, whose kernels may still use the old buffer).  A failed allocation leaves the old
   buffer in place.
*/
PetscErrorCode GetPartials(size_t count, PetscScalar **buffer)
{
  cudaStream_t s;

  PetscFunctionBegin;
  PetscCall(GetStream(&s));
  if (count > partials_capacity[side]) {
    const size_t capacity = PetscMax(count, 2 * partials_capacity[side]);
    void        *grown;

    PetscCheck(!recording, PETSC_COMM_SELF, PETSC_ERR_PLIB, "The partial-sum buffer must grow to %zu entries while a graph is recorded; run the operations once before recording them", count);
    PetscCall(DeviceAlloc(capacity * sizeof(PetscScalar), &grown));
    buffers_generation++;
    FusedKSPCallCUDA(cudaStreamSynchronize(s));
    FusedKSPCallCUDA(cudaFree(partials[side]));
    partials[side]          = (PetscScalar *)grown;
    partials_capacity[side] = capacity;
  }
  *buffer = partials[side];
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   GetReduction - the reduction target of the next launch: the partial-sum buffer (at least
   ndots * nblocks entries, grown geometrically, so after the first iterations of a solve it is
   never reallocated) and ndots result slots after those of the deferred calls of the open batches.
   Growing the results waits for both streams (the kernels of either may still write the old
   buffer) and moves the pending results to the new buffer; a failed allocation leaves the old
   buffers in place.
*/
PetscErrorCode GetReduction(int ndots, int nblocks, Reduction *red)
{
  const size_t count = (size_t)ndots * nblocks;
  cudaStream_t s;

  PetscFunctionBegin;
  PetscCall(GetStream(&s));
  if (!tickets[side]) {
    void *t;

    PetscCall(DeviceAlloc(MAX_GRID_ROWS * sizeof(unsigned int), &t));
    tickets[side] = (unsigned int *)t;
    FusedKSPCallCUDA(cudaMemsetAsync(tickets[side], 0, MAX_GRID_ROWS * sizeof(unsigned int), s));
  }
  PetscCall(GetPartials(count, &red->partials));
  red->tickets = tickets[side];
  red->stop    = target_stop;
  if (target_slot) {
    red->result = target_slot;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  if (batch_used + ndots > results_capacity) {
    const size_t capacity = PetscMax(PetscMax(batch_used + ndots, 2 * results_capacity), (size_t)64);
    void        *device, *host;

    PetscCheck(!recording, PETSC_COMM_SELF, PETSC_ERR_PLIB, "The result buffer must grow while a graph is recorded");
    PetscCall(DeviceAlloc(capacity * sizeof(PetscScalar), &device));
    {
      const PetscErrorCode ierr = MallocHost(capacity * sizeof(PetscScalar), &host);
      if (ierr) {
        (void)cudaFree(device);
        PetscCall(ierr);
      }
    }
    PetscCall(SynchronizeStreams());
    if (batch_used) FusedKSPCallCUDA(cudaMemcpyAsync(device, results_device, batch_used * sizeof(PetscScalar), cudaMemcpyDeviceToDevice, s));
    FusedKSPCallCUDA(cudaStreamSynchronize(s));
    FusedKSPCallCUDA(cudaFree(results_device));
    FusedKSPCallCUDA(cudaFreeHost(results_host));
    buffers_generation++;
    results_device   = (PetscScalar *)device;
    results_host     = (PetscScalar *)host;
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
    if (ndots && !nblocks && !add) {
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
  if (nbatches && batch_defer) {
    FusedKSPCallCXX(batch_pending.push_back({ndots, batch_used, dots, add}));
    batch_used += ndots;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(GetStream(&s));
  PetscCheck(batch_used + ndots <= results_capacity, PETSC_COMM_SELF, PETSC_ERR_PLIB, "%d results requested, the buffer holds %zu", ndots, results_capacity - batch_used);
  FusedKSPCallCUDA(cudaMemcpyAsync(results_host + batch_used, results_device + batch_used, ndots * sizeof(PetscScalar), cudaMemcpyDeviceToHost, s));
  PetscCall(LogResultsToHost(ndots * sizeof(PetscScalar)));
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
   BatchBegin - opens a batch (inside the open ones: their deferred results stay pending);
   BatchDefer(PETSC_TRUE) then makes FinishReduction() defer
*/
PetscErrorCode BatchBegin(void)
{
  PetscFunctionBegin;
  PetscCheck(nbatches < MAX_BATCHES, PETSC_COMM_SELF, PETSC_ERR_SUP, "Batches of reductions nested more than %d deep", MAX_BATCHES);
  batch_frames[nbatches++] = {batch_used, batch_pending.size()};
  batch_defer              = false;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode BatchDefer(PetscBool defer)
{
  PetscFunctionBegin;
  batch_defer = defer ? true : false;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Closes the innermost batch: its results slots and pending entries are released */
static void BatchPop(void)
{
  const BatchFrame f = batch_frames[--nbatches];

  batch_pending.resize(f.pending);
  batch_used  = f.start;
  batch_defer = false;
}

/* Copies results [start, start + n) to the pinned mirror and waits for them */
static PetscErrorCode ResultsToHost(cudaStream_t s, size_t start, size_t n)
{
  PetscFunctionBegin;
  FusedKSPCallCUDA(cudaMemcpyAsync(results_host + start, results_device + start, n * sizeof(PetscScalar), cudaMemcpyDeviceToHost, s));
  PetscCall(LogResultsToHost(n * sizeof(PetscScalar)));
  FusedKSPCallCUDA(cudaStreamSynchronize(s));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   BatchEnd - completes the deferred reductions of the innermost batch: ONE copy of all their
   results, ONE wait; outside any side scope after joining side 1's work (SidesJoin()), so the
   copy on stream 0 follows the kernels of both streams
*/
PetscErrorCode BatchEnd(void)
{
  cudaStream_t s;

  PetscFunctionBegin;
  PetscCheck(nbatches, PETSC_COMM_SELF, PETSC_ERR_ORDER, "No batch of reductions is open");
  {
    const BatchFrame f    = batch_frames[nbatches - 1];
    const size_t     n    = batch_used - f.start;
    PetscErrorCode   ierr = SidesJoin();

    if (!ierr && n) ierr = GetStream(&s);
    if (!ierr && n) ierr = ResultsToHost(s, f.start, n);
    if (ierr) {
      BatchPop();
      PetscCall(ierr);
    }
    for (size_t p = f.pending; p < batch_pending.size(); ++p) {
      const PendingResult &r = batch_pending[p];
      for (int d = 0; d < r.ndots; ++d) r.dots[d] = (r.add ? r.dots[d] : 0) + results_host[r.offset + d];
    }
  }
  BatchPop();
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   BatchAbandon - closes the innermost batch without filling the dots[] of its deferred reductions
*/
PetscErrorCode BatchAbandon(void)
{
  PetscFunctionBegin;
  PetscCheck(nbatches, PETSC_COMM_SELF, PETSC_ERR_ORDER, "No batch of reductions is open");
  BatchPop();
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   MallocBytes - cudaMalloc (never managed memory); a failure is a PETSC_ERR_MEM error naming the
   bytes requested and the free and total device memory
*/
static PetscErrorCode MallocBytes(size_t bytes, void **ptr)
{
  PetscFunctionBegin;
  *ptr = nullptr;
  if (!bytes) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(DeviceAlloc(bytes, ptr));
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
   CopyOnStream - `bytes` (none when 0) copied on the backend's stream, after the kernels queued there:
   complete on return when `sync` (counted in counters.h2d or d2h), else queued (and logged as a transfer,
   LogTransfer(); complete after the next FenceRecord() + FenceWait())
*/
PetscErrorCode CopyOnStream(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind, bool sync)
{
  cudaStream_t s;

  PetscFunctionBegin;
  if (!bytes) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(GetStream(&s));
  FusedKSPCallCUDA(cudaMemcpyAsync(dst, src, bytes, kind, s));
  if (!sync)
    PetscCall(LogTransfer(kind == cudaMemcpyDeviceToHost, bytes));
  else {
    ++(kind == cudaMemcpyDeviceToHost ? counters.d2h : counters.h2d);
    FusedKSPCallCUDA(cudaStreamSynchronize(s));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* FreeBuffers - see cuda_common.cuh */
PetscErrorCode FreeBuffers(std::initializer_list<void *> buffers)
{
  PetscFunctionBegin;
  for (void *b : buffers) PetscCall(FreeBytes(b));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Backend::copy_to_backend, copy_to_host: complete on return */
static PetscErrorCode CopyToBackend(void *dst, const void *hostsrc, size_t bytes)
{
  counters.h2d_bytes += (PetscInt64)bytes;
  return CopyOnStream(dst, hostsrc, bytes, cudaMemcpyHostToDevice, true);
}

static PetscErrorCode CopyToHost(void *hostdst, const void *src, size_t bytes)
{
  return CopyOnStream(hostdst, src, bytes, cudaMemcpyDeviceToHost, true);
}

/* Backend::copy_within: queued on the backend's stream */
static PetscErrorCode CopyWithin(void *dst, const void *src, size_t bytes)
{
  cudaStream_t s;

  PetscFunctionBegin;
  if (!bytes) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(GetStream(&s));
  FusedKSPCallCUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s));
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace cuda

/*
   CUDABackend - the CUDA backend: fused kernels on the current device, one stream (and a second one
   in side scopes), both stages of the reductions on the device (see cuda_common.cuh).  Returns NULL, without raising an error, when the
   CUDA runtime finds no device (no driver, or 0 devices).
*/
const Backend *CUDABackend()
{
  static const Backend backend = {"cuda",
                                  cuda::MallocBytes,
                                  cuda::FreeBytes,
                                  cuda::CopyToBackend,
                                  cuda::CopyToHost,
                                  cuda::CopyWithin,
                                  &cuda::counters,
                                  cuda::CGUpdate,
                                  cuda::SpMVDots,
                                  cuda::SpMVSELLDots,
                                  cuda::SpMVUpdate,
                                  cuda::DiagGet,
                                  cuda::DiagShift,
                                  cuda::SELLFromCSR,
                                  cuda::CSRFromSELL,
                                  cuda::Dots,
                                  cuda::WAXPYDot,
                                  cuda::BCGSUpdate,
                                  cuda::MDot,
                                  cuda::MAXPYScale,
                                  cuda::BlockMDot,
                                  cuda::BlockMAXPY,
                                  cuda::SGMRESUpdate,
                                  cuda::BatchBegin,
                                  cuda::BatchDefer,
                                  cuda::BatchEnd,
                                  cuda::BatchAbandon,
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
                                  cuda::TrsvFree,
                                  cuda::BlockDiagMult,
                                  PETSC_FALSE,
                                  cuda::WaitForeign,
                                  cuda::ForeignWait,
                                  cuda::ILU0Analysis,
                                  cuda::ILU0Numeric,
                                  cuda::ILU0Free,
                                  cuda::NCCLCommCreate,
                                  cuda::NCCLCommDestroy,
                                  cuda::NCCLAllreduce,
                                  cuda::NCCLExchange,
                                  cuda::SpGEMMSymbolic,
                                  cuda::SpGEMMNumeric,
                                  cuda::SpGEMMFree,
                                  sizeof(PetscInt) == sizeof(int) ? cuda::CSRTranspose : nullptr, /* cuSPARSE's csr2csc: 32-bit indices */
                                  cuda::SideBegin,
                                  cuda::SideEnd,
                                  cuda::SidesJoin};
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
