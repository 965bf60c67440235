/* Kokkos backend: the inverted diagonal blocks of point-block Jacobi */
#include "backend/kokkos/kokkos_reduce.hpp"
#include "backend/blockdiag.hpp"

namespace fusedksp
{
namespace kokkos
{

/* One work item per block of a layout (a function of its own: nvcc allows no device lambda inside a generic lambda) */
template <class Blocks> static void BlockDiagMultBlocks(const Blocks blocks, PetscInt nblocks, bool tr, const PetscScalar *vals, const PetscScalar *x, PetscScalar *y)
{
  ForEach(
      "fusedksp::blockdiag_mult", nblocks, KOKKOS_LAMBDA(const PetscInt k) { BlockDiagMultBlock(blocks, k, tr, vals, x, y); });
}

/* See Backend::blockdiag_mult */
PetscErrorCode BlockDiagMult(const BlockDiagView *D, PetscBool transpose, const PetscScalar *x, PetscScalar *y)
{
  PetscFunctionBegin;
  PetscCall(BlockDiagViewCheck(D));
  WithBlockPolicy(D, [&](const auto blocks) {
    BlockDiagMultBlocks(blocks, D->nblocks, transpose ? true : false, D->vals, x, y);
    return 0;
  });
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace kokkos
} // namespace fusedksp
