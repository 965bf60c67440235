/* What MATSEQAIJFUSED and MATMPIAIJFUSED share inside src/mat: their life cycle, conversions and products */
#pragma once

#include "sys/fusedksp_impl.hpp"
#include "backend/blas.hpp"
#include "mat/mirror.hpp"
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

/* The part of those lists every fused AIJ type T has: the templates below and the product choice of aijfused_shared.cxx */
#define FUSED_AIJ_SHARED_OPS(X, T)                                                                                                                                                                                                                       \
  X(destroy, MatDestroy_AIJFused<T>)                                                                                                                                                                                                                     \
  X(assemblyend, MatAssemblyEnd_AIJFused<T>)                                                                                                                                                                                                             \
  X(mult, (MatAIJFusedMult<T, PETSC_FALSE>))                                                                                                                                                                                                             \
  X(multadd, (MatAIJFusedProduct<T, PETSC_FALSE, true>))                                                                                                                                                                                                 \
  X(multtranspose, (MatAIJFusedMult<T, PETSC_TRUE>))                                                                                                                                                                                                     \
  X(multtransposeadd, (MatAIJFusedProduct<T, PETSC_TRUE, true>))                                                                                                                                                                                         \
  X(productsetfromoptions, MatProductSetFromOptions_AIJFused)

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

/* The templates below are the life cycle both fused AIJ types share: creation, conversion to and from the
   AIJ type they extend, assembly, destruction and the products.  A type is described by T (SeqAIJFusedType
   in aijfused.cxx, MPIAIJFusedType in mpiaijfused.cxx):
     T::DataType                      its data, in A->spptr (the slot PETSc leaves to AIJ subclasses; it moves
                                    with the header): `backend` (the active backend when A became fused) and
                                    `host` (the AIJ type's implementations of the operations it replaces)
     T::base, T::fused              the AIJ type it extends and its own type name
     T::InstallOps(A, d)            saves the AIJ type's operations in d->host and installs the fused ones
     T::RestoreOps(A, host)         puts the AIJ type's operations `host` back in A's table
     T::SetFormat                   MatAIJFusedSetFormat()
     T::FreeContents(d)               frees the backend copies of the data d
     T::AssemblyRefresh(A, state)   at the end of a final assembly: brings the backend copies up to date with
                                    A as of the object state `state`
     T::OnBackend(A, vecs, &dev)    whether the product of A on these vectors runs on the backend
     T::Device(A, transpose, x, z, y)  y = op(A) x, plus z unless NULL, on the backend                     */

template <class T> inline typename T::DataType *MatAIJFusedGetData(Mat A)
{
  return static_cast<typename T::DataType *>(A->spptr);
}

/* Frees the backend copies and the data of a matrix of the fused type T, leaving A->spptr NULL */
template <class T> PetscErrorCode MatAIJFusedFreeData(Mat A)
{
  typename T::DataType *d = MatAIJFusedGetData<T>(A);

  PetscFunctionBegin;
  PetscCall(T::FreeContents(d));
  delete d;
  A->spptr = nullptr;
  PetscFunctionReturn(PETSC_SUCCESS);
}

template <class T> PetscErrorCode MatDestroy_AIJFused(Mat A)
{
  PetscErrorCode (*host_destroy)(Mat) = MatAIJFusedGetData<T>(A)->host.destroy;

  PetscFunctionBegin;
  PetscCall(MatAIJFusedFreeData<T>(A));
  PetscCall(MatAIJFusedComposeFunctions(A, T::base, T::fused, nullptr, nullptr, nullptr));
  PetscCall(host_destroy(A));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Whether A is of the fused type T (with any backend) */
template <class T> inline PetscBool MatAIJFusedIsType(Mat A)
{
  return (A && A->ops->destroy == MatDestroy_AIJFused<T>) ? PETSC_TRUE : PETSC_FALSE;
}

/* The AIJ type's assembly; at the end of a final one (of a matrix with values) T::AssemblyRefresh() with the
   state A will have when MatAssemblyEnd() returns.  MATSEQAIJ's MatZeroRows() and MatZeroRowsColumns() call it too. */
template <class T> PetscErrorCode MatAssemblyEnd_AIJFused(Mat A, MatAssemblyType mode)
{
  PetscObjectState state;

  PetscFunctionBegin;
  PetscCall(MatAIJFusedGetData<T>(A)->host.assemblyend(A, mode));
  if (mode != MAT_FINAL_ASSEMBLY || A->structure_only) PetscFunctionReturn(PETSC_SUCCESS); /* a structure-only matrix has no values to mirror */
  PetscCall(StateAfterOperation((PetscObject)A, &state));
  PetscCall(T::AssemblyRefresh(A, state));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Turns the matrix A of the fused type T back into the AIJ type it extends (its values stay) */
template <class T> PetscErrorCode MatAIJFusedToBase(Mat A)
{
  const auto host = MatAIJFusedGetData<T>(A)->host;

  PetscFunctionBegin;
  PetscCall(MatAIJFusedFreeData<T>(A));
  T::RestoreOps(A, host);
  PetscCall(MatAIJFusedFinishTypeChange(A, T::base, T::fused, nullptr, nullptr, nullptr));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* MatAIJFusedConvert() with `change` as a MatConvert_<from>_<to>_C function */
template <PetscErrorCode (*change)(Mat)> PetscErrorCode MatAIJFusedConverter(Mat A, MatType, MatReuse reuse, Mat *M)
{
  PetscFunctionBegin;
  PetscCall(MatAIJFusedConvert(A, reuse, M, change));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Turns the AIJ matrix A of type T::base (new, or assembled: its values stay) into the fused type T: its new data,
   with the active backend, in A->spptr, the fused operations and the composed functions, among them MatConvert()
   from T::base to T (found by MatConvert() on a fused matrix, and by MatSetType() of an assembled AIJ matrix; the
   values are kept, in place or in a duplicate) and back (to T::base, or MATAIJ)                                  */
template <class T> PetscErrorCode MatAIJFusedToFused(Mat A)
{
  typename T::DataType *d;

  PetscFunctionBegin;
  PetscCheck(!A->spptr, PetscObjectComm((PetscObject)A), PETSC_ERR_SUP, "Cannot make a %s matrix %s in place: it is not a plain %s", ((PetscObject)A)->type_name, T::fused, T::base);
  FusedKSPCallCXX(d = new typename T::DataType);
  d->backend = ActiveBackend();
  A->spptr   = d;
  T::InstallOps(A, d);
  PetscCall(MatAIJFusedFinishTypeChange(A, T::base, T::fused, MatAIJFusedConverter<MatAIJFusedToFused<T>>, MatAIJFusedConverter<MatAIJFusedToBase<T>>, T::SetFormat));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* MatCreate() of the fused type T: a new T::base matrix made fused */
template <class T> PetscErrorCode MatCreate_AIJFusedType(Mat A)
{
  PetscFunctionBegin;
  PetscCall(MatSetType(A, T::base));
  PetscCall(MatAIJFusedToFused<T>(A));
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
   and the AIJ type's operations, which run otherwise                                                          */
template <class T, PetscBool transpose, bool add> PetscErrorCode MatAIJFusedProduct(Mat A, Vec x, Vec z, Vec y)
{
  const auto &host = MatAIJFusedGetData<T>(A)->host;
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

/* The CSR copy of the MATSEQAIJFUSED A in the memory of `be` (a backend with memory of its own, A's backend),
   current with A: made at the first call (its structure and values uploaded), its values uploaded again when A
   changed.  The sparse products read it (an operand used by several products is copied once), and once A has it,
   A's mirror and transpose are made from it on the backend.  *csr NULL for other matrices and backends.        */
PetscErrorCode MatSeqAIJFusedOperand(Mat A, const Backend *be, const Mirror **csr);

/* Gives the MATSEQAIJFUSED C, a product's result whose host values were just set from G (C = G, rows in the same order,
   columns ascending), its CSR copy for products from G's arrays, on the backend: to be called right before the one
   increase of C's state that marks its new values, the copy being current at that state.  Other matrices: nothing. */
PetscErrorCode MatSeqAIJFusedOperandFromProduct(Mat C, const Backend *be, const SpGEMMView *G);

/* Marks the backend copies of the MATSEQAIJFUSED C that are current at C's present object state as current at the next
   one: for the end of a product's numeric phase, after which MatProductNumeric() increases C's state once without
   changing a value.  Other matrices: nothing.                                                                    */
PetscErrorCode MatSeqAIJFusedKeepCurrent(Mat C);

/* MATSEQAIJ's (MATMPIAIJ's) MatProductSetFromOptions() saved by a MATSEQAIJFUSED (MATMPIAIJFUSED) A;
   NULL when A is not of that type                                                                 */
PetscErrorCode MatSeqAIJFusedHostProductSetFromOptions(Mat A, PetscErrorCode (**f)(Mat));
PetscErrorCode MatMPIAIJFusedHostProductSetFromOptions(Mat A, PetscErrorCode (**f)(Mat));
} // namespace fusedksp
