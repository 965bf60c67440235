/* The PETSc builds FusedKSP supports: real double-precision scalars and 32-bit indices.  The makefile refuses
   any other build before compiling; these stop a build that bypasses it with the same clear message, not with
   obscure errors from the kernels. */
#pragma once

#include <petscsys.h>

#if defined(PETSC_USE_COMPLEX)
#error "FusedKSP supports PETSc builds with real double-precision scalars; this PETSc has complex scalars (--with-scalar-type=complex)"
#endif
#if !defined(PETSC_USE_REAL_DOUBLE)
#error "FusedKSP supports PETSc builds with real double-precision scalars; this PETSc has another precision (--with-precision)"
#endif
#if defined(PETSC_USE_64BIT_INDICES)
#error "FusedKSP supports PETSc builds with 32-bit indices; this PETSc has 64-bit indices (--with-64-bit-indices)"
#endif
