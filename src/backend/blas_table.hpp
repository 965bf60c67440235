/*
   The BlasKernels table (blas.hpp) of a backend, from its BLAS-1 functions by their names (AXPY, AYPX, ...,
   NormInf) and its Gram-Schmidt multi-dot MDot; maxpy: the backend's own, or MAXPYByScale() of its
   MAXPYScale.  Included inside the namespace of the backend (host_blas.cxx, kokkos_blas.cxx, cuda_blas.cu),
   after its functions, once per backend namespace, so it has no include guard.
*/
static BlasKernels BlasTable(const char *name, PetscErrorCode (*maxpy)(PetscInt, PetscInt, const PetscScalar *, const PetscScalar *const *, PetscScalar *))
{
  return BlasKernels{name, AXPY, AYPX, AXPBY, AXPBYPCZ, WAXPY, maxpy, Scale, Set, Copy, Swap, PointwiseMult, PointwiseDivide, Dot, MDotByGramSchmidt<MDot>, Norm2, Norm1, NormInf};
}
