/*
   The tuning of FusedKSP in one table: every value that picks a kernel form, a launch shape or a
   default, with why it is where it is.  The defaults were measured on an H100 and an H200
   (tutorials/results/RESULTS.md, "Why the thresholds are where they are").

   Tuning: values a run may change with an option (-fused_tune_*, read by FusedKSPInitializePackage(),
   listed by -help), so a user on another GPU or CPU retunes with tutorials/bench without recompiling.
   The constexpr values below it are fixed at compile time: kernels are instantiated with them
   (template arguments, register and shared-memory budgets), they fix the order in which every
   backend sums a dot product (so the backends agree to rounding), or they are hardware limits.
*/
#pragma once

#include <petscsys.h>

namespace fusedksp
{

/* Reductions, all backends: a dot product of n entries is summed in ReduceChunks(n) chunks (thread
   blocks on the device), the same on every backend so that they agree to rounding               */
constexpr PetscInt FUSED_REDUCE_BLOCKS = 2048; /* most partial sums of one dot product (first stage)                       */
constexpr PetscInt FUSED_MDOT_BLOCKS   = 128;  /* most partial sums of each dot of a multi-dot (CUDA: more for few groups) */
constexpr PetscInt FUSED_MIN_CHUNK     = 256;  /* fewest entries a block reduces (one per thread: short latency)           */
constexpr PetscInt FUSED_SINGLE_BLOCK  = 2048; /* up to this many entries one block reduces them all (no second stage: a few
                                                  extra loads per thread cost less than the fence, ticket and last block)  */

struct Tuning {
  /* Chunks of iterations (-ksp_fused_check_interval by default, see KSPFusedSetCheckInterval()) */
  PetscInt chunk_default       = 16;      /* k on a device backend                                                 */
  PetscInt chunk_default_whole = 32;      /* k when the backend runs a chunk as one persistent kernel: it stops
                                             where the solve stops, so a longer chunk costs nothing at the end  */
  PetscInt chunk_default_large = 4;       /* k above chunk_large_rows, where an iteration hides the round trip    */
  PetscInt chunk_large_rows    = 1 << 22; /* the global rows above which chunk_default_large applies              */

  /* Persistent chunk kernels (CUDA) */
  PetscInt cg_grid_occupancy_rows = 1 << 19;   /* from these rows the CG grid kernel compiled for more blocks per SM
                                                   (CG_GRID_BLOCKS_PER_SM) runs: from DRAM more resident warps hide
                                                   the latency better than its spills cost                           */
  PetscInt bcgs_grid_occupancy_rows = 1 << 17; /* the same for BiCGStab (BCGS_GRID_BLOCKS_PER_SM)                   */
  PetscInt bcgs_persistent_nnz      = 3 << 19; /* the most matrix entries of a persistent BiCGStab chunk: above,
                                                   recomputing s for the rows of As (traffic that grows with the
                                                   entries, not the rows) costs more than the steps' kernel
                                                   boundaries                                                        */
  PetscInt sgmres_persistent_rows = 1 << 17;   /* the most rows of a persistent SGMRES chunk: above, the steps'
                                                   multi-dot reads the basis faster than the cooperative grid        */
  PetscInt64 resident_block_nnz = 8192;        /* the most matrix entries per FUSED_BLOCK_CHUNK_ROWS rows (on
                                                   average) of a resident chunk kernel: its rows of the matrix live
                                                   in shared memory                                                  */

  /* Sparse products in CSR (CUDA) */
  PetscInt csr_entries_per_lane = 4; /* the threads of a row: the smallest power of two (2 to 32) at least the average
                                        entries of a row divided by this.  A warp's rows wait on their loads together,
                                        so fewer threads a row, each with several independent loads, keep more loads
                                        in flight: GAMG's solve (CSR transfers) 12% faster at 4e6 and 1.6e7 than
                                        with one entry a thread (H100, RESULTS.md)                              */

  /* PETSc's seqaijcusparse matrices in the fused products (src/ops/petscdevice.cxx) */
  PetscBool petsc_sell_copy = PETSC_TRUE; /* a SELL-P copy of their own where the pattern suits it (one more copy of
                                             the matrix in device memory; faster than cuSPARSE's CSR product), else
                                             PETSc's CSR arrays in place (the solvers' operator then PETSc's product) */

  /* Kokkos backend on a GPU */
  PetscInt kokkos_staging_bytes = 1 << 20; /* pinned host memory through which the kernels' pointer and coefficient
                                              arrays go to the device in stream order: each time it is used up the
                                              host waits for the device once (a restart cycle of fusedsgmres stages
                                              under 20 KB)                                                      */
  PetscInt kokkos_reduce_teams = 0;        /* the most chunks (one team of threads each) of a reduction of n entries; 0: sqrt(n),
                                               at most FUSED_REDUCE_BLOCKS.  Every chunk's partials go to the host and are
                                               added there, a cost that grows with the chunks, while a thread's share of the
                                               entries shrinks with them: sqrt(n) balances the two (H200, 2D Poisson,
                                               fastest of 256-2048 teams: 256-512 at 6.5e4-2.6e5, 1024 at 1e6, 2048 at 4e6) */
  /* Triangular solves of ILU(0)/ICC(0) (-pc_factor_fused_trsv auto) */
  PetscReal trsv_jacobi_max_theta = 0.75; /* Jacobi sweeps when theta (the largest absolute row sum of the Jacobi
                                             iteration matrices of both factors) is at most this, else exact
                                             level-scheduled solves                                            */
};

/* The values in use (defaults until FusedKSPInitializePackage() reads the options) */
extern Tuning tuning;

/* Reads the -fused_tune_* options into `tuning` (inside the package's PetscOptionsBegin/End) */
PetscErrorCode TuningSetFromOptions(PetscOptionItems PetscOptionsObject);

/* Resident chunk kernels (CUDA): a block keeps its rows of the vectors in registers and shared memory
   and its rows of the matrix in shared memory; up to FUSED_RESIDENT_CHUNK_BLOCKS such blocks form one
   thread block cluster (16: the largest Hopper allows, non-portable), which beats the cooperative
   grid up to the 16K rows of a full cluster (its barrier is cheaper, its loads stay on chip)      */
constexpr PetscInt FUSED_BLOCK_CHUNK_ROWS      = 1024; /* rows of the largest resident block: 2 per thread of 512 */
constexpr int      FUSED_RESIDENT_CHUNK_BLOCKS = 16;

/* The largest restart whose SGMRES chunk runs as one persistent kernel (CUDA): the kernel takes the
   pointers of the cycle's 2m + 1 vectors as a parameter, within the 4 KB every toolkit accepts     */
constexpr PetscInt FUSED_SGMRES_PERSISTENT_RESTART = 128;

namespace cuda
{
constexpr int BLOCK_SIZE       = 256; /* threads per block of every fused kernel                              */
constexpr int RESIDENT_THREADS = 512; /* threads of a resident block of FUSED_BLOCK_CHUNK_ROWS rows           */

/* Blocks per SM the persistent grid kernels are compiled for (__launch_bounds__): CG 6 (40 registers, some
   spilled) from cg_grid_occupancy_rows rows, else unbounded (48 registers); BiCGStab 3 (80 registers, 44
   bytes spilled) from bcgs_grid_occupancy_rows, else unbounded (110 registers); SGMRES always 4 (64
   registers without spills, as fast as 3 or faster at every size it runs)                                */
constexpr int CG_GRID_BLOCKS_PER_SM     = 6;
constexpr int BCGS_GRID_BLOCKS_PER_SM   = 3;
constexpr int SGMRES_GRID_BLOCKS_PER_SM = 4;

constexpr PetscInt SGMRES_RESIDENT_RESTART = 30; /* the largest restart of the resident SGMRES kernel: a step's
                                                    values (restart + 2) fit one warp                           */
constexpr int MAX_TABLE = 240;                   /* GMRES vectors per kernel launch (their pointers are a
                                                    kernel parameter, within 4 KB)                              */
constexpr int      MDOT_GROUP       = 8;         /* dot products per thread block of mdot (one load of y for 8) */
constexpr PetscInt GRAPH_MAX_LEVELS = 1 << 14;   /* triangular solves and ILU(0) factorizations with more
                                                    levels launch them on the stream instead of a CUDA graph
                                                    (the graph's memory and instantiation time)             */
constexpr int BLOCK_W_TILE = 8;                  /* columns of W per launch of block_mdot and block_maxpy: one
                                                    register per column and row (more: a launch per tile)  */
/* Vectors per grid row of block_mdot for a tile of tw columns: tw x BlockVTile(tw) <= 32 sums per thread (8 x 1..4,
   6 x 5, 5 x 6, 4 x 7..8), V read once per launch and the columns once per grid row.  64 sums per thread need
   about 164 registers, one block of 256 threads per SM: too few loads in flight to keep the memory busy.      */
constexpr int BlockVTile(int tw)
{
  return tw <= 4 ? 8 : tw == 5 ? 6 : tw == 6 ? 5 : 4;
}
} // namespace cuda

} // namespace fusedksp
