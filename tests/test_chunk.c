static char help[] = "Chunks of fusedcg iterations with device-resident scalars (-ksp_fused_check_interval k):\n\
every k agrees with k = 1 - same residual history to rounding, same converged reason and iteration, same\n\
solution - with several preconditioners (point-block Jacobi, a kernel of the backend, chunked as Jacobi) and norm types; the maximum iteration count is never exceeded;\n\
divergence, NaN/Inf and an indefinite matrix are found at the iteration where k = 1 finds them; a user\n\
convergence test stops at the same iteration with fewer than k extra iterations run; records and replays\n\
(graphs) agree with direct runs; repeated solves with a new right-hand side, new matrix values and a new size\n\
give the results of fresh k = 1 solves.  Ends with 'test_chunk: PASS' or 'test_chunk: FAIL'.\n\
Options: -n <24> the grid of the 2D Poisson problem; -expect_graph: the backend records graphs (CUDA), so\n\
the repeated solves must replay them; -persistent <bool> (default true): fusedcg may run whole chunks as one\n\
persistent kernel (KSPFusedSetUsePersistent(), CUDA backend).\n\n";

#include <fusedksp.h>
#include "problems.h"
#include "check.h"

#define MAXHIST 2000

typedef struct {
  PetscReal          x0norm; /* the norm of the initial guess */
  PetscInt           its, nhist;
  KSPConvergedReason reason;
  PetscReal          hist[MAXHIST];
  Vec                x;
  PetscInt           chunks, records, replays;
} Result;

typedef struct {
  const char *ksp;
  const char *pc;
  KSPNormType norm;
  PetscInt    maxit;
  PetscReal   rtol, divtol;
  PetscInt    userstop; /* > 0: a user convergence test stops at this iteration */
  PetscBool   graph;
  PCSide      side;
  PetscBool   k1only;   /* the solver runs k = 1 for this setup (fusedbcgs with a general PC) */
  PetscBool   restarts; /* residual replacements may restart chunks at every iteration */
  PetscInt    restart;  /* fusedsgmres: the restart (0: its default) */
  PetscBool   guess;    /* a nonzero initial guess (x = 1): fusedcg starts in its first chunk, fusedbcgs on the host */
  PetscBool   exact;    /* the kernels stop where the host's test stops: ceil(its / k) chunks (none stopped early) */
  PetscInt    rnorm0;   /* KSPConvergedDefault()'s initial norm: 0 default, 1 KSPConvergedDefaultSetUIRNorm(), 2 ...SetUMIRNorm() */
  PetscBool   chaotic;  /* the problem amplifies rounding by ~1e30 (a huge entry), so the history and the
                           iteration of the stop depend on the summation order: the chunks run in steps, whose
                           kernels sum as the k = 1 ones do (the persistent kernels' stops are checked against
                           the host in test_backend and on the other problems here)                           */
} Setup;

static PetscErrorCode UserStop(KSP ksp, PetscInt it, PetscReal rnorm, KSPConvergedReason *reason, void *ctx)
{
  const PetscInt *stop = (const PetscInt *)ctx;

  PetscFunctionBeginUser;
  *reason = it >= *stop ? KSP_CONVERGED_USER : KSP_CONVERGED_ITERATING;
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscBool persistent = PETSC_TRUE; /* -persistent: whole fusedcg chunks as one persistent kernel (CUDA) */

static PetscErrorCode SolveOn(KSP ksp, Mat A, Vec b, PetscInt k, const Setup *s, Result *r)
{
  PC               pc;
  const PetscReal *hist;

  PetscFunctionBeginUser;
  PetscCall(KSPSetOperators(ksp, A, A));
  PetscCall(KSPSetType(ksp, s->ksp));
  PetscCall(KSPSetFromOptions(ksp)); /* -ksp_fusedbcgs_one_reduction (several processes); the settings below override the rest */
  if (s->side != PC_SIDE_DEFAULT) PetscCall(KSPSetPCSide(ksp, s->side));
  if (s->restart) PetscCall(KSPGMRESSetRestart(ksp, s->restart));
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(PCSetType(pc, s->pc));
  PetscCall(KSPSetNormType(ksp, s->norm));
  PetscCall(KSPSetTolerances(ksp, s->rtol, PETSC_CURRENT, s->divtol, s->maxit));
  PetscCall(KSPSetResidualHistory(ksp, NULL, MAXHIST, PETSC_TRUE));
  if (s->userstop > 0) PetscCall(KSPSetConvergenceTest(ksp, UserStop, (void *)&s->userstop, NULL));
  if (s->rnorm0 == 1) PetscCall(KSPConvergedDefaultSetUIRNorm(ksp));
  if (s->rnorm0 == 2) PetscCall(KSPConvergedDefaultSetUMIRNorm(ksp));
  PetscCall(KSPFusedSetCheckInterval(ksp, k));
  PetscCall(KSPFusedSetUseGraph(ksp, s->graph));
  PetscCall(KSPFusedSetUsePersistent(ksp, persistent && !s->chaotic ? PETSC_TRUE : PETSC_FALSE));
  if (r->x) { /* the same solution vector for repeated solves of one size, as applications do */
    PetscInt n, nb;
    PetscCall(VecGetSize(r->x, &n));
    PetscCall(VecGetSize(b, &nb));
    if (n != nb) PetscCall(VecDestroy(&r->x));
  }
  if (!r->x) PetscCall(VecDuplicate(b, &r->x));
  PetscCall(VecSet(r->x, s->guess ? 1.0 : 0.0));
  PetscCall(VecNorm(r->x, NORM_2, &r->x0norm));
  PetscCall(KSPSetInitialGuessNonzero(ksp, s->guess));
  PetscCall(KSPSolve(ksp, b, r->x));
  PetscCall(KSPGetIterationNumber(ksp, &r->its));
  PetscCall(KSPGetConvergedReason(ksp, &r->reason));
  PetscCall(KSPGetResidualHistory(ksp, &hist, &r->nhist));
  PetscCheck(r->nhist <= MAXHIST, PETSC_COMM_SELF, PETSC_ERR_PLIB, "history too long");
  PetscCall(PetscArraycpy(r->hist, hist, r->nhist));
  PetscCall(KSPFusedGetChunkCounts(ksp, &r->chunks, &r->records, &r->replays));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode Solve(Mat A, Vec b, PetscInt k, const Setup *s, Result *r)
{
  KSP ksp;

  PetscFunctionBeginUser;
  PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
  PetscCall(SolveOn(ksp, A, b, k, s, r));
  PetscCall(KSPDestroy(&ksp));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* r agrees with the k = 1 reference: reason, iterations (exactly, or within k - 1 more with a user test), history, solution
   (relative to the larger of its norm and the initial guess's: the iterates' scale, also when the solution is 0) */
static PetscErrorCode Agree(const char *what, PetscInt k, const Setup *s, const Result *ref, const Result *r)
{
  PetscReal hdiff = 0, xdiff, xnorm;
  PetscInt  n     = PetscMin(ref->nhist, r->nhist);
  Vec       d;

  PetscFunctionBeginUser;
  for (PetscInt i = 0; i < n; ++i) hdiff = PetscMax(hdiff, PetscAbsReal(ref->hist[i] - r->hist[i]) / PetscMax(PetscMax(ref->hist[0], ref->hist[i]), PETSC_SMALL));
  PetscCall(VecDuplicate(r->x, &d));
  PetscCall(VecWAXPY(d, -1.0, ref->x, r->x));
  PetscCall(VecNorm(d, NORM_2, &xdiff));
  PetscCall(VecNorm(ref->x, NORM_2, &xnorm));
  PetscCall(VecDestroy(&d));
  PetscCall(Check((PetscBool)(r->reason == ref->reason), "%s k=%" PetscInt_FMT ": reason %s (k=1: %s)", what, k, KSPConvergedReasons[r->reason], KSPConvergedReasons[ref->reason]));
  PetscCall(Check((PetscBool)(r->nhist == ref->nhist), "%s k=%" PetscInt_FMT ": %" PetscInt_FMT " history entries (k=1: %" PetscInt_FMT ")", what, k, r->nhist, ref->nhist));
  PetscCall(Check((PetscBool)(hdiff <= 1e-10), "%s k=%" PetscInt_FMT ": history differs by %g (relative to the larger of the first norm and the entry)", what, k, (double)hdiff));
  PetscCall(Check((PetscBool)(r->its <= s->maxit), "%s k=%" PetscInt_FMT ": %" PetscInt_FMT " iterations, max_it %" PetscInt_FMT, what, k, r->its, s->maxit));
  if (s->userstop > 0) {
    PetscCall(Check((PetscBool)(r->its >= ref->its && r->its - ref->its < k), "%s k=%" PetscInt_FMT ": %" PetscInt_FMT " iterations run, the test stopped at %" PetscInt_FMT " (fewer than k extra)", what, k, r->its, ref->its));
  } else {
    PetscCall(Check((PetscBool)(r->its == ref->its), "%s k=%" PetscInt_FMT ": %" PetscInt_FMT " iterations (k=1: %" PetscInt_FMT ")", what, k, r->its, ref->its));
    xnorm = PetscMax(xnorm, ref->x0norm);
    if (ref->reason > 0) PetscCall(Check((PetscBool)(xdiff <= 1e-9 * xnorm), "%s k=%" PetscInt_FMT ": solution differs by %g (relative)", what, k, (double)(xnorm > 0 ? xdiff / xnorm : xdiff)));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Solves with k = 1 and with each k of ks, and compares */
static PetscErrorCode Sweep(const char *what, Mat A, Vec b, const Setup *s, KSPConvergedReason expect)
{
  const PetscInt ks[] = {2, 7, 30};
  Result         ref = {0}, r = {0};

  PetscFunctionBeginUser;
  PetscCall(Solve(A, b, 1, s, &ref));
  if (expect == KSP_DIVERGED_NULL) /* any divergence (which one depends on rounding) */
    PetscCall(Check((PetscBool)(ref.reason < 0), "%s k=1: reason %s, a divergence", what, KSPConvergedReasons[ref.reason]));
  else if (expect != KSP_CONVERGED_ITERATING)
    PetscCall(Check((PetscBool)(ref.reason == expect), "%s k=1: reason %s, expected %s", what, KSPConvergedReasons[ref.reason], KSPConvergedReasons[expect]));
  PetscCall(Check((PetscBool)(ref.chunks == 0), "%s k=1: no chunks", what));
  for (size_t i = 0; i < sizeof(ks) / sizeof(ks[0]); ++i) {
    PetscCall(Solve(A, b, ks[i], s, &r));
    PetscCall(Agree(what, ks[i], s, &ref, &r));
    if (s->k1only)
      PetscCall(Check((PetscBool)(r.chunks == 0), "%s k=%" PetscInt_FMT ": no chunks (k = 1)", what, ks[i]));
    else if (s->exact)
      PetscCall(Check((PetscBool)(r.chunks == PetscMax(1, (r.its + ks[i] - 1) / ks[i])), "%s k=%" PetscInt_FMT ": %" PetscInt_FMT " chunks for %" PetscInt_FMT " iterations (no chunk stopped before the test)", what, ks[i], r.chunks, r.its));
    else
      PetscCall(Check((PetscBool)(r.chunks >= 1 && r.chunks <= (s->restarts ? r.its + 1 : (r.its + ks[i] - 1) / ks[i] + 3)), "%s k=%" PetscInt_FMT ": %" PetscInt_FMT " chunks for %" PetscInt_FMT " iterations", what, ks[i], r.chunks, r.its));
  }
  PetscCall(VecDestroy(&ref.x));
  PetscCall(VecDestroy(&r.x));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Options of a problem with prefix pre: fused types, the given problem, grid and right-hand side */
static PetscErrorCode ProblemOptions(const char *pre, const char *problem, PetscInt n, const char *rhs)
{
  char name[64], value[32];

  PetscFunctionBeginUser;
  PetscCall(PetscSNPrintf(name, sizeof(name), "-%sproblem", pre));
  PetscCall(PetscOptionsSetValue(NULL, name, problem));
  PetscCall(PetscSNPrintf(name, sizeof(name), "-%sn", pre));
  PetscCall(PetscSNPrintf(value, sizeof(value), "%" PetscInt_FMT, n));
  PetscCall(PetscOptionsSetValue(NULL, name, value));
  PetscCall(PetscSNPrintf(name, sizeof(name), "-%srhs", pre));
  PetscCall(PetscOptionsSetValue(NULL, name, rhs));
  PetscCall(PetscSNPrintf(name, sizeof(name), "-%smat_type", pre));
  PetscCall(PetscOptionsSetValue(NULL, name, "aijfused"));
  PetscCall(PetscSNPrintf(name, sizeof(name), "-%svec_type", pre));
  PetscCall(PetscOptionsSetValue(NULL, name, "fused"));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* A 2D Poisson matrix of an n x n grid and b = e_0, with A[N-1][N-1] = corner (a huge value the
   Krylov space reaches after about 2n iterations) */
static PetscErrorCode CornerProblem(PetscInt n, PetscScalar corner, Problem *p)
{
  PetscInt N, rstart, rend;

  PetscFunctionBeginUser;
  PetscCall(ProblemOptions("corner_", "poisson2d", n, "ones"));
  PetscCall(ProblemCreate(PETSC_COMM_WORLD, "corner_", p));
  PetscCall(MatGetSize(p->A, &N, NULL));
  PetscCall(MatGetOwnershipRange(p->A, &rstart, &rend));
  if (N - 1 >= rstart && N - 1 < rend) PetscCall(MatSetValue(p->A, N - 1, N - 1, corner, INSERT_VALUES));
  PetscCall(MatAssemblyBegin(p->A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(p->A, MAT_FINAL_ASSEMBLY));
  PetscCall(VecSet(p->b, 0.0));
  if (rstart == 0) PetscCall(VecSetValue(p->b, 0, 1.0, INSERT_VALUES));
  PetscCall(VecAssemblyBegin(p->b));
  PetscCall(VecAssemblyEnd(p->b));
  PetscFunctionReturn(PETSC_SUCCESS);
}

int main(int argc, char **argv)
{
  Problem     p, q, c;
  PetscBool   expect_graph = PETSC_FALSE;
  PetscInt    n            = 24;
  PetscMPIInt size;
  Setup       base = {"fusedcg", "none", KSP_NORM_PRECONDITIONED, 10000, 1e-10, 1e4, 0, PETSC_TRUE, PC_SIDE_DEFAULT, PETSC_FALSE, PETSC_FALSE, 0, PETSC_FALSE, PETSC_FALSE, 0, PETSC_FALSE};

  PetscFunctionBeginUser;
  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(FusedKSPInitializePackage());
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-n", &n, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-expect_graph", &expect_graph, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-persistent", &persistent, NULL));
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  /* several processes: fusedbcgs's chunks run its standard form, so its k = 1 reference does too (its default there
     is the one-reduction form, whose rounding differs) */
  if (size > 1) PetscCall(PetscOptionsSetValue(NULL, "-ksp_fusedbcgs_one_reduction", "0"));
  PetscCall(ProblemOptions("a_", "poisson2d", n, "random"));
  PetscCall(ProblemCreate(PETSC_COMM_WORLD, "a_", &p));

  { /* preconditioners (fused Jacobi, PCApply) and norm types */
    Setup s = base;
    PetscCall(Sweep("none/preconditioned", p.A, p.b, &s, KSP_CONVERGED_RTOL));
    s.pc   = "jacobi";
    s.norm = KSP_NORM_UNPRECONDITIONED;
    PetscCall(Sweep("jacobi/unpreconditioned", p.A, p.b, &s, KSP_CONVERGED_RTOL));
    s.norm = KSP_NORM_NATURAL;
    PetscCall(Sweep("jacobi/natural", p.A, p.b, &s, KSP_CONVERGED_RTOL));
    s.pc     = "sor";
    s.norm   = KSP_NORM_PRECONDITIONED;
    s.k1only = size > 1 ? PETSC_TRUE : PETSC_FALSE; /* a general PC with several processes: k = 1 */
    PetscCall(Sweep("sor/preconditioned", p.A, p.b, &s, KSP_CONVERGED_RTOL));
    s       = base;
    s.norm  = KSP_NORM_NONE;
    s.maxit = 40;
    PetscCall(Sweep("none/norm-none", p.A, p.b, &s, KSP_DIVERGED_ITS));
  }
  { /* where the solve starts: in the first chunk (zero initial guess, stopping at iteration 0 on a zero or NaN
       right-hand side) or on the host (a nonzero initial guess) */
    Setup s = base, u = base;
    Vec   z;
    s.exact = u.exact = PETSC_TRUE;
    u.ksp             = "fusedbcgs";
    PetscCall(VecDuplicate(p.b, &z));
    PetscCall(VecZeroEntries(z));
    PetscCall(Sweep("zero right-hand side", p.A, z, &s, KSP_CONVERGED_ATOL));
    PetscCall(Sweep("bcgs zero right-hand side", p.A, z, &u, KSP_CONVERGED_ATOL));
    PetscCall(VecSetValue(z, 3, 1.0, INSERT_VALUES));
    PetscCall(VecSetValue(z, 5, NAN, INSERT_VALUES));
    PetscCall(VecAssemblyBegin(z));
    PetscCall(VecAssemblyEnd(z));
    s.pc = u.pc = "jacobi";
    PetscCall(Sweep("NaN in the right-hand side", p.A, z, &s, KSP_DIVERGED_NANORINF));
    PetscCall(Sweep("bcgs NaN in the right-hand side", p.A, z, &u, KSP_DIVERGED_NANORINF));
    PetscCall(VecDestroy(&z));
    s.guess = PETSC_TRUE;
    PetscCall(Sweep("jacobi nonzero initial guess", p.A, p.b, &s, KSP_CONVERGED_RTOL));
    s.norm = KSP_NORM_NATURAL;
    PetscCall(Sweep("jacobi nonzero initial guess, natural norm", p.A, p.b, &s, KSP_CONVERGED_RTOL));
    s.norm   = KSP_NORM_PRECONDITIONED;
    s.rnorm0 = 2;
    PetscCall(Sweep("jacobi nonzero initial guess, min(||b||, ||r0||)", p.A, p.b, &s, KSP_CONVERGED_RTOL));
    s.pc     = "none";
    s.norm   = KSP_NORM_UNPRECONDITIONED;
    s.rnorm0 = 0;
    PetscCall(Sweep("nonzero initial guess, unpreconditioned norm", p.A, p.b, &s, KSP_CONVERGED_RTOL));
    s.rnorm0 = 1;
    PetscCall(Sweep("nonzero initial guess, relative to ||r0||", p.A, p.b, &s, KSP_CONVERGED_RTOL));
    s.rnorm0 = 0;
    PetscCall(VecDuplicate(p.b, &z));
    PetscCall(VecZeroEntries(z));
    PetscCall(Sweep("nonzero initial guess, zero right-hand side", p.A, z, &s, KSP_CONVERGED_RTOL));
    PetscCall(VecDestroy(&z));
  }
  { /* the maximum iteration count, a user test, the graph switch */
    Setup s = base;
    s.maxit = 13;
    PetscCall(Sweep("max_it 13", p.A, p.b, &s, KSP_DIVERGED_ITS));
    s          = base;
    s.userstop = 10;
    PetscCall(Sweep("user test at 10", p.A, p.b, &s, KSP_CONVERGED_USER));
    s       = base;
    s.graph = PETSC_FALSE;
    PetscCall(Sweep("no graph", p.A, p.b, &s, KSP_CONVERGED_RTOL));
  }
  { /* stops inside a chunk: an indefinite matrix, divergence, Inf/NaN */
    Setup s = base;
    PetscCall(ProblemOptions("i_", "indefinite", 12, "random"));
    PetscCall(PetscOptionsSetValue(NULL, "-i_shift", "0.2")); /* indefinite, found at iteration 17 */
    PetscCall(ProblemCreate(PETSC_COMM_WORLD, "i_", &q));
    PetscCall(Sweep("indefinite", q.A, q.b, &s, KSP_DIVERGED_INDEFINITE_MAT));
    PetscCall(ProblemDestroy(&q));
    PetscCall(CornerProblem(12, 1e30, &c));
    s.divtol  = 1e10;
    s.maxit   = 200;
    s.chaotic = PETSC_TRUE;
    PetscCall(Sweep("divergence", c.A, c.b, &s, KSP_DIVERGED_NULL));
    s.chaotic = PETSC_FALSE;
    PetscCall(ProblemDestroy(&c));
    PetscCall(CornerProblem(12, 1e300, &c));
    s.divtol = PETSC_UNLIMITED;
    PetscCall(Sweep("inf/nan", c.A, c.b, &s, KSP_DIVERGED_NANORINF));
    PetscCall(ProblemDestroy(&c));
  }
  { /* fusedbcgs on a nonsymmetric problem: preconditioners, sides, max_it, a user test, divergence */
    Setup   s = base;
    Problem u;
    PetscCall(ProblemOptions("u_", "convdiff3d", 10, "random"));
    PetscCall(ProblemCreate(PETSC_COMM_WORLD, "u_", &u));
    s.ksp = "fusedbcgs";
    PetscCall(Sweep("bcgs none/left", u.A, u.b, &s, KSP_CONVERGED_RTOL));
    s.pc = "jacobi";
    PetscCall(Sweep("bcgs jacobi/left", u.A, u.b, &s, KSP_CONVERGED_RTOL));
    s.guess = PETSC_TRUE; /* the start on the host */
    PetscCall(Sweep("bcgs jacobi/left nonzero initial guess", u.A, u.b, &s, KSP_CONVERGED_RTOL));
    s.guess = PETSC_FALSE;
    s.side  = PC_RIGHT;
    s.norm  = KSP_NORM_UNPRECONDITIONED;
    PetscCall(Sweep("bcgs jacobi/right", u.A, u.b, &s, KSP_CONVERGED_RTOL));
    s.norm  = KSP_NORM_NONE;
    s.maxit = 11;
    PetscCall(Sweep("bcgs norm-none max_it 11", u.A, u.b, &s, KSP_DIVERGED_ITS));
    s          = base;
    s.ksp      = "fusedbcgs";
    s.userstop = 5;
    PetscCall(Sweep("bcgs user test at 5", u.A, u.b, &s, KSP_CONVERGED_USER));
    PetscCall(ProblemDestroy(&u));
    s     = base;
    s.ksp = "fusedbcgs";
    PetscCall(CornerProblem(12, 1e30, &c));
    s.divtol   = 1e10;
    s.maxit    = 200;
    s.restarts = PETSC_TRUE;
    s.chaotic  = PETSC_TRUE;
    PetscCall(Sweep("bcgs divergence or breakdown (huge corner entry)", c.A, c.b, &s, KSP_DIVERGED_NULL));
    s.chaotic = PETSC_FALSE;
    PetscCall(ProblemDestroy(&c));
    s.pc       = "sor";
    s.k1only   = PETSC_TRUE;
    s.restarts = PETSC_FALSE;
    s.maxit    = 10000;
    PetscCall(ProblemOptions("u_", "convdiff3d", 6, "random"));
    PetscCall(ProblemCreate(PETSC_COMM_WORLD, "u_", &u));
    PetscCall(Sweep("bcgs sor (k = 1)", u.A, u.b, &s, KSP_CONVERGED_RTOL));
    PetscCall(ProblemDestroy(&u));
  }
  { /* fusedsgmres: chunks inside restart cycles */
    Setup   s = base;
    Problem u;
    PetscCall(ProblemOptions("u_", "convdiff3d", 10, "random"));
    PetscCall(ProblemCreate(PETSC_COMM_WORLD, "u_", &u));
    s.ksp  = "fusedsgmres";
    s.norm = KSP_NORM_UNPRECONDITIONED;
    PetscCall(Sweep("sgmres none", u.A, u.b, &s, KSP_CONVERGED_RTOL));
    s.pc = "jacobi";
    PetscCall(Sweep("sgmres jacobi", u.A, u.b, &s, KSP_CONVERGED_RTOL));
    s.restart  = 10;
    s.restarts = PETSC_TRUE; /* a chunk never crosses a restart */
    PetscCall(Sweep("sgmres jacobi restart 10", u.A, u.b, &s, KSP_CONVERGED_RTOL));
    s.maxit = 23;
    PetscCall(Sweep("sgmres max_it 23", u.A, u.b, &s, KSP_DIVERGED_ITS));
    s          = base;
    s.ksp      = "fusedsgmres";
    s.norm     = KSP_NORM_UNPRECONDITIONED;
    s.userstop = 12;
    PetscCall(Sweep("sgmres user test at 12", u.A, u.b, &s, KSP_CONVERGED_USER));
    s.userstop = 0;
    s.pc       = "sor";
    s.k1only   = PETSC_TRUE;
    PetscCall(Sweep("sgmres sor (k = 1)", u.A, u.b, &s, KSP_CONVERGED_RTOL));
    PetscCall(ProblemDestroy(&u));
  }
  { /* point-block Jacobi of a fused matrix: one kernel of the backend between the fused ones, so the three solvers
       chunk (and record graphs) with it as with Jacobi on one process (k = 1 on several) */
    Setup   s = base;
    Problem e;
    PetscCall(ProblemOptions("e_", "elasticity3d", 5, "random"));
    PetscCall(PetscOptionsSetValue(NULL, "-e_mat_block_size", "3"));
    PetscCall(ProblemCreate(PETSC_COMM_WORLD, "e_", &e));
    s.pc     = "pbjacobi";
    s.k1only = size > 1 ? PETSC_TRUE : PETSC_FALSE;
    PetscCall(Sweep("pbjacobi", e.A, e.b, &s, KSP_CONVERGED_RTOL));
    s.ksp = "fusedbcgs";
    PetscCall(Sweep("bcgs pbjacobi/left", e.A, e.b, &s, KSP_CONVERGED_RTOL));
    s.side   = PC_RIGHT;
    s.norm   = KSP_NORM_UNPRECONDITIONED;
    s.k1only = PETSC_TRUE; /* a general PC on the right: k = 1 */
    PetscCall(Sweep("bcgs pbjacobi/right (k = 1)", e.A, e.b, &s, KSP_CONVERGED_RTOL));
    s          = base;
    s.ksp      = "fusedsgmres";
    s.pc       = "pbjacobi";
    s.k1only   = size > 1 ? PETSC_TRUE : PETSC_FALSE;
    s.norm     = KSP_NORM_UNPRECONDITIONED;
    s.rtol     = 1e-8;
    s.restarts = PETSC_TRUE; /* 226 iterations: chunks never cross the restarts */
    PetscCall(Sweep("sgmres pbjacobi", e.A, e.b, &s, KSP_CONVERGED_RTOL));
    PetscCall(ProblemDestroy(&e));
  }
  { /* fusedsgmres on two tight eigenvalue clusters (a spectrum the residual-based form handles without cancellation),
       and with an entry that overflows mid-cycle: that step's column is NaN/Inf and goes back to the host */
    Setup    s = base;
    Mat      D;
    Vec      b;
    PetscInt rs, re;
    PetscCall(MatCreate(PETSC_COMM_WORLD, &D));
    PetscCall(MatSetSizes(D, PETSC_DECIDE, PETSC_DECIDE, 200, 200));
    PetscCall(MatSetType(D, "aijfused"));
    PetscCall(MatSetUp(D));
    PetscCall(MatGetOwnershipRange(D, &rs, &re));
    for (PetscInt i = rs; i < re; i++) PetscCall(MatSetValue(D, i, i, (i % 2 ? 2.0 : 1.0) + 1e-6 * (PetscReal)(i % 7), INSERT_VALUES));
    PetscCall(MatAssemblyBegin(D, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(D, MAT_FINAL_ASSEMBLY));
    PetscCall(MatCreateVecs(D, NULL, &b));
    PetscCall(VecSetRandom(b, NULL));
    s.ksp  = "fusedsgmres";
    s.norm = KSP_NORM_UNPRECONDITIONED;
    s.rtol = 1e-12;
    PetscCall(Sweep("sgmres two eigenvalue clusters", D, b, &s, KSP_CONVERGED_ITERATING));
    PetscCall(VecDestroy(&b));
    PetscCall(MatDestroy(&D));
    PetscCall(CornerProblem(12, 1e300, &c));
    s.rtol   = 1e-10;
    s.divtol = PETSC_UNLIMITED;
    PetscCall(Sweep("sgmres inf/nan", c.A, c.b, &s, KSP_DIVERGED_NULL));
    PetscCall(ProblemDestroy(&c));
  }
  { /* repeated solves on one KSP: new right-hand side, new matrix values, new size */
    Setup  s   = base;
    Result ref = {0}, r = {0};
    KSP    ksp;
    Vec    b2;

    s.pc = "jacobi";
    PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
    PetscCall(SolveOn(ksp, p.A, p.b, 7, &s, &r));
    PetscCall(Solve(p.A, p.b, 1, &s, &ref));
    PetscCall(Agree("repeat: first solve", 7, &s, &ref, &r));
    PetscCall(VecDuplicate(p.b, &b2));
    PetscCall(VecSetRandom(b2, NULL));
    PetscCall(SolveOn(ksp, p.A, b2, 7, &s, &r));
    PetscCall(Solve(p.A, b2, 1, &s, &ref));
    PetscCall(Agree("repeat: new right-hand side", 7, &s, &ref, &r));
    if (expect_graph) PetscCall(Check((PetscBool)(r.replays >= 1 && r.records == 0), "repeat: the second solve replays the first one's record (%" PetscInt_FMT " records, %" PetscInt_FMT " replays)", r.records, r.replays));
    PetscCall(MatScale(p.A, 3.0));
    PetscCall(MatShift(p.A, 0.5));
    PetscCall(SolveOn(ksp, p.A, b2, 7, &s, &r));
    PetscCall(Solve(p.A, b2, 1, &s, &ref));
    PetscCall(Agree("repeat: new matrix values", 7, &s, &ref, &r));
    PetscCall(ProblemOptions("q_", "poisson2d", 31, "random"));
    PetscCall(ProblemCreate(PETSC_COMM_WORLD, "q_", &q));
    PetscCall(KSPReset(ksp));
    PetscCall(SolveOn(ksp, q.A, q.b, 7, &s, &r));
    PetscCall(Solve(q.A, q.b, 1, &s, &ref));
    PetscCall(Agree("repeat: new size", 7, &s, &ref, &r));
    if (expect_graph) {
      PetscCall(SolveOn(ksp, q.A, q.b, 7, &s, &r));
      PetscCall(Agree("repeat: new size, replayed", 7, &s, &ref, &r));
      PetscCall(Check((PetscBool)(r.replays >= 1), "repeat: a record of the new size is replayed (%" PetscInt_FMT " replays)", r.replays));
    }
    PetscCall(ProblemDestroy(&q));
    PetscCall(VecDestroy(&b2));
    PetscCall(VecDestroy(&ref.x));
    PetscCall(VecDestroy(&r.x));
    PetscCall(KSPDestroy(&ksp));
  }
  PetscCall(ProblemDestroy(&p));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "test_chunk: %s\n", check_failures ? "FAIL" : "PASS"));
  PetscCall(PetscFinalize());
  return check_failures ? 1 : 0;
}
