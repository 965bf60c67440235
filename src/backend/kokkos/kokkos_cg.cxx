/* Kokkos backend: the CG vector update (seed 000 Alg. 2, lines 10-12, preconditioned) and its chunks */
#include "backend/kokkos/kokkos_reduce.hpp"

namespace fusedksp
{
namespace kokkos
{

/* See Backend::cg_update: one pass over the vectors */
PetscErrorCode CGUpdate(PetscInt n, PetscScalar a, PetscScalar b, PetscScalar *x, PetscScalar *r, PetscScalar *z, PetscScalar *p, const PetscScalar *q, const PetscScalar *u, const PetscScalar *w, PetscScalar dots[3])
{
  PetscFunctionBegin;
  PetscCall(ChunkedReduce<3>(
      "fusedksp::cg_update", n, 3, dots, KOKKOS_LAMBDA(const PetscInt i, PetscScalar *KOKKOS_RESTRICT part) {
        const PetscScalar ri = r[i] - a * q[i];
        PetscScalar       zi;
        if (w)
          zi = w[i] * ri;
        else if (z)
          zi = z[i] = z[i] - a * u[i];
        else
          zi = ri;
        x[i] += a * p[i];
        r[i] = ri;
        p[i] = zi + b * p[i];
        part[0] += ri * zi;
        part[1] += ri * ri;
        part[2] += zi * zi;
      }));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::cg_update_chained: the coefficients from the slots of the previous iteration (host
   memory: the backend's memory on a host execution space), then cg_update */
PetscErrorCode CGUpdateChained(PetscInt n, const PetscScalar *prev, ChunkControl *ctl, PetscInt j, PetscScalar *x, PetscScalar *r, PetscScalar *z, PetscScalar *p, const PetscScalar *q, const PetscScalar *u, const PetscScalar *w)
{
  PetscScalar a = 0, b = 0, all[3], ref_rz = 0, ref_pq = 0;

  PetscFunctionBegin;
  static_assert(host_memory, "the chained operations compute their coefficients on the host");
  PetscCheck(target.slot, PETSC_COMM_SELF, PETSC_ERR_ORDER, "cg_update_chained needs a reduce target");
  if (j > 0) CGReference(*ctl, prev - (j - 1) * CG_NSLOT, &ref_rz, &ref_pq); /* the chunk's slots are consecutive */
  if (ctl->stopped >= 0 || (j > 0 && (CGCoefficients(prev, ref_rz, ref_pq, u == nullptr, &a, &b) != RecurrenceStatus::OK || ChunkNormStops(ChunkLimits(*ctl, prev, j, CG_NSLOT, ctl->normdot), j - 1, prev)))) {
    if (ctl->stopped < 0) {
      ctl->stopped = j - 1;
      ctl->stage   = 0;
    }
    target = {};
    counters.launches++;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(CGUpdate(n, a, b, x, r, z, p, q, u, w, all));
  PetscCall(StoreResults(3, all, nullptr));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::cg_chunk: the operations of its steps */
PetscErrorCode CGChunk(const CGChunkArgs *args)
{
  PetscFunctionBegin;
  PetscCall(CGChunkSteps(KokkosBackend(), KokkosBlas(), args));
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace kokkos
} // namespace fusedksp
