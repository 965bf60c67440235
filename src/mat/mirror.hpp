/* The backend copy of a MATSEQAIJ (or of a block of a MATMPIAIJ): CSR or SELL-P, diagonal positions */
#pragma once

#include "sys/fusedksp_impl.hpp"
#include "mat/sellp.hpp"
#include <vector>

namespace fusedksp
{
/* The backend copy of the local rows of a sparse matrix */
struct Mirror {
  MatAIJFusedFormat format = MAT_AIJFUSED_CSR; /* the format in use (never AUTO) */
  CSRView           csr;
  SELLView          sell;
  PetscInt         *rowptr = nullptr, *colidx = nullptr; /* backend arrays we own (NULL: aliasing); SELL-P: rowptr is
                                                            the CSR one, for value refreshes (Backend::sell_from_csr) */
  PetscInt64      *sliceptr = nullptr, *diagpos = nullptr;
  PetscScalar     *vals     = nullptr;
  PetscInt64       nvals    = 0;           /* entries of vals (SELL-P: with padding)     */
  PetscInt64       nnz      = 0;           /* stored entries of the matrix              */
  PetscBool        diagonal = PETSC_FALSE; /* diagpos and alldiag are known (MirrorDiagonal()) */
  PetscBool        alldiag  = PETSC_FALSE; /* every row i < ncols stores (i, i)          */
  PetscObjectState state = -1, nonzerostate = -1;
  PetscInt64       generation = -1; /* of the arrays: new (process-unique) at each MirrorBuild(), -1 when freed */
};

/* Option values of MatAIJFusedFormat (PetscOptionsEnum) */
extern const char *const MatAIJFusedFormats[];

/* The sizes and host CSR arrays of a MATSEQAIJ (a fused matrix or a block of one) whose assembly is done
   (callers check that it is assembled: inside MatAssemblyEnd() it is not marked so yet)              */
PetscErrorCode SeqAIJHostCSR(Mat S, PetscInt *m, PetscInt *n, const PetscInt **ai, const PetscInt **aj, PetscScalar **aa);

/* The format MirrorBuild() gives a mirror of the nrows rows with host row offsets ai (never AUTO) */
MatAIJFusedFormat MirrorChooseFormat(const Backend *be, MatAIJFusedFormat requested, PetscInt nrows, const PetscInt *ai);

/* Releases the backend arrays of a mirror and resets it */
PetscErrorCode MirrorFree(const Backend *be, Mirror *m);

/* The object state obj will have when the PETSc operation now calling into its type returns:
   MatAssemblyEnd(), MatScale(), MatShift(), MatZeroRows() and MatZeroRowsColumns() increase it once
   after the type's method (the state a mirror refreshed inside that method is current at)      */
PetscErrorCode StateAfterOperation(PetscObject obj, PetscObjectState *state);

/* Builds the structure of a mirror of the nrows x ncols CSR pattern ai/aj in the requested format
   (MAT_AIJFUSED_AUTO: see MatAIJFusedSetFormat()) and gives it a new generation; alias: a CSR mirror on
   the host backend uses ai/aj (and later the values) themselves.  The diagonal positions come when
   asked for (MirrorDiagonal()).                                                                   */
PetscErrorCode MirrorBuild(const Backend *be, MatAIJFusedFormat requested, PetscInt nrows, PetscInt ncols, const PetscInt *ai, const PetscInt *aj, PetscBool alias, Mirror *m);

/* MirrorBuild() from the same pattern in the backend's memory, dai/daj (copied or placed there; of the host arrays
   only the row offsets ai are read, for the layout)                                                           */
PetscErrorCode MirrorBuildOnBackend(const Backend *be, MatAIJFusedFormat requested, PetscInt nrows, PetscInt ncols, const PetscInt *ai, const PetscInt *dai, const PetscInt *daj, Mirror *m);

/* A CSR mirror of the nrows x ncols pattern with the host row offsets ai that owns only its row offsets (uploaded): its
   csr.colidx and csr.vals are set by the caller to arrays of someone else's in the backend's memory that hold the
   pattern's entries in the same CSR order (before each use: their owner may move them)                        */
PetscErrorCode MirrorBuildRowOffsets(const Backend *be, PetscInt nrows, PetscInt ncols, const PetscInt *ai, Mirror *m);

/* The diagonal positions (diagpos, alldiag) of the mirror m of the CSR pattern ai/aj (host arrays, the pattern the
   mirror was built from), found and uploaded at the first call after a build: only matrices whose diagonal is
   read (MatGetDiagonal(), MatShift()) pay for them                                                           */
PetscErrorCode MirrorDiagonal(const Backend *be, const PetscInt *ai, const PetscInt *aj, Mirror *m);

/* The CSR copy m (the operand of the backend's sparse products) of a matrix made on the backend from src, its mirror
   (arrays of its own, current), whose host row offsets are ai: the structure first when `structure`, then the values */
PetscErrorCode MirrorCSRFrom(const Backend *be, const PetscInt *ai, const Mirror *src, PetscBool structure, Mirror *m);

/* MirrorBuild() of a CSR copy (the operand of the backend's sparse products) */
PetscErrorCode MirrorBuildOperand(const Backend *be, PetscInt nrows, PetscInt ncols, const PetscInt *ai, const PetscInt *aj, Mirror *m);

/* Values in the CSR order of the mirror's pattern, already in the backend's memory, into the mirror's value array */
PetscErrorCode MirrorSetBackendValues(const Backend *be, const PetscScalar *vals, Mirror *m);

/* The mirror of the transpose of the nrows x ncols CSR matrix ai/aj/aa (host arrays): its structure first when
   `structure`, then its values; the transpose made by the backend (Backend::csr_transpose) when it can.  No
   diagonal positions (no diagonal operation reads the mirror of a transpose) when the backend makes it.    */
PetscErrorCode MirrorTransposeRefresh(const Backend *be, MatAIJFusedFormat requested, PetscInt nrows, PetscInt ncols, const PetscInt *ai, const PetscInt *aj, const PetscScalar *aa, PetscBool structure, Mirror *m);

/* MirrorTransposeRefresh() of a CSR matrix A whose arrays are in the backend's memory (nothing uploaded), on a backend
   with csr_transpose                                                                                               */
PetscErrorCode MirrorTransposeFromBackend(const Backend *be, MatAIJFusedFormat requested, const CSRView *A, PetscBool structure, Mirror *m);

/* Copies the values (in the CSR order of the mirror's pattern) into the mirror's existing value array
   (alias: points the mirror at aa); nothing is reallocated                                          */
PetscErrorCode MirrorSetValues(const Backend *be, const PetscScalar *aa, PetscBool alias, Mirror *m);

/* out = wl .* (M (wr .* in)) with ndots fused dot products (Backend::spmv_dots), in M's format */
PetscErrorCode MirrorProduct(const Backend *be, const Mirror *m, const PetscScalar *wl, const PetscScalar *wr, const PetscScalar *in, PetscScalar *out, int ndots, const DotSpec *specs, PetscScalar *dots);

/* out = the RowUpdate f of M in (Backend::spmv_update: one kernel), in M's format */
PetscErrorCode MirrorProductUpdate(const Backend *be, const Mirror *m, const RowUpdate *f, const PetscScalar *in, PetscScalar *out);

/* Stored entries of the matrix (without padding) */
PetscInt64 MirrorEntries(const Mirror *m);

/* The value array of the mirror in the backend's memory (for diag_get, scale, ...) */
const PetscScalar *MirrorValues(const Mirror *m);
} // namespace fusedksp
