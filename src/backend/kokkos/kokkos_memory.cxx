/* Kokkos backend: initialization, memory, reduce targets and the Backend table */
#include "backend/kokkos/kokkos_reduce.hpp"
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

namespace fusedksp
{
namespace kokkos
{

BackendCounters counters;
ReduceTarget    target;

/* Where the host reads the partial sums: the backend's memory itself on the host; pinned host memory with a
   device (the copy of each reduction goes straight to it, without a staging copy) */
#if defined(KOKKOS_HAS_SHARED_HOST_PINNED_SPACE)
using PartialsHostSpace = std::conditional_t<host_memory, MemSpace, Kokkos::SharedHostPinnedSpace>;
#else
using PartialsHostSpace = Kokkos::HostSpace;
#endif

/* A reduction whose second stage waits for batch_end(): its partials from `offset` in the arena */
struct PendingFinish {
  size_t   offset;
  PetscInt nchunks;
  Finish   finish;
};

/* The buffers kept between calls; released before Kokkos::finalize() */
struct Buffers {
  Kokkos::View<PetscScalar *, MemSpace>          partials;
  Kokkos::View<PetscScalar *, PartialsHostSpace> partials_host;
  Kokkos::View<PetscScalar *, MemSpace>          arena; /* the partials of the deferred reductions */
  Kokkos::View<PetscScalar *, PartialsHostSpace> arena_host;
  std::vector<PendingFinish>                     pending;  /* their second stages, in call order */
  Kokkos::View<char *, MemSpace>                 pointers; /* an array of pointers, as bytes */
  Kokkos::View<PetscScalar *, MemSpace>          coefficients;
  Kokkos::View<char *, PartialsHostSpace>        staging; /* the ring of StageArgs() */
  size_t                                         staged = 0;
};
static Buffers  *buffers         = nullptr;
static PetscBool finalize_kokkos = PETSC_FALSE; /* this library initialized Kokkos */
static PetscInt  threads_in_use  = 0;

/* The open batches, innermost last: the partials of the reductions deferred in them lie one after the other in
   arena[0, arena_used), each batch's after those of the batches around it (from its frame's start), their second
   stages in pending[] (each batch's from its frame's `pending`) */
struct BatchFrame {
  size_t start;   /* arena_used when the batch began  */
  size_t pending; /* pending.size() when it began     */
};
constexpr int     MAX_BATCHES = 64; /* nested solves (see OpsBatchBegin) */
static BatchFrame batch_frames[MAX_BATCHES];
static int        nbatches    = 0;
static bool       batch_defer = false;
static size_t     arena_used  = 0;

/* Host memory: PetscMalloc() (as the host backend, so PETSc's host arrays and the backend's are the
   same); device memory: Kokkos::kokkos_malloc().  A failure names the bytes requested. */
static PetscErrorCode MallocBytes(size_t bytes, void **ptr)
{
  PetscFunctionBegin;
  *ptr = nullptr;
  PetscCheck(!AllocationFails(), PETSC_COMM_SELF, PETSC_ERR_MEM, "Kokkos backend: allocation of %zu bytes failed (-fused_debug_fail_alloc)", bytes);
  if constexpr (host_memory)
    PetscCall(PetscMalloc(bytes, ptr));
  else if (bytes) { /* no bytes: NULL, as PetscMalloc() and the cuda backend give */
    try {
      *ptr = Kokkos::kokkos_malloc<MemSpace>("fusedksp", bytes);
    } catch (const std::exception &e) {
      SETERRQ(PETSC_COMM_SELF, PETSC_ERR_MEM, "Kokkos backend: allocation of %zu bytes in %s failed: %s", bytes, MemSpace::name(), e.what());
    }
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode FreeBytes(void *ptr)
{
  PetscFunctionBegin;
  if constexpr (host_memory)
    PetscCall(PetscFree(ptr));
  else if (ptr)
    Kokkos::kokkos_free<MemSpace>(ptr);
  PetscFunctionReturn(PETSC_SUCCESS);
}

using Bytes      = Kokkos::View<char *, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
using HostBytes  = Kokkos::View<char *, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
using CBytes     = Kokkos::View<const char *, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
using CHostBytes = Kokkos::View<const char *, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

/* A copy that completes before it returns: with a device, ordered after the kernels queued so far on the
   execution space's stream and waited for there (no fence of the whole device) */
template <class Dst, class Src> static void CopyFenced(const Dst &dst, const Src &src)
{
  if constexpr (host_memory)
    Kokkos::deep_copy(dst, src);
  else {
    Kokkos::deep_copy(ExecSpace(), dst, src);
    ExecSpace().fence("fusedksp copy");
  }
}

/* Arguments of a kernel (pointer and coefficient arrays) to dst in the backend's memory, in order with the kernels
   queued on the execution space's stream, without waiting for them: through the next room of a ring in pinned
   host memory (a copy from pageable memory may wait for the stream), the execution space waited for once each
   time the ring wraps around (then every earlier copy out of it has run).  Each call's dst must be free of the
   kernels queued before it, which the stream's order gives for one buffer reused by successive kernels.      */
static PetscErrorCode StageArgs(void *dst, const void *src, size_t bytes)
{
  constexpr size_t ALIGN = 64;
  const size_t     RING = (size_t)tuning.kokkos_staging_bytes / ALIGN * ALIGN, room = (bytes + ALIGN - 1) / ALIGN * ALIGN;

  PetscFunctionBegin;
  if constexpr (host_memory || std::is_same_v<PartialsHostSpace, Kokkos::HostSpace>) {
    PetscCall(CopyArgsToBackend(dst, src, bytes));
  } else if (room > RING) { /* larger than the ring: a copy that waits */
    PetscCall(CopyArgsToBackend(dst, src, bytes));
  } else if (bytes) {
    if (buffers->staging.extent(0) != RING) {
      ExecSpace().fence("fusedksp staging resized"); /* copies out of the old ring may be queued */
      buffers->staging = Kokkos::View<char *, PartialsHostSpace>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "fusedksp staging"), RING);
      buffers->staged  = 0;
    }
    if (buffers->staged + room > RING) {
      ExecSpace().fence("fusedksp staging wraps");
      buffers->staged = 0;
    }
    char *slot = buffers->staging.data() + buffers->staged;

    std::memcpy(slot, src, bytes);
    Kokkos::deep_copy(ExecSpace(), Bytes((char *)dst, bytes), Kokkos::View<const char *, PartialsHostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(slot, bytes));
    buffers->staged += room;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode CopyArgsToBackend(void *dst, const void *src, size_t bytes)
{
  PetscFunctionBegin;
  if (bytes) CopyFenced(Bytes((char *)dst, bytes), CHostBytes((const char *)src, bytes));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode CopyArgsToHost(void *dst, const void *src, size_t bytes)
{
  PetscFunctionBegin;
  if (bytes) CopyFenced(HostBytes((char *)dst, bytes), CBytes((const char *)src, bytes));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode CopyToBackend(void *dst, const void *src, size_t bytes)
{
  if (bytes) counters.h2d++;
  counters.h2d_bytes += (PetscInt64)bytes;
  return CopyArgsToBackend(dst, src, bytes);
}

PetscErrorCode CopyToHost(void *dst, const void *src, size_t bytes)
{
  if (bytes) counters.d2h++;
  return CopyArgsToHost(dst, src, bytes);
}

/* Backend::copy_within: queued on the execution space */
static PetscErrorCode CopyWithin(void *dst, const void *src, size_t bytes)
{
  PetscFunctionBegin;
  if (bytes) Kokkos::deep_copy(ExecSpace(), Bytes((char *)dst, bytes), CBytes((const char *)src, bytes));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* count partials to the host (one copy, fenced), counted unless they go to a reduce target */
static PetscErrorCode CopyPartials(PetscScalar *host, const PetscScalar *dev, size_t count)
{
  PetscFunctionBegin;
  PetscCall(CopyArgsToHost(host, dev, count * sizeof(PetscScalar)));
  if (count > 0 && !target.slot) counters.d2h++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode PartialsToHost(const PartialsRoom &room, const PetscScalar **host)
{
  PetscFunctionBegin;
  *host = buffers->partials_host.data();
  PetscCall(CopyPartials(buffers->partials_host.data(), room.dev, room.count));
  PetscFunctionReturn(PETSC_SUCCESS);
}

void PartialsDefer(const PartialsRoom &room, PetscInt nchunks, Finish finish)
{
  buffers->pending.push_back({(size_t)(room.dev - buffers->arena.data()), nchunks, std::move(finish)});
}

/* The host's view of the partials dev: dev itself in host memory, else a buffer of its size */
template <class Host> static Kokkos::View<PetscScalar *, Host> HostPartials(const Kokkos::View<PetscScalar *, MemSpace> &dev)
{
  if constexpr (std::is_same_v<Host, MemSpace>)
    return dev;
  else
    return Kokkos::View<PetscScalar *, Host>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "fusedksp partials (host)"), dev.extent(0));
}

/* Room for `count` more partials in the arena after arena_used: a larger arena (at least twice as large, so a solve's
   batches soon stop growing it) takes the partials of the open batches along (Kokkos::deep_copy() waits for the
   kernels that write them) */
static PetscErrorCode ArenaReserve(size_t count)
{
  const size_t need = arena_used + count;

  PetscFunctionBegin;
  if (buffers->arena.extent(0) < need) {
    Kokkos::View<PetscScalar *, MemSpace> grown(Kokkos::view_alloc(Kokkos::WithoutInitializing, "fusedksp batch partials"), PetscMax(need, 2 * buffers->arena.extent(0)));
    const auto                            used = std::make_pair((size_t)0, arena_used);

    if (arena_used) Kokkos::deep_copy(Kokkos::subview(grown, used), Kokkos::subview(buffers->arena, used));
    buffers->arena      = grown;
    buffers->arena_host = HostPartials<PartialsHostSpace>(grown);
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode Partials(PetscInt count, PartialsRoom *room)
{
  PetscFunctionBegin;
  PetscCheck(buffers, PETSC_COMM_SELF, PETSC_ERR_ORDER, "The Kokkos backend is used before KokkosBackendInitialize()");
  room->count    = count;
  room->deferred = team_chunks && nbatches && batch_defer && !target.slot && count > 0;
  if (room->deferred) {
    PetscCall(ArenaReserve(count));
    room->dev = buffers->arena.data() + arena_used;
    arena_used += count;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  if ((PetscInt)buffers->partials.extent(0) < count) {
    buffers->partials      = Kokkos::View<PetscScalar *, MemSpace>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "fusedksp partials"), count);
    buffers->partials_host = HostPartials<PartialsHostSpace>(buffers->partials);
  }
  room->dev = buffers->partials.data();
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::batch_begin: opens a batch (inside the open ones: their deferred reductions stay pending) */
static PetscErrorCode BatchBegin(void)
{
  PetscFunctionBegin;
  PetscCheck(buffers, PETSC_COMM_SELF, PETSC_ERR_ORDER, "The Kokkos backend is used before KokkosBackendInitialize()");
  PetscCheck(nbatches < MAX_BATCHES, PETSC_COMM_SELF, PETSC_ERR_SUP, "Batches of reductions nested more than %d deep", MAX_BATCHES);
  batch_frames[nbatches++] = {arena_used, buffers->pending.size()};
  batch_defer              = false;
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode BatchDefer(PetscBool defer)
{
  PetscFunctionBegin;
  batch_defer = defer ? true : false;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Closes the innermost batch: its region of the arena and its second stages are released */
static void BatchPop(void)
{
  const BatchFrame f = batch_frames[--nbatches];

  buffers->pending.resize(f.pending);
  arena_used  = f.start;
  batch_defer = false;
}

/* See Backend::batch_end: ONE copy of the partials of the innermost batch's deferred reductions to the host (one
   wait), then their second stages in call order.  Those reductions had no reduce target: a target set since then
   is left for the operation it was set for. */
static PetscErrorCode BatchEnd(void)
{
  PetscFunctionBegin;
  PetscCheck(nbatches, PETSC_COMM_SELF, PETSC_ERR_ORDER, "No batch of reductions is open");
  {
    const BatchFrame   f     = batch_frames[nbatches - 1];
    const ReduceTarget later = target;
    PetscErrorCode     ierr;

    target = {};
    ierr   = CopyPartials(buffers->arena_host.data() + f.start, buffers->arena.data() + f.start, arena_used - f.start);
    for (size_t p = f.pending; !ierr && p < buffers->pending.size(); ++p) {
      const PendingFinish &r = buffers->pending[p];

      ierr = r.finish(r.nchunks, buffers->arena_host.data() + r.offset);
    }
    target = later;
    BatchPop();
    PetscCall(ierr);
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::batch_abandon */
static PetscErrorCode BatchAbandon(void)
{
  PetscFunctionBegin;
  PetscCheck(nbatches, PETSC_COMM_SELF, PETSC_ERR_ORDER, "No batch of reductions is open");
  BatchPop();
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode PointerArray(PetscInt nv, const PetscScalar *const *V, const PetscScalar *const **dev)
{
  PetscFunctionBegin;
  if constexpr (host_memory)
    *dev = V;
  else {
    PetscCheck(buffers, PETSC_COMM_SELF, PETSC_ERR_ORDER, "The Kokkos backend is used before KokkosBackendInitialize()");
    const size_t bytes = nv * sizeof(const PetscScalar *);

    if (buffers->pointers.extent(0) < bytes) buffers->pointers = Kokkos::View<char *, MemSpace>("fusedksp pointers", bytes);
    PetscCall(StageArgs(buffers->pointers.data(), V, bytes));
    *dev = reinterpret_cast<const PetscScalar *const *>(buffers->pointers.data());
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode CoefficientArray(PetscInt nv, const PetscScalar *coef, const PetscScalar **dev)
{
  PetscFunctionBegin;
  if constexpr (host_memory)
    *dev = coef;
  else {
    PetscCheck(buffers, PETSC_COMM_SELF, PETSC_ERR_ORDER, "The Kokkos backend is used before KokkosBackendInitialize()");
    if ((PetscInt)buffers->coefficients.extent(0) < nv) buffers->coefficients = Kokkos::View<PetscScalar *, MemSpace>("fusedksp coefficients", nv);
    PetscCall(StageArgs(buffers->coefficients.data(), coef, nv * sizeof(PetscScalar)));
    *dev = buffers->coefficients.data();
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode CopySpecs(int ndots, const DotSpec *specs, DotSpecs *out)
{
  PetscFunctionBegin;
  PetscCheck(ndots >= 0 && ndots <= FUSED_MAX_DOTS, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "At most %d fused dot products, asked for %d", FUSED_MAX_DOTS, ndots);
  for (int d = 0; d < ndots; ++d) out->spec[d] = specs[d];
  PetscFunctionReturn(PETSC_SUCCESS);
}

bool TargetStopped()
{
  PetscInt stop = -1;

  if (!target.stop) return false;
  if (CopyArgsToHost(&stop, target.stop, sizeof(stop))) return false;
  if (stop < 0) return false;
  target = {};
  return true;
}

PetscErrorCode StoreResults(int nd, const PetscScalar *all, PetscScalar *dots)
{
  PetscFunctionBegin;
  if (target.slot) {
    PetscCall(CopyArgsToBackend(target.slot, all, nd * sizeof(PetscScalar)));
  } else
    for (int d = 0; d < nd; ++d) dots[d] = all[d];
  target = {};
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Staging buffers of the halo exchange: host memory */
static PetscErrorCode MallocHost(size_t bytes, void **ptr)
{
  PetscFunctionBegin;
  *ptr = nullptr;
  PetscCheck(!AllocationFails(), PETSC_COMM_SELF, PETSC_ERR_MEM, "Kokkos backend: allocation of %zu bytes of host memory failed (-fused_debug_fail_alloc)", bytes);
  PetscCall(PetscMalloc(bytes, ptr));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode FreeHost(void *ptr)
{
  PetscFunctionBegin;
  PetscCall(PetscFree(ptr));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Copies complete at once (fenced) */
PetscErrorCode CopyToHostAsync(void *hostdst, const void *src, size_t bytes)
{
  return CopyToHost(hostdst, src, bytes);
}

PetscErrorCode CopyToBackendAsync(void *dst, const void *hostsrc, size_t bytes)
{
  return CopyToBackend(dst, hostsrc, bytes);
}

PetscErrorCode FenceWait(void)
{
  PetscFunctionBegin;
  ExecSpace().fence("fusedksp fence_wait");
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Backend::allreduce and exchange on host memory: MPI after the kernels queued so far */
static PetscErrorCode FencedAllreduce(void *handle, PetscScalar *buf, PetscInt n)
{
  PetscFunctionBegin;
  PetscCall(FenceWait());
  PetscCall(MPICommAllreduce(handle, buf, n));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode FencedExchange(void *handle, const HaloPlan *plan)
{
  PetscFunctionBegin;
  PetscCall(FenceWait());
  PetscCall(MPICommExchange(handle, plan));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* PetscFinalize(): the buffers go, then Kokkos if this library started it */
static PetscErrorCode Finalize(void)
{
  PetscFunctionBegin;
  delete buffers;
  buffers        = nullptr;
  threads_in_use = 0;
  if (finalize_kokkos) Kokkos::finalize();
  finalize_kokkos = PETSC_FALSE;
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace kokkos

/*
   KokkosBackendInitialize - starts Kokkos (unless the application already did) with `threads` threads of its
   host execution space (0: the Kokkos default, OMP_NUM_THREADS or all cores) and, when it runs on a GPU, on
   device `device` (-1: Kokkos's choice), once per PetscInitialize(); Kokkos is finalized in PetscFinalize() when
   this library started it.
*/
PetscErrorCode KokkosBackendInitialize(PetscInt threads, PetscInt device)
{
  PetscFunctionBegin;
  if (kokkos::buffers) PetscFunctionReturn(PETSC_SUCCESS);
  if (!Kokkos::is_initialized()) {
    PetscCheck(!Kokkos::is_finalized(), PETSC_COMM_SELF, PETSC_ERR_ORDER, "-fused_backend kokkos: Kokkos was finalized by an earlier PetscFinalize() and cannot be initialized again in this process");
    Kokkos::InitializationSettings settings;

    if (threads > 0) settings.set_num_threads((int)threads);
    if (!kokkos::host_memory && device >= 0) settings.set_device_id((int)device);
    settings.set_disable_warnings(true);
    Kokkos::initialize(settings);
    kokkos::finalize_kokkos = PETSC_TRUE;
  }
  FusedKSPCallCXX(kokkos::buffers = new kokkos::Buffers());
  kokkos::threads_in_use = (PetscInt)kokkos::ExecSpace().concurrency();
  PetscCall(PetscRegisterFinalize(kokkos::Finalize));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   KokkosBackendCanStart - whether KokkosBackendInitialize() can succeed: not after Kokkos was finalized (by an
   earlier PetscFinalize() of the process), which Kokkos does not allow to start again
*/
PetscBool KokkosBackendCanStart(void)
{
  return kokkos::buffers || Kokkos::is_initialized() || !Kokkos::is_finalized() ? PETSC_TRUE : PETSC_FALSE;
}

/*
   KokkosBackendThreads - the threads (concurrency) of the Kokkos execution space the backend runs on;
   0 before KokkosBackendInitialize()
*/
PetscInt KokkosBackendThreads()
{
  return kokkos::threads_in_use;
}

/*
   KokkosBackendSpaceName - the name of the Kokkos execution space the backend runs on ("OpenMP", "Serial", ...)
*/
const char *KokkosBackendSpaceName(void)
{
  return kokkos::ExecSpace::name();
}

/*
   KokkosBackend - the fused operations written once with Kokkos (parallel_for over the default execution
   space: OpenMP threads on a CPU); reductions in the chunked order of the contract
*/
const Backend *KokkosBackend()
{
  static const Backend backend = {"kokkos",
                                  kokkos::MallocBytes,
                                  kokkos::FreeBytes,
                                  kokkos::CopyToBackend,
                                  kokkos::CopyToHost,
                                  kokkos::CopyWithin,
                                  &kokkos::counters,
                                  kokkos::CGUpdate,
                                  kokkos::SpMVDots,
                                  kokkos::SpMVSELLDots,
                                  kokkos::SpMVUpdate,
                                  kokkos::DiagGet,
                                  kokkos::DiagShift,
                                  kokkos::SELLFromCSR,
                                  kokkos::CSRFromSELL,
                                  kokkos::Dots,
                                  kokkos::WAXPYDot,
                                  kokkos::BCGSUpdate,
                                  kokkos::MDot,
                                  kokkos::MAXPYScale,
                                  kokkos::BlockMDot,
                                  kokkos::BlockMAXPY,
                                  kokkos::SGMRESUpdate,
                                  kokkos::BatchBegin,
                                  kokkos::BatchDefer,
                                  kokkos::BatchEnd,
                                  kokkos::BatchAbandon,
                                  kokkos::Gather,
                                  kokkos::Scatter,
                                  kokkos::SpMVOffDiagDots,
                                  kokkos::MallocHost,
                                  kokkos::FreeHost,
                                  kokkos::CopyToHostAsync,
                                  kokkos::CopyToBackendAsync,
                                  eager::NoOp,
                                  kokkos::FenceWait,
                                  eager::ReduceTargetSet<kokkos::target>,
                                  kokkos::CGUpdateChained,
                                  kokkos::WAXPYDotChained,
                                  kokkos::BCGSUpdateChained,
                                  kokkos::SGMRESUpdateChained,
                                  kokkos::CGChunk,
                                  kokkos::BCGSChunk,
                                  kokkos::SGMRESChunk,
                                  eager::GraphBegin,
                                  eager::GraphEnd,
                                  eager::NoOp,
                                  eager::GraphLaunch,
                                  eager::GraphDestroy,
                                  kokkos::TrsvAnalysis,
                                  kokkos::TrsvCSR,
                                  kokkos::TrsvFree,
                                  kokkos::BlockDiagMult,
                                  kokkos::host_memory ? PETSC_TRUE : PETSC_FALSE,
                                  nullptr, /* wait_foreign, foreign_wait */
                                  nullptr,
                                  nullptr, /* ilu0_*: the factorization runs on the host */
                                  nullptr,
                                  nullptr,
                                  kokkos::host_memory ? MPICommCreate : nullptr, /* several processes: MPI on the host arrays, after a fence */
                                  kokkos::host_memory ? MPICommDestroy : nullptr,
                                  kokkos::host_memory ? kokkos::FencedAllreduce : nullptr,
                                  kokkos::host_memory ? kokkos::FencedExchange : nullptr};
  return &backend;
}

} // namespace fusedksp
