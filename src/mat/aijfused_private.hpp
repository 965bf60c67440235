/* What MATSEQAIJFUSED and MATMPIAIJFUSED share inside src/mat: conversions and products */
#pragma once

#include "sys/fusedksp_impl.hpp"
#include "backend/blas.hpp"
#include <petsc/private/matimpl.h>
#include <initializer_list>

namespace fusedksp
{
using MatConvertFn   = PetscErrorCode (*)(Mat, MatType, MatReuse, Mat *);
using MatSetFormatFn = PetscErrorCode (*)(Mat, MatAIJFusedFormat);

/* The operations a fused AIJ type replaces in its AIJ type's table, listed as X(op, fused implementation)
   (FUSED_SEQAIJ_OPS, FUSED_MPIAIJ_OPS), go through these X: a member of the type's HostOps for each, for the
   AIJ type's implementation; the AIJ implementation saved in d->host (d: A's data) and replaced in A's table
   (only where the AIJ type has the operation); A's table entry restored from the HostOps `host`          */
#define FUSED_DECLARE_HOST_OP(op, fn) decltype(_MatOps::op) op = nullptr;
#define FUSED_INSTALL_OP(op, fn)                                                                                                                                                                                                                         \
  d->host.op = A->ops->op;                                                                                                                                                                                                                               \
  if (d->host.op) A->ops->op = fn;
#define FUSED_RESTORE_OP(op, fn) A->ops->op = host.op;

/* The first step of turning the plain AIJ matrix A (type `base`) into its fused type `fused`: its new data *d,
   with the active backend, in A->spptr (the slot PETSc leaves to AIJ subclasses; it moves with the header) */
template <class Data> PetscErrorCode MatAIJFusedNewData(Mat A, MatType base, MatType fused, Data **d)
{
  PetscFunctionBegin;
  PetscCheck(!A->spptr, PetscObjectComm((PetscObject)A), PETSC_ERR_SUP, "Cannot make a %s matrix %s in place: it is not a plain %s", ((PetscObject)A)->type_name, fused, base);
  FusedKSPCallCXX(*d = new Data);
  (*d)->backend = ActiveBackend();
  A->spptr      = *d;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Composes on A (type `fused`, extending `base`) the functions PETSc's MatConvert() and MatProduct*()
   look for: MatConvert_<base>_<fused>_C (to_fused), MatConvert_<fused>_<base>_C (from_fused) and
   MatProductSetFromOptions_anytype_C, and as A's general converter (MatConvert()'s step 4) one that
   takes the converters composed for `base`, and MatAIJFusedSetFormat_C (set_format); NULL functions
   remove them                                                                                      */
PetscErrorCode MatAIJFusedComposeFunctions(Mat A, MatType base, MatType fused, MatConvertFn to_fused, MatConvertFn from_fused, MatSetFormatFn set_format);

/* The last step of turning the AIJ matrix A into its fused type `fused` (after the operations were
   installed): MatAIJFusedComposeFunctions(), the converter from other types, VECFUSED vectors and the
   type name.  With NULL functions the last step back to `base` (after the operations were restored)  */
PetscErrorCode MatAIJFusedFinishTypeChange(Mat A, MatType base, MatType fused, MatConvertFn to_fused, MatConvertFn from_fused, MatSetFormatFn set_format);

/* MatConvert() between an AIJ type and its fused type, in every reuse mode: REUSE copies the values into *M,
   INITIAL duplicates A into *M, then (INITIAL and INPLACE) `change` turns *M into the other type in place */
PetscErrorCode MatAIJFusedConvert(Mat A, MatReuse reuse, Mat *M, PetscErrorCode (*change)(Mat));

/* MatAIJFusedConvert() with `change` as a MatConvert_<from>_<to>_C function */
template <PetscErrorCode (*change)(Mat)> PetscErrorCode MatAIJFusedConverter(Mat A, MatType, MatReuse reuse, Mat *M)
{
  PetscFunctionBegin;
  PetscCall(MatAIJFusedConvert(A, reuse, M, change));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* B->ops->convertfrom of both fused types, which MatConvert() takes when neither the source type nor the fused
   type has a converter for the pair (a dense, BAIJ, SELL... matrix to a fused type): PETSc's conversion to the AIJ
   type the fused one extends, then that AIJ matrix made fused in place, so the result is the one MATAIJ gets (a
   dense matrix keeps its nonzeros only, not MatConvert_Basic()'s every entry). MATAIJ has no convertfrom. */
PetscErrorCode MatConvertFrom_AIJFused(Mat A, MatType newtype, MatReuse reuse, Mat *M);

/* MatMult(), MatMultAdd(), MatMultTranspose() and MatMultTransposeAdd() of a fused AIJ type, as one function (add:
   with z; transpose: op(A) = A^T), with the type's T::OnBackend(A, vecs, &backend) (whether the product on these
   vectors runs on the backend), T::Device(A, transpose, x, z, y) (y = op(A) x, plus z unless NULL, on the backend)
   and T::Host(A) (the AIJ type's operations, which run otherwise)                                             */
template <class T, PetscBool transpose, bool add> PetscErrorCode MatAIJFusedProduct(Mat A, Vec x, Vec z, Vec y)
{
  const auto &host = T::Host(A);
  PetscBool   backend;

  PetscFunctionBegin;
  PetscCall(T::OnBackend(A, {x, y, add ? z : x}, &backend));
  if (backend)
    PetscCall(T::Device(A, transpose, x, add ? z : nullptr, y));
  else if (add)
    PetscCall((transpose ? host.multtransposeadd : host.multadd)(A, x, z, y));
  else
    PetscCall((transpose ? host.multtranspose : host.mult)(A, x, y));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* MatAIJFusedProduct() without z: MatMult(), MatMultTranspose() */
template <class T, PetscBool transpose> PetscErrorCode MatAIJFusedMult(Mat A, Vec x, Vec y)
{
  PetscFunctionBegin;
  PetscCall(MatAIJFusedProduct<T, transpose, false>(A, x, nullptr, y));
  PetscFunctionReturn(PETSC_SUCCESS);
}

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
