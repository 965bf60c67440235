/* Host backend: the diagonal of a matrix through the positions of its diagonal entries */
#include "backend/host/host_reduce.hpp"

namespace fusedksp
{
namespace host
{

/* See Backend::diag_get */
PetscErrorCode DiagGet(PetscInt n, const PetscInt64 *pos, const PetscScalar *vals, PetscScalar *d)
{
  PetscFunctionBegin;
  PetscCheck(n >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Negative length %" PetscInt_FMT, n);
  for (PetscInt i = 0; i < n; ++i) d[i] = pos[i] >= 0 ? vals[pos[i]] : 0;
  if (n) counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::diag_shift */
PetscErrorCode DiagShift(PetscInt n, const PetscInt64 *pos, PetscScalar a, PetscScalar *vals)
{
  PetscFunctionBegin;
  PetscCheck(n >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Negative length %" PetscInt_FMT, n);
  for (PetscInt i = 0; i < n; ++i) vals[pos[i]] += a;
  if (n) counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace host
} // namespace fusedksp
