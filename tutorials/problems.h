/*
   Test and benchmark problems for FusedKSP (tutorial support code, public PETSc API only).

   ProblemCreate() builds the matrix with MatSetFromOptions(), so -mat_type aijfused (and a prefix)
   apply, and the vectors with MatCreateVecs() (then VecSetFromOptions(): -vec_type overrides the matrix's
   vector type).  Options (with the given prefix):
     -problem <poisson2d|fem2d|laplace3d|elasticity3d|convdiff3d|randdd|skew|indefinite|file|aniso3d|jump3d|dirichlet3d>
       poisson2d     5-point Laplacian (diagonal 4), n x n grid, SPD
       fem2d         linear FEM on triangles of an (n+1)^2-cell sheared mesh, Dirichlet nodes eliminated, n^2 rows, 7 nnz/row, SPD
       laplace3d     7-point Laplacian (diagonal 6), n^3 grid, SPD
       elasticity3d  linear elasticity (E = 1, nu = 0.3), linear tets (6 per cube) of n^3 cubes, face x = 0 clamped,
                     3 n (n+1)^2 rows, up to 45 nnz/row, SPD
       convdiff3d    7-point diffusion + first-order upwind convection, velocity (1, 0.5, 0.25) pe, nonsymmetric
       randdd        random sparse diagonally dominant (n rows, ~7 nnz/row, positive diagonal), SPD unless -nonsym
       skew          centered-difference convection (1, 0.5) . grad on an n x n grid: skew-symmetric (A^T = -A)
       indefinite    5-point Laplacian minus shift * I (shift 4.5): symmetric indefinite
       aniso3d       7-point anisotropic diffusion, coefficients (1, eps, eps^2), n^3 grid, SPD
       jump3d        7-point diffusion whose coefficient jumps between 1 and contrast on a 4x4x4 checkerboard of blocks, SPD
       dirichlet3d   7-point Laplacian with the boundary points kept as rows 6 e_r (DMDA tutorials' style): not symmetric
       file          -f <file>: MatrixMarket coordinate (name ends in .mtx; read on rank 0) or PETSc binary (MatLoad)
     -n <points per direction>     (elasticity3d: cubes per direction; randdd: number of rows); default per problem
     -rhs <ones|random|solution>   b = ones, random (seeded), or b = A * x_exact with x_exact random
     -seed <0>                     seed of randdd and of the random vectors (hashed per global index: the same on any number of ranks)
     -pe <10> -shear <0.5> -shift <4.5> -margin <0.1> -nonsym    parameters of convdiff3d, fem2d, indefinite, randdd
     -eps <1e-2> -contrast <1e4>                                  parameters of aniso3d, jump3d
     -uneven                       rank 0 gets half as many rows again as the other ranks (default: PETSc's even split)
     -mat_block_size <bs>          the matrix's block size (e.g. 3 for elasticity3d's dofs per node, for PCPBJACOBI); ranks
                                   get whole blocks; elasticity3d with 3 also gets its rigid body modes as near-null space
     -scale <1>                    A := scale * A (b as given), e.g. -1: a negative definite system from an SPD problem
*/
#pragma once
#include <petscksp.h>

typedef struct {
  Mat       A;
  Vec       b;      /* right-hand side */
  Vec       xexact; /* exact solution when known (rhs "solution"), else NULL */
  char      name[64];
  PetscBool symmetric; /* SPD problems: poisson2d, fem2d, laplace3d, elasticity3d, aniso3d, jump3d, randdd (symmetric variant); file: symmetric */
} Problem;

PETSC_EXTERN PetscErrorCode ProblemCreate(MPI_Comm, const char prefix[], Problem *);
PETSC_EXTERN PetscErrorCode ProblemDestroy(Problem *);
