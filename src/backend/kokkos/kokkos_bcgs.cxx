/* Kokkos backend: the BiCGStab vector kernels (seed 000 Alg. 4) and their chunks */
#include "backend/kokkos/kokkos_reduce.hpp"
#include "backend/iteration.hpp"

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
  PetscFunctionBegin;
  PetscCheck(ndots == 2 || ndots == 3, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "bcgs_update computes 2 or 3 dot products, not %d", ndots);
  const bool third = ndots > 2;
  PetscCall(ChunkedReduce<3>(
      "fusedksp::bcgs_update", n, ndots, dots, KOKKOS_LAMBDA(const PetscInt i, PetscScalar *KOKKOS_RESTRICT part) {
        const PetscScalar si = s[i], Asi = As[i], Api = Ap[i], wri = wr ? wr[i] : 1, rsi = rstar[i], rhi = third ? rhat[i] : 0;
        PetscScalar       xi = x[i], ri = r[i], pi = p[i];
        const PetscScalar rnew = BCGSUpdateEntry(alpha, omega, beta, si, Asi, Api, wr, wri, xi, ri, pi);

        x[i] = xi; /* stored after every load (see CGUpdate()) */
        r[i] = ri;
        p[i] = pi;
        part[0] += rnew * rsi;
        part[1] += rnew * rnew;
        if (third) part[2] += rnew * rhi;
      }));
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace kokkos
} // namespace fusedksp
