/* The tuning table (sys/tuning.hpp) and its options */
#include "sys/tuning.hpp"

namespace fusedksp
{

Tuning tuning;

PetscErrorCode TuningSetFromOptions(PetscOptionItems PetscOptionsObject)
{
  const char *man = "FusedKSPInitializePackage";

  PetscFunctionBegin;
  PetscOptionsHeadBegin(PetscOptionsObject, "FusedKSP tuning (defaults measured on H100/H200; see tutorials/results/RESULTS.md)");
  PetscCall(PetscOptionsRangeInt("-fused_tune_chunk_default", "Default check interval k of the fused solvers on a device backend", man, tuning.chunk_default, &tuning.chunk_default, nullptr, 1, PETSC_INT_MAX));
  PetscCall(PetscOptionsRangeInt("-fused_tune_chunk_default_whole", "Default k when a chunk runs as one persistent kernel", man, tuning.chunk_default_whole, &tuning.chunk_default_whole, nullptr, 1, PETSC_INT_MAX));
  PetscCall(PetscOptionsRangeInt("-fused_tune_chunk_default_large", "Default k above -fused_tune_chunk_large_rows global rows", man, tuning.chunk_default_large, &tuning.chunk_default_large, nullptr, 1, PETSC_INT_MAX));
  PetscCall(PetscOptionsRangeInt("-fused_tune_chunk_large_rows", "Global rows above which -fused_tune_chunk_default_large applies", man, tuning.chunk_large_rows, &tuning.chunk_large_rows, nullptr, 0, PETSC_INT_MAX));
  PetscCall(PetscOptionsRangeInt("-fused_tune_cg_grid_occupancy_rows", "CUDA: rows from which the persistent CG grid kernel compiled for more blocks per SM runs", man, tuning.cg_grid_occupancy_rows, &tuning.cg_grid_occupancy_rows, nullptr, 0,
                                 PETSC_INT_MAX));
  PetscCall(PetscOptionsRangeInt("-fused_tune_bcgs_grid_occupancy_rows", "CUDA: rows from which the persistent BiCGStab grid kernel compiled for more blocks per SM runs", man, tuning.bcgs_grid_occupancy_rows, &tuning.bcgs_grid_occupancy_rows,
                                 nullptr, 0, PETSC_INT_MAX));
  PetscCall(PetscOptionsRangeInt("-fused_tune_bcgs_persistent_nnz", "CUDA: the most matrix entries of a BiCGStab chunk run as one persistent kernel (above: its steps)", man, tuning.bcgs_persistent_nnz, &tuning.bcgs_persistent_nnz, nullptr, 0,
                                 PETSC_INT_MAX));
  PetscCall(PetscOptionsRangeInt("-fused_tune_sgmres_persistent_rows", "CUDA: the most rows of an SGMRES chunk run as one persistent kernel (above: its steps)", man, tuning.sgmres_persistent_rows, &tuning.sgmres_persistent_rows, nullptr, 0,
                                 PETSC_INT_MAX));
  {
    PetscInt nnz = (PetscInt)PetscMin(tuning.resident_block_nnz, (PetscInt64)PETSC_INT_MAX);
    PetscCall(PetscOptionsRangeInt("-fused_tune_resident_block_nnz", "CUDA: the most matrix entries per 1024 rows (on average) of a chunk run by the resident kernel (shared memory holds them)", man, nnz, &nnz, nullptr, 0, PETSC_INT_MAX));
    tuning.resident_block_nnz = nnz;
  }
  PetscCall(PetscOptionsRangeInt("-fused_tune_csr_entries_per_lane", "CUDA: CSR products give a row the smallest power of two (2 to 32) of threads at least its average entries divided by this", man, tuning.csr_entries_per_lane,
                                 &tuning.csr_entries_per_lane, nullptr, 1, 64));
  PetscCall(PetscOptionsBool("-fused_tune_petsc_sell_copy", "PETSc's seqaijcusparse matrices: the fused products read a SELL-P copy made on the device where the pattern suits it (one more copy of the matrix); false: PETSc's CSR arrays in place", man,
                             tuning.petsc_sell_copy, &tuning.petsc_sell_copy, nullptr));
  PetscCall(PetscOptionsRangeInt("-fused_tune_kokkos_staging_bytes", "Kokkos on a GPU: bytes of pinned host memory staging the kernels' pointer and coefficient arrays (the host waits for the device each time they are used up)", man,
                                 tuning.kokkos_staging_bytes, &tuning.kokkos_staging_bytes, nullptr, 64, PETSC_INT_MAX));
  PetscCall(PetscOptionsRangeInt("-fused_tune_kokkos_reduce_teams", "Kokkos on a GPU: the most chunks (one team of threads each) of a reduction of n entries, whose partials go to the host (0: sqrt(n), at most 2048)", man, tuning.kokkos_reduce_teams,
                                 &tuning.kokkos_reduce_teams, nullptr, 0, PETSC_INT_MAX));
  PetscCall(PetscOptionsReal("-fused_tune_trsv_jacobi_max_theta", "ILU(0)/ICC(0) with -pc_factor_fused_trsv auto: Jacobi sweeps when the factors' theta is at most this", man, tuning.trsv_jacobi_max_theta, &tuning.trsv_jacobi_max_theta, nullptr));
  PetscOptionsHeadEnd();
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace fusedksp
