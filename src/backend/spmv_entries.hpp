/*
   Backend::spmv_dots, spmv_sell_dots and spmv_update of a backend from its ProductRows(csr, sell, f, wr, in, out, ndots,
   specs, dots): the sparse product of exactly one of a CSR and a SELL-P matrix, each row's sum stored as the RowUpdate
   f, with ndots dot products of the result.  Included inside the namespace of the backend (host_spmv.cxx,
   kokkos_spmv.cxx, cuda_spmv.cu), after its ProductRows(), once per backend namespace, so it has no include guard.
*/

/* See Backend::spmv_dots: the RowUpdate {wl} */
PetscErrorCode SpMVDots(const CSRView *A, const PetscScalar *wl, const PetscScalar *wr, const PetscScalar *in, PetscScalar *out, int ndots, const DotSpec *specs, PetscScalar *dots)
{
  RowUpdate f;

  PetscFunctionBegin;
  f.wl = wl;
  PetscCall(ProductRows(A, nullptr, f, wr, in, out, ndots, specs, dots));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::spmv_sell_dots */
PetscErrorCode SpMVSELLDots(const SELLView *A, const PetscScalar *wl, const PetscScalar *wr, const PetscScalar *in, PetscScalar *out, int ndots, const DotSpec *specs, PetscScalar *dots)
{
  RowUpdate f;

  PetscFunctionBegin;
  f.wl = wl;
  PetscCall(ProductRows(nullptr, A, f, wr, in, out, ndots, specs, dots));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::spmv_update */
PetscErrorCode SpMVUpdate(const CSRView *csr, const SELLView *sell, const RowUpdate *f, const PetscScalar *in, PetscScalar *out)
{
  PetscFunctionBegin;
  PetscCall(CheckRowUpdate(csr, sell, f, in, out));
  PetscCall(ProductRows(csr, sell, *f, nullptr, in, out, 0, nullptr, nullptr));
  PetscFunctionReturn(PETSC_SUCCESS);
}
