/* CUDA backend: a chunk of BiCGStab iterations as one persistent kernel (Backend::bcgs_chunk) */
#include "backend/cuda/cuda_persistent.cuh"

namespace fusedksp
{
namespace cuda
{

/* s = r - alpha Ap at one entry (the same instructions wherever it is computed) */
__device__ __forceinline__ PetscScalar BCGSEntryS(PetscScalar alpha, PetscScalar r, PetscScalar Ap)
{
  return __fma_rn(-alpha, Ap, r);
}

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
  const PetscScalar *wl, *wr, *rstar;
  PetscScalar       *x, *r, *p, *s, *Ap, *As, *slots, *partials;
  ChunkControl      *ctl;
};

/* After A of chunk iteration j, from its sums (<r,r*>, <r,r> of the previous update when j > 1, then
   <Ap,r*>): prev and cur completed, the slots stored when `store`, alpha; false when BCGSChunkAlpha()
   stops the chunk (recorded at stage 0 when `store`)                                              */
__device__ inline bool BCGSChunkAfterA(const ChunkControl &ctl, ChunkControl *dctl, PetscInt j, const PetscScalar (&sums)[3], bool store, PetscScalar *slot, PetscScalar *prev, PetscScalar *cur, PetscScalar *alpha)
{
  if (j > 1) {
    prev[BCGS_RRSTAR] = sums[0];
    prev[BCGS_RR]     = sums[1];
    if (store) {
      slot[BCGS_RRSTAR - BCGS_NSLOT] = sums[0];
      slot[BCGS_RR - BCGS_NSLOT]     = sums[1];
    }
  }
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
   Block 0 stores the sums in the slots and records a stop as the chained kernels do; every block
   computes the same scalars from the same sums, so all take the same branches.  The partial sets
   need no second copy: each is read between the barrier after its writes and the next barrier,
   and written again only after that one.
*/
template <class Rows> __global__ void __launch_bounds__(BLOCK_SIZE) BCGSChunkKernel(const BCGSChunkKernelArgs a, const __grid_constant__ Rows A)
{
  constexpr int      ROWS_PER_PASS = BLOCK_SIZE / Rows::LANES;
  const int          lane          = threadIdx.x % Rows::LANES;
  const ChunkRange   range         = BlockChunk(a.n, a.chunk);
  const ChunkControl ctl           = *a.ctl;
  const bool         store         = blockIdx.x == 0 && threadIdx.x == 0;
  PetscScalar *const partA = a.partials, *const partB = a.partials + (size_t)3 * gridDim.x;
  PetscScalar prev[BCGS_NSLOT], cur[BCGS_NSLOT];
  PetscInt    j;

  if (ctl.stopped >= 0) return;
#pragma unroll
  for (int d = 0; d < BCGS_NSLOT; ++d) prev[d] = cur[d] = a.slots[d];
  for (j = 1; j <= a.k; ++j) {
    PetscScalar *slot = a.slots + j * BCGS_NSLOT, alpha = 0, omega = 0, beta = 0;

    { /* A */
      PetscScalar acc[1] = {0}, sums[3];
      for (PetscInt64 first = range.begin; first < range.end; first += ROWS_PER_PASS) {
        const PetscInt64 row = first + threadIdx.x / Rows::LANES;
        PetscScalar      sum = 0;

        if (row < range.end) sum = A.Part(row, lane, a.wr, a.p, LoadL2());
        if (Rows::LANES > 1) sum = RowSum<Rows::LANES>(sum);
        if (lane == 0 && row < range.end) {
          if (a.wl) sum *= a.wl[row];
          a.Ap[row] = sum;
          acc[0] += sum * a.rstar[row];
        }
      }
      BlockPartials(acc, partA + (size_t)2 * gridDim.x);
      GridBarrier();
      if (j > 1)
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
        for (PetscInt64 first = range.begin; first < range.end; first += ROWS_PER_PASS) {
          const PetscInt64 row = first + threadIdx.x / Rows::LANES;
          PetscScalar      sum = 0;

          if (row < range.end) sum = A.Part(row, lane, a.wr, nullptr, load);
          if (Rows::LANES > 1) sum = RowSum<Rows::LANES>(sum);
          if (lane == 0 && row < range.end) {
            if (a.wl) sum *= a.wl[row];
            a.As[row] = sum;
            acc[1] += sum * load(nullptr, row);
            acc[2] += sum * sum;
            acc[3] += sum * a.rstar[row];
          }
        }
      }
      BlockPartials(acc, partB);
      GridBarrier();
      GridSums(partB, sums);
      if (!BCGSChunkAfterB(a.ctl, j, sums, store, slot, cur, &omega, &beta)) break;
    }
    { /* C */
      PetscScalar acc[2] = {0, 0};
      for (PetscInt64 i = range.begin + threadIdx.x; i < range.end; i += BLOCK_SIZE) {
        const PetscScalar pi = a.p[i], si = a.s[i];
        const PetscScalar dx = alpha * pi + omega * si;
        const PetscScalar ri = si - omega * a.As[i];
        a.x[i] += a.wr ? a.wr[i] * dx : dx;
        a.r[i] = ri;
        a.p[i] = ri + beta * (pi - omega * a.Ap[i]);
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

/*
   BCGSChunkBlockKernel - the chunk of BCGSChunkKernel in ONE thread block, for at most
   FUSED_BLOCK_CHUNK_ROWS rows: thread t owns rows t, t + BLOCK_SIZE, ... and keeps their x, r, p and
   r* in registers; p, s, Ap and As live in shared memory (the products gather p and s there), so an
   iteration has no grid barrier and no L2 round trip.  The same phases, sums, slots and stops as
   BCGSChunkKernel (the update's <r,r*>, <r,r> are summed with the next <Ap,r*>); the vectors are
   written back when the kernel ends.
*/
template <class Rows> __global__ void __launch_bounds__(BLOCK_SIZE, 1) BCGSChunkBlockKernel(const BCGSChunkKernelArgs a, const __grid_constant__ Rows A)
{
  constexpr int                 R = BLOCK_CHUNK_ROWS_PER_THREAD, ROWS_PER_PASS = BLOCK_SIZE / Rows::LANES;
  extern __shared__ PetscScalar block_vecs[];
  PetscScalar *const ps = block_vecs, *const ss = block_vecs + a.n, *const aps = block_vecs + 2 * a.n, *const ass = block_vecs + 3 * a.n;
  const int          lane  = threadIdx.x % Rows::LANES;
  const ChunkControl ctl   = *a.ctl;
  const bool         store = threadIdx.x == 0;
  PetscScalar        x[R], r[R], p[R], rs[R], prev[BCGS_NSLOT], cur[BCGS_NSLOT], upd[2] = {0, 0};
  PetscInt           j;

  if (ctl.stopped >= 0) return;
#pragma unroll
  for (int d = 0; d < BCGS_NSLOT; ++d) prev[d] = cur[d] = a.slots[d];
#pragma unroll
  for (int t = 0; t < R; ++t) {
    const PetscInt i = threadIdx.x + t * BLOCK_SIZE;
    if (i < a.n) {
      x[t]   = a.x[i];
      r[t]   = a.r[i];
      p[t]   = a.p[i];
      rs[t]  = a.rstar[i];
      ps[i]  = p[t];
      ss[i]  = a.s[i];
      aps[i] = a.Ap[i];
      ass[i] = a.As[i];
    }
  }
  __syncthreads();
  for (j = 1; j <= a.k; ++j) {
    PetscScalar *slot = a.slots + j * BCGS_NSLOT, alpha = 0, omega = 0, beta = 0;

    { /* A: Ap = Op p, <Ap,r*> with the previous update's <r,r*>, <r,r> */
      PetscScalar acc[3] = {upd[0], upd[1], 0}, sums[3];
#pragma unroll 4
      for (PetscInt first = 0; first < a.n; first += ROWS_PER_PASS) {
        const PetscInt row = first + threadIdx.x / Rows::LANES;
        PetscScalar    sum = 0;

        if (row < a.n) sum = A.Part(row, lane, a.wr, ps, LoadCached());
        if (Rows::LANES > 1) sum = RowSum<Rows::LANES>(sum);
        if (lane == 0 && row < a.n) {
          if (a.wl) sum *= a.wl[row];
          aps[row] = sum;
          acc[2] += sum * a.rstar[row];
        }
      }
      BlockSums(acc, sums);
      if (!BCGSChunkAfterA(ctl, a.ctl, j, sums, store, slot, prev, cur, &alpha)) break;
    }
    { /* B: s = r - alpha Ap with <s,s>; As = Op s with <As,s>, <As,As>, <As,r*> */
      PetscScalar acc[4] = {0, 0, 0, 0}, sums[4];
#pragma unroll
      for (int t = 0; t < R; ++t) {
        const PetscInt i = threadIdx.x + t * BLOCK_SIZE;
        if (i < a.n) {
          const PetscScalar si = BCGSEntryS(alpha, r[t], aps[i]);
          ss[i]                = si;
          acc[0] += si * si;
        }
      }
      __syncthreads();
#pragma unroll 4
      for (PetscInt first = 0; first < a.n; first += ROWS_PER_PASS) {
        const PetscInt row = first + threadIdx.x / Rows::LANES;
        PetscScalar    sum = 0;

        if (row < a.n) sum = A.Part(row, lane, a.wr, ss, LoadCached());
        if (Rows::LANES > 1) sum = RowSum<Rows::LANES>(sum);
        if (lane == 0 && row < a.n) {
          if (a.wl) sum *= a.wl[row];
          ass[row] = sum;
          acc[1] += sum * ss[row];
          acc[2] += sum * sum;
          acc[3] += sum * a.rstar[row];
        }
      }
      BlockSums(acc, sums);
      if (!BCGSChunkAfterB(a.ctl, j, sums, store, slot, cur, &omega, &beta)) break;
    }
    /* C: the update of x, r, p with the terms of <r,r*>, <r,r> */
    upd[0] = upd[1] = 0;
#pragma unroll
    for (int t = 0; t < R; ++t) {
      const PetscInt i = threadIdx.x + t * BLOCK_SIZE;
      if (i < a.n) {
        const PetscScalar pi = p[t], si = ss[i];
        const PetscScalar dx = alpha * pi + omega * si;
        const PetscScalar ri = si - omega * ass[i];
        x[t] += a.wr ? a.wr[i] * dx : dx;
        r[t]  = ri;
        p[t]  = ri + beta * (pi - omega * aps[i]);
        ps[i] = p[t];
        upd[0] += ri * rs[t];
        upd[1] += ri * ri;
      }
    }
    __syncthreads();
#pragma unroll
    for (int d = 0; d < BCGS_NSLOT; ++d) prev[d] = cur[d];
  }
  if (j > a.k) { /* ran through: the sums of the last update */
    PetscScalar sums[2];
    BlockSums(upd, sums);
    if (store) {
      a.slots[a.k * BCGS_NSLOT + BCGS_RRSTAR] = sums[0];
      a.slots[a.k * BCGS_NSLOT + BCGS_RR]     = sums[1];
    }
  }
#pragma unroll
  for (int t = 0; t < R; ++t) {
    const PetscInt i = threadIdx.x + t * BLOCK_SIZE;
    if (i < a.n) {
      a.x[i]  = x[t];
      a.r[i]  = r[t];
      a.p[i]  = p[t];
      a.s[i]  = ss[i];
      a.Ap[i] = aps[i];
      a.As[i] = ass[i];
    }
  }
}

/*
   BCGSChunk - Backend::bcgs_chunk on the device: one kernel for the k iterations when args->persistent -
   one thread block for at most FUSED_BLOCK_CHUNK_ROWS rows and FUSED_BLOCK_CHUNK_NNZ entries, else a
   cooperative grid when the device can and the matrix has at most FUSED_BCGS_PERSISTENT_ROWS rows -
   otherwise the 4k kernels of BCGSChunkSteps()
*/
PetscErrorCode BCGSChunk(const BCGSChunkArgs *args)
{
  bool launched = false;

  PetscFunctionBegin;
  PetscCheck(args->k >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Negative chunk length %" PetscInt_FMT, args->k);
  PetscCheck(!args->wl || !args->wr, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONG, "bcgs_chunk takes at most one of wl and wr");
  const PetscInt n = args->csr ? args->csr->nrows : args->sell->nrows;
  if (args->persistent && args->k > 0 && n > 0 && n <= FUSED_BLOCK_CHUNK_ROWS && args->nnz >= 0 && args->nnz <= FUSED_BLOCK_CHUNK_NNZ) {
    cudaStream_t stream;

    PetscCall(GetStream(&stream));
    PetscCall(DispatchRows(args->csr, args->sell, [&](auto rows) {
      using Rows                  = decltype(rows);
      const BCGSChunkKernelArgs a = {n, n, args->k, args->wl, args->wr, args->rstar, args->x, args->r, args->p, args->s, args->Ap, args->As, args->slots, nullptr, args->ctl};

      PetscFunctionBegin;
      NotePersistentLaunch();
      BCGSChunkBlockKernel<Rows><<<1, BLOCK_SIZE, 4 * n * sizeof(PetscScalar), stream>>>(a, rows);
      FusedKSPCheckLaunch();
      counters.launches++;
      PetscFunctionReturn(PETSC_SUCCESS);
    }));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  if (args->persistent && args->k > 0 && n <= FUSED_BCGS_PERSISTENT_ROWS) {
    PetscCall(DispatchRows(args->csr, args->sell, [&](auto rows) {
      using Rows                 = decltype(rows);
      const void         *kernel = (const void *)BCGSChunkKernel<Rows>;
      BCGSChunkKernelArgs a;
      Partition           part;

      PetscFunctionBegin;
      PetscCall(PrepareResident(kernel, rows.A.nrows, Rows::LANES, 7, &part, &a.partials));
      if (part.nblocks) {
        void *params[] = {(void *)&a, (void *)&rows};
        a.n            = rows.A.nrows;
        a.chunk        = part.chunk;
        a.k            = args->k;
        a.wl           = args->wl;
        a.wr           = args->wr;
        a.rstar        = args->rstar;
        a.x            = args->x;
        a.r            = args->r;
        a.p            = args->p;
        a.s            = args->s;
        a.Ap           = args->Ap;
        a.As           = args->As;
        a.slots        = args->slots;
        a.ctl          = args->ctl;
        PetscCall(LaunchResident(kernel, part, params));
        launched = true;
      }
      PetscFunctionReturn(PETSC_SUCCESS);
    }));
  }
  if (!launched) PetscCall(BCGSChunkSteps(CUDABackend(), args));
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace cuda
} // namespace fusedksp
