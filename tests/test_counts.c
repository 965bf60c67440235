static char help[] = "Fused kernels and device->host copies per iteration of each fused solver.\n"
                     "Runs -its iterations (convergence test skipped) of -ksp_type on a 2D Poisson problem with fused types,\n"
                     "counts the backend's launches and copies, and checks them against the design:\n"
                     "  fusedcg: 2 kernels/iteration; fusedbcgs: 4; fusedsgmres: 3 per inner step (no CGS2).\n"
                     "  Device->host copies (CUDA backend; kokkos backend in the GPU shape): 1 per iteration (inner step);\n"
                     "  fusedbcgs 2 on one process unless -ksp_fusedbcgs_one_reduction 1.  the three with -ksp_fused_check_interval k:\n"
                     "  1/k copies per iteration.\n"
                     "With -max_host_arrays m: KSPSetUp() and the solves allocate at most m host arrays of fused vectors\n"
                     "  (FusedKSPDebugGetHostArrayCount(): the solver's work vectors live on the backend only).\n"
                     "Options: -n <grid points per direction> -its <iterations> -expect_launches <kernels per iteration, overriding the design>\n"
                     "  -max_host_arrays <m>\n";

#include <fusedksp.h>

int main(int argc, char **argv)
{
  Mat         A;
  Vec         x, b;
  KSP         ksp;
  PetscInt    n = 64, its = 30, done, rs, re;
  PetscInt64  l0, l1, l2, d0, d1, d2, h0, h1;
  PetscInt    max_host_arrays = -1;
  KSPType     type;
  const char *backend;
  PetscBool   cg, bcgs, sgmres, host;
  PetscInt    k;
  PetscReal   launches, copies, want_launches, want_copies, slack, slack_copies;

  PetscFunctionBeginUser;
  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(FusedKSPInitializePackage());
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-n", &n, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-its", &its, NULL));
  PetscCall(MatCreate(PETSC_COMM_WORLD, &A));
  PetscCall(MatSetSizes(A, PETSC_DECIDE, PETSC_DECIDE, n * n, n * n));
  PetscCall(MatSetType(A, MATAIJFUSED));
  PetscCall(MatSeqAIJSetPreallocation(A, 5, NULL));
  PetscCall(MatMPIAIJSetPreallocation(A, 5, NULL, 2, NULL));
  PetscCall(MatGetOwnershipRange(A, &rs, &re));
  for (PetscInt r = rs; r < re; ++r) {
    const PetscInt i = r / n, j = r % n;
    PetscCall(MatSetValue(A, r, r, 4.0, INSERT_VALUES));
    if (i > 0) PetscCall(MatSetValue(A, r, r - n, -1.0, INSERT_VALUES));
    if (i < n - 1) PetscCall(MatSetValue(A, r, r + n, -1.0, INSERT_VALUES));
    if (j > 0) PetscCall(MatSetValue(A, r, r - 1, -1.0, INSERT_VALUES));
    if (j < n - 1) PetscCall(MatSetValue(A, r, r + 1, -1.0, INSERT_VALUES));
  }
  PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatCreateVecs(A, &x, &b));
  PetscCall(VecSetRandom(b, NULL));
  PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
  PetscCall(KSPSetOperators(ksp, A, A));
  PetscCall(KSPSetType(ksp, KSPFUSEDCG));
  {
    PC pc;
    PetscCall(KSPGetPC(ksp, &pc));
    PetscCall(PCSetType(pc, PCNONE)); /* the design's counts are for PCNONE and PCJACOBI (-pc_type jacobi) */
  }
  PetscCall(KSPSetFromOptions(ksp));
  PetscCall(KSPSetConvergenceTest(ksp, KSPConvergedSkip, NULL, NULL));
  PetscCall(KSPSetTolerances(ksp, 0.0, 0.0, PETSC_CURRENT, its));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-max_host_arrays", &max_host_arrays, NULL));
  PetscCall(FusedKSPDebugGetHostArrayCount(&h0));
  PetscCall(KSPSetUp(ksp));
  PetscCall(KSPGetType(ksp, &type));
  PetscCall(PetscStrcmp(type, KSPFUSEDCG, &cg));
  PetscCall(PetscStrcmp(type, KSPFUSEDBCGS, &bcgs));
  PetscCall(PetscStrcmp(type, KSPFUSEDSGMRES, &sgmres));
  PetscCheck(cg || bcgs || sgmres, PETSC_COMM_WORLD, PETSC_ERR_ARG_WRONG, "test_counts needs a fused solver, got %s", type);
  PetscCall(KSPSolve(ksp, b, x)); /* warm-up: device copies of the matrix and vectors */

  /* Per iteration: the difference of a solve of 2 its and one of its iterations, so the once-per-solve
     work (initial residual, first SpMV) cancels; its is a multiple of the GMRES restart (30 by default) */
  PetscCall(FusedKSPGetBackendCounters(&l0, &d0, NULL));
  PetscCall(KSPSolve(ksp, b, x));
  PetscCall(FusedKSPGetBackendCounters(&l1, &d1, NULL));
  PetscCall(KSPGetIterationNumber(ksp, &done));
  PetscCheck(done == its, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "Expected %" PetscInt_FMT " iterations, got %" PetscInt_FMT, its, done);
  PetscCall(KSPSetTolerances(ksp, 0.0, 0.0, PETSC_CURRENT, 2 * its));
  PetscCall(KSPSolve(ksp, b, x));
  PetscCall(FusedKSPGetBackendCounters(&l2, &d2, NULL));
  PetscCall(KSPGetIterationNumber(ksp, &done));
  PetscCheck(done == 2 * its, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "Expected %" PetscInt_FMT " iterations, got %" PetscInt_FMT, 2 * its, done);

  PetscCall(FusedKSPGetBackendName(&backend));
  launches      = (PetscReal)((l2 - l1) - (l1 - l0)) / its;
  copies        = (PetscReal)((d2 - d1) - (d1 - d0)) / its;
  want_launches = cg ? 2 : (bcgs ? 4 : 3);
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-expect_launches", &want_launches, NULL)); /* e.g. 1/k: one persistent kernel per chunk */
  {
    PetscBool one = PETSC_FALSE; /* fusedbcgs: 1 with -ksp_fusedbcgs_one_reduction 1, else 2 on one process */
    PetscCall(PetscOptionsGetBool(NULL, NULL, "-ksp_fusedbcgs_one_reduction", &one, NULL));
    want_copies = bcgs && !one ? 2 : 1;
  }
  PetscCall(KSPFusedGetCheckInterval(ksp, &k));
  if (k > 1) want_copies = 1.0 / k; /* chunks of k iterations: one copy per chunk */
  if (cg || bcgs || sgmres) {
    PetscInt chunks, records, replays;
    PetscCall(KSPFusedGetChunkCounts(ksp, &chunks, &records, &replays));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                          "last solve: %" PetscInt_FMT " chunks, %" PetscInt_FMT " recorded, %" PetscInt_FMT " replayed; kernels of the solves: %" PetscInt64_FMT " (%" PetscInt_FMT " its), %" PetscInt64_FMT " (%" PetscInt_FMT " its)\n", chunks,
                          records, replays, l1 - l0, its, l2 - l1, 2 * its));
  }
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%s on the %s backend: %.3f fused kernels and %.3f device->host copies per iteration (design: %g and %g)\n", type, backend, (double)launches, (double)copies, (double)want_launches, (double)want_copies));
  /* fusedsgmres: the second solve has one more restart cycle (true residual, its norm, scaling, solution update:
     up to 10 kernels and 2 copies), spread over `its` iterations; with chunks of a whole cycle the norm and the
     scaling run in the cycle's chunk, so the cycle costs exactly its chunk's copy */
  slack        = sgmres ? 10.0 / its : 1.0 / its;
  slack_copies = sgmres && k == its ? 0.0 : slack;
  PetscCheck(launches >= want_launches && launches <= want_launches + slack, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: %.3f fused kernels per iteration, expected %g", type, (double)launches, (double)want_launches);
  PetscCall(PetscStrcmp(backend, "host", &host));
  if (!host) PetscCheck(copies >= want_copies && copies <= want_copies + slack_copies + 1e-12, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: %.3f device->host copies per iteration, expected %g", type, (double)copies, (double)want_copies);
  PetscCall(FusedKSPDebugGetHostArrayCount(&h1));
  if (max_host_arrays >= 0) {
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "host arrays of fused vectors allocated by KSPSetUp() and the solves: %" PetscInt64_FMT " on rank 0 (at most %" PetscInt_FMT ")\n", h1 - h0, max_host_arrays));
    PetscCheck(h1 - h0 <= max_host_arrays, PETSC_COMM_SELF, PETSC_ERR_PLIB, "%s: KSPSetUp() and the solves allocated %" PetscInt64_FMT " host arrays of fused vectors, at most %" PetscInt_FMT " expected", type, h1 - h0, max_host_arrays);
  }
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "PASS test_counts %s\n", type));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&b));
  PetscCall(MatDestroy(&A));
  PetscCall(KSPDestroy(&ksp));
  PetscCall(PetscFinalize());
  return 0;
}
