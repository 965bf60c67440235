/* Kokkos backend: the inverted diagonal blocks of point-block Jacobi */
#include "backend/kokkos/kokkos_reduce.hpp"
#include "backend/blockdiag.hpp"

namespace fusedksp
{
namespace kokkos
{

/* See Backend::blockdiag_mult: one work item per block */
PetscErrorCode BlockDiagMult(const BlockDiagView *D, PetscBool transpose, const PetscScalar *x, PetscScalar *y)
{
  const PetscScalar *vals = D->vals;
  const bool         tr   = transpose ? true : false;

  PetscFunctionBegin;
  PetscCall(BlockDiagViewCheck(D));
  WithBlockPolicy(D, [&](const auto blocks) {
    ForEach(
        "fusedksp::blockdiag_mult", D->nblocks, KOKKOS_LAMBDA(const PetscInt k) { BlockDiagMultBlock(blocks, k, tr, vals, x, y); });
    return 0;
  });
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace kokkos
} // namespace fusedksp
