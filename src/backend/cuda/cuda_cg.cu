/* CUDA backend: the CG vector update (seed 000 Alg. 2, lines 10-12, preconditioned) */
#include "backend/cuda/cuda_common.cuh"
#include "backend/iteration.hpp"

namespace fusedksp
{
namespace cuda
{

/* One thread block per chunk: the updates of Backend::cg_update and the block's partials of
   <r,z>, <r,r>, <z,z> (the z of the update: w .* r, z - a u or r)                            */
__device__ inline void CGUpdateBlock(PetscInt n, PetscInt chunk, PetscScalar a, PetscScalar b, PetscScalar *__restrict__ x, PetscScalar *__restrict__ r, PetscScalar *__restrict__ z, PetscScalar *__restrict__ p, const PetscScalar *__restrict__ q,
                                     const PetscScalar *__restrict__ u, const PetscScalar *__restrict__ w, const Reduction &red)
{
  const ChunkRange range  = BlockChunk(n, chunk);
  PetscScalar      acc[3] = {0, 0, 0};

#pragma unroll 4
  for (PetscInt64 i = range.begin + threadIdx.x; i < range.end; i += blockDim.x)
    CGUpdateEntry(
        a, b, q[i], [&](PetscScalar ri) { return w ? w[i] * ri : (z ? z[i] = z[i] - a * u[i] : ri); }, x[i], r[i], p[i], acc);
  ReduceBlocks(acc, 3, red);
}

__global__ void CGUpdateKernel(PetscInt n, PetscInt chunk, PetscScalar a, PetscScalar b, PetscScalar *__restrict__ x, PetscScalar *__restrict__ r, PetscScalar *__restrict__ z, PetscScalar *__restrict__ p, const PetscScalar *__restrict__ q,
                               const PetscScalar *__restrict__ u, const PetscScalar *__restrict__ w, const Reduction red)
{
  CGUpdateBlock(n, chunk, a, b, x, r, z, p, q, u, w, red);
}

/* Backend::cg_update_chained: every thread computes alpha and beta from the previous iteration's
   reduced values (the same values everywhere, so the whole grid takes the same branch); block 0
   records a stop                                                                              */
__global__ void CGUpdateChainedKernel(PetscInt n, PetscInt chunk, const PetscScalar *__restrict__ prev, ChunkControl *ctl, PetscInt j, PetscScalar *__restrict__ x, PetscScalar *__restrict__ r, PetscScalar *__restrict__ z, PetscScalar *__restrict__ p,
                                      const PetscScalar *__restrict__ q, const PetscScalar *__restrict__ u, const PetscScalar *__restrict__ w, const Reduction red)
{
  PetscScalar a, b;

  if (ctl->stopped >= 0) return;
  if (!CGChainedCoefficients(*ctl, prev, j, u == nullptr, &a, &b)) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
      ctl->stopped = j - 1;
      ctl->stage   = 0;
    }
    return;
  }
  CGUpdateBlock(n, chunk, a, b, x, r, z, p, q, u, w, red);
}

/*
   CGUpdate - Backend::cg_update on the device: one kernel launch, one device->host copy of the
   3 x nblocks partials (none of either when n == 0)
*/
PetscErrorCode CGUpdate(PetscInt n, PetscScalar a, PetscScalar b, PetscScalar *x, PetscScalar *r, PetscScalar *z, PetscScalar *p, const PetscScalar *q, const PetscScalar *u, const PetscScalar *w, PetscScalar dots[3])
{
  return LaunchReducing(CGUpdateKernel, n, false, 3, dots, a, b, x, r, z, p, q, u, w);
}

/*
   CGUpdateChained - Backend::cg_update_chained on the device: one kernel launch, results to the
   reduce target (zeros when n == 0 and the update runs), nothing copied to the host
*/
PetscErrorCode CGUpdateChained(PetscInt n, const PetscScalar *prev, ChunkControl *ctl, PetscInt j, PetscScalar *x, PetscScalar *r, PetscScalar *z, PetscScalar *p, const PetscScalar *q, const PetscScalar *u, const PetscScalar *w)
{
  PetscFunctionBegin;
  PetscCheck(ReduceTargetIsSet(), PETSC_COMM_SELF, PETSC_ERR_ORDER, "cg_update_chained needs a reduce target");
  PetscCall(LaunchReducing(CGUpdateChainedKernel, n, true, 3, nullptr, prev, ctl, j, x, r, z, p, q, u, w));
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace cuda
} // namespace fusedksp
