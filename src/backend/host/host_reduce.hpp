/* Host backend: the two-stage reduction the device kernels use, as a plain loop */
#pragma once

#include "backend/eager.hpp"
#include <algorithm>

namespace fusedksp
{
namespace host
{

/* Runs body(i, partial) for i in [0, n), with the range cut into ReduceChunks(n, maxblocks)
   contiguous chunks; each chunk accumulates ND partial sums, which are then added in chunk order
   into dots[] (the second stage).  This is the order of operations of the CUDA kernels up to the
   thread-level split inside a block, so the two backends agree to rounding.                    */
template <int ND, class Body> inline void BlockedReduce(PetscInt n, PetscScalar *dots, Body &&body)
{
  PetscScalar total[ND > 0 ? ND : 1] = {};
  if (n > 0) {
    const PetscInt nblocks = ReduceChunks(n, FUSED_REDUCE_BLOCKS);
    const PetscInt chunk   = (n + nblocks - 1) / nblocks;
    for (PetscInt start = 0; start < n; start += chunk) {
      const PetscInt end                   = std::min(n, start + chunk);
      PetscScalar    part[ND > 0 ? ND : 1] = {};
      for (PetscInt i = start; i < end; ++i) body(i, part);
      for (int d = 0; d < ND; ++d) total[d] += part[d];
    }
  }
  for (int d = 0; d < ND; ++d) dots[d] = total[d];
}

/* Runtime-count variant (mdot: the number of dots is the Krylov dimension) */
template <class Body> inline void BlockedReduceN(PetscInt n, int nd, PetscScalar *dots, PetscScalar *part, Body &&body)
{
  for (int d = 0; d < nd; ++d) dots[d] = 0;
  if (n <= 0) return;
  const PetscInt nblocks = ReduceChunks(n, FUSED_MDOT_BLOCKS);
  const PetscInt chunk   = (n + nblocks - 1) / nblocks;
  for (PetscInt start = 0; start < n; start += chunk) {
    const PetscInt end = std::min(n, start + chunk);
    for (int d = 0; d < nd; ++d) part[d] = 0;
    for (PetscInt i = start; i < end; ++i) body(i, part);
    for (int d = 0; d < nd; ++d) dots[d] += part[d];
  }
}

extern BackendCounters counters;

/* The reduce target of the next reducing operation (Backend::reduce_target) */
using eager::ReduceTarget;
extern ReduceTarget target;

/* At the start of an operation that honours the reduce target: true when it must do nothing (its
   stop flag is set); the target is then used up                                                 */
inline bool TargetStopped()
{
  if (!target.stop || *target.stop < 0) return false;
  target = {};
  return true;
}

/* The results of an operation: to the reduce target when one is set (then used up), else to dots */
inline void StoreResults(int nd, const PetscScalar *all, PetscScalar *dots)
{
  PetscScalar *dst = target.slot ? target.slot : dots;
  for (int d = 0; d < nd; ++d) dst[d] = all[d];
  target = {};
}

#include "backend/backend_functions.hpp" /* the contract's kernel families in this namespace */
PetscErrorCode SpGEMMSymbolic(SpGEMMView *);
PetscErrorCode SpGEMMNumeric(SpGEMMView *);
PetscErrorCode SpGEMMFree(SpGEMMView *);
PetscErrorCode CSRTranspose(const CSRView *, PetscInt *, PetscInt *, PetscScalar *);
/* PetscMalloc() / PetscFree() of the backend's memory (host_memory.cxx) */
PetscErrorCode MallocBytes(size_t, void **);
PetscErrorCode FreeBytes(void *);
PetscErrorCode FenceRecord(void);

} // namespace host
} // namespace fusedksp
