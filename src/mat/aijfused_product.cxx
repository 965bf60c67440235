/*
   Sparse matrix products of MATSEQAIJFUSED on the backend: C = A B, C = A^T B and C = P^T A P with C and A of
   this type and B, P any MATSEQAIJ (fused or not), when the backend computes in memory of its own (a GPU).
   These are the products of PCGAMG's setup (the smoothed prolongator A P0 and the Galerkin operators P^T A P)
   and of PCMG's Galerkin coarse operators; on the host their flops make most of GAMG's setup time.

   A fused operand is read from its own CSR copy on the backend (MatSeqAIJFusedOperand(): made at its first
   product, its values copied again only when they changed, shared by every product of that operand, and the
   source of its mirror and transpose); a plain MATSEQAIJ operand's host CSR arrays are copied for the product -
   their pattern once, at the symbolic phase, their values at each numeric phase.  A transposed operand is
   transposed by the backend (Backend::csr_transpose), each time its values change.  The products, the part whose
   work grows with the flops, run on the backend (Backend::spgemm_*).  P^T A P is (P^T)(A P): the intermediate
   A P stays in the backend's memory.  C is a MATSEQAIJFUSED whose host arrays receive the pattern (symbolic) and
   the values (numeric), so every PETSc host operation keeps working on it, and whose CSR copy on the backend is
   the product's result itself (MatSeqAIJFusedOperandFromProduct()): the next products of C (the next level of a
   multigrid hierarchy), its mirror and its transpose copy nothing from the host.

   Other product types, operands of other types, host-memory backends (where PETSc's products are the
   reference) and -mat_product_algorithm_backend_cpu (PETSc's option for its device matrices; with the
   MatMatMult()/MatTransposeMatMult()/MatPtAP() interface -matmatmult_backend_cpu, -mattransposematmult_backend_cpu,
   -matptap_backend_cpu) keep PETSc's host products.
*/
#include "mat/aijfused.hpp"
#include "mat/mirror.hpp"
#include "mat/aijfused_private.hpp"
#include <petsc/private/matimpl.h>
#include <algorithm>
#include <numeric>
#include <vector>

namespace fusedksp
{
namespace
{
/* An operand of a product in the backend's memory: `csr`, the operand's own CSR copy (a MATSEQAIJFUSED's), or `copy`,
   a copy the product owns (of a plain MATSEQAIJ, or of a transpose)                                               */
struct Operand {
  CSRView          csr;
  Mirror           copy;
  PetscBool        transposed = PETSC_FALSE;
  PetscInt64       shared     = -1; /* the generation of the operand's own copy csr (or copy) was made from; -1: none */
  PetscObjectState state = -1, nonzerostate = -1;
};

/* The data of a product on the backend (Mat_Product's data) */
struct DeviceProduct {
  const Backend           *be = nullptr;
  Operand                  ops[3];        /* AB: A, B; AtB: A^T, B; PtAP: A, P, P^T */
  SpGEMMView               first, second; /* AB, AtB: first; PtAP: first = A P, second = P^T (A P) */
  bool                     two = false;   /* PtAP: the result is `second` */
  std::vector<PetscInt64>  order;         /* C's host entry p is the backend's entry order[p] (empty: same order) */
  std::vector<PetscScalar> staging;       /* C's values in the backend's order, when they are reordered */
};

/* Brings the operand M (transposed: M^T) up to date: its structure at the first call, its values when M changed
   since the last one; a different nonzero pattern, or another copy of a fused operand, since the symbolic phase
   is an error (the product's analysis holds the arrays of then)                                              */
PetscErrorCode OperandRefresh(const Backend *be, Mat M, Operand *op, PetscBool first)
{
  PetscObjectState state;
  const Mirror    *own;
  const PetscInt  *ai, *aj;
  PetscScalar     *aa;
  PetscInt         nr, nc;

  PetscFunctionBegin;
  PetscCheck(first || M->nonzerostate == op->nonzerostate, PetscObjectComm((PetscObject)M), PETSC_ERR_ARG_WRONGSTATE, "The nonzero pattern of an operand changed since the product's symbolic phase: make the product again (MAT_INITIAL_MATRIX)");
  PetscCall(MatSeqAIJFusedOperand(M, be, &own));
  PetscCheck(first || (own ? own->generation : -1) == op->shared, PetscObjectComm((PetscObject)M), PETSC_ERR_ARG_WRONGSTATE, "An operand changed type or backend copy since the product's symbolic phase: make the product again (MAT_INITIAL_MATRIX)");
  PetscCall(PetscObjectStateGet((PetscObject)M, &state));
  if (!first && state == op->state) PetscFunctionReturn(PETSC_SUCCESS);
  if (own && !op->transposed)
    op->csr = own->csr;
  else if (own && be->csr_transpose) {
    PetscCall(MirrorTransposeFromBackend(be, MAT_AIJFUSED_CSR, &own->csr, first, &op->copy));
    op->csr = op->copy.csr;
  } else {
    PetscCall(SeqAIJHostCSR(M, &nr, &nc, &ai, &aj, &aa));
    if (op->transposed)
      PetscCall(MirrorTransposeRefresh(be, MAT_AIJFUSED_CSR, nr, nc, ai, aj, aa, first, &op->copy));
    else {
      if (first) PetscCall(MirrorBuild(be, MAT_AIJFUSED_CSR, nr, nc, ai, aj, PETSC_FALSE, &op->copy));
      PetscCall(MirrorSetValues(be, aa, PETSC_FALSE, &op->copy));
    }
    op->csr = op->copy.csr;
  }
  op->shared       = own ? own->generation : -1;
  op->state        = state;
  op->nonzerostate = M->nonzerostate;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Mat_Product's destroy: ctx points to the data pointer */
PetscErrorCode DeviceProductDestroy(PetscCtxRt ctx)
{
  DeviceProduct *d = *static_cast<DeviceProduct **>(ctx);

  PetscFunctionBegin;
  *static_cast<DeviceProduct **>(ctx) = nullptr;
  if (d->first.plan || d->first.rowptr) PetscCall(d->be->spgemm_free(&d->first));
  if (d->second.plan || d->second.rowptr) PetscCall(d->be->spgemm_free(&d->second));
  for (Operand &op : d->ops) PetscCall(MirrorFree(d->be, &op.copy));
  delete d;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The operands of C's product in the order of DeviceProduct::ops */
void Operands(Mat C, Mat mats[3])
{
  Mat_Product *product = C->product;

  mats[0] = product->A;
  mats[1] = product->B;
  mats[2] = product->type == MATPRODUCT_PtAP ? product->B : nullptr;
}

PetscErrorCode ProductNumeric(Mat C)
{
  DeviceProduct    *d = static_cast<DeviceProduct *>(C->product->data);
  const SpGEMMView &G = d->two ? d->second : d->first;
  Mat               mats[3];
  PetscScalar      *ca;

  PetscFunctionBegin;
  Operands(C, mats);
  for (int i = 0; i < 3; ++i)
    if (mats[i]) PetscCall(OperandRefresh(d->be, mats[i], &d->ops[i], PETSC_FALSE));
  PetscCall(PetscLogEventBegin(events.spgemm, C, 0, 0, 0));
  PetscCall(d->be->spgemm_numeric(&d->first));
  if (d->two) PetscCall(d->be->spgemm_numeric(&d->second));
  PetscCall(MatSeqAIJGetArrayWrite(C, &ca));
  if (d->order.empty())
    PetscCall(d->be->copy_to_host(ca, G.vals, sizeof(PetscScalar) * G.nnz));
  else {
    PetscCall(d->be->copy_to_host(d->staging.data(), G.vals, sizeof(PetscScalar) * G.nnz));
    for (size_t p = 0; p < d->order.size(); ++p) ca[p] = d->staging[d->order[p]];
  }
  PetscCall(PetscLogGpuToCpu((PetscLogDouble)(sizeof(PetscScalar) * G.nnz)));
  PetscCall(MatSeqAIJRestoreArrayWrite(C, &ca));
  PetscCall(PetscLogEventEnd(events.spgemm, C, 0, 0, 0));
  if (d->order.empty()) PetscCall(MatSeqAIJFusedOperandFromProduct(C, d->be, &G));
  /* C keeps the structure its symbolic phase assembled: instead of MatAssemblyEnd()'s passes over the rows on the host
     (compaction, diagonal, inodes, all unchanged) its values' new state, as PETSc's own device products do.  Its
     mirror and transpose follow at their next use (the state changed), made from the copy set above. */
  PetscCall(PetscObjectStateIncrease((PetscObject)C));
  C->assembled = C->was_assembled = PETSC_TRUE;
  C->num_ass++;
  PetscCall(MatSeqAIJFusedKeepCurrent(C));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* C's pattern on the host from the backend's, each row sorted by column (d->order keeps the map of the values
   when the backend's rows were not sorted) */
PetscErrorCode PatternToHost(DeviceProduct *d, const SpGEMMView &G, PetscInt nrows, std::vector<PetscInt> *ci, std::vector<PetscInt> *cj)
{
  bool sorted = true;

  PetscFunctionBegin;
  FusedKSPCallCXX(ci->resize(nrows + 1); cj->resize(G.nnz));
  PetscCall(d->be->copy_to_host(ci->data(), G.rowptr, sizeof(PetscInt) * (nrows + 1)));
  if (G.nnz) PetscCall(d->be->copy_to_host(cj->data(), G.colidx, sizeof(PetscInt) * G.nnz));
  PetscCall(PetscLogGpuToCpu((PetscLogDouble)(sizeof(PetscInt) * (nrows + 1 + G.nnz))));
  for (PetscInt i = 0; i < nrows && sorted; ++i)
    for (PetscInt p = (*ci)[i] + 1; p < (*ci)[i + 1]; ++p)
      if ((*cj)[p - 1] >= (*cj)[p]) sorted = false;
  if (sorted) PetscFunctionReturn(PETSC_SUCCESS);
  {
    std::vector<PetscInt> unsorted;

    FusedKSPCallCXX(d->order.resize(G.nnz); d->staging.resize(G.nnz); unsorted.assign(cj->begin(), cj->end()));
    std::iota(d->order.begin(), d->order.end(), (PetscInt64)0);
    for (PetscInt i = 0; i < nrows; ++i) std::sort(d->order.begin() + (*ci)[i], d->order.begin() + (*ci)[i + 1], [&](PetscInt64 x, PetscInt64 y) { return unsorted[x] < unsorted[y]; });
    for (PetscInt64 p = 0; p < G.nnz; ++p) (*cj)[p] = unsorted[d->order[p]];
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* C's host structure with zero values: rows preallocated to their exact lengths, then every column index at once
   (the rows of cj are sorted; MatSeqAIJSetPreallocationCSR() would insert the entries one by one through
   MatSetValues(): a search per entry)                                                                       */
PetscErrorCode ResultStructure(Mat C, PetscInt m, std::vector<PetscInt> &ci, std::vector<PetscInt> &cj)
{
  std::vector<PetscInt> lengths;
  PetscScalar          *ca;

  PetscFunctionBegin;
  FusedKSPCallCXX(lengths.resize(m));
  for (PetscInt i = 0; i < m; ++i) lengths[i] = ci[i + 1] - ci[i];
  PetscCall(MatSeqAIJSetPreallocation(C, 0, lengths.data()));
  if (!cj.empty()) PetscCall(MatSeqAIJSetColumnIndices(C, cj.data()));
  PetscCall(MatSeqAIJGetArrayWrite(C, &ca));
  PetscCall(PetscArrayzero(ca, cj.size()));
  PetscCall(MatSeqAIJRestoreArrayWrite(C, &ca));
  PetscCall(MatAssemblyBegin(C, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(C, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode ProductSymbolic(Mat C)
{
  Mat_Product          *product = C->product;
  const MatProductType  type    = product->type;
  Mat                   A = product->A, B = product->B, mats[3];
  DeviceProduct        *d;
  PetscInt              m, n;
  std::vector<PetscInt> ci, cj;

  PetscFunctionBegin;
  FusedKSPCallCXX(d = new DeviceProduct());
  d->be                = ActiveBackend();
  product->data        = d;
  product->destroy     = DeviceProductDestroy;
  d->two               = type == MATPRODUCT_PtAP;
  d->ops[0].transposed = type == MATPRODUCT_AtB ? PETSC_TRUE : PETSC_FALSE;
  d->ops[2].transposed = PETSC_TRUE;
  Operands(C, mats);
  for (int i = 0; i < 3; ++i)
    if (mats[i]) PetscCall(OperandRefresh(d->be, mats[i], &d->ops[i], PETSC_TRUE));
  PetscCall(PetscLogEventBegin(events.spgemm, C, 0, 0, 0));
  d->first.A = d->ops[0].csr;
  d->first.B = d->ops[1].csr;
  PetscCall(d->be->spgemm_symbolic(&d->first));
  if (d->two) {
    d->second.A = d->ops[2].csr;
    d->second.B = CSRView{d->first.A.nrows, d->first.B.ncols, d->first.rowptr, d->first.colidx, d->first.vals, d->first.nnz};
    PetscCall(d->be->spgemm_symbolic(&d->second));
  }
  m = d->two ? d->second.A.nrows : d->first.A.nrows;
  n = d->two ? d->second.B.ncols : d->first.B.ncols;
  PetscCall(PatternToHost(d, d->two ? d->second : d->first, m, &ci, &cj));
  PetscCall(PetscLogEventEnd(events.spgemm, C, 0, 0, 0));
  PetscCall(MatSetSizes(C, m, n, m, n));
  if (type == MATPRODUCT_AB)
    PetscCall(MatSetBlockSizesFromMats(C, A, B));
  else if (type == MATPRODUCT_AtB)
    PetscCall(MatSetBlockSizes(C, A->cmap->bs, B->cmap->bs));
  else
    PetscCall(MatSetBlockSizes(C, B->cmap->bs, B->cmap->bs));
  PetscCall(MatSetType(C, MATSEQAIJFUSED));
  PetscCall(ResultStructure(C, m, ci, cj));
  PetscCall(PetscInfo(C, "%s of a %" PetscInt_FMT " x %" PetscInt_FMT " product (%" PetscInt64_FMT " entries) on the %s backend\n", MatProductTypes[type], m, n, (PetscInt64)cj.size(), d->be->name));
  C->ops->productnumeric = ProductNumeric;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode IsSeqAIJ(Mat M, PetscBool *seqaij)
{
  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompareAny((PetscObject)M, seqaij, MATSEQAIJ, MATSEQAIJFUSED, ""));
  if (*seqaij && M->structure_only) *seqaij = PETSC_FALSE;
  PetscFunctionReturn(PETSC_SUCCESS);
}
} // namespace

/*
   MatProductSetFromOptions_SeqAIJFusedBackend - see aijfused_private.hpp
*/
PetscErrorCode MatProductSetFromOptions_SeqAIJFusedBackend(Mat C, PetscBool *done)
{
  Mat_Product   *product = C->product;
  const Backend *be      = ActiveBackend();
  PetscBool      fused, seqaij = PETSC_TRUE, cpu = PETSC_FALSE, any;
  const char    *name = "-mat_product_algorithm_backend_cpu";

  PetscFunctionBegin;
  *done = PETSC_FALSE;
  if (product->type != MATPRODUCT_AB && product->type != MATPRODUCT_AtB && product->type != MATPRODUCT_PtAP) PetscFunctionReturn(PETSC_SUCCESS);
  if (!be || be->host_memory || !be->spgemm_symbolic) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(MatIsSeqAIJFused(product->A, &fused));
  if (!fused) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(IsSeqAIJ(product->B, &seqaij));
  PetscCall(IsSeqAIJ(product->A, &any));
  if (!seqaij || !any) {
    PetscCall(PetscInfo(C, "%s on the host: an operand is not an assembled MATSEQAIJ with values\n", MatProductTypes[product->type]));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  if (product->api_user) name = product->type == MATPRODUCT_AB ? "-matmatmult_backend_cpu" : (product->type == MATPRODUCT_AtB ? "-mattransposematmult_backend_cpu" : "-matptap_backend_cpu");
  PetscOptionsBegin(PetscObjectComm((PetscObject)C), ((PetscObject)C)->prefix, "MatProduct of a MATSEQAIJFUSED on its backend", "Mat");
  PetscCall(PetscOptionsBool(name, "Use PETSc's host product instead of the backend's (sparse products of aijfused matrices on a GPU)", "MatProductSetFromOptions", cpu, &cpu, nullptr));
  PetscOptionsEnd();
  if (cpu) {
    PetscCall(PetscInfo(C, "%s on the host: %s\n", MatProductTypes[product->type], name));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  C->ops->productsymbolic = ProductSymbolic;
  *done                   = PETSC_TRUE;
  PetscFunctionReturn(PETSC_SUCCESS);
}
} // namespace fusedksp
