/* CUDA backend: sparse matrix-vector products (CSR, SELL-P) fused with dot products of the result */
#include "backend/cuda/cuda_rows.cuh"
#include <type_traits>

namespace fusedksp
{
namespace cuda
{

/* Stores out[row] = the RowUpdate f of the row's sum and adds its dot terms (the first lane of the row) */
__device__ inline void StoreRow(PetscInt64 row, PetscScalar sum, const RowUpdate &f, const PetscScalar *in, PetscScalar *out, const DotList &dots, PetscScalar (&acc)[FUSED_MAX_DOTS])
{
  const PetscScalar o = RowUpdateValue(f, row, sum);

  out[row] = o;
  AddDotTerms(dots, row, in, o, acc);
}

/* One kernel for CSR and SELL-P (Rows: CSRRows, SELLRows): passes of BLOCK_SIZE / LANES rows dealt to the
   thread blocks in turn (NextChunk()), LANES threads per row (CSR: chosen on the host from the matrix's
   average row length; SELL-P: the format's threads per row): each thread sums its part of the row, the
   shuffles add the parts; then the block's reductions.                                               */
template <class Rows>
__global__ void SpMVDotsKernel(const __grid_constant__ Rows A, const __grid_constant__ RowUpdate f, const PetscScalar *__restrict__ wr, const PetscScalar *__restrict__ in, PetscScalar *__restrict__ out, const __grid_constant__ DotList dots,
                               const Reduction red)
{
  constexpr int  ROWS_PER_PASS       = BLOCK_SIZE / Rows::LANES;
  const int      lane                = threadIdx.x % Rows::LANES;
  const PetscInt nrows               = A.A.nrows;
  PetscScalar    acc[FUSED_MAX_DOTS] = {};

  if (Stopped(red)) return;
  for (ChunkRange range = BlockChunk(nrows, ROWS_PER_PASS); range.begin < nrows; range = NextChunk(range, nrows, ROWS_PER_PASS)) {
    const PetscInt64 row = range.begin + threadIdx.x / Rows::LANES;
    PetscScalar      sum = 0;

    if (row < range.end) sum = A.Part(row, lane, wr, in, LoadCached());
    if (Rows::LANES > 1) sum = LaneSum<Rows::LANES>(sum);
    if (lane == 0 && row < range.end) StoreRow(row, sum, f, in, out, dots, acc);
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

/* The sparse product of exactly one of csr and sell, each row's sum stored as the RowUpdate f, with its dot products:
   one kernel launch (none for 0 rows) and, when ndots > 0, one device->host copy of the ndots results */
static PetscErrorCode ProductRows(const CSRView *csr, const SELLView *sell, const RowUpdate &f, const PetscScalar *wr, const PetscScalar *in, PetscScalar *out, int ndots, const DotSpec *specs, PetscScalar *dots)
{
  const PetscInt nrows = csr ? csr->nrows : sell->nrows;
  Partition      part;
  DotList        list;

  PetscFunctionBegin;
  PetscCall(CheckProduct(nrows, csr ? csr->ncols : sell->ncols, ndots, specs, &list));
  PetscCall(DispatchRows(csr, sell, [&](const auto &rows) {
    using Rows = std::decay_t<decltype(rows)>;
    Reduction    red;
    cudaStream_t stream;

    PetscFunctionBegin;
    PetscCall(PartitionRowsWave((const void *)SpMVDotsKernel<Rows>, nrows, Rows::LANES, &part));
    if (part.nblocks) {
      PetscCall(GetStream(&stream));
      if (ndots) PetscCall(GetReduction(ndots, part.nblocks, &red));
      SpMVDotsKernel<Rows><<<part.nblocks, BLOCK_SIZE, 0, stream>>>(rows, f, wr, in, out, list, red);
      FusedKSPCheckLaunch();
      counters.launches++;
    }
    PetscFunctionReturn(PETSC_SUCCESS);
  }));
  PetscCall(FinishReduction(ndots, part.nblocks, dots));
  PetscFunctionReturn(PETSC_SUCCESS);
}

#include "backend/spmv_entries.hpp"

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
