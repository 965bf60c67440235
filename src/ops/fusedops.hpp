/*
   The fused operations of the solvers, on PETSc objects.

   Each operation runs as ONE backend kernel when every operand is a fused type (VECSEQFUSED /
   VECMPIFUSED vectors, a MATSEQAIJFUSED matrix where a matrix is involved), and otherwise as the
   same mathematics through plain PETSc calls (more passes over memory, same result to rounding).
   Dot products are returned as LOCAL values; the solver packs all dot products of an iteration
   and calls OpsAllreduce() once.
*/
#pragma once

#include "sys/fusedksp_impl.hpp"
#include "mat/aijfused.hpp"
#include <initializer_list>
#include <vector>

namespace fusedksp
{

/* One dot product fused into an operator application: see DotKind in backend/backend.hpp */
struct OpDot {
  DotKind kind   = DotKind::DOT_SELF;
  Vec     vec    = nullptr; /* DOT_SELF_W: the weight; DOT_VECTOR, DOT_VECTOR_W: the other vector */
  Vec     weight = nullptr; /* DOT_VECTOR_W: the weight                                            */
};

/* What the last solve of a fused KSP counted (KSPFusedGetReductionCount(), KSPFusedGetResidualReplacementCount()) */
struct SolveCounters {
  PetscInt       reductions   = 0; /* global reductions                                           */
  PetscInt       replacements = 0; /* residual replacements after a failed true-residual check    */
  PetscInt       pc_applies   = 0; /* PCApply() of a general preconditioner                       */
  PetscLogDouble pc_copies    = 0; /* host<->device vector copies (PETSc's log) during those       */
  PetscLogDouble pc_bytes     = 0;
};

/* x += a p; r -= a q; z = w.*r | z -= a u | z = r; p = z + b p; dots = {<r,z>, <r,r>, <z,z>}.
   w (Jacobi weights) may be NULL; z and u are used only when w is NULL and u is not NULL.   */
PetscErrorCode OpsCGUpdate(PetscScalar a, PetscScalar b, Vec x, Vec r, Vec z, Vec p, Vec q, Vec u, Vec w, PetscScalar dots[3]);

/* out = wl .* (A (wr .* in)) fused with ndots dot products of out.  wl, wr may be NULL; work is
   a vector like `in`, used by the unfused path when wr is given.                           */
PetscErrorCode OpsApplyOperator(Mat A, Vec wl, Vec wr, Vec in, Vec out, Vec work, int ndots, const OpDot *specs, PetscScalar *dots);

/* PETSC_TRUE when every non-NULL vector is on the backend: fused, or a PETSc device vector the backend reads in place
   (petscdevice.hpp) */
PetscErrorCode AllOnBackend(std::initializer_list<Vec> vecs, PetscBool *yes);

/* PETSC_TRUE when the products of A run on the backend from the fused operations: a MATSEQAIJFUSED or MATMPIAIJFUSED of
   the active backend, or PETSc's own device matrix (MatIsPETScDevice()); otherwise, when why is not NULL, *why says why
   not */
PetscErrorCode OpsOperatorOnBackend(Mat A, PetscBool *yes, const char **why);

/* y = the update `terms` of A x (MatUpdateTerms: alpha u + beta v + gamma wl .* (add + sign A x)) in one kernel on the
   backend (two on a MATMPIAIJFUSED: MatMPIAIJFusedMultUpdate(); collective then), for an operator
   OpsOperatorOnBackend() accepts and vectors on the backend (fused, or PETSc's device vectors); there is no unfused
   path (PETSC_ERR_SUP).  x must not be y; the terms' vectors may be y (read before y is written).  Logged as
   FusedSpMVDots.                                                                                               */
PetscErrorCode OpsApplyOperatorUpdate(Mat A, const MatUpdateTerms *terms, Vec x, Vec y);

/* out = A^T in fused with ndots dot products of out (one kernel for a MATSEQAIJFUSED A: its explicit transpose; otherwise
   MatMultTranspose(), on the backend for MATMPIAIJFUSED, then the dot products as OpsDots())                      */
PetscErrorCode OpsApplyOperatorTranspose(Mat A, Vec in, Vec out, int ndots, const OpDot *specs, PetscScalar *dots);

/* The dot products of OpsApplyOperator for an `out` computed elsewhere (e.g. after PCApply) */
PetscErrorCode OpsDots(Vec in, Vec out, int ndots, const OpDot *specs, PetscScalar *dots);

/* y = x + a v; dots[0] = <y,y> */
PetscErrorCode OpsWAXPYDot(PetscScalar a, Vec x, Vec v, Vec y, PetscScalar dots[1]);

/* BiCGStab update: x += alpha pt + omega st with pt = wr.*p, st = wr.*s (Jacobi, computed inside the
   fused kernel; the unfused path reads them from pt, st, the work vectors of OpsApplyOperator),
   or pt = M^{-1} p, st = M^{-1} s (right preconditioning with a general PC: wr NULL, pt, st given),
   or pt = p, st = s (no right preconditioner: wr, pt, st NULL);
   r = s - omega As; p = r + beta (p - omega Ap); dots = {<r, rstar>, <r,r>}, and dots[2] = <r, rhat>
   when rhat is given.                  */
PetscErrorCode OpsBCGSUpdate(PetscScalar alpha, PetscScalar omega, PetscScalar beta, Vec wr, Vec pt, Vec st, Vec x, Vec r, Vec p, Vec s, Vec Ap, Vec As, Vec rstar, Vec rhat, PetscScalar *dots);

/* dots[j] = <V[j], y> for j < nv, then dots[nv] = <y,y> if selfdot (honours OpsReduceInto()) */
PetscErrorCode OpsMDot(PetscInt nv, const Vec V[], Vec y, PetscBool selfdot, PetscScalar *dots);

/* y = scale (y - sum_j coef[j] V[j]); *dot = <y, dotvec> (dotvec NULL: <y,y>) if dot is not NULL */
PetscErrorCode OpsMAXPYScale(PetscInt nv, const PetscScalar coef[], const Vec V[], Vec y, PetscScalar scale, Vec dotvec, PetscScalar *dot);

/* Residual-based simpler GMRES: w = scale (w - sum_j coef[j] V[j]); znew = zold - eta w; dots[0] = <znew,znew> */
PetscErrorCode OpsSGMRESUpdate(PetscInt nv, const PetscScalar coef[], const Vec V[], Vec w, PetscScalar scale, PetscScalar eta, Vec zold, Vec znew, PetscScalar dots[1]);

/* Block products of s-step (communication-avoiding) methods, on a basis V[0..nv) and a block W[0..nw):
   row j of dots (length nv + nw) receives <V[i], W[j]> for i < nv, then <W[i], W[j]> for i <= j (the rest of
   the row is zeroed).  One block multi-dot of the backend (Backend::block_mdot: one pass over V) when every vector
   is on the backend, else one multi-dot per column of W; inside an open batch the results complete together, so
   the block costs ONE global reduction of nw (nv + nw) values.  Honours OpsReduceInto() on the backend's path. */
PetscErrorCode OpsBlockMDot(PetscInt nv, const Vec V[], PetscInt nw, const Vec W[], PetscScalar *dots);

/* W[j] = scale[j] (W[j] - sum_{i<nv} coef[j][i] V[i] - sum_{i<j} coef[j][nv + i] W[i]) for j = 0, 1, .., nw-1 in
   order (so W[i], i < j, enter already updated), with coef[j] the row j (length nv + nw) of coef: W := (W - V C) R^{-1}
   of a block QR: one block multi-axpy of the backend (Backend::block_maxpy: one pass over V) when every vector is on
   the backend, else one multi-axpy per column                                                                  */
PetscErrorCode OpsBlockMAXPY(PetscInt nv, const Vec V[], PetscInt nw, const Vec W[], const PetscScalar *coef, const PetscScalar *scale);

/* A batch of fused operations whose dot products are needed together: inside it, the dots[] of the
   Ops* operations are filled only by OpsBatchEnd(), after ONE device->host copy and ONE wait (on
   the CUDA backend; the host backend fills them at once).  Only Ops* calls defer; any other
   reduction inside a batch (a user monitor's VecNorm, say) completes as usual.  With enable
   PETSC_FALSE (a general PC, whose PCApply may need its own results) nothing is deferred.
   Batches belong to the solve running (OpsSolveScoped()): a solve has at most one open, and
   OpsBatchIsOpen() says whether it has.  A fused solve nested inside the PC or the operator of
   another (PCKSP, PCFIELDSPLIT, PCMG smoothers, a PCSHELL or MATSHELL calling KSPSolve()) opens
   and completes its own batches while the outer solve's batch stays open, its deferred results
   pending (the CUDA backend keeps the batches as a stack).                                     */
PetscErrorCode OpsBatchBegin(PetscBool enable);
PetscErrorCode OpsBatchEnd(void);
PetscBool      OpsBatchIsOpen(void);

/* Two streams (KSPFUSEDBICG's A and A^T sides): the fused operations, the products of MATSEQAIJFUSED and
   MATMPIAIJFUSED and the backend's triangular solves (MATSOLVERFUSED) called between OpsSideBegin(enable, side) and
   OpsSideEnd() run on stream `side` of the backend (Backend::side_begin): 0 its stream, 1 a second one, which first
   waits for the work queued on stream 0 so far; OpsSidesJoin() makes the work queued from then on wait for side 1's.
   Work that is not the backend's (PETSc's own PCs and operators on the host) runs in order as always.  With enable
   PETSC_FALSE, or on a backend with one stream (OpsHasSecondStream() false), the scopes only check their nesting and
   everything runs in order on the one stream.  A solve has at most one side scope open; OpsBatchEnd() joins first.
   A fused solve nested in a side (in its PC, say) runs in order on that side's stream.                        */
PetscBool      OpsHasSecondStream(void);
PetscErrorCode OpsSideBegin(PetscBool enable, int side);
PetscErrorCode OpsSideEnd(void);
PetscErrorCode OpsSidesJoin(void);

/* Runs solve(ksp) in a scope of batches of its own (see OpsBatchBegin()).  When solve returns an
   error, the side scope it left open is closed and side 1 joined (the backend is back on its stream),
   the batch it left open is abandoned (its deferred results are never filled) and a pending
   OpsReduceInto() target dropped, so the next solve starts from a clean state; the error is
   returned.  A solve that returns success with a batch or a side scope open, or side 1 not joined,
   is an error (PETSC_ERR_PLIB).                                                                   */
PetscErrorCode OpsSolveScoped(KSP ksp, PetscErrorCode (*solve)(KSP));

/* The one global reduction of an iteration: sums buf[0..n) over comm in a single MPI_Allreduce */
PetscErrorCode OpsAllreduce(MPI_Comm comm, PetscScalar *buf, PetscInt n, SolveCounters *counter);

/* ---- Device-resident scalars: chunks of iterations without a host round trip (src/ksp/fusedchunk.cxx) ---- */

/* Why the operations of a solve with these operands cannot keep their scalars in backend memory (NULL:
   they can): every vector fused and A a MATSEQAIJFUSED, or, with several processes (*parallel), a
   MATMPIAIJFUSED on a backend that queues the global sums and halo exchanges - in host memory through
   MPI, on the GPU through NCCL when `nccl` (-fused_reduction nccl)                                  */
PetscErrorCode OpsChunkSupported(Mat A, std::initializer_list<Vec> vecs, PetscBool nccl, PetscBool *parallel, const char **unsupported);

/* The backend's communicator (Backend::comm_create) over A's processes, made at the first call with create
   (collective then) and kept with the MPI communicator; *handle NULL and *why set when the backend cannot  */
PetscErrorCode OpsChunkComm(Mat A, PetscBool create, void **handle, const char **why);

/* What a recorded chunk depends on: the backend arrays of the vectors (NULL entries skipped) and of
   the matrix, appended to key                                                                    */
PetscErrorCode OpsChunkKey(Mat A, std::initializer_list<Vec> vecs, std::vector<const void *> *key);

/* Bytes in the backend's memory with a host mirror (pinned on the CUDA backend) */
struct OpsBackendBuffer {
  void  *device = nullptr, *host = nullptr;
  size_t bytes = 0;
};
PetscErrorCode OpsBackendBufferEnsure(size_t bytes, OpsBackendBuffer *buf); /* (re)allocates when smaller */
PetscErrorCode OpsBackendBufferDestroy(OpsBackendBuffer *buf);
/* Queues a copy of bytes [offset, offset + bytes) between the mirror and the backend memory */
PetscErrorCode OpsBackendBufferToBackend(OpsBackendBuffer *buf, size_t offset, size_t bytes);
PetscErrorCode OpsBackendBufferToHost(OpsBackendBuffer *buf, size_t offset, size_t bytes);
/* Blocks until everything queued so far (copies to the host included) is complete */
PetscErrorCode OpsWait(void);

/* The next fused operation - OpsApplyOperator (MATSEQAIJFUSED), OpsDots or OpsCGUpdateChained -
   writes its dot products to slot (backend memory) instead of dots[], and does nothing when
   *stop >= 0 at the time it runs (stop may be NULL).  An unfused operation then is an error.   */
PetscErrorCode OpsReduceInto(PetscScalar *slot, const PetscInt *stop);

/* The CG update of chunk iteration j with alpha and beta computed from prev (backend memory) where
   it runs; see Backend::cg_update_chained.  Its three dot products go to the OpsReduceInto() slot. */
PetscErrorCode OpsCGUpdateChained(const PetscScalar *prev, ChunkControl *ctl, PetscInt j, Vec x, Vec r, Vec z, Vec p, Vec q, Vec u, Vec w);

/* A whole chunk of CG iterations 1..k (Backend::cg_chunk) on a MATSEQAIJFUSED A with Jacobi weights w
   (NULL: no preconditioner): the updates of x, r, p and q = A p, the reduced values of iteration j
   to slots[j * CG_NSLOT ..] (slots and ctl in backend memory; slot 0 holds those entering the chunk,   or with b != NULL the chunk starts the solve and writes slot 0 itself: from the initial guess in x
   (guess) or from x = 0, with the norm of b of ChunkBNorm `bnorm` for its limits; r, p and q are then
   outputs only).  form: how the backend runs it (ChunkForm).                              */
PetscErrorCode OpsCGChunk(Mat A, PetscInt k, PetscScalar *slots, ChunkControl *ctl, Vec b, PetscBool guess, PetscInt bnorm, Vec x, Vec r, Vec p, Vec q, Vec w, ChunkForm form);

/* A whole chunk of BiCGStab iterations 1..k (Backend::bcgs_chunk) on a MATSEQAIJFUSED A, the operator
   wl.*(A (wr.*in)) (Jacobi left or right; wl, wr NULL without a preconditioner): Ap, s, As and the
   updates of x, r, p, the reduced values of iteration j to slots[j * BCGS_NSLOT ..]; with b != NULL
   the chunk starts the solve from a zero initial guess (x, r, p and rstar outputs, see
   BCGSChunkArgs).  form: how the backend runs it (ChunkForm).                             */
PetscErrorCode OpsBCGSChunk(Mat A, PetscInt k, PetscScalar *slots, ChunkControl *ctl, Vec wl, Vec wr, Vec b, Vec x, Vec r, Vec p, Vec s, Vec Ap, Vec As, Vec rstar, ChunkForm form);

/* The BiCGStab steps of chunk iteration j (see Backend::waxpy_dot_chained, bcgs_update_chained):
   s = r - alpha Ap and r, p, x updates, with their dot products to the OpsReduceInto() slot      */
PetscErrorCode OpsWAXPYDotChained(const PetscScalar *prev, const PetscScalar *cur, ChunkControl *ctl, PetscInt j, Vec x, Vec v, Vec y);
PetscErrorCode OpsBCGSUpdateChained(const PetscScalar *prev, const PetscScalar *cur, ChunkControl *ctl, PetscInt j, Vec wr, Vec x, Vec r, Vec p, Vec s, Vec Ap, Vec As, Vec rstar);

/* A whole chunk of simpler GMRES steps i0+1..i0+k of a restart cycle m (Backend::sgmres_chunk) on a
   MATSEQAIJFUSED A with right Jacobi weights wr (NULL: none): V and Z are the cycle's vectors by step
   number (V[1..m], Z[1..m+1]); the values of step j go to slots[j * SGMRESChunkSlot(m) ..] (slot 0
   holds those entering the chunk, or with b != NULL the chunk starts the solve from a zero initial
   guess and writes slot 0 and Z[1] = b / ||b|| itself, see SGMRESChunkArgs).  form: how the
   backend runs it (ChunkForm).                                                                   */
PetscErrorCode OpsSGMRESChunk(Mat A, PetscInt i0, PetscInt k, PetscInt m, PetscReal keep, PetscScalar *slots, ChunkControl *ctl, Vec b, Vec wr, const Vec V[], const Vec Z[], ChunkForm form);

/* The simpler GMRES update of step i (chunk iteration j), see Backend::sgmres_update_chained: V are
   v_1..v_{i-1}; <znew,znew> goes to the OpsReduceInto() slot                                     */
PetscErrorCode OpsSGMRESUpdateChained(PetscInt i, PetscInt m, PetscReal keep, const Vec V[], Vec w, Vec zold, Vec znew, const PetscScalar *prev, PetscScalar *cur, ChunkControl *ctl, PetscInt j);

/* Records the operations body(ctx) queues into *graph (instantiated or updated) without running
   them; *recorded = PETSC_FALSE (and body not called) when the backend cannot record.        */
PetscErrorCode OpsGraphRecord(PetscErrorCode (*body)(void *), void *ctx, void **graph, PetscBool *recorded);
/* Replays *graph; *launched = PETSC_FALSE when it must be recorded again (a buffer it uses moved).
   A replay runs no host code: the caller then marks the vectors it wrote with OpsMarkWritten().  */
PetscErrorCode OpsGraphLaunch(void *graph, PetscBool *launched);
PetscErrorCode OpsGraphDestroy(void **graph);

/* Marks the vectors as written on the backend (offload mask and object state, as after the
   operations that wrote them): needed after a replayed record, harmless otherwise             */
PetscErrorCode OpsMarkWritten(std::initializer_list<Vec> vecs);

/* The matrix powers kernel of CA-GMRES on a MATMPIAIJFUSED (src/mat/matpowers.cxx): s products with one halo exchange */
struct MatPowers;
/* Makes *mp current for products with A of depth s and the right weights w (NULL: none) on vectors like x (made
   again when A or s changed; A's changes since the last call brought in; the weights sent to the ghosts): *mp is
   left NULL (destroyed) when A is not a MATMPIAIJFUSED on the active backend or w, x are not fused.  Collective. */
PetscErrorCode OpsMatrixPowersSetUp(Mat A, PetscInt s, Vec w, Vec x, MatPowers **mp);
PetscErrorCode OpsMatrixPowersDestroy(MatPowers **mp);
/* Y[i+1] = A (w .* Y[i]) - c[2i] Y[i] - c[2i+1] Y[i-1] for i < sb (c[1] unused), one halo exchange.  Collective. */
PetscErrorCode OpsMatrixPowers(MatPowers *mp, Vec w, PetscInt sb, const PetscScalar *c, const Vec Y[]);
/* The ghost entries and ghost rows of this rank, and the kernel's exchanges so far */
PetscErrorCode OpsMatrixPowersGetInfo(MatPowers *mp, PetscInt *nghost, PetscInt *nghostrows, PetscInt64 *exchanges);

} // namespace fusedksp
