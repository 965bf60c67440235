/* -ksp_view checks of the test programs (test_ilu, test_pbjacobi, test_chebyshev): the text of the ASCII view, and
   whether it contains a line (rank 0's view, the verdict broadcast) */
#pragma once
#include <petscksp.h>
#include <stdio.h>
#include <string.h>

/* The ASCII -ksp_view of ksp (rank 0's; empty on the other ranks) into buf */
static PetscErrorCode ViewText(KSP ksp, char buf[], size_t size)
{
  FILE       *fp = tmpfile();
  PetscViewer viewer;
  size_t      len;
  PetscMPIInt rank;

  PetscFunctionBeginUser;
  PetscCheck(fp, PETSC_COMM_SELF, PETSC_ERR_FILE_OPEN, "tmpfile() failed");
  PetscCall(PetscViewerASCIIOpenWithFILE(PETSC_COMM_WORLD, fp, &viewer));
  PetscCall(KSPView(ksp, viewer));
  PetscCall(PetscViewerFlush(viewer));
  PetscCall(PetscViewerDestroy(&viewer));
  rewind(fp);
  len      = fread(buf, 1, size - 1, fp);
  buf[len] = 0;
  fclose(fp);
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  if (rank) buf[0] = 0;
  PetscFunctionReturn(PETSC_SUCCESS);
}

static char view[1 << 16];

/* Whether the -ksp_view of ksp contains text (rank 0's view) */
static PetscErrorCode ViewContains(KSP ksp, const char text[], PetscBool *found)
{
  PetscMPIInt rank;
  int         f;

  PetscFunctionBeginUser;
  PetscCall(ViewText(ksp, view, sizeof(view)));
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  f = (rank > 0 || strstr(view, text)) ? 1 : 0;
  PetscCallMPI(MPI_Bcast(&f, 1, MPI_INT, 0, PETSC_COMM_WORLD));
  *found = f ? PETSC_TRUE : PETSC_FALSE;
  PetscFunctionReturn(PETSC_SUCCESS);
}
