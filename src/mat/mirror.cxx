/* The backend copy of the local rows of a sparse matrix (see mirror.hpp) */
#include "mat/mirror.hpp"
#include "mat/aijfused_private.hpp"
#include <petsc/private/matimpl.h>
#include <utility>
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
   MirrorChooseFormat - see mirror.hpp
*/
MatAIJFusedFormat MirrorChooseFormat(const Backend *be, MatAIJFusedFormat requested, PetscInt nrows, const PetscInt *ai)
{
  return ChooseFormat(be, requested, nrows, ai, SELLThreadsPerRow(nrows, nrows ? ai[nrows] : 0));
}

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
  *m = Mirror();
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Allocates in the backend's memory the row offsets `ai` (host) of a mirror, copied from dai (the same offsets in the
   backend's memory) when given, else uploaded                                                                      */
static PetscErrorCode RowOffsets(const Backend *be, PetscInt nrows, const PetscInt *ai, const PetscInt *dai, PetscInt **rowptr)
{
  PetscFunctionBegin;
  if (dai) {
    PetscCall(be->malloc_bytes(sizeof(PetscInt) * (nrows + 1), (void **)rowptr));
    PetscCall(be->copy_within(*rowptr, dai, sizeof(PetscInt) * (nrows + 1)));
  } else
    PetscCall(Upload(be, ai, sizeof(PetscInt) * (nrows + 1), (void **)rowptr));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The structure of a mirror of the nrows x ncols pattern with the host row offsets ai (MirrorBuild()), also in the
   backend's memory when dai is given; its column indices from the host array haj (uploaded; with `alias` used in
   place), or from the backend array daj (a SELL-P mirror places them, a CSR mirror copies them), or from the backend
   array *take (a CSR mirror takes it over, *take set to NULL).  No diagonal positions (MirrorDiagonal()).          */
static PetscErrorCode BuildStructure(const Backend *be, MatAIJFusedFormat requested, PetscInt nrows, PetscInt ncols, const PetscInt *ai, const PetscInt *dai, const PetscInt *haj, const PetscInt *daj, PetscInt **take, PetscBool alias, Mirror *m)
{
  const PetscInt          nnz     = ai[nrows];
  const int               threads = SELLThreadsPerRow(nrows, nnz);
  const PetscInt         *dcol    = take ? *take : daj; /* the column indices in the backend's memory, if there */
  std::vector<PetscInt64> sliceptr;

  PetscFunctionBegin;
  PetscCheck((!nnz || haj || dcol) && (!alias || (!dcol && !dai)), PETSC_COMM_SELF, PETSC_ERR_PLIB, "Inconsistent sources of a mirror's column indices");
  PetscCall(PetscLogEventBegin(events.mirror, 0, 0, 0, 0));
  PetscCall(MirrorFree(be, m));
  m->format     = ChooseFormat(be, requested, nrows, ai, threads);
  m->generation = ++generations;
  m->nnz        = nnz;
  if (m->format == MAT_AIJFUSED_SELL) { /* the CSR arrays go up as they are, the backend places them in the slices */
    PetscInt      *csrcol = nullptr;
    PetscErrorCode ierr;

    PetscCall(SELLSlicePointers(nrows, ai, threads, &sliceptr));
    m->nvals = sliceptr.back();
    PetscCall(Upload(be, sliceptr.data(), sizeof(PetscInt64) * sliceptr.size(), (void **)&m->sliceptr));
    PetscCall(RowOffsets(be, nrows, ai, dai, &m->rowptr));
    PetscCall(be->malloc_bytes(sizeof(PetscInt) * PetscMax(m->nvals, 1), (void **)&m->colidx));
    PetscCall(be->malloc_bytes(sizeof(PetscScalar) * PetscMax(m->nvals, 1), (void **)&m->vals));
    m->sell.nrows    = nrows;
    m->sell.ncols    = ncols;
    m->sell.threads  = threads;
    m->sell.sliceptr = m->sliceptr;
    m->sell.colidx   = m->colidx;
    if (!dcol && !alias) PetscCall(Upload(be, haj, sizeof(PetscInt) * nnz, (void **)&csrcol));
    ierr = be->sell_from_csr(&m->sell, m->rowptr, dcol ? dcol : alias ? haj : csrcol, nullptr, m->colidx, nullptr);
    PetscCall(FreeBackend(be, csrcol));
    PetscCall(ierr);
  } else {
    m->nvals = nnz;
    if (!alias) {
      PetscCall(RowOffsets(be, nrows, ai, dai, &m->rowptr));
      if (take)
        std::swap(m->colidx, *take);
      else if (daj) {
        PetscCall(be->malloc_bytes(sizeof(PetscInt) * PetscMax(nnz, 1), (void **)&m->colidx));
        PetscCall(be->copy_within(m->colidx, daj, sizeof(PetscInt) * nnz));
      } else
        PetscCall(Upload(be, haj, sizeof(PetscInt) * nnz, (void **)&m->colidx));
      PetscCall(be->malloc_bytes(sizeof(PetscScalar) * PetscMax(nnz, 1), (void **)&m->vals));
    }
    m->csr.nrows  = nrows;
    m->csr.ncols  = ncols;
    m->csr.nnz    = nnz;
    m->csr.rowptr = alias ? ai : m->rowptr;
    m->csr.colidx = alias ? haj : m->colidx;
  }
  PetscCall(PetscLogEventEnd(events.mirror, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   MirrorBuild - see mirror.hpp
*/
PetscErrorCode MirrorBuild(const Backend *be, MatAIJFusedFormat requested, PetscInt nrows, PetscInt ncols, const PetscInt *ai, const PetscInt *aj, PetscBool alias, Mirror *m)
{
  return BuildStructure(be, requested, nrows, ncols, ai, nullptr, aj, nullptr, nullptr, alias, m);
}

/*
   MirrorBuildOnBackend - see mirror.hpp
*/
PetscErrorCode MirrorBuildOnBackend(const Backend *be, MatAIJFusedFormat requested, PetscInt nrows, PetscInt ncols, const PetscInt *ai, const PetscInt *dai, const PetscInt *daj, Mirror *m)
{
  return BuildStructure(be, requested, nrows, ncols, ai, dai, nullptr, daj, nullptr, PETSC_FALSE, m);
}

/*
   MirrorBuildRowOffsets - see mirror.hpp
*/
PetscErrorCode MirrorBuildRowOffsets(const Backend *be, PetscInt nrows, PetscInt ncols, const PetscInt *ai, Mirror *m)
{
  PetscFunctionBegin;
  PetscCall(PetscLogEventBegin(events.mirror, 0, 0, 0, 0));
  PetscCall(MirrorFree(be, m));
  m->format     = MAT_AIJFUSED_CSR;
  m->generation = ++generations;
  m->nnz        = ai[nrows];
  m->nvals      = ai[nrows];
  PetscCall(RowOffsets(be, nrows, ai, nullptr, &m->rowptr));
  m->csr.nrows  = nrows;
  m->csr.ncols  = ncols;
  m->csr.nnz    = ai[nrows];
  m->csr.rowptr = m->rowptr;
  PetscCall(PetscLogEventEnd(events.mirror, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   MirrorDiagonal - see mirror.hpp
*/
PetscErrorCode MirrorDiagonal(const Backend *be, const PetscInt *ai, const PetscInt *aj, Mirror *m)
{
  const PetscInt          nrows   = m->format == MAT_AIJFUSED_SELL ? m->sell.nrows : m->csr.nrows;
  const PetscInt          ncols   = m->format == MAT_AIJFUSED_SELL ? m->sell.ncols : m->csr.ncols;
  const int               threads = m->sell.threads;
  std::vector<PetscInt64> diag, sliceptr;

  PetscFunctionBegin;
  if (m->diagonal || m->generation < 0) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(PetscLogEventBegin(events.mirror, 0, 0, 0, 0));
  if (m->format == MAT_AIJFUSED_SELL) PetscCall(SELLSlicePointers(nrows, ai, threads, &sliceptr));
  FusedKSPCallCXX(diag.assign(nrows, -1));
  m->alldiag = PETSC_TRUE;
  for (PetscInt i = 0; i < nrows; ++i) {
    for (PetscInt k = ai[i]; k < ai[i + 1]; ++k)
      if (aj[k] == i) diag[i] = m->format == MAT_AIJFUSED_SELL ? SELLPosition(sliceptr.data(), threads, i, k - ai[i]) : k;
    if (i < ncols && diag[i] < 0) m->alldiag = PETSC_FALSE;
  }
  PetscCall(Upload(be, diag.data(), sizeof(PetscInt64) * nrows, (void **)&m->diagpos));
  m->diagonal = PETSC_TRUE;
  PetscCall(PetscLogEventEnd(events.mirror, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   MirrorCSRFrom - see mirror.hpp
*/
PetscErrorCode MirrorCSRFrom(const Backend *be, const PetscInt *ai, const Mirror *src, PetscBool structure, Mirror *m)
{
  const bool sell = src->format == MAT_AIJFUSED_SELL;

  PetscFunctionBegin;
  PetscCheck(src->rowptr && src->vals && be->csr_from_sell, PETSC_COMM_SELF, PETSC_ERR_PLIB, "A CSR copy is made on the backend from a mirror with arrays of its own");
  PetscCall(PetscLogEventBegin(events.mirror, 0, 0, 0, 0));
  if (structure) {
    const PetscInt nrows = sell ? src->sell.nrows : src->csr.nrows;

    PetscCall(MirrorFree(be, m));
    m->format     = MAT_AIJFUSED_CSR;
    m->generation = ++generations;
    m->nnz = m->nvals = src->nnz;
    PetscCall(RowOffsets(be, nrows, ai, src->rowptr, &m->rowptr));
    PetscCall(be->malloc_bytes(sizeof(PetscInt) * PetscMax(m->nnz, 1), (void **)&m->colidx));
    PetscCall(be->malloc_bytes(sizeof(PetscScalar) * PetscMax(m->nnz, 1), (void **)&m->vals));
    if (sell)
      PetscCall(be->csr_from_sell(&src->sell, src->rowptr, m->colidx, nullptr));
    else
      PetscCall(be->copy_within(m->colidx, src->colidx, sizeof(PetscInt) * m->nnz));
    m->csr.nrows  = nrows;
    m->csr.ncols  = sell ? src->sell.ncols : src->csr.ncols;
    m->csr.nnz    = m->nnz;
    m->csr.rowptr = m->rowptr;
    m->csr.colidx = m->colidx;
  }
  if (sell)
    PetscCall(be->csr_from_sell(&src->sell, src->rowptr, nullptr, m->vals));
  else
    PetscCall(be->copy_within(m->vals, src->vals, sizeof(PetscScalar) * m->nvals));
  m->csr.vals = m->vals;
  PetscCall(PetscLogEventEnd(events.mirror, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   MirrorBuildOperand - see mirror.hpp
*/
PetscErrorCode MirrorBuildOperand(const Backend *be, PetscInt nrows, PetscInt ncols, const PetscInt *ai, const PetscInt *aj, Mirror *m)
{
  return BuildStructure(be, MAT_AIJFUSED_CSR, nrows, ncols, ai, nullptr, aj, nullptr, nullptr, PETSC_FALSE, m);
}

/*
   MirrorSetBackendValues - see mirror.hpp
*/
PetscErrorCode MirrorSetBackendValues(const Backend *be, const PetscScalar *vals, Mirror *m)
{
  PetscFunctionBegin;
  if (m->format == MAT_AIJFUSED_SELL) {
    PetscCall(be->sell_from_csr(&m->sell, m->rowptr, nullptr, vals, nullptr, m->vals));
    m->sell.vals = m->vals;
  } else {
    PetscCall(be->copy_within(m->vals, vals, sizeof(PetscScalar) * m->nvals));
    m->csr.vals = m->vals;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The mirror of A^T, A in CSR in the backend's memory, by the backend's csr_transpose: of A^T's structure only the row
   offsets come to the host (for the layout), its column indices staying in the backend's memory                    */
static PetscErrorCode TransposeOnBackend(const Backend *be, MatAIJFusedFormat requested, const CSRView *A, PetscBool structure, Mirror *m)
{
  std::vector<PetscInt> tai;
  PetscInt             *dtai = nullptr, *dtaj = nullptr;
  PetscScalar          *tvals = nullptr;
  PetscErrorCode        ierr;

  PetscFunctionBegin;
  PetscCheck(be->csr_transpose, PETSC_COMM_SELF, PETSC_ERR_PLIB, "The %s backend has no transpose", be->name);
  FusedKSPCallCXX(tai.resize(A->ncols + 1));
  ierr = be->malloc_bytes(sizeof(PetscInt) * (A->ncols + 1), (void **)&dtai);
  if (!ierr) ierr = be->malloc_bytes(sizeof(PetscInt) * PetscMax(A->nnz, 1), (void **)&dtaj);
  if (!ierr) ierr = be->malloc_bytes(sizeof(PetscScalar) * PetscMax(A->nnz, 1), (void **)&tvals);
  if (!ierr) ierr = be->csr_transpose(A, dtai, dtaj, tvals);
  if (!ierr && structure) ierr = be->copy_to_host(tai.data(), dtai, sizeof(PetscInt) * (A->ncols + 1));
  if (!ierr && structure) ierr = PetscLogGpuToCpu((PetscLogDouble)(sizeof(PetscInt) * (A->ncols + 1)));
  if (!ierr && structure) ierr = BuildStructure(be, requested, A->ncols, A->nrows, tai.data(), dtai, nullptr, nullptr, &dtaj, PETSC_FALSE, m);
  if (!ierr) ierr = MirrorSetBackendValues(be, tvals, m);
  for (void *ptr : {(void *)dtai, (void *)dtaj, (void *)tvals}) PetscCall(FreeBackend(be, ptr));
  PetscCall(ierr);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   MirrorTransposeRefresh - see mirror.hpp; A^T by the backend's csr_transpose on uploaded copies of A's arrays
   (TransposeOnBackend()), or by the host backend's on host arrays when the backend has none
*/
PetscErrorCode MirrorTransposeRefresh(const Backend *be, MatAIJFusedFormat requested, PetscInt nrows, PetscInt ncols, const PetscInt *ai, const PetscInt *aj, const PetscScalar *aa, PetscBool structure, Mirror *m)
{
  const PetscInt nnz = ai[nrows];
  CSRView        A;
  PetscErrorCode ierr;

  PetscFunctionBegin;
  PetscCall(PetscLogEventBegin(events.mirror, 0, 0, 0, 0));
  A.nrows = nrows;
  A.ncols = ncols;
  A.nnz   = nnz;
  if (be->csr_transpose) {
    PetscInt    *dai = nullptr, *daj = nullptr;
    PetscScalar *daa = nullptr;

    ierr = Upload(be, ai, sizeof(PetscInt) * (nrows + 1), (void **)&dai);
    if (!ierr) ierr = Upload(be, aj, sizeof(PetscInt) * nnz, (void **)&daj);
    if (!ierr) ierr = Upload(be, aa, sizeof(PetscScalar) * nnz, (void **)&daa);
    if (!ierr) {
      A.rowptr = dai;
      A.colidx = daj;
      A.vals   = daa;
      ierr     = TransposeOnBackend(be, requested, &A, structure, m);
    }
    for (void *ptr : {(void *)dai, (void *)daj, (void *)daa}) PetscCall(FreeBackend(be, ptr));
  } else {
    std::vector<PetscInt>    tai, taj;
    std::vector<PetscScalar> hvals;
    PetscScalar             *tvals = nullptr;

    FusedKSPCallCXX(tai.resize(ncols + 1); hvals.resize(nnz); taj.resize(nnz));
    A.rowptr = ai;
    A.colidx = aj;
    A.vals   = aa;
    ierr     = HostBackend()->csr_transpose(&A, tai.data(), taj.data(), hvals.data());
    if (!ierr) ierr = Upload(be, hvals.data(), sizeof(PetscScalar) * nnz, (void **)&tvals);
    if (!ierr && structure) ierr = MirrorBuild(be, requested, ncols, nrows, tai.data(), taj.data(), PETSC_FALSE, m);
    if (!ierr) ierr = MirrorSetBackendValues(be, tvals, m);
    PetscCall(FreeBackend(be, tvals));
  }
  PetscCall(ierr);
  PetscCall(PetscLogEventEnd(events.mirror, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   MirrorTransposeFromBackend - see mirror.hpp
*/
PetscErrorCode MirrorTransposeFromBackend(const Backend *be, MatAIJFusedFormat requested, const CSRView *A, PetscBool structure, Mirror *m)
{
  PetscFunctionBegin;
  PetscCall(PetscLogEventBegin(events.mirror, 0, 0, 0, 0));
  PetscCall(TransposeOnBackend(be, requested, A, structure, m));
  PetscCall(PetscLogEventEnd(events.mirror, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   MirrorSetValues - see mirror.hpp
*/
PetscErrorCode MirrorSetValues(const Backend *be, const PetscScalar *aa, PetscBool alias, Mirror *m)
{
  PetscFunctionBegin;
  PetscCall(PetscLogEventBegin(events.mirror, 0, 0, 0, 0));
  if (m->format == MAT_AIJFUSED_SELL) { /* the CSR values go up as they are, the backend places them in the slices */
    PetscScalar   *csrvals = nullptr;
    PetscErrorCode ierr;

    PetscCall(Upload(be, aa, sizeof(PetscScalar) * m->nnz, (void **)&csrvals));
    ierr = MirrorSetBackendValues(be, csrvals, m);
    PetscCall(FreeBackend(be, csrvals));
    PetscCall(ierr);
  } else if (!alias) {
    PetscCall(be->copy_to_backend(m->vals, aa, sizeof(PetscScalar) * m->nvals));
    PetscCall(PetscLogCpuToGpu((PetscLogDouble)(sizeof(PetscScalar) * m->nvals)));
    m->csr.vals = m->vals;
  } else
    m->csr.vals = aa;
  PetscCall(PetscLogEventEnd(events.mirror, 0, 0, 0, 0));
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
  return m->nnz;
}

const PetscScalar *MirrorValues(const Mirror *m)
{
  return m->format == MAT_AIJFUSED_SELL ? m->sell.vals : m->csr.vals;
}

/* Logs the flops of a product of m with `extra` flops per row (on the GPU for a device backend) */
static PetscErrorCode LogProductFlops(const Backend *be, const Mirror *m, PetscLogDouble extra)
{
  const PetscInt64 nnz = MirrorEntries(m);
  const PetscInt   n   = m->format == MAT_AIJFUSED_SELL ? m->sell.nrows : m->csr.nrows;

  PetscFunctionBegin;
  if (!be->host_memory)
    PetscCall(PetscLogGpuFlops(2.0 * (PetscLogDouble)nnz + extra * n));
  else
    PetscCall(PetscLogFlops(2.0 * (PetscLogDouble)nnz + extra * n));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   MirrorProduct - see mirror.hpp; logs the flops (on the GPU for a device backend)
*/
PetscErrorCode MirrorProduct(const Backend *be, const Mirror *m, const PetscScalar *wl, const PetscScalar *wr, const PetscScalar *in, PetscScalar *out, int ndots, const DotSpec *specs, PetscScalar *dots)
{
  PetscFunctionBegin;
  if (m->format == MAT_AIJFUSED_SELL)
    PetscCall(be->spmv_sell_dots(&m->sell, wl, wr, in, out, ndots, specs, dots));
  else
    PetscCall(be->spmv_dots(&m->csr, wl, wr, in, out, ndots, specs, dots));
  PetscCall(LogProductFlops(be, m, 2.0 * ndots));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   MirrorProductUpdate - see mirror.hpp; logs the flops of the product and of the update's terms
*/
PetscErrorCode MirrorProductUpdate(const Backend *be, const Mirror *m, const RowUpdate *f, const PetscScalar *in, PetscScalar *out)
{
  const bool sell = m->format == MAT_AIJFUSED_SELL;

  PetscFunctionBegin;
  PetscCall(be->spmv_update(sell ? nullptr : &m->csr, sell ? &m->sell : nullptr, f, in, out));
  PetscCall(LogProductFlops(be, m, (f->add ? 1.0 : 0.0) + (f->wl ? 1.0 : 0.0) + (f->u ? 2.0 : 0.0) + (f->v ? 2.0 : 0.0)));
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace fusedksp
