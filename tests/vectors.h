/* Vector helpers of the test programs that compare a fused solve with PETSc's on vectors of different types
   (test_ilu, test_pbjacobi, test_chebyshev): the relative difference and a copy of values through the host arrays. */
#pragma once
#include <petscvec.h>

/* ||y - z|| / ||z|| of two vectors of any types (the same layout) */
static PetscErrorCode RelDiff(Vec y, Vec z, PetscReal *d)
{
  const PetscScalar *ya, *za;
  PetscInt           n;
  PetscReal          loc[2] = {0, 0}, glob[2];

  PetscFunctionBeginUser;
  PetscCall(VecGetLocalSize(y, &n));
  PetscCall(VecGetArrayRead(y, &ya));
  PetscCall(VecGetArrayRead(z, &za));
  for (PetscInt i = 0; i < n; ++i) {
    loc[0] += PetscRealPart((ya[i] - za[i]) * PetscConj(ya[i] - za[i]));
    loc[1] += PetscRealPart(za[i] * PetscConj(za[i]));
  }
  PetscCall(VecRestoreArrayRead(y, &ya));
  PetscCall(VecRestoreArrayRead(z, &za));
  PetscCallMPI(MPIU_Allreduce(loc, glob, 2, MPIU_REAL, MPIU_SUM, PETSC_COMM_WORLD));
  *d = glob[1] > 0 ? PetscSqrtReal(glob[0] / glob[1]) : PetscSqrtReal(glob[0]);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* y := the values of x (any vector types, the same layout) */
static PetscErrorCode CopyValues(Vec x, Vec y)
{
  const PetscScalar *xa;
  PetscScalar       *ya;
  PetscInt           n;

  PetscFunctionBeginUser;
  PetscCall(VecGetLocalSize(x, &n));
  PetscCall(VecGetArrayRead(x, &xa));
  PetscCall(VecGetArrayWrite(y, &ya));
  PetscCall(PetscArraycpy(ya, xa, n));
  PetscCall(VecRestoreArrayWrite(y, &ya));
  PetscCall(VecRestoreArrayRead(x, &xa));
  PetscFunctionReturn(PETSC_SUCCESS);
}
