/* The backend copy of the local rows of a sparse matrix (see mirror.hpp) */
#include "mat/mirror.hpp"
#include <petsc/private/matimpl.h>
#include <vector>

namespace fusedksp
{
const char *const MatAIJFusedFormats[] = {"csr", "sell", "auto", "MatAIJFusedFormat", "MAT_AIJFUSED_", nullptr};

namespace
{
PetscInt64 generations = 0; /* of all mirrors of the process: each MirrorBuild() takes the next one */

PetscErrorCode FreeBackend(const Backend *be, void *ptr)
{
  PetscFunctionBegin;
  if (ptr) PetscCall(be->free_bytes(ptr));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Allocates `bytes` in the backend's memory and copies `host` there */
PetscErrorCode Upload(const Backend *be, const void *host, size_t bytes, void **dev)
{
  PetscFunctionBegin;
  PetscCall(be->malloc_bytes(PetscMax(bytes, sizeof(PetscScalar)), dev));
  PetscCall(be->copy_to_backend(*dev, host, bytes));
  PetscCall(PetscLogCpuToGpu((PetscLogDouble)bytes));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The format of a new mirror: the requested one; AUTO: SELL-P on a device backend when its padding
   adds at most 25% to the stored entries, else CSR (always CSR on the host backend)          */
MatAIJFusedFormat ChooseFormat(const Backend *be, MatAIJFusedFormat requested, PetscInt nrows, const PetscInt *ai, int threads)
{
  if (requested != MAT_AIJFUSED_AUTO) return requested;
  if (be->host_memory || !nrows) return MAT_AIJFUSED_CSR;
  return 4 * SELLEntries(nrows, ai, threads) <= 5 * (PetscInt64)ai[nrows] ? MAT_AIJFUSED_SELL : MAT_AIJFUSED_CSR;
}

} // namespace

/*
   MirrorFree - see mirror.hpp
*/
PetscErrorCode MirrorFree(const Backend *be, Mirror *m)
{
  PetscFunctionBegin;
  PetscCall(FreeBackend(be, m->rowptr));
  PetscCall(FreeBackend(be, m->colidx));
  PetscCall(FreeBackend(be, m->sliceptr));
  PetscCall(FreeBackend(be, m->diagpos));
  PetscCall(FreeBackend(be, m->vals));
  PetscCall(FreeBackend(be, m->work));
  *m = Mirror();
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   MirrorBuild - see mirror.hpp
*/
PetscErrorCode MirrorBuild(const Backend *be, MatAIJFusedFormat requested, PetscInt nrows, PetscInt ncols, const PetscInt *ai, const PetscInt *aj, PetscBool alias, Mirror *m)
{
  const PetscInt          nnz     = ai[nrows];
  const int               threads = SELLThreadsPerRow(nrows, nnz);
  std::vector<PetscInt64> diag;

  PetscFunctionBegin;
  PetscCall(MirrorFree(be, m));
  FusedKSPCallCXX(diag.assign(nrows, -1));
  m->format     = ChooseFormat(be, requested, nrows, ai, threads);
  m->alldiag    = PETSC_TRUE;
  m->generation = ++generations;
  if (m->format == MAT_AIJFUSED_SELL) PetscCall(SELLBuild(nrows, ai, aj, threads, &m->layout));
  for (PetscInt i = 0; i < nrows; ++i) {
    for (PetscInt k = ai[i]; k < ai[i + 1]; ++k)
      if (aj[k] == i) diag[i] = m->format == MAT_AIJFUSED_SELL ? m->layout.position[k] : k;
    if (i < ncols && diag[i] < 0) m->alldiag = PETSC_FALSE;
  }
  PetscCall(Upload(be, diag.data(), sizeof(PetscInt64) * nrows, (void **)&m->diagpos));
  if (m->format == MAT_AIJFUSED_SELL) {
    m->nvals = m->layout.Entries();
    PetscCall(Upload(be, m->layout.sliceptr.data(), sizeof(PetscInt64) * m->layout.sliceptr.size(), (void **)&m->sliceptr));
    PetscCall(Upload(be, m->layout.colidx.data(), sizeof(PetscInt) * m->nvals, (void **)&m->colidx));
    PetscCall(be->malloc_bytes(sizeof(PetscScalar) * PetscMax(m->nvals, 1), (void **)&m->vals));
    m->sell.nrows    = nrows;
    m->sell.ncols    = ncols;
    m->sell.threads  = threads;
    m->sell.sliceptr = m->sliceptr;
    m->sell.colidx   = m->colidx;
  } else {
    m->nvals = nnz;
    if (!alias) {
      PetscCall(Upload(be, ai, sizeof(PetscInt) * (nrows + 1), (void **)&m->rowptr));
      PetscCall(Upload(be, aj, sizeof(PetscInt) * nnz, (void **)&m->colidx));
      PetscCall(be->malloc_bytes(sizeof(PetscScalar) * PetscMax(nnz, 1), (void **)&m->vals));
    }
    m->csr.nrows  = nrows;
    m->csr.ncols  = ncols;
    m->csr.nnz    = nnz;
    m->csr.rowptr = alias ? ai : m->rowptr;
    m->csr.colidx = alias ? aj : m->colidx;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   MirrorTransposeRefresh - see mirror.hpp; the pattern of A^T by a counting sort of A's entries by column
*/
PetscErrorCode MirrorTransposeRefresh(const Backend *be, MatAIJFusedFormat requested, PetscInt nrows, PetscInt ncols, const PetscInt *ai, const PetscInt *aj, const PetscScalar *aa, PetscBool structure, std::vector<PetscInt64> *source, Mirror *m)
{
  PetscFunctionBegin;
  if (structure) {
    const PetscInt        nnz = ai[nrows];
    std::vector<PetscInt> tai, taj, next;

    FusedKSPCallCXX(tai.assign(ncols + 1, 0); taj.resize(nnz); source->resize(nnz));
    for (PetscInt k = 0; k < nnz; ++k) tai[aj[k] + 1]++;
    for (PetscInt c = 0; c < ncols; ++c) tai[c + 1] += tai[c];
    FusedKSPCallCXX(next.assign(tai.begin(), tai.end() - 1));
    for (PetscInt i = 0; i < nrows; ++i)
      for (PetscInt k = ai[i]; k < ai[i + 1]; ++k) {
        const PetscInt t = next[aj[k]]++;
        taj[t]           = i;
        (*source)[t]     = k;
      }
    PetscCall(MirrorBuild(be, requested, ncols, nrows, tai.data(), taj.data(), PETSC_FALSE, m));
  }
  {
    std::vector<PetscScalar> tvals;

    FusedKSPCallCXX(tvals.resize(source->size()));
    for (size_t t = 0; t < tvals.size(); ++t) tvals[t] = aa[(*source)[t]];
    PetscCall(MirrorSetValues(be, tvals.data(), PETSC_FALSE, m));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   MirrorSetValues - see mirror.hpp
*/
PetscErrorCode MirrorSetValues(const Backend *be, const PetscScalar *aa, PetscBool alias, Mirror *m)
{
  PetscFunctionBegin;
  if (m->format == MAT_AIJFUSED_SELL) {
    std::vector<PetscScalar> vals;

    FusedKSPCallCXX(vals.resize(m->nvals));
    SELLFillValues(m->layout, aa, vals.data());
    PetscCall(be->copy_to_backend(m->vals, vals.data(), sizeof(PetscScalar) * m->nvals));
    m->sell.vals = m->vals;
  } else if (!alias) {
    PetscCall(be->copy_to_backend(m->vals, aa, sizeof(PetscScalar) * m->nvals));
    m->csr.vals = m->vals;
  } else
    m->csr.vals = aa;
  if (m->vals) PetscCall(PetscLogCpuToGpu((PetscLogDouble)(sizeof(PetscScalar) * m->nvals)));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   StateAfterOperation - see mirror.hpp
*/
PetscErrorCode StateAfterOperation(PetscObject obj, PetscObjectState *state)
{
  PetscFunctionBegin;
  PetscCall(PetscObjectStateGet(obj, state));
  ++*state;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   SeqAIJHostCSR - see mirror.hpp
*/
PetscErrorCode SeqAIJHostCSR(Mat S, PetscInt *m, PetscInt *n, const PetscInt **ai, const PetscInt **aj, PetscScalar **aa)
{
  PetscMemType mtype;

  PetscFunctionBegin;
  PetscCall(MatGetSize(S, m, n));
  PetscCall(MatSeqAIJGetCSRAndMemType(S, ai, aj, aa, &mtype));
  PetscCheck(mtype == PETSC_MEMTYPE_HOST, PETSC_COMM_SELF, PETSC_ERR_SUP, "Expected host CSR arrays");
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscInt64 MirrorEntries(const Mirror *m)
{
  return m->format == MAT_AIJFUSED_SELL ? (PetscInt64)m->layout.position.size() : m->csr.nnz;
}

const PetscScalar *MirrorValues(const Mirror *m)
{
  return m->format == MAT_AIJFUSED_SELL ? m->sell.vals : m->csr.vals;
}

/*
   MirrorProduct - see mirror.hpp; logs the flops (on the GPU for a device backend)
*/
PetscErrorCode MirrorProduct(const Backend *be, const Mirror *m, const PetscScalar *wl, const PetscScalar *wr, const PetscScalar *in, PetscScalar *out, int ndots, const DotSpec *specs, PetscScalar *dots)
{
  const PetscInt64 nnz = MirrorEntries(m);
  const PetscInt   n   = m->format == MAT_AIJFUSED_SELL ? m->sell.nrows : m->csr.nrows;

  PetscFunctionBegin;
  if (m->format == MAT_AIJFUSED_SELL)
    PetscCall(be->spmv_sell_dots(&m->sell, wl, wr, in, out, ndots, specs, dots));
  else
    PetscCall(be->spmv_dots(&m->csr, wl, wr, in, out, ndots, specs, dots));
  if (!be->host_memory)
    PetscCall(PetscLogGpuFlops(2.0 * (PetscLogDouble)nnz + 2.0 * ndots * n));
  else
    PetscCall(PetscLogFlops(2.0 * (PetscLogDouble)nnz + 2.0 * ndots * n));
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace fusedksp
