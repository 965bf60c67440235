/*
   Point-block Jacobi (PCPBJACOBI, PCVPBJACOBI) on the backend for fused types.

   PETSc's own PCs stay in charge: the plugin registers the two type names again, with a constructor that
   creates PETSc's PC and then wraps its operations (PETSc does the same for its CUDA and Kokkos matrices inside
   PCSetUp_PBJacobi(), a dispatch on the matrix type a plugin cannot extend):
     setup  PETSc's (the blocks inverted on the host, its zero-pivot handling and failure reasons), then, when the
            preconditioner matrix is seqaijfused/mpiaijfused, the inverted blocks of the local rows
            (MatInvertBlockDiagonal(), or MatInvertVariableBlockDiagonal() with the sizes of
            MatSetVariableBlockSizes()) copied once to the backend; again only when the matrix (its id or its
            PetscObjectState) changed;
     apply, applytranspose
            with fused vectors y = D^{-1} x (D^{-T}) by Backend::blockdiag_mult on the vectors' backend arrays, no
            host<->device copy; any other vectors, or a matrix that is not fused: PETSc's host operation;
     view   PETSc's, plus one "FusedKSP point-block Jacobi" line for a fused matrix;
     reset, destroy
            free the backend's copy (and the composed data), then PETSc's.
   So every KSP (classical or fused) and every PC that nests one (PCBJACOBI blocks, PCMG/PCGAMG smoothers)
   applies point-block Jacobi on the device.  The data lives in a container composed on the PC.
*/
#include "sys/fusedksp_impl.hpp"
#include "vec/vecfused.hpp"
#include "mat/aijfused.hpp"
#include "pc/wrapped.hpp"
#include "pc/backendkernel.hpp"

namespace fusedksp
{

/* PETSc's constructors of the two types, found in PCList before they are registered again */
static PetscErrorCode (*petsc_create_pbjacobi)(PC)  = nullptr;
static PetscErrorCode (*petsc_create_vpbjacobi)(PC) = nullptr;

struct BlockDiagData {
  static constexpr const char *name = "FusedKSPBlockDiag", *what = "FusedKSP's point-block Jacobi";
  static PetscErrorCode        Free(BlockDiagData *d); /* the backend's copy of the blocks */
  /* PETSc's operations of the PC */
  PetscErrorCode (*setup)(PC)                    = nullptr;
  PetscErrorCode (*apply)(PC, Vec, Vec)          = nullptr;
  PetscErrorCode (*applytranspose)(PC, Vec, Vec) = nullptr;
  PetscErrorCode (*view)(PC, PetscViewer)        = nullptr;
  PetscErrorCode (*reset)(PC)                    = nullptr;
  PetscErrorCode (*destroy)(PC)                  = nullptr;
  PetscBool        variable                      = PETSC_FALSE; /* PCVPBJACOBI */
  PetscBool        fusedmat                      = PETSC_FALSE; /* the matrix of the last setup is fused */
  const Backend   *be                            = nullptr;     /* where the blocks are; NULL: not copied */
  BlockDiagView    blocks;                                      /* arrays in be's memory */
  PetscInt         n = 0, minbs = 0, maxbs = 0;                 /* local rows, smallest and largest block */
  PetscInt64       nvals          = 0;                          /* stored values */
  PetscObjectId    matid          = 0;                          /* the matrix whose blocks were copied, and its state then */
  PetscObjectState matstate       = -1;
  PetscInt64       napply_backend = 0, napply_host = 0; /* applications with fused vectors, and PETSc's host ones */
};

/* Frees the backend's copy of the blocks */
PetscErrorCode BlockDiagData::Free(BlockDiagData *d)
{
  PetscFunctionBegin;
  if (d->be) {
    PetscCall(d->be->free_bytes((void *)d->blocks.vals));
    PetscCall(d->be->free_bytes((void *)d->blocks.rowptr));
    PetscCall(d->be->free_bytes((void *)d->blocks.valptr));
  }
  d->be       = nullptr;
  d->blocks   = BlockDiagView();
  d->n        = 0;
  d->nvals    = 0;
  d->matid    = 0;
  d->matstate = -1;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The inverted blocks of the local rows of pmat to d->be (set, with nothing allocated yet): constant size from
   MatInvertBlockDiagonal() (the matrix's own cache, which PETSc's setup has just filled), variable sizes from
   MatInvertVariableBlockDiagonal() with their row and value offsets.  The sizes are checked before anything is
   allocated; what is allocated on the backend is in d->blocks, for BlockDiagFree()                          */
static PetscErrorCode BlockDiagCopy(BlockDiagData *d, Mat pmat)
{
  const Backend *be = d->be;
  PetscInt       n;
  PetscScalar   *vals;

  PetscFunctionBegin;
  PetscCall(MatGetLocalSize(pmat, &n, NULL));
  d->n = n;
  if (!d->variable) {
    PetscInt           bs;
    const PetscScalar *hvals;

    PetscCall(MatGetBlockSize(pmat, &bs));
    PetscCheck(bs > 0 && n % bs == 0, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "PCPBJACOBI: the block size %" PetscInt_FMT " does not divide the %" PetscInt_FMT " local rows", bs, n);
    PetscCall(MatInvertBlockDiagonal(pmat, &hvals));
    d->minbs = d->maxbs = bs;
    d->nvals            = (PetscInt64)n * bs;
    d->blocks.nblocks   = n / bs;
    d->blocks.bs        = bs;
    PetscCall(be->malloc_bytes(PetscMax(d->nvals, 1) * sizeof(PetscScalar), (void **)&vals));
    d->blocks.vals = vals;
    PetscCall(be->copy_to_backend(vals, hvals, d->nvals * sizeof(PetscScalar)));
  } else {
    PetscInt        nblocks, rows = 0, *rowptr, *drowptr;
    const PetscInt *bsizes;
    PetscInt64     *valptr, *dvalptr;
    PetscScalar    *hvals;

    PetscCall(MatGetVariableBlockSizes(pmat, &nblocks, &bsizes));
    PetscCheck(!n || nblocks, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONGSTATE, "PCVPBJACOBI needs MatSetVariableBlockSizes() on the preconditioner matrix");
    d->minbs = nblocks ? PETSC_INT_MAX : 0;
    d->maxbs = 0;
    d->nvals = 0;
    for (PetscInt k = 0; k < nblocks; ++k) {
      PetscCheck(bsizes[k] > 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "PCVPBJACOBI: block %" PetscInt_FMT " has size %" PetscInt_FMT, k, bsizes[k]);
      rows += bsizes[k];
      d->nvals += (PetscInt64)bsizes[k] * bsizes[k];
      d->minbs = PetscMin(d->minbs, bsizes[k]);
      d->maxbs = PetscMax(d->maxbs, bsizes[k]);
    }
    PetscCheck(rows == n, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "PCVPBJACOBI: the variable block sizes add up to %" PetscInt_FMT " rows, the matrix has %" PetscInt_FMT " local rows", rows, n);
    d->blocks.nblocks = nblocks;
    PetscCall(be->malloc_bytes(PetscMax(d->nvals, 1) * sizeof(PetscScalar), (void **)&vals));
    d->blocks.vals = vals;
    PetscCall(be->malloc_bytes((nblocks + 1) * sizeof(PetscInt), (void **)&drowptr));
    d->blocks.rowptr = drowptr;
    PetscCall(be->malloc_bytes((nblocks + 1) * sizeof(PetscInt64), (void **)&dvalptr));
    d->blocks.valptr = dvalptr;
    PetscCall(PetscMalloc3(nblocks + 1, &rowptr, nblocks + 1, &valptr, d->nvals, &hvals));
    rowptr[0] = 0;
    valptr[0] = 0;
    for (PetscInt k = 0; k < nblocks; ++k) {
      rowptr[k + 1] = rowptr[k] + bsizes[k];
      valptr[k + 1] = valptr[k] + (PetscInt64)bsizes[k] * bsizes[k];
    }
    PetscCall(MatInvertVariableBlockDiagonal(pmat, nblocks, bsizes, hvals));
    PetscCall(be->copy_to_backend(vals, hvals, d->nvals * sizeof(PetscScalar)));
    PetscCall(be->copy_to_backend(drowptr, rowptr, (nblocks + 1) * sizeof(PetscInt)));
    PetscCall(be->copy_to_backend(dvalptr, valptr, (nblocks + 1) * sizeof(PetscInt64)));
    PetscCall(PetscFree3(rowptr, valptr, hvals));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* After PETSc's setup: the blocks of a fused matrix to the active backend, unless they are there already (the same
   matrix in the same state) */
static PetscErrorCode BlockDiagUpload(PC pc, BlockDiagData *d)
{
  Mat              pmat = pc->pmat;
  PetscBool        seq, mpi;
  PetscObjectId    id;
  PetscObjectState state;

  PetscFunctionBegin;
  PetscCall(MatIsSeqAIJFused(pmat, &seq));
  PetscCall(MatIsMPIAIJFused(pmat, &mpi));
  d->fusedmat = (PetscBool)(seq || mpi);
  if (!d->fusedmat) {
    PetscCall(BlockDiagData::Free(d));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(PetscObjectGetId((PetscObject)pmat, &id));
  PetscCall(PetscObjectStateGet((PetscObject)pmat, &state));
  if (d->be == ActiveBackend() && d->matid == id && d->matstate == state) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(BlockDiagData::Free(d));
  d->be = ActiveBackend();
  PetscCall(BlockDiagCopy(d, pmat));
  d->matid    = id;
  d->matstate = state;
  PetscFunctionReturn(PETSC_SUCCESS);
}

template <PetscBool transpose> static PetscErrorCode BlockDiagApply(PC, Vec, Vec);
constexpr PetscErrorCode (*PCApply_BlockDiagFused)(PC, Vec, Vec)          = BlockDiagApply<PETSC_FALSE>;
constexpr PetscErrorCode (*PCApplyTranspose_BlockDiagFused)(PC, Vec, Vec) = BlockDiagApply<PETSC_TRUE>;

/* Puts the wrappers of apply and applytranspose in front of PETSc's current ones (PCVPBJACOBI sets its own in its
   setup); an operation PETSc leaves NULL stays NULL, so PCApplyTransposeExists() answers as for PETSc's PC       */
static void HookApply(PC pc, BlockDiagData *d)
{
  if (pc->ops->apply && pc->ops->apply != PCApply_BlockDiagFused) {
    d->apply       = pc->ops->apply;
    pc->ops->apply = PCApply_BlockDiagFused;
  }
  if (pc->ops->applytranspose && pc->ops->applytranspose != PCApplyTranspose_BlockDiagFused) {
    d->applytranspose       = pc->ops->applytranspose;
    pc->ops->applytranspose = PCApplyTranspose_BlockDiagFused;
  }
}

static PetscErrorCode PCSetUp_BlockDiagFused(PC pc)
{
  BlockDiagData *d;

  PetscFunctionBegin;
  PetscCall(WrappedPCGet(pc, &d));
  PetscCall((*d->setup)(pc));
  HookApply(pc, d);
  PetscCall(BlockDiagUpload(pc, d));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* y = D^{-1} x (transpose: D^{-T} x) on the backend for fused vectors, else PETSc's host operation */
template <PetscBool transpose> static PetscErrorCode BlockDiagApply(PC pc, Vec x, Vec y)
{
  BlockDiagData *d;
  PetscBool      fx, fy;

  PetscFunctionBegin;
  PetscCall(WrappedPCGet(pc, &d));
  PetscCall(VecIsFused(x, &fx));
  PetscCall(VecIsFused(y, &fy));
  if (d->be && d->be == ActiveBackend() && fx && fy) {
    const Backend *be = d->be;
    PetscScalar   *xp, *yp;
    PetscInt       nx, ny;

    PetscCall(VecGetLocalSize(x, &nx));
    PetscCall(VecGetLocalSize(y, &ny));
    PetscCheck(nx == d->n && ny == d->n, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "Point-block Jacobi of %" PetscInt_FMT " local rows applied to vectors of %" PetscInt_FMT " and %" PetscInt_FMT " local entries", d->n, nx, ny);
    PetscCall(PetscLogEventBegin(events.blockdiag, pc, x, y, 0));
    PetscCall(VecFusedGetArray(x, PETSC_MEMORY_ACCESS_READ, &xp));
    PetscCall(VecFusedGetArray(y, PETSC_MEMORY_ACCESS_WRITE, &yp));
    PetscCall(be->blockdiag_mult(&d->blocks, transpose, xp, yp));
    PetscCall(VecFusedRestoreArray(y, PETSC_MEMORY_ACCESS_WRITE, &yp));
    PetscCall(VecFusedRestoreArray(x, PETSC_MEMORY_ACCESS_READ, &xp));
    PetscCall(PetscLogFlops(2.0 * d->nvals - d->n));
    PetscCall(PetscLogEventEnd(events.blockdiag, pc, x, y, 0));
    d->napply_backend++;
  } else {
    PetscCall((*(transpose ? d->applytranspose : d->apply))(pc, x, y));
    d->napply_host++;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode PCBackendKernel(PC pc, PetscBool *yes)
{
  BlockDiagData *d;

  PetscFunctionBegin;
  *yes = PETSC_FALSE;
  if (pc->ops->apply != PCApply_BlockDiagFused || !pc->setupcalled) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(WrappedPCGet(pc, &d));
  *yes = d->be && d->be == ActiveBackend() ? PETSC_TRUE : PETSC_FALSE;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode PCBackendKernelKey(PC pc, std::vector<const void *> *key)
{
  BlockDiagData *d;

  PetscFunctionBegin;
  PetscCall(WrappedPCGet(pc, &d));
  FusedKSPCallCXX(key->insert(key->end(), {d->blocks.vals, d->blocks.rowptr, d->blocks.valptr}));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode PCBackendKernelApply(PC pc, PetscBool transpose, Vec x, Vec y)
{
  PetscFunctionBegin;
  PetscCall(transpose ? PCApplyTranspose_BlockDiagFused(pc, x, y) : PCApply_BlockDiagFused(pc, x, y));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* PETSc's view, then where the blocks are applied (only for a fused matrix: with PETSc's types the PC is PETSc's) */
static PetscErrorCode PCView_BlockDiagFused(PC pc, PetscViewer viewer)
{
  BlockDiagData *d;
  PetscBool      line;
  char           what[128];

  PetscFunctionBegin;
  PetscCall(WrappedPCViewPETSc(pc, viewer, &d, &line));
  if (!line) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(PetscSNPrintf(what, sizeof(what), "blocks of sizes %" PetscInt_FMT "-%" PetscInt_FMT " inverted on the host, applied", d->minbs, d->maxbs));
  PetscCall(WrappedPCViewLine(viewer, "FusedKSP point-block Jacobi", what, d->be, d->napply_backend, d->napply_host, "", "the blocks are not on the backend, PETSc's host apply"));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* PETSc's constructor, then the wrappers */
static PetscErrorCode PCCreate_BlockDiagFused(PC pc, PetscErrorCode (*create)(PC), PetscBool variable)
{
  BlockDiagData *d;

  PetscFunctionBegin;
  PetscCall(WrappedPCCreate(pc, create, &d));
  d->variable      = variable;
  d->setup         = pc->ops->setup;
  d->view          = pc->ops->view;
  d->reset         = pc->ops->reset;
  d->destroy       = pc->ops->destroy;
  pc->ops->setup   = PCSetUp_BlockDiagFused;
  pc->ops->view    = PCView_BlockDiagFused;
  pc->ops->reset   = WrappedPCReset<BlockDiagData>;
  pc->ops->destroy = WrappedPCDestroy<BlockDiagData>;
  HookApply(pc, d);
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode PCCreate_PBJacobiFused(PC pc)
{
  PetscFunctionBegin;
  PetscCall(PCCreate_BlockDiagFused(pc, petsc_create_pbjacobi, PETSC_FALSE));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode PCCreate_VPBJacobiFused(PC pc)
{
  PetscFunctionBegin;
  PetscCall(PCCreate_BlockDiagFused(pc, petsc_create_vpbjacobi, PETSC_TRUE));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode PCRegisterBlockDiagFused(void)
{
  PetscFunctionBegin;
  PetscCall(WrappedPCRegister(PCPBJACOBI, &petsc_create_pbjacobi, PCCreate_PBJacobiFused));
  PetscCall(WrappedPCRegister(PCVPBJACOBI, &petsc_create_vpbjacobi, PCCreate_VPBJacobiFused));
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace fusedksp

/*MC
  PCPBJACOBI_FUSED - point-block Jacobi (`PCPBJACOBI`, `PCVPBJACOBI`) of a `MATAIJFUSED` matrix applied on the FusedKSP backend

  Notes:
  Not a type of its own: `FusedKSPInitializePackage()` registers PETSc's `PCPBJACOBI` and `PCVPBJACOBI` again, so
  `-pc_type pbjacobi|vpbjacobi` (also `-sub_pc_type`, `-mg_levels_pc_type`) gives PETSc's PC, whose setup (the blocks
  inverted on the host, the block size of the matrix or `MatSetVariableBlockSizes()`, a singular block handled as PETSc
  does: `KSP_DIVERGED_PC_FAILED`, or an error under `KSPSetErrorIfNotConverged()`) is PETSc's.  When the matrix the
  preconditioner is built from is `seqaijfused` or `mpiaijfused`, the inverted blocks of each rank's rows are then copied
  once to the backend (again only when the matrix changes), and `PCApply()` and `PCApplyTranspose()` with fused vectors
  run there as one kernel (CUDA: one thread per block), with no host<->device vector copy, for every `KSP` (the fused
  solvers and PETSc's own).  Other vectors, and other matrix types, get PETSc's host apply.  `-ksp_view` adds the line
  "FusedKSP point-block Jacobi: blocks of sizes a-b inverted on the host, applied on the <backend> backend with fused
  vectors ..." with the applications made there and by PETSc on the host; `-log_view` counts the kernels as
  `FusedBlockDiag`.

  The fused solvers treat the PC as a general one (`PCApply()` between their kernels): it is not fused into their
  kernels as `PCJACOBI` is, so `fusedcg` runs its chunks of iterations without persistent kernels or CUDA graphs.

  Level: beginner

.seealso: `PCPBJACOBI`, `PCVPBJACOBI`, `MatInvertBlockDiagonal()`, `MatInvertVariableBlockDiagonal()`, `MATAIJFUSED`, `FusedKSPInitializePackage()`
M*/
