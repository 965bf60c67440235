/*
   CUDA backend: what the kernel families share.

   Reduction scheme (the contract's, see backend/backend.hpp): the index range [0, n) is cut into
   ReduceChunks(n) contiguous chunks, as the host backend cuts it (chunk = ceil(n / nchunks)); thread
   block b of a fused kernel owns chunk b, its threads stride through the chunk, and the block
   writes ONE partial sum per dot product (cub::BlockReduce) to partials[d * nblocks + b].  The
   second stage runs on the device too: the last block of the grid to finish (an atomic ticket,
   after a memory fence) adds the partials of each dot product and writes the sum to a result slot.
   The host then copies only the results (ndots values) with ONE cudaMemcpyAsync into a pinned
   buffer and waits for the stream once; inside a batch (BatchBegin/BatchDefer/BatchEnd) the results
   of several kernels are copied together.  The summation order differs from the host backend's
   (thread-level split inside a block, tree sum of the partials), so the backends agree to rounding.
   No extra kernel is launched for the second stage, and the partial-sum buffer is reused by every
   kernel of a stream (kernels of one stream run one after the other).

   Every kernel and copy goes to the stream GetStream() returns: the backend's non-blocking stream,
   or inside a side scope (Backend::side_begin) a second one, both created on first use, each with
   its own partial-sum buffer and tickets (the kernels of the two streams may run at the same time);
   streams and buffers are released by PetscFinalize().
*/
#pragma once

#include <initializer_list>

#include <petscsys.h>
#include "backend/backend.hpp"
#include <cuda_runtime.h>
#include <cub/block/block_reduce.cuh>

/* Turns a cudaError_t into a PETSc error (PETSC_ERR_MEM for an allocation, else PETSC_ERR_LIB) after
   clearing the error, so that the next check does not report it again; a sticky error (a kernel
   fault: every later CUDA call fails) is said to be one                                          */
#define FusedKSPCallCUDA(...)                                                                                                                                                                                                                            \
  do {                                                                                                                                                                                                                                                   \
    const cudaError_t fusedksp_cuda_err_ = (__VA_ARGS__);                                                                                                                                                                                                \
    if (PetscUnlikely(fusedksp_cuda_err_ != cudaSuccess)) {                                                                                                                                                                                              \
      const bool fusedksp_cuda_sticky_ = ::fusedksp::cuda::ClearLastError();                                                                                                                                                                             \
      SETERRQ(PETSC_COMM_SELF, fusedksp_cuda_err_ == cudaErrorMemoryAllocation ? PETSC_ERR_MEM : PETSC_ERR_LIB, "CUDA error %d (%s): %s%s", (int)fusedksp_cuda_err_, cudaGetErrorName(fusedksp_cuda_err_), cudaGetErrorString(fusedksp_cuda_err_),       \
              fusedksp_cuda_sticky_ ? " (a sticky error: the CUDA context is unusable until the process ends)" : "");                                                                                                                                    \
    }                                                                                                                                                                                                                                                    \
  } while (0)

/* Checks the launch that precedes it (configuration errors; faults show up at the next wait) */
#define FusedKSPCheckLaunch() FusedKSPCallCUDA(cudaGetLastError())

namespace fusedksp
{
namespace cuda
{

/* Resets the CUDA error state after a failed call; true when the error is sticky (it stays) */
inline bool ClearLastError()
{
  (void)cudaGetLastError();
  return cudaPeekAtLastError() != cudaSuccess;
}

extern BackendCounters counters;

/* The stream work goes to: the backend's stream, or the second one inside a side scope of side 1 (both created on
   first use) */
PetscErrorCode GetStream(cudaStream_t *stream);
/* Blocks the host until the work queued on both streams is complete */
PetscErrorCode SynchronizeStreams(void);
/* The work queued on `to` from now on waits for the work queued on `from` so far (an event; no host wait) */
PetscErrorCode StreamWaitStream(cudaStream_t to, cudaStream_t from);

/* Where the reductions of one kernel launch go (passed to the kernel by value) */
struct Reduction {
  PetscScalar    *partials = nullptr; /* first stage: partials[d * gridDim.x + b]                      */
  PetscScalar    *result   = nullptr; /* second stage: result[d], written by the grid's last block    */
  unsigned int   *tickets  = nullptr; /* blocks finished, one counter per grid row (blockIdx.y), reset */
  const PetscInt *stop     = nullptr; /* reduce_target's stop flag: the kernel does nothing if *stop >= 0 */
  bool            add      = false;   /* second stage: result[d] += the sum (spmv_offdiag_dots into a reduce target) */
};

/* At the start of a kernel that honours reduce_target's stop flag: the whole grid returns when set */
__device__ inline bool Stopped(const Reduction &red)
{
  return red.stop && *red.stop >= 0;
}

/* Most grid rows (blockIdx.y) of a reducing kernel: ticket counters available */
constexpr int MAX_GRID_ROWS = 64;

/* The reduction target of a launch of nblocks x nrows blocks computing ndots dot products: the
   reused partial-sum buffer (grown on demand, never while a graph is recorded) and the next ndots
   result slots, or the slot and stop flag of reduce_target when one is set                   */
PetscErrorCode GetReduction(int ndots, int nblocks, Reduction *red);

/* The reused partial-sum buffer alone, at least count entries (for kernels that reduce by themselves) */
PetscErrorCode GetPartials(size_t count, PetscScalar **partials);

/* The host's side of the second stage: copies the ndots results of the launch that used the last
   GetReduction() to the pinned host buffer (one copy, one wait) into dots[].  With nblocks == 0
   (empty range, nothing launched) the dots are 0 and nothing is copied.  add: dots[] += results.  Inside a deferring batch
   (BatchBegin/BatchDefer) it only records the request; BatchEnd completes all of them.       */
PetscErrorCode FinishReduction(int ndots, int nblocks, PetscScalar *dots, bool add = false);
PetscErrorCode ReduceTargetSet(PetscScalar *, const PetscInt *);
bool           ReduceTargetIsSet(void);
PetscErrorCode BatchBegin(void);
PetscErrorCode BatchDefer(PetscBool);
PetscErrorCode BatchEnd(void);

/* Records the kernels that launch(stream) queues on a stream of its own (the backend's stream may be in use or
   recorded) as one graph, instantiated in *exec; launch returns the first launch error (cudaSuccess if none) */
PetscErrorCode RecordOnSideStream(cudaError_t (*launch)(cudaStream_t, const void *), const void *ctx, cudaGraphExec_t *exec);

/* The sum of each group of LANES consecutive lanes of a warp (LANES a power of two <= 32: the LANES threads
   of a matrix row, or the whole warp) in the group's first lane; every lane of the warp must call it */
template <int LANES = 32> __device__ inline PetscScalar LaneSum(PetscScalar v)
{
#pragma unroll
  for (int offset = LANES / 2; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset, LANES);
  return v;
}

/* A level schedule (trsv_levels.cxx) on the device: the rows of a level depend only on rows of earlier levels,
   so each level is one kernel; 2 to GRAPH_MAX_LEVELS levels are recorded once as a graph (LevelScheduleCreate()) */
struct LevelSchedule {
  PetscInt        nlevels  = 0;
  PetscInt       *levelptr = nullptr; /* host, nlevels + 1 */
  PetscInt       *rows     = nullptr; /* device, n: the rows level by level */
  cudaGraphExec_t graph    = nullptr; /* the level kernels, when recorded */

  /* launch(count, rows) queues the kernel of each level's rows, in order; the first launch error */
  template <class Launch> cudaError_t ForEachLevel(Launch launch) const
  {
    for (PetscInt l = 0; l < nlevels; ++l) {
      launch(levelptr[l + 1] - levelptr[l], rows + levelptr[l]);
      const cudaError_t err = cudaGetLastError();
      if (err != cudaSuccess) return err;
    }
    return cudaSuccess;
  }
};

/* The schedule of n rows (copied to s); when it has 2 to GRAPH_MAX_LEVELS levels, the kernels that
   record(stream, ctx) queues are recorded as its graph (after s is filled: ctx may read it) */
PetscErrorCode LevelScheduleCreate(PetscInt n, PetscInt nlevels, const PetscInt *levelptr, const PetscInt *rows, cudaError_t (*record)(cudaStream_t, const void *), const void *ctx, LevelSchedule *s);
PetscErrorCode LevelScheduleDestroy(LevelSchedule *s);

/* free_bytes of each of the backend's buffers (NULL ones allowed) */
PetscErrorCode FreeBuffers(std::initializer_list<void *> buffers);

/* Frees the schedule of a view (an S, or NULL) with what it holds (S::Release()); *schedule = NULL */
template <class S> PetscErrorCode FreeSchedule(void **schedule)
{
  PetscFunctionBegin;
  if (*schedule) PetscCall(((S *)*schedule)->Release());
  PetscCall(PetscFree(*schedule));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The backend's operations (see Backend in backend/backend.hpp), one kernel family per file */
#include "backend/backend_functions.hpp" /* the contract's kernel families in this namespace */
PetscErrorCode ILU0Analysis(ILU0View *, PetscInt, const PetscInt *, const PetscInt *);
PetscErrorCode ILU0Numeric(const ILU0View *, const TriangularView *, const TriangularView *, PetscInt *, PetscReal *);
PetscErrorCode ILU0Free(ILU0View *);
PetscErrorCode SpGEMMSymbolic(SpGEMMView *);
PetscErrorCode SpGEMMNumeric(SpGEMMView *);
PetscErrorCode SpGEMMFree(SpGEMMView *);
PetscErrorCode CSRTranspose(const CSRView *, PetscInt *, PetscInt *, PetscScalar *);
PetscErrorCode NCCLCommCreate(MPI_Comm, void **, const char **);
PetscErrorCode NCCLCommDestroy(void **);
PetscErrorCode NCCLAllreduce(void *, PetscScalar *, PetscInt);
PetscErrorCode NCCLExchange(void *, const HaloPlan *);
PetscErrorCode MallocHost(size_t, void **);
PetscErrorCode FreeHost(void *);
PetscErrorCode FenceRecord(void);
PetscErrorCode WaitForeign(void *foreign);
PetscErrorCode ForeignWait(void *foreign);
PetscErrorCode SideBegin(int);
PetscErrorCode SideEnd(void);
PetscErrorCode SidesJoin(void);
PetscErrorCode GraphBegin(PetscBool *);
PetscErrorCode GraphEnd(void **);
PetscErrorCode GraphAbort(void);
PetscErrorCode GraphLaunch(void *, PetscBool *);
PetscErrorCode GraphDestroy(void **);

/* Counts a copy of `bytes` in the backend's counters and in PETSc's transfer log (the CpuToGpu and
   GpuToCpu columns of -log_view); a copy recorded into a graph is logged at each replay instead    */
PetscErrorCode LogTransfer(bool to_host, size_t bytes);
/* A copy on the backend's stream: complete on return when sync, else queued (cuda_memory.cu) */
PetscErrorCode CopyOnStream(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind, bool sync);
/* The same for a copy of reduction results (a few scalars) to the host: logged as PETSc logs its own reductions' results
   (PetscLogGpuToCpuScalar(), not a vector copy), so that PETSc's count of vector copies is that of the vectors       */
PetscErrorCode LogResultsToHost(size_t bytes);

/* Called by every persistent (cooperative or cluster) launch: a record holding one is never updated in
   place (cuda_graph.cu)                                                                            */
void NotePersistentLaunch(void);

/* Graph recording state shared by the buffers (cuda_memory.cu) and the graphs (cuda_graph.cu) */
extern bool               recording;          /* a graph is being recorded on the stream        */
extern unsigned long long buffers_generation; /* changes whenever a reduction buffer moves     */

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

/* The blocks of `kernel` (BLOCK_SIZE threads, smem_bytes of dynamic shared memory) the device holds
   at once: one wave                                                                                */
PetscErrorCode DeviceBlocks(const void *kernel, size_t smem_bytes, int *nblocks);

/* DeviceBlocks() of `kernel` without dynamic shared memory, at most FUSED_REDUCE_BLOCKS, remembered
   per kernel.  A kernel whose blocks each take one chunk of the rows launches at most this many:
   at large n its blocks wait on memory latency, so a last, partial wave takes about as long as a
   full one.                                                                                       */
PetscErrorCode WaveBlocks(const void *kernel, PetscInt *nblocks);

/* PartitionRange(n) on at most WaveBlocks(kernel) blocks */
inline PetscErrorCode PartitionWave(const void *kernel, PetscInt n, Partition *part)
{
  PetscInt nblocks = 0;

  PetscFunctionBegin;
  if (n > 0) PetscCall(WaveBlocks(kernel, &nblocks));
  *part = PartitionRange(n, nblocks);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* One launch of a reducing kernel of the fused operations, kernel(n, chunk, args..., red), on the grid of
   PartitionWave() on the backend's stream, then FinishReduction() of its ndots sums into dots (NULL:
   the reduce target).  A chained kernel (`always`) runs for n == 0 too (one block writing zero sums);
   otherwise nothing runs when n == 0 and the sums are 0.                                              */
template <class... KernelArgs, class... Args> PetscErrorCode LaunchReducing(void (*kernel)(PetscInt, PetscInt, KernelArgs...), PetscInt n, bool always, int ndots, PetscScalar *dots, const Args &...args)
{
  Partition    part;
  cudaStream_t stream;
  Reduction    red;

  PetscFunctionBegin;
  PetscCheck(n >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Negative length %" PetscInt_FMT, n);
  PetscCall(PartitionWave((const void *)kernel, always ? PetscMax(n, 1) : n, &part));
  if (part.nblocks) {
    PetscCall(GetStream(&stream));
    PetscCall(GetReduction(ndots, part.nblocks, &red));
    kernel<<<part.nblocks, BLOCK_SIZE, 0, stream>>>(n, part.chunk, args..., red);
    FusedKSPCheckLaunch();
    counters.launches++;
  }
  PetscCall(FinishReduction(ndots, part.nblocks, dots));
  PetscFunctionReturn(PETSC_SUCCESS);
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

/* The block's next chunk when the chunks of `chunk` entries are dealt to the blocks in turn (chunk c
   to block c mod gridDim.x): loop with range = BlockChunk(n, chunk) while range.begin < n.  Dealt
   out in short chunks, the rows the grid works on at any moment are one band of the matrix, so a
   sparse product finds the entries its rows gather from the rows nearby still in L2 instead of
   reading them again from DRAM.  The persistent CG kernel keeps contiguous chunks: dealt in chunks
   of BLOCK_SIZE rows it was slower at large n (not explained).                                    */
__device__ inline ChunkRange NextChunk(const ChunkRange &range, PetscInt n, PetscInt chunk)
{
  const PetscInt64 begin = range.begin + (PetscInt64)gridDim.x * chunk;
  return {begin, begin + PetscMin((PetscInt64)chunk, (PetscInt64)n - begin)};
}

/* The operations a reduction can combine with (identity and associative op) */
struct SumOp {
  static constexpr PetscScalar identity = 0;
  __device__ PetscScalar       operator()(PetscScalar a, PetscScalar b) const
  {
    return a + b;
  }
};
struct MaxNaNOp { /* max of non-negative values that propagates NaN */
  static constexpr PetscScalar identity = 0;
  __device__ PetscScalar       operator()(PetscScalar a, PetscScalar b) const
  {
    return (b > a || b != b) ? b : a;
  }
};

/*
   ReduceBlocks - both stages of the reductions of one kernel: reduces acc[d] over the thread block
   for d < count (count is the same in every thread of the grid) into
   red.partials[(first + d) * gridDim.x + blockIdx.x]; the last block of this grid row to finish
   then combines the gridDim.x partials of each dot product and writes red.result[first + d].  A
   grid of one block (per row) writes its sums to red.result directly.
   Every thread of the block must call it, once, at the end of the kernel.
*/
template <class Op = SumOp, int ND> __device__ inline void ReduceBlocks(const PetscScalar (&acc)[ND], int count, const Reduction &red, int first = 0)
{
  using BlockReduce = cub::BlockReduce<PetscScalar, BLOCK_SIZE>;
  __shared__ typename BlockReduce::TempStorage temp;
  __shared__ bool                              last;
  const Op                                     op;
  const unsigned int                           nblocks = gridDim.x;

  if (count == 0) return;
#pragma unroll
  for (int d = 0; d < ND; ++d) {
    if (d < count) {
      const PetscScalar v = BlockReduce(temp).Reduce(acc[d], op);
      if (threadIdx.x == 0) {
        if (nblocks == 1)
          red.result[first + d] = red.add ? red.result[first + d] + v : v; /* one block: its sums are the results */
        else
          red.partials[(size_t)(first + d) * nblocks + blockIdx.x] = v;
      }
      __syncthreads(); /* temp is reused by the next reduction */
    }
  }
  if (nblocks == 1) return;
  if (threadIdx.x == 0) {
    __threadfence(); /* this block's partials are visible before its ticket is */
    last = atomicAdd(&red.tickets[blockIdx.y], 1u) == nblocks - 1;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  for (int d = 0; d < count; ++d) {
    const PetscScalar *part = red.partials + (size_t)(first + d) * nblocks;
    PetscScalar        v    = Op::identity;
    for (unsigned int b = threadIdx.x; b < nblocks; b += BLOCK_SIZE) v = op(v, __ldcg(part + b));
    v = BlockReduce(temp).Reduce(v, op);
    if (threadIdx.x == 0) red.result[first + d] = red.add ? red.result[first + d] + v : v;
    __syncthreads();
  }
  if (threadIdx.x == 0) red.tickets[blockIdx.y] = 0; /* ready for the next launch */
}

/* The dot products of one fused call, passed by value to the kernel */
struct DotList {
  int     count = 0;
  DotSpec spec[FUSED_MAX_DOTS];
};

__device__ inline void AddDotTerms(const DotList &dots, PetscInt64 i, const PetscScalar *in, PetscScalar out_i, PetscScalar (&acc)[FUSED_MAX_DOTS])
{
#pragma unroll
  for (int d = 0; d < FUSED_MAX_DOTS; ++d)
    if (d < dots.count) acc[d] += DotTerm(dots.spec[d], i, in, out_i);
}

/* Checks the dot specifications of a range of n entries and packs them for a kernel (the vector
   of a dot product may be NULL when n == 0: an empty array, as on a rank that owns no rows)      */
inline PetscErrorCode MakeDotList(PetscInt n, int ndots, const DotSpec *specs, DotList *dots)
{
  PetscFunctionBegin;
  PetscCheck(ndots >= 0 && ndots <= FUSED_MAX_DOTS, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "At most %d fused dot products, asked for %d", FUSED_MAX_DOTS, ndots);
  dots->count = ndots;
  for (int d = 0; d < ndots; ++d) {
    const bool needs_vec = specs[d].kind == DotKind::DOT_SELF_W || specs[d].kind == DotKind::DOT_VECTOR || specs[d].kind == DotKind::DOT_VECTOR_W;
    PetscCheck(!needs_vec || specs[d].vec || n == 0, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "Dot product %d needs a vector (DOT_SELF_W, DOT_VECTOR or DOT_VECTOR_W) but DotSpec.vec is NULL", d);
    PetscCheck(specs[d].kind != DotKind::DOT_VECTOR_W || specs[d].weight || n == 0, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "Dot product %d (DOT_VECTOR_W) needs a weight but DotSpec.weight is NULL", d);
    dots->spec[d] = specs[d];
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace cuda
} // namespace fusedksp
