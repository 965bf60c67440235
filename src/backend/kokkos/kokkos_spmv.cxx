/* Kokkos backend: sparse matrix-vector products (CSR, SELL-P) fused with dot products of the result */
#include "backend/kokkos/kokkos_reduce.hpp"

namespace fusedksp
{
namespace kokkos
{

/* Unrolls the loop that follows by 4 on a GPU, so that the loads of 4 entries are in flight at once */
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#define FUSEDKSP_UNROLL4 _Pragma("unroll 4")
#else
#define FUSEDKSP_UNROLL4
#endif

/* The product of row i of a CSR matrix with wr .* in */
KOKKOS_INLINE_FUNCTION PetscScalar CSRRow(const PetscInt *rowptr, const PetscInt *colidx, const PetscScalar *vals, const PetscScalar *wr, const PetscScalar *in, PetscInt i)
{
  const PetscInt end = rowptr[i + 1];
  PetscScalar    sum = 0;

  if (wr) {
    FUSEDKSP_UNROLL4
    for (PetscInt k = rowptr[i]; k < end; ++k) sum += vals[k] * (wr[colidx[k]] * in[colidx[k]]);
  } else {
    FUSEDKSP_UNROLL4
    for (PetscInt k = rowptr[i]; k < end; ++k) sum += vals[k] * in[colidx[k]];
  }
  return sum;
}

/* The product of row i of a SELL-P matrix (FUSED_SELL_HEIGHT rows per slice, T entries per row and step; T = 0: the
   matrix's threads per row, A->threads, at run time): the steps of the row FUSED_SELL_HEIGHT * T entries apart, the
   T entries of a step in turn */
template <int T> struct SELLRows {
  /* an input read at the rows' column indices: through the read-only data cache on a GPU */
  using Gathered = Kokkos::View<const PetscScalar *, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged | Kokkos::RandomAccess>>;

  const PetscInt64  *sliceptr;
  const PetscInt    *colidx;
  const PetscScalar *vals;
  Gathered           wr, in; /* wr.data() NULL: no column scaling */
  PetscInt64         threads;

  KOKKOS_INLINE_FUNCTION PetscScalar operator()(PetscInt i) const
  {
    constexpr PetscInt64 H = FUSED_SELL_HEIGHT;
    const PetscInt64     t = T ? T : threads, s = i / H, end = sliceptr[s + 1];
    PetscScalar          sum = 0;

    FUSEDKSP_UNROLL4
    for (PetscInt64 step = sliceptr[s] + (i % H) * t; step < end; step += H * t)
      for (PetscInt64 k = step; k < step + t; ++k) {
        const PetscInt c = colidx[k];
        if (c >= 0) sum += vals[k] * (wr.data() ? wr(c) * in(c) : in(c));
      }
    return sum;
  }
};

/* The sum of term(i) over [start, end) in SIMD_LANES partial sums (entry i to lane (i - start) mod SIMD_LANES, the
   tail to lane 0), then the lanes in order: independent additions, so a chunk in the L1 cache is summed at the rate
   of its loads instead of the latency of one chain of additions (a third of the product's time at 6.5e4 rows) */
constexpr int SIMD_LANES = 8;

template <class Term> KOKKOS_INLINE_FUNCTION PetscScalar SimdSum(PetscInt start, PetscInt end, Term term)
{
  PetscScalar lane[SIMD_LANES] = {}, sum = 0;
  PetscInt    i = start;

  for (; i + SIMD_LANES <= end; i += SIMD_LANES)
#pragma omp simd
    for (int l = 0; l < SIMD_LANES; ++l) lane[l] += term(i + l);
  for (; i < end; ++i) lane[0] += term(i);
  for (int l = 0; l < SIMD_LANES; ++l) sum += lane[l];
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

/* The update of a row's sum s that is a RowUpdate with only its left weights (the sparse products of the solvers):
   wl_i s, as RowUpdateValue() gives it exactly, without the other fields' tests and products in every row (on CPU
   threads they cost as much as a row's loads at sizes in cache; on a GPU they hold registers and the closure grows) */
struct ScaleUpdate {
  const PetscScalar *wl;
};

/* Whether a RowUpdate is a ScaleUpdate */
inline bool IsScaleUpdate(const RowUpdate &f)
{
  return !f.add && !f.u && !f.v && f.sign == 1 && f.gamma == 1;
}

KOKKOS_INLINE_FUNCTION PetscScalar UpdateValue(const RowUpdate &f, PetscInt i, PetscScalar s)
{
  return RowUpdateValue(f, i, s);
}
KOKKOS_INLINE_FUNCTION PetscScalar UpdateValue(const ScaleUpdate &f, PetscInt i, PetscScalar s)
{
  return f.wl ? f.wl[i] * s : s;
}

/* The update f (a RowUpdate or a ScaleUpdate) of row(i) */
template <class Row, class Update> KOKKOS_INLINE_FUNCTION PetscScalar RowValue(const Row &row, const Update &f, PetscInt i)
{
  return UpdateValue(f, i, row(i));
}

/* out[i] = the update f of row(i), and the value */
template <class Row, class Update> KOKKOS_INLINE_FUNCTION PetscScalar RowOut(const Row &row, const Update &f, PetscScalar *out, PetscInt i)
{
  return out[i] = RowValue(row, f, i);
}

/* out[i] = the RowUpdate f of row(i) with its ND dot products, ND a compile-time count, stored to dots (or the reduce target): on
   the host each chunk computes its rows of out, then the dot products over them while they are in cache, one loop
   per dot; on a GPU each row adds its dot terms at once, read before out[i] is stored (the compiler cannot tell
   out from the dot products' vectors: their loads would wait for the store) */
template <int ND, class Row, class Update> static PetscErrorCode RowsDotsN(const char *label, PetscInt nrows, const Row &row, const Update &f, const PetscScalar *in, PetscScalar *out, const DotSpecs &sp, PetscScalar *dots)
{
  PetscFunctionBegin;
  PetscCall(ChunkRangePartials<ND>(
      label, nrows, ReduceChunkLimit(nrows), ND,
      KOKKOS_LAMBDA(const PetscInt start, const PetscInt end, PetscScalar *KOKKOS_RESTRICT p) {
        for (PetscInt i = start; i < end; ++i) RowOut(row, f, out, i);
        for (int d = 0; d < ND; ++d) p[d] = ChunkDot(sp.spec[d], start, end, in, out);
      },
      KOKKOS_LAMBDA(const PetscInt i, PetscScalar *KOKKOS_RESTRICT p) {
        const PetscScalar oi = RowValue(row, f, i);
        for (int d = 0; d < ND; ++d) p[d] += DotTerm(sp.spec[d], i, in, oi);
        out[i] = oi;
      },
      [dots](PetscInt nchunks, const PetscScalar *part) {
        PetscScalar all[ND];

        SumPartials(nchunks, ND, part, all);
        return StoreResults(ND, all, dots);
      },
      FUSED_SELL_HEIGHT)); /* chunks of whole slices: a warp reads one slice (the products' partials need not follow ReduceChunks()) */
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* out[i] = the RowUpdate f of row(i) with the dot products of out: one pass over the rows, a plain parallel loop
   without dot products */
template <class Row, class Update> static PetscErrorCode RowsDotsWith(const char *label, PetscInt nrows, const Row &row, const Update &f, const PetscScalar *in, PetscScalar *out, int ndots, const DotSpec *specs, PetscScalar *dots)
{
  DotSpecs sp;

  PetscFunctionBegin;
  PetscCall(CopySpecs(ndots, specs, &sp));
  static_assert(FUSED_MAX_DOTS == 4, "RowsDots() dispatches 0 to 4 dot products");
  switch (ndots) {
  case 0:
    ForEach(
        label, nrows, KOKKOS_LAMBDA(const PetscInt i) { RowOut(row, f, out, i); });
    target = {};
    break;
  case 1:
    PetscCall(RowsDotsN<1>(label, nrows, row, f, in, out, sp, dots));
    break;
  case 2:
    PetscCall(RowsDotsN<2>(label, nrows, row, f, in, out, sp, dots));
    break;
  case 3:
    PetscCall(RowsDotsN<3>(label, nrows, row, f, in, out, sp, dots));
    break;
  default:
    PetscCall(RowsDotsN<4>(label, nrows, row, f, in, out, sp, dots));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* RowsDotsWith() with the RowUpdate f, as a ScaleUpdate where it is one (the solvers' products) */
template <class Row> static PetscErrorCode RowsDots(const char *label, PetscInt nrows, const Row &row, const RowUpdate &f, const PetscScalar *in, PetscScalar *out, int ndots, const DotSpec *specs, PetscScalar *dots)
{
  PetscFunctionBegin;
  if (IsScaleUpdate(f)) {
    PetscCall(RowsDotsWith(label, nrows, row, ScaleUpdate{f.wl}, in, out, ndots, specs, dots));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(RowsDotsWith(label, nrows, row, f, in, out, ndots, specs, dots));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The sparse product of exactly one of csr and sell, each row's sum stored as the RowUpdate f, with the dot products
   of the result (nothing once the reduce target's stop flag is set) */
static PetscErrorCode ProductRows(const CSRView *csr, const SELLView *sell, const RowUpdate &f, const PetscScalar *wr, const PetscScalar *in, PetscScalar *out, int ndots, const DotSpec *specs, PetscScalar *dots)
{
  PetscFunctionBegin;
  PetscCheck(!csr != !sell, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONG, "A sparse product takes exactly one of a CSR and a SELL-P matrix");
  if (TargetStopped()) {
    counters.launches++;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  if (csr) {
    const PetscInt    *rowptr = csr->rowptr, *colidx = csr->colidx;
    const PetscScalar *vals = csr->vals;

    PetscCall(RowsDots(
        "fusedksp::spmv_dots", csr->nrows, KOKKOS_LAMBDA(const PetscInt i) { return CSRRow(rowptr, colidx, vals, wr, in, i); }, f, in, out, ndots, specs, dots));
  } else {
    const PetscInt64   T = sell->threads, *sliceptr = sell->sliceptr;
    const PetscInt    *colidx = sell->colidx;
    const PetscScalar *vals   = sell->vals;

    PetscCheck(T == 1 || T == 2 || T == 4 || T == 8, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "SELL-P threads per row must be 1, 2, 4 or 8, not %d", sell->threads);
    const SELLRows<0>::Gathered gwr(wr, wr ? sell->ncols : 0), gin(in, sell->ncols);
    if (T == 1) /* rows of fewer than 16 entries on average (SELLThreadsPerRow()): the loop over a row's steps alone */
      PetscCall(RowsDots("fusedksp::spmv_sell_dots", sell->nrows, SELLRows<1>{sliceptr, colidx, vals, gwr, gin, T}, f, in, out, ndots, specs, dots));
    else
      PetscCall(RowsDots("fusedksp::spmv_sell_dots", sell->nrows, SELLRows<0>{sliceptr, colidx, vals, gwr, gin, T}, f, in, out, ndots, specs, dots));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

#include "backend/spmv_entries.hpp"

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
