/* CUDA backend: a chunk of CG iterations as one persistent kernel (Backend::cg_chunk) */
#include "backend/cuda/cuda_persistent.cuh"

namespace fusedksp
{
namespace cuda
{

/* The rows of a CSR or SELL-P matrix for the persistent kernel: lane `lane` of the LANES threads of
   a row sums its part of the row, reading the input from L2 (other blocks write it)              */
template <int L> struct CSRRows {
  static constexpr int   LANES = L;
  CSRView                A;
  __device__ PetscScalar Part(PetscInt64 row, int lane, const PetscScalar *in) const
  {
    return CSRRowPart<L>(A.rowptr, A.colidx, A.vals, nullptr, in, row, lane, LoadL2());
  }
};
template <int T> struct SELLRows {
  static constexpr int   LANES = T;
  SELLView               A;
  __device__ PetscScalar Part(PetscInt64 row, int lane, const PetscScalar *in) const
  {
    return SELLRowPart<T>(A.sliceptr, A.colidx, A.vals, nullptr, in, row, lane, LoadL2());
  }
};

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
  const PetscScalar *w;
  PetscScalar       *x, *r, *p, *q, *slots, *partials;
  ChunkControl      *ctl;
};

/*
   CGChunkKernel - chunk iterations 1..k of fusedcg, each: alpha and beta from the sums of the
   previous iteration (all blocks alike; a failure or a stop of the norm ends the kernel, block 0
   records it as cg_update_chained does); the update of the block's rows with partials of <r,z>,
   <r,r>, <z,z>; a grid barrier (p complete); q = A p on the block's rows with partials of <p,q>,
   <q,w.*q>; a grid barrier; every block sums the partials, and block 0 stores them in the slot.
   Block b owns rows [b chunk, (b+1) chunk) in both phases, so x, r and q are only read by the block
   that wrote them; p is read by every block.
*/
template <class Rows> __global__ void __launch_bounds__(BLOCK_SIZE) CGChunkKernel(const CGChunkKernelArgs a, const __grid_constant__ Rows A)
{
  constexpr int      ROWS_PER_PASS = BLOCK_SIZE / Rows::LANES;
  const int          lane          = threadIdx.x % Rows::LANES;
  const ChunkRange   range         = BlockChunk(a.n, a.chunk);
  const ChunkControl ctl           = *a.ctl;
  PetscScalar        prev[CG_NSLOT];

  if (ctl.stopped >= 0) return;
#pragma unroll
  for (int d = 0; d < CG_NSLOT; ++d) prev[d] = a.slots[d];
  for (PetscInt j = 1; j <= a.k; ++j) {
    PetscScalar *part   = a.partials + (size_t)(j % 2) * CG_NSLOT * gridDim.x;
    PetscScalar  upd[3] = {0, 0, 0}, op[2] = {0, 0}, alpha = 0, beta = 0;

    if (CGCoefficients(prev[CG_RZ], prev[CG_PQ], prev[CG_QU], &alpha, &beta) != RecurrenceStatus::OK || (ctl.normdot >= 0 && ChunkNormSqStops(ctl, j - 1, Select(prev, ctl.normdot)))) {
      if (blockIdx.x == 0 && threadIdx.x == 0) {
        a.ctl->stopped = j - 1;
        a.ctl->stage   = 0;
      }
      return;
    }
    for (PetscInt64 i = range.begin + threadIdx.x; i < range.end; i += BLOCK_SIZE) {
      const PetscScalar pi = a.p[i], ri = a.r[i] - alpha * a.q[i];
      const PetscScalar zi = a.w ? a.w[i] * ri : ri;
      a.x[i] += alpha * pi;
      a.r[i] = ri;
      a.p[i] = zi + beta * pi;
      upd[0] += ri * zi;
      upd[1] += ri * ri;
      upd[2] += zi * zi;
    }
    BlockPartials(upd, part + (size_t)CG_RZ * gridDim.x);
    GridBarrier();
    for (PetscInt64 first = range.begin; first < range.end; first += ROWS_PER_PASS) {
      const PetscInt64 row = first + threadIdx.x / Rows::LANES;
      PetscScalar      sum = 0;

      if (row < range.end) sum = A.Part(row, lane, a.p);
      if (Rows::LANES > 1) sum = RowSum<Rows::LANES>(sum);
      if (lane == 0 && row < range.end) {
        a.q[row] = sum;
        op[0] += sum * __ldcg(a.p + row);
        op[1] += a.w ? sum * a.w[row] * sum : sum * sum;
      }
    }
    BlockPartials(op, part + (size_t)CG_PQ * gridDim.x);
    GridBarrier();
    GridSums(part, prev);
    if (blockIdx.x == 0 && threadIdx.x == 0) {
#pragma unroll
      for (int d = 0; d < CG_NSLOT; ++d) a.slots[j * CG_NSLOT + d] = prev[d];
    }
  }
}

PetscErrorCode ResidentBlocks(const void *kernel, int *blocks)
{
  int device, cooperative, sms, per_sm;

  PetscFunctionBegin;
  FusedKSPCallCUDA(cudaGetDevice(&device));
  FusedKSPCallCUDA(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device));
  FusedKSPCallCUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  FusedKSPCallCUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, BLOCK_SIZE, 0));
  *blocks = cooperative ? per_sm * sms : 0;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Launches CGChunkKernel<Rows> on the resident grid; *launched = false when the device cannot */
template <class Rows> static PetscErrorCode LaunchCGChunk(const CGChunkArgs *args, PetscInt n, const Rows &rows, bool *launched)
{
  static int        resident = -1; /* per kernel instantiation, on the device of the first call */
  const void       *kernel   = (const void *)CGChunkKernel<Rows>;
  CGChunkKernelArgs a;
  Partition         part;
  cudaStream_t      stream;

  PetscFunctionBegin;
  if (resident < 0) PetscCall(ResidentBlocks(kernel, &resident));
  *launched = resident > 0;
  if (!*launched) PetscFunctionReturn(PETSC_SUCCESS);
  part    = PartitionResident(n, Rows::LANES, resident);
  a.n     = n;
  a.chunk = part.chunk;
  a.k     = args->k;
  a.w     = args->w;
  a.x     = args->x;
  a.r     = args->r;
  a.p     = args->p;
  a.q     = args->q;
  a.slots = args->slots;
  a.ctl   = args->ctl;
  PetscCall(GetPartials((size_t)2 * CG_NSLOT * part.nblocks, &a.partials));
  PetscCall(GetStream(&stream));
  {
    void *params[] = {(void *)&a, (void *)&rows};
    FusedKSPCallCUDA(cudaLaunchCooperativeKernel(kernel, part.nblocks, BLOCK_SIZE, params, 0, stream));
  }
  counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   CGChunk - Backend::cg_chunk on the device: one cooperative kernel for the k iterations when
   args->persistent and the device can, else the 2k kernels of CGChunkSteps()
*/
PetscErrorCode CGChunk(const CGChunkArgs *args)
{
  const PetscInt n        = args->csr ? args->csr->nrows : args->sell->nrows;
  bool           launched = false;

  PetscFunctionBegin;
  PetscCheck(!args->csr != !args->sell, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONG, "cg_chunk needs exactly one of a CSR and a SELL-P matrix");
  PetscCheck(args->k >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Negative chunk length %" PetscInt_FMT, args->k);
  if (args->persistent && n > 0 && args->k > 0) {
    if (args->sell) {
      switch (args->sell->threads) {
      case 1:
        PetscCall(LaunchCGChunk(args, n, SELLRows<1>{*args->sell}, &launched));
        break;
      case 2:
        PetscCall(LaunchCGChunk(args, n, SELLRows<2>{*args->sell}, &launched));
        break;
      case 4:
        PetscCall(LaunchCGChunk(args, n, SELLRows<4>{*args->sell}, &launched));
        break;
      case 8:
        PetscCall(LaunchCGChunk(args, n, SELLRows<8>{*args->sell}, &launched));
        break;
      default:
        SETERRQ(PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "SELL-P threads per row must be 1, 2, 4 or 8, not %d", args->sell->threads);
      }
    } else {
      switch (CSRLanes(args->csr)) {
      case 2:
        PetscCall(LaunchCGChunk(args, n, CSRRows<2>{*args->csr}, &launched));
        break;
      case 4:
        PetscCall(LaunchCGChunk(args, n, CSRRows<4>{*args->csr}, &launched));
        break;
      case 8:
        PetscCall(LaunchCGChunk(args, n, CSRRows<8>{*args->csr}, &launched));
        break;
      case 16:
        PetscCall(LaunchCGChunk(args, n, CSRRows<16>{*args->csr}, &launched));
        break;
      default:
        PetscCall(LaunchCGChunk(args, n, CSRRows<32>{*args->csr}, &launched));
      }
    }
  }
  if (!launched) PetscCall(CGChunkSteps(CUDABackend(), args));
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace cuda
} // namespace fusedksp
