/*
   Additive Schwarz (PCASM) with one subdomain per process: its restriction and prolongation on the backend for
   fused vectors.

   PETSc's PCApply_ASM() moves the vectors with VecScatter (PetscSF), which reaches the host arrays of vectors that
   are not PETSc's own device types: with fused vectors on a GPU every application copied the input, the work
   vectors and the output between host and device, although the subdomain solve (the fused MatSolverType's
   ILU(0)/ICC(0) on a MATSEQAIJFUSED submatrix) runs on the device.  The plugin registers the type name again, with a
   constructor that creates PETSc's PC and wraps it:
     setup  PETSc's; then, with a fused preconditioner matrix on several processes, a MATSEQAIJFUSED copy of each
            process's MATSEQAIJ subdomain matrix as the subdomain solver's operator (ASMSubdomainUpdate()), so the
            subdomain solves run on the backend; then, where every process has one subdomain given by its
            overlapping index set alone (no PCASMSetLocalSubdomains() inner set), the transfer plan on the backend:
            the subdomain's entries this process owns (their positions in the sorted index set are consecutive) and
            the halo of those other processes own, exchanged as the products of MATMPIAIJFUSED exchange theirs
            (src/mat/halo.hpp);
     apply, applytranspose
            with fused vectors: restriction (owned entries gathered, the halo exchanged and scattered into place, or
            only the owned ones where the PCASMType leaves the others zero), the subdomain's KSPSolve() (or
            KSPSolveTranspose()) on its fused work vectors, prolongation (the owned entries, plus the halo's values
            sent back and added by their owners where the type interpolates); no host<->device copy.  Otherwise
            (other vectors, several subdomains on a process, inner sets, PC_ASM_WEIGHTED) PETSc's operation;
     view   PETSc's, plus one "FusedKSP ASM" line saying where the transfers run;
     reset, destroy
            the plan and the copy freed, then PETSc's.
*/
#include "sys/fusedksp_impl.hpp"
#include "vec/vecfused.hpp"
#include "mat/aijfused.hpp"
#include "mat/aijfused_private.hpp"
#include "mat/matpowers.hpp"
#include "pc/wrapped.hpp"
#include <petsc/private/pcasmimpl.h>
#include <vector>

namespace fusedksp
{

/* PETSc's constructor of PCASM, found in PCList before the type is registered again */
static PetscErrorCode (*petsc_create_asm)(PC) = nullptr;

struct ASMData {
  static constexpr const char *name = "FusedKSPASM", *what = "FusedKSP's additive Schwarz";
  static PetscErrorCode        Free(ASMData *d); /* the plan and the subdomain's fused copy */
  /* PETSc's operations of the PC */
  PetscErrorCode (*setup)(PC)                    = nullptr;
  PetscErrorCode (*apply)(PC, Vec, Vec)          = nullptr;
  PetscErrorCode (*applytranspose)(PC, Vec, Vec) = nullptr;
  PetscErrorCode (*view)(PC, PetscViewer)        = nullptr;
  PetscErrorCode (*reset)(PC)                    = nullptr;
  PetscErrorCode (*destroy)(PC)                  = nullptr;
  PetscBool        fusedmat                      = PETSC_FALSE; /* the matrix of the last setup is fused */
  const Backend   *be                            = nullptr;     /* where the plan is; NULL: no plan (PETSc's transfers) */
  PetscInt         nlocal = 0, nsub = 0;                        /* local rows of the PC's matrix; entries of the subdomain */
  PetscInt         own_start = 0, nown = 0;                     /* the owned entries: subdomain positions [own_start, own_start + nown) */
  PetscInt        *own_loc  = nullptr;                          /* backend: their local rows                              */
  PetscInt         nhalo    = 0;
  PetscInt        *halo_pos = nullptr; /* backend: the subdomain position of each halo slot */
  Halo             halo;
  Mat              sub = nullptr;                       /* a MATSEQAIJFUSED copy of PETSc's MATSEQAIJ subdomain matrix (several processes) */
  Vec              xs = nullptr, ys = nullptr;          /* ... and its vectors (no copy: PETSc's subdomain matrix and vectors are fused) */
  PetscObjectState substate = -1, subnonzerostate = -1; /* the states of PETSc's subdomain matrix that sub holds */
  PetscObjectId    isid           = 0;                  /* the index set the plan was built for, and its state then */
  PetscObjectState isstate        = -1;
  PetscInt64       napply_backend = 0, napply_host = 0;
};

static PetscErrorCode ASMPlanFree(ASMData *d)
{
  PetscFunctionBegin;
  if (d->be) {
    PetscCall(HaloFree(d->be, &d->halo));
    PetscCall(d->be->free_bytes(d->own_loc));
    PetscCall(d->be->free_bytes(d->halo_pos));
  }
  d->be       = nullptr;
  d->own_loc  = nullptr;
  d->halo_pos = nullptr;
  d->nlocal = d->nsub = d->own_start = d->nown = d->nhalo = 0;
  d->isid                                                 = 0;
  d->isstate                                              = -1;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode ASMData::Free(ASMData *d)
{
  PetscFunctionBegin;
  PetscCall(ASMPlanFree(d));
  PetscCall(MatDestroy(&d->sub));
  PetscCall(VecDestroy(&d->xs));
  PetscCall(VecDestroy(&d->ys));
  d->substate = d->subnonzerostate = -1;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Whether this process's part of the PC allows the plan: one subdomain given by its overlapping set alone, whose
   entries owned here are consecutive in it (so they are gathered into one range), with fused work vectors */
static PetscErrorCode ASMPlanPossible(PC pc, ASMData *d, PetscBool *possible)
{
  PC_ASM         *osm = (PC_ASM *)pc->data;
  PetscInt        rstart, rend, n, first = -1, last = -1;
  const PetscInt *idx;
  PetscBool       fused, ok = PETSC_TRUE;

  PetscFunctionBegin;
  *possible = PETSC_FALSE;
  if (osm->n_local_true != 1 || osm->n_local != 1 || osm->is_local || osm->lprolongation) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(VecIsFused(osm->x[0], &fused));
  if (!fused && !d->sub) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(MatGetOwnershipRange(pc->pmat, &rstart, &rend));
  PetscCall(ISGetLocalSize(osm->is[0], &n));
  PetscCall(ISGetIndices(osm->is[0], &idx));
  for (PetscInt k = 0; k < n && ok; ++k) {
    if (idx[k] < rstart || idx[k] >= rend) continue;
    if (first < 0)
      first = k;
    else if (last != k - 1)
      ok = PETSC_FALSE;
    last = k;
  }
  PetscCall(ISRestoreIndices(osm->is[0], &idx));
  *possible = ok;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The plan of is[0] on the active backend: owned entries, halo slots and their exchange.  Collective. */
static PetscErrorCode ASMPlanBuild(PC pc, ASMData *d)
{
  PC_ASM               *osm = (PC_ASM *)pc->data;
  const Backend        *be  = ActiveBackend();
  PetscInt              rstart, rend;
  const PetscInt       *idx;
  std::vector<PetscInt> own, ghosts, pos;
  PetscSF               sf;
  PetscBool             mpi, direct = be->host_memory;

  PetscFunctionBegin;
  PetscCall(MatIsMPIAIJFused(pc->pmat, &mpi));
  if (mpi) { /* the halo moves as the matrix's does (-fused_cuda_aware_mpi) */
    const Backend     *mbe;
    const Mirror      *diag;
    const OffDiagRows *offdiag;

    PetscCall(MatMPIAIJFusedGetLocalProduct(pc->pmat, &mbe, &diag, &offdiag, &direct));
  }
  PetscCall(MatGetOwnershipRange(pc->pmat, &rstart, &rend));
  PetscCall(ISGetLocalSize(osm->is[0], &d->nsub));
  d->nlocal = rend - rstart;
  PetscCall(ISGetIndices(osm->is[0], &idx));
  d->own_start = d->nsub;
  for (PetscInt k = 0; k < d->nsub; ++k) {
    if (idx[k] >= rstart && idx[k] < rend) {
      d->own_start = PetscMin(d->own_start, k);
      FusedKSPCallCXX(own.push_back(idx[k] - rstart));
    } else
      FusedKSPCallCXX(ghosts.push_back(idx[k]); pos.push_back(k));
  }
  PetscCall(ISRestoreIndices(osm->is[0], &idx));
  d->nown  = (PetscInt)own.size();
  d->nhalo = (PetscInt)ghosts.size();
  if (!d->nown) d->own_start = 0;
  d->be = be;
  PetscCall(be->malloc_bytes(sizeof(PetscInt) * PetscMax(d->nown, 1), (void **)&d->own_loc));
  PetscCall(be->copy_to_backend(d->own_loc, own.data(), sizeof(PetscInt) * d->nown));
  PetscCall(be->malloc_bytes(sizeof(PetscInt) * PetscMax(d->nhalo, 1), (void **)&d->halo_pos));
  PetscCall(be->copy_to_backend(d->halo_pos, pos.data(), sizeof(PetscInt) * d->nhalo));
  PetscCall(PetscSFCreate(PetscObjectComm((PetscObject)pc), &sf));
  PetscCall(PetscSFSetGraphLayout(sf, pc->pmat->rmap, d->nhalo, nullptr, PETSC_COPY_VALUES, ghosts.data()));
  PetscCall(HaloBuild((PetscObject)pc, be, direct, sf, d->nhalo, &d->halo));
  PetscCall(PetscSFDestroy(&sf));
  PetscCall(PetscObjectGetId((PetscObject)osm->is[0], &d->isid));
  PetscCall(PetscObjectStateGet((PetscObject)osm->is[0], &d->isstate));
  PetscCall(PetscInfo(pc, "Additive Schwarz on the backend: %" PetscInt_FMT " subdomain entries, %" PetscInt_FMT " owned, %" PetscInt_FMT " from other processes\n", d->nsub, d->nown, d->nhalo));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* After PETSc's setup: the plan kept (the same index set in the same state on the same backend), made, or dropped,
   by the same decision on every process */
static PetscErrorCode ASMPlanUpdate(PC pc, ASMData *d)
{
  PC_ASM          *osm = (PC_ASM *)pc->data;
  PetscBool        seq, mpi, possible = PETSC_FALSE, all;
  PetscObjectId    id    = 0;
  PetscObjectState state = -1;

  PetscFunctionBegin;
  PetscCall(MatIsSeqAIJFused(pc->pmat, &seq));
  PetscCall(MatIsMPIAIJFused(pc->pmat, &mpi));
  d->fusedmat = (PetscBool)(seq || mpi);
  if (d->fusedmat) PetscCall(ASMPlanPossible(pc, d, &possible));
  PetscCallMPI(MPIU_Allreduce(&possible, &all, 1, MPI_C_BOOL, MPI_LAND, PetscObjectComm((PetscObject)pc)));
  if (all) {
    PetscCall(PetscObjectGetId((PetscObject)osm->is[0], &id));
    PetscCall(PetscObjectStateGet((PetscObject)osm->is[0], &state));
  }
  /* a plan is kept only if every process keeps its own: the exchange's requests pair processes */
  PetscBool keep = (PetscBool)(all && d->be == ActiveBackend() && d->isid == id && d->isstate == state), keepall;
  PetscCallMPI(MPIU_Allreduce(&keep, &keepall, 1, MPI_C_BOOL, MPI_LAND, PetscObjectComm((PetscObject)pc)));
  if (keepall) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(ASMPlanFree(d));
  if (all) PetscCall(ASMPlanBuild(pc, d));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* After PETSc's setup, with one subdomain on this process: where PETSc's subdomain matrix is MATSEQAIJ (the
   submatrices of MATMPIAIJFUSED), a MATSEQAIJFUSED copy of it (made again when its nonzero pattern changed, its values
   copied when they did) becomes the subdomain solver's operator, so its ILU(0)/ICC(0) is the fused factor, with fused
   vectors of its own.  (Converting PETSc's submatrix in place, as -pc_asm_sub_mat_type does, would leave the fused
   data to a destroy path of MATMPIAIJ's submatrices that does not reach the fused type's.)  A fused subdomain matrix
   (one process) is used as it is. */
static PetscErrorCode ASMSubdomainUpdate(PC pc, ASMData *d)
{
  PC_ASM          *osm = (PC_ASM *)pc->data;
  Mat              P;
  PetscBool        mpi, plain = PETSC_FALSE;
  PetscObjectState state;

  PetscFunctionBegin;
  PetscCall(MatIsMPIAIJFused(pc->pmat, &mpi));
  if (mpi && osm->n_local_true == 1) PetscCall(PetscObjectTypeCompare((PetscObject)osm->pmat[0], MATSEQAIJ, &plain));
  if (!plain) {
    PetscCall(MatDestroy(&d->sub));
    PetscCall(VecDestroy(&d->xs));
    PetscCall(VecDestroy(&d->ys));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  P = osm->pmat[0];
  PetscCall(PetscObjectStateGet((PetscObject)P, &state));
  if (d->sub && P->nonzerostate != d->subnonzerostate) {
    PetscCall(MatDestroy(&d->sub));
    PetscCall(VecDestroy(&d->xs));
    PetscCall(VecDestroy(&d->ys));
  }
  if (!d->sub) {
    PetscCall(MatConvert(P, MATSEQAIJFUSED, MAT_INITIAL_MATRIX, &d->sub));
    PetscCall(MatCreateVecs(d->sub, &d->xs, &d->ys));
  } else if (state != d->substate)
    PetscCall(MatCopy(P, d->sub, SAME_NONZERO_PATTERN));
  d->substate        = state;
  d->subnonzerostate = P->nonzerostate;
  PetscCall(KSPSetOperators(osm->ksp[0], d->sub, d->sub));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode PCSetUp_ASMFused(PC pc)
{
  ASMData *d;

  PetscFunctionBegin;
  PetscCall(WrappedPCGet(pc, &d));
  PetscCall((*d->setup)(pc));
  PetscCall(ASMSubdomainUpdate(pc, d));
  PetscCall(ASMPlanUpdate(pc, d));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The subdomain vector xs from x: the owned entries gathered, the halo's exchanged (all = PETSC_FALSE: zero there) */
static PetscErrorCode ASMRestrict(ASMData *d, PetscBool all, Vec x, Vec xs)
{
  const Backend *be = d->be;
  PetscScalar   *xa, *xsa;

  PetscFunctionBegin;
  PetscCall(VecFusedGetArray(x, PETSC_MEMORY_ACCESS_READ, &xa));
  PetscCall(VecFusedGetArray(xs, PETSC_MEMORY_ACCESS_WRITE, &xsa));
  if (all) PetscCall(HaloBegin(be, &d->halo, nullptr, xa));
  if (!all && d->nhalo) PetscCall(MatFusedBlas(be)->set(d->nsub, 0.0, xsa));
  PetscCall(be->gather(d->nown, d->own_loc, nullptr, xa, xsa + d->own_start));
  if (all) {
    PetscCall(HaloEnd(be, &d->halo));
    PetscCall(be->scatter(d->nhalo, d->halo_pos, d->halo.halo, PETSC_FALSE, xsa));
  }
  PetscCall(VecFusedRestoreArray(xs, PETSC_MEMORY_ACCESS_WRITE, &xsa));
  PetscCall(VecFusedRestoreArray(x, PETSC_MEMORY_ACCESS_READ, &xa));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* y from the subdomain vector ys: the owned entries (zero elsewhere), plus, with all, the halo's values added by
   the processes that own them */
static PetscErrorCode ASMProlong(ASMData *d, PetscBool all, Vec ys, Vec y)
{
  const Backend *be = d->be;
  PetscScalar   *ya, *ysa;

  PetscFunctionBegin;
  PetscCall(VecFusedGetArray(ys, PETSC_MEMORY_ACCESS_READ, &ysa));
  PetscCall(VecFusedGetArray(y, PETSC_MEMORY_ACCESS_WRITE, &ya));
  if (all) {
    PetscCall(PetscLogEventBegin(events.halo_pack, 0, 0, 0, 0));
    PetscCall(be->gather(d->nhalo, d->halo_pos, nullptr, ysa, d->halo.halo));
    PetscCall(HaloReverseBegin(be, &d->halo));
    PetscCall(PetscLogEventEnd(events.halo_pack, 0, 0, 0, 0));
  }
  if (d->nown < d->nlocal) PetscCall(MatFusedBlas(be)->set(d->nlocal, 0.0, ya));
  PetscCall(be->scatter(d->nown, d->own_loc, ysa + d->own_start, PETSC_FALSE, ya));
  if (all) PetscCall(HaloReverseEnd(be, &d->halo, ya));
  PetscCall(VecFusedRestoreArray(y, PETSC_MEMORY_ACCESS_WRITE, &ya));
  PetscCall(VecFusedRestoreArray(ys, PETSC_MEMORY_ACCESS_READ, &ysa));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* y = M^{-1} x (transpose: M^{-T} x) with the transfers on the backend (see the top of the file), else PETSc's.
   The PCASMType decides which transfer includes the other processes' entries, swapped for the transpose as in
   PETSc's PCApplyTranspose_ASM(); PC_ASM_WEIGHTED (its scaling vectors are PETSc's) is PETSc's operation. */
template <PetscBool transpose> static PetscErrorCode ASMApply(PC pc, Vec x, Vec y)
{
  PC_ASM   *osm = (PC_ASM *)pc->data;
  ASMData  *d;
  PetscBool fx, fy;

  PetscFunctionBegin;
  PetscCall(WrappedPCGet(pc, &d));
  PetscCall(VecIsFused(x, &fx));
  PetscCall(VecIsFused(y, &fy));
  if (d->be && d->be == ActiveBackend() && fx && fy && osm->type != PC_ASM_WEIGHTED) {
    const PCASMType type        = osm->type;
    const PetscBool restrictall = (PetscBool)((type & (transpose ? PC_ASM_INTERPOLATE : PC_ASM_RESTRICT)) != 0);
    const PetscBool prolongall  = (PetscBool)((type & (transpose ? PC_ASM_RESTRICT : PC_ASM_INTERPOLATE)) != 0);
    Vec             xs = d->sub ? d->xs : osm->x[0], ys = d->sub ? d->ys : osm->y[0];
    KSP             ksp = osm->ksp[0];
    PetscInt        nx, ny;

    PetscCall(VecGetLocalSize(x, &nx));
    PetscCall(VecGetLocalSize(y, &ny));
    PetscCheck(nx == d->nlocal && ny == d->nlocal, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "Additive Schwarz of %" PetscInt_FMT " local rows applied to vectors of %" PetscInt_FMT " and %" PetscInt_FMT " local entries", d->nlocal, nx, ny);
    PetscCall(ASMRestrict(d, restrictall, x, xs));
    PetscCall(PetscLogEventBegin(transpose ? PC_ApplyTransposeOnBlocks : PC_ApplyOnBlocks, ksp, xs, ys, 0));
    if (transpose)
      PetscCall(KSPSolveTranspose(ksp, xs, ys));
    else
      PetscCall(KSPSolve(ksp, xs, ys));
    PetscCall(KSPCheckSolve(ksp, pc, ys));
    PetscCall(PetscLogEventEnd(transpose ? PC_ApplyTransposeOnBlocks : PC_ApplyOnBlocks, ksp, xs, ys, 0));
    PetscCall(ASMProlong(d, prolongall, ys, y));
    d->napply_backend++;
  } else {
    PetscCall((*(transpose ? d->applytranspose : d->apply))(pc, x, y));
    d->napply_host++;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* PETSc's view, then where the transfers run (only for a fused matrix: with PETSc's types the PC is PETSc's) */
static PetscErrorCode PCView_ASMFused(PC pc, PetscViewer viewer)
{
  ASMData  *d;
  PetscBool line;
  char      detail[128];

  PetscFunctionBegin;
  PetscCall(WrappedPCViewPETSc(pc, viewer, &d, &line));
  if (!line) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(PetscSNPrintf(detail, sizeof(detail), "; %" PetscInt_FMT " subdomain entries, %" PetscInt_FMT " from other processes", d->nsub, d->nhalo));
  PetscCall(WrappedPCViewLine(viewer, "FusedKSP ASM", "restriction and prolongation", d->be, d->napply_backend, d->napply_host, detail, "PETSc's transfers on the host (several subdomains on a process, or inner subdomain sets)"));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode PCCreate_ASMFused(PC pc)
{
  ASMData *d;

  PetscFunctionBegin;
  PetscCall(WrappedPCCreate(pc, petsc_create_asm, &d));
  d->setup                = pc->ops->setup;
  d->apply                = pc->ops->apply;
  d->applytranspose       = pc->ops->applytranspose;
  d->view                 = pc->ops->view;
  d->reset                = pc->ops->reset;
  d->destroy              = pc->ops->destroy;
  pc->ops->setup          = PCSetUp_ASMFused;
  pc->ops->apply          = ASMApply<PETSC_FALSE>;
  pc->ops->applytranspose = ASMApply<PETSC_TRUE>;
  pc->ops->view           = PCView_ASMFused;
  pc->ops->reset          = WrappedPCReset<ASMData>;
  pc->ops->destroy        = WrappedPCDestroy<ASMData>;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode PCRegisterASMFused(void)
{
  PetscFunctionBegin;
  PetscCall(WrappedPCRegister(PCASM, &petsc_create_asm, PCCreate_ASMFused));
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace fusedksp
