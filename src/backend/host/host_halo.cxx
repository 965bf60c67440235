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
PetscErrorCode Scatter(PetscInt n, const PetscInt *idx, const PetscScalar *buf, PetscScalar *y)
{
  PetscFunctionBegin;
  for (PetscInt k = 0; k < n; ++k) y[idx[k]] = buf[k];
  counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::spmv_offdiag_dots */
PetscErrorCode SpMVOffDiagDots(const CSRView *B, const PetscScalar *wl, const PetscScalar *halo, const PetscScalar *in, PetscScalar *out, int ndots, const DotSpec *specs, PetscScalar *dots)
{
  PetscFunctionBegin;
  PetscCheck(ndots >= 0 && ndots <= FUSED_MAX_DOTS, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "At most %d fused dot products, asked for %d", FUSED_MAX_DOTS, ndots);
  PetscScalar all[FUSED_MAX_DOTS];
  BlockedReduce<FUSED_MAX_DOTS>(B->nrows, all, [=](PetscInt i, PetscScalar *part) {
    PetscScalar sum = out[i];
    for (PetscInt k = B->rowptr[i]; k < B->rowptr[i + 1]; ++k) sum += B->vals[k] * halo[B->colidx[k]];
    if (wl) sum *= wl[i];
    out[i] = sum;
    for (int d = 0; d < ndots; ++d) part[d] += DotTerm(specs[d], i, in ? in[i] : 0, sum);
  });
  for (int d = 0; d < ndots; ++d) dots[d] = all[d];
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
