/*
   CUDA backend: what the kernel families share.

   Reduction scheme (the contract's, see backend/backend.hpp): the index range [0, n) is cut into
   ReduceChunks(n) contiguous chunks, exactly as the host backend cuts it
   (chunk = ceil(n / nchunks)); thread block b of a fused
   kernel owns chunk b, its threads stride through the chunk, and the block writes ONE partial sum
   per dot product (cub::BlockReduce) to a device buffer laid out dot-major,
   partials[d * nblocks + b].  The host then copies all partials of the call in ONE
   cudaMemcpyAsync into a pinned buffer, waits for the stream once, and adds them in block order
   (the second stage).  Only the summation order inside a chunk differs from the host backend.

   Every kernel and copy goes to one non-blocking stream, created on first use; the stream and the
   partial-sum buffers are released by PetscFinalize().
*/
#pragma once

#include <petscsys.h>
#include "backend/backend.hpp"
#include <cuda_runtime.h>
#include <cub/block/block_reduce.cuh>

#if defined(PETSC_USE_COMPLEX) || !defined(PETSC_USE_REAL_DOUBLE)
#error "The CUDA backend of FusedKSP needs a PETSc with real double precision scalars"
#endif

/* Turns a cudaError_t into a PETSc error (PETSC_ERR_LIB) */
#define FusedKSPCallCUDA(...)                                                                                                                                                                                                                            \
  do {                                                                                                                                                                                                                                                   \
    const cudaError_t fusedksp_cuda_err_ = (__VA_ARGS__);                                                                                                                                                                                                \
    PetscCheck(fusedksp_cuda_err_ == cudaSuccess, PETSC_COMM_SELF, PETSC_ERR_LIB, "CUDA error %d (%s): %s", (int)fusedksp_cuda_err_, cudaGetErrorName(fusedksp_cuda_err_), cudaGetErrorString(fusedksp_cuda_err_));                                      \
  } while (0)

/* Checks the launch that precedes it (configuration errors; faults show up at the next wait) */
#define FusedKSPCheckLaunch() FusedKSPCallCUDA(cudaGetLastError())

namespace fusedksp
{
namespace cuda
{

constexpr int BLOCK_SIZE = 256; /* threads per block of every fused kernel */

extern BackendCounters counters;

/* The backend's stream (created on first use) */
PetscErrorCode GetStream(cudaStream_t *stream);

/* A device buffer for at least `count` partial sums (grown on demand, reused by every call) */
PetscErrorCode GetPartials(size_t count, PetscScalar **partials);

/* The second stage: copies the ndots * nblocks partials to the pinned host buffer (one copy, one
   wait) and sets dots[d] to the sum of partials[d * nblocks + b] over b in block order.  With
   nblocks == 0 (empty range) the dots are 0 and nothing is copied.  Inside a deferring batch
   (BatchBegin/BatchDefer) it only records the request; BatchEnd completes all of them.       */
PetscErrorCode SumPartials(int ndots, int nblocks, PetscScalar *dots);
PetscErrorCode BatchBegin(void);
PetscErrorCode BatchDefer(PetscBool);
PetscErrorCode BatchEnd(void);

/* The backend's operations (see Backend in backend/backend.hpp), one kernel family per file */
PetscErrorCode CGUpdate(PetscInt, PetscScalar, PetscScalar, PetscScalar *, PetscScalar *, PetscScalar *, PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar[3]);
PetscErrorCode SpMVDots(const CSRView *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *, int, const DotSpec *, PetscScalar *);
PetscErrorCode Dots(PetscInt, const PetscScalar *, const PetscScalar *, int, const DotSpec *, PetscScalar *);
PetscErrorCode WAXPYDot(PetscInt, PetscScalar, const PetscScalar *, const PetscScalar *, PetscScalar *, PetscScalar[1]);
PetscErrorCode BCGSUpdate(PetscInt, PetscScalar, PetscScalar, PetscScalar, const PetscScalar *, PetscScalar *, PetscScalar *, PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, int,
                          PetscScalar *);
PetscErrorCode MDot(PetscInt, PetscInt, const PetscScalar *const *, const PetscScalar *, PetscBool, PetscScalar *);
PetscErrorCode MAXPYScale(PetscInt, PetscInt, const PetscScalar *, const PetscScalar *const *, PetscScalar *, PetscScalar, const PetscScalar *, PetscScalar *);
PetscErrorCode SGMRESUpdate(PetscInt, PetscInt, const PetscScalar *, const PetscScalar *const *, PetscScalar *, PetscScalar, PetscScalar, const PetscScalar *, PetscScalar *, PetscScalar[1]);
PetscErrorCode Gather(PetscInt, const PetscInt *, const PetscScalar *, const PetscScalar *, PetscScalar *);
PetscErrorCode Scatter(PetscInt, const PetscInt *, const PetscScalar *, PetscScalar *);
PetscErrorCode SpMVOffDiagDots(const CSRView *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *, int, const DotSpec *, PetscScalar *);
PetscErrorCode MallocHost(size_t, void **);
PetscErrorCode FreeHost(void *);
PetscErrorCode CopyToHostAsync(void *, const void *, size_t);
PetscErrorCode CopyToBackendAsync(void *, const void *, size_t);
PetscErrorCode FenceRecord(void);
PetscErrorCode FenceWait(void);

/* How a range of n entries (or rows) is cut into thread blocks: the host backend's chunks */
struct Partition {
  int      nblocks = 0; /* number of non-empty chunks, <= FUSED_REDUCE_BLOCKS; 0 when n == 0 */
  PetscInt chunk   = 0; /* entries per chunk (the last one may be shorter)                    */
};

inline Partition PartitionRange(PetscInt n, PetscInt maxblocks = FUSED_REDUCE_BLOCKS)
{
  Partition part;
  if (n > 0) {
    const PetscInt64 nchunks = ReduceChunks(n, maxblocks);
    part.chunk               = (PetscInt)(((PetscInt64)n + nchunks - 1) / nchunks);
    part.nblocks             = (int)(((PetscInt64)n + part.chunk - 1) / part.chunk);
  }
  return part;
}

/* The half-open range [begin, end) of this thread block's chunk */
struct ChunkRange {
  PetscInt64 begin, end;
};

__device__ inline ChunkRange BlockChunk(PetscInt n, PetscInt chunk)
{
  const PetscInt64 begin = (PetscInt64)blockIdx.x * chunk;
  return {begin, begin + PetscMin((PetscInt64)chunk, (PetscInt64)n - begin)};
}

/* Reduces acc[d] over the thread block for d < count (count is the same in every thread) and
   writes the block's sum of dot d to partials[d * gridDim.x + blockIdx.x].                     */
template <int ND> __device__ inline void WriteBlockPartials(const PetscScalar (&acc)[ND], int count, PetscScalar *partials)
{
  using BlockReduce = cub::BlockReduce<PetscScalar, BLOCK_SIZE>;
  __shared__ typename BlockReduce::TempStorage temp;

#pragma unroll
  for (int d = 0; d < ND; ++d) {
    if (d < count) {
      const PetscScalar sum = BlockReduce(temp).Sum(acc[d]);
      if (threadIdx.x == 0) partials[(size_t)d * gridDim.x + blockIdx.x] = sum;
      __syncthreads(); /* temp is reused by the next reduction */
    }
  }
}

/* The dot products of one fused call, passed by value to the kernel */
struct DotList {
  int     count = 0;
  DotSpec spec[FUSED_MAX_DOTS];
};

/* The term entry i adds to the dot product `spec` (as in the host backend; in == NULL reads as 0) */
__device__ inline PetscScalar DotTerm(const DotSpec &spec, PetscInt64 i, const PetscScalar *in, PetscScalar out_i)
{
  switch (spec.kind) {
  case DotKind::DOT_INPUT:
    return in ? out_i * in[i] : 0;
  case DotKind::DOT_SELF:
    return out_i * out_i;
  case DotKind::DOT_SELF_W:
    return out_i * spec.vec[i] * out_i;
  case DotKind::DOT_VECTOR:
    return out_i * spec.vec[i];
  }
  return 0;
}

__device__ inline void AddDotTerms(const DotList &dots, PetscInt64 i, const PetscScalar *in, PetscScalar out_i, PetscScalar (&acc)[FUSED_MAX_DOTS])
{
#pragma unroll
  for (int d = 0; d < FUSED_MAX_DOTS; ++d)
    if (d < dots.count) acc[d] += DotTerm(dots.spec[d], i, in, out_i);
}

/* Checks the dot specifications and packs them for a kernel */
inline PetscErrorCode MakeDotList(int ndots, const DotSpec *specs, DotList *dots)
{
  PetscFunctionBegin;
  PetscCheck(ndots >= 0 && ndots <= FUSED_MAX_DOTS, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "At most %d fused dot products, asked for %d", FUSED_MAX_DOTS, ndots);
  dots->count = ndots;
  for (int d = 0; d < ndots; ++d) {
    const bool needs_vec = specs[d].kind == DotKind::DOT_SELF_W || specs[d].kind == DotKind::DOT_VECTOR;
    PetscCheck(!needs_vec || specs[d].vec, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "Dot product %d needs a vector (DOT_SELF_W or DOT_VECTOR) but DotSpec.vec is NULL", d);
    dots->spec[d] = specs[d];
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace cuda
} // namespace fusedksp
