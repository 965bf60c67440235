/*
   The vector arithmetic of each solver's iteration, one entry at a time, written once for every
   backend and every form of the iteration.

   A backend runs an iteration as a loop over its entries; how it loops is its policy: the host
   backend in ReduceChunks() order, Kokkos as a parallel reduction, CUDA one thread per entry in a
   kernel per operation, in a persistent grid kernel (vectors in global memory, blocks meeting at
   grid barriers) or in a resident kernel (vectors in registers and shared memory, blocks meeting
   at cluster barriers).  What the loop does to one entry is the same in all of them and lives
   here, as inline functions on values: the caller loads the entry's operands from wherever its
   policy keeps them and stores the results back.  The scalar recurrences (the coefficients from
   the reduced dot products) are in core/recurrences.hpp.
*/
#pragma once

#include "core/recurrences.hpp"

namespace fusedksp
{

/* One entry of the CG update (seed 000 Alg. 2, lines 10-12, preconditioned): r -= alpha q, z = z_of(r)
   (the preconditioned residual: w .* r with Jacobi weights, z - alpha u with a general PC, r without
   one), x += alpha p, p = z + beta p, and the entry's terms of <r,z>, <r,r>, <z,z> added to acc.  The
   start of a chunk is the update with alpha = beta = 0 and p = q = 0.                              */
template <class ZofR> FUSED_HD inline void CGUpdateEntry(PetscScalar alpha, PetscScalar beta, PetscScalar q, const ZofR &z_of, PetscScalar &x, PetscScalar &r, PetscScalar &p, PetscScalar *acc)
{
  const PetscScalar ri = r - alpha * q;
  const PetscScalar zi = z_of(ri);

  x += alpha * p;
  r = ri;
  p = zi + beta * p;
  acc[CG_RZ] += ri * zi;
  acc[CG_RR] += ri * ri;
  acc[CG_ZZ] += zi * zi;
}

/* One row's terms of the dot products of the CG product q = A p in a chunk (symmetric PC): <p,q>,
   <q,z> (= <r,u>) and <q,u> with u = w .* q, z = w .* r (w = 1 without a preconditioner, has_w false) */
FUSED_HD inline void CGProductTerms(PetscScalar q, PetscScalar p, PetscScalar r, bool has_w, PetscScalar w, PetscScalar *acc)
{
  acc[CG_PQ] += q * p;
  acc[CG_QZ] += has_w ? q * w * r : q * r;
  acc[CG_QU] += has_w ? q * w * q : q * q;
}

/* One entry of the BiCGStab half step (seed 000 Alg. 4): s = r - alpha Ap (fused multiply-add: the same
   rounding wherever s is computed, so a kernel may compute it again where it needs it)             */
FUSED_HD inline PetscScalar BCGSEntryS(PetscScalar alpha, PetscScalar r, PetscScalar Ap)
{
  return fma(-alpha, Ap, r);
}

/* One entry of the BiCGStab update (seed 000 Alg. 4): x += wr (alpha p + omega s) (has_wr false: no
   right weights), r = s - omega As, p = r + beta (p - omega Ap); returns the new r                 */
FUSED_HD inline PetscScalar BCGSUpdateEntry(PetscScalar alpha, PetscScalar omega, PetscScalar beta, PetscScalar s, PetscScalar As, PetscScalar Ap, bool has_wr, PetscScalar wr, PetscScalar &x, PetscScalar &r, PetscScalar &p)
{
  const PetscScalar pi = p;
  const PetscScalar dx = alpha * pi + omega * s;
  const PetscScalar ri = s - omega * As;

  x += has_wr ? wr * dx : dx;
  r = ri;
  p = ri + beta * (pi - omega * Ap);
  return ri;
}

/* One entry of the simpler GMRES orthogonalization (seed 000 Alg. 6): w - sum_{j < nv} coef_j v_j, with
   v_at(j) the entry of basis vector j (the terms in the order of j)                                */
template <class VofJ> FUSED_HD inline PetscScalar SGMRESOrthogonalEntry(PetscScalar w, PetscInt nv, const PetscScalar *coef, const VofJ &v_at)
{
#if defined(__CUDA_ARCH__)
#pragma unroll 8
#endif
  for (PetscInt j = 0; j < nv; ++j) w -= coef[j] * v_at(j);
  return w;
}

/* One entry of the simpler GMRES update once w holds its orthogonalized value: the new basis vector
   v = scale w (stored in w) and the new scaled residual z_new = z_old - eta v, returned           */
FUSED_HD inline PetscScalar SGMRESUpdateEntry(PetscScalar scale, PetscScalar eta, PetscScalar zold, PetscScalar &w)
{
  w *= scale;
  return zold - eta * w;
}

} // namespace fusedksp
