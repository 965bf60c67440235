/* The batch and graph entries of the backends that run every operation when it is called (eager.hpp) */
#include "backend/eager.hpp"

namespace fusedksp
{
namespace eager
{

PetscErrorCode NoOp(void)
{
  return PETSC_SUCCESS;
}

PetscErrorCode BatchDefer(PetscBool)
{
  return PETSC_SUCCESS;
}

PetscErrorCode GraphBegin(PetscBool *capturing)
{
  PetscFunctionBegin;
  *capturing = PETSC_FALSE;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode GraphEnd(void **)
{
  PetscFunctionBegin;
  SETERRQ(PETSC_COMM_SELF, PETSC_ERR_ORDER, "This backend records no graphs (its graph_begin() said so)");
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode GraphLaunch(void *, PetscBool *launched)
{
  PetscFunctionBegin;
  *launched = PETSC_FALSE;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode GraphDestroy(void **graph)
{
  PetscFunctionBegin;
  *graph = nullptr;
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace eager
} // namespace fusedksp
