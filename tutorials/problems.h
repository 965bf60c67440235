/*
   Test and benchmark problems for FusedKSP (tutorial support code, public PETSc API only).

   ProblemCreate() builds the matrix with MatSetFromOptions(), so -mat_type aijfused (and a prefix)
   apply, and the vectors with MatCreateVecs().  Options (with the given prefix):
     -problem <poisson2d|fem2d|laplace3d|elasticity3d|convdiff3d|randdd|file>
     -n <points per direction>     (randdd: number of rows)
     -f <file>                      (MatrixMarket .mtx or PETSc binary; problem "file")
     -rhs <ones|random|solution>   b = ones, random (seeded), or b = A * x_exact with x_exact random
*/
#pragma once
#include <petscksp.h>

typedef struct {
  Mat  A;
  Vec  b;      /* right-hand side */
  Vec  xexact; /* exact solution when known (rhs "solution"), else NULL */
  char name[64];
  PetscBool symmetric; /* SPD problems: poisson2d, fem2d, laplace3d, elasticity3d, randdd (symmetric variant) */
} Problem;

PETSC_EXTERN PetscErrorCode ProblemCreate(MPI_Comm, const char prefix[], Problem *);
PETSC_EXTERN PetscErrorCode ProblemDestroy(Problem *);
