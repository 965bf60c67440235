/*
   CUDA backend: recorded chunks of iterations (CUDA graphs).

   A solver records the operations of a chunk of iterations once (stream capture) and replays the
   instantiated graph for every later chunk.  The record holds the kernels' arguments by value:
   device pointers, sizes and the slots of the device-resident scalars, never a host-computed
   coefficient.  It also holds the reduction buffers of cuda_memory.cu; when one of them moves,
   GraphLaunch() refuses to replay and the solver records again.  A new record of the same shape
   updates the instantiated graph in place (cudaGraphExecUpdate) instead of instantiating anew, unless
   either holds a persistent kernel, whose launch attributes (cooperative, cluster shape) an update
   need not carry over.
*/
#include "backend/cuda/cuda_common.cuh"
#include <vector>

namespace fusedksp
{
namespace cuda
{

/* An instantiated record, with what it counts when replayed */
struct Graph {
  cudaGraphExec_t     exec       = nullptr;
  unsigned long long  generation = 0;     /* buffers_generation when recorded */
  bool                persistent = false; /* it holds a persistent kernel (cooperative or cluster launch) */
  PetscInt64          launches = 0, d2h = 0, h2d = 0;
  std::vector<size_t> to_host, to_backend; /* bytes of the copies it holds, logged at each replay */
};

static BackendCounters at_begin;                      /* the counters when the recording began */
static bool            recorded_persistent = false;   /* the recording holds a persistent kernel */
static cudaStream_t    capture_stream      = nullptr; /* the stream recorded (a side scope's, when it began in one) */

/*
   NotePersistentLaunch - see cuda_common.cuh
*/
void NotePersistentLaunch(void)
{
  if (recording) recorded_persistent = true;
}
static std::vector<size_t> recorded_to_host, recorded_to_backend; /* copies of the recording           */

/*
   LogTransfer - see cuda_common.cuh
*/
PetscErrorCode LogTransfer(bool to_host, size_t bytes)
{
  PetscFunctionBegin;
  if (to_host)
    counters.d2h++;
  else
    counters.h2d++;
  if (recording)
    FusedKSPCallCXX((to_host ? recorded_to_host : recorded_to_backend).push_back(bytes));
  else if (to_host)
    PetscCall(PetscLogGpuToCpu((PetscLogDouble)bytes));
  else
    PetscCall(PetscLogCpuToGpu((PetscLogDouble)bytes));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   LogResultsToHost - see cuda_common.cuh
*/
PetscErrorCode LogResultsToHost(size_t bytes)
{
  PetscFunctionBegin;
  if (recording)
    PetscCall(LogTransfer(true, bytes));
  else {
    counters.d2h++;
    PetscCall(PetscLogGpuToCpuScalar((PetscLogDouble)bytes));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   RecordOnSideStream - see cuda_common.cuh
*/
PetscErrorCode RecordOnSideStream(cudaError_t (*launch)(cudaStream_t, const void *), const void *ctx, cudaGraphExec_t *exec)
{
  cudaStream_t side   = nullptr;
  cudaGraph_t  record = nullptr;
  cudaError_t  err;

  PetscFunctionBegin;
  *exec = nullptr;
  FusedKSPCallCUDA(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
  err = cudaStreamBeginCapture(side, cudaStreamCaptureModeThreadLocal);
  if (err == cudaSuccess) {
    const cudaError_t launched = launch(side, ctx);
    const cudaError_t end      = cudaStreamEndCapture(side, &record);

    err = launched != cudaSuccess ? launched : end;
  }
  if (err == cudaSuccess) err = cudaGraphInstantiate(exec, record, 0);
  if (record) (void)cudaGraphDestroy(record);
  (void)cudaStreamDestroy(side);
  FusedKSPCallCUDA(err);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   GraphBegin - Backend::graph_begin: starts recording the operations queued on the current stream (side scopes
   opened while recording keep it, so the record holds one stream)
*/
PetscErrorCode GraphBegin(PetscBool *capturing)
{
  cudaStream_t stream;

  PetscFunctionBegin;
  PetscCheck(!recording, PETSC_COMM_SELF, PETSC_ERR_ORDER, "A graph is already being recorded");
  PetscCall(GetStream(&stream));
  FusedKSPCallCUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed));
  recording      = true;
  capture_stream = stream;
  at_begin       = counters;
  recorded_to_host.clear();
  recorded_to_backend.clear();
  recorded_persistent = false;
  *capturing          = PETSC_TRUE;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   GraphEnd - Backend::graph_end: stops recording; *graph is updated in place when it has the
   shape of the new record, else (re)instantiated.  What the record counted is taken back from the
   counters (nothing ran) and added at each replay instead.
*/
PetscErrorCode GraphEnd(void **graph)
{
  cudaGraph_t record = nullptr;
  Graph      *g      = static_cast<Graph *>(*graph);

  PetscFunctionBegin;
  PetscCheck(recording, PETSC_COMM_SELF, PETSC_ERR_ORDER, "No graph is being recorded");
  if (!g) { /* a failure leaves the capture to graph_abort() */
    FusedKSPCallCXX(g = new Graph);
    *graph = g;
  }
  recording = false;
  FusedKSPCallCUDA(cudaStreamEndCapture(capture_stream, &record));
  if (g->exec && (g->persistent || recorded_persistent)) { /* an update may keep the old launch attributes (cooperative, cluster shape): instantiate anew */
    FusedKSPCallCUDA(cudaGraphExecDestroy(g->exec));
    g->exec = nullptr;
  }
  if (g->exec) {
    cudaGraphExecUpdateResultInfo info;
    if (cudaGraphExecUpdate(g->exec, record, &info) != cudaSuccess) {
      (void)cudaGetLastError();
      FusedKSPCallCUDA(cudaGraphExecDestroy(g->exec));
      g->exec = nullptr;
    }
  }
  if (!g->exec) {
    const cudaError_t err = cudaGraphInstantiate(&g->exec, record, 0);
    if (err != cudaSuccess) {
      (void)cudaGraphDestroy(record);
      delete g;
      *graph = nullptr;
      FusedKSPCallCUDA(err);
    }
  }
  FusedKSPCallCUDA(cudaGraphDestroy(record));
  g->generation = buffers_generation;
  g->persistent = recorded_persistent;
  FusedKSPCallCXX(g->to_host = recorded_to_host; g->to_backend = recorded_to_backend);
  g->launches       = counters.launches - at_begin.launches;
  g->d2h            = counters.d2h - at_begin.d2h;
  g->h2d            = counters.h2d - at_begin.h2d;
  counters.launches = at_begin.launches;
  counters.d2h      = at_begin.d2h;
  counters.h2d      = at_begin.h2d;
  *graph            = g;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   GraphAbort - Backend::graph_abort: after an error while recording, ends the capture and drops it
   (the stream can be used again)
*/
PetscErrorCode GraphAbort(void)
{
  cudaGraph_t record = nullptr;

  PetscFunctionBegin;
  if (!recording) PetscFunctionReturn(PETSC_SUCCESS);
  recording = false;
  if (cudaStreamEndCapture(capture_stream, &record) != cudaSuccess) (void)cudaGetLastError();
  if (record) (void)cudaGraphDestroy(record);
  counters.launches = at_begin.launches;
  counters.d2h      = at_begin.d2h;
  counters.h2d      = at_begin.h2d;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   GraphLaunch - Backend::graph_launch: replays the record on the current stream, unless a reduction buffer
   it uses has moved since it was recorded (*launched = PETSC_FALSE: record again)
*/
PetscErrorCode GraphLaunch(void *graph, PetscBool *launched)
{
  Graph       *g = static_cast<Graph *>(graph);
  cudaStream_t stream;

  PetscFunctionBegin;
  *launched = PETSC_FALSE;
  if (!g || !g->exec || g->generation != buffers_generation) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(GetStream(&stream));
  FusedKSPCallCUDA(cudaGraphLaunch(g->exec, stream));
  counters.graphs++;
  counters.launches += g->launches;
  counters.d2h += g->d2h;
  counters.h2d += g->h2d;
  for (size_t bytes : g->to_host) PetscCall(PetscLogGpuToCpu((PetscLogDouble)bytes));
  for (size_t bytes : g->to_backend) PetscCall(PetscLogCpuToGpu((PetscLogDouble)bytes));
  *launched = PETSC_TRUE;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   GraphDestroy - Backend::graph_destroy: waits for both streams (a replay may be running on either) and
   frees the record; NULL is allowed
*/
PetscErrorCode GraphDestroy(void **graph)
{
  Graph *g = static_cast<Graph *>(*graph);

  PetscFunctionBegin;
  if (!g) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(SynchronizeStreams());
  if (g->exec) FusedKSPCallCUDA(cudaGraphExecDestroy(g->exec));
  delete g;
  *graph = nullptr;
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace cuda
} // namespace fusedksp
