/* Host backend: memory, counters and the Backend table */
#include "backend/host/host_reduce.hpp"
#include <cstring>

namespace fusedksp
{
namespace host
{

BackendCounters counters;
ReduceTarget    target;

/* PetscMalloc(); its failure names the bytes requested */
PetscErrorCode MallocBytes(size_t bytes, void **ptr)
{
  PetscFunctionBegin;
  *ptr = nullptr;
  PetscCheck(!AllocationFails(), PETSC_COMM_SELF, PETSC_ERR_MEM, "Host backend: allocation of %zu bytes failed (-fused_debug_fail_alloc)", bytes);
  PetscCall(PetscMalloc(bytes, ptr));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode FreeBytes(void *ptr)
{
  PetscFunctionBegin;
  PetscCall(PetscFree(ptr));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode CopyToBackend(void *dst, const void *src, size_t bytes)
{
  PetscFunctionBegin;
  if (bytes) std::memcpy(dst, src, bytes);
  counters.h2d++;
  counters.h2d_bytes += (PetscInt64)bytes;
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode CopyToHost(void *dst, const void *src, size_t bytes)
{
  PetscFunctionBegin;
  if (bytes) std::memcpy(dst, src, bytes);
  counters.d2h++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode CopyWithin(void *dst, const void *src, size_t bytes)
{
  PetscFunctionBegin;
  if (bytes) std::memmove(dst, src, bytes);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The host backend's table; host_memory: whether the fused types use PETSc's host arrays as its memory */
static Backend Table(PetscBool host_memory)
{
  return Backend{"host",
                 host::MallocBytes,
                 host::FreeBytes,
                 host::CopyToBackend,
                 host::CopyToHost,
                 host::CopyWithin,
                 &host::counters,
                 host::CGUpdate,
                 host::SpMVDots,
                 host::SpMVSELLDots,
                 host::SpMVUpdate,
                 host::DiagGet,
                 host::DiagShift,
                 host::SELLFromCSR,
                 host::CSRFromSELL,
                 host::Dots,
                 host::WAXPYDot,
                 host::BCGSUpdate,
                 host::MDot,
                 host::MAXPYScale,
                 host::BlockMDot,
                 host::BlockMAXPY,
                 host::SGMRESUpdate,
                 eager::NoOp,
                 eager::BatchDefer,
                 eager::NoOp,
                 eager::NoOp,
                 host::Gather,
                 host::Scatter,
                 host::SpMVOffDiagDots,
                 host::MallocBytes,
                 host::FreeBytes,
                 host::CopyToHostAsync,
                 host::CopyToBackendAsync,
                 host::FenceRecord,
                 host::FenceWait,
                 eager::ReduceTargetSet<host::target>,
                 host::CGUpdateChained,
                 host::WAXPYDotChained,
                 host::BCGSUpdateChained,
                 host::SGMRESUpdateChained,
                 host::CGChunk,
                 host::BCGSChunk,
                 host::SGMRESChunk,
                 eager::GraphBegin,
                 eager::GraphEnd,
                 eager::NoOp,
                 eager::GraphLaunch,
                 eager::GraphDestroy,
                 host::TrsvAnalysis,
                 host::TrsvCSR,
                 host::TrsvFree,
                 host::BlockDiagMult,
                 host_memory,
                 nullptr, /* wait_foreign, foreign_wait: no other library's device memory */
                 nullptr,
                 nullptr, /* ilu0_*: the factorization runs on the host (fusedfactor.cxx) */
                 nullptr,
                 nullptr,
                 MPICommCreate,
                 MPICommDestroy,
                 MPICommAllreduce,
                 MPICommExchange,
                 host::SpGEMMSymbolic,
                 host::SpGEMMNumeric,
                 host::SpGEMMFree,
                 host::CSRTranspose};
}
} // namespace host

/*
   HostBackend - the reference backend: plain C++ loops over host memory, with the device's
   fusion and two-stage reductions.  Always available.
*/
const Backend *HostBackend()
{
  static const Backend backend = host::Table(PETSC_TRUE);
  return &backend;
}

/*
   HostMirroredBackend - the host backend's kernels on memory of their own (-fused_debug_mirror): the fused
   types keep a mirror of every array and copy it as they do for a GPU, so the bookkeeping of the
   mirrors (offload masks, lent arrays, factors, halo buffers) is tested without a GPU.
*/
const Backend *HostMirroredBackend()
{
  static const Backend backend = host::Table(PETSC_FALSE);
  return &backend;
}

} // namespace fusedksp
