/* Debugging helpers for the tests: fault injection of the error paths, the fused vectors' host arrays */
#include "sys/fusedksp_impl.hpp"

namespace fusedksp
{
namespace
{
PetscInt64 allocations = 0; /* since the last FusedKSPDebugFailAllocation() */
PetscInt64 fail_at     = 0; /* the allocation that fails (0: none) */
PetscInt64 host_arrays = 0; /* FusedKSPDebugGetHostArrayCount() */
} // namespace

void HostArrayAllocated()
{
  ++host_arrays;
}

bool AllocationFails()
{
  if (++allocations != fail_at) return false;
  fail_at = 0;
  return true;
}

} // namespace fusedksp

/*@C
  FusedKSPDebugFailAllocation - Makes the n-th allocation of FusedKSP from now on fail, for testing
  the error paths

  Not Collective

  Input Parameter:
. n - the allocation that fails, counted from this call; 0 for none (the default)

  Options Database Key:
. -fused_debug_fail_alloc <n> - the same, counted from `FusedKSPInitializePackage()`

  Level: developer

  Notes:
  Every allocation FusedKSP makes that can fail counts: backend memory (device memory on the CUDA
  backend), pinned host buffers, the internal buffers of the CUDA backend, and the C++ containers of
  the package. The chosen one fails as an out-of-memory would, with a `PETSC_ERR_MEM` error (naming the
  bytes requested where the allocation knows them); later allocations succeed. `FusedKSPDebugGetAllocationCount()`
  says how many allocations a piece of code makes, so a test can fail each of them in turn.

.seealso: `FusedKSPDebugGetAllocationCount()`, `FusedKSPInitializePackage()`
@*/
PetscErrorCode FusedKSPDebugFailAllocation(PetscInt64 n)
{
  PetscFunctionBegin;
  PetscCheck(n >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "The allocation to fail must be 0 (none) or positive, not %" PetscInt64_FMT, n);
  fusedksp::allocations = 0;
  fusedksp::fail_at     = n;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*@C
  FusedKSPDebugGetAllocationCount - The number of allocations FusedKSP made since the last
  `FusedKSPDebugFailAllocation()` (or since the program started)

  Not Collective

  Output Parameter:
. count - the allocations, as `FusedKSPDebugFailAllocation()` counts them

  Level: developer

.seealso: `FusedKSPDebugFailAllocation()`
@*/
PetscErrorCode FusedKSPDebugGetAllocationCount(PetscInt64 *count)
{
  PetscFunctionBegin;
  *count = fusedksp::allocations;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*@C
  FusedKSPDebugGetHostArrayCount - The number of host arrays fused vectors (`VECSEQFUSED`, `VECMPIFUSED`) have
  allocated since the program started

  Not Collective

  Output Parameter:
. count - the host arrays allocated, on this process

  Level: developer

  Notes:
  On a backend whose memory is not host memory (CUDA, the host backend with `-fused_debug_mirror`) a fused vector
  allocates its host array when the host side is first used (`VecGetArray()`, `VecSetValues()`, `VecView()`, ...),
  not at creation: a vector used only by the backend never has one.  Each such allocation counts.  On the other
  backends the host array is allocated at creation, as for `VECSEQ` and `VECMPI`, and does not count.

.seealso: `FusedKSPDebugGetAllocationCount()`, `VECFUSED`
@*/
PetscErrorCode FusedKSPDebugGetHostArrayCount(PetscInt64 *count)
{
  PetscFunctionBegin;
  *count = fusedksp::host_arrays;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*@C
  FusedKSPDebugGetSideCounts - The side scopes that moved work to the active backend's second stream, and the joins
  of that stream into the first, since the program started

  Not Collective

  Output Parameters:
+ forks - side scopes of side 1 opened on the second stream (each first waits for the work queued before it)
- joins - joins of the second stream into the first (the first then waits for the second's work)

  Level: developer

  Notes:
  `KSPFUSEDBICG` runs its A^T side on the second stream (`-ksp_fusedbicg_streams 2`, the default on the CUDA backend):
  one fork and one join per iteration.  A backend with one stream (host, kokkos) counts none.  Either argument may be
  NULL.

.seealso: `FusedKSPGetBackendCounters()`, `KSPFUSEDBICG`
@*/
PetscErrorCode FusedKSPDebugGetSideCounts(PetscInt64 *forks, PetscInt64 *joins)
{
  const fusedksp::BackendCounters *c = fusedksp::ActiveBackend()->counters;

  PetscFunctionBegin;
  if (forks) *forks = c->side_forks;
  if (joins) *joins = c->side_joins;
  PetscFunctionReturn(PETSC_SUCCESS);
}
