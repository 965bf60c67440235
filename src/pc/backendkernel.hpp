/* PCs whose application is one kernel on the active backend, for the fused solvers (src/ksp/fusedcommon.cxx) */
#pragma once

#include <petscpc.h>
#include <vector>

namespace fusedksp
{

/* Whether pc is applied by one kernel on the active backend: recordable in a graph, local (no communication) and
   without host access - point-block Jacobi of a fused matrix whose blocks are on the active backend.  The fused
   solvers then treat it as a kernel of their iterations (chunks, graphs, batches) and apply it with
   PCBackendKernelApply() on fused vectors (src/pc/pbjacobi.cxx)                                                   */
PetscErrorCode PCBackendKernel(PC pc, PetscBool *yes);
PetscErrorCode PCBackendKernelApply(PC pc, PetscBool transpose, Vec x, Vec y);

/* Appends the backend arrays such a PC's kernel reads to the key of a recorded graph (a new setup may move them) */
PetscErrorCode PCBackendKernelKey(PC pc, std::vector<const void *> *key);

} // namespace fusedksp
