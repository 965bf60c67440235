/* Host backend: the inverted diagonal blocks of point-block Jacobi (the reference) */
#include "backend/host/host_reduce.hpp"
#include "backend/blockdiag.hpp"

namespace fusedksp
{
namespace host
{

/* See Backend::blockdiag_mult: the blocks in order */
PetscErrorCode BlockDiagMult(const BlockDiagView *D, PetscBool transpose, const PetscScalar *x, PetscScalar *y)
{
  PetscFunctionBegin;
  PetscCall(BlockDiagViewCheck(D));
  WithBlockPolicy(D, [&](const auto blocks) {
    for (PetscInt k = 0; k < D->nblocks; ++k) BlockDiagMultBlock(blocks, k, transpose, D->vals, x, y);
    return 0;
  });
  if (D->nblocks) counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace host
} // namespace fusedksp
