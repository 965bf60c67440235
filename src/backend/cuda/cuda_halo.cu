/* CUDA backend: the halo exchange operations of parallel matrices (pack, unpack, off-diagonal
   product fused with the first stage of dot products), staging buffers, asynchronous copies, fences */
#include "backend/cuda/cuda_common.cuh"
#include <unistd.h>

namespace fusedksp
{
namespace cuda
{

constexpr int HALO_MAX_BLOCKS = 4096; /* grid of the pack/unpack kernels (grid-stride loops beyond) */

static cudaEvent_t fence              = nullptr; /* the mark of fence_record, created on first use */
static cudaEvent_t handoff            = nullptr; /* the mark of wait_foreign, foreign_wait and of the side forks and joins, created on first use */
static PetscBool   finalize_scheduled = PETSC_FALSE;

/* Releases the events; registered with PetscRegisterFinalize() */
static PetscErrorCode FinalizeEvents(void)
{
  PetscFunctionBegin;
  if (fence) FusedKSPCallCUDA(cudaEventDestroy(fence));
  if (handoff) FusedKSPCallCUDA(cudaEventDestroy(handoff));
  fence              = nullptr;
  handoff            = nullptr;
  finalize_scheduled = PETSC_FALSE;
  PetscFunctionReturn(PETSC_SUCCESS);
}

static inline int HaloBlocks(PetscInt n)
{
  return (int)PetscMin(((PetscInt64)n + BLOCK_SIZE - 1) / BLOCK_SIZE, (PetscInt64)HALO_MAX_BLOCKS);
}

__global__ void GatherKernel(PetscInt n, const PetscInt *idx, const PetscScalar *w, const PetscScalar *x, PetscScalar *buf)
{
  for (PetscInt64 k = (PetscInt64)blockIdx.x * blockDim.x + threadIdx.x; k < n; k += (PetscInt64)blockDim.x * gridDim.x) {
    const PetscInt i = idx[k];
    buf[k]           = w ? w[i] * x[i] : x[i];
  }
}

/* y[idx[k]] = buf[k], or with Add y[idx[k]] += buf[k] (atomic: the indices may repeat) */
template <bool Add> __global__ void ScatterKernel(PetscInt n, const PetscInt *idx, const PetscScalar *buf, PetscScalar *y)
{
  for (PetscInt64 k = (PetscInt64)blockIdx.x * blockDim.x + threadIdx.x; k < n; k += (PetscInt64)blockDim.x * gridDim.x) {
    if (Add)
      atomicAdd(&y[idx[k]], buf[k]);
    else
      y[idx[k]] = buf[k];
  }
}

/* One thread block per chunk of the rows with off-diagonal entries, one thread per row (they are
   short): out[i] += wl[i] (B_k halo) for i = rows[k], and the block's partials of the change of
   the dot products (terms at the new value minus terms at the old one).                         */
__global__ void SpMVOffDiagDotsKernel(PetscInt nrows, PetscInt chunk, const PetscInt *rows, const PetscInt *rowptr, const PetscInt *colidx, const PetscScalar *vals, const PetscScalar *wl, const PetscScalar *halo, const PetscScalar *in,
                                      PetscScalar *out, const __grid_constant__ DotList dots, const Reduction red)
{
  const ChunkRange range               = BlockChunk(nrows, chunk);
  PetscScalar      acc[FUSED_MAX_DOTS] = {}, gone[FUSED_MAX_DOTS] = {};

  if (Stopped(red)) return;
  for (PetscInt64 k = range.begin + threadIdx.x; k < range.end; k += blockDim.x) {
    const PetscInt    i       = rows[k];
    const PetscScalar old     = out[i];
    const PetscInt    row_end = rowptr[k + 1];
    PetscScalar       sum     = 0;

    for (PetscInt e = rowptr[k]; e < row_end; ++e) sum += vals[e] * halo[colidx[e]];
    out[i] = old + (wl ? wl[i] * sum : sum);
    AddDotTerms(dots, i, in, out[i], acc);
    AddDotTerms(dots, i, in, old, gone);
  }
#pragma unroll
  for (int d = 0; d < FUSED_MAX_DOTS; ++d) acc[d] -= gone[d];
  ReduceBlocks(acc, dots.count, red);
}

/*
   Gather - Backend::gather on the device: one kernel launch (none for n == 0)
*/
PetscErrorCode Gather(PetscInt n, const PetscInt *idx, const PetscScalar *w, const PetscScalar *x, PetscScalar *buf)
{
  cudaStream_t stream;

  PetscFunctionBegin;
  PetscCheck(n >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Negative length %" PetscInt_FMT, n);
  if (n) {
    PetscCall(GetStream(&stream));
    GatherKernel<<<HaloBlocks(n), BLOCK_SIZE, 0, stream>>>(n, idx, w, x, buf);
    FusedKSPCheckLaunch();
    counters.launches++;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   Scatter - Backend::scatter on the device: one kernel launch (none for n == 0)
*/
PetscErrorCode Scatter(PetscInt n, const PetscInt *idx, const PetscScalar *buf, PetscBool add, PetscScalar *y)
{
  cudaStream_t stream;

  PetscFunctionBegin;
  PetscCheck(n >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Negative length %" PetscInt_FMT, n);
  if (n) {
    PetscCall(GetStream(&stream));
    if (add)
      ScatterKernel<true><<<HaloBlocks(n), BLOCK_SIZE, 0, stream>>>(n, idx, buf, y);
    else
      ScatterKernel<false><<<HaloBlocks(n), BLOCK_SIZE, 0, stream>>>(n, idx, buf, y);
    FusedKSPCheckLaunch();
    counters.launches++;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   SpMVOffDiagDots - Backend::spmv_offdiag_dots on the device: one kernel launch (none for 0
   rows) and, when ndots > 0, one device->host copy of the ndots changes, added to dots[] (or, with a
   reduce target, added to its slot on the device by the kernel)
*/
PetscErrorCode SpMVOffDiagDots(const CSRView *B, const PetscInt *rows, const PetscScalar *wl, const PetscScalar *halo, const PetscScalar *in, PetscScalar *out, int ndots, const DotSpec *specs, PetscScalar *dots)
{
  Partition    part;
  Reduction    red;
  DotList      list;
  cudaStream_t stream;

  PetscFunctionBegin;
  PetscCall(PartitionWave((const void *)SpMVOffDiagDotsKernel, B->nrows, &part));
  PetscCheck(B->nrows >= 0 && B->ncols >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Negative matrix size %" PetscInt_FMT " x %" PetscInt_FMT, B->nrows, B->ncols);
  PetscCall(MakeDotList(B->nrows, ndots, specs, &list));
  if (part.nblocks) {
    PetscCall(GetStream(&stream));
    if (ndots) PetscCall(GetReduction(ndots, part.nblocks, &red));
    red.add = ReduceTargetIsSet(); /* the changes are added to the target's values */
    SpMVOffDiagDotsKernel<<<part.nblocks, BLOCK_SIZE, 0, stream>>>(B->nrows, part.chunk, rows, B->rowptr, B->colidx, B->vals, wl, halo, in, out, list, red);
    FusedKSPCheckLaunch();
    counters.launches++;
  }
  PetscCall(FinishReduction(ndots, part.nblocks, dots, true));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   MallocHost - pinned host memory (cudaMallocHost), so that the asynchronous copies are; a
   failure is a PETSC_ERR_MEM error naming the bytes requested and the free host memory, with the
   (non-sticky) allocation error cleared
*/
PetscErrorCode MallocHost(size_t bytes, void **ptr)
{
  void       *p   = nullptr;
  cudaError_t err = cudaErrorMemoryAllocation;

  PetscFunctionBegin;
  *ptr = nullptr;
  if (!bytes) PetscFunctionReturn(PETSC_SUCCESS);
  if (!AllocationFails()) err = cudaMallocHost(&p, bytes);
  if (err != cudaSuccess) {
    const long pages = sysconf(_SC_AVPHYS_PAGES), pagesize = sysconf(_SC_PAGESIZE);

    (void)cudaGetLastError();
    SETERRQ(PETSC_COMM_SELF, PETSC_ERR_MEM, "cudaMallocHost of %zu bytes of pinned host memory failed (%s): %zu bytes of host memory are free", bytes, cudaGetErrorName(err), pages > 0 && pagesize > 0 ? (size_t)pages * (size_t)pagesize : (size_t)0);
  }
  *ptr = p;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   FreeHost - cudaFreeHost; NULL is allowed
*/
PetscErrorCode FreeHost(void *ptr)
{
  PetscFunctionBegin;
  FusedKSPCallCUDA(cudaFreeHost(ptr));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Backend::copy_to_host_async, copy_to_backend_async: queued on the backend's stream (CopyOnStream()) */
PetscErrorCode CopyToHostAsync(void *hostdst, const void *src, size_t bytes)
{
  return CopyOnStream(hostdst, src, bytes, cudaMemcpyDeviceToHost, false);
}

PetscErrorCode CopyToBackendAsync(void *dst, const void *hostsrc, size_t bytes)
{
  return CopyOnStream(dst, hostsrc, bytes, cudaMemcpyHostToDevice, false);
}

/* *ev, created (without timing) at first use; both events of this file are released at PetscFinalize() */
static PetscErrorCode GetEvent(cudaEvent_t *ev)
{
  PetscFunctionBegin;
  if (!*ev) {
    FusedKSPCallCUDA(cudaEventCreateWithFlags(ev, cudaEventDisableTiming));
    if (!finalize_scheduled) {
      PetscCall(PetscRegisterFinalize(FinalizeEvents));
      finalize_scheduled = PETSC_TRUE;
    }
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   FenceRecord - records the fence event on the backend's stream (GetStream()) after the work queued so far
*/
PetscErrorCode FenceRecord(void)
{
  cudaStream_t stream;

  PetscFunctionBegin;
  PetscCall(GetStream(&stream));
  PetscCall(GetEvent(&fence));
  FusedKSPCallCUDA(cudaEventRecord(fence, stream));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* StreamWaitStream - see cuda_common.cuh: the event marks the work queued on `from` so far, and `to` waits for it (a
   wait queued on the device: the event can be recorded again at once) */
PetscErrorCode StreamWaitStream(cudaStream_t to, cudaStream_t from)
{
  PetscFunctionBegin;
  PetscCall(GetEvent(&handoff));
  FusedKSPCallCUDA(cudaEventRecord(handoff, from));
  FusedKSPCallCUDA(cudaStreamWaitEvent(to, handoff, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   WaitForeign - the work queued on the backend's stream (GetStream(): a side scope's stream inside one) from now on
   waits for the work queued so far on the stream `foreign` (Backend::wait_foreign)
*/
PetscErrorCode WaitForeign(void *foreign)
{
  cudaStream_t stream;

  PetscFunctionBegin;
  PetscCall(GetStream(&stream));
  PetscCall(StreamWaitStream(stream, (cudaStream_t)foreign));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   ForeignWait - the work queued on the stream `foreign` from now on waits for the work queued so far on the
   backend's stream (GetStream(): a side scope's stream inside one; Backend::foreign_wait)
*/
PetscErrorCode ForeignWait(void *foreign)
{
  cudaStream_t stream;

  PetscFunctionBegin;
  PetscCall(GetStream(&stream));
  PetscCall(StreamWaitStream((cudaStream_t)foreign, stream));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   FenceWait - blocks the host until the stream has passed the last FenceRecord() (the work queued
   after it keeps running)
*/
PetscErrorCode FenceWait(void)
{
  PetscFunctionBegin;
  if (fence) FusedKSPCallCUDA(cudaEventSynchronize(fence));
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace cuda
} // namespace fusedksp
