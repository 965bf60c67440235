/* What MATSEQAIJFUSED and MATMPIAIJFUSED share inside src/mat: conversions and products */
#pragma once

#include "sys/fusedksp_impl.hpp"
#include "backend/blas.hpp"
#include <petsc/private/matimpl.h>
#include <initializer_list>

namespace fusedksp
{
using MatConvertFn = PetscErrorCode (*)(Mat, MatType, MatReuse, Mat *);

/* Composes on A (type `fused`, extending `base`) the functions PETSc's MatConvert() and MatProduct*()
   look for: MatConvert_<base>_<fused>_C (to_fused), MatConvert_<fused>_<base>_C (from_fused) and
   MatProductSetFromOptions_anytype_C, and as A's general converter (MatConvert()'s step 4) one that
   takes the converters composed for `base`; NULL functions remove them                            */
PetscErrorCode MatAIJFusedComposeFunctions(Mat A, MatType base, MatType fused, MatConvertFn to_fused, MatConvertFn from_fused);

/* MatConvert() between an AIJ type and its fused type, in every reuse mode: REUSE copies the values into *M,
   INITIAL duplicates A into *M, then (INITIAL and INPLACE) `change` turns *M into the other type in place */
PetscErrorCode MatAIJFusedConvert(Mat A, MatReuse reuse, Mat *M, PetscErrorCode (*change)(Mat));

/* B->ops->convertfrom of both fused types, which MatConvert() takes when neither the source type nor the fused
   type has a converter for the pair (a dense, BAIJ, SELL... matrix to a fused type): PETSc's conversion to the AIJ
   type the fused one extends, then that AIJ matrix made fused in place, so the result is the one MATAIJ gets (a
   dense matrix keeps its nonzeros only, not MatConvert_Basic()'s every entry). MATAIJ has no convertfrom. */
PetscErrorCode MatConvertFrom_AIJFused(Mat A, MatType newtype, MatReuse reuse, Mat *M);

/* The BLAS-1 kernels of a backend */
const BlasKernels *MatFusedBlas(const Backend *backend);

/* PETSC_TRUE when an operation of a fused matrix runs on its backend copy: every vector is fused (with the
   host backend too, so that the host backend checks the mirror code in CI); else PETSc's host operation */
PetscErrorCode MatFusedOnBackend(std::initializer_list<Vec> vecs, PetscBool *backend);

/* MatProductSetFromOptions() of both fused AIJ types: a product with fused operands is chosen as PETSc
   chooses it for the AIJ types they extend; its result takes A's type, as with AIJ (so a Galerkin
   product of a fused operator is fused)                                                           */
PetscErrorCode MatProductSetFromOptions_AIJFused(Mat C);

/* Chooses the backend's sparse products (src/mat/aijfused_product.cxx) for C = A B, A^T B or P^T A P with A a
   MATSEQAIJFUSED, the other operand a MATSEQAIJ (fused or not), on a backend with memory of its own; *done says
   whether it did (else PETSc's host products apply)                                                        */
PetscErrorCode MatProductSetFromOptions_SeqAIJFusedBackend(Mat C, PetscBool *done);

/* MATSEQAIJ's (MATMPIAIJ's) MatProductSetFromOptions() saved by a MATSEQAIJFUSED (MATMPIAIJFUSED) A;
   NULL when A is not of that type                                                                 */
PetscErrorCode MatSeqAIJFusedHostProductSetFromOptions(Mat A, PetscErrorCode (**f)(Mat));
PetscErrorCode MatMPIAIJFusedHostProductSetFromOptions(Mat A, PetscErrorCode (**f)(Mat));
} // namespace fusedksp
