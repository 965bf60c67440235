/*
   What the backends that run every operation when it is called (host, Kokkos) share: the reduce target
   kept until the next reducing operation, and the contract's batch and graph entries, which have nothing
   to do there (no results to defer, no graphs to record; the Kokkos backend has batches of its own).
*/
#pragma once

#include "backend/backend.hpp"

namespace fusedksp
{
namespace eager
{

/* The reduce target of the next reducing operation (Backend::reduce_target) */
struct ReduceTarget {
  PetscScalar    *slot = nullptr;
  const PetscInt *stop = nullptr;
};

/* Backend::reduce_target of the backend whose target is `target` */
template <ReduceTarget &target> PetscErrorCode ReduceTargetSet(PetscScalar *slot, const PetscInt *stop)
{
  target = {slot, stop};
  return PETSC_SUCCESS;
}

/* batch_begin, batch_end, batch_abandon and graph_abort: nothing to do */
PetscErrorCode NoOp(void);
/* batch_defer: every result is there when its operation returns */
PetscErrorCode BatchDefer(PetscBool);
/* graph_begin: *capturing = PETSC_FALSE, so graph_end is never reached */
PetscErrorCode GraphBegin(PetscBool *capturing);
PetscErrorCode GraphEnd(void **graph);
/* graph_launch: *launched = PETSC_FALSE; graph_destroy: *graph = NULL */
PetscErrorCode GraphLaunch(void *graph, PetscBool *launched);
PetscErrorCode GraphDestroy(void **graph);

} // namespace eager
} // namespace fusedksp
