/* Host backend: the BiCGStab vector kernels (seed 000 Alg. 4) */
#include "backend/host/host_reduce.hpp"

namespace fusedksp
{
namespace host
{

/* See Backend::waxpy_dot */
PetscErrorCode WAXPYDot(PetscInt n, PetscScalar a, const PetscScalar *x, const PetscScalar *v, PetscScalar *y, PetscScalar dots[1])
{
  PetscFunctionBegin;
  BlockedReduce<1>(n, dots, [=](PetscInt i, PetscScalar *part) {
    const PetscScalar yi = x[i] + a * v[i];
    y[i]                 = yi;
    part[0] += yi * yi;
  });
  counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::bcgs_update */
PetscErrorCode BCGSUpdate(PetscInt n, PetscScalar alpha, PetscScalar omega, PetscScalar beta, const PetscScalar *wr, PetscScalar *x, PetscScalar *r, PetscScalar *p, const PetscScalar *s, const PetscScalar *Ap, const PetscScalar *As,
                          const PetscScalar *rstar, const PetscScalar *rhat, int ndots, PetscScalar *dots)
{
  PetscScalar all[3];

  PetscFunctionBegin;
  BlockedReduce<3>(n, all, [=](PetscInt i, PetscScalar *part) {
    const PetscScalar dx = alpha * p[i] + omega * s[i];
    const PetscScalar ri = s[i] - omega * As[i];
    x[i] += wr ? wr[i] * dx : dx;
    r[i] = ri;
    p[i] = ri + beta * (p[i] - omega * Ap[i]);
    part[0] += ri * rstar[i];
    part[1] += ri * ri;
    if (ndots > 2) part[2] += ri * rhat[i];
  });
  for (int d = 0; d < ndots; ++d) dots[d] = all[d];
  counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::waxpy_dot_chained */
PetscErrorCode WAXPYDotChained(PetscInt n, const PetscScalar *prev, const PetscScalar *cur, ChunkControl *ctl, PetscInt j, const PetscScalar *x, const PetscScalar *v, PetscScalar *y)
{
  PetscScalar alpha = 0, all[1];

  PetscFunctionBegin;
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
  StoreResults(1, all, nullptr);
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
  StoreResults(2, all, nullptr);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::bcgs_chunk: the operations of its steps */
PetscErrorCode BCGSChunk(const BCGSChunkArgs *args)
{
  PetscFunctionBegin;
  PetscCall(BCGSChunkSteps(HostBackend(), HostBlas(), args));
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace host
} // namespace fusedksp
