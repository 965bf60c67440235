/* The matrix powers kernel of MATMPIAIJFUSED: s products with one halo exchange (src/mat/matpowers.cxx) */
#pragma once

#include "mat/mirror.hpp"
#include "mat/halo.hpp"

namespace fusedksp
{
struct MatPowers;

/* The parts of the local product of a MATMPIAIJFUSED, brought up to date with A (collective the first time after a
   new structure): its backend, the mirror of the diagonal block, the rows of the off-diagonal block with entries
   (columns: A's halo slots, in the order of MATMPIAIJ's garray) and whether MPI takes backend buffers       */
PetscErrorCode MatMPIAIJFusedGetLocalProduct(Mat A, const Backend **be, const Mirror **diag, const OffDiagRows **offdiag, PetscBool *direct);

/* Creates the kernel for products with the MATMPIAIJFUSED A: the ghost region of depth s (the entries other ranks own
   within graph distance s of the local rows), its exchange and the ghost rows.  Collective. */
PetscErrorCode MatPowersCreate(Mat A, PetscInt s, MatPowers **mp);
PetscErrorCode MatPowersDestroy(MatPowers **mp);
/* Y[i+1] = A (w .* Y[i]) - c[2i] Y[i] - c[2i+1] Y[i-1] for i < sb <= s (Y[-1] = 0: c[1] ignored), on the local rows
   (backend arrays), with ONE halo exchange (of Y[0], depth s); w: the local right weights (backend array) or NULL.
   MatPowersUpdate() must have been called since A or w last changed.  Collective. */
PetscErrorCode MatPowersApply(MatPowers *mp, const PetscScalar *w, PetscInt sb, const PetscScalar *c, PetscScalar *const *Y);
/* Brings the kernel up to date with A (the ghost region built again when A's state changed) and the right weights
   w (backend array of the local rows, or NULL: none) to the ghost region (one exchange).  Collective. */
PetscErrorCode MatPowersUpdate(MatPowers *mp, const PetscScalar *w);
/* The matrix, the depth, the ghost entries, the ghost rows computed and the exchanges of MatPowersApply() since
   creation (arguments may be NULL) */
PetscErrorCode MatPowersGetInfo(MatPowers *mp, Mat *A, PetscInt *s, PetscInt *nghost, PetscInt *nghostrows, PetscInt64 *exchanges);
} // namespace fusedksp
