/*
   Kokkos backend: the chained operations of chunks (backend/chained_host.hpp), whose coefficients the host computes
   from the chunk's control block and slots.  In host memory (OpenMP, Serial) they are read in place.  In device memory
   (CUDA) each operation first copies the control block and the chunk's slots up to its own to the host, computes
   there, and copies back what the host changed: the control block after a stop, simpler GMRES's residual estimate,
   a start's limits.  Those copies are arguments of the operation (not counted), as the reduce target's stop flag;
   every operation of a chunk then waits for the device, so a chunk saves no round trip there.
*/
#include "backend/kokkos/kokkos_reduce.hpp"
#include <vector>

namespace fusedksp
{
namespace kokkos
{

static PetscErrorCode StoreChainedResults(int nd, const PetscScalar *all)
{
  return StoreResults(nd, all, nullptr);
}

static const auto ThisBackend = KokkosBackend;
static const auto ThisBlas    = KokkosBlas;

/* The chained operations on a control block and slots the host reads */
namespace onhost
{
#include "backend/chained_host.hpp"
} // namespace onhost

/* Host copies of a chunk's control block and of `count` values of its slots from slot0 (backend memory) */
struct HostChunk {
  ChunkControl             ctl     = {};
  PetscInt                 stopped = -1; /* ctl.stopped as copied */
  std::vector<PetscScalar> slots;
  const PetscScalar       *slot0 = nullptr;

  /* the host copy of a slot pointer into the copied values (NULL for NULL) */
  PetscScalar *Host(const PetscScalar *dev)
  {
    return dev ? slots.data() + (dev - slot0) : nullptr;
  }
};

static PetscErrorCode HostChunkLoad(const ChunkControl *ctl, const PetscScalar *slot0, PetscInt count, HostChunk *h)
{
  PetscFunctionBegin;
  PetscCall(CopyArgsToHost(&h->ctl, ctl, sizeof(ChunkControl)));
  h->stopped = h->ctl.stopped;
  h->slot0   = slot0;
  if (slot0) {
    FusedKSPCallCXX(h->slots.resize((size_t)count));
    PetscCall(CopyArgsToHost(h->slots.data(), slot0, count * sizeof(PetscScalar)));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* A stop the host recorded goes back to the control block */
static PetscErrorCode HostChunkStoreStop(const HostChunk &h, ChunkControl *ctl)
{
  PetscFunctionBegin;
  if (h.ctl.stopped != h.stopped) PetscCall(CopyArgsToBackend(ctl, &h.ctl, sizeof(ChunkControl)));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::cg_update_chained: slots 0 .. j of the chunk (prev is slot j - 1; none for j = 0) */
PetscErrorCode CGUpdateChained(PetscInt n, const PetscScalar *prev, ChunkControl *ctl, PetscInt j, PetscScalar *x, PetscScalar *r, PetscScalar *z, PetscScalar *p, const PetscScalar *q, const PetscScalar *u, const PetscScalar *w)
{
  HostChunk h;

  PetscFunctionBegin;
  if constexpr (host_memory)
    PetscCall(onhost::CGUpdateChained(n, prev, ctl, j, x, r, z, p, q, u, w));
  else {
    PetscCall(HostChunkLoad(ctl, prev ? prev - (j - 1) * CG_NSLOT : nullptr, (j + 1) * CG_NSLOT, &h));
    PetscCall(onhost::CGUpdateChained(n, h.Host(prev), &h.ctl, j, x, r, z, p, q, u, w));
    PetscCall(HostChunkStoreStop(h, ctl));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::waxpy_dot_chained */
PetscErrorCode WAXPYDotChained(PetscInt n, const PetscScalar *prev, const PetscScalar *cur, ChunkControl *ctl, PetscInt j, const PetscScalar *x, const PetscScalar *v, PetscScalar *y)
{
  HostChunk h;

  PetscFunctionBegin;
  if constexpr (host_memory)
    PetscCall(onhost::WAXPYDotChained(n, prev, cur, ctl, j, x, v, y));
  else {
    PetscCall(HostChunkLoad(ctl, prev - (j - 1) * BCGS_NSLOT, (j + 1) * BCGS_NSLOT, &h));
    PetscCall(onhost::WAXPYDotChained(n, h.Host(prev), h.Host(cur), &h.ctl, j, x, v, y));
    PetscCall(HostChunkStoreStop(h, ctl));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::bcgs_update_chained */
PetscErrorCode BCGSUpdateChained(PetscInt n, const PetscScalar *prev, const PetscScalar *cur, ChunkControl *ctl, PetscInt j, const PetscScalar *wr, PetscScalar *x, PetscScalar *r, PetscScalar *p, const PetscScalar *s, const PetscScalar *Ap,
                                 const PetscScalar *As, const PetscScalar *rstar)
{
  HostChunk h;

  PetscFunctionBegin;
  if constexpr (host_memory)
    PetscCall(onhost::BCGSUpdateChained(n, prev, cur, ctl, j, wr, x, r, p, s, Ap, As, rstar));
  else {
    PetscCall(HostChunkLoad(ctl, prev - (j - 1) * BCGS_NSLOT, (j + 1) * BCGS_NSLOT, &h));
    PetscCall(onhost::BCGSUpdateChained(n, h.Host(prev), h.Host(cur), &h.ctl, j, wr, x, r, p, s, Ap, As, rstar));
    PetscCall(HostChunkStoreStop(h, ctl));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::sgmres_update_chained: the update's coefficients are the host copy of cur; the residual estimate it
   writes to cur[m + 2] goes back (cur[m + 1] is the reduce target, written by the update itself) */
PetscErrorCode SGMRESUpdateChained(PetscInt n, PetscInt i, PetscInt m, PetscReal keep, const PetscScalar *const *V, PetscScalar *w, const PetscScalar *zold, PetscScalar *znew, const PetscScalar *prev, PetscScalar *cur, ChunkControl *ctl, PetscInt j)
{
  const PetscInt nd = SGMRESChunkSlot(m);
  HostChunk      h;

  PetscFunctionBegin;
  if constexpr (host_memory)
    PetscCall(onhost::SGMRESUpdateChained(n, i, m, keep, V, w, zold, znew, prev, cur, ctl, j));
  else {
    PetscCall(HostChunkLoad(ctl, prev - (j - 1) * nd, (j + 1) * nd, &h));
    PetscCall(onhost::SGMRESUpdateChained(n, i, m, keep, V, w, zold, znew, h.Host(prev), h.Host(cur), &h.ctl, j));
    if (h.ctl.stopped < 0) PetscCall(CopyArgsToBackend(cur + m + 2, h.Host(cur) + m + 2, sizeof(PetscScalar)));
    PetscCall(HostChunkStoreStop(h, ctl));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* See Backend::cg_chunk and bcgs_chunk: the operations of the chunk's steps, one at a time */
PetscErrorCode CGChunk(const CGChunkArgs *args)
{
  return onhost::CGChunk(args);
}

PetscErrorCode BCGSChunk(const BCGSChunkArgs *args)
{
  return onhost::BCGSChunk(args);
}

/* See Backend::sgmres_chunk: in device memory, the start of a chunk that starts the solve as SGMRESChunkHostMemory()
   computes it - <b,b> to slot 0, SGMRESChunkStart() on host copies of the control block and slot 0 (both copied back),
   z_1 = b / rho - then the steps */
PetscErrorCode SGMRESChunk(const SGMRESChunkArgs *args)
{
  PetscFunctionBegin;
  if constexpr (host_memory)
    PetscCall(onhost::SGMRESChunk(args));
  else {
    const PetscInt n = args->csr ? args->csr->nrows : args->sell->nrows, nd = SGMRESChunkSlot(args->m);

    PetscCheck(!args->b || args->i0 == 0, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONG, "Only the first chunk of a cycle starts the solve, not one from step %" PetscInt_FMT, args->i0 + 1);
    if (args->b) {
      const DotSpec      self;
      const PetscScalar *b  = args->b;
      PetscScalar       *z1 = args->Z[1];
      HostChunk          h;
      PetscReal          rho;

      PetscCall(eager::ReduceTargetSet<target>(args->slots + args->m + 2, nullptr));
      PetscCall(Dots(n, nullptr, b, 1, &self, nullptr));
      PetscCall(HostChunkLoad(args->ctl, args->slots, nd, &h));
      rho = SGMRESChunkStart(&h.ctl, h.slots.data(), args->m);
      PetscCall(CopyArgsToBackend(args->ctl, &h.ctl, sizeof(ChunkControl)));
      PetscCall(CopyArgsToBackend(args->slots + args->m + 1, h.slots.data() + args->m + 1, sizeof(PetscScalar)));
      if (rho != 0) { /* one pass, as VecScale() by 1 / rho */
        const PetscScalar scale = 1 / rho;
        ForEach(
            "fusedksp::sgmres_chunk_start", n, KOKKOS_LAMBDA(const PetscInt i) { z1[i] = b[i] * scale; });
      }
    }
    PetscCall(SGMRESChunkSteps(KokkosBackend(), args));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace kokkos
} // namespace fusedksp
