/* Fused AIJ matrices: the CSR view in the backend's memory (for src/ops) */
#pragma once

#include "sys/fusedksp_impl.hpp"

namespace fusedksp
{
/* PETSC_TRUE if A is a MATSEQAIJFUSED whose CSR arrays live with the active backend */
PetscErrorCode MatIsSeqAIJFused(Mat A, PetscBool *fused);
/* The CSR arrays of a MATSEQAIJFUSED in the backend's memory, refreshed if A changed */
PetscErrorCode MatSeqAIJFusedGetCSR(Mat A, CSRView *csr);
/* PETSC_TRUE if A is a MATMPIAIJFUSED whose blocks live with the active backend (src/mat/mpiaijfused.cxx) */
PetscErrorCode MatIsMPIAIJFused(Mat A, PetscBool *fused);
/* out = wl .* (A (wr .* in)) on the local rows of a MATMPIAIJFUSED fused with ndots dot products of
   out (see Backend::spmv_dots), arrays in the backend's memory; halo exchange included.  Collective. */
PetscErrorCode MatMPIAIJFusedMultDots(Mat A, const PetscScalar *wl, const PetscScalar *wr, const PetscScalar *in, PetscScalar *out, int ndots, const DotSpec *specs, PetscScalar *dots);
} // namespace fusedksp
