/*
   Chunks of iterations with device-resident scalars (shared by the fused solvers).

   With a check interval k > 1, a solver queues k iterations at once: each kernel computes its
   recurrence coefficients from the reduced dot products the previous kernels left in backend
   memory (the "slots", one per iteration), and writes its own dot products to the next slot.  After
   the k iterations ONE copy brings the control block and every slot to the host, which waits once
   and then replays the iterations: the same coefficient checks, norms, monitors, residual history
   and convergence test as with k = 1, iteration by iteration.  The kernels stop by themselves
   (ChunkControl::stopped) where the coefficients fail or PETSc's default convergence test would
   stop, so with the default test no iteration runs past the one that ended the solve.

   Buffer layout (backend memory, mirrored on the host): [ChunkControl][slot 0][slot 1]...[slot k],
   slot j holding the ndots reduced values of chunk iteration j (slot 0: the state entering the
   chunk, written by the host).

   A chunk of the full length is recorded once as a graph (-ksp_fused_graph, backends that can) and
   replayed while its operands - the vectors' arrays, the matrix arrays, k - stay the same.  A solver
   may let the first chunk of a solve compute the solve's start too (KSPFusedChunkStart() with start:
   slot 0 written by the backend, which also tests it); that chunk has a record of its own.
*/
#pragma once

#include "ksp/fusedcommon.hpp"
#include <vector>

namespace fusedksp
{

/* What a solve chunks with, from -ksp_fused_check_interval / -ksp_fused_graph or the setters */
struct ChunkSettings {
  PetscInt  interval   = PETSC_DETERMINE; /* k; PETSC_DETERMINE: the default rule (KSPFusedChunkInterval) */
  PetscBool graph      = PETSC_TRUE;
  PetscBool persistent = PETSC_TRUE; /* a backend may run a whole chunk as one kernel (fusedcg, fusedbcgs, fusedsgmres) */
  PetscInt  reduction  = 0;          /* -fused_reduction: 0 mpi (a host allreduce per iteration on a GPU), 1 nccl (on the stream) */
};

struct Chunker {
  ChunkSettings    settings;
  OpsBackendBuffer buf;
  PetscInt         ndots = 0, capacity = 0; /* values per slot; chunk iterations the buffer holds */

  /* The records of full chunks, by the operands they were made for (a record without a graph: the
     operands ran once directly); at most CHUNK_RECORDS, a solve's first chunk and the ones after it */
  struct Record {
    std::vector<const void *> key;
    void                     *graph = nullptr;
  };
  std::vector<Record> records_made;

  /* the last solve, for -ksp_view */
  PetscInt    k = 1, chunks = 0, replays = 0, records = 0;
  const char *why      = "";          /* how k was chosen, or why chunks were not possible */
  const char *nograph  = nullptr;     /* why the solver does not record its chunks (NULL: it does) */
  PetscBool   whole    = PETSC_FALSE; /* the solver hands whole chunks to the backend (persistent kernels); set before KSPFusedChunkInterval() */
  PetscBool   pcapply  = PETSC_FALSE; /* a chunk's iterations call PCApply() (a general PC); set before KSPFusedChunkInterval() */
  PetscBool   parallel = PETSC_FALSE; /* several processes (KSPFusedChunkOperands()): sums and halos through Backend::allreduce/exchange */
};

/* The form a solver asks the backend to run its whole chunks in: the backend's choice, or with
   -ksp_fused_persistent 0 the steps                                                            */
inline ChunkForm ChunkFormOf(const Chunker *c)
{
  return c->settings.persistent ? ChunkForm::AUTO : ChunkForm::STEPS;
}

/* -ksp_fused_check_interval, -ksp_fused_graph and -ksp_fused_persistent */
PetscErrorCode KSPFusedChunkSetFromOptions(PetscOptionItems PetscOptionsObject, Chunker *c);

/* Composes KSPFusedSetCheckInterval() and friends on ksp; KSPFusedChunkDestroy() removes them */
PetscErrorCode KSPFusedChunkRegister(KSP ksp, Chunker *c);
PetscErrorCode KSPFusedChunkDestroy(KSP ksp, Chunker *c);

/* The check interval of this solve (sets c->k and c->why): 1 when the solve cannot keep its scalars
   on the backend (`unsupported`: why, NULL when it can) or the user asked for 1; the user's k
   otherwise; by default the rule of the KSPFusedSetCheckInterval() man page.                     */
PetscErrorCode KSPFusedChunkInterval(KSP ksp, Chunker *c, const char *unsupported);

/* Why chunks are not possible for these operands (OpsChunkSupported() with c's -fused_reduction), or NULL; sets c->parallel */
PetscErrorCode KSPFusedChunkOperands(Chunker *c, Mat A, std::initializer_list<Vec> vecs, const char **unsupported);

/* Sizes the buffer for k iterations of ndots values each */
PetscErrorCode KSPFusedChunkReserve(Chunker *c, PetscInt ndots, PetscInt k);

/* Backend-memory and host views of the buffer */
ChunkControl *ChunkDeviceControl(Chunker *c);
PetscScalar  *ChunkDeviceSlot(Chunker *c, PetscInt j);
ChunkControl *ChunkHostControl(Chunker *c);
PetscScalar  *ChunkHostSlot(Chunker *c, PetscInt j);

/* Fills the host copy of the control block (from the KSP's tolerances; normdot: which slot value is
   the squared norm, -1 none) and of slot 0 (`entering`, ndots values); KSPFusedChunkRun() copies
   them to the backend ahead of the chunk's body (inside its graph).  entering = NULL: the chunk
   computes the solve's start as its iteration 0 (first_it = 0) and tests it with the limits
   KSPConvergedDefault() takes from it (ChunkStartLimits(); with a nonzero initial guess ctl->bnorm
   says which norm of b they take, which the chunk's body passes to its backend operation).     */
PetscErrorCode KSPFusedChunkStart(KSP ksp, Chunker *c, PetscInt first_it, PetscInt normdot, const PetscScalar *entering);

/* As KSPFusedChunkStart() with entering = NULL, for a chunk that computes a restart's residual norm as
   its iteration first_it > 0 (fusedsgmres: ChunkControl::start = 2) and tests it with the limits of
   the solve's iteration 0, which KSPConvergedDefault() set (KSPFusedChunkMayStart() must hold).  */
PetscErrorCode KSPFusedChunkRestart(KSP ksp, Chunker *c, PetscInt first_it, PetscInt normdot);

/* Whether a solve may let its first chunk compute the start (KSPFusedChunkStart() with entering =
   NULL): chunks (k > 1), a zero initial guess (or any, `guess`: the solver's chunk can start from
   one), at least one iteration, and a convergence test the backend applies as the host does
   (KSPConvergedDefault() or KSPConvergedSkip())                                                 */
PetscBool KSPFusedChunkMayStart(KSP ksp, Chunker *c, PetscBool guess);

/* Queues the k iterations body(ctx) issues and the copy of the control block and slots to the host,
   recorded/replayed as a graph when allowed (`graphsafe`, -ksp_fused_graph, k the full length,
   `key` the operands it was recorded for, the same key seen once before), then waits for them.  */
PetscErrorCode KSPFusedChunkRun(Chunker *c, PetscInt k, PetscBool graphsafe, const std::vector<const void *> &key, PetscErrorCode (*body)(void *), void *ctx);

/* The chunk iterations that ran: k, or ChunkControl::stopped when the kernels stopped */
PetscInt ChunkPerformed(Chunker *c, PetscInt k);

/* After the replay of a chunk stopped the solve at chunk iteration j (first KSP iteration it + 1):
   when the kernels ran past it (a test they cannot apply), the solution holds those iterations too,
   and KSPGetIterationNumber() reports the iterations performed                                   */
PetscErrorCode KSPFusedChunkStopped(KSP ksp, PetscInt it, PetscInt j, PetscInt performed);

/* What KSPFusedChunkReplay() and KSPFusedChunkSolve() ask of a solver; ctx is the solver's own */
struct ChunkReplayOps {
  /* KSPFusedChunkSolve(): queues and runs (KSPFusedChunkStart(), KSPFusedChunkRun()) the chunk of k
     iterations from KSP iteration it, entering from `entering` or, with `start`, computing the solve's
     start as its iteration 0; *performed: ChunkPerformed()                                           */
  PetscErrorCode (*run)(void *ctx, PetscInt it, PetscInt k, PetscBool start, const PetscScalar *entering, PetscInt *performed);
  /* The chunk's iteration 0, which computed the solve's start (or a restart): the solver takes the values
     the chunk left (slot0, the control block; entering: the slot the next chunk enters with), monitors
     and tests it; *stop when the solve ends there                                                        */
  PetscErrorCode (*start)(void *ctx, const PetscScalar *slot0, PetscScalar *entering, PetscBool *stop);
  /* Chunk iteration j, KSP iteration it, from the slots prev (j - 1) and cur (j), of a chunk whose kernels
     ran `performed` iterations: the checks of its coefficients (a failure sets ksp->reason) and its
     residual norm *rnorm; *stop when the replay ends before the test: a failed check, or the kernels
     stopped before this iteration and the next chunk goes on from there                                */
  PetscErrorCode (*iteration)(void *ctx, PetscInt j, PetscInt it, PetscInt performed, const PetscScalar *prev, const PetscScalar *cur, PetscReal *rnorm, PetscBool *stop);
  /* After the test converged at iteration it with the recurrence residual rnorm: the true-residual check
     (NULL: none inside the chunk); when it fails, *restarted, ksp->reason reset and entering holds the
     slot the recurrence restarts from                                                                  */
  PetscErrorCode (*converged)(void *ctx, PetscInt it, PetscReal rnorm, PetscScalar *entering, PetscBool *restarted);
  /* whether the solution holds the iterations the kernels ran past a stop (KSPFusedChunkStopped()) */
  PetscBool ranpast;
};

/* Replays on the host the chunk that ran `performed` (ChunkPerformed()) of its k iterations from KSP
   iteration *it + 1, and with `start` its iteration 0 (KSP iteration *it) first: iteration by iteration
   the solver's coefficient checks and norm, KSPFusedMonitorAndTest(), and at convergence the
   true-residual check, as with k = 1.  On return *it is the iteration the replay ended at and *stopped
   says whether the solve ends there; when it goes on, entering (c->ndots values) holds the slot the
   next chunk enters with: the last one the kernels performed, or the restart's                         */
PetscErrorCode KSPFusedChunkReplay(KSP ksp, Chunker *c, PetscInt k, PetscInt performed, PetscBool start, const ChunkReplayOps &ops, void *ctx, PetscScalar *entering, PetscInt *it, PetscBool *stopped);

/* The iterations of a solve from KSP iteration it, k at a time (never past max_it: KSP_DIVERGED_ITS there),
   each chunk run by ops.run and replayed by KSPFusedChunkReplay(), until a chunk stops the solve; entering:
   the slot the first chunk enters with, or with `start` none (the first chunk computes the start)          */
PetscErrorCode KSPFusedChunkSolve(KSP ksp, Chunker *c, PetscInt it, PetscBool start, const ChunkReplayOps &ops, void *ctx, PetscScalar *entering);

/* The views' line on chunks */
PetscErrorCode KSPFusedChunkView(Chunker *c, PetscViewer viewer);

/* -ksp_view of a solver whose data (a Solver) has a PCMode `mode` and a Chunker `chunk`: KSPFusedViewCommon() with its
   kernels, then KSPFusedChunkView()                                                                                  */
template <class Solver> PetscErrorCode KSPFusedViewChunked(KSP ksp, PetscViewer viewer, const char *kernels)
{
  Solver *s = static_cast<Solver *>(ksp->data);

  PetscFunctionBegin;
  PetscCall(KSPFusedViewCommon(ksp, viewer, s->mode, kernels));
  PetscCall(KSPFusedChunkView(&s->chunk, viewer));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* KSPFusedCreate() of a solver whose data (a Solver) has a Chunker `chunk`: registers it (KSPFusedChunkRegister()) */
template <class Solver> PetscErrorCode KSPFusedCreateChunked(KSP ksp, const KSPFusedOps &ops, std::initializer_list<KSPFusedNorm> norms)
{
  Solver *s = nullptr;

  PetscFunctionBegin;
  PetscCall(KSPFusedCreate(ksp, ops, norms, &s));
  PetscCall(KSPFusedChunkRegister(ksp, &s->chunk));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ksp->ops->destroy of such a solver, or its end: KSPFusedChunkDestroy(), then KSPFusedDestroyData() */
template <class Solver> PetscErrorCode KSPFusedDestroyChunked(KSP ksp)
{
  PetscFunctionBegin;
  PetscCall(KSPFusedChunkDestroy(ksp, &static_cast<Solver *>(ksp->data)->chunk));
  PetscCall(KSPFusedDestroyData<Solver>(ksp));
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace fusedksp
