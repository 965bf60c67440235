/*
   The chained operations of the backend contract (Backend::cg_update_chained, waxpy_dot_chained,
   bcgs_update_chained, sgmres_update_chained) for a backend whose memory the host reads (the host
   backend, Kokkos on CPU threads): the coefficients are computed on the host from the slots
   (core/recurrences.hpp, as the device kernels compute them), then the backend's own operation runs
   with its results to the reduce target; a stop is recorded in the chunk's control block instead.

   Included inside the namespace of such a backend (host_chained.cxx, kokkos_chained.cxx), which
   provides its operations (backend_functions.hpp), its reduce target `target` and `counters`,
   StoreChainedResults(nd, all) (the results to the reduce target), and ThisBackend() and ThisBlas()
   (its tables).  Meant to be included once per
   backend namespace, so it has no include guard.
*/

/* The chunk stops before iteration j (ctl->stage: where), unless it stopped earlier; the reduce target
   is used up and the operation counts as a launch                                                    */
static PetscErrorCode ChainedStop(ChunkControl *ctl, PetscInt j, PetscInt stage)
{
  PetscFunctionBegin;
  if (ctl->stopped < 0) {
    ctl->stopped = j - 1;
    ctl->stage   = stage;
  }
  target = {};
  counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode ChainedCheckTarget(const char *op)
{
  PetscFunctionBegin;
  PetscCheck(target.slot, PETSC_COMM_SELF, PETSC_ERR_ORDER, "%s needs a reduce target", op);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::cg_update_chained */
PetscErrorCode CGUpdateChained(PetscInt n, const PetscScalar *prev, ChunkControl *ctl, PetscInt j, PetscScalar *x, PetscScalar *r, PetscScalar *z, PetscScalar *p, const PetscScalar *q, const PetscScalar *u, const PetscScalar *w)
{
  PetscScalar a, b, all[3];

  PetscFunctionBegin;
  PetscCall(ChainedCheckTarget("cg_update_chained"));
  if (ctl->stopped >= 0 || !CGChainedCoefficients(*ctl, prev, j, u == nullptr, &a, &b))
    PetscCall(ChainedStop(ctl, j, 0));
  else {
    PetscCall(CGUpdate(n, a, b, x, r, z, p, q, u, w, all));
    PetscCall(StoreChainedResults(3, all));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::waxpy_dot_chained */
PetscErrorCode WAXPYDotChained(PetscInt n, const PetscScalar *prev, const PetscScalar *cur, ChunkControl *ctl, PetscInt j, const PetscScalar *x, const PetscScalar *v, PetscScalar *y)
{
  PetscScalar alpha = 0, all[1];

  PetscFunctionBegin;
  PetscCall(ChainedCheckTarget("waxpy_dot_chained"));
  if (ctl->stopped >= 0 || !BCGSChunkAlpha(ChunkLimits(*ctl, prev, j, BCGS_NSLOT, BCGS_RR), j, prev, cur, &alpha))
    PetscCall(ChainedStop(ctl, j, 0));
  else {
    PetscCall(WAXPYDot(n, -alpha, x, v, y, all));
    PetscCall(StoreChainedResults(1, all));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::bcgs_update_chained */
PetscErrorCode BCGSUpdateChained(PetscInt n, const PetscScalar *prev, const PetscScalar *cur, ChunkControl *ctl, PetscInt j, const PetscScalar *wr, PetscScalar *x, PetscScalar *r, PetscScalar *p, const PetscScalar *s, const PetscScalar *Ap,
                                 const PetscScalar *As, const PetscScalar *rstar)
{
  PetscScalar alpha = 0, omega = 0, beta = 0, all[2];

  PetscFunctionBegin;
  PetscCall(ChainedCheckTarget("bcgs_update_chained"));
  if (ctl->stopped >= 0 || !BCGSChainedCoefficients(prev, cur, &alpha, &omega, &beta))
    PetscCall(ChainedStop(ctl, j, 1));
  else {
    PetscCall(BCGSUpdate(n, alpha, omega, beta, wr, x, r, p, s, Ap, As, rstar, nullptr, 2, all));
    PetscCall(StoreChainedResults(2, all));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::sgmres_update_chained */
PetscErrorCode SGMRESUpdateChained(PetscInt n, PetscInt i, PetscInt m, PetscReal keep, const PetscScalar *const *V, PetscScalar *w, const PetscScalar *zold, PetscScalar *znew, const PetscScalar *prev, PetscScalar *cur, ChunkControl *ctl, PetscInt j)
{
  PetscScalar h = 1, eta = 0, all[1];
  PetscReal   res  = 0;
  int         stop = 0;

  PetscFunctionBegin;
  PetscCall(ChainedCheckTarget("sgmres_update_chained"));
  if (ctl->stopped >= 0 || (stop = SGMRESChunkStep(*ctl, j, i, m, keep, prev, cur, &h, &eta, &res)) >= 0)
    PetscCall(ChainedStop(ctl, j, stop));
  else {
    cur[m + 2] = res * res;
    PetscCall(SGMRESUpdate(n, i - 1, cur, V, w, 1 / h, eta, zold, znew, all));
    PetscCall(StoreChainedResults(1, all));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::cg_chunk and bcgs_chunk: the operations of the chunk's steps, one at a time */
PetscErrorCode CGChunk(const CGChunkArgs *args)
{
  return CGChunkSteps(ThisBackend(), ThisBlas(), args);
}

PetscErrorCode BCGSChunk(const BCGSChunkArgs *args)
{
  return BCGSChunkSteps(ThisBackend(), ThisBlas(), args);
}

/* See Backend::sgmres_chunk */
PetscErrorCode SGMRESChunk(const SGMRESChunkArgs *args)
{
  return SGMRESChunkHostMemory(ThisBackend(), args);
}
