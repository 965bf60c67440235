/*
   MATMPIAIJFUSED: PETSc's MATMPIAIJ (assembly, MatSetValues and every host operation stay PETSc's)
   whose diagonal block Ad and off-diagonal block Ao (columns compressed to the halo entries, as
   MATMPIAIJ keeps them) are mirrored in the backend's memory, and whose product runs on the backend
   with a halo exchange of its own:

     1. pack     gather kernel: buf = (wr .* x)[entries other ranks need]; on the device backend an
                 asynchronous copy of buf to a pinned host buffer follows (unless MPI is CUDA-aware);
                 a fence is recorded after them
     2. diagonal the SpMV of the diagonal block with wl and the solvers' dot products,
                 out = wl .* (Ad (wr .* x)) (CSR or SELL-P, as a MATSEQAIJFUSED), queued behind the fence
     3. exchange the host waits for the fence only (the pack, not the diagonal SpMV), then
                 persistent MPI_Recv_init/MPI_Send_init requests are started and completed while the
                 diagonal SpMV runs on the device
     4. unpack   asynchronous copy of the received values to the device (unless MPI is CUDA-aware),
                 and a scatter kernel when the receive order is not the halo order
     5. off-diag on the rows with off-diagonal entries only: out += wl .* (Ao halo), and the change of
                 their terms added to the dot products (Backend::spmv_offdiag_dots)

   A rank without off-diagonal entries skips 4 and 5.  MatAssemblyEnd (MAT_FINAL_ASSEMBLY) brings the
   mirrored blocks up to date: the values, into their existing arrays, when the object state of the
   matrix (or of a block) changed, and first the arrays when its nonzero state (or a block's) or its
   PetscSF changed; the halo pattern of a new structure is built at the next product.  Every product checks
   the states too (for changes made without an assembly).  The pattern is that of PETSc's own
   product (MatGetMultPetscSF()): the ranks it receives from and the halo slots
   (PetscSFGetRootRanks()), the ranks it sends to and the local entries (PetscSFGetLeafRanks()).
   With the host backend the blocks are PETSc's own CSR arrays.
*/
#include "mat/aijfused.hpp"
#include "mat/mirror.hpp"
#include "mat/matpowers.hpp"
#include "vec/vecfused.hpp"
#include <petsc/private/matimpl.h>
#include <petscsf.h>
#include "mat/aijfused_private.hpp"
#include <vector>
#if defined(OPEN_MPI) && OPEN_MPI && __has_include(<mpi-ext.h>)
#include <mpi-ext.h> /* MPIX_CUDA_AWARE_SUPPORT, MPIX_Query_cuda_support() */
#endif

namespace fusedksp
{
namespace
{

/* The operations MATMPIAIJFUSED replaces in MATMPIAIJ's table: X(op, fused implementation) */
#define FUSED_MPIAIJ_OPS(X)                                                                                                                                                                                                                              \
  FUSED_AIJ_SHARED_OPS(X, MPIAIJFusedType)                                                                                                                                                                                                               \
  X(getdiagonal, MatGetDiagonal_MPIAIJFused)                                                                                                                                                                                                             \
  X(view, MatView_MPIAIJFused)                                                                                                                                                                                                                           \
  X(createsubmatrix, MatCreateSubMatrix_MPIAIJFused)                                                                                                                                                                                                     \
  X(getdiagonalblock, MatGetDiagonalBlock_MPIAIJFused)

/* MATMPIAIJ's implementations of those operations, called for the host work */
struct HostOps {
  FUSED_MPIAIJ_OPS(FUSED_DECLARE_HOST_OP)
};

/* The data of a MATMPIAIJFUSED, in Mat->spptr (moves with the header, see aijfused.cxx) */
struct MatMPIFusedData {
  const Backend    *backend = nullptr;
  Mirror            diag;    /* CSR or SELL-P (-mat_aijfused_format), as a MATSEQAIJFUSED */
  OffDiagRows       offdiag; /* CSR: its rows are short, most are empty                    */
  MatAIJFusedFormat requested = MAT_AIJFUSED_AUTO;
  Halo              halo;
  PetscBool         options_read = PETSC_FALSE, direct = PETSC_FALSE; /* -fused_cuda_aware_mpi */
  PetscBool         halo_current = PETSC_FALSE;                       /* the halo pattern is that of the blocks' structure */
  PetscObjectState  state = -1, diag_state = -1, offdiag_state = -1, nonzerostate = -1;
  PetscObjectState  diag_nonzerostate = -1, offdiag_nonzerostate = -1;   /* the blocks' own: MatEliminateZeros() changes them, not A's */
  PetscSF           sf         = nullptr;                                /* PETSc's product PetscSF the structure was built from (a reference, so its address identifies it) */
  PetscInt64        structures = 0;                                      /* structures built so far: the transposes follow the blocks' structure */
  Mirror            diag_t, offdiag_t;                                   /* Ad^T and Ao^T (nhalo rows, CSR), built at the first transposed product */
  PetscObjectState  transpose_state     = -1;                            /* the state of A the transposes hold                       */
  PetscInt64        transpose_structure = -1;                            /* the structure they were built for                        */
  PetscScalar      *work                = nullptr;                       /* backend, max(local rows, local columns): MatMultAdd()s   */
  Mat               diag_block          = nullptr;                       /* MatGetDiagonalBlock(): a MATSEQAIJFUSED copy of the diagonal block */
  PetscObjectState  diag_block_state = -1, diag_block_nonzerostate = -1; /* the block's states the copy holds */
  HostOps           host;
};

inline MatMPIFusedData *Data(Mat A)
{
  return static_cast<MatMPIFusedData *>(A->spptr);
}

/* What the MPI library says about device pointers (*known: whether it has a query):
   Open MPI answers with MPIX_Query_cuda_support(), MPICH 4 with MPIX_GPU_query_support().      */
PetscErrorCode QueryCUDASupport(PetscBool *known, PetscBool *supported)
{
  PetscFunctionBegin;
  *known     = PETSC_TRUE;
  *supported = PETSC_FALSE;
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  *supported = MPIX_Query_cuda_support() == 1 ? PETSC_TRUE : PETSC_FALSE;
#elif defined(MPIX_CUDA_AWARE_SUPPORT)
  /* Open MPI built without CUDA */
#elif defined(MPICH_NUMVERSION) && defined(MPIX_GPU_SUPPORT_CUDA)
  int gpu = 0;

  PetscCallMPI(MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA, &gpu));
  *supported = gpu ? PETSC_TRUE : PETSC_FALSE;
#else
  *known = PETSC_FALSE;
#endif
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* -mat_aijfused_format and -fused_cuda_aware_mpi, read once (at the first final assembly, or at the
   first product of a matrix assembled otherwise, as by MatDuplicate(): both are collective).  The
   default of the latter is the answer of Open MPI; other MPIs (MPICH) answer no query this code
   trusts to say yes, so the default there is 0, but a "no" from the MPI turns a forced 1 into an
   error instead of a crash.                                                                      */
PetscErrorCode ReadOptions(Mat A, MatMPIFusedData *d)
{
  PetscBool   host = d->backend->host_memory, known, supported, direct;
  const char *prefix;

  PetscFunctionBegin;
  PetscCall(QueryCUDASupport(&known, &supported));
#if defined(OPEN_MPI) && OPEN_MPI
  direct = host || supported ? PETSC_TRUE : PETSC_FALSE;
#else
  direct = host;
#endif
  PetscCall(MatGetOptionsPrefix(A, &prefix));
  PetscOptionsBegin(PetscObjectComm((PetscObject)A), prefix, "MATMPIAIJFUSED options (read at the first assembly)", "Mat");
  PetscCall(PetscOptionsEnum("-mat_aijfused_format", "Storage of the diagonal block on the backend", "MatAIJFusedSetFormat", MatAIJFusedFormats, (PetscEnum)d->requested, (PetscEnum *)&d->requested, nullptr));
  PetscCall(PetscOptionsBool("-fused_cuda_aware_mpi",
                             "Halo exchange of MATMPIAIJFUSED: 1 hands device buffers to MPI (CUDA-aware MPI), 0 stages them through pinned host buffers (default: Open MPI's answer, else 0; the host backend exchanges in place)", "MATMPIAIJFUSED",
                             direct, &direct, nullptr));
  PetscOptionsEnd();
  PetscCheck(host || !direct || !known || supported, PetscObjectComm((PetscObject)A), PETSC_ERR_SUP_SYS, "-fused_cuda_aware_mpi 1: this MPI library reports no CUDA support; use -fused_cuda_aware_mpi 0 (halo through pinned host buffers)");
  d->direct       = direct;
  d->options_read = PETSC_TRUE;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The mirror of the diagonal block Ad: the structure when `structure`, then the values */
PetscErrorCode MirrorDiagonalBlock(MatMPIFusedData *d, Mat Ad, PetscBool structure)
{
  const PetscBool alias = d->backend->host_memory;
  const PetscInt *ai, *aj;
  PetscScalar    *aa;
  PetscInt        m, n;

  PetscFunctionBegin;
  PetscCall(SeqAIJHostCSR(Ad, &m, &n, &ai, &aj, &aa));
  if (structure || (alias && d->diag.format == MAT_AIJFUSED_CSR && d->diag.csr.rowptr != ai)) PetscCall(MirrorBuild(d->backend, d->requested, m, n, ai, aj, alias, &d->diag));
  PetscCall(MirrorSetValues(d->backend, aa, alias, &d->diag));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* PETSc's product PetscSF of A: MatGetMultPetscSF() without its check that A is assembled, since
   MatAssemblyEnd() marks A assembled only after MATMPIAIJ's assemblyend, which sets the PetscSF up */
PetscErrorCode MultPetscSF(Mat A, PetscSF *sf)
{
  PetscErrorCode (*get)(Mat, PetscSF *) = nullptr;

  PetscFunctionBegin;
  PetscCall(PetscObjectQueryFunction((PetscObject)A, "MatGetMultPetscSF_C", &get));
  PetscCheck(get, PetscObjectComm((PetscObject)A), PETSC_ERR_PLIB, "The MATMPIAIJ has no MatGetMultPetscSF()");
  *sf = nullptr;
  PetscCall(get(A, sf));
  PetscCheck(*sf, PetscObjectComm((PetscObject)A), PETSC_ERR_PLIB, "The MATMPIAIJ has no PetscSF for its product");
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Brings the mirrored blocks up to date with A as of the object state `state` (the current one, or
   the one A will have when MatAssemblyEnd() returns): nothing when A and its blocks are unchanged,
   else the values into the existing arrays, and first the structure when the nonzero state of A or
   of a block, or the product's PetscSF changed.  A block's own nonzero state changes alone when its
   structure changes in place on this rank only (MatEliminateZeros() compresses the rows of both
   blocks and keeps the columns of the off-diagonal one): the halo pattern stays, while a new nonzero
   state of A or a new PetscSF (the same on every rank) makes it stale.  Collective.               */
PetscErrorCode RefreshBlocks(Mat A, MatMPIFusedData *d, PetscObjectState state)
{
  Mat              Ad, Ao;
  PetscSF          sf;
  PetscObjectState diag_state, offdiag_state;
  PetscBool        global, structure;

  PetscFunctionBegin;
  if (!d->options_read) PetscCall(ReadOptions(A, d));
  PetscCall(MatMPIAIJGetSeqAIJ(A, &Ad, &Ao, nullptr));
  PetscCall(MultPetscSF(A, &sf));
  PetscCall(PetscObjectStateGet((PetscObject)Ad, &diag_state));
  PetscCall(PetscObjectStateGet((PetscObject)Ao, &offdiag_state));
  global    = (A->nonzerostate != d->nonzerostate || sf != d->sf) ? PETSC_TRUE : PETSC_FALSE;
  structure = (global || Ad->nonzerostate != d->diag_nonzerostate || Ao->nonzerostate != d->offdiag_nonzerostate) ? PETSC_TRUE : PETSC_FALSE;
  if (structure || state != d->state || diag_state != d->diag_state || offdiag_state != d->offdiag_state) {
    PetscCall(MirrorDiagonalBlock(d, Ad, structure));
    {
      const PetscInt *ai, *aj;
      PetscScalar    *aa;
      PetscInt        m, n;

      PetscCall(SeqAIJHostCSR(Ao, &m, &n, &ai, &aj, &aa));
      PetscCall(OffDiagRowsMirror(d->backend, m, n, ai, aj, aa, structure, &d->offdiag));
    }
    d->state         = state;
    d->diag_state    = diag_state;
    d->offdiag_state = offdiag_state;
  }
  if (structure) {
    d->diag_nonzerostate    = Ad->nonzerostate;
    d->offdiag_nonzerostate = Ao->nonzerostate;
    d->structures++;
  }
  if (global) {
    PetscCall(PetscObjectReference((PetscObject)sf));
    PetscCall(PetscSFDestroy(&d->sf));
    d->nonzerostate = A->nonzerostate;
    d->sf           = sf;
    d->halo_current = PETSC_FALSE;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Brings the mirrored blocks and the halo pattern (built at the first product after a new structure)
   up to date with A.  Collective. */
PetscErrorCode Refresh(Mat A, MatMPIFusedData *d)
{
  PetscObjectState state;
  PetscInt         nhalo;
  Mat              Ao;

  PetscFunctionBegin;
  PetscCheck(A->assembled, PetscObjectComm((PetscObject)A), PETSC_ERR_ARG_WRONGSTATE, "Matrix must be assembled before a fused product");
  PetscCheck(!A->structure_only, PetscObjectComm((PetscObject)A), PETSC_ERR_ARG_WRONGSTATE, "A structure-only matrix (MatSetOption(A, MAT_STRUCTURE_ONLY, PETSC_TRUE)) has no values for a product");
  PetscCall(PetscObjectStateGet((PetscObject)A, &state));
  PetscCall(RefreshBlocks(A, d, state));
  if (!d->halo_current) {
    PetscCall(MatMPIAIJGetSeqAIJ(A, nullptr, &Ao, nullptr));
    PetscCall(MatGetLocalSize(Ao, nullptr, &nhalo));
    PetscCall(HaloBuild((PetscObject)A, d->backend, d->direct, d->sf, nhalo, &d->halo));
    d->halo_current = PETSC_TRUE;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Brings Ad^T and Ao^T up to date with the blocks (Refresh() first).  Ao^T has a row per halo entry:
   its product with the local x is what this rank adds to the entries of y that other ranks own. */
PetscErrorCode RefreshTransposes(Mat A, MatMPIFusedData *d)
{
  Mat             Ad, Ao;
  const PetscInt *ai, *aj;
  PetscScalar    *aa;
  PetscInt        m, n;
  const PetscBool structure = d->transpose_structure != d->structures ? PETSC_TRUE : PETSC_FALSE;

  PetscFunctionBegin;
  if (!structure && d->transpose_state == d->state) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(MatMPIAIJGetSeqAIJ(A, &Ad, &Ao, nullptr));
  PetscCall(SeqAIJHostCSR(Ad, &m, &n, &ai, &aj, &aa));
  PetscCall(MirrorTransposeRefresh(d->backend, d->requested, m, n, ai, aj, aa, structure, &d->diag_t));
  PetscCall(SeqAIJHostCSR(Ao, &m, &n, &ai, &aj, &aa));
  PetscCall(MirrorTransposeRefresh(d->backend, MAT_AIJFUSED_CSR, m, n, ai, aj, aa, structure, &d->offdiag_t));
  d->transpose_structure = d->structures;
  d->transpose_state     = d->state;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* y = A^T x on the backend arrays: t = Ao^T x into the halo buffer, sent back to the owners of the halo
   entries while y = Ad^T x runs, then what the other ranks sent is added into y (y[send_idx[k]] +=) */
PetscErrorCode MultTransposeDevice(Mat A, MatMPIFusedData *d, const PetscScalar *x, PetscScalar *y)
{
  const Backend *be = d->backend;
  Halo          &h  = d->halo;

  PetscFunctionBegin;
  PetscCall(Refresh(A, d));
  PetscCall(RefreshTransposes(A, d));
  if (!h.reverse.empty()) {
    PetscCall(PetscLogEventBegin(events.halo_pack, 0, 0, 0, 0));
    PetscCall(MirrorProduct(be, &d->offdiag_t, nullptr, nullptr, x, h.halo, 0, nullptr, nullptr));
    PetscCall(HaloReverseBegin(be, &h));
    PetscCall(PetscLogEventEnd(events.halo_pack, 0, 0, 0, 0));
  }
  PetscCall(PetscLogEventBegin(events.spmv_dots, A, 0, 0, 0));
  PetscCall(MirrorProduct(be, &d->diag_t, nullptr, nullptr, x, y, 0, nullptr, nullptr));
  PetscCall(PetscLogEventEnd(events.spmv_dots, A, 0, 0, 0));
  PetscCall(HaloReverseEnd(be, &h, y));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* y = op(A) x, plus z when z != NULL, on the backend arrays; op(A) = A or A^T.  With z the product goes
   to y (to the work array when y is z), then one BLAS-1 kernel adds.  Collective. */
PetscErrorCode MultDevice(Mat A, PetscBool transpose, Vec x, Vec z, Vec y)
{
  MatMPIFusedData            *d    = Data(A);
  const PetscInt              n    = transpose ? A->cmap->n : A->rmap->n;
  const PetscMemoryAccessMode mode = z == y ? PETSC_MEMORY_ACCESS_READ_WRITE : PETSC_MEMORY_ACCESS_WRITE;
  PetscScalar                *xa, *ya, *za, *out;

  PetscFunctionBegin;
  if (z == y && !d->work) PetscCall(d->backend->malloc_bytes(sizeof(PetscScalar) * PetscMax(PetscMax(A->rmap->n, A->cmap->n), 1), (void **)&d->work));
  PetscCall(VecFusedGetArray(x, PETSC_MEMORY_ACCESS_READ, &xa));
  PetscCall(VecFusedGetArray(y, mode, &ya));
  out = z == y ? d->work : ya;
  if (transpose)
    PetscCall(MultTransposeDevice(A, d, xa, out));
  else
    PetscCall(MatMPIAIJFusedMultDots(A, nullptr, nullptr, xa, out, 0, nullptr, nullptr));
  if (z == y)
    PetscCall(MatFusedBlas(d->backend)->axpy(n, 1.0, d->work, ya));
  else if (z) {
    PetscCall(VecFusedGetArray(z, PETSC_MEMORY_ACCESS_READ, &za));
    PetscCall(MatFusedBlas(d->backend)->axpy(n, 1.0, za, ya));
    PetscCall(VecFusedRestoreArray(z, PETSC_MEMORY_ACCESS_READ, &za));
  }
  if (z && d->backend->host_memory)
    PetscCall(PetscLogFlops((PetscLogDouble)n));
  else if (z)
    PetscCall(PetscLogGpuFlops((PetscLogDouble)n));
  PetscCall(VecFusedRestoreArray(y, mode, &ya));
  PetscCall(VecFusedRestoreArray(x, PETSC_MEMORY_ACCESS_READ, &xa));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Whether an operation of A on these vectors runs on the backend: they are fused, and A lives with the active backend */
PetscErrorCode OnBackend(Mat A, std::initializer_list<Vec> vecs, PetscBool *device)
{
  PetscFunctionBegin;
  PetscCall(MatFusedOnBackend(vecs, device));
  if (Data(A)->backend != ActiveBackend()) *device = PETSC_FALSE;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* MATMPIAIJFUSED for the templates of aijfused_private.hpp.  Its products run on the backend when the vectors are
   fused and A lives with the active backend; y = A^T x with the explicit transposes of both blocks, built at the
   first use and kept (refreshed when A changes)                                                                 */
struct MPIAIJFusedType {
  using DataType                     = MatMPIFusedData;
  static constexpr const char *base  = MATMPIAIJ;
  static constexpr const char *fused = MATMPIAIJFUSED;

  static constexpr auto OnBackend = fusedksp::OnBackend;
  static constexpr auto Device    = MultDevice;
  static PetscErrorCode FreeContents(MatMPIFusedData *d)
  {
    PetscFunctionBegin;
    PetscCall(MirrorFree(d->backend, &d->diag));
    PetscCall(OffDiagRowsFree(d->backend, &d->offdiag));
    PetscCall(HaloFree(d->backend, &d->halo));
    PetscCall(PetscSFDestroy(&d->sf));
    PetscCall(MirrorFree(d->backend, &d->diag_t));
    PetscCall(MirrorFree(d->backend, &d->offdiag_t));
    PetscCall(d->backend->free_bytes(d->work));
    PetscCall(MatDestroy(&d->diag_block));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  static PetscErrorCode SetFormat(Mat A, MatAIJFusedFormat format)
  {
    MatMPIFusedData *d = Data(A);

    PetscFunctionBegin;
    if (format != d->requested) d->nonzerostate = -1; /* rebuilt in the new format at the next assembly or product */
    d->requested = format;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  /* The mirrored blocks: the values into their existing arrays when the nonzero pattern is the same, else first a
     new structure (the halo pattern follows at the next product).  Collective.                                    */
  static PetscErrorCode AssemblyRefresh(Mat A, PetscObjectState state)
  {
    PetscFunctionBegin;
    PetscCall(RefreshBlocks(A, Data(A), state));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  static void InstallOps(Mat A, MatMPIFusedData *d);
  static void RestoreOps(Mat A, const HostOps &host);
};

/* The diagonal from the mirror of the diagonal block (square matrices with the same row and column layout, whose
   mirror exists: made by the collective operations, so on every rank or none; else PETSc's).  Collective, as the
   mirror may be refreshed. */
PetscErrorCode MatGetDiagonal_MPIAIJFused(Mat A, Vec v)
{
  MatMPIFusedData *d = Data(A);
  PetscBool        device, same;
  PetscScalar     *va;

  PetscFunctionBegin;
  PetscCall(OnBackend(A, {v}, &device));
  PetscCall(PetscLayoutCompare(A->rmap, A->cmap, &same)); /* the same answer on every rank: the refresh below is collective */
  if (!device || !same || d->diag.generation < 0) {
    PetscCall(d->host.getdiagonal(A, v));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(Refresh(A, d));
  {
    const PetscInt *ai, *aj;
    PetscScalar    *aa;
    PetscInt        m, n;
    Mat             Ad;

    PetscCall(MatMPIAIJGetSeqAIJ(A, &Ad, nullptr, nullptr));
    PetscCall(SeqAIJHostCSR(Ad, &m, &n, &ai, &aj, &aa));
    PetscCall(MirrorDiagonal(d->backend, ai, aj, &d->diag));
  }
  PetscCall(VecFusedGetArray(v, PETSC_MEMORY_ACCESS_WRITE, &va));
  PetscCall(d->backend->diag_get(A->rmap->n, d->diag.diagpos, MirrorValues(&d->diag), va));
  PetscCall(VecFusedRestoreArray(v, PETSC_MEMORY_ACCESS_WRITE, &va));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* MATMPIAIJ's submatrix, made fused: some of MATMPIAIJ's paths assemble it from its blocks, whose type
   (MATSEQAIJ) decides the parallel type, and a submatrix is used in products (PCFIELDSPLIT, PCGASM) */
/* MatGetDiagonalBlock() of MATMPIAIJFUSED: a MATSEQAIJFUSED copy of the diagonal block, so that what a PC builds
   on it runs on the backend (PCBJACOBI: the fused MatSolverType's ILU(0)/ICC(0), its vectors lent with
   VecGetLocalVector() without a copy).  The copy is kept with A and follows the block: its values are copied again
   when the block's state changed, and it is made again when the block's nonzero pattern changed.  It costs a
   second copy of the diagonal block (host and backend).                                           */
PetscErrorCode MatGetDiagonalBlock_MPIAIJFused(Mat A, Mat *D)
{
  MatMPIFusedData *d = Data(A);
  Mat              Ad;
  PetscObjectState state;

  PetscFunctionBegin;
  PetscCall(d->host.getdiagonalblock(A, &Ad));
  PetscCall(PetscObjectStateGet((PetscObject)Ad, &state));
  if (d->diag_block && Ad->nonzerostate != d->diag_block_nonzerostate) PetscCall(MatDestroy(&d->diag_block));
  if (!d->diag_block) {
    PetscCall(MatDuplicate(Ad, MAT_COPY_VALUES, &d->diag_block));
    PetscCall(MatConvert(d->diag_block, MATSEQAIJFUSED, MAT_INPLACE_MATRIX, &d->diag_block));
    PetscCall(MatAssemblyBegin(d->diag_block, MAT_FINAL_ASSEMBLY)); /* AIJ's I-node detection, as the block had it */
    PetscCall(MatAssemblyEnd(d->diag_block, MAT_FINAL_ASSEMBLY));
  } else if (state != d->diag_block_state)
    PetscCall(MatCopy(Ad, d->diag_block, SAME_NONZERO_PATTERN));
  d->diag_block_state        = state;
  d->diag_block_nonzerostate = Ad->nonzerostate;
  *D                         = d->diag_block;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MatCreateSubMatrix_MPIAIJFused(Mat A, IS isrow, IS iscol, MatReuse reuse, Mat *B)
{
  PetscBool plain;

  PetscFunctionBegin;
  PetscCall(Data(A)->host.createsubmatrix(A, isrow, iscol, reuse, B));
  PetscCall(PetscObjectTypeCompare((PetscObject)*B, MATMPIAIJ, &plain));
  if (plain) PetscCall(MatAIJFusedToFused<MPIAIJFusedType>(*B));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MatView_MPIAIJFused(Mat A, PetscViewer viewer)
{
  MatMPIFusedData  *d = Data(A);
  PetscBool         ascii;
  PetscViewerFormat format;
  PetscMPIInt       rank;

  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERASCII, &ascii));
  if (ascii) PetscCall(PetscViewerGetFormat(viewer, &format));
  if (ascii && (format == PETSC_VIEWER_ASCII_INFO || format == PETSC_VIEWER_ASCII_INFO_DETAIL)) {
    char backend[PETSC_MAX_PATH_LEN];

    PetscCall(BackendDescription(d->backend, PETSC_FALSE, backend, sizeof(backend)));
    if (A->assembled) PetscCall(Refresh(A, d));
    PetscCall(PetscViewerASCIIPrintf(viewer, "FusedKSP matrix, backend: %s, device format: %s diagonal block, CSR off-diagonal block\n", backend,
                                     !A->assembled                         ? MatAIJFusedFormats[d->requested]
                                     : d->diag.format == MAT_AIJFUSED_SELL ? "SELL-P"
                                                                           : "CSR"));
    if (A->assembled) {
      const Halo &h = d->halo;

      PetscCallMPI(MPI_Comm_rank(PetscObjectComm((PetscObject)A), &rank));
      PetscCall(PetscViewerASCIIPushSynchronized(viewer));
      PetscCall(PetscViewerASCIISynchronizedPrintf(viewer, "  [%d] halo exchange: %" PetscInt_FMT " entries to %d ranks, %" PetscInt_FMT " entries from %d ranks, %s\n", rank, h.nsend, h.nsend_ranks, h.nrecv, h.nrecv_ranks,
                                                   !h.direct                 ? "through host buffers"
                                                   : d->backend->host_memory ? "in place (host memory)"
                                                                             : "CUDA-aware MPI"));
      PetscCall(PetscViewerFlush(viewer));
      PetscCall(PetscViewerASCIIPopSynchronized(viewer));
    }
  }
  PetscCall(d->host.view(A, viewer));
  PetscFunctionReturn(PETSC_SUCCESS);
}

void MPIAIJFusedType::InstallOps(Mat A, MatMPIFusedData *d)
{
  FUSED_MPIAIJ_OPS(FUSED_INSTALL_OP)
}

void MPIAIJFusedType::RestoreOps(Mat A, const HostOps &host)
{
  FUSED_MPIAIJ_OPS(FUSED_RESTORE_OP)
}

} // namespace

PetscErrorCode MatIsMPIAIJFused(Mat A, PetscBool *fused)
{
  PetscFunctionBegin;
  *fused = (MatAIJFusedIsType<MPIAIJFusedType>(A) && Data(A)->backend == ActiveBackend()) ? PETSC_TRUE : PETSC_FALSE;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MatMPIAIJFusedHostProductSetFromOptions(Mat A, PetscErrorCode (**f)(Mat))
{
  PetscFunctionBegin;
  *f = MatAIJFusedIsType<MPIAIJFusedType>(A) ? Data(A)->host.productsetfromoptions : nullptr;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
  MatMPIAIJFusedMultDots - out = wl .* (A (wr .* in)) on the local rows of a MATMPIAIJFUSED, fused
  with ndots partial (local) dot products of out (Backend::spmv_dots semantics); the arrays are in
  the backend's memory.  The halo exchange overlaps the diagonal-block SpMV (see the top of this
  file).  Collective.
*/
PetscErrorCode MatMPIAIJFusedMultDots(Mat A, const PetscScalar *wl, const PetscScalar *wr, const PetscScalar *in, PetscScalar *out, int ndots, const DotSpec *specs, PetscScalar *dots)
{
  MatMPIFusedData *d = Data(A);
  const Backend   *be;

  PetscFunctionBegin;
  PetscCheck(MatAIJFusedIsType<MPIAIJFusedType>(A), PetscObjectComm((PetscObject)A), PETSC_ERR_ARG_WRONG, "Matrix of type %s is not a MATMPIAIJFUSED", ((PetscObject)A)->type_name);
  be = d->backend;
  PetscCall(Refresh(A, d));
  PetscCall(ParallelProductDots(be, {A, &d->diag, &d->offdiag, &d->halo}, wl, wr, in, out, ndots, specs, dots));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
  MatMPIAIJFusedMultUpdate - see aijfused.hpp: two kernels, the diagonal block's overlapped with the halo exchange
*/
PetscErrorCode MatMPIAIJFusedMultUpdate(Mat A, const RowUpdate *f, const PetscScalar *in, PetscScalar *out)
{
  MatMPIFusedData *d = Data(A);
  const Backend   *be;

  PetscFunctionBegin;
  PetscCheck(MatAIJFusedIsType<MPIAIJFusedType>(A), PetscObjectComm((PetscObject)A), PETSC_ERR_ARG_WRONG, "Matrix of type %s is not a MATMPIAIJFUSED", ((PetscObject)A)->type_name);
  be = d->backend;
  PetscCall(Refresh(A, d));
  if (!d->work) PetscCall(be->malloc_bytes(sizeof(PetscScalar) * PetscMax(PetscMax(A->rmap->n, A->cmap->n), 1), (void **)&d->work));
  PetscCall(ParallelProductUpdate(be, {A, &d->diag, &d->offdiag, &d->halo}, d->work, f, in, out));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MatMPIAIJFusedGetChunkView(Mat A, const CSRView **csr, const SELLView **sell, PetscInt64 *nnz, ChunkParallel *par, PetscInt64 *generation)
{
  MatMPIFusedData *d = Data(A);
  Halo            *h;

  PetscFunctionBegin;
  PetscCheck(MatAIJFusedIsType<MPIAIJFusedType>(A), PetscObjectComm((PetscObject)A), PETSC_ERR_ARG_WRONG, "Matrix of type %s is not a MATMPIAIJFUSED", ((PetscObject)A)->type_name);
  PetscCall(Refresh(A, d));
  h                      = &d->halo;
  *csr                   = d->diag.format == MAT_AIJFUSED_CSR ? &d->diag.csr : nullptr;
  *sell                  = d->diag.format == MAT_AIJFUSED_SELL ? &d->diag.sell : nullptr;
  *nnz                   = MirrorEntries(&d->diag);
  par->offdiag           = &d->offdiag.csr;
  par->offdiag_rows      = d->offdiag.rows;
  par->send_idx          = h->send_idx;
  par->recv_idx          = h->recv_idx;
  par->halo              = h->halo;
  par->plan.nsend        = h->nsend;
  par->plan.nrecv        = h->nrecv;
  par->plan.send_buf     = h->send_buf;
  par->plan.recv_buf     = h->recv_idx ? h->recv_buf : h->halo;
  par->plan.nsend_ranks  = h->nsend_ranks;
  par->plan.nrecv_ranks  = h->nrecv_ranks;
  par->plan.send_ranks   = h->send_ranks.data();
  par->plan.recv_ranks   = h->recv_ranks.data();
  par->plan.send_offsets = h->send_offsets.data();
  par->plan.recv_offsets = h->recv_offsets.data();
  *generation            = d->diag.generation;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MatMPIAIJFusedGetLocalProduct(Mat A, const Backend **be, const Mirror **diag, const OffDiagRows **offdiag, PetscBool *direct)
{
  MatMPIFusedData *d = Data(A);

  PetscFunctionBegin;
  PetscCheck(MatAIJFusedIsType<MPIAIJFusedType>(A), PetscObjectComm((PetscObject)A), PETSC_ERR_ARG_WRONG, "Matrix of type %s is not a MATMPIAIJFUSED", ((PetscObject)A)->type_name);
  PetscCall(Refresh(A, d));
  *be      = d->backend;
  *diag    = &d->diag;
  *offdiag = &d->offdiag;
  *direct  = d->direct;
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace fusedksp

/*MC
   MATMPIAIJFUSED - "mpiaijfused" - The parallel counterpart of `MATSEQAIJFUSED`, built on `MATMPIAIJ`;
   `MatCreateVecs()` returns `VECMPIFUSED` vectors.  The diagonal and off-diagonal blocks live on the
   active FusedKSP backend; the product packs the halo on the backend, exchanges it with MPI point-to-point
   messages while the diagonal block's SpMV runs, unpacks it on the backend and finishes with the
   off-diagonal block's SpMV fused with the solvers' partial dot products.

   Options Database Keys:
+  -mat_type mpiaijfused - sets the matrix type in `MatSetFromOptions()`
-  -fused_cuda_aware_mpi <0,1> - 1: MPI reads and writes device buffers directly (CUDA-aware MPI); 0: the halo
   goes through pinned host buffers. Default: 1 when Open MPI reports CUDA support (`MPIX_Query_cuda_support()`),
   else 0 (MPICH and others: set 1 only for an MPI built with CUDA support; 1 is an error when the MPI reports
   none). The host backend exchanges its (host) buffers in place unless 0 is given. Read at the first assembly.

   Level: beginner

   Note:
   `-mat_view ::ascii_info` shows the halo exchange of each rank. `MatMult()`, `MatMultAdd()`, `MatMultTranspose()`,
   `MatMultTransposeAdd()` and `MatGetDiagonal()` run on the device when the vectors are fused; the transposed
   products use explicit transposes of both blocks (built at the first use, kept, refreshed when the matrix
   changes: the memory of a second copy) and send the off-diagonal block's part back to the owning ranks in
   the product's exchange reversed.  Every other operation is `MATMPIAIJ`'s (host).

.seealso: `MATAIJFUSED`, `MATSEQAIJFUSED`, `VECMPIFUSED`
M*/
PETSC_INTERN PetscErrorCode MatCreate_MPIAIJFused(Mat A)
{
  PetscFunctionBegin;
  PetscCall(fusedksp::MatCreate_AIJFusedType<fusedksp::MPIAIJFusedType>(A));
  PetscFunctionReturn(PETSC_SUCCESS);
}
