static char help[] = "Counts the global reductions of one solve (run on 2 or more ranks) and checks\n\
  its <= count <= k its + c + r (its / restart)\n\
with k = 1 for fusedcg, fusedbcgs (its shadow vector Op^T r* needs the transpose, which aijfused has), fusedbicg and fusedsgmres, 2 for fusedsgmres with CGS2 (the design's one reduction per\n\
iteration), c = -reduction_slack (setup and the final true-residual check), and for fusedsgmres\n\
r = 2 per restart (the true residual computed at each restart); count >= its shows that a counter counts at all.\n\
fusedcagmres (s steps per block, restart m): 1 or 2 reductions per block of s steps (CholQR, its second pass where\n\
the block is ill-conditioned; always 2 with -ksp_cagmres_reorth_tol 0) and 2 per step of its first standard cycle\n\
(Newton basis: CGS2), 1 per restart cycle; it checks\n\
  p ceil(its_ca / s) <= count <= 2 its_std + 2 ceil(its_ca / s) + 2 cycles + c\n\
(p = 2 with -ksp_cagmres_reorth_tol 0, else 1;\n\
its_std = min(its, m) with the Newton basis, else 0; its_ca = its - its_std; the second reduction per cycle: its last,\n\
possibly partial, block), and prints the reductions per restart cycle.\n\
With -exchanges_per_block e it also counts the halo exchanges (MPI_Startall of persistent requests) and checks\n\
  ceil(its_ca / s) <= exchanges <= its_std + e (ceil(its_ca / s) + cycles) + 2 cycles + c\n\
(e = 1: the matrix powers kernel, one exchange of depth s per block; e = s: one per product).\n\
Two counters:\n\
  KSPFusedGetReductionCount() (fused solvers only): the library's own count;\n\
  MPI_Allreduce/MPI_Iallreduce (and their MPI-4 _c variants) calls on communicators of more than one rank, from any\n\
  library, counted by wrappers in this program through the MPI profiling interface (PMPI).\n\
Options:\n\
  -ksp_type <fusedcg> -pc_type <jacobi> ...: the solver\n\
  -reductions_per_iteration <k>: k (default from the solver type; required for other types)\n\
  -reduction_slack <4>: c\n\
  -exchanges_per_block <e>: fusedcagmres, count the halo exchanges too\n\
  -problem ... -n ... -mat_type aijfused: the problem (tutorials/problems.h)\n\n";

#include <fusedksp.h>
#include "problems.h"

#include "mpi_counters.h"

#include "check.h"

int main(int argc, char **argv)
{
  Problem            prob;
  KSP                ksp;
  PC                 pc;
  Vec                x;
  KSPConvergedReason reason;
  PetscMPIInt        size;
  PetscInt           its, k = 0, slack = 4, restart = 30, restarts = 0, bound, count;
  PetscReal          reorth_tol = -1.0;
  PetscInt           s = 5, lower, itsstd = 0, itsca = 0, cycles = 0;
  PetscBool          iscg, isbcgs, isbicg, issgmres, iscagmres, cgs2 = PETSC_FALSE;
  PetscInt64         ct0, ct1, xt0, xt1;
  PetscInt           per_block = -1;
  KSPType            type;

  PetscFunctionBeginUser;
  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(FusedKSPInitializePackage());
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscCheck(size > 1, PETSC_COMM_WORLD, PETSC_ERR_ARG_WRONG, "Run on 2 or more ranks: on one rank there are no global reductions to count");

  PetscCall(ProblemCreate(PETSC_COMM_WORLD, NULL, &prob));
  PetscCall(MatCreateVecs(prob.A, &x, NULL));
  PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
  PetscCall(KSPSetOperators(ksp, prob.A, prob.A));
  PetscCall(KSPSetType(ksp, KSPFUSEDCG));
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(PCSetType(pc, PCJACOBI));
  PetscCall(KSPSetFromOptions(ksp));
  PetscCall(KSPSetUp(ksp));
  PetscCall(KSPGetType(ksp, &type));
  PetscCall(PetscObjectTypeCompare((PetscObject)ksp, KSPFUSEDCG, &iscg));
  PetscCall(PetscObjectTypeCompare((PetscObject)ksp, KSPFUSEDBCGS, &isbcgs));
  PetscCall(PetscObjectTypeCompare((PetscObject)ksp, KSPFUSEDBICG, &isbicg));
  PetscCall(PetscObjectTypeCompare((PetscObject)ksp, KSPFUSEDSGMRES, &issgmres));
  PetscCall(PetscObjectTypeCompare((PetscObject)ksp, KSPFUSEDCAGMRES, &iscagmres));
  if (issgmres) {
    PetscCall(KSPFusedSGMRESGetCGS2(ksp, &cgs2));
    PetscCall(PetscOptionsGetInt(NULL, NULL, "-ksp_gmres_restart", &restart, NULL));
  }
  if (iscg || issgmres) k = cgs2 ? 2 : 1;
  if (isbcgs || isbicg) k = 1;
  if (iscagmres) {
    char      basis[64] = "newton";
    PetscBool monomial;

    PetscCall(KSPGMRESGetRestart(ksp, &restart));
    PetscCall(PetscOptionsGetInt(NULL, NULL, "-ksp_cagmres_s", &s, NULL));
    PetscCall(PetscOptionsGetString(NULL, NULL, "-ksp_cagmres_basis", basis, sizeof(basis), NULL));
    PetscCall(PetscOptionsGetReal(NULL, NULL, "-ksp_cagmres_reorth_tol", &reorth_tol, NULL));
    PetscCall(PetscStrcmp(basis, "monomial", &monomial));
    k = monomial ? 0 : 2; /* per step of the standard cycle; the blocks are counted below */
  }
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-reductions_per_iteration", &k, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-reduction_slack", &slack, NULL));
  PetscCheck(k > 0 || iscagmres, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "KSP type %s: give -reductions_per_iteration", type);

  PetscCall(PetscOptionsGetInt(NULL, NULL, "-exchanges_per_block", &per_block, NULL));
  ct0 = mpi_reductions;
  xt0 = mpi_startalls;
  PetscCall(KSPSolve(ksp, prob.b, x));
  ct1 = mpi_reductions;
  xt1 = mpi_startalls;
  PetscCall(KSPGetIterationNumber(ksp, &its));
  PetscCall(KSPGetConvergedReason(ksp, &reason));
  if (issgmres) restarts = its / restart;
  bound = k * its + slack + 2 * restarts;
  lower = its;
  if (iscagmres) {
    itsstd = k ? PetscMin(its, restart) : 0;
    itsca  = its - itsstd;
    cycles = (its + restart - 1) / restart;
    lower  = (reorth_tol == 0.0 ? 2 : 1) * ((itsca + s - 1) / s);
    bound  = k * itsstd + 2 * ((itsca + s - 1) / s) + 2 * cycles + slack;
  }
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%s on %s, %d ranks: %s after %" PetscInt_FMT " iterations; bound %" PetscInt_FMT " x %" PetscInt_FMT " + %" PetscInt_FMT " + 2 x %" PetscInt_FMT " restarts = %" PetscInt_FMT "\n", type, prob.name, size,
                        KSPConvergedReasons[reason], its, k, its, slack, restarts, bound));
  PetscCall(Check((PetscBool)(reason > 0), "converged (%s)", KSPConvergedReasons[reason]));
  if (iscg || isbcgs || isbicg || issgmres || iscagmres) {
    PetscCall(KSPFusedGetReductionCount(ksp, &count));
    PetscCall(
        Check((PetscBool)(count >= lower && count <= bound), "KSPFusedGetReductionCount() %" PetscInt_FMT " in [lower, bound] = [%" PetscInt_FMT ", %" PetscInt_FMT "] (%.2f per iteration)", count, lower, bound, its ? (double)count / its : 0.0));
  }
  if (iscagmres && itsca > 0)
    PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                          "fusedcagmres: %" PetscInt_FMT " steps in blocks of s = %" PetscInt_FMT " after %" PetscInt_FMT " steps of the standard cycle, restart %" PetscInt_FMT ": %" PetscInt_FMT " reductions, %.2f per restart cycle\n", itsca, s,
                          itsstd, restart, count, (double)count / cycles));
  if (iscagmres && per_block >= 0) { /* one exchange per product outside the blocks (cycle starts and ends, the standard cycle), per_block per block */
    const PetscInt blocks = (itsca + s - 1) / s, xbound = itsstd + per_block * (blocks + cycles) + 2 * cycles + slack;

    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "fusedcagmres: %" PetscInt64_FMT " halo exchanges for %" PetscInt_FMT " standard steps and about %" PetscInt_FMT " blocks\n", xt1 - xt0, itsstd, blocks));
    PetscCall(Check((PetscBool)(xt1 - xt0 >= blocks && xt1 - xt0 <= xbound), "halo exchanges (MPI_Startall) %" PetscInt64_FMT " in [%" PetscInt_FMT ", %" PetscInt_FMT "] (%" PetscInt_FMT " per block of s = %" PetscInt_FMT ")", xt1 - xt0, blocks,
                    xbound, per_block, s));
  }
  PetscCall(Check((PetscBool)(ct1 - ct0 >= lower && ct1 - ct0 <= bound), "MPI (PMPI) count %" PetscInt64_FMT " in [lower, bound] = [%" PetscInt_FMT ", %" PetscInt_FMT "] (%.2f per iteration)", ct1 - ct0, lower, bound,
                  its ? (double)(ct1 - ct0) / its : 0.0));

  PetscCall(KSPDestroy(&ksp));
  PetscCall(VecDestroy(&x));
  PetscCall(ProblemDestroy(&prob));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "test_reductions: %s\n", check_failures ? "FAIL" : "PASS"));
  PetscCall(PetscFinalize());
  return check_failures ? 1 : 0;
}
