/* Kokkos backend: the Gram-Schmidt kernels of simpler GMRES (seed 000 Alg. 6), their chunks and their block forms (CA-GMRES) */
#include "backend/kokkos/kokkos_reduce.hpp"
#include <vector>

namespace fusedksp
{
namespace kokkos
{

/* The second stage of chunked dot products: the nchunks x nd partials (host memory) added in chunk order, the results
   stored (dots, or the reduce target) */
static PetscErrorCode FinishChunkPartials(PetscInt nchunks, int nd, const PetscScalar *part, PetscScalar *dots)
{
  PetscScalar *all;

  PetscFunctionBegin;
  PetscCall(PetscMalloc1(nd, &all));
  SumPartials(nchunks, nd, part, all);
  PetscCall(StoreResults(nd, all, dots));
  PetscCall(PetscFree(all));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::mdot: on the host each chunk of y is read once per four dots while it is in cache, every dot summing
   its chunk in SIMD lanes (the host reference in index order: the two agree to rounding); on a GPU a team per
   chunk and group of dots */
PetscErrorCode MDot(PetscInt n, PetscInt nv, const PetscScalar *const *V, const PetscScalar *y, PetscBool selfdot, PetscScalar *dots)
{
  const PetscScalar *const *dV   = nullptr;
  const int                 nd   = (int)nv + (selfdot ? 1 : 0);
  const bool                self = selfdot;

  PetscFunctionBegin;
  if (TargetStopped()) {
    counters.launches++;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  if (n > 0 && nd > 0) PetscCall(PointerArray(nv, V, &dV));
  const auto chunk = KOKKOS_LAMBDA(const PetscInt start, const PetscInt end, PetscScalar *out)
  {
    PetscInt j = 0;
    for (; j + 4 <= nv; j += 4) { /* four dots per pass over the chunk of y */
      const PetscScalar *v0 = dV[j], *v1 = dV[j + 1], *v2 = dV[j + 2], *v3 = dV[j + 3];
      PetscScalar        s0 = 0, s1 = 0, s2 = 0, s3 = 0;
#pragma omp simd reduction(+ : s0, s1, s2, s3)
      for (PetscInt i = start; i < end; ++i) {
        const PetscScalar yi = y[i];
        s0 += v0[i] * yi;
        s1 += v1[i] * yi;
        s2 += v2[i] * yi;
        s3 += v3[i] * yi;
      }
      out[j]     = s0;
      out[j + 1] = s1;
      out[j + 2] = s2;
      out[j + 3] = s3;
    }
    for (; j < nv; ++j) {
      const PetscScalar *v   = dV[j];
      PetscScalar        sum = 0;
#pragma omp simd reduction(+ : sum)
      for (PetscInt i = start; i < end; ++i) sum += v[i] * y[i];
      out[j] = sum;
    }
    if (self) {
      PetscScalar sum = 0;
#pragma omp simd reduction(+ : sum)
      for (PetscInt i = start; i < end; ++i) sum += y[i] * y[i];
      out[nv] = sum;
    }
  };
  /* the dot nv is <y, y> */
  const auto entry = KOKKOS_LAMBDA(const PetscInt i, const PetscInt first, PetscScalar *acc)
  {
    const PetscScalar yi = y[i];
    for (int k = 0; k < GROUP_DOTS && first + k < nd; ++k) acc[k] += (first + k < nv ? dV[first + k][i] : yi) * yi;
  };
  PetscCall(ChunkGroupPartials("fusedksp::mdot", n, FUSED_MDOT_BLOCKS, nd, chunk, entry, [nd, dots](PetscInt nchunks, const PetscScalar *part) { return FinishChunkPartials(nchunks, nd, part, dots); }));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* y[i] := scale (y[i] - sum_j coef[j] V[j][i]), the terms in the order of j */
KOKKOS_INLINE_FUNCTION PetscScalar SubtractScaleEntry(PetscInt i, PetscInt nv, const PetscScalar *coef, const PetscScalar *const *V, PetscScalar *y, PetscScalar scale)
{
  PetscScalar yi = y[i];
  for (PetscInt j = 0; j < nv; ++j) yi -= coef[j] * V[j][i];
  return y[i] = yi * scale;
}

/* y := scale (y - sum_j coef[j] V[j]) on the entries [start, end): four vectors per pass over the chunk
   (each entry takes the terms in the order of j, as in the host reference) */
KOKKOS_INLINE_FUNCTION void SubtractScale(PetscInt start, PetscInt end, PetscInt nv, const PetscScalar *coef, const PetscScalar *const *V, PetscScalar *KOKKOS_RESTRICT y, PetscScalar scale)
{
  PetscInt j = 0;
  for (; j + 4 <= nv; j += 4) { /* four vectors per pass over the chunk of y */
    const PetscScalar                  c0 = coef[j], c1 = coef[j + 1], c2 = coef[j + 2], c3 = coef[j + 3];
    const PetscScalar *KOKKOS_RESTRICT v0 = V[j], *KOKKOS_RESTRICT v1 = V[j + 1], *KOKKOS_RESTRICT v2 = V[j + 2], *KOKKOS_RESTRICT v3 = V[j + 3];
#pragma omp simd
    for (PetscInt i = start; i < end; ++i) y[i] = (((y[i] - c0 * v0[i]) - c1 * v1[i]) - c2 * v2[i]) - c3 * v3[i];
  }
  for (; j < nv; ++j) {
    const PetscScalar                  c = coef[j];
    const PetscScalar *KOKKOS_RESTRICT v = V[j];
#pragma omp simd
    for (PetscInt i = start; i < end; ++i) y[i] -= c * v[i];
  }
#pragma omp simd
  for (PetscInt i = start; i < end; ++i) y[i] *= scale;
}

/* y = scale (y - sum_j coef[j] V[j]), then tail(i, p) for each entry i adds its terms of nd (0 or 1) dot products,
   dots[0] when nd is 1: on the host chunk by chunk (SubtractScale() of the chunk, then the tail of its entries), on a
   GPU entry by entry */
template <class Tail> static PetscErrorCode SubtractScaleDot(const char *label, PetscInt n, PetscInt nv, const PetscScalar *coef, const PetscScalar *const *V, PetscScalar *y, PetscScalar scale, int nd, const Tail &tail, PetscScalar *dots)
{
  const PetscScalar *const *dV = nullptr;
  const PetscScalar        *dcoef;

  PetscFunctionBegin;
  PetscCall(PointerArray(nv, V, &dV));
  PetscCall(CoefficientArray(nv, coef, &dcoef));
  PetscCall(ChunkRangePartials<1>(
      label, n, MultiUpdateChunks(n), nd,
      KOKKOS_LAMBDA(const PetscInt start, const PetscInt end, PetscScalar *KOKKOS_RESTRICT p) {
        SubtractScale(start, end, nv, dcoef, dV, y, scale);
        if (nd)
          for (PetscInt i = start; i < end; ++i) tail(i, p);
      },
      KOKKOS_LAMBDA(const PetscInt i, PetscScalar *KOKKOS_RESTRICT p) {
        SubtractScaleEntry(i, nv, dcoef, dV, y, scale);
        if (nd) tail(i, p);
      },
      [nd, dots](PetscInt nchunks, const PetscScalar *part) {
        if (nd) SumPartials(nchunks, 1, part, dots);
        return PETSC_SUCCESS;
      }));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::maxpy_scale */
PetscErrorCode MAXPYScale(PetscInt n, PetscInt nv, const PetscScalar *coef, const PetscScalar *const *V, PetscScalar *y, PetscScalar scale, const PetscScalar *dotvec, PetscScalar *dot)
{
  return SubtractScaleDot(
      "fusedksp::maxpy_scale", n, nv, coef, V, y, scale, dot ? 1 : 0, KOKKOS_LAMBDA(const PetscInt i, PetscScalar *KOKKOS_RESTRICT p) { p[0] += y[i] * (dotvec ? dotvec[i] : y[i]); }, dot);
}

/* The pointer array [V, W] (nv + nw vectors, kept in list) where the kernels read it */
static PetscErrorCode BlockPointers(PetscInt nv, const PetscScalar *const *V, PetscInt nw, const PetscScalar *const *W, std::vector<const PetscScalar *> &list, const PetscScalar *const **dev)
{
  PetscFunctionBegin;
  FusedKSPCallCXX(list.assign(V, V + nv); list.insert(list.end(), W, W + nw));
  PetscCall(PointerArray(nv + nw, list.data(), dev));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::block_mdot: on the host in mdot's chunks, each chunk of a vector L of [V, W] is read once from memory
   and, while it is in cache, multiplied with the chunks of the columns W[j] whose results need it (L = V[i]: all of
   them; L = W[k]: j >= k), four columns per pass; every dot sums its chunk in SIMD lanes, as mdot does.  On a GPU
   a team per chunk and group of dots, as mdot's.  Result j * (nv + nw) + l is <L[l], W[j]>. */
PetscErrorCode BlockMDot(PetscInt n, PetscInt nv, const PetscScalar *const *V, PetscInt nw, const PetscScalar *const *W, PetscScalar *dots)
{
  std::vector<const PetscScalar *> list;
  const PetscScalar *const        *dL = nullptr;
  const PetscInt                   ld = nv + nw;
  const int                        nd = (int)(nw * ld);

  PetscFunctionBegin;
  PetscCheck(nw >= 1 && nw <= 64, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "A block of %" PetscInt_FMT " columns: 1 to 64", nw);
  if (TargetStopped()) {
    counters.launches++;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  if (n > 0) PetscCall(BlockPointers(nv, V, nw, W, list, &dL));
  const auto chunk = KOKKOS_LAMBDA(const PetscInt start, const PetscInt end, PetscScalar *out)
  {
    const PetscScalar *const *Wc = dL + nv;
    for (PetscInt l = 0; l < ld; ++l) {
      const PetscScalar *v = dL[l];
      PetscInt           j = l < nv ? 0 : l - nv; /* the first column that needs <L[l], W[j]> */
      for (PetscInt k = 0; k < j; ++k) out[k * ld + l] = 0;
      for (; j + 4 <= nw; j += 4) {
        const PetscScalar *w0 = Wc[j], *w1 = Wc[j + 1], *w2 = Wc[j + 2], *w3 = Wc[j + 3];
        PetscScalar        s0 = 0, s1 = 0, s2 = 0, s3 = 0;
#pragma omp simd reduction(+ : s0, s1, s2, s3)
        for (PetscInt i = start; i < end; ++i) {
          const PetscScalar vi = v[i];
          s0 += vi * w0[i];
          s1 += vi * w1[i];
          s2 += vi * w2[i];
          s3 += vi * w3[i];
        }
        out[j * ld + l]       = s0;
        out[(j + 1) * ld + l] = s1;
        out[(j + 2) * ld + l] = s2;
        out[(j + 3) * ld + l] = s3;
      }
      for (; j < nw; ++j) {
        const PetscScalar *w   = Wc[j];
        PetscScalar        sum = 0;
#pragma omp simd reduction(+ : sum)
        for (PetscInt i = start; i < end; ++i) sum += v[i] * w[i];
        out[j * ld + l] = sum;
      }
    }
  };
  const auto entry = KOKKOS_LAMBDA(const PetscInt i, const PetscInt first, PetscScalar *acc)
  {
    for (int k = 0; k < GROUP_DOTS && first + k < nd; ++k) {
      const PetscInt j = (first + k) / ld, l = (first + k) % ld;
      if (l < nv || j >= l - nv) acc[k] += dL[l][i] * dL[nv + j][i];
    }
  };
  PetscCall(ChunkGroupPartials("fusedksp::block_mdot", n, FUSED_MDOT_BLOCKS, nd, chunk, entry, [nd, dots](PetscInt nchunks, const PetscScalar *part) { return FinishChunkPartials(nchunks, nd, part, dots); }));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::block_maxpy: the columns in order, each as maxpy_scale updates it with the vectors [V, W[0..j)]; on the
   host chunk by chunk (the chunks of maxpy_scale): the chunk of V is read from memory once and stays in cache for the
   later columns; on a GPU entry by entry */
PetscErrorCode BlockMAXPY(PetscInt n, PetscInt nv, const PetscScalar *const *V, PetscInt nw, PetscScalar *const *W, const PetscScalar *coef, const PetscScalar *scale)
{
  std::vector<const PetscScalar *> list;
  const PetscScalar *const        *dL = nullptr;
  const PetscScalar               *dcoef;
  const PetscInt                   ld = nv + nw;
  std::vector<PetscScalar>         args;

  PetscFunctionBegin;
  PetscCheck(nw >= 1 && nw <= 64, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "A block of %" PetscInt_FMT " columns: 1 to 64", nw);
  if (n > 0) {
    FusedKSPCallCXX(args.assign(coef, coef + nw * ld); args.insert(args.end(), scale, scale + nw)); /* the coefficients, then the scales */
    PetscCall(BlockPointers(nv, V, nw, W, list, &dL));
    PetscCall(CoefficientArray((PetscInt)args.size(), args.data(), &dcoef));
    /* dL[nv + j] is W[j], held as const in the pointer array it shares with V */
    ChunkForEach(
        "fusedksp::block_maxpy", n, MultiUpdateChunks(n),
        KOKKOS_LAMBDA(const PetscInt start, const PetscInt end) {
          for (PetscInt j = 0; j < nw; ++j) SubtractScale(start, end, nv + j, dcoef + j * ld, dL, const_cast<PetscScalar *>(dL[nv + j]), dcoef[nw * ld + j]);
        },
        KOKKOS_LAMBDA(const PetscInt i) {
          for (PetscInt j = 0; j < nw; ++j) SubtractScaleEntry(i, nv + j, dcoef + j * ld, dL, const_cast<PetscScalar *>(dL[nv + j]), dcoef[nw * ld + j]);
        });
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::sgmres_update */
PetscErrorCode SGMRESUpdate(PetscInt n, PetscInt nv, const PetscScalar *coef, const PetscScalar *const *V, PetscScalar *w, PetscScalar scale, PetscScalar eta, const PetscScalar *zold, PetscScalar *znew, PetscScalar dots[1])
{
  return SubtractScaleDot(
      "fusedksp::sgmres_update", n, nv, coef, V, w, scale, 1,
      KOKKOS_LAMBDA(const PetscInt i, PetscScalar *KOKKOS_RESTRICT p) {
        const PetscScalar zi = zold[i] - eta * w[i];
        znew[i]              = zi;
        p[0] += zi * zi;
      },
      dots);
}

} // namespace kokkos
} // namespace fusedksp
