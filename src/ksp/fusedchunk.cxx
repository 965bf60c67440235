/* Chunks of iterations with device-resident scalars: see fusedchunk.hpp */
#include "ksp/fusedchunk.hpp"
#include "sys/tuning.hpp"
#include <algorithm>
#include <cstring>

namespace fusedksp
{

/* Bytes before slot 0: the control block, rounded up to whole scalars */
static size_t ControlBytes()
{
  return ((sizeof(ChunkControl) + sizeof(PetscScalar) - 1) / sizeof(PetscScalar)) * sizeof(PetscScalar);
}

ChunkControl *ChunkDeviceControl(Chunker *c)
{
  return static_cast<ChunkControl *>(c->buf.device);
}

PetscScalar *ChunkDeviceSlot(Chunker *c, PetscInt j)
{
  return reinterpret_cast<PetscScalar *>(static_cast<char *>(c->buf.device) + ControlBytes()) + j * c->ndots;
}

ChunkControl *ChunkHostControl(Chunker *c)
{
  return static_cast<ChunkControl *>(c->buf.host);
}

PetscScalar *ChunkHostSlot(Chunker *c, PetscInt j)
{
  return reinterpret_cast<PetscScalar *>(static_cast<char *>(c->buf.host) + ControlBytes()) + j * c->ndots;
}

PetscErrorCode KSPFusedChunkSetFromOptions(PetscOptionItems PetscOptionsObject, Chunker *c)
{
  PetscFunctionBegin;
  PetscCall(PetscOptionsInt("-ksp_fused_check_interval", "Iterations between host checks of the residual (k > 1: device-resident scalars; default: a rule from the backend and the problem)", "KSPFusedSetCheckInterval", c->settings.interval,
                            &c->settings.interval, NULL));
  PetscCall(PetscOptionsBool("-ksp_fused_graph", "Record a chunk of k iterations as a graph and replay it (CUDA backend)", "KSPFusedSetUseGraph", c->settings.graph, &c->settings.graph, NULL));
  PetscCall(PetscOptionsBool("-ksp_fused_persistent", "Let the backend run a whole chunk of k iterations as one persistent kernel (CUDA backend; fusedcg, fusedbcgs and fusedsgmres with PCNONE or PCJACOBI)", "KSPFusedSetUsePersistent",
                             c->settings.persistent, &c->settings.persistent, NULL));
  {
    const char *const reductions[] = {"mpi", "nccl"};
    PetscCall(PetscOptionsEList("-fused_reduction",
                                "How the global sums of several processes travel on a GPU: mpi (a host MPI_Allreduce per iteration, k = 1) or nccl (NCCL on the GPU's stream, chunks of k iterations; -fused_nccl_library names libnccl.so.2)",
                                "KSPFusedSetCheckInterval", reductions, 2, reductions[c->settings.reduction], &c->settings.reduction, NULL));
  }
  PetscCheck(c->settings.interval == PETSC_DETERMINE || c->settings.interval == PETSC_DECIDE || c->settings.interval >= 1, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "-ksp_fused_check_interval must be at least 1, not %" PetscInt_FMT,
             c->settings.interval);
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode GetChunker(KSP ksp, Chunker **c)
{
  PetscFunctionBegin;
  PetscCall(KSPFusedQueryPointer(ksp, "FusedKSPChunker", "No chunk settings on this KSP", (void **)c));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode KSPFusedSetCheckInterval_Fused(KSP ksp, PetscInt k)
{
  Chunker *c;

  PetscFunctionBegin;
  PetscCheck(k == PETSC_DETERMINE || k == PETSC_DECIDE || k >= 1, PetscObjectComm((PetscObject)ksp), PETSC_ERR_ARG_OUTOFRANGE, "The check interval must be at least 1 (or PETSC_DETERMINE), not %" PetscInt_FMT, k);
  PetscCall(GetChunker(ksp, &c));
  c->settings.interval = k == PETSC_DECIDE ? PETSC_DETERMINE : k;
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode KSPFusedGetCheckInterval_Fused(KSP ksp, PetscInt *k)
{
  Chunker *c;

  PetscFunctionBegin;
  PetscCall(GetChunker(ksp, &c));
  *k = c->k;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* KSPFusedSetUseGraph() and KSPFusedSetUsePersistent(): the chunk setting `Flag` */
template <PetscBool ChunkSettings::*Flag> static PetscErrorCode KSPFusedSetChunkFlag_Fused(KSP ksp, PetscBool flg)
{
  Chunker *c;

  PetscFunctionBegin;
  PetscCall(GetChunker(ksp, &c));
  c->settings.*Flag = flg;
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode KSPFusedGetChunkCounts_Fused(KSP ksp, PetscInt *chunks, PetscInt *records, PetscInt *replays)
{
  Chunker *c;

  PetscFunctionBegin;
  PetscCall(GetChunker(ksp, &c));
  if (chunks) *chunks = c->chunks;
  if (records) *records = c->records;
  if (replays) *replays = c->replays;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The methods composed with the Chunker (each finds it with GetChunker()) */
static const KSPFusedMethod ChunkMethods[] = {
    {"KSPFusedSetCheckInterval_C", (PetscErrorCodeFn *)KSPFusedSetCheckInterval_Fused},
    {"KSPFusedGetCheckInterval_C", (PetscErrorCodeFn *)KSPFusedGetCheckInterval_Fused},
    {"KSPFusedSetUseGraph_C", (PetscErrorCodeFn *)KSPFusedSetChunkFlag_Fused<&ChunkSettings::graph>},
    {"KSPFusedSetUsePersistent_C", (PetscErrorCodeFn *)KSPFusedSetChunkFlag_Fused<&ChunkSettings::persistent>},
    {"KSPFusedGetChunkCounts_C", (PetscErrorCodeFn *)KSPFusedGetChunkCounts_Fused},
};

PetscErrorCode KSPFusedChunkRegister(KSP ksp, Chunker *c)
{
  PetscFunctionBegin;
  PetscCall(KSPFusedComposePointer(ksp, "FusedKSPChunker", c));
  PetscCall(KSPFusedComposeMethods(ksp, PETSC_STATIC_ARRAY_LENGTH(ChunkMethods), ChunkMethods, PETSC_TRUE));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Forgets the records of chunks (they hold the old buffer or operands) */
static PetscErrorCode ChunkRecordsClear(Chunker *c)
{
  PetscFunctionBegin;
  for (auto &rec : c->records_made) PetscCall(OpsGraphDestroy(&rec.graph));
  c->records_made.clear();
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPFusedChunkDestroy(KSP ksp, Chunker *c)
{
  PetscFunctionBegin;
  PetscCall(ChunkRecordsClear(c));
  PetscCall(OpsBackendBufferDestroy(&c->buf));
  PetscCall(KSPFusedComposePointer(ksp, "FusedKSPChunker", NULL));
  PetscCall(KSPFusedComposeMethods(ksp, PETSC_STATIC_ARRAY_LENGTH(ChunkMethods), ChunkMethods, PETSC_FALSE));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Records a Chunker keeps: a solve's first chunk (which may compute the start) and the chunks after it */
constexpr size_t CHUNK_RECORDS = 2;

PetscErrorCode KSPFusedChunkOperands(Chunker *c, Mat A, std::initializer_list<Vec> vecs, const char **unsupported)
{
  PetscFunctionBegin;
  PetscCall(OpsChunkSupported(A, vecs, c->settings.reduction == 1 ? PETSC_TRUE : PETSC_FALSE, &c->parallel, unsupported));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPFusedChunkInterval(KSP ksp, Chunker *c, const char *unsupported)
{
  PetscInt N;

  PetscFunctionBegin;
  PetscCall(VecGetSize(ksp->vec_sol, &N));
  c->chunks = c->replays = c->records = 0;
  if (unsupported) {
    c->k   = 1;
    c->why = unsupported;
  } else if (c->settings.interval >= 1) {
    c->k   = c->settings.interval;
    c->why = "set with -ksp_fused_check_interval";
  } else if (ActiveBackend()->host_memory) {
    c->k   = 1;
    c->why = "default on a backend in host memory (host, kokkos on CPU threads): no round trip to save";
  } else if (!std::strcmp(ActiveBackend()->name, "kokkos")) {
    c->k   = 1;
    c->why = "default on the kokkos backend on a GPU: its chunks compute their coefficients on the host, a round trip per operation";
  } else if (c->pcapply) {
    c->k   = 1;
    c->why = "default with a general PC: its PCApply() runs in every iteration of a chunk, those past the end of the solve too";
  } else if (ksp->converged != KSPConvergedDefault) {
    c->k   = 1;
    c->why = "default with a user convergence test: the device cannot apply it";
  } else if (N > tuning.chunk_large_rows) {
    c->k   = tuning.chunk_default_large;
    c->why = "default for large systems (above -fused_tune_chunk_large_rows)";
  } else if (c->whole && c->settings.persistent) {
    c->k   = tuning.chunk_default_whole;
    c->why = "default for whole chunks: a persistent kernel stops where the solve stops";
  } else {
    c->k   = tuning.chunk_default;
    c->why = "default";
  }
  if (c->k > 1 && c->parallel) { /* the backend's communicator for the chunks' sums and exchanges (collective) */
    Mat         A;
    void       *handle;
    const char *why;

    PetscCall(KSPGetOperators(ksp, &A, NULL));
    PetscCall(OpsChunkComm(A, PETSC_TRUE, &handle, &why));
    if (!handle) {
      c->k   = 1;
      c->why = why;
    }
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPFusedChunkReserve(Chunker *c, PetscInt ndots, PetscInt k)
{
  PetscFunctionBegin;
  if (ndots * (k + 1) > c->ndots * (c->capacity + 1) || ndots != c->ndots) {
    PetscCall(ChunkRecordsClear(c));
    PetscCall(OpsBackendBufferEnsure(ControlBytes() + (size_t)ndots * (k + 1) * sizeof(PetscScalar), &c->buf));
    c->ndots    = ndots;
    c->capacity = (PetscInt)((c->buf.bytes - ControlBytes()) / (ndots * sizeof(PetscScalar))) - 1;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The host copy of the control block for a chunk from iteration first_it (start: ChunkControl::start) */
static void ChunkControlFill(KSP ksp, Chunker *c, PetscInt first_it, PetscInt normdot, PetscInt start)
{
  ChunkControl *ctl = ChunkHostControl(c);

  /* KSPConvergedDefault() set ksp->ttol and ksp->rnorm0 at iteration 0 (a chunk that computes it: from its norm, ChunkStartLimits());
     other tests: only NaN/Inf and coefficient failures stop the kernels */
  ctl->start      = start;
  ctl->rtol       = ksp->rtol;
  ctl->abstol     = ksp->abstol;
  ctl->divtol     = ksp->divtol;
  ctl->ttol       = ksp->converged == KSPConvergedDefault && start != 1 ? ksp->ttol : -1;
  ctl->divlimit   = ksp->converged == KSPConvergedDefault && start != 1 ? ksp->divtol * ksp->rnorm0 : PETSC_INFINITY;
  ctl->normdot    = ksp->converged == KSPConvergedDefault ? normdot : -1;
  ctl->first_it   = first_it;
  ctl->min_it     = ksp->min_it;
  ctl->chknorm    = ksp->chknorm;
  ctl->stopped    = -1;
  ctl->stage      = 0;
  ctl->bnorm      = CHUNK_BNORM_NONE;
  ctl->mininitial = 0;
  ctl->bnormsq    = 0;
  ctl->ref_rz     = 0; /* set by the solver that uses them */
  ctl->ref_pq     = 0;
  if (start == 1 && ksp->converged == KSPConvergedDefault && !ksp->guess_zero && ksp->normtype != KSP_NORM_NONE) { /* KSPConvergedDefault() at iteration 0 with a nonzero guess */
    const KSPConvergedDefaultCtx *cctx = static_cast<const KSPConvergedDefaultCtx *>(ksp->cnvP);

    if (!cctx->initialrtol) ctl->bnorm = ksp->normtype == KSP_NORM_UNPRECONDITIONED || ksp->pc_side == PC_RIGHT ? CHUNK_BNORM_B : (ksp->normtype == KSP_NORM_PRECONDITIONED ? CHUNK_BNORM_MB : CHUNK_BNORM_BMB);
    ctl->mininitial = cctx->mininitialrtol ? 1 : 0;
  }
}

PetscErrorCode KSPFusedChunkStart(KSP ksp, Chunker *c, PetscInt first_it, PetscInt normdot, const PetscScalar *entering)
{
  PetscFunctionBegin;
  PetscCheck(entering || (first_it == 0 && KSPFusedChunkMayStart(ksp, c, PETSC_TRUE)), PETSC_COMM_SELF, PETSC_ERR_PLIB, "A chunk can compute the start of a solve only as its first chunk, with a test the backend applies");
  ChunkControlFill(ksp, c, first_it, normdot, entering ? 0 : 1);
  if (entering) std::memcpy(ChunkHostSlot(c, 0), entering, c->ndots * sizeof(PetscScalar));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPFusedChunkRestart(KSP ksp, Chunker *c, PetscInt first_it, PetscInt normdot)
{
  PetscFunctionBegin;
  PetscCheck(first_it > 0 && KSPFusedChunkMayStart(ksp, c, PETSC_TRUE), PETSC_COMM_SELF, PETSC_ERR_PLIB, "A chunk can compute a restart only after iteration 0, with a test the backend applies");
  ChunkControlFill(ksp, c, first_it, normdot, 2);
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscBool KSPFusedChunkMayStart(KSP ksp, Chunker *c, PetscBool guess)
{
  return (PetscBool)(c->k > 1 && (ksp->guess_zero || guess) && ksp->max_it >= 1 && (ksp->converged == KSPConvergedDefault || ksp->converged == KSPConvergedSkip));
}

/* The copy of the chunk's control and entering slot to the backend, the body of the chunk and the copy
   of its results to the host, as one callback (what a graph records: one launch per chunk)       */
struct ChunkBody {
  Chunker *c;
  PetscInt k;
  PetscErrorCode (*body)(void *);
  void *ctx;
};

static PetscErrorCode RunChunkBody(void *ctx)
{
  ChunkBody *b = static_cast<ChunkBody *>(ctx);

  PetscFunctionBegin;
  PetscCall(OpsBackendBufferToBackend(&b->c->buf, 0, ControlBytes() + b->c->ndots * sizeof(PetscScalar)));
  PetscCall(b->body(b->ctx));
  PetscCall(OpsBackendBufferToHost(&b->c->buf, 0, ControlBytes() + (size_t)b->c->ndots * (b->k + 1) * sizeof(PetscScalar)));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPFusedChunkRun(Chunker *c, PetscInt k, PetscBool graphsafe, const std::vector<const void *> &key, PetscErrorCode (*body)(void *), void *ctx)
{
  ChunkBody b        = {c, k, body, ctx};
  PetscBool launched = PETSC_FALSE;

  PetscFunctionBegin;
  PetscCheck(k >= 1 && k <= c->capacity, PETSC_COMM_SELF, PETSC_ERR_PLIB, "Chunk of %" PetscInt_FMT " iterations, the buffer holds %" PetscInt_FMT, k, c->capacity);
  c->chunks++;
  if (graphsafe && !c->nograph && c->settings.graph && k == c->k) {
    std::vector<const void *> full;
    FusedKSPCallCXX(full = key; full.push_back(c->buf.device));
    auto rec = std::find_if(c->records_made.begin(), c->records_made.end(), [&](const Chunker::Record &r) { return r.key == full; });
    if (rec == c->records_made.end()) {              /* new operands: run directly (the buffers get sized), record next time */
      if (c->records_made.size() == CHUNK_RECORDS) { /* forget the least recently used */
        PetscCall(OpsGraphDestroy(&c->records_made.front().graph));
        c->records_made.erase(c->records_made.begin());
      }
      FusedKSPCallCXX(c->records_made.push_back({full, nullptr}));
    } else {
      Chunker::Record *used;
      std::rotate(rec, rec + 1, c->records_made.end()); /* the most recently used last */
      used = &c->records_made.back();
      if (used->graph) {
        PetscCall(OpsGraphLaunch(used->graph, &launched));
        if (launched) c->replays++;
      } else { /* ran once directly with these operands: record */
        PetscBool recorded;
        PetscCall(OpsGraphRecord(RunChunkBody, &b, &used->graph, &recorded));
        if (recorded) {
          c->records++;
          PetscCall(OpsGraphLaunch(used->graph, &launched));
          PetscCheck(launched, PETSC_COMM_SELF, PETSC_ERR_PLIB, "A graph just recorded cannot be launched");
        }
      }
    }
  }
  if (!launched) PetscCall(RunChunkBody(&b));
  PetscCall(OpsWait());
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscInt ChunkPerformed(Chunker *c, PetscInt k)
{
  const PetscInt stopped = ChunkHostControl(c)->stopped;
  return stopped >= 0 && stopped < k ? stopped : k;
}

PetscErrorCode KSPFusedChunkStopped(KSP ksp, PetscInt it, PetscInt j, PetscInt performed)
{
  PetscFunctionBegin;
  if (j < performed) {
    PetscCall(PetscInfo(ksp, "The solve stopped at iteration %" PetscInt_FMT "; the chunk ran %" PetscInt_FMT " more iterations, which the solution includes\n", it + j, performed - j));
    ksp->its = it + performed;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPFusedChunkReplay(KSP ksp, Chunker *c, PetscInt k, PetscInt performed, PetscBool start, const ChunkReplayOps &ops, void *ctx, PetscScalar *entering, PetscInt *it, PetscBool *stopped)
{
  PetscInt  j;
  PetscBool restarted = PETSC_FALSE;

  PetscFunctionBegin;
  *stopped = PETSC_FALSE;
  if (start) {
    PetscCall(ops.start(ctx, ChunkHostSlot(c, 0), entering, stopped));
    if (*stopped && ops.ranpast) PetscCall(KSPFusedChunkStopped(ksp, *it, 0, performed));
    if (*stopped) PetscFunctionReturn(PETSC_SUCCESS);
  }
  for (j = 1; j <= k; ++j) {
    PetscReal rnorm;
    PetscBool stop;

    PetscCall(ops.iteration(ctx, j, *it + j, performed, ChunkHostSlot(c, j - 1), ChunkHostSlot(c, j), &rnorm, &stop));
    if (stop) break;
    PetscCall(KSPFusedMonitorAndTest(ksp, *it + j, rnorm));
    if (ksp->reason > 0 && ops.converged) PetscCall(ops.converged(ctx, *it + j, rnorm, entering, &restarted));
    if (ksp->reason || restarted) break;
  }
  if (restarted) {
    *it += j;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  if (ksp->reason) {
    *stopped = PETSC_TRUE;
    if (ops.ranpast) PetscCall(KSPFusedChunkStopped(ksp, *it, j, performed));
    *it += j;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(PetscArraycpy(entering, ChunkHostSlot(c, performed), c->ndots));
  *it += performed;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPFusedChunkSolve(KSP ksp, Chunker *c, PetscInt it, PetscBool start, const ChunkReplayOps &ops, void *ctx, PetscScalar *entering)
{
  PetscFunctionBegin;
  while (!ksp->reason) {
    const PetscInt k = PetscMin(c->k, ksp->max_it - it);
    PetscInt       performed;
    PetscBool      stopped;

    if (it >= ksp->max_it) {
      ksp->reason = KSP_DIVERGED_ITS;
      break;
    }
    PetscCall(ops.run(ctx, it, k, start, entering, &performed));
    PetscCall(KSPFusedChunkReplay(ksp, c, k, performed, start, ops, ctx, entering, &it, &stopped));
    if (stopped) break;
    start = PETSC_FALSE;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPFusedChunkView(Chunker *c, PetscViewer viewer)
{
  PetscFunctionBegin;
  PetscCall(PetscViewerASCIIPrintf(viewer, "  check interval k = %" PetscInt_FMT " (%s)\n", c->k, c->why));
  if (c->k > 1 && c->parallel) PetscCall(PetscViewerASCIIPrintf(viewer, "  global sums and halo exchanges of the chunks: %s\n", ActiveBackend()->host_memory ? "MPI (host memory)" : "NCCL on the GPU's stream"));
  if (c->k > 1) {
    const char *graph = c->nograph ? c->nograph : (c->settings.graph ? "graphs on" : "no graph: -ksp_fused_graph 0");
    PetscCall(PetscViewerASCIIPrintf(viewer, "  last solve: %" PetscInt_FMT " chunks, %" PetscInt_FMT " recorded as a graph, %" PetscInt_FMT " replayed (%s)\n", c->chunks, c->records, c->replays, graph));
    if (c->whole)
      PetscCall(PetscViewerASCIIPrintf(viewer, "  each chunk is one backend operation: %s\n", c->settings.persistent ? "one kernel on the CUDA backend where it can (see KSPFusedSetUsePersistent())" : "one kernel per step (-ksp_fused_persistent 0)"));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace fusedksp

/*@
  KSPFusedSetCheckInterval - Sets k, the number of iterations a FusedKSP solver runs between two
  checks of the residual on the host (device-resident scalars).

  Logically Collective

  Input Parameters:
+ ksp - a `KSPFUSEDCG`, `KSPFUSEDBCGS` or `KSPFUSEDSGMRES`
- k   - the interval, at least 1, or `PETSC_DETERMINE` for the default rule

  Options Database Keys:
+ -ksp_fused_check_interval <k> - the interval
. -ksp_fused_persistent <bool> - let the backend run a whole chunk as one persistent kernel (default true)
. -fused_reduction <mpi,nccl> - how the global sums of several processes travel on a GPU (default mpi)
- -fused_nccl_library <path> - the NCCL library -fused_reduction nccl loads (default libnccl.so.2, found on the library path)

  Level: intermediate

  Notes:
  With k = 1 every iteration copies its reduced dot products to the host and waits for them.  With k > 1
  the coefficients are computed on the device and the host copies the reduced values of a chunk of k
  iterations at once; it then replays the iterations, so monitors, the residual history and the
  convergence test see every iteration and the solve ends at the same iteration as with k = 1 (with a
  convergence test other than `KSPConvergedDefault()` a chunk may run up to k - 1 iterations past the stop).

  Default: k = 1 on the host backend, with a user convergence test, with several MPI processes (unless
  -fused_reduction nccl), with operands that are not fused types or with a general preconditioner (not one that
  is a kernel of the backend: point-block Jacobi of a fused matrix on one process); else
  32 for `KSPFUSEDCG` and `KSPFUSEDBCGS` with `PCNONE` or `PCJACOBI` (one persistent kernel per chunk),
  16 otherwise, 4 above 4M rows; `KSPFUSEDSGMRES` runs one chunk per restart cycle.  A chunk never runs
  past the maximum number of iterations.  `-ksp_monitor_true_residual` sees the solution of the chunk's end.

  docs/chunks.md describes chunks in full: the start of a solve computed in the first chunk, where the
  kernels stop, -fused_reduction nccl, persistent kernels, logging and what each solver does.

.seealso: `KSPFUSEDCG`, `KSPFUSEDBCGS`, `KSPFUSEDSGMRES`, `KSPFusedGetCheckInterval()`, `KSPFusedSetUseGraph()`
@*/
PetscErrorCode KSPFusedSetCheckInterval(KSP ksp, PetscInt k)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(ksp, KSP_CLASSID, 1);
  PetscValidLogicalCollectiveInt(ksp, k, 2);
  PetscTryMethod(ksp, "KSPFusedSetCheckInterval_C", (KSP, PetscInt), (ksp, k));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*@
  KSPFusedGetCheckInterval - The check interval k the last `KSPSolve()` used

  Not Collective

  Input Parameter:
. ksp - a `KSPFUSEDCG`, `KSPFUSEDBCGS` or `KSPFUSEDSGMRES`

  Output Parameter:
. k - the interval (1 before the first solve)

  Level: intermediate

.seealso: `KSPFUSEDCG`, `KSPFusedSetCheckInterval()`
@*/
PetscErrorCode KSPFusedGetCheckInterval(KSP ksp, PetscInt *k)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(ksp, KSP_CLASSID, 1);
  PetscAssertPointer(k, 2);
  PetscUseMethod(ksp, "KSPFusedGetCheckInterval_C", (KSP, PetscInt *), (ksp, k));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*@
  KSPFusedSetUseGraph - Whether a FusedKSP solver records a chunk of k iterations as a graph (CUDA
  backend) and replays it

  Logically Collective

  Input Parameters:
+ ksp - a `KSPFUSEDCG`, `KSPFUSEDBCGS` or `KSPFUSEDSGMRES`
- flg - `PETSC_TRUE` (default) to record and replay

  Options Database Key:
. -ksp_fused_graph <bool> - the same

  Level: advanced

  Notes:
  The first chunk with new operands runs directly (it also sizes the backend's buffers); the next one is
  recorded, and every later chunk of the full length replays the record while the operands - the arrays
  of the vectors and of the matrix, the sizes, k - stay the same, across solves too.  Anything else is
  recorded again; a matrix whose values change keeps its arrays and its record.  Jacobi and point-block
  Jacobi of a fused matrix run inside the record; another preconditioner (`PCApply()`) runs in chunks
  without a record (`KSPFUSEDCG`) or with k = 1.  `KSPFUSEDSGMRES` records whole-cycle chunks only (k at least the restart).

.seealso: `KSPFUSEDCG`, `KSPFusedSetCheckInterval()`, `KSPFusedGetChunkCounts()`
@*/
PetscErrorCode KSPFusedSetUseGraph(KSP ksp, PetscBool flg)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(ksp, KSP_CLASSID, 1);
  PetscValidLogicalCollectiveBool(ksp, flg, 2);
  PetscTryMethod(ksp, "KSPFusedSetUseGraph_C", (KSP, PetscBool), (ksp, flg));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*@
  KSPFusedGetChunkCounts - What the last `KSPSolve()` did with chunks of iterations

  Not Collective

  Input Parameter:
. ksp - a `KSPFUSEDCG`, `KSPFUSEDBCGS` or `KSPFUSEDSGMRES`

  Output Parameters:
+ chunks  - chunks run (0 with k = 1)
. records - chunks recorded as a graph
- replays - chunks replayed from a record

  Level: advanced

.seealso: `KSPFUSEDCG`, `KSPFusedSetCheckInterval()`, `KSPFusedSetUseGraph()`
@*/
PetscErrorCode KSPFusedGetChunkCounts(KSP ksp, PetscInt *chunks, PetscInt *records, PetscInt *replays)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(ksp, KSP_CLASSID, 1);
  PetscUseMethod(ksp, "KSPFusedGetChunkCounts_C", (KSP, PetscInt *, PetscInt *, PetscInt *), (ksp, chunks, records, replays));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*@
  KSPFusedSetUsePersistent - Whether a FusedKSP solver may hand a whole chunk of k iterations to the
  backend as one operation, which the CUDA backend runs as one persistent kernel

  Logically Collective

  Input Parameters:
+ ksp - a `KSPFUSEDCG`, `KSPFUSEDBCGS` or `KSPFUSEDSGMRES`
- flg - `PETSC_TRUE` (default) to allow it

  Options Database Key:
. -ksp_fused_persistent <bool> - the same

  Level: advanced

  Notes:
  With check interval k > 1, `PCNONE` or `PCJACOBI` and a `MATSEQAIJFUSED` matrix, `KSPFUSEDCG`,
  `KSPFUSEDBCGS` and `KSPFUSEDSGMRES` hand each chunk to the backend at once.  The CUDA backend then launches ONE cooperative
  kernel for the k iterations: its thread blocks stay resident (the grid is sized to what the GPU holds
  at once, each block owning a contiguous range of rows) and meet at grid barriers - for CG after the
  vector update (p complete for the SpMV) and after the SpMV (all partial sums written); for BiCGStab
  after A p, after A s (the entries of s a row needs are computed from r and A p on the spot) and after
  the update; for simpler GMRES after the multi-dot's partial sums and after the update (the next
  scaled residual complete for the SpMV), for restarts up to 128 - and each block sums the partial sums itself in the same order, so every block computes
  the same coefficients and takes the same stop decision.  `KSPFUSEDCG` and `KSPFUSEDBCGS` chunks on at
  most 16384 rows run in ONE thread block per 1024 rows instead, the blocks forming one thread block
  cluster (vectors in registers and shared memory, each block's matrix rows in its shared memory, the
  cluster's hardware barrier instead of the grid barrier, other blocks' entries read from their
  shared memory); `KSPFUSEDSGMRES` chunks with a restart of at most 30 likewise, on the most blocks of
  at least 128 threads (one block per 128, 256, 512, 768 or 1024 rows), each step's sums reaching every
  block through asynchronous stores into its shared memory.
  An iteration then costs no kernel launch: on small and medium systems, where
  launch latency dominates, that is the fastest form.  With `PETSC_FALSE` the chunk runs as two (CG),
  four (BiCGStab) or three (simpler GMRES) kernels per iteration, each computing its coefficients on
  the device.
  Results agree to rounding; the convergence history, stops and counts are the same either way.  The
  host backend always runs the steps.

.seealso: `KSPFUSEDCG`, `KSPFusedSetCheckInterval()`, `KSPFusedSetUseGraph()`
@*/
PetscErrorCode KSPFusedSetUsePersistent(KSP ksp, PetscBool flg)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(ksp, KSP_CLASSID, 1);
  PetscValidLogicalCollectiveBool(ksp, flg, 2);
  PetscTryMethod(ksp, "KSPFusedSetUsePersistent_C", (KSP, PetscBool), (ksp, flg));
  PetscFunctionReturn(PETSC_SUCCESS);
}
