/* CUDA backend: a chunk of CG iterations as one persistent kernel (Backend::cg_chunk) */
#include "backend/cuda/cuda_persistent.cuh"
#include "backend/iteration.hpp"

namespace fusedksp
{
namespace cuda
{

/* v[d] for a run-time d (-1: 0) without indexing the register array at run time */
template <int N> __device__ inline PetscScalar Select(const PetscScalar (&v)[N], PetscInt d)
{
  PetscScalar s = 0;
#pragma unroll
  for (int i = 0; i < N; ++i)
    if (i == d) s = v[i];
  return s;
}

/* The vectors and slots of the kernel (see CGChunkArgs), its rows per block, and its partials:
   two sets (iterations alternate, so a fast block never overwrites sums a slow one still reads)
   of CG_NSLOT values per block                                                                 */
struct CGChunkKernelArgs {
  PetscInt           n, chunk, k;
  size_t             matrix_bytes; /* the resident kernel's shared memory for its matrix rows */
  const PetscScalar *w, *b;        /* b: the right-hand side of a chunk that starts the solve, else NULL */
  PetscScalar       *x, *r, *p, *q, *slots, *partials;
  ChunkControl      *ctl;
  PetscBool          guess; /* with b: x holds the initial guess */
  PetscInt           bnorm; /* with b: the norm of b of the start's limits (ChunkBNorm)  */
};

/* The grid kernel for matrices of at least tuning.cg_grid_occupancy_rows rows is compiled for
   CG_GRID_BLOCKS_PER_SM blocks per SM (sys/tuning.hpp); the steps' update kernels have no bound: it
   made them slower                                                                                  */

/*
   CGChunkKernel - chunk iterations 1..k of fusedcg, each: alpha and beta from the sums of the
   previous iteration (all blocks alike; a failure or a stop of the norm ends the kernel, block 0
   records it as cg_update_chained does); the update of the block's rows, summing its terms of <r,z>,
   <r,r>, <z,z>; a grid barrier (p complete); q = A p on the block's rows, summing its terms of <p,q>,
   <q,z>, <q,w.*q> (<r,u> = <q,z>); the block's partials; a grid barrier; every block sums the partials, and block 0   stores them in the slot.  A chunk that starts the solve (a.b) runs iteration 0 first: r = b - A x
   (a.guess; the block's rows, before its update) or x = 0, r = b, then p = z with alpha = beta = 0, and
   its norm (and the norm of b, a.bnorm, summed with it) sets the limits of the stop tests
   (ChunkStartLimits()).
   Block b owns rows [b chunk, (b+1) chunk) in both phases, so x, r and q are only read by the block
   that wrote them; p is read by every block.
   Compiled for MIN_BLOCKS blocks per SM (0: no bound; see tuning.cg_grid_occupancy_rows).
*/
template <class Rows, int MIN_BLOCKS> __global__ void __launch_bounds__(BLOCK_SIZE, MIN_BLOCKS) CGChunkKernel(const CGChunkKernelArgs a, const __grid_constant__ Rows A)
{
  const ChunkRange range = BlockChunk(a.n, a.chunk);
  ChunkControl     ctl   = *a.ctl;
  PetscScalar      prev[CG_NSLOT], bnorm[1] = {0}, ref[2] = {0, 0}; /* CGReference() */

  if (ctl.stopped >= 0) return;
#pragma unroll
  for (int d = 0; d < CG_NSLOT; ++d) prev[d] = a.slots[d];
  if (a.b && a.guess) { /* r = b - A x on the block's rows (x is not written before the next grid barrier) */
    ForRowSums<Rows::LANES, BLOCK_SIZE, 0>(
        range.begin, range.end, [&](PetscInt64 row, int lane) { return A.Part(row, lane, nullptr, a.x, LoadL2()); }, [&](PetscInt64 row, PetscScalar sum) { a.r[row] = a.b[row] - sum; });
    __syncthreads();
  }
  for (PetscInt j = a.b ? 0 : 1; j <= a.k; ++j) {
    PetscScalar *part          = a.partials + (size_t)(j % 2) * CG_NSLOT * gridDim.x;
    PetscScalar  acc[CG_NSLOT] = {}, alpha = 0, beta = 0;

    if (j == 1) CGReference(ctl, prev, &ref[0], &ref[1]);
    if (j > 0 && (CGCoefficients(prev, ref[0], ref[1], true, &alpha, &beta) != RecurrenceStatus::OK || (ctl.normdot >= 0 && ChunkNormSqStops(ctl, j - 1, Select(prev, ctl.normdot))))) {
      if (blockIdx.x == 0 && threadIdx.x == 0) {
        a.ctl->stopped = j - 1;
        a.ctl->stage   = 0;
      }
      return;
    }
    for (PetscInt64 i = range.begin + threadIdx.x; i < range.end; i += BLOCK_SIZE) {
      PetscScalar xi = j || a.guess ? a.x[i] : 0, ri = j || a.guess ? a.r[i] : a.b[i], pi = j ? a.p[i] : 0;

      if (!j && a.bnorm != CHUNK_BNORM_NONE) bnorm[0] += ChunkBNormTerm(a.bnorm, a.b[i], a.w ? a.w[i] : 1);
      CGUpdateEntry(
          alpha, beta, j ? a.q[i] : 0, [&](PetscScalar rn) { return a.w ? a.w[i] * rn : rn; }, xi, ri, pi, acc);
      if (j || !a.guess) a.x[i] = xi; /* a start from a guess leaves x: other blocks may still read it for r = b - A x */
      a.r[i] = ri;
      a.p[i] = pi;
    }
    GridBarrier();
    ForRowSums<Rows::LANES, BLOCK_SIZE, 0>(
        range.begin, range.end, [&](PetscInt64 row, int lane) { return A.Part(row, lane, nullptr, a.p, LoadL2()); },
        [&](PetscInt64 row, PetscScalar sum) {
          a.q[row] = sum;
          CGProductTerms(sum, __ldcg(a.p + row), a.r[row], a.w, a.w ? a.w[row] : 1, acc);
        });
    acc[CG_RU] = acc[CG_QZ]; /* M = diag(w)^{-1} is symmetric */
    BlockPartials(acc, part);
    if (!j && a.bnorm != CHUNK_BNORM_NONE) BlockPartials(bnorm, a.partials + (size_t)2 * CG_NSLOT * gridDim.x);
    GridBarrier();
    GridSums(part, prev);
    if (!j && a.bnorm != CHUNK_BNORM_NONE) {
      GridSums(a.partials + (size_t)2 * CG_NSLOT * gridDim.x, bnorm);
      ctl.bnormsq = bnorm[0];
      if (blockIdx.x == 0 && threadIdx.x == 0) a.ctl->bnormsq = bnorm[0];
    }
    if (j == 0) ctl = DeviceStartLimits(ctl, a.ctl, Select(prev, ctl.normdot));
    if (blockIdx.x == 0 && threadIdx.x == 0) {
#pragma unroll
      for (int d = 0; d < CG_NSLOT; ++d) a.slots[j * CG_NSLOT + d] = prev[d];
    }
  }
}

/*
   CGChunkResidentKernel - the chunk of CGChunkKernel on at most FUSED_RESIDENT_CHUNK_BLOCKS blocks of
   THREADS threads and R * THREADS rows (one block, or one cluster: CLUSTER; see LoadResident and
   DispatchResidentBlocks()): each thread keeps x, r, p (and the Jacobi weights) of its rows in
   registers; the block's matrix rows, p, q and the weights live in shared memory, where the sparse
   product gathers p (other blocks' rows through distributed shared memory) and the update reads q.
   The same iteration as CGChunkKernel: coefficients and stop test from the previous sums, update,
   barrier (p complete), q = A p with <p,q>, <q,z> and <q,w.*q>, the sums (ResidentSums()), slot j, and
   iteration 0 of a chunk that starts the solve (r = b - A x with a.guess, else x = 0 and r = b;
   p = q = 0 entering it; the norm of b first when a.bnorm asks for it).
   x, r, p and q are written back when the kernel ends.  a.chunk: the length of each block's vectors
   in shared memory.
*/
template <class Rows, bool CLUSTER, int THREADS, int R> __global__ void __launch_bounds__(THREADS, 1) CGChunkResidentKernel(const CGChunkKernelArgs a, const __grid_constant__ Rows A)
{
  constexpr PetscInt            ROWS = R * THREADS;
  extern __shared__ PetscScalar resident_vecs[];
  PetscScalar *const ps = resident_vecs, *const qs = resident_vecs + a.chunk, *const ws = resident_vecs + 2 * a.chunk;
  const PetscInt                    begin = (PetscInt)blockIdx.x * ROWS, nloc = PetscMin(a.n - begin, ROWS);
  ChunkControl                      ctl   = *a.ctl;
  const bool                        store = blockIdx.x == 0 && threadIdx.x == 0;
  PetscScalar                       x[R], r[R], p[R], w[R], prev[CG_NSLOT], bnorm[1] = {0}, ref[2] = {0, 0}; /* CGReference() */
  Rows                              rows   = A;
  const LoadResident<CLUSTER, ROWS> load_p = {SharedAddress(ps)};

  if (ctl.stopped >= 0) return;
  ResidentMatrixRows(A.A, begin, nloc, reinterpret_cast<char *>(resident_vecs + 3 * a.chunk), a.matrix_bytes, rows.A);
#pragma unroll
  for (int d = 0; d < CG_NSLOT; ++d) prev[d] = a.slots[d];
  if (a.b && a.guess) { /* b - A x of the block's rows to qs (x is read from global memory, written only at the end) */
    __syncthreads();    /* the matrix rows */
    ForRowSums<Rows::LANES, THREADS, 0>((PetscInt)0, nloc, [&](PetscInt row, int lane) { return rows.Part(row, lane, nullptr, a.x, LoadL2()); }, [&](PetscInt row, PetscScalar sum) { qs[row] = a.b[begin + row] - sum; });
    __syncthreads();
  }
  ForOwnRows<R, THREADS>(nloc, [&](int t, PetscInt i) {
    x[t]  = a.b && !a.guess ? 0 : a.x[begin + i];
    r[t]  = a.b ? (a.guess ? qs[i] : a.b[begin + i]) : a.r[begin + i];
    p[t]  = a.b ? 0 : a.p[begin + i];
    w[t]  = a.w ? a.w[begin + i] : 1;
    ws[i] = w[t];
    qs[i] = a.b ? 0 : a.q[begin + i]; /* read back by this thread only until the first barrier */
    if (a.b && a.bnorm != CHUNK_BNORM_NONE) bnorm[0] += ChunkBNormTerm(a.bnorm, a.b[begin + i], w[t]);
  });
  if (a.b && a.bnorm != CHUNK_BNORM_NONE) { /* the norm of b the start's limits take */
    PetscScalar sum[1];
    ResidentSums<CLUSTER>(bnorm, sum, 0);
    ctl.bnormsq = sum[0];
    if (store) a.ctl->bnormsq = sum[0];
  }
  for (PetscInt j = a.b ? 0 : 1; j <= a.k; ++j) {
    PetscScalar acc[CG_NSLOT] = {}, alpha = 0, beta = 0;

    if (j == 1) CGReference(ctl, prev, &ref[0], &ref[1]);
    if (j > 0 && (CGCoefficients(prev, ref[0], ref[1], true, &alpha, &beta) != RecurrenceStatus::OK || (ctl.normdot >= 0 && ChunkNormSqStops(ctl, j - 1, Select(prev, ctl.normdot))))) {
      if (store) {
        a.ctl->stopped = j - 1;
        a.ctl->stage   = 0;
      }
      break;
    }
    ForOwnRows<R, THREADS>(nloc, [&](int t, PetscInt i) {
      CGUpdateEntry(
          alpha, beta, qs[i], [&](PetscScalar rn) { return a.w ? w[t] * rn : rn; }, x[t], r[t], p[t], acc);
      ps[i] = p[t];
    });
    ResidentSync<CLUSTER>();
    ForRowSums<Rows::LANES, THREADS, 4>((PetscInt)0, nloc, [&](PetscInt row, int lane) { return rows.Part(row, lane, nullptr, ps, load_p); },
                                        [&](PetscInt row, PetscScalar sum) {
                                          qs[row] = sum;
                                          acc[CG_PQ] += sum * ps[row];
                                          acc[CG_QU] += a.w ? sum * ws[row] * sum : sum * sum;
                                        });
    __syncthreads(); /* q of the block's rows, for <q,z> from the registers' r */
    ForOwnRows<R, THREADS>(nloc, [&](int t, PetscInt i) {
      acc[CG_QZ] += a.w ? qs[i] * w[t] * r[t] : qs[i] * r[t]; /* as CGProductTerms() */
    });
    acc[CG_RU] = acc[CG_QZ]; /* M = diag(w)^{-1} is symmetric */
    ResidentSums<CLUSTER>(acc, prev, (int)(j % 2));
    if (j == 0) ctl = DeviceStartLimits(ctl, a.ctl, Select(prev, ctl.normdot));
    if (store) {
#pragma unroll
      for (int d = 0; d < CG_NSLOT; ++d) a.slots[j * CG_NSLOT + d] = prev[d];
    }
  }
  ResidentWriteBack<CLUSTER, R, THREADS>(nloc, [&](int t, PetscInt i) {
    a.x[begin + i] = x[t];
    a.r[begin + i] = r[t];
    a.p[begin + i] = p[t];
    a.q[begin + i] = qs[i];
  });
}

/* The resident CG kernel of THREADS threads and R * THREADS rows per block (LaunchResidentForm()) */
template <class Rows, int THREADS, int R> static PetscErrorCode LaunchCGChunkResident(const CGChunkArgs *args, const Rows &rows, bool *launched)
{
  return LaunchResidentForm<THREADS, R>((const void *)CGChunkResidentKernel<Rows, false, THREADS, R>, (const void *)CGChunkResidentKernel<Rows, true, THREADS, R>, rows, args->nnz,
                                        CGChunkKernelArgs{rows.A.nrows, 0, args->k, 0, args->w, args->b, args->x, args->r, args->p, args->q, args->slots, nullptr, args->ctl, args->guess, args->bnorm}, 3, launched);
}

/*
   CGChunk - Backend::cg_chunk on the device: one kernel for the k iterations unless args->form is STEPS -
   the resident kernel (one thread block, or one cluster of up to FUSED_RESIDENT_CHUNK_BLOCKS) when
   the matrix fits it, else a cooperative grid when the device can - otherwise the 2k kernels of
   CGChunkSteps()
*/
PetscErrorCode CGChunk(const CGChunkArgs *args)
{
  PetscFunctionBegin;
  PetscCheck(args->k >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Negative chunk length %" PetscInt_FMT, args->k);
  PetscCall(DispatchChunk<256>(
      args->k > 0 ? args->form : ChunkForm::STEPS, true, args->csr, args->sell,
      [&](const auto &rows, auto threads, auto r, bool *launched) { return LaunchCGChunkResident<std::decay_t<decltype(rows)>, decltype(threads)::value, decltype(r)::value>(args, rows, launched); },
      [&](const auto &rows, bool *launched) {
        using Rows         = std::decay_t<decltype(rows)>;
        const void *kernel = rows.A.nrows >= tuning.cg_grid_occupancy_rows ? (const void *)CGChunkKernel<Rows, CG_GRID_BLOCKS_PER_SM> : (const void *)CGChunkKernel<Rows, 0>;

        return LaunchGridChunk(
            kernel, rows, 2 * CG_NSLOT + 1,
            [&](PetscInt n, PetscInt chunk, PetscScalar *partials) { return CGChunkKernelArgs{n, chunk, args->k, 0, args->w, args->b, args->x, args->r, args->p, args->q, args->slots, partials, args->ctl, args->guess, args->bnorm}; }, launched);
      },
      [&] { return CGChunkSteps(CUDABackend(), CUDABlas(), args); }));
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace cuda
} // namespace fusedksp
