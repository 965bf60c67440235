/* Kokkos backend: sparse matrix-vector products (CSR, SELL-P) fused with dot products of the result */
#include "backend/kokkos/kokkos_reduce.hpp"

namespace fusedksp
{
namespace kokkos
{

/* The product of row i of a CSR matrix with wr .* in */
KOKKOS_INLINE_FUNCTION PetscScalar CSRRow(const PetscInt *rowptr, const PetscInt *colidx, const PetscScalar *vals, const PetscScalar *wr, const PetscScalar *in, PetscInt i)
{
  PetscScalar sum = 0;
  if (wr)
    for (PetscInt k = rowptr[i]; k < rowptr[i + 1]; ++k) sum += vals[k] * (wr[colidx[k]] * in[colidx[k]]);
  else
    for (PetscInt k = rowptr[i]; k < rowptr[i + 1]; ++k) sum += vals[k] * in[colidx[k]];
  return sum;
}

/* The product of row i of a SELL-P matrix (FUSED_SELL_HEIGHT rows per slice, T entries per row and step) */
KOKKOS_INLINE_FUNCTION PetscScalar SELLRow(const PetscInt64 *sliceptr, const PetscInt *colidx, const PetscScalar *vals, PetscInt64 T, const PetscScalar *wr, const PetscScalar *in, PetscInt i)
{
  const PetscInt64 H = FUSED_SELL_HEIGHT, s = i / H, begin = sliceptr[s], len = (sliceptr[s + 1] - begin) / (H * T);
  PetscScalar      sum = 0;
  for (PetscInt64 j = 0; j < len; ++j)
    for (PetscInt64 t = 0; t < T; ++t) {
      const PetscInt64 k = begin + (j * H + i % H) * T + t;
      const PetscInt   c = colidx[k];
      if (c >= 0) sum += vals[k] * (wr ? wr[c] * in[c] : in[c]);
    }
  return sum;
}

/* The sum of term(i) over [start, end), in SIMD lanes */
template <class Term> KOKKOS_INLINE_FUNCTION PetscScalar SimdSum(PetscInt start, PetscInt end, Term term)
{
  PetscScalar sum = 0;
#pragma omp simd reduction(+ : sum)
  for (PetscInt i = start; i < end; ++i) sum += term(i);
  return sum;
}

/* The dot product s of a matrix-vector kernel (see DotKind) over the entries [start, end) of out */
KOKKOS_INLINE_FUNCTION PetscScalar ChunkDot(const DotSpec &s, PetscInt start, PetscInt end, const PetscScalar *in, const PetscScalar *out)
{
  const PetscScalar *v = s.vec, *w = s.weight;

  switch (s.kind) {
  case DotKind::DOT_INPUT:
    return SimdSum(start, end, [=](PetscInt i) { return out[i] * in[i]; });
  case DotKind::DOT_SELF:
    return SimdSum(start, end, [=](PetscInt i) { return out[i] * out[i]; });
  case DotKind::DOT_SELF_W:
    return SimdSum(start, end, [=](PetscInt i) { return out[i] * v[i] * out[i]; });
  case DotKind::DOT_VECTOR:
    return SimdSum(start, end, [=](PetscInt i) { return out[i] * v[i]; });
  case DotKind::DOT_VECTOR_W:
    return SimdSum(start, end, [=](PetscInt i) { return out[i] * w[i] * v[i]; });
  }
  return 0;
}

/* out[i] = wl[i] row(i), and the value */
template <class Row> KOKKOS_INLINE_FUNCTION PetscScalar RowOut(const Row &row, const PetscScalar *wl, PetscScalar *out, PetscInt i)
{
  const PetscScalar sum = row(i);
  return out[i]         = wl ? wl[i] * sum : sum;
}

/* out[i] = wl[i] row(i) with its ND dot products, ND a compile-time count, stored to dots (or the reduce target): on
   the host each chunk computes its rows of out, then the dot products over them while they are in cache, one loop
   per dot; on a GPU each row adds its dot terms at once */
template <int ND, class Row> static PetscErrorCode RowsDotsN(const char *label, PetscInt nrows, const Row &row, const PetscScalar *wl, const PetscScalar *in, PetscScalar *out, const DotSpecs &sp, PetscScalar *dots)
{
  PetscFunctionBegin;
  PetscCall(ChunkRangePartials<ND>(
      label, nrows, FUSED_REDUCE_BLOCKS, ND,
      KOKKOS_LAMBDA(const PetscInt start, const PetscInt end, PetscScalar *KOKKOS_RESTRICT p) {
        for (PetscInt i = start; i < end; ++i) RowOut(row, wl, out, i);
        for (int d = 0; d < ND; ++d) p[d] = ChunkDot(sp.spec[d], start, end, in, out);
      },
      KOKKOS_LAMBDA(const PetscInt i, PetscScalar *KOKKOS_RESTRICT p) {
        const PetscScalar oi = RowOut(row, wl, out, i);
        for (int d = 0; d < ND; ++d) p[d] += DotTerm(sp.spec[d], i, in, oi);
      },
      [dots](PetscInt nchunks, const PetscScalar *part) {
        PetscScalar all[ND];

        SumPartials(nchunks, ND, part, all);
        return StoreResults(ND, all, dots);
      }));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* out[i] = wl[i] row(i) with the dot products of out: one pass over the rows, a plain parallel loop
   without dot products */
template <class Row> static PetscErrorCode RowsDots(const char *label, PetscInt nrows, const Row &row, const PetscScalar *wl, const PetscScalar *in, PetscScalar *out, int ndots, const DotSpec *specs, PetscScalar *dots)
{
  DotSpecs sp;

  PetscFunctionBegin;
  PetscCall(CopySpecs(ndots, specs, &sp));
  static_assert(FUSED_MAX_DOTS == 4, "RowsDots() dispatches 0 to 4 dot products");
  switch (ndots) {
  case 0:
    ForEach(
        label, nrows, KOKKOS_LAMBDA(const PetscInt i) { RowOut(row, wl, out, i); });
    target = {};
    break;
  case 1:
    PetscCall(RowsDotsN<1>(label, nrows, row, wl, in, out, sp, dots));
    break;
  case 2:
    PetscCall(RowsDotsN<2>(label, nrows, row, wl, in, out, sp, dots));
    break;
  case 3:
    PetscCall(RowsDotsN<3>(label, nrows, row, wl, in, out, sp, dots));
    break;
  default:
    PetscCall(RowsDotsN<4>(label, nrows, row, wl, in, out, sp, dots));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::spmv_dots */
PetscErrorCode SpMVDots(const CSRView *A, const PetscScalar *wl, const PetscScalar *wr, const PetscScalar *in, PetscScalar *out, int ndots, const DotSpec *specs, PetscScalar *dots)
{
  const PetscInt    *rowptr = A->rowptr, *colidx = A->colidx;
  const PetscScalar *vals = A->vals;

  PetscFunctionBegin;
  if (TargetStopped()) {
    counters.launches++;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(RowsDots(
      "fusedksp::spmv_dots", A->nrows, KOKKOS_LAMBDA(const PetscInt i) { return CSRRow(rowptr, colidx, vals, wr, in, i); }, wl, in, out, ndots, specs, dots));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::spmv_sell_dots */
PetscErrorCode SpMVSELLDots(const SELLView *A, const PetscScalar *wl, const PetscScalar *wr, const PetscScalar *in, PetscScalar *out, int ndots, const DotSpec *specs, PetscScalar *dots)
{
  const PetscInt64   T = A->threads, *sliceptr = A->sliceptr;
  const PetscInt    *colidx = A->colidx;
  const PetscScalar *vals   = A->vals;

  PetscFunctionBegin;
  if (TargetStopped()) {
    counters.launches++;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCheck(T == 1 || T == 2 || T == 4 || T == 8, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "SELL-P threads per row must be 1, 2, 4 or 8, not %d", A->threads);
  PetscCall(RowsDots(
      "fusedksp::spmv_sell_dots", A->nrows, KOKKOS_LAMBDA(const PetscInt i) { return SELLRow(sliceptr, colidx, vals, T, wr, in, i); }, wl, in, out, ndots, specs, dots));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::dots */
PetscErrorCode Dots(PetscInt n, const PetscScalar *in, const PetscScalar *out, int ndots, const DotSpec *specs, PetscScalar *dots)
{
  DotSpecs sp;

  PetscFunctionBegin;
  if (TargetStopped()) {
    counters.launches++;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(CopySpecs(ndots, specs, &sp));
  if (!ndots) {
    target = {};
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(ChunkedSums<FUSED_MAX_DOTS>(
      "fusedksp::dots", n, ndots,
      KOKKOS_LAMBDA(const PetscInt i, PetscScalar *KOKKOS_RESTRICT part) {
        for (int d = 0; d < ndots; ++d) part[d] += DotTerm(sp.spec[d], i, in, out[i]);
      },
      [ndots, dots](const PetscScalar *all) { return StoreResults(ndots, all, dots); }));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::spmv_offdiag_dots */
PetscErrorCode SpMVOffDiagDots(const CSRView *B, const PetscInt *rows, const PetscScalar *wl, const PetscScalar *halo, const PetscScalar *in, PetscScalar *out, int ndots, const DotSpec *specs, PetscScalar *dots)
{
  const PetscInt    *rowptr = B->rowptr, *colidx = B->colidx;
  const PetscScalar *vals = B->vals;
  DotSpecs           sp;
  PetscScalar       *slot = target.slot;

  PetscFunctionBegin;
  PetscCall(CopySpecs(ndots, specs, &sp));
  if (TargetStopped()) PetscFunctionReturn(PETSC_SUCCESS);
  if (!ndots) {
    target = {};
    ForEach(
        "fusedksp::spmv_offdiag", B->nrows, KOKKOS_LAMBDA(const PetscInt k) {
          const PetscInt    i   = rows[k];
          const PetscScalar sum = CSRRow(rowptr, colidx, vals, nullptr, halo, k);
          out[i] += wl ? wl[i] * sum : sum;
        });
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(ChunkedSums<FUSED_MAX_DOTS>(
      "fusedksp::spmv_offdiag_dots", B->nrows, ndots,
      KOKKOS_LAMBDA(const PetscInt k, PetscScalar *KOKKOS_RESTRICT part) {
        const PetscInt    i   = rows[k];
        const PetscScalar old = out[i], sum = CSRRow(rowptr, colidx, vals, nullptr, halo, k);
        out[i] = old + (wl ? wl[i] * sum : sum);
        for (int d = 0; d < ndots; ++d) part[d] += DotTerm(sp.spec[d], i, in, out[i]) - DotTerm(sp.spec[d], i, in, old);
      },
      [ndots, slot, dots](const PetscScalar *change) {
        PetscScalar sums[FUSED_MAX_DOTS];

        if (slot) { /* the changes are added to the target, in the backend's memory */
          PetscCall(CopyArgsToHost(sums, slot, ndots * sizeof(PetscScalar)));
          for (int d = 0; d < ndots; ++d) sums[d] += change[d];
          PetscCall(CopyArgsToBackend(slot, sums, ndots * sizeof(PetscScalar)));
        } else
          for (int d = 0; d < ndots; ++d) dots[d] += change[d];
        return PETSC_SUCCESS;
      }));
  target = {};
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace kokkos
} // namespace fusedksp
