/* CUDA backend: the BiCGStab vector kernels (seed 000 Alg. 4) */
#include "backend/cuda/cuda_common.cuh"
#include "backend/iteration.hpp"

namespace fusedksp
{
namespace cuda
{

/* y := x + a v and the block's partial of <y,y> */
__device__ inline void WAXPYDotBlock(PetscInt n, PetscInt chunk, PetscScalar a, const PetscScalar *__restrict__ x, const PetscScalar *__restrict__ v, PetscScalar *__restrict__ y, const Reduction &red)
{
  const ChunkRange range  = BlockChunk(n, chunk);
  PetscScalar      acc[1] = {0};

#pragma unroll 4
  for (PetscInt64 i = range.begin + threadIdx.x; i < range.end; i += blockDim.x) {
    const PetscScalar yi = x[i] + a * v[i];
    y[i]                 = yi;
    acc[0] += yi * yi;
  }
  ReduceBlocks(acc, 1, red);
}

__global__ void WAXPYDotKernel(PetscInt n, PetscInt chunk, PetscScalar a, const PetscScalar *__restrict__ x, const PetscScalar *__restrict__ v, PetscScalar *__restrict__ y, const Reduction red)
{
  WAXPYDotBlock(n, chunk, a, x, v, y, red);
}

/* Backend::waxpy_dot_chained: alpha from the slots (the same everywhere: one branch for the grid) */
__global__ void WAXPYDotChainedKernel(PetscInt n, PetscInt chunk, const PetscScalar *__restrict__ prev, const PetscScalar *__restrict__ cur, ChunkControl *ctl, PetscInt j, const PetscScalar *__restrict__ x, const PetscScalar *__restrict__ v,
                                      PetscScalar *__restrict__ y, const Reduction red)
{
  PetscScalar alpha = 0;

  if (ctl->stopped >= 0) return;
  if (!BCGSChunkAlpha(ChunkLimits(*ctl, prev, j, BCGS_NSLOT, BCGS_RR), j, prev, cur, &alpha)) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
      ctl->stopped = j - 1;
      ctl->stage   = 0;
    }
    return;
  }
  WAXPYDotBlock(n, chunk, -alpha, x, v, y, red);
}

/* The updates of Backend::bcgs_update and the block's partials of <r,rstar>, <r,r> (and <r,rhat>) */
__device__ inline void BCGSUpdateBlock(PetscInt n, PetscInt chunk, PetscScalar alpha, PetscScalar omega, PetscScalar beta, const PetscScalar *__restrict__ wr, PetscScalar *__restrict__ x, PetscScalar *__restrict__ r, PetscScalar *__restrict__ p,
                                       const PetscScalar *__restrict__ s, const PetscScalar *__restrict__ Ap, const PetscScalar *__restrict__ As, const PetscScalar *__restrict__ rstar, const PetscScalar *__restrict__ rhat, int ndots,
                                       const Reduction &red)
{
  const ChunkRange range  = BlockChunk(n, chunk);
  PetscScalar      acc[3] = {0, 0, 0};

#pragma unroll 4
  for (PetscInt64 i = range.begin + threadIdx.x; i < range.end; i += blockDim.x) {
    const PetscScalar ri = BCGSUpdateEntry(alpha, omega, beta, s[i], As[i], Ap[i], wr, wr ? wr[i] : 1, x[i], r[i], p[i]);
    acc[0] += ri * rstar[i];
    acc[1] += ri * ri;
    if (ndots > 2) acc[2] += ri * rhat[i];
  }
  ReduceBlocks(acc, ndots, red);
}

__global__ void BCGSUpdateKernel(PetscInt n, PetscInt chunk, PetscScalar alpha, PetscScalar omega, PetscScalar beta, const PetscScalar *__restrict__ wr, PetscScalar *__restrict__ x, PetscScalar *__restrict__ r, PetscScalar *__restrict__ p,
                                 const PetscScalar *__restrict__ s, const PetscScalar *__restrict__ Ap, const PetscScalar *__restrict__ As, const PetscScalar *__restrict__ rstar, const PetscScalar *__restrict__ rhat, int ndots, const Reduction red)
{
  BCGSUpdateBlock(n, chunk, alpha, omega, beta, wr, x, r, p, s, Ap, As, rstar, rhat, ndots, red);
}

/* Backend::bcgs_update_chained: alpha, omega, beta from the slots */
__global__ void BCGSUpdateChainedKernel(PetscInt n, PetscInt chunk, const PetscScalar *__restrict__ prev, const PetscScalar *__restrict__ cur, ChunkControl *ctl, PetscInt j, const PetscScalar *__restrict__ wr, PetscScalar *__restrict__ x,
                                        PetscScalar *__restrict__ r, PetscScalar *__restrict__ p, const PetscScalar *__restrict__ s, const PetscScalar *__restrict__ Ap, const PetscScalar *__restrict__ As, const PetscScalar *__restrict__ rstar,
                                        const Reduction red)
{
  PetscScalar alpha = 0, omega = 0, beta = 0;

  if (ctl->stopped >= 0) return;
  if (!BCGSChainedCoefficients(prev, cur, &alpha, &omega, &beta)) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
      ctl->stopped = j - 1;
      ctl->stage   = 1;
    }
    return;
  }
  BCGSUpdateBlock(n, chunk, alpha, omega, beta, wr, x, r, p, s, Ap, As, rstar, nullptr, 2, red);
}

/*
   WAXPYDot - Backend::waxpy_dot on the device: one kernel launch, one device->host copy (none of
   either when n == 0)
*/
PetscErrorCode WAXPYDot(PetscInt n, PetscScalar a, const PetscScalar *x, const PetscScalar *v, PetscScalar *y, PetscScalar dots[1])
{
  return LaunchReducing(WAXPYDotKernel, n, false, 1, dots, a, x, v, y);
}

/*
   BCGSUpdate - Backend::bcgs_update on the device: one kernel launch, one device->host copy of the
   ndots x nblocks partials (none of either when n == 0)
*/
PetscErrorCode BCGSUpdate(PetscInt n, PetscScalar alpha, PetscScalar omega, PetscScalar beta, const PetscScalar *wr, PetscScalar *x, PetscScalar *r, PetscScalar *p, const PetscScalar *s, const PetscScalar *Ap, const PetscScalar *As,
                          const PetscScalar *rstar, const PetscScalar *rhat, int ndots, PetscScalar *dots)
{
  PetscFunctionBegin;
  PetscCheck(ndots == 2 || ndots == 3, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "bcgs_update computes 2 or 3 dot products, asked for %d", ndots);
  PetscCall(LaunchReducing(BCGSUpdateKernel, n, false, ndots, dots, alpha, omega, beta, wr, x, r, p, s, Ap, As, rstar, rhat, ndots));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   WAXPYDotChained, BCGSUpdateChained - Backend::waxpy_dot_chained and bcgs_update_chained on the
   device: one kernel launch each (also for n == 0, which then writes zero sums), results to the
   reduce target, nothing copied to the host
*/
PetscErrorCode WAXPYDotChained(PetscInt n, const PetscScalar *prev, const PetscScalar *cur, ChunkControl *ctl, PetscInt j, const PetscScalar *x, const PetscScalar *v, PetscScalar *y)
{
  PetscFunctionBegin;
  PetscCheck(ReduceTargetIsSet(), PETSC_COMM_SELF, PETSC_ERR_ORDER, "waxpy_dot_chained needs a reduce target");
  PetscCall(LaunchReducing(WAXPYDotChainedKernel, n, true, 1, nullptr, prev, cur, ctl, j, x, v, y));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode BCGSUpdateChained(PetscInt n, const PetscScalar *prev, const PetscScalar *cur, ChunkControl *ctl, PetscInt j, const PetscScalar *wr, PetscScalar *x, PetscScalar *r, PetscScalar *p, const PetscScalar *s, const PetscScalar *Ap,
                                 const PetscScalar *As, const PetscScalar *rstar)
{
  PetscFunctionBegin;
  PetscCheck(ReduceTargetIsSet(), PETSC_COMM_SELF, PETSC_ERR_ORDER, "bcgs_update_chained needs a reduce target");
  PetscCall(LaunchReducing(BCGSUpdateChainedKernel, n, true, 2, nullptr, prev, cur, ctl, j, wr, x, r, p, s, Ap, As, rstar));
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace cuda
} // namespace fusedksp
