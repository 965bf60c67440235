/* Chunks of iterations as the backend operations of their steps (shared by the backends) */
#include "backend/backend.hpp"

namespace fusedksp
{

/*
   CGChunkSteps - Backend::cg_chunk as 2k operations of `be`: for each chunk iteration j, the CG
   update with its coefficients from slot j-1 and the sparse product q = A p, each writing its dot
   products to slot j and doing nothing once ctl->stopped >= 0
*/
PetscErrorCode CGChunkSteps(const Backend *be, const CGChunkArgs *a)
{
  const PetscInt n        = a->csr ? a->csr->nrows : a->sell->nrows;
  const DotSpec  specs[2] = {{DotKind::DOT_INPUT, nullptr}, {a->w ? DotKind::DOT_SELF_W : DotKind::DOT_SELF, a->w}};

  PetscFunctionBegin;
  for (PetscInt j = 1; j <= a->k; ++j) {
    PetscScalar *slot = a->slots + j * CG_NSLOT;

    PetscCall(be->reduce_target(slot + CG_RZ, &a->ctl->stopped));
    PetscCall(be->cg_update_chained(n, slot - CG_NSLOT, a->ctl, j, a->x, a->r, nullptr, a->p, a->q, nullptr, a->w));
    PetscCall(be->reduce_target(slot + CG_PQ, &a->ctl->stopped));
    if (a->csr)
      PetscCall(be->spmv_dots(a->csr, nullptr, nullptr, a->p, a->q, 2, specs, nullptr));
    else
      PetscCall(be->spmv_sell_dots(a->sell, nullptr, nullptr, a->p, a->q, 2, specs, nullptr));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace fusedksp
