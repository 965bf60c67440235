/* The level schedule of a sparse triangular pattern (shared by the backends and src/mat) */
#include "backend/backend.hpp"
#include <vector>

namespace fusedksp
{

/*
   TriangularLevels - See backend.hpp.  One pass in solve order computes each row's level from those
   of its dependencies (already known), then a counting sort by level keeps rows ascending inside a level.
*/
PetscErrorCode TriangularLevels(PetscInt n, PetscBool upper, const PetscInt *rowptr, const PetscInt *colidx, PetscInt *nlevels, PetscInt *levelptr, PetscInt *rows)
{
  std::vector<PetscInt> level, next;
  PetscInt              nl = 0;

  PetscFunctionBegin;
  PetscCheck(n >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Negative size %" PetscInt_FMT, n);
  FusedKSPCallCXX(level.resize(n));
  for (PetscInt t = 0; t < n; ++t) {
    const PetscInt i = upper ? n - 1 - t : t;
    PetscInt       l = 0;

    for (PetscInt k = rowptr[i]; k < rowptr[i + 1]; ++k) {
      const PetscInt j = colidx[k];

      PetscCheck(upper ? (j > i && j < n) : (j >= 0 && j < i), PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Entry (%" PetscInt_FMT ", %" PetscInt_FMT ") is not in the strictly %s triangle of a %" PetscInt_FMT " x %" PetscInt_FMT " factor", i, j,
                 upper ? "upper" : "lower", n, n);
      l = PetscMax(l, level[j] + 1);
    }
    level[i] = l;
    nl       = PetscMax(nl, l + 1);
  }
  for (PetscInt l = 0; l <= nl; ++l) levelptr[l] = 0;
  for (PetscInt i = 0; i < n; ++i) levelptr[level[i] + 1]++;
  for (PetscInt l = 0; l < nl; ++l) levelptr[l + 1] += levelptr[l];
  FusedKSPCallCXX(next.assign(levelptr, levelptr + nl));
  for (PetscInt i = 0; i < n; ++i) rows[next[level[i]]++] = i;
  *nlevels = nl;
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace fusedksp
