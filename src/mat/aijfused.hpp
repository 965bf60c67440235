/* Fused AIJ matrices: the fused products on the backend's arrays (for src/ops) */
#pragma once

#include "sys/fusedksp_impl.hpp"

namespace fusedksp
{
/* PETSC_TRUE if A is a MATSEQAIJFUSED whose CSR arrays live with the active backend */
PetscErrorCode MatIsSeqAIJFused(Mat A, PetscBool *fused);
/* out = wl .* (A (wr .* in)) with ndots fused dot products (backend/backend.hpp) on the backend
   arrays in/out of a MATSEQAIJFUSED, in the format of its mirror (refreshed if A changed)      */
PetscErrorCode MatSeqAIJFusedMultDots(Mat A, const PetscScalar *wl, const PetscScalar *wr, const PetscScalar *in, PetscScalar *out, int ndots, const DotSpec *specs, PetscScalar *dots);
/* out = A^T in with ndots fused dot products of out, with the explicit transpose of a MATSEQAIJFUSED (built at its first
   use and kept, refreshed if A changed; see MatMultTranspose()): in has A's rows, out A's columns               */
PetscErrorCode MatSeqAIJFusedMultTransposeDots(Mat A, const PetscScalar *in, PetscScalar *out, int ndots, const DotSpec *specs, PetscScalar *dots);
/* What a product's update adds to A x (Backend::spmv_update, RowUpdate): y = alpha u + beta v + gamma wl .* (add + sign A x),
   NULL vectors reading as ones (wl) or zeros */
struct MatUpdateTerms {
  Vec         wl = nullptr, add = nullptr, u = nullptr, v = nullptr;
  PetscScalar sign = 1, gamma = 1, alpha = 0, beta = 0;
};
/* out = the RowUpdate f of A in (Backend::spmv_update) for a MATSEQAIJFUSED, in one kernel on backend arrays, in the
   format of its mirror (refreshed if A changed); logged as FusedSpMVDots (see OpsApplyOperatorUpdate())           */
PetscErrorCode MatSeqAIJFusedMultUpdate(Mat A, const RowUpdate *f, const PetscScalar *in, PetscScalar *out);
/* The backend view of a MATSEQAIJFUSED for operations that run its products themselves (Backend::cg_chunk):
   its mirror refreshed if A changed, *csr or *sell set to the format in use, the other NULL, and the
   stored entries (for flop counts); the views stay valid until A changes                            */
PetscErrorCode MatSeqAIJFusedGetView(Mat A, const CSRView **csr, const SELLView **sell, PetscInt64 *nnz);
/* The generation of the backend arrays that products of A use: it changes whenever they may have
   moved (the mirror's structure built or rebuilt, a new format, the mirror freed) and stays the same
   across values-only refreshes (an assembly with the same nonzero pattern), MatScale() and MatShift();
   unique in the process (no two matrices share one).  -1 when A has no mirror or is not a
   MATSEQAIJFUSED.  It does not refresh the mirror: a product does (for a captured CUDA graph)        */
PetscErrorCode MatAIJFusedGetArraysGeneration(Mat A, PetscInt64 *generation);
/* PETSC_TRUE if A is a MATMPIAIJFUSED whose blocks live with the active backend (src/mat/mpiaijfused.cxx) */
PetscErrorCode MatIsMPIAIJFused(Mat A, PetscBool *fused);
/* out = wl .* (A (wr .* in)) on the local rows of a MATMPIAIJFUSED fused with ndots dot products of
   out (see Backend::spmv_dots), arrays in the backend's memory; halo exchange included.  Collective. */
PetscErrorCode MatMPIAIJFusedMultDots(Mat A, const PetscScalar *wl, const PetscScalar *wr, const PetscScalar *in, PetscScalar *out, int ndots, const DotSpec *specs, PetscScalar *dots);

/* out = the RowUpdate f of A in (Backend::spmv_update) on the local rows of a MATMPIAIJFUSED, arrays in the backend's
   memory: the diagonal block's product with add and sign into a work array while the halo is exchanged, then one
   kernel over every local row that adds the off-diagonal block's product and applies the rest of the update (two
   kernels, besides the halo's).  Collective.                                                               */
PetscErrorCode MatMPIAIJFusedMultUpdate(Mat A, const RowUpdate *f, const PetscScalar *in, PetscScalar *out);

/* The backend view of a MATMPIAIJFUSED for a chunk of iterations (brought up to date first; collective the first
   time after a new structure): its diagonal block as MatSeqAIJFusedGetView() gives a MATSEQAIJFUSED's, the
   parallel part (ChunkParallel, without its comm) and the generation of the diagonal block's arrays          */
PetscErrorCode MatMPIAIJFusedGetChunkView(Mat A, const CSRView **csr, const SELLView **sell, PetscInt64 *nnz, ChunkParallel *par, PetscInt64 *generation);
/* The stream side the fused operations queue on from now (0: the backend's stream, 1: its second; OpsSideBegin() and
   OpsSideEnd() set it): each side's triangular solves of a MATSOLVERFUSED factor use a work vector of their own */
void MatFusedFactorSetSide(int side);
} // namespace fusedksp
