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
      if (j > 1) { /* the update of iteration j-1 */
        prev[BCGS_RRSTAR] = sums[0];
        prev[BCGS_RR]     = sums[1];
        if (store) {
          slot[BCGS_RRSTAR - BCGS_NSLOT] = sums[0];
          slot[BCGS_RR - BCGS_NSLOT]     = sums[1];
        }
      }
      cur[BCGS_APR] = sums[2];
      if (store) slot[BCGS_APR] = sums[2];
      if (!BCGSChunkAlpha(ctl, j, prev, cur, &alpha)) {
        if (store) {
          a.ctl->stopped = j - 1;
          a.ctl->stage   = 0;
        }
        break;
      }
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
      if (!BCGSChunkOmegaBeta(cur, &omega, &beta)) {
        if (store) {
          a.ctl->stopped = j - 1;
          a.ctl->stage   = 1;
        }
        break;
      }
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
   BCGSChunk - Backend::bcgs_chunk on the device: one cooperative kernel for the k iterations when
   args->persistent, the device can and the matrix has at most FUSED_BCGS_PERSISTENT_ROWS rows, else the
   4k kernels of BCGSChunkSteps()
*/
PetscErrorCode BCGSChunk(const BCGSChunkArgs *args)
{
  bool launched = false;

  PetscFunctionBegin;
  PetscCheck(args->k >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Negative chunk length %" PetscInt_FMT, args->k);
  PetscCheck(!args->wl || !args->wr, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONG, "bcgs_chunk takes at most one of wl and wr");
  if (args->persistent && args->k > 0 && (args->csr ? args->csr->nrows : args->sell->nrows) <= FUSED_BCGS_PERSISTENT_ROWS) {
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
