/*
   VECSEQFUSED / VECMPIFUSED: PETSc's VECSEQ / VECMPI (every host operation stays PETSc's) plus a mirror of the local
   array in the backend's memory and PETSc's offload mask.

   The fused operations (src/ops) work on the backend array (VecFusedGetArray).  Every other operation runs PETSc's
   host implementation, which reaches the array through VecGetArray*(); those accessors are overridden here to copy
   the backend data to the host first when it is newer, so every PETSc Vec operation is correct on a fused vector.

   Backends whose memory is host memory (the host backend, Kokkos on CPUs): the "mirror" is PETSc's host array itself,
   allocated and zeroed at creation as for VECSEQ / VECMPI; no copies happen and the mask stays PETSC_OFFLOAD_CPU.

   Other backends (CUDA, the host backend with -fused_debug_mirror): both arrays are allocated on first use, as PETSc's
   CUDA vectors do, so that work vectors used only by the backend (a Krylov basis) never cost a host allocation.  The
   offload mask says which copies hold the values:
     PETSC_OFFLOAD_UNALLOCATED  a new vector: no copy holds values, the vector is zero (each array may or may not be
                                allocated yet).  The first access of a side allocates its array and, unless the access
                                only writes, zeroes it there (PetscArrayzero() on the host, the backend's BLAS set() on
                                the backend): no copy between host and backend.
     PETSC_OFFLOAD_CPU          the host array (allocated);
     PETSC_OFFLOAD_GPU          the backend array (allocated);
     PETSC_OFFLOAD_BOTH         both.
   Every host access allocates the host array first (EnsureHostArray()) and, unless it only writes, makes it hold the
   values (SyncToHost()): VecGetArray(), VecGetArrayRead(), VecGetArrayWrite() (so everything PETSc does through them:
   VecSetValues() and the assembly's stash, VecGetValues(), VecLoad(), VecScatter / PetscSF, subvectors, the host
   operations), VecPlaceArray() / VecResetArray(), VecView(), VecGetLocalVector*() (into a plain vector: v's host array;
   into a fused one, which shows v's arrays: when that vector's host side is first used).  VecReplaceArray() gives the
   vector a host array.
   PETSc's own code reaches a VECSEQ / VECMPI array directly, not through those operations, only in the type's create
   (VecSetTypeWithoutHostArray()), destroy (frees array_allocated, NULL or ours), duplicate (VecDuplicate_Fused()) and
   place/replace/reset routines (called by the fused ones), and in VecGetArray*() without a type's operation.
*/
#include "vec/vecfused.hpp"
#include <petsc/private/vecimpl.h>
#include "sys/objectdata.hpp"

namespace fusedksp
{
namespace
{

struct VecFusedData {
  const Backend *backend                                        = nullptr;
  PetscScalar   *barray                                         = nullptr; /* backend copy of the local array (NULL until first use) */
  PetscInt       n                                              = 0;
  PetscBool      mpi                                            = PETSC_FALSE; /* VECMPIFUSED: its host array is freed as VECMPI's */
  PetscErrorCode (*host_destroy)(Vec)                           = nullptr;
  PetscErrorCode (*host_placearray)(Vec, const PetscScalar *)   = nullptr;
  PetscErrorCode (*host_replacearray)(Vec, const PetscScalar *) = nullptr;
  PetscErrorCode (*host_resetarray)(Vec)                        = nullptr;
  PetscErrorCode (*host_view)(Vec, PetscViewer)                 = nullptr;
  Vec              lent_by                                      = nullptr;                   /* VecGetLocalVector*(): the vector whose arrays this one shows */
  PetscScalar     *own_barray                                   = nullptr;                   /* ... and this one's own backend array meanwhile */
  PetscOffloadMask own_mask                                     = PETSC_OFFLOAD_UNALLOCATED; /* ... and its own offload mask */
};

ObjectData<VecFusedData> registry;

inline VecFusedData *Data(Vec v)
{
  return registry.Get(v);
}

/* The members of VECSEQ's and VECMPI's data that both start with (vecimpl.h) */
struct VecHeader {
  VECHEADER
};

inline VecHeader *Header(Vec v)
{
  return static_cast<VecHeader *>(v->data);
}

inline PetscScalar *HostArray(Vec v)
{
  return Header(v)->array;
}

inline bool Mirrored(Vec v)
{
  return !Data(v)->backend->host_memory;
}

/* Types v as VECSEQ or VECMPI without the host array, which their create routines allocate and zero: the routine
   runs while v has an empty layout of the same communicator and block size, then v's own layout comes back.  The
   VECSEQ / VECMPI data keep no sizes (their operations read v->map), and the norms cached for the empty vector (0)
   are those of v's zero values.  EnsureHostArray() allocates the array when the host needs it.                  */
PetscErrorCode VecSetTypeWithoutHostArray(Vec v, VecType type)
{
  PetscLayout    map = v->map, empty;
  PetscInt      *range;
  PetscMPIInt    size;
  PetscErrorCode ierr;

  PetscFunctionBegin;
  PetscCall(PetscLayoutSetUp(map));
  PetscCallMPI(MPI_Comm_size(PetscObjectComm((PetscObject)v), &size));
  PetscCall(PetscCalloc1(size + 1, &range));
  PetscCall(PetscLayoutCreateFromRanges(PetscObjectComm((PetscObject)v), range, PETSC_OWN_POINTER, map->bs, &empty));
  v->map = empty;
  ierr   = VecSetType(v, type);
  v->map = map;
  PetscCall(PetscLayoutDestroy(&empty));
  PetscCall(ierr);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Allocates the host array of a vector made by VecSetTypeWithoutHostArray() if it has none yet (contents undefined;
   the offload mask is the caller's).  The array is VECSEQ's or VECMPI's own (array_allocated), freed by its destroy
   and by VecReplaceArray().  A local vector showing another vector's arrays (LendLocalVector()) gets that vector's. */
PetscErrorCode EnsureHostArray(Vec v)
{
  VecFusedData *d = Data(v);
  VecHeader    *h = Header(v);

  PetscFunctionBegin;
  if (!Mirrored(v) || h->array || !d->n) PetscFunctionReturn(PETSC_SUCCESS);
  if (d->lent_by) {
    PetscCall(EnsureHostArray(d->lent_by));
    h->array = HostArray(d->lent_by);
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCheck(!h->array_allocated, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONGSTATE, "The vector shows no host array but owns one: NULL given to VecPlaceArray(), or VecResetArray() without VecPlaceArray()");
  if (d->mpi)
    PetscCall(PetscMalloc1(d->n, &h->array_allocated));
  else
    PetscCall(PetscShmgetAllocateArray(d->n, sizeof(PetscScalar), (void **)&h->array_allocated));
  h->array = h->array_allocated;
  HostArrayAllocated();
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Makes the host array hold the values: copies the backend array there if the backend holds the only valid copy;
   zeroes it if no copy holds values yet (a new vector) */
PetscErrorCode SyncToHost(Vec v)
{
  VecFusedData *d = Data(v);

  PetscFunctionBegin;
  if (!Mirrored(v)) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(EnsureHostArray(v));
  if (v->offloadmask == PETSC_OFFLOAD_GPU) {
    PetscCall(PetscLogEventBegin(events.to_host, v, 0, 0, 0));
    PetscCall(d->backend->copy_to_host(HostArray(v), d->barray, (size_t)d->n * sizeof(PetscScalar)));
    PetscCall(PetscLogEventEnd(events.to_host, v, 0, 0, 0));
    PetscCall(PetscLogGpuToCpu((PetscLogDouble)d->n * sizeof(PetscScalar)));
    v->offloadmask = PETSC_OFFLOAD_BOTH;
  } else if (v->offloadmask == PETSC_OFFLOAD_UNALLOCATED) {
    PetscCall(PetscArrayzero(HostArray(v), d->n));
    v->offloadmask = PETSC_OFFLOAD_CPU;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Allocates the backend array if needed; with copy, makes it hold the values: copies the host array there if the
   host holds the only valid copy, zeroes it if no copy holds values yet (a new vector) */
PetscErrorCode SyncToBackend(Vec v, PetscBool copy)
{
  VecFusedData *d = Data(v);

  PetscFunctionBegin;
  if (!d->barray && d->n) PetscCall(d->backend->malloc_bytes((size_t)d->n * sizeof(PetscScalar), (void **)&d->barray));
  if (!copy) PetscFunctionReturn(PETSC_SUCCESS);
  if (v->offloadmask == PETSC_OFFLOAD_CPU) {
    PetscCall(PetscLogEventBegin(events.to_device, v, 0, 0, 0));
    PetscCall(d->backend->copy_to_backend(d->barray, HostArray(v), (size_t)d->n * sizeof(PetscScalar)));
    PetscCall(PetscLogEventEnd(events.to_device, v, 0, 0, 0));
    PetscCall(PetscLogCpuToGpu((PetscLogDouble)d->n * sizeof(PetscScalar)));
    v->offloadmask = PETSC_OFFLOAD_BOTH;
  } else if (v->offloadmask == PETSC_OFFLOAD_UNALLOCATED) {
    PetscCall(BackendBlas(d->backend)->set(d->n, 0.0, d->barray));
    v->offloadmask = PETSC_OFFLOAD_GPU;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* A writable host array makes the host copy the newer one at once (as PETSc's CUDA vectors do), not at the restore:
   code that restores another vector than it got (PETSc 3.26's PCApply_Redistribute()) still leaves v right */
PetscErrorCode VecGetArray_Fused(Vec v, PetscScalar **a)
{
  PetscFunctionBegin;
  PetscCall(SyncToHost(v));
  *a             = HostArray(v);
  v->offloadmask = PETSC_OFFLOAD_CPU;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode VecRestoreArray_Fused(Vec v, PetscScalar **a)
{
  PetscFunctionBegin;
  v->offloadmask = PETSC_OFFLOAD_CPU;
  if (a) *a = nullptr;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode VecGetArrayRead_Fused(Vec v, const PetscScalar **a)
{
  PetscFunctionBegin;
  PetscCall(SyncToHost(v));
  *a = HostArray(v);
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode VecRestoreArrayRead_Fused(Vec, const PetscScalar **a)
{
  PetscFunctionBegin;
  if (a) *a = nullptr;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode VecGetArrayWrite_Fused(Vec v, PetscScalar **a)
{
  PetscFunctionBegin;
  PetscCall(EnsureHostArray(v));
  *a             = HostArray(v);
  v->offloadmask = PETSC_OFFLOAD_CPU;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The host array set aside keeps v's values (zeros for a new vector), which VecResetArray() brings back */
PetscErrorCode VecPlaceArray_Fused(Vec v, const PetscScalar *a)
{
  PetscFunctionBegin;
  PetscCall(SyncToHost(v));
  PetscCall(Data(v)->host_placearray(v, a));
  v->offloadmask = PETSC_OFFLOAD_CPU;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode VecReplaceArray_Fused(Vec v, const PetscScalar *a)
{
  PetscFunctionBegin;
  PetscCall(Data(v)->host_replacearray(v, a));
  v->offloadmask = PETSC_OFFLOAD_CPU;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode VecResetArray_Fused(Vec v)
{
  PetscFunctionBegin;
  PetscCall(SyncToHost(v)); /* the placed array receives the current values */
  PetscCall(Data(v)->host_resetarray(v));
  v->offloadmask = PETSC_OFFLOAD_CPU;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* VecGetLocalVector() and VecGetLocalVectorRead() of a fused vector v into w.  A fused w of the same
   backend shows v's arrays, host and backend, with v's offload mask: a sub-solve on w (PCBJACOBI's block,
   whose matrix is MATSEQAIJFUSED) runs where v's data is, with no copy.  Any other w gets v's host array,
   as PETSc does for every vector type without these operations.                                     */
template <PetscBool write> PetscErrorCode LendLocalVector(Vec v, Vec w)
{
  PetscBool wfused;

  PetscFunctionBegin;
  PetscCall(VecIsFused(w, &wfused));
  if (wfused && Mirrored(v) && Mirrored(w) && Data(v)->backend == Data(w)->backend) {
    VecFusedData *dv = Data(v), *dw = Data(w);

    PetscCheck(!dw->lent_by, PETSC_COMM_SELF, PETSC_ERR_ORDER, "The local vector already shows another vector's arrays: call VecRestoreLocalVector() first");
    PetscCall(SyncToBackend(v, PETSC_FALSE));        /* v's backend array exists (w may copy its host data there) */
    PetscCall(dw->host_placearray(w, HostArray(v))); /* NULL if v has none yet: EnsureHostArray() of w allocates v's */
    dw->own_barray = dw->barray;
    dw->own_mask   = w->offloadmask;
    dw->barray     = dv->barray;
    dw->lent_by    = v;
    w->offloadmask = v->offloadmask;
  } else {
    PetscScalar *a;

    if (write)
      PetscCall(VecGetArray(v, &a));
    else
      PetscCall(VecGetArrayRead(v, (const PetscScalar **)&a));
    PetscCall(VecPlaceArray(w, a));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The end of LendLocalVector(): v takes w's offload mask (after a read, only when w made both copies valid), w gets its
   own arrays and mask back: VecRestoreLocalVector() and VecRestoreLocalVectorRead() */
template <PetscBool write> PetscErrorCode ReturnLocalVector(Vec v, Vec w)
{
  PetscBool wfused;

  PetscFunctionBegin;
  PetscCall(VecIsFused(w, &wfused));
  if (wfused && Data(w)->lent_by == v) {
    VecFusedData *dw = Data(w);

    if (write || w->offloadmask == PETSC_OFFLOAD_BOTH) v->offloadmask = w->offloadmask;
    dw->barray     = dw->own_barray;
    dw->own_barray = nullptr;
    dw->lent_by    = nullptr;
    PetscCall(dw->host_resetarray(w));
    w->offloadmask = dw->own_mask;
  } else if (write) { /* as PETSc does it */
    PetscScalar *a;

    PetscCall(VecGetArray(w, &a));
    PetscCall(VecRestoreArray(v, &a));
    PetscCall(VecResetArray(w));
  } else {
    const PetscScalar *a;

    PetscCall(VecGetArrayRead(w, &a));
    PetscCall(VecRestoreArrayRead(v, &a));
    PetscCall(VecResetArray(w));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* VecGetSubVector() and VecRestoreSubVector() of a fused vector X are PETSc's generic ones (a view of a contiguous
   part on X's host array, else a scattered copy), with one addition: a view changed since it was taken wrote into X's
   host array (directly, or by VecResetArray() copying its backend data there), so X's backend copy is stale after the
   restore.  PETSc's generic restore leaves X's offload mask as it was, and the next backend operation on X would
   read the old values.                                                                                          */
PetscInt subvector_taken_id = -1; /* composed on the subvector: invalid once its state changes */

PetscErrorCode VecGetSubVector_Fused(Vec X, IS is, Vec *Y)
{
  PetscErrorCode ierr;

  PetscFunctionBegin;
  X->ops->getsubvector = nullptr; /* PETSc's generic implementation */
  ierr                 = VecGetSubVector(X, is, Y);
  X->ops->getsubvector = VecGetSubVector_Fused;
  PetscCall(ierr);
  if (subvector_taken_id < 0) PetscCall(PetscObjectComposedDataRegister(&subvector_taken_id));
  PetscCall(PetscObjectComposedDataSetInt((PetscObject)*Y, subvector_taken_id, 1));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode VecRestoreSubVector_Fused(Vec X, IS is, Vec *Y)
{
  PetscInt       taken     = 0;
  PetscBool      unchanged = PETSC_FALSE;
  PetscObject    scatter;
  PetscErrorCode ierr;

  PetscFunctionBegin;
  PetscCall(PetscObjectComposedDataGetInt((PetscObject)*Y, subvector_taken_id, taken, unchanged));
  PetscCall(PetscObjectQuery((PetscObject)*Y, "VecGetSubVector_Scatter", &scatter));
  X->ops->restoresubvector = nullptr;
  ierr                     = VecRestoreSubVector(X, is, Y);
  X->ops->restoresubvector = VecRestoreSubVector_Fused;
  PetscCall(ierr);
  if (!(unchanged && taken == 1) && !scatter && Mirrored(X)) X->offloadmask = PETSC_OFFLOAD_CPU; /* a scatter writes through VecGetArray(), which marks it */
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode VecDuplicate_Fused(Vec v, Vec *w)
{
  PetscFunctionBegin;
  PetscCall(VecCreate(PetscObjectComm((PetscObject)v), w));
  PetscCall(VecSetLayout(*w, v->map));
  PetscCall(VecSetType(*w, ((PetscObject)v)->type_name));
  PetscCall(PetscObjectListDuplicate(((PetscObject)v)->olist, &((PetscObject)*w)->olist));
  PetscCall(PetscFunctionListDuplicate(((PetscObject)v)->qlist, &((PetscObject)*w)->qlist));
  (*w)->ops[0] = v->ops[0]; /* as VECSEQ/VECMPI do: operations set on v (VecSetOperation(), a DM's view) carry over */
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Groups of vectors are separate fused vectors (PETSc's VECSEQ groups share one allocation,
   which a fused vector with a backend mirror cannot) */
PetscErrorCode VecDuplicateVecs_Fused(Vec v, PetscInt m, Vec *V[])
{
  PetscFunctionBegin;
  PetscCall(PetscMalloc1(m, V));
  for (PetscInt i = 0; i < m; ++i) PetscCall(VecDuplicate(v, &(*V)[i]));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode VecDestroyVecs_Fused(PetscInt m, Vec V[])
{
  PetscFunctionBegin;
  for (PetscInt i = 0; i < m; ++i) PetscCall(VecDestroy(&V[i]));
  PetscCall(PetscFree(V));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode VecDestroy_Fused(Vec v)
{
  VecFusedData *d = Data(v);

  PetscFunctionBegin;
  PetscCheck(!d->lent_by, PETSC_COMM_SELF, PETSC_ERR_ORDER, "Destroying a local vector that still shows another vector's arrays: call VecRestoreLocalVector() first");
  if (d->barray && Mirrored(v)) PetscCall(d->backend->free_bytes(d->barray));
  PetscErrorCode (*host_destroy)(Vec) = d->host_destroy;
  delete registry.Take(v);
  PetscCall(host_destroy(v));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode VecView_Fused(Vec v, PetscViewer viewer)
{
  PetscBool         ascii;
  PetscViewerFormat format;
  char              backend[PETSC_MAX_PATH_LEN];

  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERASCII, &ascii));
  if (ascii) {
    PetscCall(PetscViewerGetFormat(viewer, &format));
    if (format == PETSC_VIEWER_ASCII_INFO || format == PETSC_VIEWER_ASCII_INFO_DETAIL) {
      PetscCall(BackendDescription(Data(v)->backend, PETSC_TRUE, backend, sizeof(backend)));
      PetscCall(PetscViewerASCIIPrintf(viewer, "FusedKSP vector, backend: %s\n", backend));
    }
  }
  PetscCall(SyncToHost(v));
  PetscCall(Data(v)->host_view(v, viewer));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Types a new vector as VECSEQ or VECMPI (mpi) and turns it into its fused counterpart `name`; on a backend whose
   memory is not host memory, without a host array (VecSetTypeWithoutHostArray()) */
PetscErrorCode VecCreateFused(Vec v, PetscBool mpi, const char *name)
{
  VecFusedData  *d = nullptr;
  PetscErrorCode ierr;

  PetscFunctionBegin;
  if (ActiveBackend()->host_memory)
    PetscCall(VecSetType(v, mpi ? VECMPI : VECSEQ));
  else
    PetscCall(VecSetTypeWithoutHostArray(v, mpi ? VECMPI : VECSEQ));
  FusedKSPCallCXX(d = new VecFusedData);
  ierr = registry.Set(v, d);
  if (ierr) {
    delete d;
    PetscCall(ierr);
  }
  d->backend                     = ActiveBackend();
  d->n                           = v->map->n;
  d->mpi                         = mpi;
  d->host_destroy                = v->ops->destroy;
  d->host_placearray             = v->ops->placearray;
  d->host_replacearray           = v->ops->replacearray;
  d->host_resetarray             = v->ops->resetarray;
  d->host_view                   = v->ops->view;
  v->ops->view                   = VecView_Fused;
  v->offloadmask                 = Mirrored(v) ? PETSC_OFFLOAD_UNALLOCATED : PETSC_OFFLOAD_CPU;
  v->ops->destroy                = VecDestroy_Fused;
  v->ops->duplicate              = VecDuplicate_Fused;
  v->ops->duplicatevecs          = VecDuplicateVecs_Fused;
  v->ops->destroyvecs            = VecDestroyVecs_Fused;
  v->ops->getarray               = VecGetArray_Fused;
  v->ops->restorearray           = VecRestoreArray_Fused;
  v->ops->getarrayread           = VecGetArrayRead_Fused;
  v->ops->restorearrayread       = VecRestoreArrayRead_Fused;
  v->ops->getarraywrite          = VecGetArrayWrite_Fused;
  v->ops->restorearraywrite      = VecRestoreArray_Fused;
  v->ops->placearray             = VecPlaceArray_Fused;
  v->ops->replacearray           = VecReplaceArray_Fused;
  v->ops->resetarray             = VecResetArray_Fused;
  v->ops->getlocalvector         = LendLocalVector<PETSC_TRUE>;
  v->ops->restorelocalvector     = ReturnLocalVector<PETSC_TRUE>;
  v->ops->getlocalvectorread     = LendLocalVector<PETSC_FALSE>;
  v->ops->restorelocalvectorread = ReturnLocalVector<PETSC_FALSE>;
  v->ops->getsubvector           = VecGetSubVector_Fused;
  v->ops->restoresubvector       = VecRestoreSubVector_Fused;
  PetscCall(VecFusedInstallDeviceOps(v));
  PetscCall(PetscObjectChangeTypeName((PetscObject)v, name));
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace

PetscErrorCode VecIsFused(Vec v, PetscBool *fused)
{
  PetscFunctionBegin;
  *fused = PETSC_FALSE;
  if (v && Data(v) && (v->ops->destroy == VecDestroy_Fused)) *fused = (Data(v)->backend == ActiveBackend()) ? PETSC_TRUE : PETSC_FALSE;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode VecFusedGetArray(Vec v, PetscMemoryAccessMode mode, PetscScalar **a)
{
  PetscFunctionBegin;
  if (!Mirrored(v)) {
    *a = HostArray(v);
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(SyncToBackend(v, mode == PETSC_MEMORY_ACCESS_WRITE ? PETSC_FALSE : PETSC_TRUE));
  *a = Data(v)->barray;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode VecFusedRestoreArray(Vec v, PetscMemoryAccessMode mode, PetscScalar **a)
{
  PetscFunctionBegin;
  if (mode != PETSC_MEMORY_ACCESS_READ) {
    v->offloadmask = Mirrored(v) ? PETSC_OFFLOAD_GPU : PETSC_OFFLOAD_CPU;
    PetscCall(PetscObjectStateIncrease((PetscObject)v));
  }
  *a = nullptr;
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace fusedksp

/*MC
   VECSEQFUSED - "seqfused" - A sequential vector whose fused operations (the kernels of the
   FusedKSP solvers) run on the active backend (a CUDA device when one is usable, else the host).
   All other operations are those of `VECSEQ`; data moves between host and device when needed.

   Options Database Key:
.  -vec_type seqfused - sets the vector type in `VecSetFromOptions()`

   Level: beginner

.seealso: `VECFUSED`, `VECMPIFUSED`, `MATAIJFUSED`, `KSPFUSEDCG`
M*/
PETSC_INTERN PetscErrorCode VecCreate_SeqFused(Vec v)
{
  PetscFunctionBegin;
  PetscCall(fusedksp::VecCreateFused(v, PETSC_FALSE, VECSEQFUSED));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*MC
   VECMPIFUSED - "mpifused" - The parallel counterpart of `VECSEQFUSED`, built on `VECMPI`.

   Level: beginner

.seealso: `VECFUSED`, `VECSEQFUSED`
M*/
PETSC_INTERN PetscErrorCode VecCreate_MPIFused(Vec v)
{
  PetscFunctionBegin;
  PetscCall(fusedksp::VecCreateFused(v, PETSC_TRUE, VECMPIFUSED));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*MC
   VECFUSED - "fused" - `VECSEQFUSED` on one process, `VECMPIFUSED` on several.

   Options Database Keys:
+  -vec_type fused - sets the vector type in `VecSetFromOptions()`
-  -dm_vec_type fused - vectors created by a `DM`

   Level: beginner

.seealso: `VECSEQFUSED`, `VECMPIFUSED`, `MATAIJFUSED`
M*/
PETSC_INTERN PetscErrorCode VecCreate_Fused(Vec v)
{
  PetscFunctionBegin;
  PetscCall(fusedksp::FusedSetTypeForComm(v, VECSEQFUSED, VECMPIFUSED, VecSetType));
  PetscFunctionReturn(PETSC_SUCCESS);
}
