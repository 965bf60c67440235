/* Kokkos backend: the BiCGStab vector kernels (seed 000 Alg. 4) and their chunks */
#include "backend/kokkos/kokkos_reduce.hpp"

namespace fusedksp
{
namespace kokkos
{

/* See Backend::waxpy_dot */
PetscErrorCode WAXPYDot(PetscInt n, PetscScalar a, const PetscScalar *x, const PetscScalar *v, PetscScalar *y, PetscScalar dots[1])
{
  PetscFunctionBegin;
  PetscCall(ChunkedReduce<1>(
      "fusedksp::waxpy_dot", n, 1, dots, KOKKOS_LAMBDA(const PetscInt i, PetscScalar *KOKKOS_RESTRICT part) {
        const PetscScalar yi = x[i] + a * v[i];
        y[i]                 = yi;
        part[0] += yi * yi;
      }));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::bcgs_update: one pass over the vectors */
PetscErrorCode BCGSUpdate(PetscInt n, PetscScalar alpha, PetscScalar omega, PetscScalar beta, const PetscScalar *wr, PetscScalar *x, PetscScalar *r, PetscScalar *p, const PetscScalar *s, const PetscScalar *Ap, const PetscScalar *As,
                          const PetscScalar *rstar, const PetscScalar *rhat, int ndots, PetscScalar *dots)
{
  PetscScalar all[3];

  PetscFunctionBegin;
  PetscCheck(ndots == 2 || ndots == 3, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "bcgs_update computes 2 or 3 dot products, not %d", ndots);
  const bool third = ndots > 2;
  PetscCall(ChunkedReduce<3>(
      "fusedksp::bcgs_update", n, 3, all, KOKKOS_LAMBDA(const PetscInt i, PetscScalar *KOKKOS_RESTRICT part) {
        const PetscScalar dx = alpha * p[i] + omega * s[i];
        const PetscScalar ri = s[i] - omega * As[i];
        x[i] += wr ? wr[i] * dx : dx;
        r[i] = ri;
        p[i] = ri + beta * (p[i] - omega * Ap[i]);
        part[0] += ri * rstar[i];
        part[1] += ri * ri;
        if (third) part[2] += ri * rhat[i];
      }));
  for (int d = 0; d < ndots; ++d) dots[d] = all[d];
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::waxpy_dot_chained (coefficients on the host, as cg_update_chained) */
PetscErrorCode WAXPYDotChained(PetscInt n, const PetscScalar *prev, const PetscScalar *cur, ChunkControl *ctl, PetscInt j, const PetscScalar *x, const PetscScalar *v, PetscScalar *y)
{
  PetscScalar alpha = 0, all[1];

  PetscFunctionBegin;
  static_assert(host_memory, "the chained operations compute their coefficients on the host");
  PetscCheck(target.slot, PETSC_COMM_SELF, PETSC_ERR_ORDER, "waxpy_dot_chained needs a reduce target");
  if (ctl->stopped >= 0 || !BCGSChunkAlpha(ChunkLimits(*ctl, prev, j, BCGS_NSLOT, BCGS_RR), j, prev, cur, &alpha)) {
    if (ctl->stopped < 0) {
      ctl->stopped = j - 1;
      ctl->stage   = 0;
    }
    target = {};
    counters.launches++;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(WAXPYDot(n, -alpha, x, v, y, all));
  PetscCall(StoreResults(1, all, nullptr));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::bcgs_update_chained */
PetscErrorCode BCGSUpdateChained(PetscInt n, const PetscScalar *prev, const PetscScalar *cur, ChunkControl *ctl, PetscInt j, const PetscScalar *wr, PetscScalar *x, PetscScalar *r, PetscScalar *p, const PetscScalar *s, const PetscScalar *Ap,
                                 const PetscScalar *As, const PetscScalar *rstar)
{
  PetscScalar alpha = 0, omega = 0, beta = 0, all[2];

  PetscFunctionBegin;
  PetscCheck(target.slot, PETSC_COMM_SELF, PETSC_ERR_ORDER, "bcgs_update_chained needs a reduce target");
  if (ctl->stopped >= 0 || BCGSAlpha(prev[BCGS_RRSTAR], cur[BCGS_APR], &alpha) != RecurrenceStatus::OK || !BCGSChunkOmegaBeta(cur, &omega, &beta)) {
    if (ctl->stopped < 0) {
      ctl->stopped = j - 1;
      ctl->stage   = 1;
    }
    target = {};
    counters.launches++;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(BCGSUpdate(n, alpha, omega, beta, wr, x, r, p, s, Ap, As, rstar, nullptr, 2, all));
  PetscCall(StoreResults(2, all, nullptr));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::bcgs_chunk: the operations of its steps */
PetscErrorCode BCGSChunk(const BCGSChunkArgs *args)
{
  PetscFunctionBegin;
  PetscCall(BCGSChunkSteps(KokkosBackend(), KokkosBlas(), args));
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace kokkos
} // namespace fusedksp
