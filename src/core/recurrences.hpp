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

/* The values of one CG iteration (src/ksp/fusedcg.cxx), in this order in its reduction buffer and
   chunk slot: <r,z>, <r,r>, <z,z> of the update and <p,q>, <q,z>, <q,u>, <r,u> of the operator
   (q = A p, u = M^{-1} q).  When M is symmetric (no PC, Jacobi) <r,u> = <q,z>: the slot of <r,u>
   is then not computed, and CGCoefficients() is told so                                      */
enum CGChunkSlot { CG_RZ, CG_RR, CG_ZZ, CG_PQ, CG_QZ, CG_QU, CG_RU, CG_NSLOT };

/* Pipelined preconditioned CG (see src/ksp/fusedcg.cxx), from the values of one iteration:
     alpha = <r,z> / <p,q>,   beta = (<r,z> - alpha (<q,z> + <r,u>) + alpha^2 <q,u>) / <r,z>
   (the predicted <r',z'> of the next iteration over the computed <r,z>); symmetric_pc: <r,u> is
   taken as <q,z> (v[CG_RU] is not read).  ref_rz, ref_pq: <r,z> and <p,q> of an earlier iteration
   of the solve.  As in KSPCG, a change of their sign stops (the PC or the matrix is indefinite);
   definite operators of either sign are fine, and <p,q> = 0 stops.                           */
FUSED_HD inline RecurrenceStatus CGCoefficients(const PetscScalar *v, PetscScalar ref_rz, PetscScalar ref_pq, bool symmetric_pc, PetscScalar *alpha, PetscScalar *beta)
{
  const PetscScalar rz = v[CG_RZ], pq = v[CG_PQ], qz = v[CG_QZ], qu = v[CG_QU], ru = symmetric_pc ? qz : v[CG_RU];

  if (NotFinite(rz) || NotFinite(pq) || NotFinite(qz) || NotFinite(qu) || NotFinite(ru)) return RecurrenceStatus::NANORINF;
  if (rz * ref_rz < 0) return RecurrenceStatus::INDEFINITE_PC;
  if (pq == 0 || pq * ref_pq < 0) return RecurrenceStatus::INDEFINITE_MAT;
  *alpha = rz / pq;
  /* rz + alpha (alpha qu - (qz + ru)) with explicit FMAs, so that the host and the device (where the
     compiler would contract on its own) round alike and chunks reproduce the per-iteration path   */
  *beta = fma(*alpha, fma(*alpha, qu, -(qz + ru)), rz) / rz;
  return RecurrenceStatus::OK;
}

/* Preconditioned CG in its classical order (src/ksp/fusedcg.cxx with a general PC): alpha = <r,z> / <p,q> from the
   reduced <p,q> of the product and the <r,z> of the residual before it, with CGCoefficients()'s checks             */
FUSED_HD inline RecurrenceStatus CGClassicalAlpha(PetscScalar rz, PetscScalar pq, PetscScalar ref_rz, PetscScalar ref_pq, PetscScalar *alpha)
{
  if (NotFinite(rz) || NotFinite(pq)) return RecurrenceStatus::NANORINF;
  if (rz * ref_rz < 0) return RecurrenceStatus::INDEFINITE_PC;
  if (pq == 0 || pq * ref_pq < 0) return RecurrenceStatus::INDEFINITE_MAT;
  *alpha = rz / pq;
  return RecurrenceStatus::OK;
}

/* The values of one BiCG iteration (src/ksp/fusedbicg.cxx), in this order in its reduction buffer: <r,z>, <r,r>, <z,z>
   of the A-side update, <z,r~>, <u,r~> of the A^T-side update's residual and <p,q~>, <z,q~>, <u,q~> of the transposed
   product (q = A p, u = M^{-1} q, q~ = A^T p~); <p,q~> = <A p,p~>                                                 */
enum BiCGSlot { BICG_RZ, BICG_RR, BICG_ZZ, BICG_RHO, BICG_RU, BICG_PQ, BICG_QZ, BICG_QU, BICG_NSLOT };

/* Preconditioned BiCG (see src/ksp/fusedbicg.cxx), from the values of one iteration:
     alpha = rho / <p~,A p>,   beta = (rho - alpha (<u,r~> + <z,q~>) + alpha^2 <u,q~>) / rho,   rho = <z,r~>
   (the predicted <z',r~'> of the next iteration over the computed one).  rho = 0 or <p~,A p> = 0: BREAKDOWN.      */
FUSED_HD inline RecurrenceStatus BiCGCoefficients(const PetscScalar *v, PetscScalar *alpha, PetscScalar *beta)
{
  const PetscScalar rho = v[BICG_RHO], pq = v[BICG_PQ], ru = v[BICG_RU], qz = v[BICG_QZ], qu = v[BICG_QU];

  if (NotFinite(rho) || NotFinite(pq) || NotFinite(ru) || NotFinite(qz) || NotFinite(qu)) return RecurrenceStatus::NANORINF;
  if (rho == 0 || pq == 0) return RecurrenceStatus::BREAKDOWN;
  *alpha = rho / pq;
  *beta  = fma(*alpha, fma(*alpha, qu, -(ru + qz)), rho) / rho;
  return RecurrenceStatus::OK;
}

/* Pipelined BiCGStab (seed 000 Alg. 4, see src/ksp/fusedbcgs.cxx) */
FUSED_HD inline RecurrenceStatus BCGSAlpha(PetscScalar rrstar, PetscScalar Aprstar, PetscScalar *alpha)
{
  if (NotFinite(rrstar) || NotFinite(Aprstar)) return RecurrenceStatus::NANORINF;
  if (rrstar == 0 || Aprstar == 0) return RecurrenceStatus::BREAKDOWN;
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
   norm explicitly), NANORINF on NaN/Inf (in dww or any R[j]: the sum of squares is then NaN or Inf,
   as it is when a square overflows).  The sum runs without branches, in four chains (j mod 4,
   added as (0 + 1) + (2 + 3)): on the device every step of a chunk waits for it.                  */
FUSED_HD inline RecurrenceStatus SGMRESColumn(PetscInt k, const PetscScalar *R, PetscScalar dww, PetscReal keep, PetscScalar *h2)
{
  PetscScalar s[4] = {0, 0, 0, 0};
  PetscInt    j    = 0;

  for (; j + 4 <= k; j += 4) {
    s[0] += R[j] * R[j];
    s[1] += R[j + 1] * R[j + 1];
    s[2] += R[j + 2] * R[j + 2];
    s[3] += R[j + 3] * R[j + 3];
  }
  if (j < k) s[0] += R[j] * R[j];
  if (j + 1 < k) s[1] += R[j + 1] * R[j + 1];
  if (j + 2 < k) s[2] += R[j + 2] * R[j + 2];
  const PetscScalar s2 = (s[0] + s[1]) + (s[2] + s[3]);
  if (NotFinite(dww) || NotFinite(s2)) return RecurrenceStatus::NANORINF;
  *h2 = dww - s2;
  if (!(*h2 > keep * dww)) return RecurrenceStatus::BREAKDOWN;
  return RecurrenceStatus::OK;
}

/* How a backend runs a chunk of iterations that a solver hands it whole (Backend::cg_chunk, bcgs_chunk,
   sgmres_chunk), chosen by one dispatcher per backend:
     AUTO      the dispatcher chooses from the matrix and the tuning table (CUDA: the resident kernel when
               the matrix fits one block or cluster, else a persistent grid kernel where the tuning
               allows, else the steps)
     STEPS     the backend operations of its steps, one kernel each
     GRID      one persistent kernel on a cooperative grid (or one cluster), never the resident kernel,
               whatever the tuning's row limits say
     RESIDENT  the resident kernel where the matrix fits it, else as AUTO
   A backend without persistent kernels (host, Kokkos) runs the steps for every form; a chunk with
   several processes runs its steps.                                                                  */
enum class ChunkForm { AUTO, STEPS, GRID, RESIDENT };

/* The state of a chunk of iterations run with device-resident scalars (src/ksp/fusedchunk.cxx), in
   backend memory: written by the host before the chunk, read (and `stopped` set) by the kernels.   */
struct ChunkControl {
  PetscReal ttol;     /* a norm <= ttol stops (KSP's ttol, from KSPConvergedDefault(); < 0: never) */
  PetscReal divlimit; /* a norm >= divlimit stops (divtol times the initial norm)                  */
  PetscInt  normdot;  /* the norm is sqrt|slot[normdot]| (fusedbcgs: >= 0 when tested, its norm is a
                         recurrence); -1: no norm, only coefficient failures and NaN/Inf stop            */
  PetscInt  first_it; /* the KSP iteration number of chunk iteration 0 (the state entering it)        */
  PetscInt  min_it;   /* KSP min_it and chknorm: no norm test at iterations < min_it or <= chknorm    */
  PetscInt  chknorm;
  PetscInt  stopped;              /* -1 while running, else the chunk iteration after which nothing ran          */
  PetscInt  stage;                /* where chunk iteration stopped + 1 stopped: 0 at its start, 1 before its update */
  PetscReal rho;                  /* fusedsgmres: the residual norm that started the restart cycle               */
  PetscInt  start;                /* 1: the chunk computes the solve's start as its iteration 0 and sets ttol and
                                     divlimit from its norm (ChunkStartLimits()); 2 (fusedsgmres): it computes a
                                     restart's residual norm as its iteration 0, tested with the limits given   */
  PetscReal rtol, abstol, divtol; /* the KSP's tolerances, for ChunkStartLimits()                           */
  PetscInt  bnorm;                /* a start from a nonzero initial guess under KSPConvergedDefault(): the norm
                                     of b its limits take (ChunkBNorm); CHUNK_BNORM_NONE: the initial residual's */
  PetscInt    mininitial;         /* KSPConvergedDefaultSetUMIRNorm(): the smaller of that norm and ||r_0||  */
  PetscScalar bnormsq;            /* that norm squared, written by the chunk's start                        */
  PetscScalar ref_rz, ref_pq;     /* fusedcg: <r,z> and <p,Ap> of the solve's iteration 0, whose signs a definite
                                     operator and PC keep (CGCoefficients(); a chunk with start = 1 takes them
                                     from its own iteration 0, CGReference())                                 */
};

/* The reference values of CGCoefficients() for a chunk of CG iterations whose iteration 0 is slot0 */
FUSED_HD inline void CGReference(const ChunkControl &c, const PetscScalar *slot0, PetscScalar *ref_rz, PetscScalar *ref_pq)
{
  *ref_rz = c.start == 1 ? slot0[CG_RZ] : c.ref_rz;
  *ref_pq = c.start == 1 ? slot0[CG_PQ] : c.ref_pq;
}

/* The norm of b that KSPConvergedDefault() divides by at iteration 0 when the initial guess is nonzero:
   ||b|| (unpreconditioned norm), ||M^{-1} b|| (preconditioned) or sqrt(<b, M^{-1} b>) (natural)  */
enum ChunkBNorm { CHUNK_BNORM_NONE = -1, CHUNK_BNORM_B, CHUNK_BNORM_MB, CHUNK_BNORM_BMB };

/* The control of a chunk that computed the solve's start (c.start = 1, normsq0: the squared norm of
   its iteration 0) with the limits KSPConvergedDefault() sets at iteration 0: ttol = max(rtol rnorm0,
   abstol), divlimit = divtol rnorm0, rnorm0 the initial norm, or with a nonzero initial guess the norm
   of b (c.bnormsq; the initial norm when b = 0; the smaller of the two with c.mininitial).  Other
   chunks (a restart's included): c as it is.                                                     */
FUSED_HD inline ChunkControl ChunkStartLimits(ChunkControl c, PetscScalar normsq0)
{
  if (c.start == 1 && c.normdot >= 0) {
    const PetscReal rnorm  = sqrt(normsq0 < 0 ? -normsq0 : normsq0);
    PetscReal       rnorm0 = rnorm;
    if (c.bnorm != CHUNK_BNORM_NONE) {
      PetscReal snorm = sqrt(c.bnormsq < 0 ? -c.bnormsq : c.bnormsq);
      if (snorm == 0) snorm = rnorm;
      rnorm0 = c.mininitial && rnorm < snorm ? rnorm : snorm;
    }
    c.ttol     = c.rtol * rnorm0 > c.abstol ? c.rtol * rnorm0 : c.abstol;
    c.divlimit = c.divtol * rnorm0;
  }
  return c;
}

/* The term of row i of the squared norm of b that a start from a nonzero guess takes (kind: ChunkBNorm;
   w: the Jacobi weight of the row, 1 without a preconditioner)                                    */
FUSED_HD inline PetscScalar ChunkBNormTerm(PetscInt kind, PetscScalar b, PetscScalar w)
{
  return kind == CHUNK_BNORM_MB ? (w * b) * (w * b) : (kind == CHUNK_BNORM_BMB ? b * (w * b) : b * b);
}

/* Whether the norm of chunk iteration j ends the chunk (slot: that iteration's reduced values):
   NaN or Inf, or PETSc's default convergence test (KSPConvergedDefault()) would stop there.  The
   host tests every iteration again with the KSP's own test, which has the last word; this only
   keeps the device from iterating past a stop.  The state entering a chunk (j = 0) was tested by
   the host already and never stops it, so every chunk makes progress - unless the chunk computed
   it (c.start, the limits from ChunkStartLimits()).                                               */
FUSED_HD inline bool ChunkNormSqStops(const ChunkControl &c, PetscInt j, PetscScalar normsq)
{
  const PetscInt it = c.first_it + j;
  if (c.normdot < 0 || (j == 0 && !c.start)) return false;
  if (NotFinite(normsq)) return true;
  if (it <= c.chknorm || it < c.min_it) return false;
  const PetscReal norm = sqrt(normsq < 0 ? -normsq : normsq);
  return norm <= c.ttol || norm >= c.divlimit;
}

FUSED_HD inline bool ChunkNormStops(const ChunkControl &c, PetscInt j, const PetscScalar *slot)
{
  return c.normdot >= 0 && ChunkNormSqStops(c, j, slot[c.normdot]);
}

/* The control the chained operation of chunk iteration j >= 1 tests with (prev: slot j - 1 of slots
   of nslot values, normsq: the index of the squared norm in slot 0): with the limits of
   ChunkStartLimits() from slot 0 when the chunk started the solve                                */
FUSED_HD inline ChunkControl ChunkLimits(const ChunkControl &c, const PetscScalar *prev, PetscInt j, PetscInt nslot, PetscInt normsq)
{
  return c.start && c.normdot >= 0 ? ChunkStartLimits(c, prev[normsq - (j - 1) * nslot]) : c;
}

/* The coefficients of the chained CG update of chunk iteration j (prev: slot j - 1 of the chunk's
   consecutive slots; symmetric_pc as in CGCoefficients()): alpha = beta = 0 for j = 0 (a chunk's
   start); false when the chunk stops before iteration j (a coefficient fails, or the norm of
   iteration j - 1 stops it: ChunkNormStops() with the limits of ChunkLimits())                    */
FUSED_HD inline bool CGChainedCoefficients(const ChunkControl &c, const PetscScalar *prev, PetscInt j, bool symmetric_pc, PetscScalar *alpha, PetscScalar *beta)
{
  PetscScalar ref_rz = 0, ref_pq = 0;

  *alpha = *beta = 0;
  if (j == 0) return true;
  CGReference(c, prev - (j - 1) * CG_NSLOT, &ref_rz, &ref_pq);
  return CGCoefficients(prev, ref_rz, ref_pq, symmetric_pc, alpha, beta) == RecurrenceStatus::OK && !ChunkNormStops(ChunkLimits(c, prev, j, CG_NSLOT, c.normdot), j - 1, prev);
}

/* BiCGStab chunks (src/ksp/fusedbcgs.cxx): the values of one iteration in its slot */
enum BCGSChunkSlot { BCGS_APR, BCGS_SS, BCGS_ASS, BCGS_ASAS, BCGS_ASR, BCGS_RRSTAR, BCGS_RR, BCGS_NSLOT };

/* alpha of chunk iteration j (from <r,r*> of iteration j-1 and <Ap,r*> of iteration j), after the
   stop test of the norm of iteration j-1 (iteration 0: its <r,r> when the chunk computed the start);
   false: the chunk stops before iteration j's s                                                   */
FUSED_HD inline bool BCGSChunkAlpha(const ChunkControl &c, PetscInt j, const PetscScalar *prev, const PetscScalar *cur, PetscScalar *alpha)
{
  if (j > 1) {
    PetscScalar omega, beta;
    PetscReal   rnorm2;
    if (BCGSOmegaBeta(prev[BCGS_ASS], prev[BCGS_ASAS], prev[BCGS_ASR], prev[BCGS_APR], prev[BCGS_SS], &omega, &beta, &rnorm2) == RecurrenceStatus::OK && ChunkNormSqStops(c, j - 1, rnorm2)) return false;
  } else if (c.start && ChunkNormSqStops(c, 0, prev[BCGS_RR]))
    return false;
  return BCGSAlpha(prev[BCGS_RRSTAR], cur[BCGS_APR], alpha) == RecurrenceStatus::OK;
}

/* omega and beta of chunk iteration j from its slot; false: the chunk stops before its update */
FUSED_HD inline bool BCGSChunkOmegaBeta(const PetscScalar *cur, PetscScalar *omega, PetscScalar *beta)
{
  PetscReal rnorm2;
  return BCGSOmegaBeta(cur[BCGS_ASS], cur[BCGS_ASAS], cur[BCGS_ASR], cur[BCGS_APR], cur[BCGS_SS], omega, beta, &rnorm2) == RecurrenceStatus::OK;
}

/* alpha, omega and beta of the chained BiCGStab update of a chunk iteration (prev, cur: the slots of the
   iteration before and of this one); false: the chunk stops before the update                     */
FUSED_HD inline bool BCGSChainedCoefficients(const PetscScalar *prev, const PetscScalar *cur, PetscScalar *alpha, PetscScalar *omega, PetscScalar *beta)
{
  return BCGSAlpha(prev[BCGS_RRSTAR], cur[BCGS_APR], alpha) == RecurrenceStatus::OK && BCGSChunkOmegaBeta(cur, omega, beta);
}

/* Simpler GMRES chunks (src/ksp/fusedsgmres.cxx), restart m: the slot of step i of a cycle holds the
   multi-dot d[0..i] = <v_1,w>..<v_{i-1},w>, <z_i,w>, <w,w> at [0..i], <z_{i+1},z_{i+1}> at [m+1] and the
   square of the residual estimate of step i at [m+2]; the slot entering a chunk holds those of the
   step before it (<z_1,z_1> = 1 at a cycle's start).                                              */
FUSED_HD constexpr PetscInt SGMRESChunkSlot(PetscInt m)
{
  return m + 3;
}

/* The column of step i of a cycle once the estimate entering it did not stop (SGMRESChunkStep()):
   -1 when the step goes on, with h = ||w - sum_j R_{j,i} v_j|| and eta = <z_i,w>/h; 1 when the
   column of R fails (NaN/Inf, cancellation beyond keep, or h = 0: a lucky breakdown), which the
   host handles                                                                                  */
FUSED_HD inline int SGMRESChunkColumn(PetscInt i, PetscReal keep, const PetscScalar *cur, PetscScalar *h, PetscScalar *eta)
{
  PetscScalar h2;

  if (SGMRESColumn(i - 1, cur, cur[i], keep, &h2) != RecurrenceStatus::OK || NotFinite(cur[i - 1]) || !(h2 > 0)) return 1;
  *h   = sqrt(h2);
  *eta = cur[i - 1] / *h;
  return -1;
}

/* The residual estimate of step i of a cycle from its eta (the RB-SGMRES formula of the solver):
   ||r_{i-1}|| = rho ||z_i|| (<z_i,z_i> at prev[m+1]), times sqrt(1 - c^2), c = |rho eta| / ||r_{i-1}|| */
FUSED_HD inline PetscReal SGMRESChunkEstimate(const ChunkControl &c, PetscInt i, PetscInt m, const PetscScalar *prev, PetscScalar eta)
{
  const PetscReal before = i > 1 ? c.rho * sqrt(prev[m + 1] < 0 ? -prev[m + 1] : prev[m + 1]) : c.rho;
  const PetscReal ratio  = before > 0 ? (c.rho * eta < 0 ? -c.rho * eta : c.rho * eta) / before : 1;
  const PetscReal cosine = ratio < 1 ? ratio : 1;
  const PetscReal sinesq = (1 - cosine) * (1 + cosine);
  return before * sqrt(sinesq > 0 ? sinesq : 0);
}

/* Step i (chunk iteration j) of a cycle: 0 when the estimate of the step before stops the chunk
   (ChunkNormSqStops), else SGMRESChunkColumn() and, when the step goes on, its estimate res
   (SGMRESChunkEstimate())                                                                       */
FUSED_HD inline int SGMRESChunkStep(const ChunkControl &c, PetscInt j, PetscInt i, PetscInt m, PetscReal keep, const PetscScalar *prev, const PetscScalar *cur, PetscScalar *h, PetscScalar *eta, PetscReal *res)
{
  if (ChunkNormSqStops(c, j - 1, prev[m + 2])) return 0;
  const int column = SGMRESChunkColumn(i, keep, cur, h, eta);
  if (column < 0) *res = SGMRESChunkEstimate(c, i, m, prev, *eta);
  return column;
}

/* A chunk that starts a simpler GMRES solve from a zero initial guess (r_0 = b, z_1 = b / rho), or a
   restart cycle from its true residual b (ctl->start = 2): from slot0[m+2] = <b,b>, sets <z_1,z_1> = 1
   at slot0[m+1] and ctl's rho = ||b|| and the limits of ChunkStartLimits(); rho = 0 sets
   ctl->stopped = 0 (nothing to iterate: the host ends the solve, as it does when it starts the cycle
   itself).  Returns rho.                                                                         */
FUSED_HD inline PetscReal SGMRESChunkStart(ChunkControl *ctl, PetscScalar *slot0, PetscInt m)
{
  const PetscScalar bb  = slot0[m + 2];
  const PetscReal   rho = sqrt(bb < 0 ? -bb : bb);

  slot0[m + 1] = 1;
  *ctl         = ChunkStartLimits(*ctl, bb);
  ctl->rho     = rho;
  if (rho == 0) {
    ctl->stopped = 0;
    ctl->stage   = 0;
  }
  return rho;
}

} // namespace fusedksp
