/* Host backend: the BLAS-1 contract (backend/blas.hpp) as plain loops, the reference */
#include "backend/blas.hpp"
#include "backend/maxpy_scale.hpp"
#include "backend/host/host_reduce.hpp"

namespace fusedksp
{
namespace host
{

/* See BlasKernels::axpy */
static PetscErrorCode AXPY(PetscInt n, PetscScalar a, const PetscScalar *x, PetscScalar *y)
{
  PetscFunctionBegin;
  for (PetscInt i = 0; i < n; ++i) y[i] += a * x[i];
  counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See BlasKernels::aypx */
static PetscErrorCode AYPX(PetscInt n, PetscScalar b, const PetscScalar *x, PetscScalar *y)
{
  PetscFunctionBegin;
  for (PetscInt i = 0; i < n; ++i) y[i] = x[i] + b * y[i];
  counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See BlasKernels::set */
static PetscErrorCode Set(PetscInt n, PetscScalar a, PetscScalar *x)
{
  PetscFunctionBegin;
  for (PetscInt i = 0; i < n; ++i) x[i] = a;
  counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See BlasKernels::scale */
static PetscErrorCode Scale(PetscInt n, PetscScalar a, PetscScalar *x)
{
  PetscFunctionBegin;
  if (a == (PetscScalar)0.0)
    PetscCall(Set(n, 0.0, x));
  else {
    for (PetscInt i = 0; i < n; ++i) x[i] *= a;
    counters.launches++;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See BlasKernels::axpby */
static PetscErrorCode AXPBY(PetscInt n, PetscScalar a, PetscScalar b, const PetscScalar *x, PetscScalar *y)
{
  PetscFunctionBegin;
  if (a == (PetscScalar)0.0)
    PetscCall(Scale(n, b, y));
  else {
    if (b == (PetscScalar)0.0)
      for (PetscInt i = 0; i < n; ++i) y[i] = a * x[i];
    else
      for (PetscInt i = 0; i < n; ++i) y[i] = a * x[i] + b * y[i];
    counters.launches++;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See BlasKernels::axpbypcz */
static PetscErrorCode AXPBYPCZ(PetscInt n, PetscScalar a, PetscScalar b, PetscScalar c, const PetscScalar *x, const PetscScalar *y, PetscScalar *z)
{
  PetscFunctionBegin;
  if (c == (PetscScalar)0.0)
    for (PetscInt i = 0; i < n; ++i) z[i] = a * x[i] + b * y[i];
  else
    for (PetscInt i = 0; i < n; ++i) z[i] = a * x[i] + b * y[i] + c * z[i];
  counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See BlasKernels::waxpy */
static PetscErrorCode WAXPY(PetscInt n, PetscScalar a, const PetscScalar *x, const PetscScalar *y, PetscScalar *w)
{
  PetscFunctionBegin;
  for (PetscInt i = 0; i < n; ++i) w[i] = a * x[i] + y[i];
  counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See BlasKernels::copy */
static PetscErrorCode Copy(PetscInt n, const PetscScalar *x, PetscScalar *y)
{
  PetscFunctionBegin;
  for (PetscInt i = 0; i < n; ++i) y[i] = x[i];
  counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See BlasKernels::swap */
static PetscErrorCode Swap(PetscInt n, PetscScalar *x, PetscScalar *y)
{
  PetscFunctionBegin;
  for (PetscInt i = 0; i < n; ++i) {
    const PetscScalar t = x[i];
    x[i]                = y[i];
    y[i]                = t;
  }
  counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See BlasKernels::pointwise_mult */
static PetscErrorCode PointwiseMult(PetscInt n, const PetscScalar *x, const PetscScalar *y, PetscScalar *w)
{
  PetscFunctionBegin;
  for (PetscInt i = 0; i < n; ++i) w[i] = x[i] * y[i];
  counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See BlasKernels::pointwise_divide */
static PetscErrorCode PointwiseDivide(PetscInt n, const PetscScalar *x, const PetscScalar *y, PetscScalar *w)
{
  PetscFunctionBegin;
  for (PetscInt i = 0; i < n; ++i) {
    const PetscScalar xi = x[i], yi = y[i];
    w[i] = yi == (PetscScalar)0.0 ? (xi == (PetscScalar)0.0 ? 1.0 : 0.0) : xi / yi;
  }
  counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See BlasKernels::dot */
static PetscErrorCode Dot(PetscInt n, const PetscScalar *x, const PetscScalar *y, PetscScalar *val)
{
  PetscFunctionBegin;
  BlockedReduce<1>(n, val, [=](PetscInt i, PetscScalar *part) { part[0] += x[i] * y[i]; });
  counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See BlasKernels::norm2 */
static PetscErrorCode Norm2(PetscInt n, const PetscScalar *x, PetscReal *val)
{
  PetscScalar sum;

  PetscFunctionBegin;
  BlockedReduce<1>(n, &sum, [=](PetscInt i, PetscScalar *part) { part[0] += x[i] * x[i]; });
  *val = PetscRealPart(sum);
  counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See BlasKernels::norm1 */
static PetscErrorCode Norm1(PetscInt n, const PetscScalar *x, PetscReal *val)
{
  PetscScalar sum;

  PetscFunctionBegin;
  BlockedReduce<1>(n, &sum, [=](PetscInt i, PetscScalar *part) { part[0] += PetscAbsScalar(x[i]); });
  *val = PetscRealPart(sum);
  counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See BlasKernels::norminf: a NaN entry wins over every number */
static PetscErrorCode NormInf(PetscInt n, const PetscScalar *x, PetscReal *val)
{
  PetscReal m = 0.0;

  PetscFunctionBegin;
  for (PetscInt i = 0; i < n; ++i) {
    const PetscReal a = PetscAbsScalar(x[i]);
    if (a > m || a != a) m = a;
    if (m != m) break;
  }
  *val = m;
  counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

#include "backend/blas_table.hpp"

} // namespace host

/*
   HostBlas - the reference implementation of the BLAS-1 contract: plain loops over host memory,
   reductions in the chunked order of the device (BlockedReduce)
*/
const BlasKernels *HostBlas()
{
  static const BlasKernels blas = host::BlasTable("host", MAXPYByScale<host::MAXPYScale>);

  return &blas;
}

} // namespace fusedksp
