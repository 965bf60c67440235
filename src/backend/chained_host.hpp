/*
   The chained operations of the backend contract (Backend::cg_update_chained, waxpy_dot_chained,
   bcgs_update_chained, sgmres_update_chained) for a backend whose memory the host reads (the host
   backend, Kokkos on CPU threads): the coefficients are computed on the host from the slots
   (core/recurrences.hpp, as the device kernels compute them), then the backend's own operation runs
   with its results to the reduce target; a stop is recorded in the chunk's control block instead.

   Ops is the backend (HostOps, KokkosOps): its CGUpdate, WAXPYDot, BCGSUpdate and SGMRESUpdate, and
   for the reduce target HasTarget(), DropTarget() (the target is used up; counts the operation as
   a launch) and Store(nd, all).
*/
#pragma once

#include "backend/backend.hpp"

namespace fusedksp
{

template <class Ops> struct HostChained {
  /* The chunk stops before iteration j (ctl->stage: where), unless it stopped earlier */
  static PetscErrorCode Stop(ChunkControl *ctl, PetscInt j, PetscInt stage)
  {
    PetscFunctionBegin;
    if (ctl->stopped < 0) {
      ctl->stopped = j - 1;
      ctl->stage   = stage;
    }
    Ops::DropTarget();
    PetscFunctionReturn(PETSC_SUCCESS);
  }

  static PetscErrorCode CheckTarget(const char *op)
  {
    PetscFunctionBegin;
    PetscCheck(Ops::HasTarget(), PETSC_COMM_SELF, PETSC_ERR_ORDER, "%s needs a reduce target", op);
    PetscFunctionReturn(PETSC_SUCCESS);
  }

  /* See Backend::cg_update_chained */
  static PetscErrorCode CGUpdate(PetscInt n, const PetscScalar *prev, ChunkControl *ctl, PetscInt j, PetscScalar *x, PetscScalar *r, PetscScalar *z, PetscScalar *p, const PetscScalar *q, const PetscScalar *u, const PetscScalar *w)
  {
    PetscScalar a, b, all[3];

    PetscFunctionBegin;
    PetscCall(CheckTarget("cg_update_chained"));
    if (ctl->stopped >= 0 || !CGChainedCoefficients(*ctl, prev, j, u == nullptr, &a, &b))
      PetscCall(Stop(ctl, j, 0));
    else {
      PetscCall(Ops::CGUpdate(n, a, b, x, r, z, p, q, u, w, all));
      PetscCall(Ops::Store(3, all));
    }
    PetscFunctionReturn(PETSC_SUCCESS);
  }

  /* See Backend::waxpy_dot_chained */
  static PetscErrorCode WAXPYDot(PetscInt n, const PetscScalar *prev, const PetscScalar *cur, ChunkControl *ctl, PetscInt j, const PetscScalar *x, const PetscScalar *v, PetscScalar *y)
  {
    PetscScalar alpha = 0, all[1];

    PetscFunctionBegin;
    PetscCall(CheckTarget("waxpy_dot_chained"));
    if (ctl->stopped >= 0 || !BCGSChunkAlpha(ChunkLimits(*ctl, prev, j, BCGS_NSLOT, BCGS_RR), j, prev, cur, &alpha))
      PetscCall(Stop(ctl, j, 0));
    else {
      PetscCall(Ops::WAXPYDot(n, -alpha, x, v, y, all));
      PetscCall(Ops::Store(1, all));
    }
    PetscFunctionReturn(PETSC_SUCCESS);
  }

  /* See Backend::bcgs_update_chained */
  static PetscErrorCode BCGSUpdate(PetscInt n, const PetscScalar *prev, const PetscScalar *cur, ChunkControl *ctl, PetscInt j, const PetscScalar *wr, PetscScalar *x, PetscScalar *r, PetscScalar *p, const PetscScalar *s, const PetscScalar *Ap,
                                   const PetscScalar *As, const PetscScalar *rstar)
  {
    PetscScalar alpha = 0, omega = 0, beta = 0, all[2];

    PetscFunctionBegin;
    PetscCall(CheckTarget("bcgs_update_chained"));
    if (ctl->stopped >= 0 || !BCGSChainedCoefficients(prev, cur, &alpha, &omega, &beta))
      PetscCall(Stop(ctl, j, 1));
    else {
      PetscCall(Ops::BCGSUpdate(n, alpha, omega, beta, wr, x, r, p, s, Ap, As, rstar, nullptr, 2, all));
      PetscCall(Ops::Store(2, all));
    }
    PetscFunctionReturn(PETSC_SUCCESS);
  }

  /* See Backend::sgmres_update_chained */
  static PetscErrorCode SGMRESUpdate(PetscInt n, PetscInt i, PetscInt m, PetscReal keep, const PetscScalar *const *V, PetscScalar *w, const PetscScalar *zold, PetscScalar *znew, const PetscScalar *prev, PetscScalar *cur, ChunkControl *ctl,
                                     PetscInt j)
  {
    PetscScalar h = 1, eta = 0, all[1];
    PetscReal   res  = 0;
    int         stop = 0;

    PetscFunctionBegin;
    PetscCall(CheckTarget("sgmres_update_chained"));
    if (ctl->stopped >= 0 || (stop = SGMRESChunkStep(*ctl, j, i, m, keep, prev, cur, &h, &eta, &res)) >= 0)
      PetscCall(Stop(ctl, j, stop));
    else {
      cur[m + 2] = res * res;
      PetscCall(Ops::SGMRESUpdate(n, i - 1, cur, V, w, 1 / h, eta, zold, znew, all));
      PetscCall(Ops::Store(1, all));
    }
    PetscFunctionReturn(PETSC_SUCCESS);
  }
};

} // namespace fusedksp
