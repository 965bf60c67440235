/*
   The standard Vec operations of VECSEQFUSED / VECMPIFUSED on the device.

   VecFusedInstallDeviceOps() replaces the VecOps entries of the BLAS-1 operations (axpy ... norm,
   the *_local variants of the split reductions) with the functions below.  Each runs the kernel of
   the active backend's BlasKernels (backend/blas.hpp) on the backend arrays (VecFusedGetArray)
   when every vector operand is fused and the active backend is a device backend; otherwise it
   calls the VECSEQ / VECMPI operation the vector had before (the host backend therefore runs
   exactly PETSc's host operations, and a plain VECSEQ operand is still accepted).  Dot products
   and norms of a VECMPIFUSED vector pack their local values into ONE MPIU_Allreduce() on the
   vector's communicator; the *_local variants do no communication.

   The saved host operations are kept in one table per kind (VECSEQ, VECMPI): PETSc gives every
   vector of a kind the same operations (up to the -vec_mdot_use_gemv / -vec_maxpy_use_gemv
   variants, which compute the same values), so no per-vector state and no destroy hook are needed.
*/
#include "vec/vecfused.hpp"
#include "backend/blas.hpp"
#include <petsc/private/vecimpl.h>
#include <cstddef>
#include <vector>

namespace fusedksp
{
namespace
{

enum Kind { KIND_SEQ = 0, KIND_MPI = 1 };

_VecOps host_ops[2]; /* the VECSEQ and VECMPI operations, saved at installation */

/* The access modes, short */
constexpr PetscMemoryAccessMode READ = PETSC_MEMORY_ACCESS_READ, WRITE = PETSC_MEMORY_ACCESS_WRITE, READ_WRITE = PETSC_MEMORY_ACCESS_READ_WRITE;

/* The device kernels for these operands, or NULL (then the host operation runs): NULL on the
   host backend and when any operand is not a fused vector of the active backend             */
template <std::size_t N> PetscErrorCode DeviceKernels(const Vec (&vecs)[N], const BlasKernels **blas)
{
  PetscFunctionBegin;
  *blas = nullptr;
  if (ActiveBackend() == HostBackend()) PetscFunctionReturn(PETSC_SUCCESS);
  for (Vec v : vecs) {
    PetscBool fused;

    PetscCall(VecIsFused(v, &fused));
    if (!fused) PetscFunctionReturn(PETSC_SUCCESS);
  }
  *blas = BackendBlas(ActiveBackend());
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* DeviceKernels() for x and the vectors Y[0..nv) */
PetscErrorCode DeviceKernelsMulti(Vec x, PetscInt nv, const Vec Y[], const BlasKernels **blas)
{
  PetscFunctionBegin;
  PetscCall(DeviceKernels({x}, blas));
  for (PetscInt j = 0; j < nv && *blas; ++j) PetscCall(DeviceKernels({Y[j]}, blas));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The backend arrays of the vectors Y[0..nv), read-only */
PetscErrorCode GetArraysRead(PetscInt nv, const Vec Y[], std::vector<const PetscScalar *> &arrays)
{
  PetscFunctionBegin;
  FusedKSPCallCXX(arrays.resize(nv));
  for (PetscInt j = 0; j < nv; ++j) {
    PetscScalar *a;

    PetscCall(VecFusedGetArray(Y[j], READ, &a));
    arrays[j] = a;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode RestoreArraysRead(PetscInt nv, const Vec Y[], std::vector<const PetscScalar *> &arrays)
{
  PetscFunctionBegin;
  for (PetscInt j = 0; j < nv; ++j) {
    PetscScalar *a = const_cast<PetscScalar *>(arrays[j]);

    PetscCall(VecFusedRestoreArray(Y[j], READ, &a));
  }
  arrays.clear();
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Flops of n-term reductions: 2n - 1 (dot), n - 1 (sum), never negative */
inline PetscLogDouble ReductionFlops(PetscInt n, PetscLogDouble per_entry)
{
  return PetscMax(per_entry * n - 1.0, 0.0);
}

/* The form of the operations below: `host()` (the saved host operation) when DeviceKernels() finds no
   kernels for vecs; else kernel(blas, a) on their backend arrays a[], got in the order of vecs with
   modes (a vector written after it was read gets the array that read synchronized) and restored in
   the same order, then `flops` logged as GPU flops                                                 */
template <std::size_t N, class Host, class Kernel> PetscErrorCode RunOp(const Vec (&vecs)[N], const PetscMemoryAccessMode (&modes)[N], PetscLogDouble flops, Host host, Kernel kernel)
{
  const BlasKernels *blas;
  PetscScalar       *a[N];

  PetscFunctionBegin;
  PetscCall(DeviceKernels(vecs, &blas));
  if (!blas) {
    PetscCall(host());
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  for (std::size_t i = 0; i < N; ++i) PetscCall(VecFusedGetArray(vecs[i], modes[i], &a[i]));
  PetscCall(kernel(blas, a));
  for (std::size_t i = 0; i < N; ++i) PetscCall(VecFusedRestoreArray(vecs[i], modes[i], &a[i]));
  PetscCall(PetscLogGpuFlops(flops));
  PetscFunctionReturn(PETSC_SUCCESS);
}

template <Kind K> PetscErrorCode VecAXPY_Fused(Vec y, PetscScalar a, Vec x)
{
  PetscFunctionBegin;
  PetscCall(RunOp(
      {x, y}, {READ, READ_WRITE}, 2.0 * y->map->n, [&] { return host_ops[K].axpy(y, a, x); }, [&](const BlasKernels *blas, PetscScalar **v) { return blas->axpy(y->map->n, a, v[0], v[1]); }));
  PetscFunctionReturn(PETSC_SUCCESS);
}

template <Kind K> PetscErrorCode VecAYPX_Fused(Vec y, PetscScalar b, Vec x)
{
  PetscFunctionBegin;
  PetscCall(RunOp(
      {x, y}, {READ, READ_WRITE}, 2.0 * y->map->n, [&] { return host_ops[K].aypx(y, b, x); }, [&](const BlasKernels *blas, PetscScalar **v) { return blas->aypx(y->map->n, b, v[0], v[1]); }));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* y = a x + b y; y is not read when b == 0 and x is not read when a == 0 (see BlasKernels::axpby) */
template <Kind K> PetscErrorCode VecAXPBY_Fused(Vec y, PetscScalar a, PetscScalar b, Vec x)
{
  const BlasKernels          *blas;
  const PetscMemoryAccessMode ymode = b == (PetscScalar)0.0 ? WRITE : READ_WRITE;
  const PetscLogDouble        flops = a == (PetscScalar)0.0 ? (b == (PetscScalar)0.0 ? 0.0 : 1.0) : (b == (PetscScalar)0.0 ? 1.0 : 3.0);
  PetscScalar                *xa    = nullptr, *ya;

  PetscFunctionBegin;
  PetscCall(DeviceKernels({y, x}, &blas));
  if (!blas) {
    PetscCall(host_ops[K].axpby(y, a, b, x));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  if (a != (PetscScalar)0.0) PetscCall(VecFusedGetArray(x, READ, &xa));
  PetscCall(VecFusedGetArray(y, ymode, &ya));
  PetscCall(blas->axpby(y->map->n, a, b, xa, ya));
  if (a != (PetscScalar)0.0) PetscCall(VecFusedRestoreArray(x, READ, &xa));
  PetscCall(VecFusedRestoreArray(y, ymode, &ya));
  PetscCall(PetscLogGpuFlops(flops * y->map->n));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* z = a x + b y + c z; z is not read when c == 0 */
template <Kind K> PetscErrorCode VecAXPBYPCZ_Fused(Vec z, PetscScalar a, PetscScalar b, PetscScalar c, Vec x, Vec y)
{
  const bool zero = c == (PetscScalar)0.0;

  PetscFunctionBegin;
  PetscCall(RunOp(
      {x, y, z}, {READ, READ, zero ? WRITE : READ_WRITE}, (zero ? 3.0 : 5.0) * z->map->n, [&] { return host_ops[K].axpbypcz(z, a, b, c, x, y); },
      [&](const BlasKernels *blas, PetscScalar **v) { return blas->axpbypcz(z->map->n, a, b, c, v[0], v[1], v[2]); }));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* w = a x + y (PETSc guarantees w differs from x and y) */
template <Kind K> PetscErrorCode VecWAXPY_Fused(Vec w, PetscScalar a, Vec x, Vec y)
{
  PetscFunctionBegin;
  PetscCall(RunOp(
      {x, y, w}, {READ, READ, WRITE}, 2.0 * w->map->n, [&] { return host_ops[K].waxpy(w, a, x, y); }, [&](const BlasKernels *blas, PetscScalar **v) { return blas->waxpy(w->map->n, a, v[0], v[1], v[2]); }));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* y += sum_j alpha[j] X[j] (PETSc guarantees y is not among the X[j]) */
template <Kind K> PetscErrorCode VecMAXPY_Fused(Vec y, PetscInt nv, const PetscScalar *alpha, Vec *X)
{
  const BlasKernels               *blas;
  std::vector<const PetscScalar *> xa;
  PetscScalar                     *ya;

  PetscFunctionBegin;
  PetscCall(DeviceKernelsMulti(y, nv, X, &blas));
  if (!blas) {
    PetscCall(host_ops[K].maxpy(y, nv, alpha, X));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(GetArraysRead(nv, X, xa));
  PetscCall(VecFusedGetArray(y, READ_WRITE, &ya));
  PetscCall(blas->maxpy(y->map->n, nv, alpha, xa.data(), ya));
  PetscCall(RestoreArraysRead(nv, X, xa));
  PetscCall(VecFusedRestoreArray(y, READ_WRITE, &ya));
  PetscCall(PetscLogGpuFlops(2.0 * nv * y->map->n));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* x = a x; x is not read when a == 0 */
template <Kind K> PetscErrorCode VecScale_Fused(Vec x, PetscScalar a)
{
  const bool zero = a == (PetscScalar)0.0;

  PetscFunctionBegin;
  PetscCall(RunOp(
      {x}, {zero ? WRITE : READ_WRITE}, zero ? 0.0 : x->map->n, [&] { return host_ops[K].scale(x, a); }, [&](const BlasKernels *blas, PetscScalar **v) { return blas->scale(x->map->n, a, v[0]); }));
  PetscFunctionReturn(PETSC_SUCCESS);
}

template <Kind K> PetscErrorCode VecSet_Fused(Vec x, PetscScalar a)
{
  PetscFunctionBegin;
  PetscCall(RunOp(
      {x}, {WRITE}, 0.0, [&] { return host_ops[K].set(x, a); }, [&](const BlasKernels *blas, PetscScalar **v) { return blas->set(x->map->n, a, v[0]); }));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* copy (y = x; x may be fused and y not, or the other way round: then the host operation runs) and swap, which do
   nothing when x is y (Host: the saved operation; Kernel: the BlasKernels entry; XMode, YMode: the accesses)      */
template <Kind K, PetscErrorCode (*_VecOps::*Host)(Vec, Vec), auto Kernel, PetscMemoryAccessMode XMode, PetscMemoryAccessMode YMode> PetscErrorCode VecPair_Fused(Vec x, Vec y)
{
  PetscFunctionBegin;
  if (x == y) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(RunOp(
      {x, y}, {XMode, YMode}, 0.0, [&] { return (host_ops[K].*Host)(x, y); }, [&](const BlasKernels *blas, PetscScalar **v) { return (blas->*Kernel)(x->map->n, v[0], v[1]); }));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* w = x .* y or x ./ y (Host: the saved operation; Kernel: the BlasKernels entry).  w may be x
   or y: its write access then returns the array that the read access of x or y synchronized.  */
template <Kind K, PetscErrorCode (*_VecOps::*Host)(Vec, Vec, Vec), PetscErrorCode (*BlasKernels::*Kernel)(PetscInt, const PetscScalar *, const PetscScalar *, PetscScalar *)> PetscErrorCode VecPointwise_Fused(Vec w, Vec x, Vec y)
{
  PetscFunctionBegin;
  PetscCall(RunOp(
      {x, y, w}, {READ, READ, WRITE}, w->map->n, [&] { return (host_ops[K].*Host)(w, x, y); }, [&](const BlasKernels *blas, PetscScalar **v) { return (blas->*Kernel)(w->map->n, v[0], v[1], v[2]); }));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* dot, tdot (Global) and dot_local, tdot_local: the same for real scalars.  The host operation of a
   VECMPI sums over the ranks itself; the kernel's local value is summed here                      */
template <Kind K, PetscErrorCode (*_VecOps::*Host)(Vec, Vec, PetscScalar *), bool Global> PetscErrorCode VecDot_Fused(Vec x, Vec y, PetscScalar *val)
{
  PetscFunctionBegin;
  PetscCall(RunOp(
      {x, y}, {READ, READ}, ReductionFlops(x->map->n, 2.0), [&] { return (host_ops[K].*Host)(x, y, val); },
      [&](const BlasKernels *blas, PetscScalar **v) -> PetscErrorCode {
        PetscFunctionBegin;
        PetscCall(blas->dot(x->map->n, v[0], v[1], val));
        if (Global && K == KIND_MPI) PetscCallMPI(MPIU_Allreduce(MPI_IN_PLACE, val, 1, MPIU_SCALAR, MPIU_SUM, PetscObjectComm((PetscObject)x)));
        PetscFunctionReturn(PETSC_SUCCESS);
      }));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* dotnorm2: *dp = <s,t>, *nm = <t,t> in one pass (the backend's fused dot products: one kernel,
   one copy) and one reduction of the two values; PETSc's VecDotNorm2() would otherwise read the
   host arrays (a copy of both vectors per call)                                               */
template <Kind K> PetscErrorCode VecDotNorm2_Fused(Vec s, Vec t, PetscScalar *dp, PetscScalar *nm)
{
  const BlasKernels *blas;
  PetscScalar        z[2];
  PetscScalar       *sa, *ta;

  PetscFunctionBegin;
  PetscCall(DeviceKernels({s, t}, &blas));
  if (!blas) {
    PetscCall(host_ops[K].dot_local(s, t, &z[0]));
    PetscCall(host_ops[K].dot_local(t, t, &z[1]));
  } else {
    const DotSpec specs[2] = {{DotKind::DOT_INPUT, nullptr}, {DotKind::DOT_SELF, nullptr}};

    PetscCall(VecFusedGetArray(s, READ, &sa));
    PetscCall(VecFusedGetArray(t, READ, &ta));
    PetscCall(ActiveBackend()->dots(s->map->n, sa, ta, 2, specs, z));
    PetscCall(VecFusedRestoreArray(s, READ, &sa));
    PetscCall(VecFusedRestoreArray(t, READ, &ta));
    PetscCall(PetscLogGpuFlops(ReductionFlops(s->map->n, 2.0) * 2));
  }
  if (K == KIND_MPI) PetscCallMPI(MPIU_Allreduce(MPI_IN_PLACE, z, 2, MPIU_SCALAR, MPIU_SUM, PetscObjectComm((PetscObject)s)));
  *dp = z[0];
  *nm = z[1];
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* mdot, mtdot (Global) and mdot_local, mtdot_local: val[j] = <x, Y[j]> */
template <Kind K, PetscErrorCode (*_VecOps::*Host)(Vec, PetscInt, const Vec[], PetscScalar *), bool Global> PetscErrorCode VecMDot_Fused(Vec x, PetscInt nv, const Vec Y[], PetscScalar *val)
{
  const BlasKernels               *blas;
  std::vector<const PetscScalar *> ya;
  PetscScalar                     *xa;
  PetscMPIInt                      count;

  PetscFunctionBegin;
  PetscCall(DeviceKernelsMulti(x, nv, Y, &blas));
  if (!blas) {
    PetscCall((host_ops[K].*Host)(x, nv, Y, val));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(VecFusedGetArray(x, READ, &xa));
  PetscCall(GetArraysRead(nv, Y, ya));
  PetscCall(blas->mdot(x->map->n, nv, xa, ya.data(), val));
  PetscCall(VecFusedRestoreArray(x, READ, &xa));
  PetscCall(RestoreArraysRead(nv, Y, ya));
  PetscCall(PetscLogGpuFlops(nv * ReductionFlops(x->map->n, 2.0)));
  if (Global && K == KIND_MPI) {
    PetscCall(PetscMPIIntCast(nv, &count));
    PetscCallMPI(MPIU_Allreduce(MPI_IN_PLACE, val, count, MPIU_SCALAR, MPIU_SUM, PetscObjectComm((PetscObject)x)));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* norm (Global) and norm_local, with PETSc's conventions: NORM_2 / NORM_FROBENIUS return the
   square root of the (local or global) sum of squares, NORM_1_AND_2 returns two values, the
   global NORM_INFINITY is a maximum over the ranks                                           */
template <Kind K, PetscErrorCode (*_VecOps::*Host)(Vec, NormType, PetscReal *), bool Global> PetscErrorCode VecNorm_Fused(Vec x, NormType type, PetscReal *val)
{
  const BlasKernels *blas;
  const PetscInt     n     = x->map->n;
  PetscReal          z[2]  = {0, 0};
  PetscMPIInt        count = 1;
  MPI_Op             op    = MPIU_SUM;
  PetscScalar       *xa;

  PetscFunctionBegin;
  PetscCall(DeviceKernels({x}, &blas));
  if (!blas) {
    PetscCall((host_ops[K].*Host)(x, type, val));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(VecFusedGetArray(x, READ, &xa));
  switch (type) {
  case NORM_1:
    PetscCall(blas->norm1(n, xa, &z[0]));
    PetscCall(PetscLogGpuFlops(ReductionFlops(n, 1.0)));
    break;
  case NORM_2:
  case NORM_FROBENIUS:
    PetscCall(blas->norm2(n, xa, &z[0]));
    PetscCall(PetscLogGpuFlops(ReductionFlops(n, 2.0)));
    break;
  case NORM_INFINITY:
    PetscCall(blas->norminf(n, xa, &z[0]));
    op = MPIU_MAX;
    break;
  case NORM_1_AND_2:
    PetscCall(blas->norm1(n, xa, &z[0]));
    PetscCall(blas->norm2(n, xa, &z[1]));
    PetscCall(PetscLogGpuFlops(ReductionFlops(n, 1.0) + ReductionFlops(n, 2.0)));
    count = 2;
    break;
  default:
    SETERRQ(PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Unknown norm type %d", (int)type);
  }
  PetscCall(VecFusedRestoreArray(x, READ, &xa));
  if (Global && K == KIND_MPI) PetscCallMPI(MPIU_Allreduce(MPI_IN_PLACE, z, count, MPIU_REAL, op, PetscObjectComm((PetscObject)x)));
  if (type == NORM_2 || type == NORM_FROBENIUS) z[0] = PetscSqrtReal(z[0]);
  if (type == NORM_1_AND_2) z[1] = PetscSqrtReal(z[1]);
  for (PetscMPIInt k = 0; k < count; ++k) val[k] = z[k];
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Replaces an operation that the vector has by the fused one */
template <class F> void Replace(F &slot, F fused)
{
  if (slot) slot = fused;
}

template <Kind K> PetscErrorCode Install(Vec v)
{
  VecOps ops = v->ops;

  PetscFunctionBegin;
  PetscCheck(ops->axpy != VecAXPY_Fused<K>, PetscObjectComm((PetscObject)v), PETSC_ERR_PLIB, "The device operations of this vector are already installed");
  host_ops[K] = *ops;
  Replace(ops->axpy, VecAXPY_Fused<K>);
  Replace(ops->aypx, VecAYPX_Fused<K>);
  Replace(ops->axpby, VecAXPBY_Fused<K>);
  Replace(ops->axpbypcz, VecAXPBYPCZ_Fused<K>);
  Replace(ops->waxpy, VecWAXPY_Fused<K>);
  Replace(ops->maxpy, VecMAXPY_Fused<K>);
  Replace(ops->scale, VecScale_Fused<K>);
  Replace(ops->set, VecSet_Fused<K>);
  Replace(ops->copy, VecPair_Fused<K, &_VecOps::copy, &BlasKernels::copy, READ, WRITE>);
  Replace(ops->swap, VecPair_Fused<K, &_VecOps::swap, &BlasKernels::swap, READ_WRITE, READ_WRITE>);
  Replace(ops->pointwisemult, VecPointwise_Fused<K, &_VecOps::pointwisemult, &BlasKernels::pointwise_mult>);
  Replace(ops->pointwisedivide, VecPointwise_Fused<K, &_VecOps::pointwisedivide, &BlasKernels::pointwise_divide>);
  Replace(ops->dot, VecDot_Fused<K, &_VecOps::dot, true>);
  Replace(ops->tdot, VecDot_Fused<K, &_VecOps::tdot, true>);
  Replace(ops->dot_local, VecDot_Fused<K, &_VecOps::dot_local, false>);
  Replace(ops->tdot_local, VecDot_Fused<K, &_VecOps::tdot_local, false>);
  Replace(ops->mdot, VecMDot_Fused<K, &_VecOps::mdot, true>);
  Replace(ops->mtdot, VecMDot_Fused<K, &_VecOps::mtdot, true>);
  Replace(ops->mdot_local, VecMDot_Fused<K, &_VecOps::mdot_local, false>);
  Replace(ops->mtdot_local, VecMDot_Fused<K, &_VecOps::mtdot_local, false>);
  Replace(ops->norm, VecNorm_Fused<K, &_VecOps::norm, true>);
  Replace(ops->norm_local, VecNorm_Fused<K, &_VecOps::norm_local, false>);
  ops->dotnorm2 = VecDotNorm2_Fused<K>; /* VECSEQ and VECMPI have none (PETSc then reads the host arrays) */
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace

/*
  VecFusedInstallDeviceOps - Gives a VECSEQ or VECMPI that is becoming fused the device versions
  of the BLAS-1 operations (axpy, aypx, axpby, axpbypcz, waxpy, maxpy, scale, set, copy, swap,
  pointwisemult, pointwisedivide, dot, tdot, mdot, mtdot, norm, dotnorm2 and the *_local variants) and saves
  its host operations, which run when the backend is the host or an operand is not fused.

  Called by the create routines of VECSEQFUSED and VECMPIFUSED before the type name changes.
*/
PetscErrorCode VecFusedInstallDeviceOps(Vec v)
{
  PetscBool mpi, seq;

  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)v, VECMPI, &mpi));
  PetscCall(PetscObjectTypeCompare((PetscObject)v, VECSEQ, &seq));
  PetscCheck(mpi || seq, PetscObjectComm((PetscObject)v), PETSC_ERR_ARG_WRONG, "Device operations are installed on a VECSEQ or VECMPI, not on a vector of type %s", ((PetscObject)v)->type_name);
  if (mpi)
    PetscCall(Install<KIND_MPI>(v));
  else
    PetscCall(Install<KIND_SEQ>(v));
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace fusedksp
