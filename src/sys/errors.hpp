/* Error handling shared by every layer: C++ exceptions turned into PETSc errors, and the fault
   injection of the tests of the error paths (FusedKSPDebugFailAllocation()) */
#pragma once

#include <petscsys.h>
#include <exception>
#include <new>

namespace fusedksp
{

/* True when this allocation must fail (FusedKSPDebugFailAllocation()): every allocation of FusedKSP
   that can fail asks once - backend and pinned memory, and the C++ code of FusedKSPCallCXX()       */
bool AllocationFails();

} // namespace fusedksp

/* Runs C++ code that may throw (standard containers, new) in a function that returns a
   PetscErrorCode: std::bad_alloc becomes PETSC_ERR_MEM, any other std::exception PETSC_ERR_LIB, so no
   exception crosses PETSc's C frames (it would terminate the program).  The code counts as one
   allocation for FusedKSPDebugFailAllocation().                                                  */
#define FusedKSPCallCXX(...)                                                                                                                                                                                                                             \
  do {                                                                                                                                                                                                                                                   \
    try {                                                                                                                                                                                                                                                \
      if (fusedksp::AllocationFails()) throw std::bad_alloc();                                                                                                                                                                                           \
      __VA_ARGS__;                                                                                                                                                                                                                                       \
    } catch (const std::bad_alloc &) {                                                                                                                                                                                                                   \
      SETERRQ(PETSC_COMM_SELF, PETSC_ERR_MEM, "Out of host memory: a C++ allocation failed (std::bad_alloc) in %s", #__VA_ARGS__);                                                                                                                       \
    } catch (const std::exception &fusedksp_e_) {                                                                                                                                                                                                        \
      SETERRQ(PETSC_COMM_SELF, PETSC_ERR_LIB, "C++ exception in %s: %s", #__VA_ARGS__, fusedksp_e_.what());                                                                                                                                              \
    }                                                                                                                                                                                                                                                    \
  } while (0)
