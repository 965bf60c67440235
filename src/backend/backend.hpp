/*
   The backend contract: every fused operation of the solvers, on raw arrays.

   One declaration here, one implementation per backend (src/backend/host: plain C++ loops, the
   reference; src/backend/cuda: CUDA kernels).  Backends know nothing of KSP, Vec or Mat; the
   ops layer (src/ops) hands them raw arrays that live where the backend computes (host memory for
   the host backend, device memory for the CUDA backend).

   Every dot product is computed the way the device does it: the index range is cut into
   ReduceChunks() contiguous chunks (one per thread block on the device, where their number is also
   at most the blocks the GPU holds at once), each chunk yields one partial sum, and the partials
   are then summed (the "second stage": in chunk order on the host backend, by the last thread block
   of the kernel on the CUDA backend, which then copies only the sums).  The backends agree to
   rounding.  Sparse products deal their rows to the thread blocks in "passes" of a block, so their
   partial sums may differ from ReduceChunks().  The result returned
   in dots[] is the LOCAL (this MPI rank's) value; the ops layer packs the dots of one iteration
   into a single MPI_Allreduce.

   Conventions: n is the local length; `w` arguments are optional pointwise weights (the inverse
   diagonal of a Jacobi preconditioner), NULL meaning "all ones".  All kernels accept n == 0.  The
   arrays of one call are distinct (no two arguments overlap; the CUDA kernels are compiled with
   __restrict__ pointers), unless an operation says otherwise.
*/
#pragma once

#include "sys/requirements.hpp"
#include "sys/errors.hpp"
#include "sys/tuning.hpp"
#include "core/recurrences.hpp"
#include "backend/blas.hpp"

namespace fusedksp
{

constexpr int FUSED_MAX_DOTS = 4; /* dot products fused into one SpMV */

/* Number of chunks (thread blocks) a range of n entries is reduced in: enough blocks to fill a GPU
   for large n, one block per FUSED_MIN_CHUNK entries for mid-size n, at most maxblocks; a single
   block up to FUSED_SINGLE_BLOCK entries, whose sums are final at once (no second stage: the
   latency of a few extra loads per thread is below that of the fence, ticket and last-block pass) */
inline PetscInt ReduceChunks(PetscInt n, PetscInt maxblocks)
{
  if (n <= 0) return 0;
  if (n <= FUSED_SINGLE_BLOCK) return 1;
  const PetscInt want = (n + FUSED_MIN_CHUNK - 1) / FUSED_MIN_CHUNK;
  return want < maxblocks ? want : maxblocks;
}

/* CSR view of the local rows of a matrix (arrays in the backend's memory space) */
struct CSRView {
  PetscInt           nrows = 0, ncols = 0;
  const PetscInt    *rowptr = nullptr; /* nrows+1 */
  const PetscInt    *colidx = nullptr; /* rowptr[nrows] */
  const PetscScalar *vals   = nullptr; /* rowptr[nrows] */
  PetscInt64         nnz    = -1;      /* rowptr[nrows] when known (picks the device's threads per row) */
};

/* SELL-P view (sliced ELLPACK with padding, seed 003) of the local rows of a matrix.  Rows are
   grouped in slices of FUSED_SELL_HEIGHT consecutive rows; every row of slice s stores L_s entries,
   L_s = the longest row of the slice rounded up to a multiple of `threads` (the threads that share
   a row).  Entry k = j * threads + t of row i (slice s = i / H, lane l = i % H, H the slice height)
   is at  sliceptr[s] + (j * H + l) * threads + t,  so a warp reading one j of 32 / threads rows
   reads consecutive memory.  Padding has colidx -1 (never read) and value 0.                    */
constexpr PetscInt FUSED_SELL_HEIGHT = 32;

/* Functions of the contract's shared kernel bodies, for host code and for the device code of every backend */
#if defined(__CUDACC__)
#define FUSEDKSP_HOST_DEVICE __host__ __device__
#else
#define FUSEDKSP_HOST_DEVICE
#endif

/* Where entry e of row i is stored in a SELL-P layout with these slice offsets and threads per row */
FUSEDKSP_HOST_DEVICE inline PetscInt64 SELLPosition(const PetscInt64 *sliceptr, int threads, PetscInt64 i, PetscInt64 e)
{
  return sliceptr[i / FUSED_SELL_HEIGHT] + ((e / threads) * FUSED_SELL_HEIGHT + i % FUSED_SELL_HEIGHT) * threads + e % threads;
}

/* Lane i of the slices of a SELL-P layout (nrows rows, `threads` per row) from CSR arrays: the body of every backend's
   Backend::sell_from_csr, slot by slot (colidx/scolidx or vals/svals may be NULL) */
FUSEDKSP_HOST_DEVICE inline void SELLFromCSRLane(PetscInt64 i, PetscInt nrows, int threads, const PetscInt64 *sliceptr, const PetscInt *rowptr, const PetscInt *colidx, const PetscScalar *vals, PetscInt *scolidx, PetscScalar *svals)
{
  const PetscInt64 slots = (sliceptr[i / FUSED_SELL_HEIGHT + 1] - sliceptr[i / FUSED_SELL_HEIGHT]) / FUSED_SELL_HEIGHT;
  const PetscInt64 start = i < nrows ? rowptr[i] : 0, len = i < nrows ? rowptr[i + 1] - start : 0;

  for (PetscInt64 e = 0; e < slots; ++e) {
    const PetscInt64 pos = SELLPosition(sliceptr, threads, i, e);

    if (scolidx) scolidx[pos] = e < len ? colidx[start + e] : -1;
    if (svals) svals[pos] = e < len ? vals[start + e] : 0;
  }
}
/* Lane i of a SELL-P layout back to CSR: the body of every backend's Backend::csr_from_sell, the inverse of
   SELLFromCSRLane() (colidx or vals may be NULL) */
FUSEDKSP_HOST_DEVICE inline void CSRFromSELLLane(PetscInt64 i, PetscInt nrows, int threads, const PetscInt64 *sliceptr, const PetscInt *rowptr, const PetscInt *scolidx, const PetscScalar *svals, PetscInt *colidx, PetscScalar *vals)
{
  const PetscInt64 start = i < nrows ? rowptr[i] : 0, len = i < nrows ? rowptr[i + 1] - start : 0;

  for (PetscInt64 e = 0; e < len; ++e) {
    const PetscInt64 pos = SELLPosition(sliceptr, threads, i, e);

    if (colidx) colidx[start + e] = scolidx[pos];
    if (vals) vals[start + e] = svals[pos];
  }
}
struct SELLView {
  PetscInt           nrows = 0, ncols = 0;
  int                threads  = 1;       /* threads per row: 1, 2, 4 or 8                         */
  const PetscInt64  *sliceptr = nullptr; /* ceil(nrows / H) + 1 offsets (in entries)              */
  const PetscInt    *colidx   = nullptr; /* sliceptr[nslices] entries, -1 for padding             */
  const PetscScalar *vals     = nullptr; /* sliceptr[nslices] entries                             */
};

/* What one fused dot product of a matrix-vector kernel multiplies `out` with:
     DOT_INPUT      (out, in)            e.g. <p, A p>
     DOT_SELF       (out, out)           e.g. <A p, A p>
     DOT_SELF_W     (out, w .* out)      e.g. <A p, D^{-1} A p>  (w = weight)
     DOT_VECTOR     (out, vec)           e.g. <A p, r0*>
     DOT_VECTOR_W   (out, w .* vec)      e.g. <A p, D^{-1} r>     (w = weight)              */
enum class DotKind { DOT_INPUT, DOT_SELF, DOT_SELF_W, DOT_VECTOR, DOT_VECTOR_W };
struct DotSpec {
  DotKind            kind   = DotKind::DOT_SELF;
  const PetscScalar *vec    = nullptr; /* DOT_SELF_W: the weight; DOT_VECTOR, DOT_VECTOR_W: the other vector */
  const PetscScalar *weight = nullptr; /* DOT_VECTOR_W: the weight                                            */
};

/* The term entry i adds to the dot product s, as every backend computes it (in: the input vector, NULL
   reading as 0; out_i: the output's entry)                                                          */
FUSED_HD inline PetscScalar DotTerm(const DotSpec &s, PetscInt64 i, const PetscScalar *in, PetscScalar out_i)
{
  switch (s.kind) {
  case DotKind::DOT_INPUT:
    return in ? out_i * in[i] : 0;
  case DotKind::DOT_SELF:
    return out_i * out_i;
  case DotKind::DOT_SELF_W:
    return out_i * s.vec[i] * out_i;
  case DotKind::DOT_VECTOR:
    return out_i * s.vec[i];
  case DotKind::DOT_VECTOR_W:
    return out_i * s.weight[i] * s.vec[i];
  }
  return 0;
}

/* What a sparse product does with the sum s_i = (A (wr .* in))_i of each row i (Backend::spmv_update):
     out_i = alpha u_i + beta v_i + gamma wl_i (add_i + sign s_i)
   NULL wl reads as 1, NULL add, u or v as 0.  The default, {wl}, is the plain product out_i = wl_i s_i of
   Backend::spmv_dots; {add = z} is A in + z (MatMultAdd), {add = b, sign = -1} the residual b - A in, and
   {add = b, sign = -1, wl = D^{-1}, gamma, u, alpha, v = in, beta} a step of Chebyshev's three-term recurrence.  */
struct RowUpdate {
  const PetscScalar *wl = nullptr, *add = nullptr, *u = nullptr, *v = nullptr;
  PetscScalar        sign = 1, gamma = 1, alpha = 0, beta = 0;
};

/* out_i of a RowUpdate for the row sum s, as every backend computes it (in PETSc's order of VecAXPBYPCZ(): the two
   vectors first; a default RowUpdate gives wl_i s exactly)                                                         */
FUSED_HD inline PetscScalar RowUpdateValue(const RowUpdate &f, PetscInt64 i, PetscScalar s)
{
  PetscScalar t = f.add ? f.add[i] + f.sign * s : f.sign * s, o = 0;

  if (f.wl) t *= f.wl[i];
  if (f.u) o += f.alpha * f.u[i];
  if (f.v) o += f.beta * f.v[i];
  return (f.u || f.v) ? o + f.gamma * t : f.gamma * t;
}

/* The checks of every backend's Backend::spmv_update: exactly one matrix, an update, and an input apart from the output */
inline PetscErrorCode CheckRowUpdate(const CSRView *csr, const SELLView *sell, const RowUpdate *f, const PetscScalar *in, const PetscScalar *out)
{
  PetscFunctionBegin;
  PetscCheck(!csr != !sell, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONG, "A sparse product takes exactly one of a CSR and a SELL-P matrix");
  PetscCheck(f, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "A sparse product with a row update needs the update");
  const PetscInt nrows = csr ? csr->nrows : sell->nrows, ncols = csr ? csr->ncols : sell->ncols;
  PetscCheck(nrows >= 0 && ncols >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Negative matrix size %" PetscInt_FMT " x %" PetscInt_FMT, nrows, ncols);
  PetscCheck(!nrows || !ncols || in + ncols <= out || out + nrows <= in, PETSC_COMM_SELF, PETSC_ERR_ARG_IDN, "The input of a sparse product overlaps its output");
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Work counters (for tests asserting kernels and transfers per iteration) */
struct BackendCounters {
  PetscInt64 launches  = 0; /* kernel launches (host backend: fused loops run) */
  PetscInt64 d2h       = 0; /* device->host copies of partial sums or data     */
  PetscInt64 h2d       = 0; /* host->device copies of data                     */
  PetscInt64 h2d_bytes = 0; /* bytes of the copies of copy_to_backend (the matrices' and factors' data) */
  PetscInt64 graphs    = 0; /* captured chunks replayed (each also counts its kernels and copies above) */

  const char *chunk_form = nullptr; /* how the last chunk of iterations ran: "steps" (one operation per step),
                                       "cooperative grid", "grid as one cluster" or "resident" (persistent kernels) */
  PetscInt64 chunk_blocks = 0;      /* the thread blocks of its persistent kernel (0 for steps)           */

  PetscInt64 side_forks = 0; /* side scopes that moved work to the second stream (Backend::side_begin(1)) */
  PetscInt64 side_joins = 0; /* joins of the second stream into the first (Backend::sides_join)           */
};

/* The halo exchange of a parallel product as the backend queues it (Backend::exchange): send_buf (nsend
   entries, backend memory, packed by Backend::gather) goes to nsend_ranks ranks, entries
   [send_offsets[i], send_offsets[i+1]) to send_ranks[i]; recv_buf (nrecv entries) receives entries
   [recv_offsets[j], recv_offsets[j+1]) from recv_ranks[j].  Rank lists and offsets are host arrays.  */
struct HaloPlan {
  PetscInt           nsend = 0, nrecv = 0;
  PetscScalar       *send_buf = nullptr, *recv_buf = nullptr;
  PetscMPIInt        nsend_ranks = 0, nrecv_ranks = 0;
  const PetscMPIInt *send_ranks = nullptr, *recv_ranks = nullptr;
  const PetscInt    *send_offsets = nullptr, *recv_offsets = nullptr;
};

/* The parallel part of a chunk of iterations with several processes (src/mat/mpiaijfused.cxx): the
   chunk's products are out = wl .* (Ad (wr .* in) + Ao halo) as Backend::spmv_offdiag_dots describes
   them, the halo packed with gather (send_idx: the local entries sent), exchanged with exchange()
   and, when recv_idx is not NULL, put in halo order with scatter; every reduced value is summed over
   the processes with allreduce() before a coefficient reads it.  comm: Backend::comm_create's handle. */
struct ChunkParallel {
  const CSRView  *offdiag      = nullptr; /* the rows of Ao with entries (spmv_offdiag_dots' B) */
  const PetscInt *offdiag_rows = nullptr;
  const PetscInt *send_idx = nullptr, *recv_idx = nullptr;
  PetscScalar    *halo = nullptr;
  HaloPlan        plan;
  void           *comm = nullptr;
};

/* A chunk of CG iterations (Backend::cg_chunk): the local matrix (square, CSR or SELL-P: exactly one
   of csr and sell), the Jacobi weights w (NULL: no preconditioner), the vectors (n = the matrix's
   rows), and the slots of iterations 0..k at slots + j * CG_NSLOT (layout CGChunkSlot; slot 0 is read,
   slots 1..k are written), all in backend memory.  form: how the backend runs the whole chunk
   as one kernel (see Backend::cg_chunk).  b != NULL: the chunk starts the solve - its iteration 0 sets
   r = b - A x (guess: x is the initial guess) or x = 0, r = b (no guess), runs the update with alpha =
   beta = 0 (z = M^{-1} r, p = z) and q = A p, writing slot 0, and tests that iteration with ctl->start
   set (ChunkStartLimits(); with bnorm != CHUNK_BNORM_NONE, as ctl->bnorm, the start first writes that
   squared norm of b to ctl->bnormsq).                                                              */
struct CGChunkArgs {
  const CSRView       *csr   = nullptr;
  const SELLView      *sell  = nullptr;
  const PetscScalar   *w     = nullptr;
  const PetscScalar   *b     = nullptr;          /* the right-hand side of a chunk that starts the solve, else NULL */
  PetscBool            guess = PETSC_FALSE;      /* with b: x holds a nonzero initial guess                          */
  PetscInt             bnorm = CHUNK_BNORM_NONE; /* with b: the norm of b the start's limits take (ChunkBNorm)       */
  PetscScalar         *x = nullptr, *r = nullptr, *p = nullptr, *q = nullptr;
  PetscScalar         *slots = nullptr;
  ChunkControl        *ctl   = nullptr;
  PetscInt             k     = 0;
  ChunkForm            form  = ChunkForm::AUTO;
  PetscInt64           nnz   = -1;      /* the matrix's nonzeros when known (the CUDA backend picks its kernel with it) */
  const ChunkParallel *par   = nullptr; /* several processes: the halo and the global sums (no persistent kernel) */
};

/* A chunk of BiCGStab iterations (Backend::bcgs_chunk): the local matrix as in CGChunkArgs, the
   Jacobi weights of the operator Op = wl.*(A (wr.*in)) (at most one of wl, wr; wr also scales the
   update of x, as in bcgs_update), the vectors, and the slots of iterations 0..k at
   slots + j * BCGS_NSLOT (layout BCGSChunkSlot), all in backend memory.  b != NULL: the chunk starts
   the solve from a zero initial guess - x = 0, r = r* = p = wl.*b (b without wl), <r,r*> and <r,r>
   to slot 0 - and tests that start with ctl->start set (ChunkStartLimits()); r* is then an output. */
struct BCGSChunkArgs {
  const CSRView       *csr  = nullptr;
  const SELLView      *sell = nullptr;
  const PetscScalar   *wl = nullptr, *wr = nullptr, *b = nullptr;
  PetscScalar         *rstar = nullptr;
  PetscScalar         *x = nullptr, *r = nullptr, *p = nullptr, *s = nullptr, *Ap = nullptr, *As = nullptr;
  PetscScalar         *slots = nullptr;
  ChunkControl        *ctl   = nullptr;
  PetscInt             k     = 0;
  ChunkForm            form  = ChunkForm::AUTO;
  PetscInt64           nnz   = -1;      /* as in CGChunkArgs */
  const ChunkParallel *par   = nullptr; /* as in CGChunkArgs */
};

/* A chunk of simpler GMRES steps i0+1 .. i0+k of a restart cycle m (Backend::sgmres_chunk): the local
   matrix as in CGChunkArgs, the right Jacobi weights wr of the operator Op = A (wr.*in) (NULL: no
   preconditioner), the cycle's vectors indexed by step number - the basis V[1..i0+k] and the scaled
   residuals Z[1..i0+k+1] (V[0], Z[0] unused) - the cancellation threshold keep of
   sgmres_update_chained, and the slots of steps 0..k at slots + j * SGMRESChunkSlot(m), all in backend
   memory; i0 + k <= m.                                                                             */
struct SGMRESChunkArgs {
  const CSRView      *csr  = nullptr;
  const SELLView     *sell = nullptr;
  const PetscScalar  *wr   = nullptr;
  PetscScalar *const *V = nullptr, *const *Z = nullptr;
  PetscInt           i0 = 0, m = 0;
  PetscReal          keep  = 0;
  PetscScalar       *slots = nullptr;
  ChunkControl      *ctl   = nullptr;
  PetscInt           k     = 0;
  ChunkForm          form  = ChunkForm::AUTO;
  PetscInt64         nnz   = -1;      /* as in CGChunkArgs */
  const PetscScalar *b     = nullptr; /* the right-hand side of a chunk that starts the solve (i0 = 0, zero
                                         initial guess): <b,b> to slot 0, then SGMRESChunkStart() and
                                         Z[1] = b / rho before the steps; else NULL                    */
  const ChunkParallel *par = nullptr; /* as in CGChunkArgs (no start: b must be NULL) */
};

/* A sparse triangular factor for Backend::trsv_csr: n x n, its OFF-diagonal entries in CSR (columns
   ascending; backend memory).  Lower (upper = PETSC_FALSE): unit lower triangular, the entries are the
   strictly lower part, x_i = b_i - sum_{j<i} L_ij x_j, rows solved 0, 1, ..., n-1.  Upper: the entries
   are the strictly upper part and invdiag[i] = 1 / U_ii (the diagonal is stored inverted, so a row costs
   no division), x_i = invdiag_i (b_i - sum_{j>i} U_ij x_j), rows solved n-1, ..., 0.  schedule: the
   backend's analysis data, made by trsv_analysis, released by trsv_free.
   JACOBI does not solve exactly: with T = D (I + N) (D = I for lower, diag(invdiag)^{-1} for upper; N
   strictly triangular) it returns x_s of x_0 = D^{-1} b, x_{m+1} = D^{-1} (b - D N x_m), i.e. the first
   sweeps + 1 terms of the Neumann series of T^{-1}, which is exact once sweeps >= the levels - 1 (N is
   nilpotent).  For ICC(0) (U = diag(U) L^T) the two approximate solves are transposes of each other up to
   the diagonal, so the preconditioner stays symmetric.  CUSPARSE solves exactly with cuSPARSE's SpSV on
   the CUDA backend; the other backends solve it as LEVELS.                                              */
enum class TrsvAlgorithm { SYNCFREE, LEVELS, JACOBI, CUSPARSE };
struct TriangularView {
  PetscInt           n         = 0;
  PetscBool          upper     = PETSC_FALSE;
  const PetscInt    *rowptr    = nullptr; /* n+1 */
  const PetscInt    *colidx    = nullptr; /* rowptr[n] */
  const PetscScalar *vals      = nullptr; /* rowptr[n] */
  const PetscScalar *invdiag   = nullptr; /* upper: n entries; lower: unused */
  TrsvAlgorithm      algorithm = TrsvAlgorithm::SYNCFREE;
  PetscInt           sweeps    = 0; /* JACOBI: the sweeps after x_0 (>= 0) */
  void              *schedule  = nullptr;
};

/* The inverted diagonal blocks of a point-block Jacobi preconditioner (PCPBJACOBI, PCVPBJACOBI) for
   Backend::blockdiag_mult: nblocks dense blocks along the diagonal, block k covering rows
   [start_k, start_k + bs_k), each stored contiguously in COLUMN-major order as MatInvertBlockDiagonal() and
   MatInvertVariableBlockDiagonal() return them: entry (i, j) of block k at vals[offset_k + i + j bs_k].
   Constant size: bs > 0, rowptr = valptr = NULL (start_k = k bs, offset_k = k bs^2).  Variable sizes: bs = 0,
   rowptr[k] = start_k and valptr[k] = offset_k for k <= nblocks (rowptr[nblocks] = the rows, valptr[nblocks] =
   the stored values).  Arrays in the backend's memory.                                                        */
struct BlockDiagView {
  PetscInt           nblocks = 0;
  PetscInt           bs      = 0;
  const PetscInt    *rowptr  = nullptr; /* variable sizes: nblocks+1 row offsets */
  const PetscInt64  *valptr  = nullptr; /* variable sizes: nblocks+1 value offsets */
  const PetscScalar *vals    = nullptr;
};

/* A numeric ILU(0) factorization on the backend (Backend::ilu0_*; src/mat/fusedfactor.cxx): A's pattern (CSR with
   ascending columns, diag[i] = the position of row i's diagonal entry), the factors L U computed in place in lu
   (A's values in; out: l_ij left of the diagonal, u_ij from it on, as FactorNumeric()'s IKJ form), the first attempt
   of FactorNumeric() only (no restart with a shift; the pivot shift of MAT_SHIFT_INBLOCKS is applied).  Arrays in the
   backend's memory; schedule: the backend's analysis data (ilu0_analysis/ilu0_free).                             */
struct ILU0View {
  PetscInt        n           = 0;
  const PetscInt *rowptr      = nullptr; /* n+1 */
  const PetscInt *colidx      = nullptr; /* rowptr[n] */
  const PetscInt *diag        = nullptr; /* n */
  PetscScalar    *lu          = nullptr; /* rowptr[n] */
  int             shifttype   = 0;       /* MatFactorShiftType: the pivot test of ilu0_numeric */
  PetscReal       zeropivot   = 0;
  PetscReal       shiftamount = 0; /* MAT_SHIFT_INBLOCKS */
  void           *schedule    = nullptr;
};

/* A sparse matrix product C = A B on the backend (Backend::spgemm_*; src/mat/aijfused_product.cxx): A (nrows x k) and
   B (k x ncols) in CSR with ascending columns in each row and their nnz set, arrays in the backend's memory, which must
   stay the same arrays from spgemm_symbolic to spgemm_free (their values may change).  C's arrays (backend memory)
   belong to the product: spgemm_symbolic makes C's pattern (rowptr: nrows+1 entries, colidx: nnz; the columns of a
   row in any order) and allocates vals, spgemm_numeric computes C's values for the current values of A and B, as often
   as needed, without waiting for the device; spgemm_free releases C's arrays and the backend's analysis (`plan`), also
   after a failed spgemm_symbolic.                                                                                   */
struct SpGEMMView {
  CSRView      A, B;
  PetscInt64   nnz    = 0;       /* C's stored entries */
  PetscInt    *rowptr = nullptr; /* C, backend memory */
  PetscInt    *colidx = nullptr;
  PetscScalar *vals   = nullptr;
  void        *plan   = nullptr;
};

/* The level schedule of a triangular pattern (host arrays, the CSR of a TriangularView; upper as
   there): level(i) = 1 + the largest level of the rows row i depends on (0 without dependencies);
   rows[levelptr[l] .. levelptr[l+1]) are the rows of level l in ascending order.  levelptr has room
   for n+1 entries, rows for n; *nlevels is 0 for n == 0.  (src/backend/trsv_levels.cxx)          */
PetscErrorCode TriangularLevels(PetscInt n, PetscBool upper, const PetscInt *rowptr, const PetscInt *colidx, PetscInt *nlevels, PetscInt *levelptr, PetscInt *rows);

struct Backend {
  const char *name; /* "host", "cuda" or "kokkos" */

  /* Memory in the backend's space.  malloc_bytes fails with a PETSc error naming the bytes
     requested (PETSC_ERR_MEM); copies to and from the host are complete when the call returns.
     copy_within copies between two arrays of the backend's memory, in order with the work queued
     (what is queued after it sees the copy), without waiting for the device.                */
  PetscErrorCode (*malloc_bytes)(size_t bytes, void **ptr);
  PetscErrorCode (*free_bytes)(void *ptr);
  PetscErrorCode (*copy_to_backend)(void *dst, const void *hostsrc, size_t bytes);
  PetscErrorCode (*copy_to_host)(void *hostdst, const void *src, size_t bytes);
  PetscErrorCode (*copy_within)(void *dst, const void *src, size_t bytes);

  BackendCounters *counters;

  /* CG update (seed 000 Alg. 2 lines 10-12, preconditioned form, see src/ksp/fusedcg.cxx):
       x += a p;  r -= a q;
       z := w .* r (w != NULL, z unused) | z -= a u (z != NULL) | z := r (both NULL);
       p := z + b p;
     dots[0] = <r,z>, dots[1] = <r,r>, dots[2] = <z,z>                                    */
  PetscErrorCode (*cg_update)(PetscInt n, PetscScalar a, PetscScalar b, PetscScalar *x, PetscScalar *r, PetscScalar *z, PetscScalar *p, const PetscScalar *q, const PetscScalar *u, const PetscScalar *w, PetscScalar dots[3]);

  /* out = wl .* (A (wr .* in)) for a CSR matrix, fused with ndots <= FUSED_MAX_DOTS dot
     products of `out` (see DotSpec).  wl, wr may be NULL.  in has A.ncols entries.         */
  PetscErrorCode (*spmv_dots)(const CSRView *A, const PetscScalar *wl, const PetscScalar *wr, const PetscScalar *in, PetscScalar *out, int ndots, const DotSpec *specs, PetscScalar *dots);

  /* spmv_dots for a SELL-P matrix */
  PetscErrorCode (*spmv_sell_dots)(const SELLView *A, const PetscScalar *wl, const PetscScalar *wr, const PetscScalar *in, PetscScalar *out, int ndots, const DotSpec *specs, PetscScalar *dots);

  /* out = the RowUpdate f of A in (one kernel, the body of spmv_dots and spmv_sell_dots), for exactly one of csr and
     sell (the other NULL).  in has the matrix's ncols entries and must not overlap out; f's vectors may be out itself
     (each row reads its entries before it stores out_i).                                                           */
  PetscErrorCode (*spmv_update)(const CSRView *csr, const SELLView *sell, const RowUpdate *f, const PetscScalar *in, PetscScalar *out);

  /* The diagonal of a matrix from the positions of its diagonal entries in its value array
     (pos[i] < 0: no stored diagonal entry in row i):  get: d[i] = vals[pos[i]] (0 if none);
     shift: vals[pos[i]] += a for every row (every pos[i] must be >= 0)                         */
  PetscErrorCode (*diag_get)(PetscInt n, const PetscInt64 *pos, const PetscScalar *vals, PetscScalar *d);
  PetscErrorCode (*diag_shift)(PetscInt n, const PetscInt64 *pos, PetscScalar a, PetscScalar *vals);

  /* SELL-P arrays from CSR arrays, all in the backend's memory (S: nrows, threads and sliceptr; see SELLView): every
     slot e of every lane i of every slice receives the CSR entry (colidx[rowptr[i] + e], vals[rowptr[i] + e]), or
     column -1 and value 0 past the row's length (the padding, and every slot of the lanes past the last row).
     colidx and scolidx, or vals and svals, may be NULL: the structure, or the values, alone.                       */
  PetscErrorCode (*sell_from_csr)(const SELLView *S, const PetscInt *rowptr, const PetscInt *colidx, const PetscScalar *vals, PetscInt *scolidx, PetscScalar *svals);
  /* The inverse: the CSR arrays colidx and vals (either may be NULL) of the rows of S (its colidx and vals read),
     whose CSR row offsets are rowptr                                                                          */
  PetscErrorCode (*csr_from_sell)(const SELLView *S, const PetscInt *rowptr, PetscInt *colidx, PetscScalar *vals);

  /* The dot products of spmv_dots alone, for an `out` computed elsewhere (MPI or matrix-free
     operators): dots[k] as in spmv_dots with `in` the operator's input.                     */
  PetscErrorCode (*dots)(PetscInt n, const PetscScalar *in, const PetscScalar *out, int ndots, const DotSpec *specs, PetscScalar *dots);

  /* y := x + a v;  dots[0] = <y,y>            (BiCGStab: s = r - alpha A p)              */
  PetscErrorCode (*waxpy_dot)(PetscInt n, PetscScalar a, const PetscScalar *x, const PetscScalar *v, PetscScalar *y, PetscScalar dots[1]);

  /* BiCGStab update (seed 000 Alg. 4 lines 15-20):
       x += alpha (wr .* p) + omega (wr .* s);  r := s - omega As;  p := r + beta (p - omega Ap);
     dots[0] = <r, rstar>, dots[1] = <r,r>, and dots[2] = <r, rhat> when ndots == 3 (else 2).
     wr may be NULL (no right preconditioner).                                              */
  PetscErrorCode (*bcgs_update)(PetscInt n, PetscScalar alpha, PetscScalar omega, PetscScalar beta, const PetscScalar *wr, PetscScalar *x, PetscScalar *r, PetscScalar *p, const PetscScalar *s, const PetscScalar *Ap, const PetscScalar *As,
                                const PetscScalar *rstar, const PetscScalar *rhat, int ndots, PetscScalar *dots);

  /* Multi-dot: dots[j] = <V[j], y> for j < nv, then dots[nv] = <y,y> if selfdot.           */
  PetscErrorCode (*mdot)(PetscInt n, PetscInt nv, const PetscScalar *const *V, const PetscScalar *y, PetscBool selfdot, PetscScalar *dots);

  /* y := scale (y - sum_j coef[j] V[j]);  if dot != NULL, *dot = <y, dotvec> (new y; dotvec NULL: <y,y>) */
  PetscErrorCode (*maxpy_scale)(PetscInt n, PetscInt nv, const PetscScalar *coef, const PetscScalar *const *V, PetscScalar *y, PetscScalar scale, const PetscScalar *dotvec, PetscScalar *dot);

  /* Block multi-dot of s-step methods (CA-GMRES' CholQR), a basis V[0..nv) and a block W[0..nw), ld = nv + nw:
     for each column j < nw, dots[j*ld + i] = <V[i], W[j]> for i < nv, dots[j*ld + nv + k] = <W[k], W[j]> for
     k <= j and 0 for k > j: nw * ld results, honouring a deferring batch and the reduce target as mdot does.
     Each dot product is summed in mdot's chunks (FUSED_MDOT_BLOCKS), so the results agree with nw calls of
     mdot to rounding; the vectors are read once (CUDA: V once per launch, see cuda_block.cu).  1 <= nw <= 64. */
  PetscErrorCode (*block_mdot)(PetscInt n, PetscInt nv, const PetscScalar *const *V, PetscInt nw, const PetscScalar *const *W, PetscScalar *dots);

  /* Block multi-axpy (the back substitution W := scale (W - V C) R^{-1} of a block QR): for j = 0 .. nw-1 in order,
     W[j] := scale[j] (W[j] - sum_{i<nv} coef[j*ld + i] V[i] - sum_{k<j} coef[j*ld + nv + k] W[k]) with ld = nv + nw
     and W[k], k < j, already updated: nw calls of maxpy_scale in one pass over V (coef and scale on the host, each
     entry taking its terms in that order).  1 <= nw <= 64.                                                       */
  PetscErrorCode (*block_maxpy)(PetscInt n, PetscInt nv, const PetscScalar *const *V, PetscInt nw, PetscScalar *const *W, const PetscScalar *coef, const PetscScalar *scale);

  /* Residual-based simpler GMRES update:  w := scale (w - sum_j coef[j] V[j])  (the new basis
     vector), then znew := zold - eta w  (the next scaled residual);  dots[0] = <znew, znew>.  */
  PetscErrorCode (*sgmres_update)(PetscInt n, PetscInt nv, const PetscScalar *coef, const PetscScalar *const *V, PetscScalar *w, PetscScalar scale, PetscScalar eta, const PetscScalar *zold, PetscScalar *znew, PetscScalar dots[1]);

  /* Deferred second stages.  Between batch_begin() and batch_end(), an operation called while
     batch_defer(PETSC_TRUE) is in effect may return before its dots[] are filled: batch_end()
     fills all of them after ONE device->host copy and ONE wait.  Operations called with
     batch_defer(PETSC_FALSE) inside a batch complete as usual.  Batches nest: a batch_begin()
     inside an open batch starts an inner one, whose batch_end() completes only the operations
     deferred since then (those of the outer batch stay pending); batch_abandon() closes the
     innermost batch without filling its dots[] (after an error: they may be gone), leaving the
     batches around it as they were.  The host backend completes everything at once (no-ops).  */
  PetscErrorCode (*batch_begin)(void);
  PetscErrorCode (*batch_defer)(PetscBool);
  PetscErrorCode (*batch_end)(void);
  PetscErrorCode (*batch_abandon)(void);

  /* Halo exchange of parallel matrices (src/mat/mpiaijfused.cxx).  An MPI rank's product is
     out = wl .* (Ad (wr .* in) + Ao halo) with Ad the diagonal block, Ao the off-diagonal block
     (columns compressed to the halo entries) and halo the entries of wr .* in that other ranks own.

     Pack:   buf[k] = (w ? w[idx[k]] : 1) * x[idx[k]] for k < n
     Unpack: y[idx[k]] = buf[k] for k < n (distinct idx[k]); with `add` (the reverse exchange of a
             transposed product): y[idx[k]] += buf[k], idx may repeat                             */
  PetscErrorCode (*gather)(PetscInt n, const PetscInt *idx, const PetscScalar *w, const PetscScalar *x, PetscScalar *buf);
  PetscErrorCode (*scatter)(PetscInt n, const PetscInt *idx, const PetscScalar *buf, PetscBool add, PetscScalar *y);

  /* The off-diagonal block of an MPI product, on the rows that have off-diagonal entries only:
     B holds those rows, in order (B->nrows of them, B->ncols halo entries), rows[k] is the local
     row of B's row k.  On entry out and dots hold the diagonal block's product wl .* (A_d (wr .* in))
     and its dot products (DotSpec as in spmv_dots, `in` the operator's input); for each such row i
     out[i] += wl[i] (B_k halo), and dots[d] += the change of dot d (its terms at the new out[i]
     minus those at the old), so they become the dot products of the whole product.  Deferred
     inside a batch like spmv_dots: the change is then added by batch_end().  With a reduce target
     (reduce_target) the changes are ADDED to its slot[0..ndots) in backend memory (which holds the
     diagonal block's results) and nothing at all is done once its stop flag is set.             */
  PetscErrorCode (*spmv_offdiag_dots)(const CSRView *B, const PetscInt *rows, const PetscScalar *wl, const PetscScalar *halo, const PetscScalar *in, PetscScalar *out, int ndots, const DotSpec *specs, PetscScalar *dots);

  /* Staging buffers of the exchange: host memory the backend copies to and from asynchronously
     (pinned on the device backend).                                                            */
  PetscErrorCode (*malloc_host)(size_t bytes, void **ptr);
  PetscErrorCode (*free_host)(void *ptr);

  /* Asynchronous copies, queued after the kernels already queued: copy_to_host_async is complete
     (and the kernels before it too) once fence_wait() returns after a later fence_record();
     operations queued after copy_to_backend_async see the data, and hostsrc must stay unchanged
     until the host has waited for a fence recorded after the copy.  fence_record() marks the
     work queued so far, fence_wait() blocks the host until the last mark is reached, leaving the
     work queued after it running.  The host backend copies at once; its fences are no-ops.    */
  PetscErrorCode (*copy_to_host_async)(void *hostdst, const void *src, size_t bytes);
  PetscErrorCode (*copy_to_backend_async)(void *dst, const void *hostsrc, size_t bytes);
  PetscErrorCode (*fence_record)(void);
  PetscErrorCode (*fence_wait)(void);

  /* Device-resident scalars (chunks of iterations without a host round trip, src/ksp/fusedchunk.cxx).
     reduce_target(slot, stop) makes the NEXT reducing operation - spmv_dots, spmv_sell_dots, dots,
     cg_update_chained or spmv_offdiag_dots (which adds) - write its ndots results to slot[0..ndots) in backend memory instead of
     dots[] (dots may then be NULL), and, when stop is not NULL, do nothing at all (no output, no
     result) if *stop >= 0 when it runs.  Nothing is copied to the host and nothing waits.
     reduce_target(NULL, NULL) drops a target not used yet (after an error).                       */
  PetscErrorCode (*reduce_target)(PetscScalar *slot, const PetscInt *stop);

  /* The CG update of chunk iteration j >= 1 with its coefficients computed where it runs: from
     prev[0..5) = <r,z>, <r,r>, <z,z>, <p,Ap>, <Ap,M^{-1}Ap> of iteration j-1 (backend memory),
     alpha and beta by CGCoefficients().  If ctl->stopped >= 0 it does nothing; if the coefficients
     fail (breakdown, indefinite, NaN) or the norm of iteration j-1 stops the chunk
     (ChunkNormStops, with the limits of ChunkStartLimits() from slot 0 = prev - (j-1) CG_NSLOT), it
     sets ctl->stopped = j - 1 and does nothing; otherwise it runs cg_update (same arguments) with the
     results going to the reduce target, which must be set.  A stop sets ctl->stage = 0.  j = 0 (the
     iteration of a chunk that starts the solve, prev unused): cg_update with a = b = 0, no test.   */
  PetscErrorCode (*cg_update_chained)(PetscInt n, const PetscScalar *prev, ChunkControl *ctl, PetscInt j, PetscScalar *x, PetscScalar *r, PetscScalar *z, PetscScalar *p, const PetscScalar *q, const PetscScalar *u, const PetscScalar *w);

  /* The BiCGStab steps of chunk iteration j >= 1 with their coefficients computed where they run,
     from the slots prev (iteration j-1) and cur (iteration j) laid out as BCGSChunkSlot (backend
     memory).  waxpy_dot_chained: y := x - alpha v, <y,y> to the reduce target, alpha by
     BCGSChunkAlpha() (a failure, or a stop of the norm of iteration j-1, sets ctl->stopped = j-1,
     ctl->stage = 0).  bcgs_update_chained: bcgs_update (no rhat) with alpha, omega, beta from
     BCGSChunkOmegaBeta() (a failure sets ctl->stopped = j-1, ctl->stage = 1), <r,r*>, <r,r> to the
     reduce target.  Both do nothing once ctl->stopped >= 0.                                      */
  PetscErrorCode (*waxpy_dot_chained)(PetscInt n, const PetscScalar *prev, const PetscScalar *cur, ChunkControl *ctl, PetscInt j, const PetscScalar *x, const PetscScalar *v, PetscScalar *y);
  PetscErrorCode (*bcgs_update_chained)(PetscInt n, const PetscScalar *prev, const PetscScalar *cur, ChunkControl *ctl, PetscInt j, const PetscScalar *wr, PetscScalar *x, PetscScalar *r, PetscScalar *p, const PetscScalar *s, const PetscScalar *Ap,
                                        const PetscScalar *As, const PetscScalar *rstar);

  /* The simpler GMRES update of step i (chunk iteration j, restart m) with its coefficients where it
     runs: SGMRESChunkStep() on the slots prev and cur (layout of SGMRESChunkSlot()); on -1 it runs
     sgmres_update with coef = cur[0..i-1), scale 1/h, eta, writes res^2 to cur[m+2] and <znew,znew>
     to the reduce target; on 0 or 1 it sets ctl->stopped = j-1 and ctl->stage to that value.  The
     i-1 vectors V fit one launch (at most 240).  mdot honours the reduce target too.            */
  PetscErrorCode (*sgmres_update_chained)(PetscInt n, PetscInt i, PetscInt m, PetscReal keep, const PetscScalar *const *V, PetscScalar *w, const PetscScalar *zold, PetscScalar *znew, const PetscScalar *prev, PetscScalar *cur, ChunkControl *ctl,
                                          PetscInt j);

  /* A whole chunk of CG iterations j = 1..k (see CGChunkArgs): for each j, cg_update_chained (z and u
     NULL) with its results to slot j, then q = A p (spmv_dots or spmv_sell_dots) with <p,q> and
     <q, w.*q> (<q,q> without w) to slot j + CG_PQ, skipped once ctl->stopped >= 0 - the operations
     CGChunkSteps() issues, which is how the host backend runs it.  With args->form AUTO the CUDA
     backend runs the chunk as ONE kernel: the resident kernel (one thread block, or one cluster of up
     to FUSED_RESIDENT_CHUNK_BLOCKS, of at most FUSED_BLOCK_CHUNK_ROWS rows each; tuning.resident_block_nnz
     entries of args->nnz per FUSED_BLOCK_CHUNK_ROWS rows) when the matrix fits it and the device can hold the cluster, else a persistent
     grid (cooperative, or one thread block cluster) whose blocks meet at two grid barriers per
     iteration (no launch per step; the scalars never leave the device), on a grid that fits the
     device at once; otherwise, and for an empty matrix, it issues CGChunkSteps().                 */
  PetscErrorCode (*cg_chunk)(const CGChunkArgs *args);

  /* A whole chunk of BiCGStab iterations j = 1..k (see BCGSChunkArgs): for each j, Ap = Op p with
     <Ap,r*> to slot j + BCGS_APR, waxpy_dot_chained (s = r - alpha Ap), As = Op s with <As,s>, <As,As>,
     <As,r*> to slot j + BCGS_ASS, bcgs_update_chained - the operations BCGSChunkSteps() issues, each
     skipped once ctl->stopped >= 0, which is how the host backend runs it.  With args->form AUTO the
     CUDA backend runs it as ONE kernel: the resident kernel when the matrix fits it (as for cg_chunk),
     else a persistent grid with three grid barriers per iteration (after Ap, after As, after the
     update); the entries of s that the rows of As need are computed from r and Ap where they are
     needed, so no barrier waits for s.  That costs memory traffic, so above
     tuning.bcgs_persistent_nnz matrix entries the CUDA backend issues the steps (ChunkForm for the other forms).                              */
  PetscErrorCode (*bcgs_chunk)(const BCGSChunkArgs *args);

  /* A whole chunk of simpler GMRES steps i = i0+j, j = 1..k (see SGMRESChunkArgs): for each j,
     V[i] = Op Z[i] (spmv_dots or spmv_sell_dots, no dot products), mdot of V[1..i-1], Z[i] and V[i]
     itself against V[i] to slot j (skipped once ctl->stopped >= 0), sgmres_update_chained with
     <Z[i+1],Z[i+1]> to slot j + m + 1 - the operations SGMRESChunkSteps() issues, which is how the host
     backend runs it.  With args->form AUTO, m <= FUSED_SGMRES_PERSISTENT_RESTART and at most
     tuning.sgmres_persistent_rows rows the CUDA backend runs it as ONE persistent kernel with two grid
     barriers per step (after the multi-dot's partials, after the update), keeping each block's rows
     of the basis in shared memory when they fit - for m <= 30 and at most 16K rows the resident
     kernel of one block or one cluster; the only difference is that a stopped kernel computes no
     more V[i], where the steps still run the products of the steps after the stop (their results are
     not used).  With args->b the chunk first computes the solve's start (see SGMRESChunkArgs).     */
  PetscErrorCode (*sgmres_chunk)(const SGMRESChunkArgs *args);

  /* Captured chunks.  graph_begin() starts recording the operations queued next instead of running
     them (*capturing = PETSC_FALSE on a backend that cannot: they then run as usual); graph_end()
     stops and turns the record into *graph (instantiated, or an existing *graph updated in place);
     graph_abort() drops a record after an error.  graph_launch() replays *graph on the stream, or
     returns *launched = PETSC_FALSE without doing anything when a buffer the record uses has moved
     since (capture again).  Operations recorded must not wait for the device nor allocate.     */
  PetscErrorCode (*graph_begin)(PetscBool *capturing);
  PetscErrorCode (*graph_end)(void **graph);
  PetscErrorCode (*graph_abort)(void);
  PetscErrorCode (*graph_launch)(void *graph, PetscBool *launched);
  PetscErrorCode (*graph_destroy)(void **graph);

  /* Sparse triangular solves (ILU(0)/ICC(0) preconditioners, src/mat/fusedfactor.cxx).  trsv_analysis
     builds what T->algorithm needs before the first solve and sets T->schedule: the level schedule of
     TriangularLevels() (host arrays nlevels, levelptr, rows; the backend keeps what it needs) for
     LEVELS, the row-ready flags for SYNCFREE, a work vector for JACOBI; it may allocate and copy, and is
     called again (after trsv_free) for a new pattern.  CUDA CUSPARSE needs no level schedule (nlevels 0,
     NULL arrays will do) and its analysis (a copy of T with its diagonal, cuSPARSE's analysis of it) reads
     T's values: it is made again (trsv_free, trsv_analysis) after they change; the other algorithms' read
     the pattern only.  trsv_csr solves T x = b (b, x distinct, backend memory; JACOBI: approximately, see
     TriangularView) on the backend's stream, without waiting for the device: CUDA SYNCFREE is ONE kernel
     (one warp per row, rows handed out in solve order by an atomic ticket, a row waits for the ready flags
     of the rows it depends on), CUDA LEVELS one kernel per level replayed as one CUDA graph (made by the
     analysis), JACOBI one kernel per sweep, CUSPARSE one cusparseSpSV_solve.  Not recordable in a graph (a
     solve's generation number is a kernel argument).  The host backend solves row by row in solve order
     for SYNCFREE, LEVELS and CUSPARSE (the reference) and sweeps for JACOBI.  trsv_free releases
     T->schedule and sets it to NULL.                                                                    */
  PetscErrorCode (*trsv_analysis)(TriangularView *T, PetscInt nlevels, const PetscInt *levelptr, const PetscInt *rows);
  PetscErrorCode (*trsv_csr)(const TriangularView *T, const PetscScalar *b, PetscScalar *x);
  PetscErrorCode (*trsv_free)(TriangularView *T);

  /* Point-block Jacobi (src/pc/pbjacobi.cxx): y = D x, or y = D^T x with transpose, for the block diagonal D of
     a BlockDiagView (x, y distinct, backend memory, D's rows long).  One kernel; CUDA: one thread per block.    */
  PetscErrorCode (*blockdiag_mult)(const BlockDiagView *D, PetscBool transpose, const PetscScalar *x, PetscScalar *y);

  /* PETSC_TRUE when the backend's memory is host memory (the host backend, Kokkos on OpenMP or Serial):
     the fused types then use PETSc's host arrays as the backend's (no mirror, no copies)             */
  PetscBool host_memory = PETSC_FALSE;

  /* Ordering with a stream of another library on the backend's device (PETSc's VECCUDA vectors, whose work runs on
     the stream of PETSc's current device context; `foreign` is that stream's handle, a cudaStream_t, NULL being
     the legacy default stream): after wait_foreign(foreign), work queued on the backend waits for the work queued
     on `foreign` so far; after foreign_wait(foreign), work queued on `foreign` waits for the backend's work queued
     so far.  Neither blocks the host.  NULL members: the backend cannot address another library's device memory. */
  PetscErrorCode (*wait_foreign)(void *foreign) = nullptr;
  PetscErrorCode (*foreign_wait)(void *foreign) = nullptr;

  /* Numeric ILU(0) on the backend (NULL: the factorization runs on the host).  ilu0_analysis keeps what the
     factorization needs (the level schedule of L: TriangularLevels() of the entries left of the diagonal, host
     arrays as there); ilu0_numeric factors F->lu in place row by row in that schedule (CUDA: one kernel per level,
     one warp per row, replayed as a graph), then tests each pivot as FactorNumeric()'s first attempt does for
     F->shifttype (none: |u_ii| <= zeropivot; nonzero: |u_ii| <= zeropivot rs; positive_definite: Re u_ii <=
     zeropivot rs; rs the absolute sum of the row's factored off-diagonal entries) and splits the factors into L
     (strictly lower values) and U (strictly upper values, inverted diagonal) in the backend's memory (their rowptr
     and colidx as made from A's pattern).  *failrow: the first row whose pivot fails the test, or -1; the caller
     then factors on the host (shifts, errors).  *theta: the largest absolute row sum of the Jacobi iteration
     matrices of L and U (TriangularView's D^{-1} N).  Waits for the device once (the results).                  */
  PetscErrorCode (*ilu0_analysis)(ILU0View *F, PetscInt nlevels, const PetscInt *levelptr, const PetscInt *rows)                           = nullptr;
  PetscErrorCode (*ilu0_numeric)(const ILU0View *F, const TriangularView *L, const TriangularView *U, PetscInt *failrow, PetscReal *theta) = nullptr;
  PetscErrorCode (*ilu0_free)(ILU0View *F)                                                                                                 = nullptr;

  /* Global sums and halo exchanges queued on the backend, for chunks of iterations with several processes
     (ChunkParallel).  comm_create makes the backend's communicator over the processes of `comm` (collective;
     host memory: a duplicate of comm, sums and messages through MPI as the operation is called; CUDA: an NCCL
     communicator, the operations queued on the backend's stream and recordable in a graph); *handle NULL with
     *why set (a static string) when the backend cannot.  allreduce sums buf[0..n) (backend memory) over the
     processes in place; exchange sends and receives the entries of a HaloPlan.  Every process queues the same
     sequence of them.  NULL members: no chunks with several processes.                                        */
  PetscErrorCode (*comm_create)(MPI_Comm comm, void **handle, const char **why) = nullptr;
  PetscErrorCode (*comm_destroy)(void **handle)                                 = nullptr;
  PetscErrorCode (*allreduce)(void *handle, PetscScalar *buf, PetscInt n)       = nullptr;
  PetscErrorCode (*exchange)(void *handle, const HaloPlan *plan)                = nullptr;

  /* Sparse matrix products (SpGEMMView); NULL members: PETSc's host products.  The host backend's are the reference
     (a row-by-row product with a dense accumulator, columns ascending), used where its memory is mirrored
     (-fused_debug_mirror); CUDA: cuSPARSE's SpGEMM with reuse of the analysis (cusparseSpGEMMreuse_*).          */
  PetscErrorCode (*spgemm_symbolic)(SpGEMMView *G) = nullptr;
  PetscErrorCode (*spgemm_numeric)(SpGEMMView *G)  = nullptr;
  PetscErrorCode (*spgemm_free)(SpGEMMView *G)     = nullptr;

  /* T = A^T of a CSR matrix (A.nnz known), every array in the backend's memory: trowptr (A.ncols + 1 entries), tcolidx
     and tvals (A.nnz each); row j of T holds column j of A in ascending row order.  The host backend's (a counting
     sort) is the reference, and makes the transposes of backends without one (NULL: kokkos) on host copies.       */
  PetscErrorCode (*csr_transpose)(const CSRView *A, PetscInt *trowptr, PetscInt *tcolidx, PetscScalar *tvals) = nullptr;

  /* Two streams (KSPFUSEDBICG's A and A^T sides, seed 004).  Between side_begin(side) and its side_end(), the work
     the backend queues goes to stream `side`: 0 the backend's stream, 1 a second one; every operation of the contract
     (kernels, copies, reductions and their deferred results, graph replays, triangular solves, the foreign-stream
     orderings, which then concern that stream) follows it.  Opening side 1 forks: stream 1 first waits for the work
     queued on stream 0 so far.  sides_join() makes the work queued on stream 0 from then on wait for the work queued
     on stream 1 so far.  Neither waits on the host (CUDA: events); the work of the two streams between a fork and the
     join may run at the same time, so it must not touch the same data (the backend's own buffers it keeps apart).
     Side scopes nest: one opened inside another, or while a graph is recorded, keeps the stream in use (a solve
     nested in a side runs in order on that side's stream, a record stays on one stream), and sides_join() inside a
     side scope does nothing.  batch_end() outside any side scope first joins side 1's work not yet joined, so the
     one copy of a batch's results runs on stream 0 after the work of both sides.  The counters count the forks and
     the joins.  After an error inside a side scope the caller closes it (side_end) and joins: the backend is then on
     stream 0, with nothing of stream 1 left unjoined.  NULL members: the backend has one stream (host, kokkos), the
     work of both sides runs in order.                                                                           */
  PetscErrorCode (*side_begin)(int side) = nullptr;
  PetscErrorCode (*side_end)(void)       = nullptr;
  PetscErrorCode (*sides_join)(void)     = nullptr;
};

/* Backend::cg_chunk as the operations of its steps on `be` and `blas` (reduce_target, cg_update_chained
   and the sparse product, 2k calls, and for a chunk that starts the solve r = b - A x or x = 0, r = b,
   p = q = 0, the norm of b and its iteration 0): the host backend's cg_chunk, the CUDA backend's
   without a persistent kernel                                                                       */
PetscErrorCode CGChunkSteps(const Backend *be, const BlasKernels *blas, const CGChunkArgs *args);
/* Backend::bcgs_chunk as the operations of its steps on `be` and `blas` (4k calls, and for a chunk that
   starts the solve x = 0, r = r* = p = wl.*b and the dot products of r)                            */
PetscErrorCode BCGSChunkSteps(const Backend *be, const BlasKernels *blas, const BCGSChunkArgs *args);
/* Backend::sgmres_chunk as the operations of its steps on `be` (3k calls) */
PetscErrorCode SGMRESChunkSteps(const Backend *be, const SGMRESChunkArgs *args);
/* Backend::sgmres_chunk of a backend in host memory: the start of args->b on the host, then SGMRESChunkSteps() */
PetscErrorCode SGMRESChunkHostMemory(const Backend *be, const SGMRESChunkArgs *args);

/* Backend::comm_create, comm_destroy, allreduce and exchange through MPI on host memory (src/backend/comm_mpi.cxx):
   each completes before it returns, so a backend whose kernels may still run fences before calling them       */
PetscErrorCode MPICommCreate(MPI_Comm comm, void **handle, const char **why);
PetscErrorCode MPICommDestroy(void **handle);
PetscErrorCode MPICommAllreduce(void *handle, PetscScalar *buf, PetscInt n);
PetscErrorCode MPICommExchange(void *handle, const HaloPlan *plan);

/* The backends compiled into the library */
const Backend *HostBackend();
/* The host backend with memory of its own, copied like a device's (-fused_debug_mirror: tests the mirrors without a GPU) */
const Backend *HostMirroredBackend();
#if defined(FUSEDKSP_HAVE_KOKKOS)
const Backend *KokkosBackend();
/* Starts Kokkos with `threads` threads (0: its default) and, built for a GPU, on device `device` (-1: Kokkos's choice),
   once; finalized at PetscFinalize() (kokkos_memory.cxx) */
PetscErrorCode KokkosBackendInitialize(PetscInt threads, PetscInt device);
PetscInt       KokkosBackendThreads(void);
const char    *KokkosBackendSpaceName(void); /* the Kokkos execution space, e.g. "OpenMP", "Cuda" */
PetscBool      KokkosBackendCanStart(void);  /* false once Kokkos was finalized (it cannot start again) */
#endif
#if defined(FUSEDKSP_HAVE_CUDA)
const Backend *CUDABackend(); /* NULL when no usable GPU is present */
/* Two empty kernels + 1 KB device->host copy + sync (min, median over reps, us); copy bandwidth (GB/s) */
PetscErrorCode CUDAMeasureFloor(PetscInt reps, PetscReal *latency_min_us, PetscReal *latency_median_us, PetscReal *copy_bandwidth_GBs);
/* its x (two empty kernels) + 1 KB device->host copy recorded as one graph: replay + sync, per iteration (min, median, us) */
PetscErrorCode CUDAMeasureGraphFloor(PetscInt reps, PetscInt its, PetscReal *min_us, PetscReal *median_us);

/* Rank -> GPU (cuda_device.cu).  CUDASelectDevice() binds the process to device `requested`, or with
   requested == -1 to the node-local rank (MPI_COMM_TYPE_SHARED) modulo the node's device count;
   collective on comm; called before the backend creates its stream or allocates.  Ranks of a node
   sharing a GPU are counted by the device's UUID (CUDA_VISIBLE_DEVICES may renumber per rank).  */
struct CUDADeviceInfo {
  int  id                = -1; /* the device of this rank; -1 before CUDASelectDevice()          */
  char name[256]         = ""; /* cudaDeviceProp::name                                           */
  int  sharing_ranks     = 0;  /* ranks of this node on this rank's GPU, this one included       */
  int  max_sharing_ranks = 0;  /* the most ranks on one GPU of one node, over the communicator   */
  int  max_sharing_id    = -1; /* the device id of that GPU (on its node)                        */
};
PetscErrorCode CUDASelectDevice(MPI_Comm comm, PetscInt requested);
PetscErrorCode CUDAGetDeviceInfo(CUDADeviceInfo *info);
#endif

} // namespace fusedksp
