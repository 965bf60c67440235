/*
   CUDA backend: what the users of cuSPARSE share (cuda_spgemm.cu, cuda_trsv.cu): one handle for the backend, the
   check of a call, and cuSPARSE's names of PetscInt and PetscScalar.
*/
#pragma once

#include "backend/cuda/cuda_common.cuh"
#include <cusparse.h>
#include <type_traits>

/* Turns a cusparseStatus_t into a PETSc error (PETSC_ERR_MEM for a failed allocation) */
#define FusedKSPCallCUSPARSE(...)                                                                                                                                                                                                                        \
  do {                                                                                                                                                                                                                                                   \
    const cusparseStatus_t fusedksp_cusparse_err_ = (__VA_ARGS__);                                                                                                                                                                                       \
    PetscCheck(fusedksp_cusparse_err_ == CUSPARSE_STATUS_SUCCESS, PETSC_COMM_SELF, fusedksp_cusparse_err_ == CUSPARSE_STATUS_ALLOC_FAILED ? PETSC_ERR_MEM : PETSC_ERR_LIB, "cuSPARSE error %d (%s): %s", (int)fusedksp_cusparse_err_,                    \
               cusparseGetErrorName(fusedksp_cusparse_err_), cusparseGetErrorString(fusedksp_cusparse_err_));                                                                                                                                            \
  } while (0)

namespace fusedksp
{
namespace cuda
{

/* The index type of PetscInt arrays and the value type of PetscScalar arrays (the PETSc builds FusedKSP supports:
   sys/requirements.hpp) */
constexpr cusparseIndexType_t CUSPARSE_INDEX_PETSCINT = sizeof(PetscInt) == sizeof(int64_t) ? CUSPARSE_INDEX_64I : CUSPARSE_INDEX_32I;
static_assert(sizeof(PetscInt) == sizeof(int32_t) || sizeof(PetscInt) == sizeof(int64_t), "PetscInt is a 32- or 64-bit integer");
constexpr cudaDataType CUDA_PETSCSCALAR = CUDA_R_64F;
static_assert(std::is_same<PetscScalar, double>::value, "cuSPARSE is called with double-precision real values");

/* The backend's cuSPARSE handle (created at first use, destroyed at PetscFinalize()), set to the stream GetStream()
   returns now (the backend's, or a side scope's second one): call it before each cuSPARSE call that queues work */
PetscErrorCode GetCusparseHandle(cusparseHandle_t *h);

} // namespace cuda
} // namespace fusedksp
