/* The check helper of the test programs: prints "check <what>: PASS|FAIL" and counts the failures
   (a program exits nonzero when check_failures > 0).

   Check() is collective on PETSC_COMM_WORLD: a check fails when it fails on ANY rank.  Rank 0 prints
   the verdict with its own message, followed by the ranks that failed ("FAIL on ranks 1 2"); every
   failing rank other than 0 prints its own message too.  check_failures is therefore the same on every
   rank, and so are the program's last line and exit code.                                          */
#pragma once
#include <petscsys.h>
#include <stdarg.h>

static PetscInt check_failures = 0;

static PetscErrorCode Check(PetscBool ok, const char fmt[], ...)
{
  char        msg[1024], ranks[256] = "";
  va_list     ap;
  size_t      len;
  PetscMPIInt rank, size, mine = ok ? 0 : 1, *failed;
  PetscInt    nfailed = 0;
  MPI_Comm    comm    = PETSC_COMM_WORLD;

  PetscFunctionBeginUser;
  va_start(ap, fmt);
  PetscCall(PetscVSNPrintf(msg, sizeof(msg), fmt, &len, ap));
  va_end(ap);
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCall(PetscMalloc1(size, &failed));
  PetscCallMPI(MPI_Allgather(&mine, 1, MPI_INT, failed, 1, MPI_INT, comm));
  for (PetscMPIInt r = 0; r < size; r++) {
    if (!failed[r]) continue;
    nfailed++;
    if (size > 1) {
      size_t used;

      PetscCall(PetscStrlen(ranks, &used));
      if (used + 16 < sizeof(ranks)) PetscCall(PetscSNPrintf(ranks + used, sizeof(ranks) - used, " %d", (int)r));
    }
  }
  PetscCall(PetscFree(failed));
  if (!nfailed)
    PetscCall(PetscPrintf(comm, "check %s: PASS\n", msg));
  else if (size == 1)
    PetscCall(PetscPrintf(comm, "check %s: FAIL\n", msg));
  else {
    PetscCall(PetscPrintf(comm, "check %s: FAIL on rank%s%s\n", msg, nfailed > 1 ? "s" : "", ranks));
    if (rank && mine) PetscCall(PetscSynchronizedPrintf(comm, "[%d] check %s: FAIL\n", (int)rank, msg));
    PetscCall(PetscSynchronizedFlush(comm, PETSC_STDOUT));
  }
  if (nfailed) check_failures++;
  PetscFunctionReturn(PETSC_SUCCESS);
}
