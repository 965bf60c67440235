/* CUDA backend: sparse matrix-vector products (CSR, SELL-P) fused with dot products of the result */
#include "backend/cuda/cuda_rows.cuh"

namespace fusedksp
{
namespace cuda
{

/* Stores out[row] = wl[row] * sum and adds its dot terms (the first lane of the row) */
__device__ inline void StoreRow(PetscInt64 row, PetscScalar sum, const PetscScalar *wl, const PetscScalar *in, PetscScalar *out, const DotList &dots, PetscScalar (&acc)[FUSED_MAX_DOTS])
{
  if (wl) sum *= wl[row];
  out[row] = sum;
  AddDotTerms(dots, row, in, sum, acc);
}

/* CSR: passes of BLOCK_SIZE / LANES rows dealt to the thread blocks in turn (NextChunk()), LANES
   threads per row (chosen on the host from the matrix's average row length): each thread sums a
   strided part of the row, the shuffles add the parts; then the block's reductions.          */
template <int LANES>
__global__ void CSRDotsKernel(PetscInt nrows, const PetscInt *__restrict__ rowptr, const PetscInt *__restrict__ colidx, const PetscScalar *__restrict__ vals, const PetscScalar *__restrict__ wl, const PetscScalar *__restrict__ wr,
                              const PetscScalar *__restrict__ in, PetscScalar *__restrict__ out, const __grid_constant__ DotList dots, const Reduction red)
{
  constexpr int ROWS_PER_PASS       = BLOCK_SIZE / LANES;
  const int     lane                = threadIdx.x % LANES;
  PetscScalar   acc[FUSED_MAX_DOTS] = {};

  if (Stopped(red)) return;
  for (ChunkRange range = BlockChunk(nrows, ROWS_PER_PASS); range.begin < nrows; range = NextChunk(range, nrows, ROWS_PER_PASS)) {
    const PetscInt64 row = range.begin + threadIdx.x / LANES;
    PetscScalar      sum = 0;

    if (row < range.end) sum = CSRRowPart<LANES>(rowptr, colidx, vals, wr, in, row, lane, LoadCached());
    sum = RowSum<LANES>(sum);
    if (lane == 0 && row < range.end) StoreRow(row, sum, wl, in, out, dots, acc);
  }
  ReduceBlocks(acc, dots.count, red);
}

/* SELL-P (see SELLView): passes dealt to the blocks as in CSRDotsKernel, T threads per row; thread t
   of row i reads the row's entries j * T + t, consecutive threads reading consecutive memory; loads
   of successive j are independent.                                                            */
template <int T>
__global__ void SELLDotsKernel(PetscInt nrows, const PetscInt64 *__restrict__ sliceptr, const PetscInt *__restrict__ colidx, const PetscScalar *__restrict__ vals, const PetscScalar *__restrict__ wl, const PetscScalar *__restrict__ wr,
                               const PetscScalar *__restrict__ in, PetscScalar *__restrict__ out, const __grid_constant__ DotList dots, const Reduction red)
{
  constexpr int ROWS_PER_PASS       = BLOCK_SIZE / T;
  const int     t                   = threadIdx.x % T;
  PetscScalar   acc[FUSED_MAX_DOTS] = {};

  if (Stopped(red)) return;
  for (ChunkRange range = BlockChunk(nrows, ROWS_PER_PASS); range.begin < nrows; range = NextChunk(range, nrows, ROWS_PER_PASS)) {
    const PetscInt64 row = range.begin + threadIdx.x / T;
    PetscScalar      sum = 0;

    if (row < range.end) sum = SELLRowPart<T>(sliceptr, colidx, vals, wr, in, row, t, LoadCached());
    if (T > 1) sum = RowSum<T>(sum);
    if (t == 0 && row < range.end) StoreRow(row, sum, wl, in, out, dots, acc);
  }
  ReduceBlocks(acc, dots.count, red);
}

/* The dot products of Backend::dots: the block's partials of the dot terms of in and out */
__global__ void DotsKernel(PetscInt n, PetscInt chunk, const PetscScalar *in, const PetscScalar *out, const __grid_constant__ DotList dots, const Reduction red)
{
  const ChunkRange range               = BlockChunk(n, chunk);
  PetscScalar      acc[FUSED_MAX_DOTS] = {};

  if (Stopped(red)) return;
  for (PetscInt64 i = range.begin + threadIdx.x; i < range.end; i += blockDim.x) AddDotTerms(dots, i, in, out[i], acc);
  ReduceBlocks(acc, dots.count, red);
}

/* Checks the sizes and the dot specifications of a sparse product */
static PetscErrorCode CheckProduct(PetscInt nrows, PetscInt ncols, int ndots, const DotSpec *specs, DotList *list)
{
  PetscFunctionBegin;
  PetscCheck(nrows >= 0 && ncols >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Negative matrix size %" PetscInt_FMT " x %" PetscInt_FMT, nrows, ncols);
  PetscCall(MakeDotList(nrows, ndots, specs, list));
  for (int d = 0; d < ndots; ++d)
    PetscCheck(specs[d].kind != DotKind::DOT_INPUT || ncols >= nrows, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "DOT_INPUT pairs out[i] with in[i], but the matrix has %" PetscInt_FMT " rows and only %" PetscInt_FMT " columns", nrows, ncols);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   SpMVDots - Backend::spmv_dots on the device: one kernel launch (none for 0 rows) and, when
   ndots > 0, one device->host copy of the ndots results
*/
PetscErrorCode SpMVDots(const CSRView *A, const PetscScalar *wl, const PetscScalar *wr, const PetscScalar *in, PetscScalar *out, int ndots, const DotSpec *specs, PetscScalar *dots)
{
  const int    lanes  = CSRLanes(A);
  const void  *kernel = lanes == 2 ? (const void *)CSRDotsKernel<2> : lanes == 4 ? (const void *)CSRDotsKernel<4> : lanes == 8 ? (const void *)CSRDotsKernel<8> : lanes == 16 ? (const void *)CSRDotsKernel<16> : (const void *)CSRDotsKernel<32>;
  Partition    part;
  Reduction    red;
  DotList      list;
  cudaStream_t stream;

  PetscFunctionBegin;
  PetscCall(PartitionRowsWave(kernel, A->nrows, lanes, &part));
  PetscCall(CheckProduct(A->nrows, A->ncols, ndots, specs, &list));
  if (part.nblocks) {
    PetscCall(GetStream(&stream));
    if (ndots) PetscCall(GetReduction(ndots, part.nblocks, &red));
    switch (lanes) {
    case 2:
      CSRDotsKernel<2><<<part.nblocks, BLOCK_SIZE, 0, stream>>>(A->nrows, A->rowptr, A->colidx, A->vals, wl, wr, in, out, list, red);
      break;
    case 4:
      CSRDotsKernel<4><<<part.nblocks, BLOCK_SIZE, 0, stream>>>(A->nrows, A->rowptr, A->colidx, A->vals, wl, wr, in, out, list, red);
      break;
    case 8:
      CSRDotsKernel<8><<<part.nblocks, BLOCK_SIZE, 0, stream>>>(A->nrows, A->rowptr, A->colidx, A->vals, wl, wr, in, out, list, red);
      break;
    case 16:
      CSRDotsKernel<16><<<part.nblocks, BLOCK_SIZE, 0, stream>>>(A->nrows, A->rowptr, A->colidx, A->vals, wl, wr, in, out, list, red);
      break;
    default:
      CSRDotsKernel<32><<<part.nblocks, BLOCK_SIZE, 0, stream>>>(A->nrows, A->rowptr, A->colidx, A->vals, wl, wr, in, out, list, red);
    }
    FusedKSPCheckLaunch();
    counters.launches++;
  }
  PetscCall(FinishReduction(ndots, part.nblocks, dots));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   SpMVSELLDots - Backend::spmv_sell_dots on the device: one kernel launch (none for 0 rows) and,
   when ndots > 0, one device->host copy of the ndots results
*/
PetscErrorCode SpMVSELLDots(const SELLView *A, const PetscScalar *wl, const PetscScalar *wr, const PetscScalar *in, PetscScalar *out, int ndots, const DotSpec *specs, PetscScalar *dots)
{
  const void  *kernel = A->threads == 1 ? (const void *)SELLDotsKernel<1> : A->threads == 2 ? (const void *)SELLDotsKernel<2> : A->threads == 4 ? (const void *)SELLDotsKernel<4> : (const void *)SELLDotsKernel<8>;
  Partition    part;
  Reduction    red;
  DotList      list;
  cudaStream_t stream;

  PetscFunctionBegin;
  PetscCall(CheckProduct(A->nrows, A->ncols, ndots, specs, &list));
  PetscCheck(A->threads == 1 || A->threads == 2 || A->threads == 4 || A->threads == 8, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "SELL-P threads per row must be 1, 2, 4 or 8, not %d", A->threads);
  PetscCall(PartitionRowsWave(kernel, A->nrows, A->threads, &part));
  if (part.nblocks) {
    PetscCall(GetStream(&stream));
    if (ndots) PetscCall(GetReduction(ndots, part.nblocks, &red));
    switch (A->threads) {
    case 1:
      SELLDotsKernel<1><<<part.nblocks, BLOCK_SIZE, 0, stream>>>(A->nrows, A->sliceptr, A->colidx, A->vals, wl, wr, in, out, list, red);
      break;
    case 2:
      SELLDotsKernel<2><<<part.nblocks, BLOCK_SIZE, 0, stream>>>(A->nrows, A->sliceptr, A->colidx, A->vals, wl, wr, in, out, list, red);
      break;
    case 4:
      SELLDotsKernel<4><<<part.nblocks, BLOCK_SIZE, 0, stream>>>(A->nrows, A->sliceptr, A->colidx, A->vals, wl, wr, in, out, list, red);
      break;
    default:
      SELLDotsKernel<8><<<part.nblocks, BLOCK_SIZE, 0, stream>>>(A->nrows, A->sliceptr, A->colidx, A->vals, wl, wr, in, out, list, red);
    }
    FusedKSPCheckLaunch();
    counters.launches++;
  }
  PetscCall(FinishReduction(ndots, part.nblocks, dots));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   Dots - Backend::dots on the device: one kernel launch and one device->host copy of the
   ndots results (none of either when n == 0 or ndots == 0)
*/
PetscErrorCode Dots(PetscInt n, const PetscScalar *in, const PetscScalar *out, int ndots, const DotSpec *specs, PetscScalar *dots)
{
  Partition    part;
  Reduction    red;
  DotList      list;
  cudaStream_t stream;

  PetscFunctionBegin;
  PetscCall(PartitionWave((const void *)DotsKernel, ndots ? n : 0, &part));
  PetscCheck(n >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Negative length %" PetscInt_FMT, n);
  PetscCall(MakeDotList(n, ndots, specs, &list));
  if (part.nblocks) {
    PetscCall(GetStream(&stream));
    PetscCall(GetReduction(ndots, part.nblocks, &red));
    DotsKernel<<<part.nblocks, BLOCK_SIZE, 0, stream>>>(n, part.chunk, in, out, list, red);
    FusedKSPCheckLaunch();
    counters.launches++;
  }
  PetscCall(FinishReduction(ndots, part.nblocks, dots));
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace cuda
} // namespace fusedksp
