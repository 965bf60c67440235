/*
   CUDA backend: the BLAS-1 contract (backend/blas.hpp) on the backend's stream.

   Elementwise operations are one grid-stride kernel each (at most one wave of blocks of BLOCK_SIZE
   threads, WaveBlocks()), nothing when n == 0.  Dot products and norms are one kernel over the chunks
   of PartitionWave() with both reduction stages on the device (ReduceBlocks), then ONE
   device->host copy of the result (FinishReduction), exactly as the fused kernels of the
   solvers; the infinity norm reduces with a maximum instead of a sum.  maxpy and mdot are the
   Gram-Schmidt kernels of cuda_gmres.cu (MAXPYScale, MDot).
*/
#include "backend/blas.hpp"
#include "backend/cuda/cuda_common.cuh"
#include <vector>

namespace fusedksp
{
namespace cuda
{
namespace
{

/* op(i) for every i in [0, n) */
template <class Op> __global__ void MapKernel(PetscInt64 n, Op op)
{
  const PetscInt64 stride = (PetscInt64)gridDim.x * blockDim.x;

  for (PetscInt64 i = (PetscInt64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) op(i);
}

/* One MapKernel launch on the backend's stream (none when n == 0) */
template <class Op> PetscErrorCode LaunchMap(PetscInt n, const Op &op)
{
  cudaStream_t stream;

  PetscFunctionBegin;
  PetscCheck(n >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Negative length %" PetscInt_FMT, n);
  if (n) {
    PetscInt wave;

    PetscCall(WaveBlocks((const void *)MapKernel<Op>, &wave));
    const int nblocks = (int)PetscMin((PetscInt64)wave, ((PetscInt64)n + BLOCK_SIZE - 1) / BLOCK_SIZE);
    PetscCall(GetStream(&stream));
    MapKernel<<<nblocks, BLOCK_SIZE, 0, stream>>>((PetscInt64)n, op);
    FusedKSPCheckLaunch();
    counters.launches++;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The elementwise operations (see BlasKernels) */
struct AXPYOp {
  PetscScalar        a;
  const PetscScalar *x;
  PetscScalar       *y;
  __device__ void    operator()(PetscInt64 i) const
  {
    y[i] += a * x[i];
  }
};

struct AYPXOp {
  PetscScalar        b;
  const PetscScalar *x;
  PetscScalar       *y;
  __device__ void    operator()(PetscInt64 i) const
  {
    y[i] = x[i] + b * y[i];
  }
};

struct AXOp { /* y := a x (axpby with b == 0) */
  PetscScalar        a;
  const PetscScalar *x;
  PetscScalar       *y;
  __device__ void    operator()(PetscInt64 i) const
  {
    y[i] = a * x[i];
  }
};

struct AXPBYOp {
  PetscScalar        a, b;
  const PetscScalar *x;
  PetscScalar       *y;
  __device__ void    operator()(PetscInt64 i) const
  {
    y[i] = a * x[i] + b * y[i];
  }
};

struct AXPBYPCZOp {
  PetscScalar        a, b, c;
  const PetscScalar *x, *y;
  PetscScalar       *z;
  __device__ void    operator()(PetscInt64 i) const
  {
    z[i] = a * x[i] + b * y[i] + c * z[i];
  }
};

struct AXPBYToZOp { /* z := a x + b y (axpbypcz with c == 0) */
  PetscScalar        a, b;
  const PetscScalar *x, *y;
  PetscScalar       *z;
  __device__ void    operator()(PetscInt64 i) const
  {
    z[i] = a * x[i] + b * y[i];
  }
};

struct WAXPYOp {
  PetscScalar        a;
  const PetscScalar *x, *y;
  PetscScalar       *w;
  __device__ void    operator()(PetscInt64 i) const
  {
    w[i] = a * x[i] + y[i];
  }
};

struct ScaleOp {
  PetscScalar     a;
  PetscScalar    *x;
  __device__ void operator()(PetscInt64 i) const
  {
    x[i] *= a;
  }
};

struct SetOp {
  PetscScalar     a;
  PetscScalar    *x;
  __device__ void operator()(PetscInt64 i) const
  {
    x[i] = a;
  }
};

struct CopyOp {
  const PetscScalar *x;
  PetscScalar       *y;
  __device__ void    operator()(PetscInt64 i) const
  {
    y[i] = x[i];
  }
};

struct SwapOp {
  PetscScalar    *x, *y;
  __device__ void operator()(PetscInt64 i) const
  {
    const PetscScalar t = x[i];
    x[i]                = y[i];
    y[i]                = t;
  }
};

struct MultOp {
  const PetscScalar *x, *y;
  PetscScalar       *w;
  __device__ void    operator()(PetscInt64 i) const
  {
    w[i] = x[i] * y[i];
  }
};

struct DivideOp {
  const PetscScalar *x, *y;
  PetscScalar       *w;
  __device__ void    operator()(PetscInt64 i) const
  {
    const PetscScalar xi = x[i], yi = y[i];
    w[i] = yi == 0.0 ? (xi == 0.0 ? 1.0 : 0.0) : xi / yi;
  }
};

/* Partials of sum_i term(i) over the chunks of PartitionWave(), one per thread block */
template <class Term> __global__ void SumKernel(PetscInt n, PetscInt chunk, Term term, const Reduction red)
{
  const ChunkRange range  = BlockChunk(n, chunk);
  PetscScalar      acc[1] = {0};

  for (PetscInt64 i = range.begin + threadIdx.x; i < range.end; i += blockDim.x) acc[0] += term(i);
  ReduceBlocks(acc, 1, red);
}

/* One SumKernel launch and one device->host copy (neither when n == 0, the sum is then 0) */
template <class Term> PetscErrorCode LaunchSum(PetscInt n, const Term &term, PetscScalar *sum)
{
  return LaunchReducing(SumKernel<Term>, n, false, 1, sum, term);
}

/* The terms of the reductions */
struct DotProductTerm {
  const PetscScalar     *x, *y;
  __device__ PetscScalar operator()(PetscInt64 i) const
  {
    return x[i] * y[i];
  }
};

struct SquareTerm {
  const PetscScalar     *x;
  __device__ PetscScalar operator()(PetscInt64 i) const
  {
    return x[i] * x[i];
  }
};

struct AbsTerm {
  const PetscScalar     *x;
  __device__ PetscScalar operator()(PetscInt64 i) const
  {
    return fabs(x[i]);
  }
};

/* max |x_i| over the chunk of each thread block, then over the blocks (MaxNaNOp: NaN wins over
   every number, as in PETSc's VecNorm(x, NORM_INFINITY)); 0 for an empty range               */
__global__ void MaxAbsKernel(PetscInt n, PetscInt chunk, const PetscScalar *x, const Reduction red)
{
  const ChunkRange range  = BlockChunk(n, chunk);
  PetscScalar      acc[1] = {0};

  for (PetscInt64 i = range.begin + threadIdx.x; i < range.end; i += blockDim.x) acc[0] = MaxNaNOp()(acc[0], fabs(x[i]));
  ReduceBlocks<MaxNaNOp>(acc, 1, red);
}

PetscErrorCode AXPY(PetscInt n, PetscScalar a, const PetscScalar *x, PetscScalar *y)
{
  PetscFunctionBegin;
  PetscCall(LaunchMap(n, AXPYOp{a, x, y}));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode AYPX(PetscInt n, PetscScalar b, const PetscScalar *x, PetscScalar *y)
{
  PetscFunctionBegin;
  PetscCall(LaunchMap(n, AYPXOp{b, x, y}));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode Set(PetscInt n, PetscScalar a, PetscScalar *x)
{
  PetscFunctionBegin;
  PetscCall(LaunchMap(n, SetOp{a, x}));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode Scale(PetscInt n, PetscScalar a, PetscScalar *x)
{
  PetscFunctionBegin;
  if (a == 0.0)
    PetscCall(LaunchMap(n, SetOp{0.0, x}));
  else
    PetscCall(LaunchMap(n, ScaleOp{a, x}));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode AXPBY(PetscInt n, PetscScalar a, PetscScalar b, const PetscScalar *x, PetscScalar *y)
{
  PetscFunctionBegin;
  if (a == 0.0)
    PetscCall(Scale(n, b, y));
  else if (b == 0.0)
    PetscCall(LaunchMap(n, AXOp{a, x, y}));
  else
    PetscCall(LaunchMap(n, AXPBYOp{a, b, x, y}));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode AXPBYPCZ(PetscInt n, PetscScalar a, PetscScalar b, PetscScalar c, const PetscScalar *x, const PetscScalar *y, PetscScalar *z)
{
  PetscFunctionBegin;
  if (c == 0.0)
    PetscCall(LaunchMap(n, AXPBYToZOp{a, b, x, y, z}));
  else
    PetscCall(LaunchMap(n, AXPBYPCZOp{a, b, c, x, y, z}));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode WAXPY(PetscInt n, PetscScalar a, const PetscScalar *x, const PetscScalar *y, PetscScalar *w)
{
  PetscFunctionBegin;
  PetscCall(LaunchMap(n, WAXPYOp{a, x, y, w}));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* y += sum_j alpha[j] X[j]: the Gram-Schmidt update y - sum (-alpha_j) X_j (MAXPYScale, cuda_gmres.cu) */
PetscErrorCode MAXPY(PetscInt n, PetscInt nv, const PetscScalar *alpha, const PetscScalar *const *X, PetscScalar *y)
{
  std::vector<PetscScalar> coef;

  PetscFunctionBegin;
  PetscCheck(n >= 0 && nv >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Negative length %" PetscInt_FMT " or number of vectors %" PetscInt_FMT, n, nv);
  FusedKSPCallCXX(coef.resize(nv > 0 ? nv : 1));
  for (PetscInt j = 0; j < nv; ++j) coef[j] = -alpha[j];
  PetscCall(MAXPYScale(n, nv, coef.data(), X, y, 1.0, nullptr, nullptr));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode Copy(PetscInt n, const PetscScalar *x, PetscScalar *y)
{
  PetscFunctionBegin;
  PetscCall(LaunchMap(n, CopyOp{x, y}));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode Swap(PetscInt n, PetscScalar *x, PetscScalar *y)
{
  PetscFunctionBegin;
  PetscCall(LaunchMap(n, SwapOp{x, y}));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode PointwiseMult(PetscInt n, const PetscScalar *x, const PetscScalar *y, PetscScalar *w)
{
  PetscFunctionBegin;
  PetscCall(LaunchMap(n, MultOp{x, y, w}));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode PointwiseDivide(PetscInt n, const PetscScalar *x, const PetscScalar *y, PetscScalar *w)
{
  PetscFunctionBegin;
  PetscCall(LaunchMap(n, DivideOp{x, y, w}));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode Dot(PetscInt n, const PetscScalar *x, const PetscScalar *y, PetscScalar *val)
{
  PetscFunctionBegin;
  PetscCall(LaunchSum(n, DotProductTerm{x, y}, val));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode Norm2(PetscInt n, const PetscScalar *x, PetscReal *val)
{
  PetscFunctionBegin;
  PetscCall(LaunchSum(n, SquareTerm{x}, val));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode Norm1(PetscInt n, const PetscScalar *x, PetscReal *val)
{
  PetscFunctionBegin;
  PetscCall(LaunchSum(n, AbsTerm{x}, val));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* One MaxAbsKernel launch, one device->host copy of the maximum */
PetscErrorCode NormInf(PetscInt n, const PetscScalar *x, PetscReal *val)
{
  return LaunchReducing(MaxAbsKernel, n, false, 1, val, x);
}

} // namespace

#include "backend/blas_table.hpp"

} // namespace cuda

/*
   CUDABlas - the BLAS-1 contract on the CUDA backend's stream (see cuda_blas.cu).  Returns NULL
   when the CUDA backend has no usable device.
*/
const BlasKernels *CUDABlas()
{
  static const BlasKernels blas = cuda::BlasTable("cuda", cuda::MAXPY);

  return CUDABackend() ? &blas : nullptr;
}

} // namespace fusedksp
