/* FusedKSP private declarations shared by the layers (not installed) */
#pragma once

#include <fusedksp.h>
#include "backend/backend.hpp"

namespace fusedksp
{

/* The backend fused operations run on, chosen at package initialization (-fused_backend) */
const Backend *ActiveBackend();

/* The BLAS-1 kernels of a backend (backend/blas.hpp) */
const BlasKernels *BackendBlas(const Backend *backend);

/* The backend as the views name it (-ksp_view, -vec_view/-mat_view ::ascii_info): "cuda, device 0 (NAME)";
   on the host backend "host", or with `why` the reason: "host (-fused_backend host)" or "no GPU found: host backend" */
PetscErrorCode BackendDescription(const Backend *backend, PetscBool why, char text[], size_t len);

/* "WARNING: N MPI ranks on this node share GPU k" when ranks share a GPU (cuda backend), else "" */
PetscErrorCode DeviceSharingWarning(char text[], size_t len);

/* The create routine of VECFUSED and MATAIJFUSED (the types named after no communicator size): obj takes the type
   `seq` on one process, else `mpi` (settype: VecSetType(), MatSetType())                                   */
template <class T> PetscErrorCode FusedSetTypeForComm(T obj, const char *seq, const char *mpi, PetscErrorCode (*settype)(T, const char *))
{
  PetscMPIInt size;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_size(PetscObjectComm((PetscObject)obj), &size));
  PetscCall(settype(obj, size == 1 ? seq : mpi));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Counts a host array a fused vector allocated on first use of its host side (FusedKSPDebugGetHostArrayCount()) */
void HostArrayAllocated();

/* One logging event per fused kernel family, and the packed global reduction */
struct Events {
  PetscLogEvent cg_update, spmv_dots, dots, waxpy_dot, bcgs_update, mdot, maxpy, allreduce, to_device, to_host, halo_pack, halo_mpi, spmv_offdiag, chunk_wait, graph_launch, cg_chunk, bcgs_chunk, sgmres_chunk, trsv, blockdiag, spgemm, mirror;
};
extern Events events;

/* Registers PCPBJACOBI and PCVPBJACOBI again: PETSc's PCs whose blocks of a fused matrix are applied on the backend
   (src/pc/pbjacobi.cxx) */
PetscErrorCode PCRegisterBlockDiagFused(void);

/* Registers PCBJACOBI again: PETSc's PC whose single-block PCApplyTranspose() lends the block's KSP the local parts
   of fused vectors, as its PCApply() does (src/pc/bjacobi.cxx) */
PetscErrorCode PCRegisterBJacobiFused(void);

/* Registers PCASM again: PETSc's PC whose restriction and prolongation with one subdomain per process run on the
   backend for fused vectors (src/pc/asm.cxx) */
PetscErrorCode PCRegisterASMFused(void);

/* Registers KSPCHEBYSHEV again: PETSc's KSP whose first-kind steps with a fused operator, fused vectors and Jacobi (or
   no) preconditioner run as one kernel each (src/ksp/chebyshev.cxx) */
PetscErrorCode KSPRegisterChebyshevFused(void);

} // namespace fusedksp

PETSC_INTERN PetscErrorCode KSPCreate_FusedCG(KSP);
PETSC_INTERN PetscErrorCode KSPCreate_FusedBCGS(KSP);
PETSC_INTERN PetscErrorCode KSPCreate_FusedSGMRES(KSP);
PETSC_INTERN PetscErrorCode KSPCreate_FusedCAGMRES(KSP);
PETSC_INTERN PetscErrorCode KSPCreate_FusedBiCG(KSP);
PETSC_INTERN PetscErrorCode VecCreate_Fused(Vec);
PETSC_INTERN PetscErrorCode VecCreate_SeqFused(Vec);
PETSC_INTERN PetscErrorCode VecCreate_MPIFused(Vec);
PETSC_INTERN PetscErrorCode MatCreate_AIJFused(Mat);
PETSC_INTERN PetscErrorCode MatCreate_SeqAIJFused(Mat);
PETSC_INTERN PetscErrorCode MatCreate_MPIAIJFused(Mat);
PETSC_INTERN PetscErrorCode MatGetFactor_SeqAIJFused_Fused(Mat, MatFactorType, Mat *);
