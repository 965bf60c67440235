/*
   CUDA backend: the rows of a sparse product, shared by the SpMV kernels (cuda_spmv.cu) and the
   persistent chunk kernels (cuda_*_chunk.cu): how rows are cut into thread blocks, one thread's part
   of a row's sum in CSR and SELL-P, and the Rows types that hold either format.  The input vector is read through a load policy: cached
   (written before the kernel) or from L2 only (written by other blocks of the same kernel, whose
   L1 copies may be stale).
*/
#pragma once

#include "backend/cuda/cuda_common.cuh"

namespace fusedksp
{
namespace cuda
{

/* Rows per thread block of a sparse product with `lanes` threads per row: whole passes of the
   block, at least one, at most maxblocks blocks.  With one pass per block for small
   matrices every thread handles one row, so the kernel's latency is that of one row.            */
inline Partition PartitionRows(PetscInt nrows, int lanes, PetscInt maxblocks = FUSED_REDUCE_BLOCKS)
{
  const PetscInt64 per_pass = BLOCK_SIZE / lanes;
  const PetscInt64 passes   = (nrows + per_pass - 1) / per_pass;
  Partition        part;

  if (nrows > 0) {
    const PetscInt64 nblocks = PetscMin(passes, (PetscInt64)maxblocks);
    part.chunk               = (PetscInt)(((passes + nblocks - 1) / nblocks) * per_pass);
    part.nblocks             = (int)((nrows + part.chunk - 1) / part.chunk);
  }
  return part;
}

/* PartitionRows() on at most WaveBlocks(kernel) blocks */
inline PetscErrorCode PartitionRowsWave(const void *kernel, PetscInt nrows, int lanes, Partition *part)
{
  PetscInt nblocks = 0;

  PetscFunctionBegin;
  if (nrows > 0) PetscCall(WaveBlocks(kernel, &nblocks));
  *part = PartitionRows(nrows, lanes, nblocks);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Threads per CSR row: the smallest power of two >= the average row length divided by
   tuning.csr_entries_per_lane, 2 to 32 (8 when the number of entries is not given)             */
inline int CSRLanes(const CSRView *A)
{
  const PetscInt64 per   = tuning.csr_entries_per_lane;
  const PetscInt64 avg   = A->nnz < 0 ? 8 : (A->nrows ? (A->nnz + per * A->nrows - 1) / (per * A->nrows) : 0);
  int              lanes = 2;

  while (lanes < 32 && lanes < avg) lanes *= 2;
  return lanes;
}

/* Load policies of the input vector of a row sum */
struct LoadCached {
  __device__ PetscScalar operator()(const PetscScalar *__restrict__ a, PetscInt64 i) const
  {
    return a[i];
  }
};
struct LoadL2 {
  __device__ PetscScalar operator()(const PetscScalar *a, PetscInt64 i) const
  {
    return __ldcg(a + i);
  }
};

/* CSR: lane `lane` of the LANES threads of row `row` sums the row's entries lane, lane + LANES, ... */
template <int LANES, class Load>
__device__ __forceinline__ PetscScalar CSRRowPart(const PetscInt *__restrict__ rowptr, const PetscInt *__restrict__ colidx, const PetscScalar *__restrict__ vals, const PetscScalar *__restrict__ wr, const PetscScalar *__restrict__ in, PetscInt64 row,
                                                  int lane, Load load)
{
  const PetscInt row_end = rowptr[row + 1];
  PetscScalar    sum     = 0;

#pragma unroll 4
  for (PetscInt k = rowptr[row] + lane; k < row_end; k += LANES) {
    const PetscInt c = colidx[k];
    sum += vals[k] * (wr ? wr[c] * load(in, c) : load(in, c));
  }
  return sum;
}

/* SELL-P (see SELLView): thread t of the T threads of row `row` reads the row's entries j * T + t,
   consecutive threads reading consecutive memory; loads of successive j are independent.      */
template <int T, class Load>
__device__ __forceinline__ PetscScalar SELLRowPart(const PetscInt64 *__restrict__ sliceptr, const PetscInt *__restrict__ colidx, const PetscScalar *__restrict__ vals, const PetscScalar *__restrict__ wr, const PetscScalar *__restrict__ in,
                                                   PetscInt64 row, int t, Load load)
{
  constexpr int    STRIDE = FUSED_SELL_HEIGHT * T; /* entries between j and j + 1 */
  const PetscInt64 slice  = row / FUSED_SELL_HEIGHT;
  const PetscInt64 begin  = sliceptr[slice] + (row % FUSED_SELL_HEIGHT) * T + t;
  const PetscInt64 end    = sliceptr[slice + 1];
  PetscScalar      sum    = 0;

#pragma unroll 4
  for (PetscInt64 k = begin; k < end; k += STRIDE) {
    const PetscInt c = colidx[k];
    if (c >= 0) sum += vals[k] * (wr ? wr[c] * load(in, c) : load(in, c));
  }
  return sum;
}

/* The rows of a CSR or SELL-P matrix as one type for the kernels of either format: lane `lane` of the
   LANES threads of a row sums its part of the row, entry c of the input being load(in, c), times wr[c] if
   wr is given */
template <int L> struct CSRRows {
  static constexpr int                         LANES = L;
  CSRView                                      A;
  template <class Load> __device__ PetscScalar Part(PetscInt64 row, int lane, const PetscScalar *wr, const PetscScalar *in, Load load) const
  {
    return CSRRowPart<L>(A.rowptr, A.colidx, A.vals, wr, in, row, lane, load);
  }
};
template <int T> struct SELLRows {
  static constexpr int                         LANES = T;
  SELLView                                     A;
  template <class Load> __device__ PetscScalar Part(PetscInt64 row, int lane, const PetscScalar *wr, const PetscScalar *in, Load load) const
  {
    return SELLRowPart<T>(A.sliceptr, A.colidx, A.vals, wr, in, row, lane, load);
  }
};

/* launch(ROWS<L>{view}) with L the first of LANES... equal to lanes (the last one when none is) */
template <template <int> class ROWS, int L, int... MORE, class View, class Launch> PetscErrorCode LaunchWithLanes(int lanes, const View &view, Launch &launch)
{
  if constexpr (sizeof...(MORE) == 0)
    return launch(ROWS<L>{view});
  else
    return lanes == L ? launch(ROWS<L>{view}) : LaunchWithLanes<ROWS, MORE...>(lanes, view, launch);
}

/* Calls launch(rows) with the Rows type of the matrix (exactly one of csr and sell): SELL-P with its
   threads per row, CSR with CSRLanes()                                                            */
template <class Launch> PetscErrorCode DispatchRows(const CSRView *csr, const SELLView *sell, Launch &&launch)
{
  PetscFunctionBegin;
  PetscCheck(!csr != !sell, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONG, "A sparse product needs exactly one of a CSR and a SELL-P matrix");
  if (sell) {
    PetscCheck(sell->threads == 1 || sell->threads == 2 || sell->threads == 4 || sell->threads == 8, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "SELL-P threads per row must be 1, 2, 4 or 8, not %d", sell->threads);
    PetscCall(LaunchWithLanes<SELLRows, 1, 2, 4, 8>(sell->threads, *sell, launch));
  } else
    PetscCall(LaunchWithLanes<CSRRows, 2, 4, 8, 16, 32>(CSRLanes(csr), *csr, launch));
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace cuda
} // namespace fusedksp
