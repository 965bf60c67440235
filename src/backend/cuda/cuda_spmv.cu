/* CUDA backend: CSR sparse matrix-vector product fused with the first stage of dot products */
#include "backend/cuda/cuda_common.cuh"

namespace fusedksp
{
namespace cuda
{

/* The rows [begin, end) of out = wl .* (A (wr .* in)) with LANES threads per row (a power of two
   <= 32, so a row's threads are lanes of one warp): each thread sums a strided part of the row,
   __shfl_down_sync adds the parts, and the row's first lane stores out[row] and adds its dot
   terms to acc.  begin/end are the same in the whole block, so every lane of every warp runs the
   same number of passes and takes part in every shuffle.                                      */
template <int LANES>
__device__ inline void SpMVRows(const PetscInt *rowptr, const PetscInt *colidx, const PetscScalar *vals, PetscInt64 begin, PetscInt64 end, const PetscScalar *wl, const PetscScalar *wr, const PetscScalar *in, PetscScalar *out, const DotList &dots,
                                PetscScalar (&acc)[FUSED_MAX_DOTS])
{
  constexpr int ROWS_PER_PASS = BLOCK_SIZE / LANES;
  const int     lane          = threadIdx.x % LANES;

  static_assert(LANES >= 2 && LANES <= 32 && (LANES & (LANES - 1)) == 0, "LANES must be a power of two in [2, 32]");
  for (PetscInt64 first = begin; first < end; first += ROWS_PER_PASS) {
    const PetscInt64 row = first + threadIdx.x / LANES;
    PetscScalar      sum = 0;

    if (row < end) {
      const PetscInt row_end = rowptr[row + 1];
      for (PetscInt k = rowptr[row] + lane; k < row_end; k += LANES) {
        const PetscInt c = colidx[k];
        sum += vals[k] * (wr ? wr[c] * in[c] : in[c]);
      }
    }
#pragma unroll
    for (int offset = LANES / 2; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset, LANES);
    if (lane == 0 && row < end) {
      if (wl) sum *= wl[row];
      out[row] = sum;
      AddDotTerms(dots, row, in, sum, acc);
    }
  }
}

/* One thread block per chunk of rows.  The threads per row are picked per block from the average
   length of the chunk's rows (the smallest power of two >= it, 2 to 32), so no host knowledge of
   the matrix (and no copy) is needed; every block then writes its partials of the dots.       */
__global__ void SpMVDotsKernel(PetscInt nrows, PetscInt chunk, const PetscInt *rowptr, const PetscInt *colidx, const PetscScalar *vals, const PetscScalar *wl, const PetscScalar *wr, const PetscScalar *in, PetscScalar *out,
                               const __grid_constant__ DotList dots, PetscScalar *partials)
{
  const ChunkRange range               = BlockChunk(nrows, chunk);
  const PetscInt64 nnz                 = rowptr[range.end] - rowptr[range.begin];
  const PetscInt64 avg                 = (nnz + (range.end - range.begin) - 1) / (range.end - range.begin);
  PetscScalar      acc[FUSED_MAX_DOTS] = {};

  if (avg <= 2)
    SpMVRows<2>(rowptr, colidx, vals, range.begin, range.end, wl, wr, in, out, dots, acc);
  else if (avg <= 4)
    SpMVRows<4>(rowptr, colidx, vals, range.begin, range.end, wl, wr, in, out, dots, acc);
  else if (avg <= 8)
    SpMVRows<8>(rowptr, colidx, vals, range.begin, range.end, wl, wr, in, out, dots, acc);
  else if (avg <= 16)
    SpMVRows<16>(rowptr, colidx, vals, range.begin, range.end, wl, wr, in, out, dots, acc);
  else
    SpMVRows<32>(rowptr, colidx, vals, range.begin, range.end, wl, wr, in, out, dots, acc);
  WriteBlockPartials(acc, dots.count, partials);
}

/* The dot products of Backend::dots: the block's partials of the dot terms of in and out */
__global__ void DotsKernel(PetscInt n, PetscInt chunk, const PetscScalar *in, const PetscScalar *out, const __grid_constant__ DotList dots, PetscScalar *partials)
{
  const ChunkRange range               = BlockChunk(n, chunk);
  PetscScalar      acc[FUSED_MAX_DOTS] = {};

  for (PetscInt64 i = range.begin + threadIdx.x; i < range.end; i += blockDim.x) AddDotTerms(dots, i, in, out[i], acc);
  WriteBlockPartials(acc, dots.count, partials);
}

/*
   SpMVDots - Backend::spmv_dots on the device: one kernel launch (none for 0 rows) and, when
   ndots > 0, one device->host copy of the ndots x nblocks partials
*/
PetscErrorCode SpMVDots(const CSRView *A, const PetscScalar *wl, const PetscScalar *wr, const PetscScalar *in, PetscScalar *out, int ndots, const DotSpec *specs, PetscScalar *dots)
{
  const Partition part     = PartitionRange(A->nrows);
  PetscScalar    *partials = nullptr;
  DotList         list;
  cudaStream_t    stream;

  PetscFunctionBegin;
  PetscCheck(A->nrows >= 0 && A->ncols >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Negative matrix size %" PetscInt_FMT " x %" PetscInt_FMT, A->nrows, A->ncols);
  PetscCall(MakeDotList(ndots, specs, &list));
  for (int d = 0; d < ndots; ++d)
    PetscCheck(specs[d].kind != DotKind::DOT_INPUT || A->ncols >= A->nrows, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "DOT_INPUT pairs out[i] with in[i], but the matrix has %" PetscInt_FMT " rows and only %" PetscInt_FMT " columns", A->nrows, A->ncols);
  if (part.nblocks) {
    PetscCall(GetStream(&stream));
    if (ndots) PetscCall(GetPartials((size_t)ndots * part.nblocks, &partials));
    SpMVDotsKernel<<<part.nblocks, BLOCK_SIZE, 0, stream>>>(A->nrows, part.chunk, A->rowptr, A->colidx, A->vals, wl, wr, in, out, list, partials);
    FusedKSPCheckLaunch();
    counters.launches++;
  }
  PetscCall(SumPartials(ndots, part.nblocks, dots));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   Dots - Backend::dots on the device: one kernel launch and one device->host copy of the
   ndots x nblocks partials (none of either when n == 0 or ndots == 0)
*/
PetscErrorCode Dots(PetscInt n, const PetscScalar *in, const PetscScalar *out, int ndots, const DotSpec *specs, PetscScalar *dots)
{
  const Partition part = PartitionRange(ndots ? n : 0);
  PetscScalar    *partials;
  DotList         list;
  cudaStream_t    stream;

  PetscFunctionBegin;
  PetscCheck(n >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Negative length %" PetscInt_FMT, n);
  PetscCall(MakeDotList(ndots, specs, &list));
  if (part.nblocks) {
    PetscCall(GetStream(&stream));
    PetscCall(GetPartials((size_t)ndots * part.nblocks, &partials));
    DotsKernel<<<part.nblocks, BLOCK_SIZE, 0, stream>>>(n, part.chunk, in, out, list, partials);
    FusedKSPCheckLaunch();
    counters.launches++;
  }
  PetscCall(SumPartials(ndots, part.nblocks, dots));
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace cuda
} // namespace fusedksp
