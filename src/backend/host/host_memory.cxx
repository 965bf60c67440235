/* Host backend: memory, counters and the Backend table */
#include "backend/host/host_reduce.hpp"
#include <cstring>

namespace fusedksp
{
namespace host
{

BackendCounters counters;

static PetscErrorCode MallocBytes(size_t bytes, void **ptr)
{
  PetscFunctionBegin;
  PetscCall(PetscMalloc(bytes, ptr));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode FreeBytes(void *ptr)
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
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode CopyToHost(void *dst, const void *src, size_t bytes)
{
  PetscFunctionBegin;
  if (bytes) std::memcpy(dst, src, bytes);
  counters.d2h++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode BatchBegin(void)
{
  return PETSC_SUCCESS;
}

static PetscErrorCode BatchDefer(PetscBool)
{
  return PETSC_SUCCESS;
}

static PetscErrorCode BatchEnd(void)
{
  return PETSC_SUCCESS;
}

} // namespace host

/*
   HostBackend - the reference backend: plain C++ loops over host memory, with the device's
   fusion and two-stage reductions.  Always available.
*/
const Backend *HostBackend()
{
  static const Backend backend = {"host",          host::MallocBytes, host::FreeBytes,       host::CopyToBackend, host::CopyToHost, &host::counters,       host::CGUpdate,           host::SpMVDots,    host::SpMVSELLDots, host::DiagGet,
                                  host::DiagShift, host::Dots,        host::WAXPYDot,        host::BCGSUpdate,    host::MDot,       host::MAXPYScale,      host::SGMRESUpdate,       host::BatchBegin,  host::BatchDefer,   host::BatchEnd,
                                  host::Gather,    host::Scatter,     host::SpMVOffDiagDots, host::MallocBytes,   host::FreeBytes,  host::CopyToHostAsync, host::CopyToBackendAsync, host::FenceRecord, host::FenceWait};
  return &backend;
}

} // namespace fusedksp
