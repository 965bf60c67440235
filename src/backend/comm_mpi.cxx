/* Backend::comm_create, comm_destroy, allreduce and exchange through MPI, for the backends whose memory
   is host memory (the host backend; Kokkos on CPU threads): the sums and messages happen when the
   operation is called, on a duplicate of the solve's communicator (its messages never meet PETSc's) */
#include "backend/backend.hpp"
#include <vector>

namespace fusedksp
{

namespace
{
constexpr PetscMPIInt HALO_TAG = 1;

struct MPIComm {
  MPI_Comm                 comm = MPI_COMM_NULL;
  std::vector<MPI_Request> requests;
};
} // namespace

PetscErrorCode MPICommCreate(MPI_Comm comm, void **handle, const char **why)
{
  MPIComm *c = nullptr;

  PetscFunctionBegin;
  *why = nullptr;
  FusedKSPCallCXX(c = new MPIComm());
  PetscCallMPI(MPI_Comm_dup(comm, &c->comm));
  *handle = c;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPICommDestroy(void **handle)
{
  MPIComm *c = static_cast<MPIComm *>(*handle);

  PetscFunctionBegin;
  if (!c) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCallMPI(MPI_Comm_free(&c->comm));
  delete c;
  *handle = nullptr;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPICommAllreduce(void *handle, PetscScalar *buf, PetscInt n)
{
  MPIComm    *c = static_cast<MPIComm *>(handle);
  PetscMPIInt cnt;

  PetscFunctionBegin;
  PetscCall(PetscMPIIntCast(n, &cnt));
  PetscCallMPI(MPIU_Allreduce(MPI_IN_PLACE, buf, cnt, MPIU_SCALAR, MPIU_SUM, c->comm));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPICommExchange(void *handle, const HaloPlan *p)
{
  MPIComm *c = static_cast<MPIComm *>(handle);

  PetscFunctionBegin;
  FusedKSPCallCXX(c->requests.assign((size_t)p->nrecv_ranks + p->nsend_ranks, MPI_REQUEST_NULL));
  for (PetscMPIInt j = 0; j < p->nrecv_ranks; ++j) {
    PetscMPIInt cnt;

    PetscCall(PetscMPIIntCast(p->recv_offsets[j + 1] - p->recv_offsets[j], &cnt));
    PetscCallMPI(MPI_Irecv(p->recv_buf + p->recv_offsets[j], cnt, MPIU_SCALAR, p->recv_ranks[j], HALO_TAG, c->comm, &c->requests[j]));
  }
  for (PetscMPIInt i = 0; i < p->nsend_ranks; ++i) {
    PetscMPIInt cnt;

    PetscCall(PetscMPIIntCast(p->send_offsets[i + 1] - p->send_offsets[i], &cnt));
    PetscCallMPI(MPI_Isend(p->send_buf + p->send_offsets[i], cnt, MPIU_SCALAR, p->send_ranks[i], HALO_TAG, c->comm, &c->requests[p->nrecv_ranks + i]));
  }
  PetscCallMPI(MPI_Waitall((PetscMPIInt)c->requests.size(), c->requests.data(), MPI_STATUSES_IGNORE));
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace fusedksp
