/* The check helper of the test programs: prints "check <what>: PASS|FAIL" and counts the failures
   (a program exits nonzero when check_failures > 0) */
#pragma once
#include <petscsys.h>
#include <stdarg.h>

static PetscInt check_failures = 0;

static PetscErrorCode Check(PetscBool ok, const char fmt[], ...)
{
  char    msg[1024];
  va_list ap;
  size_t  len;

  PetscFunctionBeginUser;
  va_start(ap, fmt);
  PetscCall(PetscVSNPrintf(msg, sizeof(msg), fmt, &len, ap));
  va_end(ap);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "check %s: %s\n", msg, ok ? "PASS" : "FAIL"));
  if (!ok) check_failures++;
  PetscFunctionReturn(PETSC_SUCCESS);
}
