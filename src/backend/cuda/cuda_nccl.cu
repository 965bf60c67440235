/*
   CUDA backend: global sums and halo exchanges on the stream through NCCL (Backend::comm_create,
   comm_destroy, allreduce, exchange), for chunks of iterations with several processes.

   NCCL is loaded at run time (dlopen of -fused_nccl_library, default libnccl.so.2 from the library
   path), so the library builds and runs without it; only -fused_reduction nccl needs it.  The few
   entry points used are declared here from NCCL's stable C ABI (nccl.h of NCCL 2.x: ncclUniqueId is
   128 bytes, ncclSum = 0, ncclFloat32 = 7, ncclFloat64 = 8), so no NCCL header is needed to build.
   NCCL ranks are the MPI ranks of the communicator; the unique id travels by MPI_Bcast.  Operations
   are queued on the backend's stream and can be recorded in a graph (NCCL 2.9 and later); a warm-up
   sum at creation sets up the connections before any recording.
*/
#include "backend/cuda/cuda_common.cuh"
#include <dlfcn.h>
#include <vector>

namespace fusedksp
{
namespace cuda
{
namespace
{

typedef struct ncclComm *ncclComm_t;
typedef struct {
  char internal[128];
} ncclUniqueId;
typedef int   ncclResult_t; /* ncclSuccess = 0 */
constexpr int NCCL_SUM = 0, NCCL_FLOAT32 = 7, NCCL_FLOAT64 = 8;

struct NCCLLibrary {
  void *handle  = nullptr;
  int   version = 0;
  ncclResult_t (*GetVersion)(int *);
  const char *(*GetErrorString)(ncclResult_t);
  ncclResult_t (*GetUniqueId)(ncclUniqueId *);
  ncclResult_t (*CommInitRank)(ncclComm_t *, int, ncclUniqueId, int);
  ncclResult_t (*CommDestroy)(ncclComm_t);
  ncclResult_t (*AllReduce)(const void *, void *, size_t, int, int, ncclComm_t, cudaStream_t);
  ncclResult_t (*Send)(const void *, size_t, int, int, ncclComm_t, cudaStream_t);
  ncclResult_t (*Recv)(void *, size_t, int, int, ncclComm_t, cudaStream_t);
  ncclResult_t (*GroupStart)(void);
  ncclResult_t (*GroupEnd)(void);
};

NCCLLibrary nccl;
char        nccl_error[PETSC_MAX_PATH_LEN + 256] = ""; /* why the library did not load (after a failed attempt) */

#define FusedKSPCallNCCL(...)                                                                                                                                                                                                                            \
  do {                                                                                                                                                                                                                                                   \
    const ncclResult_t nccl_err_ = __VA_ARGS__;                                                                                                                                                                                                          \
    PetscCheck(nccl_err_ == 0, PETSC_COMM_SELF, PETSC_ERR_LIB, "NCCL error %d (%s) in %s", (int)nccl_err_, nccl.GetErrorString ? nccl.GetErrorString(nccl_err_) : "?", #__VA_ARGS__);                                                                    \
  } while (0)

/* Loads NCCL once; *loaded false (and nccl_error set) when the library or an entry point is missing */
PetscErrorCode LoadNCCL(bool *loaded)
{
  static bool tried                    = false;
  char        path[PETSC_MAX_PATH_LEN] = "libnccl.so.2";

  PetscFunctionBegin;
  if (!tried) {
    void *h;

    tried = true;
    PetscCall(PetscOptionsGetString(NULL, NULL, "-fused_nccl_library", path, sizeof(path), NULL));
    h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      PetscCall(PetscSNPrintf(nccl_error, sizeof(nccl_error), "NCCL did not load (%s): put libnccl.so.2 on the library path or name it with -fused_nccl_library", dlerror()));
    } else {
      bool ok  = true;
      auto sym = [&](auto &fn, const char *name) {
        void *s = dlsym(h, name);
        if (!s) ok = false;
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(s);
      };
      sym(nccl.GetVersion, "ncclGetVersion");
      sym(nccl.GetErrorString, "ncclGetErrorString");
      sym(nccl.GetUniqueId, "ncclGetUniqueId");
      sym(nccl.CommInitRank, "ncclCommInitRank");
      sym(nccl.CommDestroy, "ncclCommDestroy");
      sym(nccl.AllReduce, "ncclAllReduce");
      sym(nccl.Send, "ncclSend");
      sym(nccl.Recv, "ncclRecv");
      sym(nccl.GroupStart, "ncclGroupStart");
      sym(nccl.GroupEnd, "ncclGroupEnd");
      if (ok && nccl.GetVersion(&nccl.version) == 0 && nccl.version >= 20900) {
        nccl.handle = h;
        PetscCall(PetscInfo(NULL, "Loaded NCCL %d from %s\n", nccl.version, path));
      } else {
        PetscCall(PetscSNPrintf(nccl_error, sizeof(nccl_error), "%s is not an NCCL of version 2.9 or later (ncclSend/ncclRecv and graph capture): version code %d", path, nccl.version));
        dlclose(h);
        nccl = NCCLLibrary();
      }
    }
  }
  *loaded = nccl.handle != nullptr;
  PetscFunctionReturn(PETSC_SUCCESS);
}

struct NCCLComm {
  ncclComm_t comm = nullptr;
};

/* The NCCL type and count of n PetscScalars (a complex scalar is two reals: sums are the same) */
inline void ScalarType(PetscInt n, int *type, size_t *count)
{
  *type  = sizeof(PetscReal) == 8 ? NCCL_FLOAT64 : NCCL_FLOAT32;
  *count = (size_t)n * (sizeof(PetscScalar) / sizeof(PetscReal));
}

} // namespace

/*
   NCCLCommCreate - Backend::comm_create: an NCCL communicator over comm's processes, one per rank (each
   on its rank's device); collective on comm.  *handle NULL and *why set when NCCL is missing on any rank or
   ranks share a GPU.
*/
PetscErrorCode NCCLCommCreate(MPI_Comm comm, void **handle, const char **why)
{
  bool         loaded;
  PetscMPIInt  rank, size, ok, allok;
  ncclUniqueId id;
  NCCLComm    *c = nullptr;
  cudaStream_t stream;

  PetscFunctionBegin;
  *handle = nullptr;
  *why    = nullptr;
  PetscCall(LoadNCCL(&loaded));
  ok = loaded ? 1 : 0;
  PetscCallMPI(MPIU_Allreduce(&ok, &allok, 1, MPI_INT, MPI_MIN, comm));
  if (!allok) {
    *why = loaded ? "NCCL did not load on every process" : nccl_error;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCallMPI(MPI_Comm_size(comm, &size));
  { /* NCCL refuses two ranks of a communicator on one GPU (ncclInvalidUsage at the init) */
    CUDADeviceInfo info;
    PetscMPIInt    shared, anyshared;

    PetscCall(CUDAGetDeviceInfo(&info));
    shared = info.sharing_ranks > 1 ? 1 : 0;
    PetscCallMPI(MPIU_Allreduce(&shared, &anyshared, 1, MPI_INT, MPI_MAX, comm));
    if (anyshared) {
      *why = "MPI ranks share a GPU (NCCL needs one GPU per process)";
      PetscFunctionReturn(PETSC_SUCCESS);
    }
  }
  if (rank == 0) FusedKSPCallNCCL(nccl.GetUniqueId(&id));
  PetscCallMPI(MPI_Bcast(&id, (PetscMPIInt)sizeof(id), MPI_BYTE, 0, comm));
  FusedKSPCallCXX(c = new NCCLComm());
  PetscCall(GetStream(&stream));
  FusedKSPCallNCCL(nccl.CommInitRank(&c->comm, size, id, rank));
  {
    PetscScalar *one;
    int          type;
    size_t       count;

    ScalarType(1, &type, &count);
    PetscCall(GetPartials(1, &one));
    FusedKSPCallNCCL(nccl.AllReduce(one, one, count, type, NCCL_SUM, c->comm, stream));
    FusedKSPCallCUDA(cudaStreamSynchronize(stream));
  }
  *handle = c;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   NCCLCommDestroy - Backend::comm_destroy
*/
PetscErrorCode NCCLCommDestroy(void **handle)
{
  NCCLComm *c = static_cast<NCCLComm *>(*handle);

  PetscFunctionBegin;
  if (!c) PetscFunctionReturn(PETSC_SUCCESS);
  if (c->comm) FusedKSPCallNCCL(nccl.CommDestroy(c->comm));
  delete c;
  *handle = nullptr;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   NCCLAllreduce - Backend::allreduce: one ncclAllReduce in place on the backend's stream
*/
PetscErrorCode NCCLAllreduce(void *handle, PetscScalar *buf, PetscInt n)
{
  NCCLComm    *c = static_cast<NCCLComm *>(handle);
  cudaStream_t stream;
  int          type;
  size_t       count;

  PetscFunctionBegin;
  PetscCall(GetStream(&stream));
  ScalarType(n, &type, &count);
  FusedKSPCallNCCL(nccl.AllReduce(buf, buf, count, type, NCCL_SUM, c->comm, stream));
  counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   NCCLExchange - Backend::exchange: the receives and sends of the plan as one NCCL group on the backend's stream
*/
PetscErrorCode NCCLExchange(void *handle, const HaloPlan *p)
{
  NCCLComm    *c = static_cast<NCCLComm *>(handle);
  cudaStream_t stream;
  int          type;
  size_t       count;

  PetscFunctionBegin;
  if (!p->nrecv_ranks && !p->nsend_ranks) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(GetStream(&stream));
  FusedKSPCallNCCL(nccl.GroupStart());
  for (PetscMPIInt j = 0; j < p->nrecv_ranks; ++j) {
    ScalarType(p->recv_offsets[j + 1] - p->recv_offsets[j], &type, &count);
    FusedKSPCallNCCL(nccl.Recv(p->recv_buf + p->recv_offsets[j], count, type, p->recv_ranks[j], c->comm, stream));
  }
  for (PetscMPIInt i = 0; i < p->nsend_ranks; ++i) {
    ScalarType(p->send_offsets[i + 1] - p->send_offsets[i], &type, &count);
    FusedKSPCallNCCL(nccl.Send(p->send_buf + p->send_offsets[i], count, type, p->send_ranks[i], c->comm, stream));
  }
  FusedKSPCallNCCL(nccl.GroupEnd());
  counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace cuda
} // namespace fusedksp
