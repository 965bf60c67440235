/*
   The BLAS-1 contract: the standard Vec operations on raw arrays, one implementation per backend
   (src/backend/host/host_blas.cxx: plain loops, the reference; src/backend/cuda/cuda_blas.cu:
   CUDA kernels on the backend's stream).  src/vec/vecfused_ops.cxx runs PETSc's VecAXPY(),
   VecDot(), VecNorm() ... of fused vectors with them, so that PETSc's classical solvers keep
   their vectors on the device.

   Conventions: n is the local length (n == 0 is allowed: nothing is launched, reductions return
   0); arrays live in the backend's memory space; inputs come first, the output array last.  Where
   PETSc's VECSEQ operation does not read an operand multiplied by a zero coefficient, neither do
   these (so NaN or Inf there does not propagate): see axpby, axpbypcz, scale.  Reductions return
   the LOCAL value (this MPI rank's part); the caller does the global reduction.  They are computed
   like the fused dot products of backend/backend.hpp (contiguous chunks, one partial sum per chunk,
   partials summed in chunk order): one kernel launch and one device->host copy each on the CUDA
   backend.  PetscScalar is real (the CUDA backend requires real double precision): dot == tdot.
*/
#pragma once

#include <petscsys.h>

namespace fusedksp
{

struct BlasKernels {
  const char *name; /* the backend's name: "host", "cuda" or "kokkos" */

  /* y := y + a x */
  PetscErrorCode (*axpy)(PetscInt n, PetscScalar a, const PetscScalar *x, PetscScalar *y);
  /* y := x + b y */
  PetscErrorCode (*aypx)(PetscInt n, PetscScalar b, const PetscScalar *x, PetscScalar *y);
  /* y := a x + b y; b == 0: y := a x (y not read); a == 0: y := b y (x not read, see scale) */
  PetscErrorCode (*axpby)(PetscInt n, PetscScalar a, PetscScalar b, const PetscScalar *x, PetscScalar *y);
  /* z := a x + b y + c z; c == 0: z := a x + b y (z not read).  x, y, z distinct */
  PetscErrorCode (*axpbypcz)(PetscInt n, PetscScalar a, PetscScalar b, PetscScalar c, const PetscScalar *x, const PetscScalar *y, PetscScalar *z);
  /* w := a x + y (w distinct from x and y; x may equal y) */
  PetscErrorCode (*waxpy)(PetscInt n, PetscScalar a, const PetscScalar *x, const PetscScalar *y, PetscScalar *w);
  /* y := y + sum_{j < nv} alpha[j] X[j] (alpha and the pointer array X on the host; X[j] != y) */
  PetscErrorCode (*maxpy)(PetscInt n, PetscInt nv, const PetscScalar *alpha, const PetscScalar *const *X, PetscScalar *y);
  /* x := a x; a == 0: x := 0 (x not read) */
  PetscErrorCode (*scale)(PetscInt n, PetscScalar a, PetscScalar *x);
  /* x := a */
  PetscErrorCode (*set)(PetscInt n, PetscScalar a, PetscScalar *x);
  /* y := x (x != y) */
  PetscErrorCode (*copy)(PetscInt n, const PetscScalar *x, PetscScalar *y);
  /* x <-> y */
  PetscErrorCode (*swap)(PetscInt n, PetscScalar *x, PetscScalar *y);
  /* w := x .* y (w may equal x or y) */
  PetscErrorCode (*pointwise_mult)(PetscInt n, const PetscScalar *x, const PetscScalar *y, PetscScalar *w);
  /* w := x ./ y, with PETSc's convention for y_i == 0: w_i = (x_i == 0 ? 1 : 0) (w may equal x or y) */
  PetscErrorCode (*pointwise_divide)(PetscInt n, const PetscScalar *x, const PetscScalar *y, PetscScalar *w);
  /* *val := sum_i x_i y_i (local) */
  PetscErrorCode (*dot)(PetscInt n, const PetscScalar *x, const PetscScalar *y, PetscScalar *val);
  /* vals[j] := sum_i x_i Y[j]_i for j < nv (local; the pointer array Y on the host; the chunks of
     the multi-dot, FUSED_MDOT_BLOCKS): one device->host copy for all nv values                 */
  PetscErrorCode (*mdot)(PetscInt n, PetscInt nv, const PetscScalar *x, const PetscScalar *const *Y, PetscScalar *vals);
  /* *val := sum_i x_i^2 (local sum of squares; the caller takes the square root after the global sum) */
  PetscErrorCode (*norm2)(PetscInt n, const PetscScalar *x, PetscReal *val);
  /* *val := sum_i |x_i| (local) */
  PetscErrorCode (*norm1)(PetscInt n, const PetscScalar *x, PetscReal *val);
  /* *val := max_i |x_i| (local; 0 when n == 0, NaN when an entry is NaN) */
  PetscErrorCode (*norminf)(PetscInt n, const PetscScalar *x, PetscReal *val);
};

/* BlasKernels::mdot of a backend: its Gram-Schmidt multi-dot (Backend::mdot) with x as its vector */
using GramSchmidtMDotFn = PetscErrorCode (*)(PetscInt, PetscInt, const PetscScalar *const *, const PetscScalar *, PetscBool, PetscScalar *);
template <GramSchmidtMDotFn mdot> PetscErrorCode MDotByGramSchmidt(PetscInt n, PetscInt nv, const PetscScalar *x, const PetscScalar *const *Y, PetscScalar *vals)
{
  return mdot(n, nv, Y, x, PETSC_FALSE, vals);
}

/* The kernels of each backend compiled into the library */
const BlasKernels *HostBlas();
#if defined(FUSEDKSP_HAVE_KOKKOS)
const BlasKernels *KokkosBlas();
#endif
#if defined(FUSEDKSP_HAVE_CUDA)
const BlasKernels *CUDABlas(); /* NULL when no usable GPU is present (as CUDABackend()) */
#endif

} // namespace fusedksp
