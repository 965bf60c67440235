/*
   What MATSEQAIJFUSED and MATMPIAIJFUSED share: the composed functions PETSc's MatConvert() and
   MatProduct*() look up by type name, and the choice of a product's implementation.

   PETSc finds conversions and products through functions composed under names made of the type names
   (MatConvert_seqaij_seqaijfused_C, MatProductSetFromOptions_seqaij_seqmaij_C, ...).  A fused type
   is its AIJ type under another name, so these lookups miss every implementation that PETSc and the
   other types provide for AIJ; here each fused operand is looked up under the name of the type it
   extends, and PETSc's AIJ implementation is used.
*/
#include "mat/aijfused_private.hpp"
#include "vec/vecfused.hpp"
#include <string>

namespace fusedksp
{
namespace
{
/* The type a product operand counts as: seqaij/mpiaij for the fused types (with MATSEQAIJ's/MATMPIAIJ's
   MatProductSetFromOptions() in *host), its own type otherwise                                       */
PetscErrorCode ProductOperandType(Mat M, std::string *type, PetscErrorCode (**host)(Mat))
{
  PetscErrorCode (*f)(Mat) = nullptr;

  PetscFunctionBegin;
  PetscCall(MatSeqAIJFusedHostProductSetFromOptions(M, &f));
  if (f)
    FusedKSPCallCXX(*type = MATSEQAIJ);
  else {
    PetscCall(MatMPIAIJFusedHostProductSetFromOptions(M, &f));
    FusedKSPCallCXX(*type = f ? MATMPIAIJ : ((PetscObject)M)->type_name);
  }
  if (!f) f = M->ops->productsetfromoptions;
  *host = f;
  PetscFunctionReturn(PETSC_SUCCESS);
}
} // namespace

PetscErrorCode MatAIJFusedConvert(Mat A, MatReuse reuse, Mat *M, PetscErrorCode (*change)(Mat))
{
  PetscFunctionBegin;
  if (reuse == MAT_REUSE_MATRIX) {
    PetscCall(MatCopy(A, *M, SAME_NONZERO_PATTERN));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  if (reuse == MAT_INITIAL_MATRIX) {
    PetscErrorCode ierr;

    PetscCall(MatDuplicate(A, MAT_COPY_VALUES, M));
    ierr = change(*M);
    if (ierr) { /* the caller gets no matrix: the duplicate is ours to destroy */
      PetscCall(MatDestroy(M));
      PetscCall(ierr);
    }
  } else
    PetscCall(change(*M));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MatConvertFrom_AIJFused(Mat A, MatType newtype, MatReuse reuse, Mat *M)
{
  PetscBool seq, mpi;
  MatType   base;

  PetscFunctionBegin;
  PetscCall(PetscStrcmp(newtype, MATSEQAIJFUSED, &seq));
  PetscCall(PetscStrcmp(newtype, MATMPIAIJFUSED, &mpi));
  base = seq ? MATSEQAIJ : (mpi ? MATMPIAIJ : MATAIJ);
  PetscCall(MatConvert(A, base, reuse, M)); /* REUSE: PETSc's converters fill any AIJ matrix *M */
  if (reuse != MAT_REUSE_MATRIX) PetscCall(MatConvert(*M, newtype, MAT_INPLACE_MATRIX, M));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* MatConvert() of a fused matrix to a type with no converter of its own (PETSc's step 4, the matrix's
   general converter): the converter PETSc composes on the AIJ type the fused type extends
   (MatConvert_mpiaij_is_C, MatConvert_seqaij_seqdense_C, ...; looked up with PETSc's type prefixes),
   else PETSc's basic converter, as for the AIJ type.                                                 */
static PetscErrorCode MatConvert_AIJFusedAsBase(Mat A, MatType newtype, MatReuse reuse, Mat *M)
{
  const char *const prefixes[]                          = {"seq", "mpi", ""};
  PetscErrorCode (*conv)(Mat, MatType, MatReuse, Mat *) = nullptr;
  PetscErrorCode ierr;
  PetscBool      seq;
  std::string    name;

  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)A, MATSEQAIJFUSED, &seq));
  for (const char *prefix : prefixes) {
    FusedKSPCallCXX(name = std::string("MatConvert_") + (seq ? MATSEQAIJ : MATMPIAIJ) + "_" + prefix + newtype + "_C");
    PetscCall(PetscObjectQueryFunction((PetscObject)A, name.c_str(), &conv));
    if (conv) break;
  }
  if (conv) {
    PetscCall(conv(A, newtype, reuse, M));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  if (reuse == MAT_INPLACE_MATRIX) { /* the basic converter replaces the header: convert into a new matrix first */
    Mat B;

    PetscCall(MatConvert_AIJFusedAsBase(A, newtype, MAT_INITIAL_MATRIX, &B));
    PetscCall(MatHeaderReplace(A, &B));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  A->ops->convert = nullptr; /* MatConvert() then takes its basic converter */
  ierr            = MatConvert(A, newtype, reuse, M);
  A->ops->convert = MatConvert_AIJFusedAsBase;
  PetscCall(ierr);
  PetscFunctionReturn(PETSC_SUCCESS);
}

const BlasKernels *MatFusedBlas(const Backend *backend)
{
  return BackendBlas(backend);
}

PetscErrorCode MatFusedOnBackend(std::initializer_list<Vec> vecs, PetscBool *backend)
{
  PetscFunctionBegin;
  *backend = PETSC_TRUE;
  for (Vec v : vecs) {
    PetscBool fused;
    PetscCall(VecIsFused(v, &fused));
    if (!fused) *backend = PETSC_FALSE;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   MatAIJFusedComposeFunctions - see aijfused_private.hpp
*/
PetscErrorCode MatAIJFusedComposeFunctions(Mat A, MatType base, MatType fused, MatConvertFn to_fused, MatConvertFn from_fused, MatSetFormatFn set_format)
{
  std::string to, from;

  PetscFunctionBegin;
  PetscCall(PetscObjectComposeFunction((PetscObject)A, "MatAIJFusedSetFormat_C", set_format));
  FusedKSPCallCXX(to = std::string("MatConvert_") + base + "_" + fused + "_C"; from = std::string("MatConvert_") + fused + "_" + base + "_C");
  PetscCall(PetscObjectComposeFunction((PetscObject)A, to.c_str(), to_fused));
  PetscCall(PetscObjectComposeFunction((PetscObject)A, from.c_str(), from_fused));
  PetscCall(PetscObjectComposeFunction((PetscObject)A, "MatProductSetFromOptions_anytype_C", to_fused ? MatProductSetFromOptions_AIJFused : nullptr));
  if (to_fused && !A->ops->convert)
    A->ops->convert = MatConvert_AIJFusedAsBase;
  else if (!to_fused && A->ops->convert == MatConvert_AIJFusedAsBase)
    A->ops->convert = nullptr;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   MatAIJFusedFinishTypeChange - see aijfused_private.hpp
*/
PetscErrorCode MatAIJFusedFinishTypeChange(Mat A, MatType base, MatType fused, MatConvertFn to_fused, MatConvertFn from_fused, MatSetFormatFn set_format)
{
  PetscFunctionBegin;
  PetscCall(MatAIJFusedComposeFunctions(A, base, fused, to_fused, from_fused, set_format));
  A->ops->convertfrom = to_fused ? MatConvertFrom_AIJFused : nullptr; /* MATAIJ has none */
  PetscCall(MatSetVecType(A, to_fused ? VECFUSED : VECSTANDARD));
  PetscCall(PetscObjectChangeTypeName((PetscObject)A, to_fused ? fused : base));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   MatProductSetFromOptions_AIJFused - see aijfused_private.hpp.  The backend's products where they apply
   (MatProductSetFromOptions_SeqAIJFusedBackend()); else, operands that all count as the same AIJ
   type: that type's MatProductSetFromOptions(); else the function MatProductSetFromOptions_<A>_<B>[_<C>]_C
   composed on any operand, with the types they count as; else an operand's own
   MatProductSetFromOptions_anytype_C (a MATTRANSPOSEVIRTUAL, a MATSHELL).  When none sets the symbolic
   phase, MatProductSetFromOptions() goes on with PETSc's generic products.
*/
PetscErrorCode MatProductSetFromOptions_AIJFused(Mat C)
{
  Mat_Product *product = C->product;
  Mat          ops[3]  = {product->A, product->B, product->type == MATPRODUCT_ABC ? product->C : nullptr};
  std::string  types[3], name;
  PetscErrorCode (*host[3])(Mat) = {nullptr, nullptr, nullptr};
  PetscErrorCode (*f)(Mat)       = nullptr;
  PetscBool same                 = PETSC_TRUE, backend;

  PetscFunctionBegin;
  PetscCall(MatProductSetFromOptions_SeqAIJFusedBackend(C, &backend));
  if (backend) PetscFunctionReturn(PETSC_SUCCESS);
  FusedKSPCallCXX(name = "MatProductSetFromOptions");
  for (int i = 0; i < 3 && ops[i]; ++i) {
    PetscCall(ProductOperandType(ops[i], &types[i], &host[i]));
    FusedKSPCallCXX(name += "_" + types[i]);
    if (types[i] != types[0]) same = PETSC_FALSE;
  }
  FusedKSPCallCXX(name += "_C");
  if (same && (types[0] == MATSEQAIJ || types[0] == MATMPIAIJ)) {
    PetscCall(host[0](C));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  for (int i = 0; i < 3 && ops[i] && !f; ++i) PetscCall(PetscObjectQueryFunction((PetscObject)ops[i], name.c_str(), &f));
  if (f) PetscCall(f(C));
  for (int i = 0; i < 3 && ops[i] && !C->ops->productsymbolic; ++i) {
    PetscCall(PetscObjectQueryFunction((PetscObject)ops[i], "MatProductSetFromOptions_anytype_C", &f));
    if (f && f != MatProductSetFromOptions_AIJFused) PetscCall(f(C));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}
} // namespace fusedksp
