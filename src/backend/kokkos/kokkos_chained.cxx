/* Kokkos backend: the chained operations of chunks (backend/chained_host.hpp) */
#include "backend/kokkos/kokkos_reduce.hpp"
#include "backend/chained_host.hpp"

namespace fusedksp
{
namespace kokkos
{

/* The Kokkos backend (host memory) as HostChained's Ops */
struct KokkosOps {
  static_assert(host_memory, "the chained operations compute their coefficients on the host");
  static PetscErrorCode CGUpdate(PetscInt n, PetscScalar a, PetscScalar b, PetscScalar *x, PetscScalar *r, PetscScalar *z, PetscScalar *p, const PetscScalar *q, const PetscScalar *u, const PetscScalar *w, PetscScalar dots[3])
  {
    return kokkos::CGUpdate(n, a, b, x, r, z, p, q, u, w, dots);
  }
  static PetscErrorCode WAXPYDot(PetscInt n, PetscScalar a, const PetscScalar *x, const PetscScalar *v, PetscScalar *y, PetscScalar dots[1])
  {
    return kokkos::WAXPYDot(n, a, x, v, y, dots);
  }
  static PetscErrorCode BCGSUpdate(PetscInt n, PetscScalar alpha, PetscScalar omega, PetscScalar beta, const PetscScalar *wr, PetscScalar *x, PetscScalar *r, PetscScalar *p, const PetscScalar *s, const PetscScalar *Ap, const PetscScalar *As,
                                   const PetscScalar *rstar, const PetscScalar *rhat, int ndots, PetscScalar *dots)
  {
    return kokkos::BCGSUpdate(n, alpha, omega, beta, wr, x, r, p, s, Ap, As, rstar, rhat, ndots, dots);
  }
  static PetscErrorCode SGMRESUpdate(PetscInt n, PetscInt nv, const PetscScalar *coef, const PetscScalar *const *V, PetscScalar *w, PetscScalar scale, PetscScalar eta, const PetscScalar *zold, PetscScalar *znew, PetscScalar dots[1])
  {
    return kokkos::SGMRESUpdate(n, nv, coef, V, w, scale, eta, zold, znew, dots);
  }
  static bool HasTarget()
  {
    return target.slot != nullptr;
  }
  static void DropTarget()
  {
    target = {};
    counters.launches++;
  }
  static PetscErrorCode Store(int nd, const PetscScalar *all)
  {
    return StoreResults(nd, all, nullptr);
  }
};

PetscErrorCode CGUpdateChained(PetscInt n, const PetscScalar *prev, ChunkControl *ctl, PetscInt j, PetscScalar *x, PetscScalar *r, PetscScalar *z, PetscScalar *p, const PetscScalar *q, const PetscScalar *u, const PetscScalar *w)
{
  return HostChained<KokkosOps>::CGUpdate(n, prev, ctl, j, x, r, z, p, q, u, w);
}

PetscErrorCode WAXPYDotChained(PetscInt n, const PetscScalar *prev, const PetscScalar *cur, ChunkControl *ctl, PetscInt j, const PetscScalar *x, const PetscScalar *v, PetscScalar *y)
{
  return HostChained<KokkosOps>::WAXPYDot(n, prev, cur, ctl, j, x, v, y);
}

PetscErrorCode BCGSUpdateChained(PetscInt n, const PetscScalar *prev, const PetscScalar *cur, ChunkControl *ctl, PetscInt j, const PetscScalar *wr, PetscScalar *x, PetscScalar *r, PetscScalar *p, const PetscScalar *s, const PetscScalar *Ap,
                                 const PetscScalar *As, const PetscScalar *rstar)
{
  return HostChained<KokkosOps>::BCGSUpdate(n, prev, cur, ctl, j, wr, x, r, p, s, Ap, As, rstar);
}

PetscErrorCode SGMRESUpdateChained(PetscInt n, PetscInt i, PetscInt m, PetscReal keep, const PetscScalar *const *V, PetscScalar *w, const PetscScalar *zold, PetscScalar *znew, const PetscScalar *prev, PetscScalar *cur, ChunkControl *ctl, PetscInt j)
{
  return HostChained<KokkosOps>::SGMRESUpdate(n, i, m, keep, V, w, zold, znew, prev, cur, ctl, j);
}

} // namespace kokkos
} // namespace fusedksp
