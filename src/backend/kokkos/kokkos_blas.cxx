/* Kokkos backend: the BLAS-1 contract (backend/blas.hpp), each operation one parallel loop */
#include "backend/blas.hpp"
#include "backend/maxpy_scale.hpp"
#include "backend/kokkos/kokkos_reduce.hpp"

namespace fusedksp
{
namespace kokkos
{

/* See BlasKernels::axpy */
static PetscErrorCode AXPY(PetscInt n, PetscScalar a, const PetscScalar *x, PetscScalar *y)
{
  PetscFunctionBegin;
  ForEach(
      "fusedksp::axpy", n, KOKKOS_LAMBDA(const PetscInt i) { y[i] += a * x[i]; });
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See BlasKernels::aypx */
static PetscErrorCode AYPX(PetscInt n, PetscScalar b, const PetscScalar *x, PetscScalar *y)
{
  PetscFunctionBegin;
  ForEach(
      "fusedksp::aypx", n, KOKKOS_LAMBDA(const PetscInt i) { y[i] = x[i] + b * y[i]; });
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See BlasKernels::set */
static PetscErrorCode Set(PetscInt n, PetscScalar a, PetscScalar *x)
{
  PetscFunctionBegin;
  ForEach(
      "fusedksp::set", n, KOKKOS_LAMBDA(const PetscInt i) { x[i] = a; });
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See BlasKernels::scale */
static PetscErrorCode Scale(PetscInt n, PetscScalar a, PetscScalar *x)
{
  PetscFunctionBegin;
  if (a == (PetscScalar)0.0)
    PetscCall(Set(n, 0.0, x));
  else
    ForEach(
        "fusedksp::scale", n, KOKKOS_LAMBDA(const PetscInt i) { x[i] *= a; });
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See BlasKernels::axpby */
static PetscErrorCode AXPBY(PetscInt n, PetscScalar a, PetscScalar b, const PetscScalar *x, PetscScalar *y)
{
  PetscFunctionBegin;
  if (a == (PetscScalar)0.0)
    PetscCall(Scale(n, b, y));
  else if (b == (PetscScalar)0.0)
    ForEach(
        "fusedksp::axpby", n, KOKKOS_LAMBDA(const PetscInt i) { y[i] = a * x[i]; });
  else
    ForEach(
        "fusedksp::axpby", n, KOKKOS_LAMBDA(const PetscInt i) { y[i] = a * x[i] + b * y[i]; });
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See BlasKernels::axpbypcz */
static PetscErrorCode AXPBYPCZ(PetscInt n, PetscScalar a, PetscScalar b, PetscScalar c, const PetscScalar *x, const PetscScalar *y, PetscScalar *z)
{
  PetscFunctionBegin;
  if (c == (PetscScalar)0.0)
    ForEach(
        "fusedksp::axpbypcz", n, KOKKOS_LAMBDA(const PetscInt i) { z[i] = a * x[i] + b * y[i]; });
  else
    ForEach(
        "fusedksp::axpbypcz", n, KOKKOS_LAMBDA(const PetscInt i) { z[i] = a * x[i] + b * y[i] + c * z[i]; });
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See BlasKernels::waxpy */
static PetscErrorCode WAXPY(PetscInt n, PetscScalar a, const PetscScalar *x, const PetscScalar *y, PetscScalar *w)
{
  PetscFunctionBegin;
  ForEach(
      "fusedksp::waxpy", n, KOKKOS_LAMBDA(const PetscInt i) { w[i] = a * x[i] + y[i]; });
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See BlasKernels::copy */
static PetscErrorCode Copy(PetscInt n, const PetscScalar *x, PetscScalar *y)
{
  PetscFunctionBegin;
  ForEach(
      "fusedksp::copy", n, KOKKOS_LAMBDA(const PetscInt i) { y[i] = x[i]; });
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See BlasKernels::swap */
static PetscErrorCode Swap(PetscInt n, PetscScalar *x, PetscScalar *y)
{
  PetscFunctionBegin;
  ForEach(
      "fusedksp::swap", n, KOKKOS_LAMBDA(const PetscInt i) {
        const PetscScalar t = x[i];
        x[i]                = y[i];
        y[i]                = t;
      });
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See BlasKernels::pointwise_mult */
static PetscErrorCode PointwiseMult(PetscInt n, const PetscScalar *x, const PetscScalar *y, PetscScalar *w)
{
  PetscFunctionBegin;
  ForEach(
      "fusedksp::pointwise_mult", n, KOKKOS_LAMBDA(const PetscInt i) { w[i] = x[i] * y[i]; });
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See BlasKernels::pointwise_divide */
static PetscErrorCode PointwiseDivide(PetscInt n, const PetscScalar *x, const PetscScalar *y, PetscScalar *w)
{
  PetscFunctionBegin;
  ForEach(
      "fusedksp::pointwise_divide", n, KOKKOS_LAMBDA(const PetscInt i) {
        const PetscScalar xi = x[i], yi = y[i];
        w[i] = yi == (PetscScalar)0.0 ? (xi == (PetscScalar)0.0 ? 1.0 : 0.0) : xi / yi;
      });
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See BlasKernels::dot */
static PetscErrorCode Dot(PetscInt n, const PetscScalar *x, const PetscScalar *y, PetscScalar *val)
{
  PetscFunctionBegin;
  PetscCall(ChunkedReduce<1>(
      "fusedksp::dot", n, 1, val, KOKKOS_LAMBDA(const PetscInt i, PetscScalar *KOKKOS_RESTRICT part) { part[0] += x[i] * y[i]; }));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* *val = the real part of sum[0] */
static PetscErrorCode RealResult(const PetscScalar *sum, PetscReal *val)
{
  *val = PetscRealPart(sum[0]);
  return PETSC_SUCCESS;
}

/* See BlasKernels::norm2 */
static PetscErrorCode Norm2(PetscInt n, const PetscScalar *x, PetscReal *val)
{
  PetscFunctionBegin;
  PetscCall(ChunkedSums<1>(
      "fusedksp::norm2", n, 1, KOKKOS_LAMBDA(const PetscInt i, PetscScalar *KOKKOS_RESTRICT part) { part[0] += x[i] * x[i]; }, [val](const PetscScalar *sum) { return RealResult(sum, val); }));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See BlasKernels::norm1 */
static PetscErrorCode Norm1(PetscInt n, const PetscScalar *x, PetscReal *val)
{
  PetscFunctionBegin;
  PetscCall(ChunkedSums<1>(
      "fusedksp::norm1", n, 1, KOKKOS_LAMBDA(const PetscInt i, PetscScalar *KOKKOS_RESTRICT part) { part[0] += Kokkos::fabs(x[i]); }, [val](const PetscScalar *sum) { return RealResult(sum, val); }));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The larger of two absolute values where a NaN wins over every number */
KOKKOS_INLINE_FUNCTION PetscScalar MaxNaN(PetscScalar m, PetscScalar a)
{
  return (a > m || a != a || m != m) ? (m != m ? m : a) : m;
}

/* MaxNaN() as the join of a reduction's partials */
struct MaxNaNJoin {
  KOKKOS_INLINE_FUNCTION static PetscScalar Join(PetscScalar a, PetscScalar b)
  {
    return MaxNaN(a, b);
  }
};

/* See BlasKernels::norminf: the largest entry of each chunk, then of the chunks; a NaN entry wins */
static PetscErrorCode NormInf(PetscInt n, const PetscScalar *x, PetscReal *val)
{
  PetscFunctionBegin;
  PetscCall(ChunkPartials<1, MaxNaNJoin>(
      "fusedksp::norminf", n, ReduceChunkLimit(n), 1, KOKKOS_LAMBDA(const PetscInt i, PetscScalar *KOKKOS_RESTRICT p) { p[0] = MaxNaN(p[0], Kokkos::fabs(x[i])); },
      [val](PetscInt nchunks, const PetscScalar *part) {
        PetscScalar m = 0;

        for (PetscInt c = 0; c < nchunks; ++c) m = MaxNaN(m, part[c]);
        return RealResult(&m, val);
      }));
  PetscFunctionReturn(PETSC_SUCCESS);
}

#include "backend/blas_table.hpp"

} // namespace kokkos

/*
   KokkosBlas - the BLAS-1 contract on the Kokkos backend: one parallel loop per operation, reductions in
   the chunked order of the contract (the host reference's order)
*/
const BlasKernels *KokkosBlas()
{
  static const BlasKernels blas = kokkos::BlasTable("kokkos", MAXPYByScale<kokkos::MAXPYScale>);

  return &blas;
}

} // namespace fusedksp
