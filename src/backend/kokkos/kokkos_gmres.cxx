/* Kokkos backend: the Gram-Schmidt kernels of simpler GMRES (seed 000 Alg. 6) and their chunks */
#include "backend/kokkos/kokkos_reduce.hpp"

namespace fusedksp
{
namespace kokkos
{

/* See Backend::mdot: each chunk of y is read once per dot while it is in cache; every dot sums its
   chunk in index order, as the host reference does */
PetscErrorCode MDot(PetscInt n, PetscInt nv, const PetscScalar *const *V, const PetscScalar *y, PetscBool selfdot, PetscScalar *dots)
{
  const PetscScalar *const *dV;
  const int                 nd = (int)nv + (selfdot ? 1 : 0);
  const bool                self = selfdot;
  PetscScalar              *dev, *host, *all;

  PetscFunctionBegin;
  if (TargetStopped()) {
    counters.launches++;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(PetscMalloc1(nd, &all));
  for (int d = 0; d < nd; ++d) all[d] = 0;
  if (n > 0 && nd > 0) {
    const PetscInt nchunks = ReduceChunks(n, FUSED_MDOT_BLOCKS), chunk = (n + nchunks - 1) / nchunks;

    PetscCall(PointerArray(nv, V, &dV));
    PetscCall(Partials(nchunks * nd, &dev, &host));
    Kokkos::parallel_for(
      "fusedksp::mdot", Kokkos::RangePolicy<ExecSpace>(0, nchunks), KOKKOS_LAMBDA(const PetscInt c) {
        const PetscInt start = c * chunk, end = start + chunk < n ? start + chunk : n;
        for (PetscInt j = 0; j < nv; ++j) {
          const PetscScalar *v   = dV[j];
          PetscScalar        sum = 0;
          for (PetscInt i = start; i < end; ++i) sum += v[i] * y[i];
          dev[c * nd + j] = sum;
        }
        if (self) {
          PetscScalar sum = 0;
          for (PetscInt i = start; i < end; ++i) sum += y[i] * y[i];
          dev[c * nd + nv] = sum;
        }
      });
    counters.launches++;
    PetscCall(PartialsToHost(host, dev, nchunks * nd));
    for (PetscInt c = 0; c < nchunks; ++c)
      for (int d = 0; d < nd; ++d) all[d] += host[c * nd + d];
  }
  PetscCall(StoreResults(nd, all, dots));
  PetscCall(PetscFree(all));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::maxpy_scale */
PetscErrorCode MAXPYScale(PetscInt n, PetscInt nv, const PetscScalar *coef, const PetscScalar *const *V, PetscScalar *y, PetscScalar scale, const PetscScalar *dotvec, PetscScalar *dot)
{
  const PetscScalar *const *dV;
  const PetscScalar        *dcoef;
  PetscScalar               sum = 0;

  PetscFunctionBegin;
  PetscCall(PointerArray(nv, V, &dV));
  PetscCall(CoefficientArray(nv, coef, &dcoef));
  if (!dot) {
    ForEach("fusedksp::maxpy_scale", n, KOKKOS_LAMBDA(const PetscInt i) {
      PetscScalar yi = y[i];
      for (PetscInt j = 0; j < nv; ++j) yi -= dcoef[j] * dV[j][i];
      y[i] = yi * scale;
    });
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(ChunkedReduce<1>("fusedksp::maxpy_scale", n, 1, &sum, KOKKOS_LAMBDA(const PetscInt i, PetscScalar *KOKKOS_RESTRICT part) {
    PetscScalar yi = y[i];
    for (PetscInt j = 0; j < nv; ++j) yi -= dcoef[j] * dV[j][i];
    yi *= scale;
    y[i] = yi;
    part[0] += yi * (dotvec ? dotvec[i] : yi);
  }));
  *dot = sum;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::sgmres_update */
PetscErrorCode SGMRESUpdate(PetscInt n, PetscInt nv, const PetscScalar *coef, const PetscScalar *const *V, PetscScalar *w, PetscScalar scale, PetscScalar eta, const PetscScalar *zold, PetscScalar *znew, PetscScalar dots[1])
{
  const PetscScalar *const *dV;
  const PetscScalar        *dcoef;

  PetscFunctionBegin;
  PetscCall(PointerArray(nv, V, &dV));
  PetscCall(CoefficientArray(nv, coef, &dcoef));
  PetscCall(ChunkedReduce<1>("fusedksp::sgmres_update", n, 1, dots, KOKKOS_LAMBDA(const PetscInt i, PetscScalar *KOKKOS_RESTRICT part) {
    PetscScalar wi = w[i];
    for (PetscInt j = 0; j < nv; ++j) wi -= dcoef[j] * dV[j][i];
    wi *= scale;
    w[i]                 = wi;
    const PetscScalar zi = zold[i] - eta * wi;
    znew[i]              = zi;
    part[0] += zi * zi;
  }));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::sgmres_update_chained (coefficients on the host, as cg_update_chained) */
PetscErrorCode SGMRESUpdateChained(PetscInt n, PetscInt i, PetscInt m, PetscReal keep, const PetscScalar *const *V, PetscScalar *w, const PetscScalar *zold, PetscScalar *znew, const PetscScalar *prev, PetscScalar *cur, ChunkControl *ctl, PetscInt j)
{
  PetscScalar h = 1, eta = 0, all[1];
  PetscReal   res = 0;
  int         stop;

  PetscFunctionBegin;
  static_assert(host_memory, "the chained operations compute their coefficients on the host");
  PetscCheck(target.slot, PETSC_COMM_SELF, PETSC_ERR_ORDER, "sgmres_update_chained needs a reduce target");
  if (ctl->stopped >= 0 || (stop = SGMRESChunkStep(*ctl, j, i, m, keep, prev, cur, &h, &eta, &res)) >= 0) {
    if (ctl->stopped < 0) {
      ctl->stopped = j - 1;
      ctl->stage   = stop;
    }
    target = {};
    counters.launches++;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  cur[m + 2] = res * res;
  PetscCall(SGMRESUpdate(n, i - 1, cur, V, w, 1 / h, eta, zold, znew, all));
  PetscCall(StoreResults(1, all, nullptr));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::sgmres_chunk: the start (args->b: <b,b> as Backend::dots sums it, to its slot, then
   SGMRESChunkStart() and z_1 = b / rho), then the operations of its steps */
PetscErrorCode SGMRESChunk(const SGMRESChunkArgs *args)
{
  const PetscInt n = args->csr ? args->csr->nrows : args->sell->nrows;

  PetscFunctionBegin;
  PetscCheck(!args->b || args->i0 == 0, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONG, "Only the first chunk of a cycle starts the solve, not one from step %" PetscInt_FMT, args->i0 + 1);
  if (args->b) {
    const DotSpec      self;
    const PetscScalar *b  = args->b;
    PetscScalar       *z1 = args->Z[1];
    PetscReal          rho;

    target = {args->slots + args->m + 2, nullptr};
    PetscCall(Dots(n, nullptr, b, 1, &self, nullptr));
    rho = SGMRESChunkStart(args->ctl, args->slots, args->m);
    if (rho != 0) {
      const PetscScalar scale = 1 / rho;
      ForEach("fusedksp::sgmres_start", n, KOKKOS_LAMBDA(const PetscInt i) { z1[i] = b[i] * scale; });
    }
  }
  PetscCall(SGMRESChunkSteps(KokkosBackend(), args));
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace kokkos
} // namespace fusedksp
