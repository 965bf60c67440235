static char help[] = "Solves a 2D Poisson problem (or any problem of tutorials/problems.h) with the KSP and PC given by the options\n\
and prints one line: KSP type, PC type, N, iterations, converged reason, true residual ||b-Ax||/||b||, solve time.\n\
Options:\n\
  -problem <poisson2d>        the problem (see tutorials/problems.h: poisson2d, fem2d, laplace3d, elasticity3d, convdiff3d, randdd, file, ...)\n\
  -n <n>                      grid points per direction (n x n unknowns for poisson2d)\n\
  -rhs <ones|random|solution> the right-hand side\n\
  -uneven                     give rank 0 more rows than the others\n\
  -repeat <k>                 solve k times and print the median solve time (with k > 1 a first, untimed warm-up solve)\n\
  -ksp_type, -pc_type, -ksp_rtol, ... any KSP and PC option; -vec_type fused -mat_type aijfused for the FusedKSP types\n\
Example: mpiexec -n 2 ./ex1 -n 256 -ksp_type fusedcg -pc_type jacobi -vec_type fused -mat_type aijfused\n\n";

#include <fusedksp.h>
#include "problems.h"

static int CompareDouble(const void *a, const void *b)
{
  const PetscLogDouble x = *(const PetscLogDouble *)a, y = *(const PetscLogDouble *)b;

  return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
  Problem            prob;
  KSP                ksp;
  PC                 pc;
  Vec                x, r;
  KSPType            ksptype;
  PCType             pctype;
  KSPConvergedReason reason;
  PetscInt           repeat = 1, its, N;
  PetscReal          rnorm, bnorm;
  PetscLogDouble    *times, median;

  PetscFunctionBeginUser;
  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(FusedKSPInitializePackage());
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-repeat", &repeat, NULL));
  PetscCheck(repeat >= 1, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-repeat must be at least 1, got %" PetscInt_FMT, repeat);

  PetscCall(ProblemCreate(PETSC_COMM_WORLD, NULL, &prob));
  PetscCall(VecDuplicate(prob.b, &x));
  PetscCall(VecDuplicate(prob.b, &r));
  PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
  PetscCall(KSPSetOperators(ksp, prob.A, prob.A));
  PetscCall(KSPSetFromOptions(ksp));
  PetscCall(KSPSetUp(ksp));

  if (repeat > 1) PetscCall(KSPSolve(ksp, prob.b, x)); /* warm-up */
  PetscCall(PetscMalloc1(repeat, &times));
  for (PetscInt k = 0; k < repeat; k++) {
    PetscLogDouble t0, t1, dt;

    PetscCall(VecZeroEntries(x));
    PetscCallMPI(MPI_Barrier(PETSC_COMM_WORLD));
    PetscCall(PetscTime(&t0));
    PetscCall(KSPSolve(ksp, prob.b, x));
    PetscCall(PetscTime(&t1));
    dt = t1 - t0;
    PetscCallMPI(MPIU_Allreduce(&dt, &times[k], 1, MPI_DOUBLE, MPI_MAX, PETSC_COMM_WORLD));
  }
  qsort(times, (size_t)repeat, sizeof(*times), CompareDouble);
  median = repeat % 2 ? times[repeat / 2] : 0.5 * (times[repeat / 2 - 1] + times[repeat / 2]);
  PetscCall(PetscFree(times));

  PetscCall(MatMult(prob.A, x, r));
  PetscCall(VecAYPX(r, -1.0, prob.b));
  PetscCall(VecNorm(r, NORM_2, &rnorm));
  PetscCall(VecNorm(prob.b, NORM_2, &bnorm));
  PetscCall(KSPGetType(ksp, &ksptype));
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(PCGetType(pc, &pctype));
  PetscCall(KSPGetIterationNumber(ksp, &its));
  PetscCall(KSPGetConvergedReason(ksp, &reason));
  PetscCall(MatGetSize(prob.A, &N, NULL));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "ksp=%s pc=%s N=%" PetscInt_FMT " its=%" PetscInt_FMT " reason=%s true_resid=%.3e time=%.4e\n", ksptype, pctype, N, its, KSPConvergedReasons[reason], (double)(bnorm > 0.0 ? rnorm / bnorm : rnorm), median));

  PetscCall(KSPDestroy(&ksp));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&r));
  PetscCall(ProblemDestroy(&prob));
  PetscCall(PetscFinalize());
  return 0;
}
