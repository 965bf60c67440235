/* Fused AIJ matrices: the CSR view in the backend's memory (for src/ops) */
#pragma once

#include "sys/fusedksp_impl.hpp"

namespace fusedksp
{
/* PETSC_TRUE if A is a MATSEQAIJFUSED whose CSR arrays live with the active backend */
PetscErrorCode MatIsSeqAIJFused(Mat A, PetscBool *fused);
/* The CSR arrays of a MATSEQAIJFUSED in the backend's memory, refreshed if A changed */
PetscErrorCode MatSeqAIJFusedGetCSR(Mat A, CSRView *csr);
} // namespace fusedksp
