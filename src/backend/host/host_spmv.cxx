/* Host backend: sparse matrix-vector products (CSR, SELL-P) fused with dot products of the result */
#include "backend/host/host_reduce.hpp"

namespace fusedksp
{
namespace host
{

/* out[i] = the RowUpdate f of the row's sum, and its terms of the dot products (the end of a row of every sparse product) */
static inline void StoreRow(PetscInt i, PetscScalar sum, const RowUpdate &f, const PetscScalar *in, PetscScalar *out, int ndots, const DotSpec *specs, PetscScalar *part)
{
  const PetscScalar o = RowUpdateValue(f, i, sum);

  out[i] = o;
  for (int d = 0; d < ndots; ++d) part[d] += DotTerm(specs[d], i, in, o);
}

/* An operation that honours the reduce target (nothing once its stop flag is set): body(i, part) for
   the n rows in BlockedReduce's chunks, its ndots sums to the target or to dots                    */
template <class Body> static PetscErrorCode ReduceRows(PetscInt n, int ndots, PetscScalar *dots, Body &&body)
{
  PetscScalar all[FUSED_MAX_DOTS];

  PetscFunctionBegin;
  counters.launches++;
  if (TargetStopped()) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCheck(ndots >= 0 && ndots <= FUSED_MAX_DOTS, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "At most %d fused dot products, asked for %d", FUSED_MAX_DOTS, ndots);
  BlockedReduce<FUSED_MAX_DOTS>(n, all, body);
  StoreResults(ndots, all, dots);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The sparse product of exactly one of csr and sell (the reference loop over its layout), each row's sum stored as the
   RowUpdate f, with the dot products of the result */
static PetscErrorCode ProductRows(const CSRView *csr, const SELLView *sell, const RowUpdate &f, const PetscScalar *wr, const PetscScalar *in, PetscScalar *out, int ndots, const DotSpec *specs, PetscScalar *dots)
{
  PetscFunctionBegin;
  PetscCheck(!csr != !sell, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONG, "A sparse product takes exactly one of a CSR and a SELL-P matrix");
  if (csr) {
    const CSRView A = *csr;

    PetscCall(ReduceRows(A.nrows, ndots, dots, [=](PetscInt i, PetscScalar *part) {
      PetscScalar sum = 0;
      for (PetscInt k = A.rowptr[i]; k < A.rowptr[i + 1]; ++k) {
        const PetscInt c = A.colidx[k];
        sum += A.vals[k] * (wr ? wr[c] * in[c] : in[c]);
      }
      StoreRow(i, sum, f, in, out, ndots, specs, part);
    }));
  } else {
    const SELLView   A = *sell;
    const PetscInt64 T = A.threads, H = FUSED_SELL_HEIGHT;

    PetscCheck(T == 1 || T == 2 || T == 4 || T == 8, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "SELL-P threads per row must be 1, 2, 4 or 8, not %d", A.threads);
    PetscCall(ReduceRows(A.nrows, ndots, dots, [=](PetscInt i, PetscScalar *part) {
      const PetscInt64 s = i / H, begin = A.sliceptr[s], len = (A.sliceptr[s + 1] - begin) / (H * T);
      PetscScalar      sum = 0;
      for (PetscInt64 j = 0; j < len; ++j)
        for (PetscInt64 t = 0; t < T; ++t) {
          const PetscInt64 k = begin + (j * H + i % H) * T + t;
          const PetscInt   c = A.colidx[k];
          if (c >= 0) sum += A.vals[k] * (wr ? wr[c] * in[c] : in[c]);
        }
      StoreRow(i, sum, f, in, out, ndots, specs, part);
    }));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

#include "backend/spmv_entries.hpp"

/* See Backend::dots */
PetscErrorCode Dots(PetscInt n, const PetscScalar *in, const PetscScalar *out, int ndots, const DotSpec *specs, PetscScalar *dots)
{
  PetscFunctionBegin;
  PetscCall(ReduceRows(n, ndots, dots, [=](PetscInt i, PetscScalar *part) {
    for (int d = 0; d < ndots; ++d) part[d] += DotTerm(specs[d], i, in, out[i]);
  }));
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace host
} // namespace fusedksp
