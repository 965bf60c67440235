/* Fault injection for the tests of the error paths */
#include "sys/fusedksp_impl.hpp"

namespace fusedksp
{
namespace
{
PetscInt64 allocations = 0; /* since the last FusedKSPDebugFailAllocation() */
PetscInt64 fail_at     = 0; /* the allocation that fails (0: none) */
} // namespace

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
