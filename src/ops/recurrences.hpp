/*
   The scalar recurrences of the pipelined solvers, in one place.  They are plain inline functions
   of the reduced dot products, callable on the host and (compiled by nvcc) inside a kernel, so that
   a device-resident-scalar mode is a backend change, not a rewrite of the solvers.
*/
#pragma once

#include <petscsys.h>

#if defined(__CUDACC__)
#define FUSED_HD __host__ __device__
#else
#define FUSED_HD
#endif

namespace fusedksp
{

enum class RecurrenceStatus { OK, INDEFINITE_MAT, INDEFINITE_PC, BREAKDOWN, NANORINF };

FUSED_HD inline bool NotFinite(PetscScalar v)
{
  return !(v - v == v - v); /* NaN or Inf */
}

/* Pipelined preconditioned CG (see src/ksp/fusedcg.cxx):
     alpha = <r,z> / <p,Ap>,   beta = alpha^2 <Ap, M^{-1} Ap> / <r,z> - 1                       */
FUSED_HD inline RecurrenceStatus CGCoefficients(PetscScalar rz, PetscScalar pAp, PetscScalar ApMAp, PetscScalar *alpha, PetscScalar *beta)
{
  if (NotFinite(rz) || NotFinite(pAp) || NotFinite(ApMAp)) return RecurrenceStatus::NANORINF;
  if (rz < 0) return RecurrenceStatus::INDEFINITE_PC;
  if (pAp <= 0) return RecurrenceStatus::INDEFINITE_MAT;
  *alpha = rz / pAp;
  *beta  = (*alpha) * (*alpha) * ApMAp / rz - 1;
  return RecurrenceStatus::OK;
}

/* Pipelined BiCGStab (seed 000 Alg. 4, see src/ksp/fusedbcgs.cxx) */
FUSED_HD inline RecurrenceStatus BCGSAlpha(PetscScalar rrstar, PetscScalar Aprstar, PetscScalar *alpha)
{
  if (NotFinite(rrstar) || NotFinite(Aprstar)) return RecurrenceStatus::NANORINF;
  if (Aprstar == 0) return RecurrenceStatus::BREAKDOWN;
  *alpha = rrstar / Aprstar;
  return RecurrenceStatus::OK;
}

/* omega = <As,s>/<As,As>;  beta = -<As,r*>/<Ap,r*>;  ||r_new||^2 = <s,s> - 2 omega <As,s> + omega^2 <As,As> */
FUSED_HD inline RecurrenceStatus BCGSOmegaBeta(PetscScalar Ass, PetscScalar AsAs, PetscScalar Asrstar, PetscScalar Aprstar, PetscScalar ss, PetscScalar *omega, PetscScalar *beta, PetscReal *rnorm2)
{
  if (NotFinite(Ass) || NotFinite(AsAs) || NotFinite(Asrstar) || NotFinite(ss)) return RecurrenceStatus::NANORINF;
  if (AsAs == 0) {
    /* s is in the kernel of A: s = 0 means the solution was found with the half step */
    *omega  = 0;
    *beta   = 0;
    *rnorm2 = ss;
    return ss == 0 ? RecurrenceStatus::OK : RecurrenceStatus::BREAKDOWN;
  }
  *omega  = Ass / AsAs;
  *beta   = -Asrstar / Aprstar;
  *rnorm2 = PetscMax(ss - 2 * (*omega) * Ass + (*omega) * (*omega) * AsAs, 0.0);
  if (*omega == 0) return RecurrenceStatus::BREAKDOWN;
  return RecurrenceStatus::OK;
}

/* Simpler GMRES, one column of R from one multi-dot (see src/ksp/fusedsgmres.cxx): given the
   projections R[j] = <v_{j+1}, w> (j < k) and dww = <w,w>: h^2 = <w,w> - sum_j R[j]^2.
   Returns BREAKDOWN when h^2 kept less than `keep` of <w,w> (cancellation: the caller computes the
   norm explicitly), NANORINF on NaN/Inf.                                                       */
FUSED_HD inline RecurrenceStatus SGMRESColumn(PetscInt k, const PetscScalar *R, PetscScalar dww, PetscReal keep, PetscScalar *h2)
{
  PetscScalar s2 = 0;
  if (NotFinite(dww)) return RecurrenceStatus::NANORINF;
  for (PetscInt j = 0; j < k; ++j) {
    if (NotFinite(R[j])) return RecurrenceStatus::NANORINF;
    s2 += R[j] * R[j];
  }
  *h2 = dww - s2;
  if (!(*h2 > keep * dww)) return RecurrenceStatus::BREAKDOWN;
  return RecurrenceStatus::OK;
}

} // namespace fusedksp
