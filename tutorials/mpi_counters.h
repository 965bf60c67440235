/* Global reductions and halo exchanges of every library in the process, counted through the MPI profiling interface.
   Included by ONE source file of a program (tutorials/bench.c, tests/test_reductions.c), after the PETSc headers
   (petsclog.h defines some of these names as macros).

   Why not PETSc's own counter: petsc_allreduce_ct is declared PETSC_EXTERN in petsclog.h and exported by libpetsc 3.26,
   but it is incremented only by petsclog.h's MPI_Allreduce macro.  PETSc 3.26 built with an MPI-4 MPI (MPICH 4 here)
   reduces through MPIU_Allreduce -> MPI_Allreduce_c, which has no logging macro, so VecDot/VecNorm reductions are not
   counted (-log_view reports 0 reductions for VecTDot): the counter is not usable.  The MPI profiling interface sees
   every call whoever makes it.  These definitions (public, so exported even with -fvisibility=hidden) take the place
   of the MPI library's for every shared library (symbol interposition). */
#pragma once
#include <petscsys.h>

#undef MPI_Allreduce
#undef MPI_Iallreduce
#undef MPI_Startall

/* MPI_Allreduce and its variants on communicators of more than one rank */
static PetscInt64 mpi_reductions = 0;
/* MPI_Startall of persistent requests: one per halo exchange of the fused MPI products (and of PETSc's PetscSF) */
static PetscInt64 mpi_startalls = 0;

static void CountReduction(MPI_Comm comm)
{
  int size;

  PMPI_Comm_size(comm, &size);
  if (size > 1) mpi_reductions++;
}

PETSC_EXTERN int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
  CountReduction(comm);
  return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
}

PETSC_EXTERN int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
  CountReduction(comm);
  return PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request);
}

#if MPI_VERSION >= 4
PETSC_EXTERN int MPI_Allreduce_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
  CountReduction(comm);
  return PMPI_Allreduce_c(sendbuf, recvbuf, count, datatype, op, comm);
}

PETSC_EXTERN int MPI_Iallreduce_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
  CountReduction(comm);
  return PMPI_Iallreduce_c(sendbuf, recvbuf, count, datatype, op, comm, request);
}
#endif

PETSC_EXTERN int MPI_Startall(int count, MPI_Request requests[])
{
  mpi_startalls++;
  return PMPI_Startall(count, requests);
}
