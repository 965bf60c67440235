static char help[] = "Self-test of tests/run: with -leak this program leaves one PetscMalloc() unfreed, so -malloc_dump reports it\n\
and tests/run must flag the run (case kind xfail); without -leak it frees everything and must pass.\n\
Options:\n\
  -leak: leak 64 bytes\n\n";

#include <fusedksp.h>

int main(int argc, char **argv)
{
  PetscBool leak = PETSC_FALSE;
  void     *p;

  PetscFunctionBeginUser;
  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(FusedKSPInitializePackage()); /* like every test program, so that tests/run can pass -fused_backend */
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-leak", &leak, NULL));
  PetscCall(PetscMalloc(64, &p));
  if (!leak) PetscCall(PetscFree(p));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "test_leakcheck: PASS\n"));
  PetscCall(PetscFinalize());
  return 0;
}
