/* CUDA backend: a chunk of BiCGStab iterations as one persistent kernel (Backend::bcgs_chunk) */
#include "backend/cuda/cuda_persistent.cuh"
#include "backend/iteration.hpp"

namespace fusedksp
{
namespace cuda
{

/* The load policy of As = Op s: entry c of s from r and Ap (read from L2: other blocks wrote them) */
struct LoadS {
  PetscScalar                            alpha;
  const PetscScalar                     *r, *Ap;
  __device__ __forceinline__ PetscScalar operator()(const PetscScalar *, PetscInt64 c) const
  {
    return BCGSEntryS(alpha, __ldcg(r + c), __ldcg(Ap + c));
  }
};

/* The arguments of the kernel (see BCGSChunkArgs), its rows per block and its partials: per block
   3 values (<r,r*>, <r,r> of the update, <Ap,r*>) and 4 (<s,s>, <As,s>, <As,As>, <As,r*>)        */
struct BCGSChunkKernelArgs {
  PetscInt           n, chunk, k;
  size_t             matrix_bytes; /* the resident kernel's shared memory for its matrix rows */
  const PetscScalar *wl, *wr, *b;  /* b: the right-hand side of a chunk that starts the solve, else NULL */
  PetscScalar       *rstar, *x, *r, *p, *s, *Ap, *As, *slots, *partials;
  ChunkControl      *ctl;
};

/* After A of chunk iteration j, from its sums (<r,r*>, <r,r> of the previous update when j > 1 or of
   the start the chunk computed, then <Ap,r*>): prev and cur completed, the slots stored when `store`,
   ctl's limits from the start (j = 1), alpha; false when BCGSChunkAlpha() stops the chunk (recorded
   at stage 0 when `store`)                                                                        */
__device__ inline bool BCGSChunkAfterA(ChunkControl &ctl, ChunkControl *dctl, PetscInt j, const PetscScalar (&sums)[3], bool store, PetscScalar *slot, PetscScalar *prev, PetscScalar *cur, PetscScalar *alpha)
{
  if (j > 1 || ctl.start) {
    prev[BCGS_RRSTAR] = sums[0];
    prev[BCGS_RR]     = sums[1];
    if (store) {
      slot[BCGS_RRSTAR - BCGS_NSLOT] = sums[0];
      slot[BCGS_RR - BCGS_NSLOT]     = sums[1];
    }
  }
  if (j == 1) ctl = ChunkStartLimits(ctl, prev[BCGS_RR]);
  cur[BCGS_APR] = sums[2];
  if (store) slot[BCGS_APR] = sums[2];
  if (BCGSChunkAlpha(ctl, j, prev, cur, alpha)) return true;
  if (store) {
    dctl->stopped = j - 1;
    dctl->stage   = 0;
  }
  return false;
}

/* After B of chunk iteration j, from its sums (<s,s>, <As,s>, <As,As>, <As,r*>): cur completed, the
   slot stored when `store`, omega and beta; false when they fail (recorded at stage 1 when `store`) */
__device__ inline bool BCGSChunkAfterB(ChunkControl *dctl, PetscInt j, const PetscScalar (&sums)[4], bool store, PetscScalar *slot, PetscScalar *cur, PetscScalar *omega, PetscScalar *beta)
{
  cur[BCGS_SS]   = sums[0];
  cur[BCGS_ASS]  = sums[1];
  cur[BCGS_ASAS] = sums[2];
  cur[BCGS_ASR]  = sums[3];
  if (store) {
    slot[BCGS_SS]   = sums[0];
    slot[BCGS_ASS]  = sums[1];
    slot[BCGS_ASAS] = sums[2];
    slot[BCGS_ASR]  = sums[3];
  }
  if (BCGSChunkOmegaBeta(cur, omega, beta)) return true;
  if (store) {
    dctl->stopped = j - 1;
    dctl->stage   = 1;
  }
  return false;
}

/*
   BCGSChunkKernel - chunk iterations 1..k of fusedbcgs (the two-reduction form of its chunks), each:
     A  Ap = Op p on the block's rows, its terms of <Ap,r*>; grid barrier; every block sums <Ap,r*>
        (and <r,r*>, <r,r> of the previous update) and computes alpha (BCGSChunkAlpha(): a failure or a
        stop of the previous norm ends the loop, stage 0);
     B  s = r - alpha Ap on the block's rows with <s,s>, and As = Op s with <As,s>, <As,As>, <As,r*>,
        the entries of s the rows need computed from r and Ap (LoadS); grid barrier; sums; omega and
        beta (BCGSChunkOmegaBeta(): a failure ends the loop, stage 1);
     C  the update of x, r, p on the block's rows with the terms of <r,r*>, <r,r>; grid barrier (p
        complete; its sums are made at the next A).
   A chunk that starts the solve (a.b) first sets x = 0, r = r* = p = wl.*b with the terms of <r,r*>,
   <r,r>, as an update would (grid barrier).
   Block 0 stores the sums in the slots and records a stop as the chained kernels do; every block
   computes the same scalars from the same sums, so all take the same branches.  The partial sets
   need no second copy: each is read between the barrier after its writes and the next barrier,
   and written again only after that one.
   Compiled for MIN_BLOCKS blocks per SM (0: no bound; see tuning.bcgs_grid_occupancy_rows).
*/
template <class Rows, int MIN_BLOCKS> __global__ void __launch_bounds__(BLOCK_SIZE, MIN_BLOCKS) BCGSChunkKernel(const BCGSChunkKernelArgs a, const __grid_constant__ Rows A)
{
  const ChunkRange   range = BlockChunk(a.n, a.chunk);
  ChunkControl       ctl   = *a.ctl;
  const bool         store = blockIdx.x == 0 && threadIdx.x == 0;
  PetscScalar *const partA = a.partials, *const partB = a.partials + (size_t)3 * gridDim.x;
  PetscScalar prev[BCGS_NSLOT], cur[BCGS_NSLOT];
  PetscInt    j;

  if (ctl.stopped >= 0) return;
#pragma unroll
  for (int d = 0; d < BCGS_NSLOT; ++d) prev[d] = cur[d] = a.slots[d];
  if (a.b) { /* the start */
    PetscScalar acc[2] = {0, 0};
    for (PetscInt64 i = range.begin + threadIdx.x; i < range.end; i += BLOCK_SIZE) {
      const PetscScalar ri = a.wl ? a.wl[i] * a.b[i] : a.b[i];
      a.x[i]               = 0;
      a.r[i] = a.rstar[i] = a.p[i] = ri;
      acc[0] += ri * ri;
      acc[1] += ri * ri;
    }
    BlockPartials(acc, partA);
    GridBarrier();
  }
  for (j = 1; j <= a.k; ++j) {
    PetscScalar *slot = a.slots + j * BCGS_NSLOT, alpha = 0, omega = 0, beta = 0;

    { /* A */
      PetscScalar acc[1] = {0}, sums[3];
      ForRowSums<Rows::LANES, BLOCK_SIZE, 0>(
          range.begin, range.end, [&](PetscInt64 row, int lane) { return A.Part(row, lane, a.wr, a.p, LoadL2()); },
          [&](PetscInt64 row, PetscScalar sum) {
            if (a.wl) sum *= a.wl[row];
            a.Ap[row] = sum;
            acc[0] += sum * a.rstar[row];
          });
      BlockPartials(acc, partA + (size_t)2 * gridDim.x);
      GridBarrier();
      if (j > 1 || a.b)
        GridSums(partA, sums);
      else { /* no update before: only <Ap,r*> was written */
        PetscScalar apr[1];
        GridSums(partA + (size_t)2 * gridDim.x, apr);
        sums[2] = apr[0];
      }
      if (!BCGSChunkAfterA(ctl, a.ctl, j, sums, store, slot, prev, cur, &alpha)) break;
    }
    { /* B */
      PetscScalar acc[4] = {0, 0, 0, 0}, sums[4];
      for (PetscInt64 i = range.begin + threadIdx.x; i < range.end; i += BLOCK_SIZE) {
        const PetscScalar si = BCGSEntryS(alpha, a.r[i], a.Ap[i]);
        a.s[i]               = si;
        acc[0] += si * si;
      }
      {
        const LoadS load = {alpha, a.r, a.Ap};
        ForRowSums<Rows::LANES, BLOCK_SIZE, 0>(
            range.begin, range.end, [&](PetscInt64 row, int lane) { return A.Part(row, lane, a.wr, nullptr, load); },
            [&](PetscInt64 row, PetscScalar sum) {
              if (a.wl) sum *= a.wl[row];
              a.As[row] = sum;
              acc[1] += sum * load(nullptr, row);
              acc[2] += sum * sum;
              acc[3] += sum * a.rstar[row];
            });
      }
      BlockPartials(acc, partB);
      GridBarrier();
      GridSums(partB, sums);
      if (!BCGSChunkAfterB(a.ctl, j, sums, store, slot, cur, &omega, &beta)) break;
    }
    { /* C */
      PetscScalar acc[2] = {0, 0};
      for (PetscInt64 i = range.begin + threadIdx.x; i < range.end; i += BLOCK_SIZE) {
        const PetscScalar ri = BCGSUpdateEntry(alpha, omega, beta, a.s[i], a.As[i], a.Ap[i], a.wr, a.wr ? a.wr[i] : 1, a.x[i], a.r[i], a.p[i]);
        acc[0] += ri * a.rstar[i];
        acc[1] += ri * ri;
      }
      BlockPartials(acc, partA);
      GridBarrier();
    }
#pragma unroll
    for (int d = 0; d < BCGS_NSLOT; ++d) prev[d] = cur[d];
  }
  if (j > a.k) { /* ran through: the sums of the last update */
    PetscScalar sums[2];
    GridSums(partA, sums);
    if (store) {
      a.slots[a.k * BCGS_NSLOT + BCGS_RRSTAR] = sums[0];
      a.slots[a.k * BCGS_NSLOT + BCGS_RR]     = sums[1];
    }
  }
}

/* The load policy of As = Op s in the resident kernel: entry c of s from r and Ap in the shared
   memory of the block that owns row c (rs and aps: this block's copies, with their loads)        */
template <bool CLUSTER, PetscInt ROWS> struct LoadResidentS {
  PetscScalar                            alpha;
  const PetscScalar                     *rs, *aps;
  LoadResident<CLUSTER, ROWS>            load_r, load_ap;
  __device__ __forceinline__ PetscScalar operator()(const PetscScalar *, PetscInt64 c) const
  {
    return BCGSEntryS(alpha, load_r(rs, c), load_ap(aps, c));
  }
};

/*
   BCGSChunkResidentKernel - the chunk of BCGSChunkKernel on at most FUSED_RESIDENT_CHUNK_BLOCKS blocks
   of THREADS threads and R * THREADS rows (one block, or one cluster: CLUSTER; see LoadResident and
   DispatchResidentBlocks()): each thread
   keeps x, r, p, s and r* of its rows in registers; the block's matrix rows, p, r, Ap, As, r* and
   the left Jacobi weights live in shared memory, the products gathering p, and s from r and Ap
   (LoadResidentS: no barrier waits for s), other blocks' rows through distributed shared memory.  The same phases, sums, slots and stops as
   BCGSChunkKernel, with its three barriers per iteration (ResidentSums() after A and after B,
   ResidentSync() after C); the update's <r,r*>, <r,r> are summed with the next <Ap,r*>.  The vectors
   are written back when the kernel ends.  a.chunk: the length of each block's vectors in shared memory.
*/
template <class Rows, bool CLUSTER, int THREADS, int R> __global__ void __launch_bounds__(THREADS, 1) BCGSChunkResidentKernel(const BCGSChunkKernelArgs a, const __grid_constant__ Rows A)
{
  constexpr PetscInt            ROWS = R * THREADS;
  extern __shared__ PetscScalar resident_vecs[];
  PetscScalar *const ps = resident_vecs, *const rsm = resident_vecs + a.chunk, *const aps = resident_vecs + 2 * a.chunk, *const ass = resident_vecs + 3 * a.chunk;
  PetscScalar *const rst = resident_vecs + 4 * a.chunk, *const wls = resident_vecs + 5 * a.chunk;
  const PetscInt                    begin = (PetscInt)blockIdx.x * ROWS, nloc = PetscMin(a.n - begin, ROWS);
  ChunkControl                      ctl   = *a.ctl;
  const bool                        store = blockIdx.x == 0 && threadIdx.x == 0;
  PetscScalar                       x[R], r[R], p[R], s[R], rs[R], prev[BCGS_NSLOT], cur[BCGS_NSLOT], upd[2] = {0, 0};
  PetscInt                          j;
  Rows                              rows   = A;
  const LoadResident<CLUSTER, ROWS> load_p = {SharedAddress(ps)}, load_r = {SharedAddress(rsm)}, load_ap = {SharedAddress(aps)};

  if (ctl.stopped >= 0) return;
  ResidentMatrixRows(A.A, begin, nloc, reinterpret_cast<char *>(resident_vecs + 6 * a.chunk), a.matrix_bytes, rows.A);
#pragma unroll
  for (int d = 0; d < BCGS_NSLOT; ++d) prev[d] = cur[d] = a.slots[d];
  ForOwnRows<R, THREADS>(nloc, [&](int t, PetscInt i) {
    wls[i] = a.wl ? a.wl[begin + i] : 1;
    if (a.b) { /* the start, as an update with the terms of <r,r*>, <r,r> */
      x[t] = 0;
      r[t] = p[t] = rs[t] = a.wl ? wls[i] * a.b[begin + i] : a.b[begin + i];
      upd[0] += r[t] * r[t];
      upd[1] += r[t] * r[t];
    } else {
      x[t]  = a.x[begin + i];
      r[t]  = a.r[begin + i];
      p[t]  = a.p[begin + i];
      rs[t] = a.rstar[begin + i];
    }
    s[t]   = a.s[begin + i];
    aps[i] = a.Ap[begin + i];
    ass[i] = a.As[begin + i];
    rst[i] = rs[t];
    ps[i]  = p[t];
    rsm[i] = r[t];
  });
  ResidentSync<CLUSTER>();
  for (j = 1; j <= a.k; ++j) {
    PetscScalar *slot = a.slots + j * BCGS_NSLOT, alpha = 0, omega = 0, beta = 0;

    { /* A: Ap = Op p, <Ap,r*> with the previous update's <r,r*>, <r,r> */
      PetscScalar acc[3] = {upd[0], upd[1], 0}, sums[3];
      ForRowSums<Rows::LANES, THREADS, 4>((PetscInt)0, nloc, [&](PetscInt row, int lane) { return rows.Part(row, lane, a.wr, ps, load_p); },
                                          [&](PetscInt row, PetscScalar sum) {
                                            if (a.wl) sum *= wls[row];
                                            aps[row] = sum;
                                            acc[2] += sum * rst[row];
                                          });
      ResidentSums<CLUSTER>(acc, sums, (int)(j % 2));
      if (!BCGSChunkAfterA(ctl, a.ctl, j, sums, store, slot, prev, cur, &alpha)) break;
    }
    { /* B: s = r - alpha Ap with <s,s>; As = Op s with <As,s>, <As,As>, <As,r*> */
      const LoadResidentS<CLUSTER, ROWS> load   = {alpha, rsm, aps, load_r, load_ap};
      PetscScalar                        acc[4] = {0, 0, 0, 0}, sums[4];
      ForOwnRows<R, THREADS>(nloc, [&](int t, PetscInt i) {
        s[t] = BCGSEntryS(alpha, r[t], aps[i]);
        acc[0] += s[t] * s[t];
      });
      ForRowSums<Rows::LANES, THREADS, 4>((PetscInt)0, nloc, [&](PetscInt row, int lane) { return rows.Part(row, lane, a.wr, nullptr, load); },
                                          [&](PetscInt row, PetscScalar sum) {
                                            if (a.wl) sum *= wls[row];
                                            ass[row] = sum;
                                            acc[1] += sum * BCGSEntryS(alpha, rsm[row], aps[row]);
                                            acc[2] += sum * sum;
                                            acc[3] += sum * rst[row];
                                          });
      ResidentSums<CLUSTER>(acc, sums, (int)(j % 2));
      if (!BCGSChunkAfterB(a.ctl, j, sums, store, slot, cur, &omega, &beta)) break;
    }
    /* C: the update of x, r, p with the terms of <r,r*>, <r,r> */
    upd[0] = upd[1] = 0;
    ForOwnRows<R, THREADS>(nloc, [&](int t, PetscInt i) {
      const PetscScalar ri = BCGSUpdateEntry(alpha, omega, beta, s[t], ass[i], aps[i], a.wr, a.wr ? a.wr[begin + i] : 1, x[t], r[t], p[t]);
      ps[i]                = p[t];
      rsm[i]               = ri;
      upd[0] += ri * rs[t];
      upd[1] += ri * ri;
    });
    ResidentSync<CLUSTER>();
#pragma unroll
    for (int d = 0; d < BCGS_NSLOT; ++d) prev[d] = cur[d];
  }
  if (j > a.k) { /* ran through: the sums of the last update */
    PetscScalar sums[2];
    ResidentSums<CLUSTER>(upd, sums, 0);
    if (store) {
      a.slots[a.k * BCGS_NSLOT + BCGS_RRSTAR] = sums[0];
      a.slots[a.k * BCGS_NSLOT + BCGS_RR]     = sums[1];
    }
  }
  ResidentWriteBack<CLUSTER, R, THREADS>(nloc, [&](int t, PetscInt i) {
    a.x[begin + i]  = x[t];
    a.r[begin + i]  = r[t];
    a.p[begin + i]  = p[t];
    a.s[begin + i]  = s[t];
    a.Ap[begin + i] = aps[i];
    a.As[begin + i] = ass[i];
    if (a.b) a.rstar[begin + i] = rs[t];
  });
}

/* The resident BiCGStab kernel of THREADS threads and R * THREADS rows per block (LaunchResidentForm()) */
template <class Rows, int THREADS, int R> static PetscErrorCode LaunchBCGSChunkResident(const BCGSChunkArgs *args, const Rows &rows, bool *launched)
{
  return LaunchResidentForm<THREADS, R>((const void *)BCGSChunkResidentKernel<Rows, false, THREADS, R>, (const void *)BCGSChunkResidentKernel<Rows, true, THREADS, R>, rows, args->nnz,
                                        BCGSChunkKernelArgs{rows.A.nrows, 0, args->k, 0, args->wl, args->wr, args->b, args->rstar, args->x, args->r, args->p, args->s, args->Ap, args->As, args->slots, nullptr, args->ctl}, 6, launched);
}

/*
   BCGSChunk - Backend::bcgs_chunk on the device: one kernel for the k iterations unless args->form is STEPS -
   the resident kernel (one thread block, or one cluster of up to FUSED_RESIDENT_CHUNK_BLOCKS) when
   the matrix fits it, else a cooperative grid when the device can and the matrix has at most
   tuning.bcgs_persistent_nnz entries (any number with GRID) - otherwise the 4k kernels of BCGSChunkSteps()
*/
PetscErrorCode BCGSChunk(const BCGSChunkArgs *args)
{
  PetscFunctionBegin;
  PetscCheck(args->k >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Negative chunk length %" PetscInt_FMT, args->k);
  PetscCheck(!args->wl || !args->wr, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONG, "bcgs_chunk takes at most one of wl and wr");
  PetscCall(DispatchChunk<256>(
      args->k > 0 ? args->form : ChunkForm::STEPS, args->nnz >= 0 && args->nnz <= tuning.bcgs_persistent_nnz, args->csr, args->sell,
      [&](const auto &rows, auto threads, auto r, bool *launched) { return LaunchBCGSChunkResident<std::decay_t<decltype(rows)>, decltype(threads)::value, decltype(r)::value>(args, rows, launched); },
      [&](const auto &rows, bool *launched) {
        using Rows         = std::decay_t<decltype(rows)>;
        const void *kernel = rows.A.nrows >= tuning.bcgs_grid_occupancy_rows ? (const void *)BCGSChunkKernel<Rows, BCGS_GRID_BLOCKS_PER_SM> : (const void *)BCGSChunkKernel<Rows, 0>;

        return LaunchGridChunk(
            kernel, rows, 7,
            [&](PetscInt n, PetscInt chunk, PetscScalar *partials) {
              return BCGSChunkKernelArgs{n, chunk, args->k, 0, args->wl, args->wr, args->b, args->rstar, args->x, args->r, args->p, args->s, args->Ap, args->As, args->slots, partials, args->ctl};
            },
            launched);
      },
      [&] { return BCGSChunkSteps(CUDABackend(), CUDABlas(), args); }));
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace cuda
} // namespace fusedksp
