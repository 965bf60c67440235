/* The loadable entry point: -dll_append /path/libfusedksp.so calls this at load time */
#include <fusedksp.h>

/*
   PetscDLLibraryRegister_fusedksp - Called by PETSc when libfusedksp is loaded as a dynamic library;
   the symbol name matches the library's basename, or PETSc finds nothing to call.
*/
PETSC_EXTERN PetscErrorCode PetscDLLibraryRegister_fusedksp(void)
{
  PetscFunctionBegin;
  PetscCall(FusedKSPInitializePackage());
  PetscFunctionReturn(PETSC_SUCCESS);
}
