/*
   The body of Backend::blockdiag_mult, written once for every backend (host loop, Kokkos parallel_for, CUDA
   kernel) and instantiated for the two layouts of a BlockDiagView by a policy: UniformBlocks (constant size bs,
   offsets computed) and VariableBlocks (offsets read from the view's arrays).
*/
#pragma once

#include "backend/backend.hpp"

namespace fusedksp
{

/* Blocks of one size: block k starts at row k bs, its values at k bs^2 */
struct UniformBlocks {
  PetscInt bs;

  FUSED_HD PetscInt Start(PetscInt k) const
  {
    return k * bs;
  }
  FUSED_HD PetscInt Size(PetscInt) const
  {
    return bs;
  }
  FUSED_HD PetscInt64 Offset(PetscInt k) const
  {
    return (PetscInt64)k * bs * bs;
  }
};

/* Blocks of their own sizes: offsets of rows and values from the view's arrays */
struct VariableBlocks {
  const PetscInt   *rowptr;
  const PetscInt64 *valptr;

  FUSED_HD PetscInt Start(PetscInt k) const
  {
    return rowptr[k];
  }
  FUSED_HD PetscInt Size(PetscInt k) const
  {
    return rowptr[k + 1] - rowptr[k];
  }
  FUSED_HD PetscInt64 Offset(PetscInt k) const
  {
    return valptr[k];
  }
};

/* Block k of y = D x (transpose: D^T x), the block column-major: row i of the block is sum_j D(i,j) x_j with
   D(i,j) at i + j bs, or D(j,i) at j + i bs for the transpose; each row summed in the order of j (PETSc's
   PCApply_PBJacobi order)                                                                                  */
template <class Blocks> FUSED_HD inline void BlockDiagMultBlock(const Blocks &blocks, PetscInt k, bool transpose, const PetscScalar *__restrict__ vals, const PetscScalar *__restrict__ x, PetscScalar *__restrict__ y)
{
  const PetscInt     start = blocks.Start(k), bs = blocks.Size(k);
  const PetscScalar *D  = vals + blocks.Offset(k);
  const PetscInt     di = transpose ? bs : 1, dj = transpose ? 1 : bs; /* strides of the rows and columns of the applied block */

  for (PetscInt i = 0; i < bs; ++i) {
    PetscScalar s = 0;

    for (PetscInt j = 0; j < bs; ++j) s += D[i * di + j * dj] * x[start + j];
    y[start + i] = s;
  }
}

/* The checks every backend makes before it runs: a count, and exactly one of a block size and the offsets */
inline PetscErrorCode BlockDiagViewCheck(const BlockDiagView *D)
{
  PetscFunctionBegin;
  PetscCheck(D->nblocks >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Negative number of diagonal blocks %" PetscInt_FMT, D->nblocks);
  PetscCheck(D->bs >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Negative block size %" PetscInt_FMT, D->bs);
  PetscCheck(!D->nblocks || D->vals, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "Diagonal blocks without values");
  PetscCheck(!D->nblocks || (D->bs > 0) != (D->rowptr && D->valptr), PETSC_COMM_SELF, PETSC_ERR_ARG_WRONG, "Diagonal blocks need either a block size (%" PetscInt_FMT ") or the offsets of variable sizes, not both", D->bs);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Calls body(policy) with the policy of D's layout */
template <class Body> inline auto WithBlockPolicy(const BlockDiagView *D, const Body &body)
{
  return D->rowptr ? body(VariableBlocks{D->rowptr, D->valptr}) : body(UniformBlocks{D->bs});
}

} // namespace fusedksp
