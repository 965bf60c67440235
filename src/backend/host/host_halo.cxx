/* Host backend: the halo exchange operations of parallel matrices (pack, unpack, off-diagonal product) */
#include "backend/host/host_reduce.hpp"
#include <cstring>

namespace fusedksp
{
namespace host
{

/* See Backend::gather */
PetscErrorCode Gather(PetscInt n, const PetscInt *idx, const PetscScalar *w, const PetscScalar *x, PetscScalar *buf)
{
  PetscFunctionBegin;
  for (PetscInt k = 0; k < n; ++k) buf[k] = w ? w[idx[k]] * x[idx[k]] : x[idx[k]];
  counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::scatter */
PetscErrorCode Scatter(PetscInt n, const PetscInt *idx, const PetscScalar *buf, PetscBool add, PetscScalar *y)
{
  PetscFunctionBegin;
  for (PetscInt k = 0; k < n; ++k) y[idx[k]] = add ? y[idx[k]] + buf[k] : buf[k];
  counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::spmv_offdiag_dots */
PetscErrorCode SpMVOffDiagDots(const CSRView *B, const PetscInt *rows, const PetscScalar *wl, const PetscScalar *halo, const PetscScalar *in, PetscScalar *out, int ndots, const DotSpec *specs, PetscScalar *dots)
{
  PetscFunctionBegin;
  PetscCheck(ndots >= 0 && ndots <= FUSED_MAX_DOTS, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "At most %d fused dot products, asked for %d", FUSED_MAX_DOTS, ndots);
  if (TargetStopped()) PetscFunctionReturn(PETSC_SUCCESS);
  if (target.slot) { /* the changes are added to the target */
    dots   = target.slot;
    target = {};
  }
  PetscScalar change[FUSED_MAX_DOTS];
  BlockedReduce<FUSED_MAX_DOTS>(B->nrows, change, [=](PetscInt k, PetscScalar *part) {
    const PetscInt    i   = rows[k];
    const PetscScalar old = out[i];
    PetscScalar       sum = 0;
    for (PetscInt e = B->rowptr[k]; e < B->rowptr[k + 1]; ++e) sum += B->vals[e] * halo[B->colidx[e]];
    out[i] = old + (wl ? wl[i] * sum : sum);
    for (int d = 0; d < ndots; ++d) part[d] += DotTerm(specs[d], i, in, out[i]) - DotTerm(specs[d], i, in, old);
  });
  for (int d = 0; d < ndots; ++d) dots[d] += change[d];
  counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode CopyToHostAsync(void *hostdst, const void *src, size_t bytes)
{
  PetscFunctionBegin;
  if (bytes) std::memcpy(hostdst, src, bytes);
  counters.d2h++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode CopyToBackendAsync(void *dst, const void *hostsrc, size_t bytes)
{
  PetscFunctionBegin;
  if (bytes) std::memcpy(dst, hostsrc, bytes);
  counters.h2d++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode FenceRecord(void)
{
  return PETSC_SUCCESS;
}

PetscErrorCode FenceWait(void)
{
  return PETSC_SUCCESS;
}

} // namespace host
} // namespace fusedksp
