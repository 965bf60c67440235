/*
   Chebyshev (KSPCHEBYSHEV) with one kernel per step on the fused types: the default smoother of PCGAMG and PCMG.

   PETSc's first-kind Chebyshev step is a product, a vector update, the preconditioner and a second vector update
   (MatMult(), VecAYPX(), PCApply(), VecAXPBYPCZ(): four kernels, twelve vector reads and writes a row):
     p_{k+1} = (1 - omega) p_{k-1} + omega p_k + omega scale D^{-1} (b - A p_k)
   With a MATSEQAIJFUSED operator and fused vectors, or PETSc's MATSEQAIJCUSPARSE and CUDA vectors with the cuda
   backend (read in place, src/ops/petscdevice.hpp), and Jacobi (or no) preconditioner the plugin computes it as one
   sparse product whose rows end in that update (OpsApplyOperatorUpdate(), Backend::spmv_update): five vector reads
   and writes a row besides the matrix.  A MATMPIAIJFUSED operator takes two kernels a step (the diagonal block's
   product while the halo is exchanged, then the off-diagonal block's with the update).  The plugin registers the type name again (like PCPBJACOBI in src/pc/): PETSc's KSP is
   created, and its setup, options, view and destroy are wrapped, so that the type stays KSPCHEBYSHEV - PCGAMG
   recognizes it by name and stores the eigenvalue bounds of its smoothed aggregation in PETSc's data of the type,
   and every option and function of PETSc's Chebyshev works unchanged.

     setup    PETSc's (eigenvalue estimates, the kind's solve), then the solve wrapped;
     solve    the fused steps when they apply (first kind, no residual norms, not transposed, no null space on
              the operator, PCNONE or PCJACOBI - whose weights are the PC applied to a vector of ones, so every
              -pc_jacobi_* option holds, kept until the PC is set up again - an operator and vectors on the
              backend: OpsOperatorOnBackend(), AllOnBackend());
              otherwise PETSc's solve;
     options  PETSc's, plus -ksp_chebyshev_fused;
     view     PETSc's, plus a line that says where the steps ran, and why not on the backend when they did not;
     destroy  the plugin's data (a container composed on the KSP), then PETSc's.

   The eigenvalue bounds are read from PETSc's data of the type, whose layout PETSc does not install
   (src/ksp/ksp/impls/cheby/chebyshevimpl.h of PETSc 3.26): ChebyshevLayout below repeats it, and is checked
   against the defaults of KSPCreate_Chebyshev() when a KSP is created.  With another PETSc version, or where the
   check fails, every solve is PETSc's and -ksp_view says why.
*/
#include "sys/fusedksp_impl.hpp"
#include "ksp/fusedcommon.hpp"
#include <petsc/private/pcimpl.h>

namespace fusedksp
{

/* The layout of KSP_Chebyshev in PETSc 3.26 (src/ksp/ksp/impls/cheby/chebyshevimpl.h, not installed) */
struct ChebyshevLayout {
  PetscReal        emin, emax;
  PetscReal        emin_computed, emax_computed;
  PetscReal        emin_provided, emax_provided;
  PetscReal       *betas;
  PetscInt         num_betas_alloc;
  KSP              kspest;
  PetscReal        tform[4];
  PetscInt         eststeps;
  PetscBool        usenoisy;
  KSPChebyshevKind chebykind;
  MatState         amatstate, pmatstate;
};

/* PETSc's constructor of KSPCHEBYSHEV, found in KSPList before the type is registered again */
static PetscErrorCode (*petsc_create_chebyshev)(KSP) = nullptr;

struct ChebyshevData {
  static constexpr const char *name = "FusedKSPChebyshev";
  /* PETSc's operations of the KSP */
  PetscErrorCode (*setup)(KSP)                            = nullptr;
  PetscErrorCode (*solve)(KSP)                            = nullptr; /* as PETSc's setup left it */
  PetscErrorCode (*setfromoptions)(KSP, PetscOptionItems) = nullptr;
  PetscErrorCode (*view)(KSP, PetscViewer)                = nullptr;
  PetscErrorCode (*destroy)(KSP)                          = nullptr;
  PetscBool        layout                                 = PETSC_FALSE; /* PETSc's data has the layout of ChebyshevLayout */
  PetscBool        enabled                                = PETSC_TRUE;  /* -ksp_chebyshev_fused */
  Vec              w                                      = nullptr;     /* the Jacobi weights */
  PetscObjectId    pcid                                   = 0;           /* the PC and its states when w was computed */
  PetscObjectState pcstate                                = -1;
  MatState         pcmatstate                             = {};
  PetscInt64       nfused = 0, npetsc = 0; /* solves with the fused steps, and PETSc's */
  const char      *why = nullptr;          /* why the last of PETSc's solves was not fused */
};

static PetscErrorCode ChebyshevDataDestroy(void *ctx)
{
  ChebyshevData *d = *(ChebyshevData **)ctx;

  PetscFunctionBegin;
  PetscCall(VecDestroy(&d->w));
  PetscCall(PetscFree(d));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode ChebyshevGet(KSP ksp, ChebyshevData **d)
{
  PetscFunctionBegin;
  PetscCall(PetscObjectContainerQuery((PetscObject)ksp, ChebyshevData::name, (PetscCtxRt)d));
  PetscCheck(*d, PetscObjectComm((PetscObject)ksp), PETSC_ERR_PLIB, "KSP %s without the data of FusedKSP's Chebyshev", ((PetscObject)ksp)->type_name);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The eigenvalue bounds the solve uses, as PETSc's KSPChebyshevGetEigenvalues_Chebyshev() picks them: set by the user
   or PCGAMG, else computed by the estimator or provided by PCGAMG, through the transform tform */
static void ChebyshevBounds(const ChebyshevLayout *c, PetscReal *emax, PetscReal *emin)
{
  *emax = 0;
  *emin = 0;
  if (c->emax != 0.)
    *emax = c->emax;
  else if (c->emax_computed != 0.)
    *emax = c->tform[2] * c->emin_computed + c->tform[3] * c->emax_computed;
  else if (c->emax_provided != 0.)
    *emax = c->tform[2] * c->emin_provided + c->tform[3] * c->emax_provided;
  if (c->emin != 0.)
    *emin = c->emin;
  else if (c->emin_computed != 0.)
    *emin = c->tform[0] * c->emin_computed + c->tform[1] * c->emax_computed;
  else if (c->emin_provided != 0.)
    *emin = c->tform[0] * c->emin_provided + c->tform[1] * c->emax_provided;
}

/* NULL when this solve can take the fused steps, else why not; mode: the PC's */
static PetscErrorCode ChebyshevFusedWhyNot(KSP ksp, ChebyshevData *d, const char **why)
{
  KSPChebyshevKind kind;
  Mat              A;
  MatNullSpace     ns = nullptr;
  PetscBool        onbackend, vecs, none, jacobi;
  PetscReal        emax, emin;
  const char      *opwhy;

  PetscFunctionBegin;
  *why = nullptr;
  if (!d->layout)
    *why = "PETSc's Chebyshev data is not laid out as the plugin reads it (another PETSc version than 3.26)";
  else if (!d->enabled)
    *why = "-ksp_chebyshev_fused false";
  if (*why) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(KSPChebyshevGetKind(ksp, &kind));
  PetscCall(PCGetOperators(ksp->pc, &A, NULL));
  PetscCall(OpsOperatorOnBackend(A, &onbackend, &opwhy));
  vecs = (PetscBool)(ksp->nwork >= 3);
  if (vecs) PetscCall(AllOnBackend({ksp->vec_sol, ksp->vec_rhs, ksp->work[0], ksp->work[1], ksp->work[2]}, &vecs));
  if (onbackend) PetscCall(MatGetNullSpace(A, &ns));
  PetscCall(PetscObjectTypeCompare((PetscObject)ksp->pc, PCNONE, &none));
  PetscCall(PetscObjectTypeCompare((PetscObject)ksp->pc, PCJACOBI, &jacobi));
  ChebyshevBounds((const ChebyshevLayout *)ksp->data, &emax, &emin);
  if (kind != KSP_CHEBYSHEV_FIRST)
    *why = "fourth-kind Chebyshev";
  else if (ksp->normtype != KSP_NORM_NONE)
    *why = "residual norms requested, which the fused steps do not compute";
  else if (ksp->transpose_solve)
    *why = "a transposed solve";
  else if (!onbackend)
    *why = opwhy;
  else if (!vecs)
    *why = "the vectors are neither fused nor PETSc's device vectors the backend reads";
  else if (ns)
    *why = "the operator has a null space";
  else if (!none && !jacobi)
    *why = "a preconditioner other than none or jacobi";
  else if (emax == 0. || emin == 0.)
    *why = "no eigenvalue bounds";
  else if (ksp->err_hist)
    *why = "an error history is requested";
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The Jacobi weights w = D^{-1} 1 (KSPFusedPCMode()), computed again only after the PC was set up with another matrix
   or state */
static PetscErrorCode ChebyshevWeights(KSP ksp, ChebyshevData *d, Vec scratch, PCMode *mode)
{
  PC               pc = ksp->pc;
  PetscObjectId    id;
  PetscObjectState state;
  PetscBool        jacobi;

  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)pc, PCJACOBI, &jacobi));
  *mode = jacobi ? PCMode::JACOBI : PCMode::NONE;
  if (!jacobi) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(PetscObjectGetId((PetscObject)pc, &id));
  PetscCall(PetscObjectStateGet((PetscObject)pc, &state));
  PetscBool same = PETSC_FALSE;
  if (d->w) PetscCall(MatStateCompare(pc->matstate, d->pcmatstate, &same));
  if (same && id == d->pcid && state == d->pcstate) {
    PetscInt n, nw;
    PetscCall(VecGetLocalSize(scratch, &n));
    PetscCall(VecGetLocalSize(d->w, &nw));
    if (n == nw) PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(KSPFusedPCMode(ksp, scratch, mode, &d->w));
  d->pcid       = id;
  d->pcstate    = state;
  d->pcmatstate = pc->matstate;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* PETSc's first-kind Chebyshev iteration without residual norms (KSPSolve_Chebyshev_FirstKind() with
   KSP_NORM_NONE), each step one kernel: p_{k+1} = (1 - omega) p_{k-1} + omega p_k + omega scale w .* (b - A p_k) */
static PetscErrorCode ChebyshevSolveFused(KSP ksp, ChebyshevData *d)
{
  PetscInt       k = 1, km1 = 0, kp1 = 2;
  PetscReal      emax, emin;
  PetscScalar    c[3];
  Vec            sol = ksp->vec_sol, b = ksp->vec_rhs, p[3] = {ksp->vec_sol, ksp->work[0], ksp->work[1]}, r = ksp->work[2];
  Mat            A;
  PCMode         mode;
  MatUpdateTerms terms;

  PetscFunctionBegin;
  PetscCall(PCGetOperators(ksp->pc, &A, NULL));
  ChebyshevBounds((const ChebyshevLayout *)ksp->data, &emax, &emin);
  const PetscScalar scale = 2.0 / (emax + emin), alpha = 1.0 - scale * emin, mu = 1.0 / alpha, omegaprod = 2.0 / alpha;

  ksp->its    = 0;
  ksp->reason = KSP_CONVERGED_ITERATING;
  if (ksp->max_it == 0) { /* a V(0,x) cycle */
    ksp->reason = KSP_DIVERGED_ITS;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(ChebyshevWeights(ksp, d, r, &mode));
  terms.wl   = mode == PCMode::JACOBI ? d->w : nullptr;
  terms.add  = b;
  terms.sign = -1;
  c[km1]     = 1.0;
  c[k]       = mu;
  /* p_1 = p_0 + scale w .* (b - A p_0) */
  if (!ksp->guess_zero) {
    terms.gamma = scale;
    terms.u     = p[km1];
    terms.alpha = 1.0;
    PetscCall(OpsApplyOperatorUpdate(A, &terms, p[km1], p[k]));
  } else {
    if (mode == PCMode::JACOBI)
      PetscCall(VecPointwiseMult(p[k], d->w, b));
    else
      PetscCall(VecCopy(b, p[k]));
    PetscCall(VecAYPX(p[k], scale, p[km1]));
  }
  ksp->its = 1;
  for (PetscInt i = 1; i < ksp->max_it; ++i) {
    ksp->its++;
    c[kp1]                  = 2.0 * mu * c[k] - c[km1];
    const PetscScalar omega = omegaprod * c[k] / c[kp1];

    terms.gamma = omega * scale;
    terms.u     = p[km1];
    terms.alpha = 1.0 - omega;
    terms.v     = p[k];
    terms.beta  = omega;
    PetscCall(OpsApplyOperatorUpdate(A, &terms, p[k], p[kp1]));
    const PetscInt t = km1;
    km1              = k;
    k                = kp1;
    kp1              = t;
  }
  ksp->reason = KSP_CONVERGED_ITS;
  if (k) PetscCall(VecCopy(p[k], sol));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode KSPSolve_ChebyshevFused(KSP ksp)
{
  ChebyshevData *d;
  const char    *why;

  PetscFunctionBegin;
  PetscCall(ChebyshevGet(ksp, &d));
  PetscCall(ChebyshevFusedWhyNot(ksp, d, &why));
  if (why) {
    d->why = why;
    d->npetsc++;
    PetscCall((*d->solve)(ksp));
  } else {
    d->nfused++;
    PetscCall(ChebyshevSolveFused(ksp, d));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* PETSc's setup, which picks the solve of the kind and estimates the eigenvalues; then the solve wrapped */
static PetscErrorCode KSPSetUp_ChebyshevFused(KSP ksp)
{
  ChebyshevData *d;

  PetscFunctionBegin;
  PetscCall(ChebyshevGet(ksp, &d));
  PetscCall((*d->setup)(ksp));
  if (ksp->ops->solve != KSPSolve_ChebyshevFused) {
    d->solve        = ksp->ops->solve;
    ksp->ops->solve = KSPSolve_ChebyshevFused;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode KSPSetFromOptions_ChebyshevFused(KSP ksp, PetscOptionItems PetscOptionsObject)
{
  ChebyshevData *d;

  PetscFunctionBegin;
  PetscCall(ChebyshevGet(ksp, &d));
  PetscCall((*d->setfromoptions)(ksp, PetscOptionsObject));
  PetscOptionsHeadBegin(PetscOptionsObject, "KSP Chebyshev of FusedKSP");
  PetscCall(PetscOptionsBool("-ksp_chebyshev_fused",
                             "Each first-kind step as one sparse product with its update on the backend (fused operator and vectors, or PETSc's seqaijcusparse and CUDA vectors with the cuda backend; PC none or jacobi, no residual norms)",
                             "KSPCHEBYSHEV", d->enabled, &d->enabled, NULL));
  PetscOptionsHeadEnd();
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode KSPView_ChebyshevFused(KSP ksp, PetscViewer viewer)
{
  ChebyshevData *d;
  PetscBool      ascii;

  PetscFunctionBegin;
  PetscCall(ChebyshevGet(ksp, &d));
  PetscCall((*d->view)(ksp, viewer));
  PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERASCII, &ascii));
  if (!ascii || (!d->nfused && !d->npetsc)) PetscFunctionReturn(PETSC_SUCCESS);
  if (d->nfused) {
    char where[320];
    PetscCall(BackendDescription(ActiveBackend(), PETSC_FALSE, where, sizeof(where)));
    PetscCall(PetscViewerASCIIPrintf(viewer, "  FusedKSP Chebyshev: %" PetscInt64_FMT " solves with one kernel per step on the %s backend, %" PetscInt64_FMT " by PETSc's steps\n", d->nfused, where, d->npetsc));
  } else
    PetscCall(PetscViewerASCIIPrintf(viewer, "  FusedKSP Chebyshev: %" PetscInt64_FMT " solves by PETSc's steps (%s)\n", d->npetsc, d->why));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The plugin's data removed (it would outlive a change of type), then PETSc's destroy */
static PetscErrorCode KSPDestroy_ChebyshevFused(KSP ksp)
{
  ChebyshevData *d;
  PetscErrorCode (*destroy)(KSP);

  PetscFunctionBegin;
  PetscCall(ChebyshevGet(ksp, &d));
  destroy = d->destroy;
  PetscCall(PetscObjectCompose((PetscObject)ksp, ChebyshevData::name, NULL));
  PetscCall((*destroy)(ksp));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Whether PETSc's data of a KSP just created by KSPCreate_Chebyshev() reads as its defaults through ChebyshevLayout */
static PetscBool ChebyshevLayoutMatches(KSP ksp)
{
#if PETSC_VERSION_GE(3, 26, 0) && PETSC_VERSION_LT(3, 27, 0)
  const ChebyshevLayout *c = (const ChebyshevLayout *)ksp->data;

  return (PetscBool)(c && c->emin == 0. && c->emax == 0. && c->emin_computed == 0. && c->emax_computed == 0. && c->emin_provided == 0. && c->emax_provided == 0. && !c->betas && c->num_betas_alloc == 0 && !c->kspest && c->tform[0] == 0.0 &&
                     c->tform[1] == (PetscReal)0.1 && c->tform[2] == 0.0 && c->tform[3] == (PetscReal)1.1 && c->eststeps == 10 && c->usenoisy == PETSC_TRUE && c->chebykind == KSP_CHEBYSHEV_FIRST);
#else
  (void)ksp;
  return PETSC_FALSE;
#endif
}

static PetscErrorCode KSPCreate_ChebyshevFused(KSP ksp)
{
  ChebyshevData *d;

  PetscFunctionBegin;
  PetscCall((*petsc_create_chebyshev)(ksp));
  PetscCall(PetscNew(&d));
  *d = ChebyshevData(); /* PetscNew() zeroes */
  PetscCall(PetscObjectContainerCompose((PetscObject)ksp, ChebyshevData::name, d, ChebyshevDataDestroy));
  d->layout                = ChebyshevLayoutMatches(ksp);
  d->setup                 = ksp->ops->setup;
  d->setfromoptions        = ksp->ops->setfromoptions;
  d->view                  = ksp->ops->view;
  d->destroy               = ksp->ops->destroy;
  ksp->ops->setup          = KSPSetUp_ChebyshevFused;
  ksp->ops->setfromoptions = KSPSetFromOptions_ChebyshevFused;
  ksp->ops->view           = KSPView_ChebyshevFused;
  ksp->ops->destroy        = KSPDestroy_ChebyshevFused;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPRegisterChebyshevFused(void)
{
  PetscFunctionBegin;
  PetscCall(KSPInitializePackage());
  if (!petsc_create_chebyshev) PetscCall(PetscFunctionListFind(KSPList, KSPCHEBYSHEV, &petsc_create_chebyshev));
  PetscCheck(petsc_create_chebyshev, PETSC_COMM_SELF, PETSC_ERR_PLIB, "PETSc's %s is not registered", KSPCHEBYSHEV);
  PetscCall(KSPRegister(KSPCHEBYSHEV, KSPCreate_ChebyshevFused));
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace fusedksp
