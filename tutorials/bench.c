static char help[] = "Benchmark driver (seed 000's protocol): time per iteration of the fused and the classical Krylov solvers\n\
versus problem size, on FusedKSP's types and on PETSc's native CUDA types.\n\
For every problem, size, type set and solver: the operator is built once (not timed), the KSP is set up, one\n\
warm-up solve runs, then -reps timed solves of exactly -its iterations (rtol = atol = 0, KSPConvergedSkip;\n\
GMRES restart = -its unless -restart).  Time per iteration = median solve time / iterations.  Prints a table and writes a CSV.\n\
Options:\n\
  -problems <poisson2d,fem2d,elasticity3d,convdiff3d>  problems of tutorials/problems.h (also laplace3d, randdd, skew, indefinite)\n\
  -sizes <1e3,1e4,1e5,1e6,1e7,1.6e7>  target numbers of unknowns; grid n per problem: 2D n = sqrt(N), 3D n = cbrt(N),\n\
                              elasticity3d N = 3 n (n+1)^2 (3 dofs per node), randdd n = N\n\
  -max_n <2e7>                sizes above are lowered to this cap (duplicates dropped)\n\
  -max_n_<problem> <N>        cap for one problem; default -max_n, but 3e6 for elasticity3d (its host assembly,\n\
                              single-threaded, takes minutes at 1e7 dofs)\n\
  -solvers <fusedcg,cg,pipecg,fusedbcgs,bcgs,pipebcgs,fusedsgmres,gmres>  CG-family solvers run on SPD problems only;\n\
                              also fusedcagmres (CA-GMRES, -ksp_cagmres_s), fusedbicg and bicg\n\
  -types <fused,native>       fused: aijfused + fused (a copy of the assembled AIJ matrix, MatCreateVecs());\n\
                              native: aijcusparse + cuda (PETSc's own GPU types; skipped when PETSc has no CUDA or no GPU);\n\
                              petsc: aij + standard vectors (PETSc's own host types: the classical solvers as PETSc runs them\n\
                              on CPUs).  The fused solvers run on the fused and the native types (on the native ones\n\
                              their kernels take PETSc's device arrays: zero-copy), the classical ones on all; the\n\
                              classical ones on the native types run as PETSc alone (the plugin's Chebyshev smoother\n\
                              of PCGAMG/PCMG, which reads PETSc's device arrays too, turned off for them:\n\
                              -mg_levels_ksp_chebyshev_fused false unless given)\n\
  -its <30>                   iterations per solve\n\
  -rtol <0>                   > 0: every solve runs to this relative tolerance (PETSc's default test, at most 10000\n\
                              iterations) instead of -its iterations: time to solution, its = the iterations it took\n\
  -restart <its>              GMRES restart (default -its: one cycle per solve; fusedsgmres's resident kernel takes at\n\
                              most 30); with -its a multiple of it, each solve runs -its / -restart cycles\n\
  -reps <10>                  timed solves per row (the median is reported)\n\
  -row_time <5>               seconds of timed solves per row: when the first timed solve times -reps exceeds this, the row\n\
                              runs fewer (at least 1); when fewer than 3 fit, the same solver and types are skipped at the\n\
                              larger sizes of that problem (classical solvers on the fused types run their vector\n\
                              operations on the host and slow down most)\n\
  -floor_reps <200>           repetitions of FusedKSPMeasureDeviceFloor() (CUDA backend only)\n\
  -fence <sync>               how a timed solve waits for the queued work: sync or product (see below)\n\
  -guess <zero>               initial guess of every solve: zero, or nonzero (x = 1 before each solve, outside the timing)\n\
  -csv <bench.csv>            the CSV file written (one row per table row, plus the floor and bandwidth rows)\n\
  -pc_type <none>             the preconditioner of every row, set up before the timed solves (the byte model knows none\n\
                              and jacobi; with another PC, e.g. gamg, compare the us/it columns only); with\n\
                              -pc_factor_fused_trsv T the pc column reads ilu/trsv-T (the fused factor's triangular solves)\n\
  -bench_<option>             options of the problem generators (tutorials/problems.h), e.g. -bench_rhs random, -bench_pe 100\n\
  -rule_tol <1>               the rule: no fused solver slower than its classical counterpart (fusedcg: cg, fusedbcgs: bcgs,\n\
                              fusedsgmres and fusedcagmres: gmres, fusedbicg: bicg) on the same types, at any size and\n\
                              process count.  After the rows of each problem, size and type set that ran both, one\n\
                              'rule:' line per fused row compares the median solve times: broken when the fused solve\n\
                              takes more than -rule_tol times the classical one; the last line counts the pairs and the broken ones\n\
  -rule_check                 end with an error when the rule is broken (a benchmark run as a test)\n\
Columns: us/it med and min = median and fastest solve / iterations; GB/s = bytes of the model below / median time;\n\
setup ms = KSPSetUp() + PCSetUp() of the row (once, fenced), solve ms = the median solve, first ms = the first (warm-up)\n\
solve, not in the median: with the work of a first use (copies to the device, explicit transposes), what a single solve costs;\n\
CSV reductions_per_it, exchanges_per_it: global reductions and halo exchanges (MPI_Startall) per iteration of the timed solves,\n\
counted through the MPI profiling interface (0 on one rank); GMRES-family rows under MPI also print them per restart cycle;\n\
x model (CUDA backend) = median time / (device floor + model bytes / device copy bandwidth), 1 = at the floor;\n\
rows fusedcg-kK, fusedbcgs-kK, fusedsgmres-kK (KSPFusedSetCheckInterval K, graphs on; -nograph: off) use the graph floor (FusedKSPMeasureDeviceGraphFloor);\n\
the fused rows with k > 1 run each chunk as one persistent kernel (CUDA), the -steps rows as 2, 4 or 3 kernels per iteration (KSPFusedSetUsePersistent).\n\
Each timed region is: MPI_Barrier, KSPSolve, then a fence that waits for the work queued on the type set's stream\n\
(native CUDA solvers return before their last kernels finish): -fence sync (default) synchronizes that stream\n\
(FusedKSPSynchronize, PetscDeviceContextSynchronize); -fence product (the fence of the results before\n\
2026-11-22) runs a product with a 1x1 matrix of the type set and reads its 1-entry result on the host, which\n\
costs about one floor (10-15 us on an H200) per solve.\n\
Example (GPU machine): ./bench -csv bench.csv | tee bench.log; python3 tutorials/plot_bench.py bench.csv -o bench.png\n\n";

/*
   Byte model: bytes moved per iteration, 8-byte scalars, 4-byte indices, N rows, nnz entries.
     SpMV (CSR) S = nnz (8 + 4) + (N + 1) 4 + N 8 (x, each entry read once: assumes cache reuse) + N 8 (y written)
     Vector traffic in N-vectors of 8 bytes ("words"), one read or write of a vector = 1 word:
       fusedcg      1 SpMV +  7 words: fused update reads x, r, p, q, writes x, r, p           (jacobi: +2, weights in both kernels)
       cg           1 SpMV + 16 words: aypx 3, dot 2, axpy 3, axpy 3, PC copy 2, norm 1, dot 2  (jacobi: +1, pointwise multiply)
       pipecg       1 SpMV + 31 words: norm 1, 2 dots 4, PC copy 2, 4 aypx 12, 4 axpy 12         (jacobi: +1)
       fusedbcgs    2 SpMV + 15 words: <Ap,r*> 1; s = r - a Ap 3; <As,s>, <As,r*> 2;
                                       update reads x, p, s, Ap, As, r*, writes x, r, p 9      (jacobi: +2)
       bcgs         2 SpMV + 25 words: 2 dots 4, 2 axpbypcz 8, 2 waxpy 6, dotnorm2 2, norm 1, 2 PC copies 4 (jacobi: +2)
       pipebcgs     2 SpMV + 60 words: 5 axpbypcz 20, 5 waxpy 15, 2 aypx 6, 5 dots 9 (<y,y> reads y once), norm 1,
                                       2 PC copies 4, ...  as in PETSc's pipebcgs.c              (jacobi: +2)
       fusedsgmres  1 SpMV + m + 3 words, the average over the m = -restart steps i = 1..m of a cycle: multi-dot reads
                                       v_0..v_{i-1} and w (i + 1), update reads v_1..v_{i-1} and w, writes w (i + 1)
                                       (jacobi: +1)
       gmres        1 SpMV + m + 9 words: PC copy 2; step it = 0..m-1: VecMDot it + 2, VecMAXPY it + 3, norm 1,
                                       scale 2 (classical Gram-Schmidt, no refinement: PETSc's default)  (jacobi: +1)
       fusedcagmres 1 SpMV + 0.4 m + 9 words (s = 5): per block of s steps two CholQR passes, each one block multi-dot
                                       (reads the b + 1 previous vectors and the s new ones once) and one block
                                       multi-axpy (reads them, writes the s new ones): 4 (m / 2) / s + 6 words per
                                       step, plus the shift update of the matrix powers loop, 3  (jacobi: +1)
       fusedbicg    2 SpMV + 20 words: the A side update reads x, r, p, q, writes x, r, p (7), the A^T side the same
                                       for x~, r~, p~, q~ (7), the dots of r~ read z, u, r~ (3), those of the transposed
                                       product p, z, u (3)                                         (jacobi: +2)
       bicg         2 SpMV + 28 words: 2 PC copies 4, 2 dots 4, 2 aypx 6, 3 axpy 9, norm 1, ...   (jacobi: +2)
     Not counted: the once-per-solve work (initial residual, GMRES solution update), the partial sums, the
     fence.  Other PCs are counted as a copy.  achieved GB/s = model bytes / median time per iteration; the
     ratio printed with the CUDA backend is time / (floor median + model bytes / copy bandwidth).
*/
#include <time.h>
#include <petscdevice.h>
#include <fusedksp.h>
#include "problems.h"

#include "mpi_counters.h"

#define BENCH_MAX_LIST 32
#define BENCH_PREFIX "bench_"
#define BENCH_MIN_FIT 3          /* a row fitting fewer timed solves in -row_time ends its solver's sweep */
#define BENCH_ELASTICITY_CAP 3e6 /* default cap of elasticity3d: its host assembly takes minutes at 1e7 dofs */

typedef enum {
  GRID_2D,         /* N = n^2 */
  GRID_3D,         /* N = n^3 */
  GRID_ELASTICITY, /* N = 3 n (n+1)^2 */
  GRID_1D          /* N = n */
} GridKind;

typedef struct {
  const char *name;
  GridKind    grid;
} ProblemInfo;

static const ProblemInfo Problems[] = {{"poisson2d", GRID_2D}, {"fem2d", GRID_2D}, {"skew", GRID_2D}, {"indefinite", GRID_2D}, {"laplace3d", GRID_3D}, {"convdiff3d", GRID_3D}, {"elasticity3d", GRID_ELASTICITY}, {"randdd", GRID_1D}};

typedef struct {
  const char *name;         /* the row's label: the KSP type, or the type and a chunk setting */
  const char *type;         /* the KSP type */
  PetscInt    interval;     /* fused solvers: KSPFusedSetCheckInterval() (0: the solver's default) */
  PetscBool   graph;        /* ... and KSPFusedSetUseGraph() */
  PetscBool   persistent;   /* ... and KSPFusedSetUsePersistent() */
  PetscBool   fused;        /* a FusedKSP solver: fused types only */
  PetscBool   cgfamily;     /* SPD problems only */
  PetscBool   gmres;        /* GMRES: restart = -restart */
  PetscInt    spmvs;        /* SpMVs per iteration */
  PetscInt    words;        /* vector reads + writes per iteration (pc none), in N-vectors */
  PetscReal   words_m;      /* ... plus words_m * restart */
  PetscInt    words_jacobi; /* extra words with PCJACOBI */
} SolverInfo;

static const SolverInfo Solvers[] = {{KSPFUSEDCG, KSPFUSEDCG, 0, PETSC_TRUE, PETSC_TRUE, PETSC_TRUE, PETSC_TRUE, PETSC_FALSE, 1, 7, 0, 2},
                                     {"fusedcg-k30", KSPFUSEDCG, 30, PETSC_TRUE, PETSC_TRUE, PETSC_TRUE, PETSC_TRUE, PETSC_FALSE, 1, 7, 0, 2},
                                     {"fusedcg-k30-steps", KSPFUSEDCG, 30, PETSC_TRUE, PETSC_FALSE, PETSC_TRUE, PETSC_TRUE, PETSC_FALSE, 1, 7, 0, 2},
                                     {"fusedcg-k30-nograph", KSPFUSEDCG, 30, PETSC_FALSE, PETSC_TRUE, PETSC_TRUE, PETSC_TRUE, PETSC_FALSE, 1, 7, 0, 2},
                                     {"fusedcg-k16", KSPFUSEDCG, 16, PETSC_TRUE, PETSC_TRUE, PETSC_TRUE, PETSC_TRUE, PETSC_FALSE, 1, 7, 0, 2},
                                     {KSPCG, KSPCG, 0, PETSC_TRUE, PETSC_TRUE, PETSC_FALSE, PETSC_TRUE, PETSC_FALSE, 1, 16, 0, 1},
                                     {KSPPIPECG, KSPPIPECG, 0, PETSC_TRUE, PETSC_TRUE, PETSC_FALSE, PETSC_TRUE, PETSC_FALSE, 1, 31, 0, 1},
                                     {KSPFUSEDBCGS, KSPFUSEDBCGS, 0, PETSC_TRUE, PETSC_TRUE, PETSC_TRUE, PETSC_FALSE, PETSC_FALSE, 2, 15, 0, 2},
                                     {"fusedbcgs-k30", KSPFUSEDBCGS, 30, PETSC_TRUE, PETSC_TRUE, PETSC_TRUE, PETSC_FALSE, PETSC_FALSE, 2, 15, 0, 2},
                                     {"fusedbcgs-k30-steps", KSPFUSEDBCGS, 30, PETSC_TRUE, PETSC_FALSE, PETSC_TRUE, PETSC_FALSE, PETSC_FALSE, 2, 15, 0, 2},
                                     {KSPBCGS, KSPBCGS, 0, PETSC_TRUE, PETSC_TRUE, PETSC_FALSE, PETSC_FALSE, PETSC_FALSE, 2, 25, 0, 2},
                                     {KSPPIPEBCGS, KSPPIPEBCGS, 0, PETSC_TRUE, PETSC_TRUE, PETSC_FALSE, PETSC_FALSE, PETSC_FALSE, 2, 60, 0, 2},
                                     {KSPFUSEDSGMRES, KSPFUSEDSGMRES, 0, PETSC_TRUE, PETSC_TRUE, PETSC_TRUE, PETSC_FALSE, PETSC_TRUE, 1, 3, 1, 1},
                                     {"fusedsgmres-k30", KSPFUSEDSGMRES, 30, PETSC_TRUE, PETSC_TRUE, PETSC_TRUE, PETSC_FALSE, PETSC_TRUE, 1, 3, 1, 1},
                                     {"fusedsgmres-k30-steps", KSPFUSEDSGMRES, 30, PETSC_TRUE, PETSC_FALSE, PETSC_TRUE, PETSC_FALSE, PETSC_TRUE, 1, 3, 1, 1},
                                     {KSPGMRES, KSPGMRES, 0, PETSC_TRUE, PETSC_TRUE, PETSC_FALSE, PETSC_FALSE, PETSC_TRUE, 1, 9, 1, 1},
                                     {KSPFUSEDCAGMRES, KSPFUSEDCAGMRES, 0, PETSC_TRUE, PETSC_TRUE, PETSC_TRUE, PETSC_FALSE, PETSC_TRUE, 1, 9, 0.4, 1},
                                     {KSPFUSEDBICG, KSPFUSEDBICG, 0, PETSC_TRUE, PETSC_TRUE, PETSC_TRUE, PETSC_FALSE, PETSC_FALSE, 2, 20, 0, 2},
                                     {KSPBICG, KSPBICG, 0, PETSC_TRUE, PETSC_TRUE, PETSC_FALSE, PETSC_FALSE, PETSC_FALSE, 2, 28, 0, 2}};

typedef enum { TYPES_FUSED, TYPES_NATIVE, TYPES_PETSC, TYPES_COUNT } TypeSet;

static const char *const TypeSetNames[] = {"fused", "native", "petsc"};
static const MatType     TypeSetMat[]   = {MATAIJFUSED, MATAIJCUSPARSE, MATAIJ};

/* Everything a row needs besides the solver */
typedef struct {
  PetscInt       its, restart, reps, floor_reps;
  PetscReal      rtol; /* > 0: solves to this tolerance (time to solution) instead of -its iterations */
  PetscScalar    x0;   /* the initial guess of every solve: 0, or 1 (-guess nonzero) */
  PetscReal      row_time;
  PetscBool      have_floor;
  PetscReal      floor_min, floor_median, bandwidth;  /* us, us, GB/s */
  PetscReal      graph_floor_min, graph_floor_median; /* us per iteration of a replayed record of -its iterations */
  PetscLogDouble start;                               /* time the run started */
  char           date[32], gpu[128];
  FILE          *csv;
  char           pc[64];      /* -pc_type of every row */
  PetscReal      rule_tol;    /* the rule: a fused solve takes at most rule_tol times its classical counterpart's */
  PetscInt       rule_pairs;  /* pairs compared */
  PetscInt       rule_broken; /* ... and those where the fused solver was slower */
} Bench;

/* Waits for the work queued on a type set's stream: a synchronization of that stream (sync), or y = F x
   with a 1x1 matrix F of the type set and a host read of y, whose copy to the host follows the queued
   work (product: about one floor, 8 bytes copied)                                                     */
typedef struct {
  PetscBool product, fused;
  Mat       F;
  Vec       x, y;
} Fence;

static PetscErrorCode FenceWait(Fence *f)
{
  const PetscScalar *a;

  PetscFunctionBeginUser;
  if (f->product) {
    PetscCall(MatMult(f->F, f->x, f->y));
    PetscCall(VecGetArrayRead(f->y, &a));
    PetscCall(VecRestoreArrayRead(f->y, &a));
  } else if (f->fused) {
    PetscCall(FusedKSPSynchronize());
  } else {
    PetscDeviceContext dctx;
    PetscCall(PetscDeviceContextGetCurrentContext(&dctx));
    PetscCall(PetscDeviceContextSynchronize(dctx));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode FenceCreate(MatType type, PetscBool product, Fence *f)
{
  PetscFunctionBeginUser;
  f->product = product;
  PetscCall(PetscStrcmp(type, MATAIJFUSED, &f->fused));
  PetscCall(MatCreate(PETSC_COMM_SELF, &f->F));
  PetscCall(MatSetSizes(f->F, 1, 1, 1, 1));
  PetscCall(MatSetType(f->F, type));
  PetscCall(MatSetUp(f->F));
  PetscCall(MatSetValue(f->F, 0, 0, 1.0, INSERT_VALUES));
  PetscCall(MatAssemblyBegin(f->F, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(f->F, MAT_FINAL_ASSEMBLY));
  PetscCall(MatCreateVecs(f->F, &f->x, &f->y));
  PetscCall(VecSet(f->x, 1.0));
  PetscCall(FenceWait(f)); /* first use: device copies of F and x */
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode FenceDestroy(Fence *f)
{
  PetscFunctionBeginUser;
  PetscCall(MatDestroy(&f->F));
  PetscCall(VecDestroy(&f->x));
  PetscCall(VecDestroy(&f->y));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* B = A as a matrix of type set t.  PETSc converts AIJ to its CUDA types directly; to aijfused, MatConvert()
   has no converter and falls back to MatConvert_Basic(), which inserts rows without preallocation (18 s for
   1e6 elasticity3d rows), so the rows are copied into a preallocated matrix here. */
static PetscErrorCode CopyMatrix(Mat A, TypeSet t, Mat *B)
{
  PetscInt     m, n, M, N, rstart, rend, cstart, cend, *dnnz, *onnz;
  MatNullSpace nearnull;

  PetscFunctionBeginUser;
  PetscCall(MatGetNearNullSpace(A, &nearnull)); /* elasticity3d's rigid body modes, for PCGAMG */
  if (t != TYPES_FUSED) {
    PetscCall(MatConvert(A, TypeSetMat[t], MAT_INITIAL_MATRIX, B));
    PetscCall(MatSetNearNullSpace(*B, nearnull));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(MatGetLocalSize(A, &m, &n));
  PetscCall(MatGetSize(A, &M, &N));
  PetscCall(MatGetOwnershipRange(A, &rstart, &rend));
  PetscCall(MatGetOwnershipRangeColumn(A, &cstart, &cend));
  PetscCall(PetscCalloc2(m, &dnnz, m, &onnz));
  for (PetscInt r = rstart; r < rend; r++) {
    const PetscInt *cols;
    PetscInt        nc;

    PetscCall(MatGetRow(A, r, &nc, &cols, NULL));
    for (PetscInt k = 0; k < nc; k++) {
      if (cols[k] >= cstart && cols[k] < cend)
        dnnz[r - rstart]++;
      else
        onnz[r - rstart]++;
    }
    PetscCall(MatRestoreRow(A, r, &nc, &cols, NULL));
  }
  PetscCall(MatCreate(PetscObjectComm((PetscObject)A), B));
  PetscCall(MatSetSizes(*B, m, n, M, N));
  PetscCall(MatSetBlockSizesFromMats(*B, A, A));
  PetscCall(MatSetType(*B, TypeSetMat[t]));
  PetscCall(MatSetFromOptions(*B));                  /* -mat_aijfused_format */
  PetscCall(MatSeqAIJSetPreallocation(*B, 0, dnnz)); /* not MatXAIJSetPreallocation() with bs 1: it would reset A's block size */
  PetscCall(MatMPIAIJSetPreallocation(*B, 0, dnnz, 0, onnz));
  PetscCall(PetscFree2(dnnz, onnz));
  PetscCall(MatSetOption(*B, MAT_NO_OFF_PROC_ENTRIES, PETSC_TRUE));
  for (PetscInt r = rstart; r < rend; r++) {
    const PetscInt    *cols;
    const PetscScalar *vals;
    PetscInt           nc;

    PetscCall(MatGetRow(A, r, &nc, &cols, &vals));
    PetscCall(MatSetValues(*B, 1, &r, nc, cols, vals, INSERT_VALUES));
    PetscCall(MatRestoreRow(A, r, &nc, &cols, &vals));
  }
  PetscCall(MatAssemblyBegin(*B, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(*B, MAT_FINAL_ASSEMBLY));
  PetscCall(MatPropagateSymmetryOptions(A, *B));
  PetscCall(MatSetNearNullSpace(*B, nearnull));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static int CompareDouble(const void *a, const void *b)
{
  const PetscLogDouble x = *(const PetscLogDouble *)a, y = *(const PetscLogDouble *)b;

  return (x > y) - (x < y);
}

/* grid n whose number of unknowns is closest to the target */
static PetscInt GridN(GridKind grid, PetscReal target)
{
  PetscInt n = 1;

  switch (grid) {
  case GRID_2D:
    n = (PetscInt)PetscFloorReal(PetscSqrtReal(target) + 0.5);
    break;
  case GRID_3D:
    n = (PetscInt)PetscFloorReal(PetscCbrtReal(target) + 0.5);
    break;
  case GRID_ELASTICITY:
    n = (PetscInt)PetscCbrtReal(target / 3.0);
    while (n > 1 && 3.0 * n * (n + 1) * (n + 1) > target) n--;
    if (PetscAbsReal(3.0 * (n + 1) * (n + 2) * (n + 2) - target) < PetscAbsReal(3.0 * n * (n + 1) * (n + 1) - target)) n++;
    break;
  case GRID_1D:
    n = (PetscInt)PetscFloorReal(target + 0.5);
    break;
  }
  return PetscMax(n, 1);
}

/* The GPU's name (rank 0): the CUDA device of the fused operations, else nvidia-smi's first (a fork, which some MPI
   libraries refuse: under MPI the first source is the one that works), "none" without one; commas become spaces (CSV) */
static PetscErrorCode GetGPUName(char name[], size_t len)
{
  PetscMPIInt rank;
  FILE       *fp;

  PetscFunctionBeginUser;
  PetscCall(FusedKSPGetDeviceName(name, len));
  for (char *c = name; *c; c++)
    if (*c == ',') *c = ' ';
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  if (rank == 0 && !strcmp(name, "none") && (fp = popen("nvidia-smi --query-gpu=name --format=csv,noheader 2> /dev/null", "r"))) {
    char line[128] = "";

    if (!fgets(line, sizeof(line), fp)) line[0] = 0;
    if (pclose(fp) == 0 && line[0]) {
      for (char *c = line; *c; c++)
        if (*c == ',') *c = ' ';
      line[strcspn(line, "\r\n")] = 0;
      if (line[0]) PetscCall(PetscStrncpy(name, line, len));
    }
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Whether PETSc's CUDA types can run here: PETSc built with CUDA and a device it can initialize */
static PetscErrorCode NativeAvailable(PetscBool *avail, const char **why)
{
  PetscFunctionBeginUser;
  *avail = PETSC_FALSE;
  *why   = "PETSc was built without CUDA";
  if (PetscDefined(HAVE_CUDA)) {
    PetscErrorCode ierr;

    PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
    ierr = PetscDeviceInitialize(PETSC_DEVICE_CUDA);
    PetscCall(PetscPopErrorHandler());
    *avail = ierr == PETSC_SUCCESS ? PETSC_TRUE : PETSC_FALSE;
    *why   = "PETSc could not initialize a CUDA device";
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Bytes per iteration of the model above */
static PetscReal ModelBytes(const SolverInfo *s, PetscInt N, PetscInt64 nnz, PetscInt restart, PetscBool jacobi)
{
  const PetscReal spmv  = 12.0 * (PetscReal)nnz + 4.0 * (N + 1) + 16.0 * N;
  const PetscReal words = (PetscReal)(s->words + s->words_m * restart + (jacobi ? s->words_jacobi : 0));

  return s->spmvs * spmv + 8.0 * words * N;
}

/* One timed solve: initial guess x0, barrier, KSPSolve and the fence; the slowest rank's time */
static PetscErrorCode TimedSolve(KSP ksp, Vec b, Vec x, PetscScalar x0, Fence *fence, PetscLogDouble *time)
{
  PetscLogDouble t0, t1, dt;

  PetscFunctionBeginUser;
  PetscCall(VecSet(x, x0));
  PetscCallMPI(MPI_Barrier(PETSC_COMM_WORLD));
  PetscCall(PetscTime(&t0));
  PetscCall(KSPSolve(ksp, b, x));
  PetscCall(FenceWait(fence));
  PetscCall(PetscTime(&t1));
  dt = t1 - t0;
  PetscCallMPI(MPIU_Allreduce(&dt, time, 1, MPI_DOUBLE, MPI_MAX, PETSC_COMM_WORLD));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* One row: solver s on (A, b, x) of type set t; *slow is set when fewer than BENCH_MIN_FIT solves fit in -row_time */
/* The classical solver a fused one is compared with by the rule (NULL: not a fused solver) */
static const char *ClassicalCounterpart(const SolverInfo *s)
{
  static const char *const pairs[][2] = {{KSPFUSEDCG, KSPCG}, {KSPFUSEDBCGS, KSPBCGS}, {KSPFUSEDSGMRES, KSPGMRES}, {KSPFUSEDCAGMRES, KSPGMRES}, {KSPFUSEDBICG, KSPBICG}};

  for (size_t k = 0; k < PETSC_STATIC_ARRAY_LENGTH(pairs); k++)
    if (!strcmp(s->type, pairs[k][0])) return pairs[k][1];
  return NULL;
}

/* The rule for the rows of one problem, size and type set: every fused row whose classical counterpart ran too
   (solve[k] < 0: row k did not run) */
static PetscErrorCode CheckRule(Bench *bench, const char *problem, PetscInt N, TypeSet t, const PetscInt solvers[], PetscInt nsolvers, const PetscLogDouble solve[])
{
  PetscMPIInt size;

  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  for (PetscInt k = 0; k < nsolvers; k++) {
    const SolverInfo *s         = &Solvers[solvers[k]];
    const char       *classical = ClassicalCounterpart(s);

    if (!classical || solve[k] < 0) continue;
    for (PetscInt c = 0; c < nsolvers; c++) {
      PetscBool broken;

      if (solve[c] < 0 || strcmp(Solvers[solvers[c]].name, classical)) continue;
      broken = solve[k] > bench->rule_tol * solve[c] ? PETSC_TRUE : PETSC_FALSE;
      bench->rule_pairs++;
      if (broken) bench->rule_broken++;
      PetscCall(PetscPrintf(PETSC_COMM_WORLD, "    rule: %s %.2fx %s on the %s types, %s N = %" PetscInt_FMT ", %d process%s: %s\n", s->name, (double)(solve[c] / solve[k]), classical, TypeSetNames[t], problem, N, size, size > 1 ? "es" : "",
                            broken ? "BROKEN (the fused solver is slower)" : "ok"));
    }
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* One row: set up, warm up, time; *solve_out = the median solve time (s) */
/* The plugin's Chebyshev steps for the smoothers of PCGAMG/PCMG (off for PETSc's classical solvers on its own CUDA types) */
#define CHEBYSHEV_FUSED_OPTION "-mg_levels_ksp_chebyshev_fused"

static PetscErrorCode RunRow(Bench *bench, const char *problem, const SolverInfo *s, TypeSet t, Mat A, Vec b, Vec x, Fence *fence, PetscInt64 nnz, PetscBool *slow, PetscLogDouble *solve_out)
{
  KSP                ksp;
  PC                 pc;
  PetscBool          jacobi;
  PetscInt           N, its, reps = bench->reps;
  KSPConvergedReason reason;
  PetscInt           fit;
  PetscLogDouble    *times;
  PetscReal          us_median, us_min, bytes, GBs;
  PetscLogDouble     t0, t1, dt, setup, solve, first;
  char               ratio[32] = "-";
  PetscInt64         red0, xch0;
  PetscReal          red_per_it, xch_per_it;
  PetscBool          user_cheby = PETSC_FALSE;

  PetscFunctionBeginUser;
  PetscCall(MatGetSize(A, &N, NULL));
  PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
  PetscCall(KSPSetOperators(ksp, A, A));
  PetscCall(KSPSetType(ksp, s->type));
  if (s->fused) PetscCall(KSPSetFromOptions(ksp)); /* -fused_reduction; the settings below override the rest */
  if (s->interval) PetscCall(KSPFusedSetCheckInterval(ksp, s->interval));
  if (s->fused) PetscCall(KSPFusedSetUseGraph(ksp, s->graph));
  if (s->fused) PetscCall(KSPFusedSetUsePersistent(ksp, s->persistent));
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(PCSetType(pc, PCNONE));
  if (!s->fused && t == TYPES_NATIVE) { /* PETSc alone: the plugin's Chebyshev steps off for the smoothers set up below */
    PetscCall(PetscOptionsHasName(NULL, NULL, CHEBYSHEV_FUSED_OPTION, &user_cheby));
    if (!user_cheby) PetscCall(PetscOptionsSetValue(NULL, CHEBYSHEV_FUSED_OPTION, "false"));
  }
  PetscCall(PCSetFromOptions(pc));
  if (bench->rtol > 0.0)
    PetscCall(KSPSetTolerances(ksp, bench->rtol, PETSC_CURRENT, PETSC_CURRENT, 10000));
  else {
    PetscCall(KSPSetTolerances(ksp, 0.0, 0.0, PETSC_CURRENT, bench->its));
    PetscCall(KSPSetConvergenceTest(ksp, KSPConvergedSkip, NULL, NULL));
  }
  PetscCall(KSPSetInitialGuessNonzero(ksp, bench->x0 != 0.0 ? PETSC_TRUE : PETSC_FALSE));
  if (s->gmres) PetscCall(KSPGMRESSetRestart(ksp, bench->restart));
  PetscCallMPI(MPI_Barrier(PETSC_COMM_WORLD)); /* the setup (the preconditioner's included), timed once */
  PetscCall(PetscTime(&t0));
  PetscCall(KSPSetUp(ksp));
  PetscCall(PCSetUp(pc));
  PetscCall(FenceWait(fence));
  PetscCall(PetscTime(&t1));
  if (!s->fused && t == TYPES_NATIVE && !user_cheby) PetscCall(PetscOptionsClearValue(NULL, CHEBYSHEV_FUSED_OPTION));
  dt = t1 - t0;
  PetscCallMPI(MPIU_Allreduce(&dt, &setup, 1, MPI_DOUBLE, MPI_MAX, PETSC_COMM_WORLD));
  PetscCall(PetscObjectTypeCompare((PetscObject)pc, PCJACOBI, &jacobi));

  /* warm-up (first-use copies to the device), timed, then the timed solves; the first one sizes the row */ PetscCall(VecSet(x, bench->x0));
  PetscCallMPI(MPI_Barrier(PETSC_COMM_WORLD));
  PetscCall(PetscTime(&t0));
  PetscCall(KSPSolve(ksp, b, x));
  PetscCall(FenceWait(fence));
  PetscCall(PetscTime(&t1));
  dt = t1 - t0;
  PetscCallMPI(MPIU_Allreduce(&dt, &first, 1, MPI_DOUBLE, MPI_MAX, PETSC_COMM_WORLD));
  if (s->interval > 1) { /* several processes without -fused_reduction nccl on a GPU, say: k = 1 */
    PetscInt chunks;

    PetscCall(KSPFusedGetChunkCounts(ksp, &chunks, NULL, NULL));
    if (!chunks) PetscCall(PetscPrintf(PETSC_COMM_WORLD, "    note: %s ran with k = 1 (-ksp_view says why; several processes on a GPU need -fused_reduction nccl)\n", s->name));
  }
  PetscCall(PetscMalloc1(reps, &times));
  red0 = mpi_reductions;
  xch0 = mpi_startalls;
  PetscCall(TimedSolve(ksp, b, x, bench->x0, fence, &times[0]));
  fit   = (PetscInt)PetscMin((PetscReal)reps, bench->row_time / times[0]);
  *slow = fit < BENCH_MIN_FIT ? PETSC_TRUE : PETSC_FALSE;
  reps  = PetscMax(1, fit);
  for (PetscInt k = 1; k < reps; k++) PetscCall(TimedSolve(ksp, b, x, bench->x0, fence, &times[k]));
  qsort(times, (size_t)reps, sizeof(*times), CompareDouble);
  PetscCall(KSPGetIterationNumber(ksp, &its));
  /* per iteration, without the timing's own maximum (one reduction per timed solve); 0 on one rank */
  red_per_it = (PetscReal)(mpi_reductions - red0 - reps) / (PetscReal)(reps * PetscMax(its, 1));
  xch_per_it = (PetscReal)(mpi_startalls - xch0) / (PetscReal)(reps * PetscMax(its, 1));
  PetscCall(KSPGetConvergedReason(ksp, &reason));
  PetscCheck(its > 0, PETSC_COMM_WORLD, PETSC_ERR_NOT_CONVERGED, "%s on %s ran no iteration (reason %s)", s->name, problem, KSPConvergedReasons[reason]);
  solve     = reps % 2 ? times[reps / 2] : 0.5 * (times[reps / 2 - 1] + times[reps / 2]);
  us_median = 1.0e6 * solve / its;
  us_min    = 1.0e6 * times[0] / its;
  bytes     = ModelBytes(s, N, nnz, bench->restart, jacobi);
  GBs       = bytes / (us_median * 1.0e3);
  if (bench->have_floor) { /* rows with chunks of iterations against the graph floor */
    const PetscReal floor = s->interval > 1 ? bench->graph_floor_median : bench->floor_median;
    PetscCall(PetscSNPrintf(ratio, sizeof(ratio), "%.2f", us_median / (floor + bytes / (bench->bandwidth * 1.0e3))));
  }

  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%-13s %10" PetscInt_FMT " %7.1f  %-12s %-7s %4" PetscInt_FMT " %11.2f %11.2f %9.1f %8s %9.2f %9.2f %9.2f%s\n", problem, N, (double)nnz / N, s->name, TypeSetNames[t], its, (double)us_median, (double)us_min,
                        (double)GBs, ratio, 1.0e3 * setup, 1.0e3 * solve, 1.0e3 * first, reps < bench->reps ? "  (fewer timed solves)" : ""));
  if (s->gmres && red_per_it + xch_per_it > 0)
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "    per restart cycle of %" PetscInt_FMT ": %.1f ms, %.1f global reductions, %.1f halo exchanges\n", bench->restart, 1.0e-3 * us_median * bench->restart, (double)(red_per_it * bench->restart),
                          (double)(xch_per_it * bench->restart)));
  if (reason < 0) PetscCall(PetscPrintf(PETSC_COMM_WORLD, "    warning: %s stopped with %s after %" PetscInt_FMT " iterations\n", s->name, KSPConvergedReasons[reason], its));
  if (reps < bench->reps)
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "    note: a solve takes %.2f s, so %" PetscInt_FMT " timed solve%s instead of %" PetscInt_FMT " (-row_time %g)%s\n", times[reps / 2], reps, reps > 1 ? "s" : "", bench->reps, (double)bench->row_time,
                          *slow ? "; larger sizes skipped" : ""));
  PetscCall(PetscFPrintf(PETSC_COMM_WORLD, bench->csv, "%s,%s,%s,%" PetscInt_FMT ",%" PetscInt64_FMT ",%s,%s,%" PetscInt_FMT ",%.4f,%.4f,%.0f,%.3f,%s,%.6f,%.6f,%.4f,%.4f,%.6f\n", bench->date, bench->gpu, problem, N, nnz, s->name, TypeSetNames[t],
                         its, (double)us_median, (double)us_min, (double)bytes, (double)GBs, bench->pc, (double)setup, (double)solve, (double)red_per_it, (double)xch_per_it, (double)first));
  if (bench->csv) fflush(bench->csv);
  fflush(PETSC_STDOUT);
  PetscCall(PetscFree(times));
  PetscCall(KSPDestroy(&ksp));
  *solve_out = solve;
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode FindProblem(const char *name, const ProblemInfo **info)
{
  PetscFunctionBeginUser;
  *info = NULL;
  for (size_t k = 0; k < PETSC_STATIC_ARRAY_LENGTH(Problems); k++) {
    PetscBool match;

    PetscCall(PetscStrcmp(name, Problems[k].name, &match));
    if (match) *info = &Problems[k];
  }
  PetscCheck(*info, PETSC_COMM_WORLD, PETSC_ERR_ARG_UNKNOWN_TYPE, "-problems: unknown problem %s (poisson2d, fem2d, skew, indefinite, laplace3d, convdiff3d, elasticity3d, randdd)", name);
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode FindSolver(const char *name, PetscInt *index)
{
  PetscFunctionBeginUser;
  *index = -1;
  for (PetscInt k = 0; k < (PetscInt)PETSC_STATIC_ARRAY_LENGTH(Solvers); k++) {
    PetscBool match;

    PetscCall(PetscStrcmp(name, Solvers[k].name, &match));
    if (match) *index = k;
  }
  PetscCheck(*index >= 0, PETSC_COMM_WORLD, PETSC_ERR_ARG_UNKNOWN_TYPE,
             "-solvers: %s is not benchmarked (fusedcg, fusedcg-k30, fusedcg-k30-steps, fusedcg-k30-nograph, fusedcg-k16, cg, pipecg, fusedbcgs, fusedbcgs-k30, fusedbcgs-k30-steps, bcgs, pipebcgs, fusedsgmres, fusedsgmres-k30, "
             "fusedsgmres-k30-steps, gmres, fusedcagmres, fusedbicg, bicg)",
             name);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* All rows of one problem at one grid size */
static PetscErrorCode RunProblem(Bench *bench, const char *name, PetscInt n, const PetscInt solvers[], PetscInt nsolvers, const TypeSet types[], PetscInt ntypes, Fence fences[], PetscBool slow[][TYPES_COUNT])
{
  Problem        prob;
  MatInfo        info;
  PetscInt       N;
  PetscInt64     nnz;
  PetscLogDouble t0, t1, solve[BENCH_MAX_LIST];
  char           nstr[32];

  PetscFunctionBeginUser;
  PetscCall(PetscSNPrintf(nstr, sizeof(nstr), "%" PetscInt_FMT, n));
  PetscCall(PetscOptionsSetValue(NULL, "-" BENCH_PREFIX "problem", name));
  PetscCall(PetscOptionsSetValue(NULL, "-" BENCH_PREFIX "n", nstr));
  PetscCall(PetscTime(&t0));
  PetscCall(ProblemCreate(PETSC_COMM_WORLD, BENCH_PREFIX, &prob));
  PetscCall(PetscTime(&t1));
  PetscCall(MatGetSize(prob.A, &N, NULL));
  PetscCall(MatGetInfo(prob.A, MAT_GLOBAL_SUM, &info));
  nnz = (PetscInt64)info.nz_used;
  PetscCall(
      PetscPrintf(PETSC_COMM_WORLD, "# %s: N = %" PetscInt_FMT ", nnz = %" PetscInt64_FMT ", %s, assembled in %.2f s (%.0f s into the run)\n", prob.name, N, nnz, prob.symmetric ? "SPD" : "not SPD: no CG-family solvers", t1 - t0, t1 - bench->start));

  for (PetscInt t = 0; t < ntypes; t++) {
    Mat A;
    Vec x, b;

    PetscCall(PetscTime(&t0));
    PetscCall(CopyMatrix(prob.A, types[t], &A));
    PetscCall(MatCreateVecs(A, &x, &b));
    PetscCall(VecCopy(prob.b, b));
    PetscCall(PetscTime(&t1));
    if (t1 - t0 > 1.0) PetscCall(PetscPrintf(PETSC_COMM_WORLD, "# conversion to %s took %.2f s\n", TypeSetMat[types[t]], t1 - t0));
    for (PetscInt k = 0; k < nsolvers; k++) {
      const SolverInfo *s = &Solvers[solvers[k]];

      solve[k] = -1;
      if (s->cgfamily && !prob.symmetric) continue;
      if (s->fused && types[t] == TYPES_PETSC) continue;
      if (slow[k][types[t]]) {
        PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%-13s %10" PetscInt_FMT " %7.1f  %-12s %-7s  skipped: too slow at a smaller size (-row_time)\n", name, N, (double)nnz / N, s->name, TypeSetNames[types[t]]));
        continue;
      }
      PetscCall(RunRow(bench, name, s, types[t], A, b, x, &fences[types[t]], nnz, &slow[k][types[t]], &solve[k]));
    }
    PetscCall(CheckRule(bench, name, N, types[t], solvers, nsolvers, solve));
    PetscCall(VecDestroy(&x));
    PetscCall(VecDestroy(&b));
    PetscCall(MatDestroy(&A));
  }
  PetscCall(ProblemDestroy(&prob));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode FreeList(PetscInt n, char *list[])
{
  PetscFunctionBeginUser;
  for (PetscInt k = 0; k < n; k++) PetscCall(PetscFree(list[k]));
  PetscFunctionReturn(PETSC_SUCCESS);
}

int main(int argc, char **argv)
{
  const char    *default_problems[] = {"poisson2d", "fem2d", "elasticity3d", "convdiff3d"};
  const char    *default_solvers[]  = {KSPFUSEDCG, KSPCG, KSPPIPECG, KSPFUSEDBCGS, KSPBCGS, KSPPIPEBCGS, KSPFUSEDSGMRES, KSPGMRES};
  const char    *default_types[]    = {"fused", "native"};
  char          *problems[BENCH_MAX_LIST], *solver_names[BENCH_MAX_LIST], *type_names[BENCH_MAX_LIST];
  PetscInt       nproblems = BENCH_MAX_LIST, nsizes = BENCH_MAX_LIST, nsolvers = BENCH_MAX_LIST, ntypes = BENCH_MAX_LIST, solvers[BENCH_MAX_LIST], ntypes_run = 0;
  PetscReal      sizes[BENCH_MAX_LIST] = {1e3, 1e4, 1e5, 1e6, 1e7, 1.6e7}, max_n = 2e7;
  PetscBool      set_problems, set_sizes, set_solvers, set_types, help_only, native, slow[BENCH_MAX_LIST][TYPES_COUNT];
  TypeSet        types[TYPES_COUNT];
  Fence          fences[TYPES_COUNT];
  PetscBool      fence_product = PETSC_FALSE, rule_check = PETSC_FALSE;
  const char    *backend, *native_why;
  char           solves[64];
  char           csvname[PETSC_MAX_PATH_LEN] = "bench.csv";
  Bench          bench;
  time_t         now = time(NULL);
  PetscLogDouble end;

  PetscFunctionBeginUser;
  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(FusedKSPInitializePackage());
  PetscCall(PetscMemzero(&bench, sizeof(bench)));
  PetscCall(PetscMemzero(fences, sizeof(fences)));
  bench.its        = 30;
  bench.reps       = 10;
  bench.floor_reps = 200;
  bench.row_time   = 5.0;
  bench.rule_tol   = 1.0;
  PetscCall(PetscTime(&bench.start));
  PetscOptionsBegin(PETSC_COMM_WORLD, NULL, "FusedKSP benchmark (tutorials/bench.c)", "KSP");
  PetscCall(PetscOptionsStringArray("-problems", "Problems (tutorials/problems.h)", "bench", problems, &nproblems, &set_problems));
  PetscCall(PetscOptionsRealArray("-sizes", "Target numbers of unknowns", "bench", sizes, &nsizes, &set_sizes));
  PetscCall(PetscOptionsReal("-max_n", "Sizes above are lowered to this cap", "bench", max_n, &max_n, NULL));
  PetscCall(PetscOptionsStringArray("-solvers", "KSP types to time", "bench", solver_names, &nsolvers, &set_solvers));
  PetscCall(PetscOptionsStringArray("-types", "Type sets: fused (aijfused + fused), native (aijcusparse + cuda), petsc (aij + standard)", "bench", type_names, &ntypes, &set_types));
  PetscCall(PetscOptionsInt("-its", "Iterations per solve", "bench", bench.its, &bench.its, NULL));
  PetscCall(PetscOptionsReal("-rtol", "> 0: solve to this relative tolerance instead of -its iterations (time to solution)", "bench", bench.rtol, &bench.rtol, NULL));
  bench.restart = bench.its;
  PetscCall(PetscOptionsInt("-restart", "GMRES restart (default: -its)", "bench", bench.restart, &bench.restart, NULL));
  PetscCall(PetscOptionsInt("-reps", "Timed solves per row", "bench", bench.reps, &bench.reps, NULL));
  PetscCall(PetscOptionsReal("-row_time", "Seconds of timed solves per row before the row runs fewer", "bench", bench.row_time, &bench.row_time, NULL));
  PetscCall(PetscOptionsInt("-floor_reps", "Repetitions of the device floor measurement", "bench", bench.floor_reps, &bench.floor_reps, NULL));
  {
    const char *const fences_names[] = {"sync", "product"};
    PetscInt          fence          = 0;
    PetscCall(PetscOptionsEList("-fence", "How a timed solve waits for the queued work: sync (a stream synchronization) or product (a 1x1 product read on the host, the fence before 2026-11-22)", "bench", fences_names, 2, fences_names[fence], &fence,
                                NULL));
    fence_product = fence == 1 ? PETSC_TRUE : PETSC_FALSE;
  }
  {
    const char *const guesses[] = {"zero", "nonzero"};
    PetscInt          guess     = 0;
    PetscCall(PetscOptionsEList("-guess", "Initial guess of every solve: zero, or nonzero (x = 1, KSPSetInitialGuessNonzero)", "bench", guesses, 2, guesses[guess], &guess, NULL));
    bench.x0 = guess == 1 ? 1.0 : 0.0;
  }
  PetscCall(PetscOptionsString("-csv", "CSV file written", "bench", csvname, csvname, sizeof(csvname), NULL));
  PetscCall(PetscOptionsReal("-rule_tol", "The rule: a fused solve takes at most this many times its classical counterpart's on the same types", "bench", bench.rule_tol, &bench.rule_tol, NULL));
  PetscCall(PetscOptionsBool("-rule_check", "End with an error when the rule is broken", "bench", rule_check, &rule_check, NULL));
  PetscOptionsEnd();
  PetscCall(PetscStrncpy(bench.pc, PCNONE, sizeof(bench.pc)));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-pc_type", bench.pc, sizeof(bench.pc), NULL));
  { /* the PC column names the fused factor's triangular solves when they are asked for (the native factor has its own) */
    char      trsv[16];
    PetscBool set;
    size_t    len;

    PetscCall(PetscOptionsGetString(NULL, NULL, "-pc_factor_fused_trsv", trsv, sizeof(trsv), &set));
    PetscCall(PetscStrlen(bench.pc, &len));
    if (set) PetscCall(PetscSNPrintf(bench.pc + len, sizeof(bench.pc) - len, "/trsv-%s", trsv));
  }
  PetscCall(PetscOptionsHasHelp(NULL, &help_only));
  if (help_only) { /* the options are printed: nothing to run */
    if (set_problems) PetscCall(FreeList(nproblems, problems));
    if (set_solvers) PetscCall(FreeList(nsolvers, solver_names));
    if (set_types) PetscCall(FreeList(ntypes, type_names));
    PetscCall(PetscFinalize());
    return 0;
  }
  if (!set_problems)
    for (nproblems = 0; nproblems < (PetscInt)PETSC_STATIC_ARRAY_LENGTH(default_problems); nproblems++) PetscCall(PetscStrallocpy(default_problems[nproblems], &problems[nproblems]));
  if (!set_sizes) nsizes = 6;
  if (!set_solvers)
    for (nsolvers = 0; nsolvers < (PetscInt)PETSC_STATIC_ARRAY_LENGTH(default_solvers); nsolvers++) PetscCall(PetscStrallocpy(default_solvers[nsolvers], &solver_names[nsolvers]));
  if (!set_types)
    for (ntypes = 0; ntypes < (PetscInt)PETSC_STATIC_ARRAY_LENGTH(default_types); ntypes++) PetscCall(PetscStrallocpy(default_types[ntypes], &type_names[ntypes]));
  PetscCheck(bench.its >= 1 && bench.restart >= 1 && bench.reps >= 1 && bench.floor_reps >= 1, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-its, -restart, -reps and -floor_reps must be at least 1");
  PetscCheck(bench.row_time > 0, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-row_time must be positive, got %g", (double)bench.row_time);
  for (PetscInt k = 0; k < nsizes; k++) PetscCheck(sizes[k] >= 1, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-sizes: %g is not a number of unknowns", (double)sizes[k]);
  for (PetscInt k = 0; k < nproblems; k++) {
    const ProblemInfo *info;

    PetscCall(FindProblem(problems[k], &info));
  }
  for (PetscInt k = 0; k < nsolvers; k++) PetscCall(FindSolver(solver_names[k], &solvers[k]));

  PetscCall(NativeAvailable(&native, &native_why));
  for (PetscInt k = 0; k < ntypes; k++) {
    PetscBool isfused, isnative, ispetsc;

    PetscCall(PetscStrcmp(type_names[k], "fused", &isfused));
    PetscCall(PetscStrcmp(type_names[k], "native", &isnative));
    PetscCall(PetscStrcmp(type_names[k], "petsc", &ispetsc));
    PetscCheck(isfused || isnative || ispetsc, PETSC_COMM_WORLD, PETSC_ERR_ARG_UNKNOWN_TYPE, "-types: unknown type set %s (fused, native, petsc)", type_names[k]);
    if (isnative && !native) {
      PetscCall(PetscPrintf(PETSC_COMM_WORLD, "# native types (aijcusparse + cuda) skipped: %s\n", native_why));
      continue;
    }
    PetscCheck(ntypes_run < TYPES_COUNT, PETSC_COMM_WORLD, PETSC_ERR_ARG_WRONG, "-types: each type set at most once");
    types[ntypes_run] = isfused ? TYPES_FUSED : (isnative ? TYPES_NATIVE : TYPES_PETSC);
    PetscCall(FenceCreate(TypeSetMat[types[ntypes_run]], fence_product, &fences[types[ntypes_run]]));
    ntypes_run++;
  }

  PetscCall(FusedKSPGetBackendName(&backend));
  PetscCall(PetscStrcmp(backend, "cuda", &bench.have_floor));
  PetscCall(GetGPUName(bench.gpu, sizeof(bench.gpu)));
  PetscCheck(strftime(bench.date, sizeof(bench.date), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now)), PETSC_COMM_SELF, PETSC_ERR_SYS, "strftime failed");
  PetscCall(PetscFOpen(PETSC_COMM_WORLD, csvname, "w", &bench.csv));
  PetscCall(PetscFPrintf(PETSC_COMM_WORLD, bench.csv, "date,gpu,problem,N,nnz,solver,types,its,us_per_it_median,us_per_it_min,bytes_per_it_model,achieved_GBs,pc,setup_s,solve_s,reductions_per_it,exchanges_per_it,first_solve_s\n"));
  if (bench.rtol > 0.0)
    PetscCall(PetscSNPrintf(solves, sizeof(solves), "solves to rtol %g", (double)bench.rtol));
  else
    PetscCall(PetscSNPrintf(solves, sizeof(solves), "%" PetscInt_FMT " iterations per solve", bench.its));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "# FusedKSP benchmark %s, GPU: %s, FusedKSP backend: %s, %s, PC %s, GMRES restart %" PetscInt_FMT ", median of %" PetscInt_FMT " solves, fence: %s, initial guess: %s, CSV: %s\n", bench.date, bench.gpu,
                        backend, solves, bench.pc, bench.restart, bench.reps, fence_product ? "product" : "sync", bench.x0 != 0.0 ? "nonzero" : "zero", csvname));
  if (bench.have_floor) {
    PetscCall(FusedKSPMeasureDeviceFloor(bench.floor_reps, &bench.floor_min, &bench.floor_median, &bench.bandwidth));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "# floor (2 empty kernels + 1 KB copy + sync): median %.2f us, min %.2f us; device-to-device copy: %.0f GB/s\n", (double)bench.floor_median, (double)bench.floor_min, (double)bench.bandwidth));
    PetscCall(PetscFPrintf(PETSC_COMM_WORLD, bench.csv, "%s,%s,,,,floor,cuda,,%.4f,%.4f,,,,,\n", bench.date, bench.gpu, (double)bench.floor_median, (double)bench.floor_min));
    PetscCall(PetscFPrintf(PETSC_COMM_WORLD, bench.csv, "%s,%s,,,,bandwidth,cuda,,,,,%.3f,,,\n", bench.date, bench.gpu, (double)bench.bandwidth));
    PetscCall(FusedKSPMeasureDeviceGraphFloor(bench.floor_reps, bench.its, &bench.graph_floor_min, &bench.graph_floor_median));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "# graph floor (%" PetscInt_FMT " x 2 empty kernels + 1 KB copy in one graph, replay + sync) per iteration: median %.2f us, min %.2f us\n", bench.its, (double)bench.graph_floor_median,
                          (double)bench.graph_floor_min));
    PetscCall(PetscFPrintf(PETSC_COMM_WORLD, bench.csv, "%s,%s,,,,graphfloor,cuda,,%.4f,%.4f,,,,,\n", bench.date, bench.gpu, (double)bench.graph_floor_median, (double)bench.graph_floor_min));
  } else
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "# no device floor: the FusedKSP backend is %s (the last column needs the CUDA backend)\n", backend));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%-13s %10s %7s  %-12s %-7s %4s %11s %11s %9s %8s %9s %9s %9s\n", "problem", "N", "nnz/row", "solver", "types", "its", "us/it med", "us/it min", "GB/s", "x model", "setup ms", "solve ms", "first ms"));

  for (PetscInt p = 0; p < nproblems; p++) {
    const ProblemInfo *info;
    PetscReal          cap   = max_n;
    PetscInt           nprev = -1;
    char               capname[80];
    PetscBool          capset;

    PetscCall(FindProblem(problems[p], &info));
    if (info->grid == GRID_ELASTICITY) cap = PetscMin(max_n, BENCH_ELASTICITY_CAP);
    PetscCall(PetscSNPrintf(capname, sizeof(capname), "-max_n_%s", info->name));
    PetscCall(PetscOptionsGetReal(NULL, NULL, capname, &cap, &capset));
    if (!capset && cap < max_n)
      PetscCall(PetscStrncpy(capname, "-max_n_elasticity3d, default: its host assembly is slow", sizeof(capname)));
    else if (!capset)
      PetscCall(PetscStrncpy(capname, "-max_n", sizeof(capname)));
    for (PetscInt k = 0; k < nsolvers; k++)
      for (PetscInt t = 0; t < TYPES_COUNT; t++) slow[k][t] = PETSC_FALSE;
    for (PetscInt k = 0; k < nsizes; k++) {
      const PetscInt n = GridN(info->grid, PetscMin(sizes[k], cap));

      if (sizes[k] > cap) PetscCall(PetscPrintf(PETSC_COMM_WORLD, "# %s: size %g is above the cap %g (%s): %s\n", info->name, (double)sizes[k], (double)cap, capname, n == nprev ? "dropped" : "lowered to the cap"));
      if (n == nprev) continue;
      nprev = n;
      PetscCall(RunProblem(&bench, info->name, n, solvers, nsolvers, types, ntypes_run, fences, slow));
    }
  }

  PetscCall(PetscTime(&end));
  if (bench.rule_pairs)
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "# rule (no fused solver slower than its classical counterpart on the same types, tolerance %g): %" PetscInt_FMT " pairs, %" PetscInt_FMT " broken\n", (double)bench.rule_tol, bench.rule_pairs,
                          bench.rule_broken));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "# done in %.0f s; CSV: %s\n", end - bench.start, csvname));
  PetscCall(PetscFClose(PETSC_COMM_WORLD, bench.csv));
  for (PetscInt k = 0; k < ntypes_run; k++) PetscCall(FenceDestroy(&fences[types[k]]));
  PetscCall(FreeList(nproblems, problems));
  PetscCall(FreeList(nsolvers, solver_names));
  PetscCall(FreeList(ntypes, type_names));
  PetscCheck(!rule_check || !bench.rule_broken, PETSC_COMM_WORLD, PETSC_ERR_LIB, "-rule_check: in %" PetscInt_FMT " of %" PetscInt_FMT " pairs a fused solver was slower than its classical counterpart on the same types (the 'rule:' lines)",
             bench.rule_broken, bench.rule_pairs);
  PetscCall(PetscFinalize());
  return 0;
}
