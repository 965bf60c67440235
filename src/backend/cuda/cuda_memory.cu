/* CUDA backend: device memory, copies, the stream, the partial-sum buffers and the Backend table */
#include "backend/cuda/cuda_common.cuh"
#include <vector>

namespace fusedksp
{
namespace cuda
{

BackendCounters counters;

static cudaStream_t stream             = nullptr;
static PetscScalar *partials_device    = nullptr; /* first stage of the reductions          */
static PetscScalar *partials_host      = nullptr; /* pinned mirror of partials_device         */
static size_t       partials_capacity  = 0;       /* entries of each of the two buffers       */
static PetscBool    finalize_scheduled = PETSC_FALSE;

/* A batch of deferred second stages: partials of the deferred calls lie one after the other in
   partials_device[0, batch_used); calls that complete at once use the space after them.       */
struct PendingSum {
  int          ndots, nblocks;
  size_t       offset;
  PetscScalar *dots;
};
static bool                    batch_open  = false;
static bool                    batch_defer = false;
static size_t                  batch_used  = 0;
static std::vector<PendingSum> batch_pending;

/* Releases the stream and the partial-sum buffers; registered with PetscRegisterFinalize() */
static PetscErrorCode Finalize(void)
{
  PetscFunctionBegin;
  if (stream) FusedKSPCallCUDA(cudaStreamSynchronize(stream));
  FusedKSPCallCUDA(cudaFree(partials_device));
  FusedKSPCallCUDA(cudaFreeHost(partials_host));
  if (stream) FusedKSPCallCUDA(cudaStreamDestroy(stream));
  stream             = nullptr;
  partials_device    = nullptr;
  partials_host      = nullptr;
  partials_capacity  = 0;
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
   GetPartials - a device buffer of at least count partial sums (after those of the deferred calls
   of an open batch), with a pinned host mirror of the same size; grown geometrically, so after the
   first iterations of a solve it is never reallocated.  Growing inside a batch moves the pending
   partials to the new buffer (a device-to-device copy ordered after the kernels that wrote them).
*/
PetscErrorCode GetPartials(size_t count, PetscScalar **partials)
{
  cudaStream_t s;

  PetscFunctionBegin;
  PetscCall(GetStream(&s));
  if (batch_used + count > partials_capacity) {
    const size_t capacity = PetscMax(batch_used + count, 2 * partials_capacity);
    PetscScalar *device, *host;

    FusedKSPCallCUDA(cudaMalloc((void **)&device, capacity * sizeof(PetscScalar)));
    FusedKSPCallCUDA(cudaMallocHost((void **)&host, capacity * sizeof(PetscScalar)));
    if (batch_used) FusedKSPCallCUDA(cudaMemcpyAsync(device, partials_device, batch_used * sizeof(PetscScalar), cudaMemcpyDeviceToDevice, s));
    FusedKSPCallCUDA(cudaStreamSynchronize(s)); /* the old buffers may still be in use */
    FusedKSPCallCUDA(cudaFree(partials_device));
    FusedKSPCallCUDA(cudaFreeHost(partials_host));
    partials_device   = device;
    partials_host     = host;
    partials_capacity = capacity;
  }
  *partials = partials_device + batch_used;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   SumPartials - the second stage of the reductions: one device->host copy of all partials of the
   call, one wait for the stream, then the sums in block order (see cuda_common.cuh)
*/
PetscErrorCode SumPartials(int ndots, int nblocks, PetscScalar *dots)
{
  const size_t count = (size_t)ndots * nblocks;
  cudaStream_t s;

  PetscFunctionBegin;
  if (count && batch_open && batch_defer) {
    batch_pending.push_back({ndots, nblocks, batch_used, dots});
    batch_used += count;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  if (count) {
    PetscCall(GetStream(&s));
    PetscCheck(batch_used + count <= partials_capacity, PETSC_COMM_SELF, PETSC_ERR_PLIB, "%zu partial sums requested, the buffer holds %zu", count, partials_capacity);
    FusedKSPCallCUDA(cudaMemcpyAsync(partials_host + batch_used, partials_device + batch_used, count * sizeof(PetscScalar), cudaMemcpyDeviceToHost, s));
    counters.d2h++;
    FusedKSPCallCUDA(cudaStreamSynchronize(s));
  }
  for (int d = 0; d < ndots; ++d) {
    PetscScalar sum = 0;
    for (int b = 0; b < nblocks; ++b) sum += partials_host[batch_used + (size_t)d * nblocks + b];
    dots[d] = sum;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   BatchBegin - opens a batch; BatchDefer(PETSC_TRUE) then makes SumPartials() defer
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
   BatchEnd - completes the deferred second stages: ONE copy of all their partials, ONE wait
*/
PetscErrorCode BatchEnd(void)
{
  cudaStream_t s;

  PetscFunctionBegin;
  PetscCheck(batch_open, PETSC_COMM_SELF, PETSC_ERR_ORDER, "No batch of reductions is open");
  if (batch_used) {
    PetscCall(GetStream(&s));
    FusedKSPCallCUDA(cudaMemcpyAsync(partials_host, partials_device, batch_used * sizeof(PetscScalar), cudaMemcpyDeviceToHost, s));
    counters.d2h++;
    FusedKSPCallCUDA(cudaStreamSynchronize(s));
  }
  for (const PendingSum &p : batch_pending)
    for (int d = 0; d < p.ndots; ++d) {
      PetscScalar sum = 0;
      for (int b = 0; b < p.nblocks; ++b) sum += partials_host[p.offset + (size_t)d * p.nblocks + b];
      p.dots[d] = sum;
    }
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
   CUDABackend - the CUDA backend: fused kernels on the current device, one stream, partial sums
   summed on the host (see cuda_common.cuh).  Returns NULL, without raising an error, when the
   CUDA runtime finds no device (no driver, or 0 devices).
*/
const Backend *CUDABackend()
{
  static const Backend backend = {"cuda",         cuda::MallocBytes,     cuda::FreeBytes,  cuda::CopyToBackend, cuda::CopyToHost,      &cuda::counters,          cuda::CGUpdate,    cuda::SpMVDots, cuda::Dots,
                                  cuda::WAXPYDot, cuda::BCGSUpdate,      cuda::MDot,       cuda::MAXPYScale,    cuda::SGMRESUpdate,    cuda::BatchBegin,         cuda::BatchDefer,  cuda::BatchEnd, cuda::Gather,
                                  cuda::Scatter,  cuda::SpMVOffDiagDots, cuda::MallocHost, cuda::FreeHost,      cuda::CopyToHostAsync, cuda::CopyToBackendAsync, cuda::FenceRecord, cuda::FenceWait};
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
