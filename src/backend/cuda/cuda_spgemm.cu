/*
   CUDA backend: sparse matrix products C = A B (Backend::spgemm_*) with cuSPARSE's SpGEMM, in its form that
   keeps the analysis for later products of the same patterns (cusparseSpGEMMreuse_*): the symbolic phase
   estimates the work, counts and copies C's pattern once, and each numeric phase is one call that recomputes
   C's values in place (GAMG's re-setup with new matrix values, PCMG's Galerkin reuse).  The handle runs on the
   backend's stream, so a product is ordered with the fused kernels around it.  The transpose of a CSR matrix
   (Backend::csr_transpose) is cuSPARSE's csr2csc.
*/
#include "backend/cuda/cuda_cusparse.cuh"

namespace fusedksp
{
namespace cuda
{
namespace
{
cusparseHandle_t handle = nullptr;

PetscErrorCode HandleFinalize(void)
{
  PetscFunctionBegin;
  if (handle) FusedKSPCallCUSPARSE(cusparseDestroy(handle));
  handle = nullptr;
  PetscFunctionReturn(PETSC_SUCCESS);
}
} // namespace

/* GetCusparseHandle - see cuda_cusparse.cuh */
PetscErrorCode GetCusparseHandle(cusparseHandle_t *h)
{
  cudaStream_t stream;

  PetscFunctionBegin;
  PetscCall(GetStream(&stream));
  if (!handle) {
    FusedKSPCallCUSPARSE(cusparseCreate(&handle));
    PetscCall(PetscRegisterFinalize(HandleFinalize));
  }
  FusedKSPCallCUSPARSE(cusparseSetStream(handle, stream));
  *h = handle;
  PetscFunctionReturn(PETSC_SUCCESS);
}

namespace
{
/* What cuSPARSE keeps between the phases of one product */
struct SpGEMMPlan {
  cusparseConstSpMatDescr_t a = nullptr, b = nullptr;
  cusparseSpMatDescr_t      c          = nullptr;
  cusparseSpGEMMDescr_t     desc       = nullptr;
  void                     *buffers[5] = {}; /* cuSPARSE's work buffers 1-5; 4 and 5 live as long as the plan */
  bool                      empty      = false;
};

constexpr cusparseOperation_t OP_N = CUSPARSE_OPERATION_NON_TRANSPOSE;
constexpr cusparseSpGEMMAlg_t ALG  = CUSPARSE_SPGEMM_DEFAULT;

PetscErrorCode Allocate(size_t bytes, void **ptr)
{
  PetscFunctionBegin;
  PetscCall(CUDABackend()->malloc_bytes(bytes, ptr));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* A cuSPARSE work buffer, zeroed on the backend's stream: SpGEMMreuse_copy's scan reads parts of its buffers it has
   not written (compute-sanitizer initcheck) */
PetscErrorCode AllocateWork(size_t bytes, void **ptr)
{
  cudaStream_t stream;

  PetscFunctionBegin;
  PetscCall(Allocate(bytes, ptr));
  PetscCall(GetStream(&stream));
  FusedKSPCallCUDA(cudaMemsetAsync(*ptr, 0, bytes, stream));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode Release(void **ptr)
{
  PetscFunctionBegin;
  if (*ptr) PetscCall(CUDABackend()->free_bytes(*ptr));
  *ptr = nullptr;
  PetscFunctionReturn(PETSC_SUCCESS);
}
} // namespace

/* See Backend::spgemm_symbolic */
PetscErrorCode SpGEMMSymbolic(SpGEMMView *G)
{
  const CSRView   &A = G->A, &B = G->B;
  SpGEMMPlan      *plan = nullptr;
  cusparseHandle_t h;
  size_t           size[5] = {};
  int64_t          rows, cols, nnz;

  PetscFunctionBegin;
  PetscCheck(A.ncols == B.nrows, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "Sparse product of a %" PetscInt_FMT " x %" PetscInt_FMT " and a %" PetscInt_FMT " x %" PetscInt_FMT " matrix", A.nrows, A.ncols, B.nrows, B.ncols);
  PetscCheck(A.nnz >= 0 && B.nnz >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONG, "A sparse product needs the operands' nnz");
  FusedKSPCallCXX(plan = new SpGEMMPlan());
  G->plan = plan;
  PetscCall(Allocate(sizeof(PetscInt) * (A.nrows + 1), (void **)&G->rowptr));
  if (!A.nrows || !B.ncols || !A.nnz || !B.nnz) { /* an empty product: cuSPARSE is not asked */
    cudaStream_t stream;

    PetscCall(GetStream(&stream));
    FusedKSPCallCUDA(cudaMemsetAsync(G->rowptr, 0, sizeof(PetscInt) * (A.nrows + 1), stream));
    plan->empty = true;
    G->nnz      = 0;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(GetCusparseHandle(&h));
  FusedKSPCallCUSPARSE(cusparseCreateConstCsr(&plan->a, A.nrows, A.ncols, A.nnz, A.rowptr, A.colidx, A.vals, CUSPARSE_INDEX_PETSCINT, CUSPARSE_INDEX_PETSCINT, CUSPARSE_INDEX_BASE_ZERO, CUDA_PETSCSCALAR));
  FusedKSPCallCUSPARSE(cusparseCreateConstCsr(&plan->b, B.nrows, B.ncols, B.nnz, B.rowptr, B.colidx, B.vals, CUSPARSE_INDEX_PETSCINT, CUSPARSE_INDEX_PETSCINT, CUSPARSE_INDEX_BASE_ZERO, CUDA_PETSCSCALAR));
  FusedKSPCallCUSPARSE(cusparseCreateCsr(&plan->c, A.nrows, B.ncols, 0, G->rowptr, nullptr, nullptr, CUSPARSE_INDEX_PETSCINT, CUSPARSE_INDEX_PETSCINT, CUSPARSE_INDEX_BASE_ZERO, CUDA_PETSCSCALAR));
  FusedKSPCallCUSPARSE(cusparseSpGEMM_createDescr(&plan->desc));
  FusedKSPCallCUSPARSE(cusparseSpGEMMreuse_workEstimation(h, OP_N, OP_N, plan->a, plan->b, plan->c, ALG, plan->desc, &size[0], nullptr));
  PetscCall(AllocateWork(size[0], &plan->buffers[0]));
  FusedKSPCallCUSPARSE(cusparseSpGEMMreuse_workEstimation(h, OP_N, OP_N, plan->a, plan->b, plan->c, ALG, plan->desc, &size[0], plan->buffers[0]));
  FusedKSPCallCUSPARSE(cusparseSpGEMMreuse_nnz(h, OP_N, OP_N, plan->a, plan->b, plan->c, ALG, plan->desc, &size[1], nullptr, &size[2], nullptr, &size[3], nullptr));
  for (int i = 1; i < 4; ++i) PetscCall(AllocateWork(size[i], &plan->buffers[i]));
  FusedKSPCallCUSPARSE(cusparseSpGEMMreuse_nnz(h, OP_N, OP_N, plan->a, plan->b, plan->c, ALG, plan->desc, &size[1], plan->buffers[1], &size[2], plan->buffers[2], &size[3], plan->buffers[3]));
  PetscCall(Release(&plan->buffers[0]));
  PetscCall(Release(&plan->buffers[1]));
  FusedKSPCallCUSPARSE(cusparseSpMatGetSize(plan->c, &rows, &cols, &nnz));
  PetscCheck(nnz <= PETSC_INT_MAX, PETSC_COMM_SELF, PETSC_ERR_SUP, "The sparse product has %" PetscInt64_FMT " entries, more than %" PetscInt_FMT, (PetscInt64)nnz, PETSC_INT_MAX);
  G->nnz = nnz;
  PetscCall(Allocate(sizeof(PetscInt) * PetscMax(nnz, 1), (void **)&G->colidx));
  PetscCall(Allocate(sizeof(PetscScalar) * PetscMax(nnz, 1), (void **)&G->vals));
  FusedKSPCallCUSPARSE(cusparseCsrSetPointers(plan->c, G->rowptr, G->colidx, G->vals));
  FusedKSPCallCUSPARSE(cusparseSpGEMMreuse_copy(h, OP_N, OP_N, plan->a, plan->b, plan->c, ALG, plan->desc, &size[4], nullptr));
  PetscCall(AllocateWork(size[4], &plan->buffers[4]));
  FusedKSPCallCUSPARSE(cusparseSpGEMMreuse_copy(h, OP_N, OP_N, plan->a, plan->b, plan->c, ALG, plan->desc, &size[4], plan->buffers[4]));
  PetscCall(Release(&plan->buffers[2]));
  counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::spgemm_numeric */
PetscErrorCode SpGEMMNumeric(SpGEMMView *G)
{
  SpGEMMPlan      *plan  = static_cast<SpGEMMPlan *>(G->plan);
  const double     alpha = 1, beta = 0;
  cusparseHandle_t h;

  PetscFunctionBegin;
  PetscCheck(plan, PETSC_COMM_SELF, PETSC_ERR_ORDER, "spgemm_numeric before spgemm_symbolic");
  if (plan->empty) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(GetCusparseHandle(&h));
  FusedKSPCallCUSPARSE(cusparseSpGEMMreuse_compute(h, OP_N, OP_N, &alpha, plan->a, plan->b, &beta, plan->c, CUDA_PETSCSCALAR, ALG, plan->desc));
  counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::spgemm_free: after the work queued so far (buffers in use by it are not freed under it) */
PetscErrorCode SpGEMMFree(SpGEMMView *G)
{
  SpGEMMPlan  *plan = static_cast<SpGEMMPlan *>(G->plan);
  cudaStream_t stream;

  PetscFunctionBegin;
  PetscCall(GetStream(&stream));
  FusedKSPCallCUDA(cudaStreamSynchronize(stream));
  if (plan) {
    if (plan->a) FusedKSPCallCUSPARSE(cusparseDestroySpMat(plan->a));
    if (plan->b) FusedKSPCallCUSPARSE(cusparseDestroySpMat(plan->b));
    if (plan->c) FusedKSPCallCUSPARSE(cusparseDestroySpMat(plan->c));
    if (plan->desc) FusedKSPCallCUSPARSE(cusparseSpGEMM_destroyDescr(plan->desc));
    for (void *&buffer : plan->buffers) PetscCall(Release(&buffer));
    delete plan;
  }
  PetscCall(Release((void **)&G->rowptr));
  PetscCall(Release((void **)&G->colidx));
  PetscCall(Release((void **)&G->vals));
  G->plan = nullptr;
  G->nnz  = 0;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::csr_transpose: cuSPARSE's csr2csc of A (A's CSC arrays are the CSR arrays of A^T; 32-bit indices), with
   its work buffer allocated for the call and freed after the stream's work */
PetscErrorCode CSRTranspose(const CSRView *A, PetscInt *trowptr, PetscInt *tcolidx, PetscScalar *tvals)
{
  cusparseHandle_t h;
  cudaStream_t     stream;
  size_t           size   = 0;
  void            *buffer = nullptr;
  PetscErrorCode   ierr;

  PetscFunctionBegin;
  PetscCheck(sizeof(PetscInt) == sizeof(int), PETSC_COMM_SELF, PETSC_ERR_SUP, "cuSPARSE's csr2csc takes 32-bit indices");
  PetscCheck(A->nnz >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONG, "A transpose needs the matrix's nnz");
  PetscCall(GetStream(&stream));
  if (!A->nrows || !A->ncols || !A->nnz) { /* no entries: cuSPARSE is not asked */
    FusedKSPCallCUDA(cudaMemsetAsync(trowptr, 0, sizeof(PetscInt) * (A->ncols + 1), stream));
    counters.launches++;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(GetCusparseHandle(&h));
  FusedKSPCallCUSPARSE(cusparseCsr2cscEx2_bufferSize(h, (int)A->nrows, (int)A->ncols, (int)A->nnz, A->vals, (const int *)A->rowptr, (const int *)A->colidx, tvals, (int *)trowptr, (int *)tcolidx, CUDA_PETSCSCALAR, CUSPARSE_ACTION_NUMERIC,
                                                     CUSPARSE_INDEX_BASE_ZERO, CUSPARSE_CSR2CSC_ALG1, &size));
  PetscCall(Allocate(PetscMax(size, sizeof(PetscScalar)), &buffer));
  ierr = cusparseCsr2cscEx2(h, (int)A->nrows, (int)A->ncols, (int)A->nnz, A->vals, (const int *)A->rowptr, (const int *)A->colidx, tvals, (int *)trowptr, (int *)tcolidx, CUDA_PETSCSCALAR, CUSPARSE_ACTION_NUMERIC, CUSPARSE_INDEX_BASE_ZERO,
                            CUSPARSE_CSR2CSC_ALG1, buffer) == CUSPARSE_STATUS_SUCCESS
             ? PETSC_SUCCESS
             : PETSC_ERR_LIB;
  FusedKSPCallCUDA(cudaStreamSynchronize(stream));
  PetscCall(Release(&buffer));
  PetscCheck(ierr == PETSC_SUCCESS, PETSC_COMM_SELF, PETSC_ERR_LIB, "cuSPARSE's csr2csc of a %" PetscInt_FMT " x %" PetscInt_FMT " matrix with %" PetscInt64_FMT " entries failed", A->nrows, A->ncols, A->nnz);
  counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace cuda
} // namespace fusedksp
