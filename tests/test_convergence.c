static char help[] = "Whole solves of a fused solver against its classical counterpart on one problem (tutorials/problems.h):\n\
for each preconditioner and relative tolerance, both solve from a zero guess; the fused solver must converge\n\
when the classical one does, within the iteration bound, with its TRUE residual (in the norm of its convergence\n\
test) at or below the tolerance.  Where the classical solver's own true residual ends above the tolerance (the\n\
tolerance is below its attainable accuracy), the fused one must converge honestly or stop no further from it.  One table row per solve pair (-csv: comma-separated).\n\
Options:\n\
  -ksp_type <fusedcg|fusedbcgs|fusedsgmres>: the fused solver (classical counterpart: cg, bcgs, gmres with right\n\
     preconditioning like fusedsgmres)\n\
  -pcs <none,jacobi,ilu>: preconditioners (any PCType; ilu on one process, bjacobi for several)\n\
  -rtols <1e-6,1e-8,1e-10>: relative tolerances\n\
  -max_ratio <r>: fused iterations <= r x classical (default 1.05 for fusedcg, 1.25 for fusedbcgs)\n\
  -extra_per_cycle <e>: fusedsgmres: fused iterations <= classical + e per restart cycle (default 1)\n\
  -max_it <10000>: iteration limit of both\n\
  -csv: comma-separated rows\n\
  -expect_stagnation, -expect_replacement: some solve must stop on a stagnating true residual after residual\n\
     replacements (a tolerance below the attainable accuracy) / converge after a residual replacement\n\
  -problem ... -n ... -mat_type aijfused -vec_type fused: the problem\n\n";

#include <fusedksp.h>
#include "problems.h"

#include "check.h"

/* The norm of v that the KSP's convergence test measures: ||M^{-1} v|| (preconditioned norm, left
   preconditioning) or ||v|| */
static PetscErrorCode TestNorm(KSP ksp, Vec v, Vec work, PetscReal *nrm)
{
  KSPNormType ntype;
  PCSide      side;

  PetscFunctionBeginUser;
  PetscCall(KSPGetNormType(ksp, &ntype));
  PetscCall(KSPGetPCSide(ksp, &side));
  if (ntype == KSP_NORM_PRECONDITIONED && side == PC_LEFT) {
    PC pc;
    PetscCall(KSPGetPC(ksp, &pc));
    PetscCall(PCApply(pc, v, work));
    PetscCall(VecNorm(work, NORM_2, nrm));
  } else
    PetscCall(VecNorm(v, NORM_2, nrm));
  PetscFunctionReturn(PETSC_SUCCESS);
}

typedef struct {
  PetscInt           its, replacements;
  KSPConvergedReason reason;
  PetscReal          true_over_tol; /* true residual / (rtol x initial residual), in the test's norm */
} SolveResult;

static PetscErrorCode Solve(Problem *prob, const char *ksptype, const char *pctype, PCSide side, PetscReal rtol, PetscInt maxit, PetscBool fused, Vec x, Vec r, Vec work, SolveResult *res)
{
  KSP       ksp;
  PC        pc;
  PetscReal bnorm, rnorm;

  PetscFunctionBeginUser;
  PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
  PetscCall(KSPSetOperators(ksp, prob->A, prob->A));
  PetscCall(KSPSetType(ksp, ksptype));
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(PCSetType(pc, pctype));
  PetscCall(KSPSetPCSide(ksp, side));
  PetscCall(KSPSetTolerances(ksp, rtol, 0.0, PETSC_CURRENT, maxit));
  PetscCall(KSPSetFromOptions(ksp)); /* e.g. -ksp_fused_check_interval, -ksp_gmres_restart */
  PetscCall(KSPSetUp(ksp));
  PetscCall(VecZeroEntries(x));
  PetscCall(KSPSolve(ksp, prob->b, x));
  PetscCall(KSPGetIterationNumber(ksp, &res->its));
  PetscCall(KSPGetConvergedReason(ksp, &res->reason));
  res->replacements = 0;
  if (fused) PetscCall(KSPFusedGetResidualReplacementCount(ksp, &res->replacements));
  PetscCall(MatMult(prob->A, x, r));
  PetscCall(VecAYPX(r, -1.0, prob->b));
  PetscCall(TestNorm(ksp, r, work, &rnorm));
  PetscCall(TestNorm(ksp, prob->b, work, &bnorm));
  res->true_over_tol = rnorm / (rtol * bnorm);
  PetscCall(KSPDestroy(&ksp));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Splits a comma-separated option value into at most max items */
static PetscErrorCode GetList(const char *name, const char *def, char items[][32], PetscInt max, PetscInt *n)
{
  char   buf[512];
  char  *tok, *save = NULL;
  size_t len;

  PetscFunctionBeginUser;
  PetscCall(PetscStrncpy(buf, def, sizeof(buf)));
  PetscCall(PetscOptionsGetString(NULL, NULL, name, buf, sizeof(buf), NULL));
  *n = 0;
  for (tok = strtok_r(buf, ",", &save); tok && *n < max; tok = strtok_r(NULL, ",", &save)) {
    PetscCall(PetscStrlen(tok, &len));
    PetscCheck(len < 32, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "%s: item '%s' too long", name, tok);
    PetscCall(PetscStrncpy(items[(*n)++], tok, 32));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

int main(int argc, char **argv)
{
  Problem   prob;
  Vec       x, r, work;
  char      fused[64] = KSPFUSEDCG, pcs[8][32], rtols[8][32];
  char      classical[64];
  PetscInt  npc, nrtol, maxit = 10000, restart = 30;
  PetscReal max_ratio = -1, extra_per_cycle = 1;
  PetscBool csv = PETSC_FALSE, is_cg, is_bcgs, is_sgmres, expect_stagnation = PETSC_FALSE, expect_replacement = PETSC_FALSE;
  PetscInt  nstagnated = 0, nreplaced = 0;
  PCSide    side;

  PetscFunctionBeginUser;
  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(FusedKSPInitializePackage());
  PetscCall(PetscOptionsGetString(NULL, NULL, "-ksp_type", fused, sizeof(fused), NULL));
  PetscCall(PetscStrcmp(fused, KSPFUSEDCG, &is_cg));
  PetscCall(PetscStrcmp(fused, KSPFUSEDBCGS, &is_bcgs));
  PetscCall(PetscStrcmp(fused, KSPFUSEDSGMRES, &is_sgmres));
  PetscCheck(is_cg || is_bcgs || is_sgmres, PETSC_COMM_WORLD, PETSC_ERR_ARG_WRONG, "-ksp_type must be fusedcg, fusedbcgs or fusedsgmres, got %s", fused);
  PetscCall(PetscStrncpy(classical, is_cg ? KSPCG : is_bcgs ? KSPBCGS : KSPGMRES, sizeof(classical)));
  side = is_sgmres ? PC_RIGHT : PC_LEFT; /* fusedsgmres is right preconditioned: so is gmres here, for the same residual norm */
  if (is_cg) max_ratio = 1.05;
  if (is_bcgs) max_ratio = 1.25;
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-max_ratio", &max_ratio, NULL));
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-extra_per_cycle", &extra_per_cycle, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-max_it", &maxit, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-ksp_gmres_restart", &restart, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-csv", &csv, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-expect_stagnation", &expect_stagnation, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-expect_replacement", &expect_replacement, NULL));
  PetscCall(GetList("-pcs", "none,jacobi,ilu", pcs, 8, &npc));
  PetscCall(GetList("-rtols", "1e-6,1e-8,1e-10", rtols, 8, &nrtol));
  PetscCall(PetscOptionsClearValue(NULL, "-ksp_type")); /* each solve sets its own type */

  PetscCall(ProblemCreate(PETSC_COMM_WORLD, NULL, &prob));
  PetscCall(MatCreateVecs(prob.A, &x, &r));
  PetscCall(VecDuplicate(x, &work));
  if (csv) PetscCall(PetscPrintf(PETSC_COMM_WORLD, "problem,pc,rtol,classical,classical_its,classical_reason,classical_true_over_tol,fused,fused_its,fused_reason,ratio,true_over_tol,replacements\n"));
  for (PetscInt ip = 0; ip < npc; ++ip) {
    for (PetscInt it = 0; it < nrtol; ++it) {
      SolveResult c, f;
      PetscReal   rtol  = atof(rtols[it]), ratio, bound;
      const char *label = prob.name;

      PetscCall(Solve(&prob, classical, pcs[ip], side, rtol, maxit, PETSC_FALSE, x, r, work, &c));
      PetscCall(Solve(&prob, fused, pcs[ip], side, rtol, maxit, PETSC_TRUE, x, r, work, &f));
      ratio = c.its ? (PetscReal)f.its / (PetscReal)c.its : (f.its ? PETSC_INFINITY : 1.0);
      bound = is_sgmres ? c.its + extra_per_cycle * PetscCeilReal((PetscReal)c.its / (PetscReal)restart) : max_ratio * c.its;
      PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                            csv ? "%s,%s,%s,%s,%" PetscInt_FMT ",%s,%.3g,%s,%" PetscInt_FMT ",%s,%.3f,%.3g,%" PetscInt_FMT "\n"
                                : "%-22s %-7s %-6s %-5s %5" PetscInt_FMT " %-18s true/tol %-7.3g %-11s %5" PetscInt_FMT " %-18s ratio %.3f true/tol %-7.3g replacements %" PetscInt_FMT "\n",
                            label, pcs[ip], rtols[it], classical, c.its, KSPConvergedReasons[c.reason], (double)c.true_over_tol, fused, f.its, KSPConvergedReasons[f.reason], (double)ratio, (double)f.true_over_tol, f.replacements));
      if (f.reason == KSP_DIVERGED_BREAKDOWN && f.replacements > 0) nstagnated++;
      if (f.reason > 0 && f.replacements > 0) nreplaced++;
      if (c.reason <= 0) continue; /* the classical solver did not converge: nothing to compare */
      if (c.true_over_tol > 1.05) {
        /* the classical solver reported convergence with a true residual above the tolerance: the tolerance is
           below the attainable accuracy.  The fused solver must not do worse: converge honestly, or stop
           (stagnation of the true residual after replacements) no further from the tolerance              */
        PetscCall(Check((PetscBool)((f.reason > 0 && f.true_over_tol <= 1.0) || (f.reason == KSP_DIVERGED_BREAKDOWN && f.true_over_tol <= c.true_over_tol)),
                        "%s, %s, rtol %s (below %s's attainable accuracy): %s converges or stops with a true residual at most %s's", label, pcs[ip], rtols[it], classical, fused, classical));
        continue;
      }
      PetscCall(Check((PetscBool)(f.reason > 0), "%s, %s, rtol %s: %s converges as %s does", label, pcs[ip], rtols[it], fused, classical));
      PetscCall(Check((PetscBool)(f.its <= bound), "%s, %s, rtol %s: %s iterations %" PetscInt_FMT " <= %g (%s: %" PetscInt_FMT ")", label, pcs[ip], rtols[it], fused, f.its, (double)bound, classical, c.its));
      if (f.reason > 0) PetscCall(Check((PetscBool)(f.true_over_tol <= 1.0), "%s, %s, rtol %s: %s true residual %.3g x the tolerance", label, pcs[ip], rtols[it], fused, (double)f.true_over_tol));
    }
  }
  if (expect_stagnation) PetscCall(Check((PetscBool)(nstagnated > 0), "a solve stopped on the stagnation of its true residual after replacements (%" PetscInt_FMT ")", nstagnated));
  if (expect_replacement) PetscCall(Check((PetscBool)(nreplaced > 0), "a solve converged after a residual replacement (%" PetscInt_FMT ")", nreplaced));
  PetscCall(VecDestroy(&work));
  PetscCall(VecDestroy(&r));
  PetscCall(VecDestroy(&x));
  PetscCall(ProblemDestroy(&prob));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "test_convergence: %s\n", check_failures ? "FAIL" : "PASS"));
  PetscCall(PetscFinalize());
  return check_failures ? 1 : 0;
}
