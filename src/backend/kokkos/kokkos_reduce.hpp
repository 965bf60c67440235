/*
   Kokkos backend: the execution space, the two-stage reductions of the contract, and the declarations of
   the backend's functions.

   Every kernel is a Kokkos::parallel_for on the default execution space (OpenMP in the CPU build, CUDA in a
   GPU build) over raw pointers in its memory space.  A reduction is cut into the ReduceChunks() chunks of the
   contract, and each kernel that reduces is written once per entry (and, where the CPU needs it, as a loop over
   a chunk around the same per-entry expressions); the execution space picks the shape of the first stage:
   on CPU threads one work item per chunk accumulates its partial sums (in index order, or in SIMD lanes for
   the dot products of the sparse products and the multi-dot), a chunk's vectors staying in the cache of one
   core; on a GPU one team of threads per chunk, consecutive threads reading consecutive entries (coalesced),
   each thread accumulating its sums, then the team's reduction of them (in a fixed order for a given team
   size).  The second stage adds the partials in chunk order on the host.  The results agree with the host
   reference backend to rounding and do not depend on the number of threads.

   In the GPU shape a reduction called inside a batch with batch_defer on (Backend::batch_begin) defers its second
   stage: its partials go to a region of their own of the batch's arena and the caller's second stage (a Finish)
   runs in batch_end(), after one copy of the batch's partials; results are those of the eager path, bit for bit.
*/
#pragma once

#include <Kokkos_Core.hpp>
#include <cmath>
#include <functional>
#include "backend/eager.hpp"

namespace fusedksp
{
namespace kokkos
{

using ExecSpace = Kokkos::DefaultExecutionSpace;
using MemSpace  = ExecSpace::memory_space;

/* Whether the backend's memory is host memory (OpenMP, Serial): arrays are then PETSc's host arrays */
constexpr bool host_memory = Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemSpace>::accessible;

extern BackendCounters counters;

/* The reduce target of the next reducing operation (Backend::reduce_target) */
using eager::ReduceTarget;
extern ReduceTarget target;

/* Copies between the backend's memory and host memory (fenced), counted as transfers of data */
PetscErrorCode CopyToBackend(void *dst, const void *hostsrc, size_t bytes);
PetscErrorCode CopyToHost(void *hostdst, const void *src, size_t bytes);
/* The same, not counted: arguments and results of the operations, which a device backend passes as
   kernel parameters or as partial sums (counted once per copy of partials: PartialsToHost(), batch_end()) */
PetscErrorCode CopyArgsToBackend(void *dst, const void *hostsrc, size_t bytes);
PetscErrorCode CopyArgsToHost(void *hostdst, const void *src, size_t bytes);

/* At the start of an operation that honours the reduce target: true when it must do nothing (its stop
   flag is set); the target is then used up                                                         */
bool TargetStopped();

/* The results of an operation: to the reduce target when one is set (then used up), else to dots */
PetscErrorCode StoreResults(int nd, const PetscScalar *all, PetscScalar *dots);

/* Whether a chunk of a reduction runs as a team of threads (a GPU: the memory space is not the host's) or as one
   work item (CPU threads).  FUSEDKSP_KOKKOS_TEAMS gives a host build the GPU shape, to test it on a CPU. */
#if defined(FUSEDKSP_KOKKOS_TEAMS)
constexpr bool team_chunks = true;
#else
constexpr bool team_chunks = !host_memory;
#endif

/* The second stage of a reduction: finish(nchunks, part) reads the nchunks rows of partials part (host memory) and
   writes the operation's results (to memory that stays valid until batch_end() when it is deferred) */
using Finish = std::function<PetscErrorCode(PetscInt nchunks, const PetscScalar *part)>;

/* Room for the `count` partial sums of a reduction in the backend's memory (Partials()): a buffer kept between calls,
   or, when `deferred`, a region of its own of the open batch's arena, the second stage then waiting for batch_end().
   A reduction defers in the team shape (where each second stage costs a copy and a wait), inside a batch with
   batch_defer on, when its results go to dots[] (not to a reduce target).                                         */
struct PartialsRoom {
  PetscScalar *dev      = nullptr;
  PetscInt     count    = 0;
  bool         deferred = false;
};
PetscErrorCode Partials(PetscInt count, PartialsRoom *room);
/* The partials of a room that is not deferred to the host (*host) for the second stage: one device->host copy,
   unless the results go to a reduce target (then they stay where the backend computes, as on a device)     */
PetscErrorCode PartialsToHost(const PartialsRoom &room, const PetscScalar **host);
/* The second stage of a deferred room's reduction, run by batch_end() (C++: may throw, see FusedKSPCallCXX()) */
void PartialsDefer(const PartialsRoom &room, PetscInt nchunks, Finish finish);

using TeamPolicy = Kokkos::TeamPolicy<ExecSpace>;
using TeamMember = TeamPolicy::member_type;

/* The most chunks of a reduction of n entries: on a GPU -fused_tune_kokkos_reduce_teams (a team per chunk; 0: sqrt(n),
   at most FUSED_REDUCE_BLOCKS, see Tuning), on CPU threads FUSED_REDUCE_BLOCKS */
inline PetscInt ReduceChunkLimit(PetscInt n)
{
  if constexpr (team_chunks) {
    if (tuning.kokkos_reduce_teams > 0) return tuning.kokkos_reduce_teams;
    const PetscInt root = (PetscInt)std::sqrt((double)n);
    return root < 1 ? 1 : (root < FUSED_REDUCE_BLOCKS ? root : FUSED_REDUCE_BLOCKS);
  } else
    return FUSED_REDUCE_BLOCKS;
}

/* The most chunks of a multi-vector update (y from many vectors, four per pass over a chunk): on CPU threads few long
   ones, so that each vector's part of a chunk is a long run for the hardware prefetchers (fusedsgmres's update of
   y by 16 vectors at 1e6 on 2 threads: 4.4 ms in 2048 chunks, 3.5 ms in 128; the updates of a few vectors gained
   nothing); on a GPU those of a reduction of n entries                                                       */
inline PetscInt MultiUpdateChunks(PetscInt n)
{
  if constexpr (team_chunks)
    return ReduceChunkLimit(n);
  else
    return FUSED_MDOT_BLOCKS;
}

/* Threads of the team of a chunk: FUSED_MIN_CHUNK, the fewest entries of a chunk when there are several
   (ReduceChunks()), so every thread has an entry and a warp reads 32 consecutive ones; few enough registers
   per thread that every kernel launches (at most the kernel's team_size_max, see TeamSize())        */
constexpr int CHUNK_TEAM = (int)FUSED_MIN_CHUNK;
/* Threads of the team of a multi-dot's chunk: its chunks are at most FUSED_MDOT_BLOCKS (one team per chunk
   and group of dots), so larger teams keep enough loads in flight on a GPU                          */
constexpr int MDOT_TEAM = 512;

/* The partial sums of the ND reductions of one thread, and the joins that combine two of them */
template <int ND> struct Parts {
  PetscScalar v[ND];
};
struct SumJoin {
  KOKKOS_INLINE_FUNCTION static PetscScalar Join(PetscScalar a, PetscScalar b)
  {
    return a + b;
  }
};

/* The Kokkos reducer of Parts<ND> (each entry joined by Join, from 0): the team reduction of a chunk */
template <int ND, class Join> struct PartsReducer {
  using reducer          = PartsReducer;
  using value_type       = Parts<ND>;
  using result_view_type = Kokkos::View<value_type, MemSpace, Kokkos::MemoryUnmanaged>;

  value_type &value;

  KOKKOS_INLINE_FUNCTION      PartsReducer(value_type &v) : value(v) {}
  KOKKOS_INLINE_FUNCTION void join(value_type &dst, const value_type &src) const
  {
    for (int d = 0; d < ND; ++d) dst.v[d] = Join::Join(dst.v[d], src.v[d]);
  }
  KOKKOS_INLINE_FUNCTION void init(value_type &v) const
  {
    for (int d = 0; d < ND; ++d) v.v[d] = 0;
  }
  KOKKOS_INLINE_FUNCTION value_type &reference() const
  {
    return value;
  }
  KOKKOS_INLINE_FUNCTION result_view_type view() const
  {
    return result_view_type(&value);
  }
  KOKKOS_INLINE_FUNCTION bool references_scalar() const
  {
    return true;
  }
};

/* The entries [start, end) of chunk c of chunk length `chunk` */
KOKKOS_INLINE_FUNCTION void ChunkBounds(PetscInt c, PetscInt chunk, PetscInt n, PetscInt *start, PetscInt *end)
{
  *start = c * chunk;
  *end   = *start + chunk < n ? *start + chunk : n;
}

/* The team's threads stride over [start, end) (consecutive threads, consecutive entries), body(i, part) adding the
   terms of entry i to the thread's ND partials; then the team's reduction of them into sums (every thread) */
template <int ND, class Join, class Body> KOKKOS_INLINE_FUNCTION void TeamPartials(const TeamMember &team, PetscInt start, PetscInt end, const Body &body, Parts<ND> &sums)
{
  Kokkos::parallel_reduce(
      Kokkos::TeamThreadRange(team, start, end), [&](const PetscInt i, Parts<ND> &acc) { body(i, acc.v); }, PartsReducer<ND, Join>(sums));
}

/* A team policy of `league` teams of `want` threads, fewer where the kernel cannot launch that many (the most a
   kernel launches depends on its code and the device only: asked once per kernel) */
template <class Kernel> TeamPolicy TeamSize(PetscInt league, int want, const Kernel &kernel)
{
  static const int most = TeamPolicy(1, 1).team_size_max(kernel, Kokkos::ParallelForTag());
  return TeamPolicy(league, want < most ? want : most);
}

/* The frame of a reduction, around its kernel: ChunkFrameBegin() gives *nchunks = ReduceChunks(n, maxblocks) chunks
   of width *chunk (none unless runs; with align > 1 the width rounded up to a multiple of align, so fewer chunks
   may do) and room for their nd partials; with no chunk there is no kernel to run
   (*run false) and the second stage runs at once, on no partials.  ChunkFrameEnd() counts the launch and runs the
   second stage finish(nchunks, partials in host memory), or defers it to batch_end().                      */
template <class F> PetscErrorCode ChunkFrameBegin(PetscInt n, PetscInt maxblocks, int nd, bool runs, PetscInt *nchunks, PetscInt *chunk, PartialsRoom *room, const F &finish, bool *run, PetscInt align = 1)
{
  PetscFunctionBegin;
  *nchunks = runs ? ReduceChunks(n, maxblocks) : 0;
  *run     = *nchunks > 0;
  if (!*run) {
    PetscCall(finish(0, nullptr));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  *chunk   = ((n + *nchunks - 1) / *nchunks + align - 1) / align * align;
  *nchunks = (n + *chunk - 1) / *chunk;
  PetscCall(Partials(*nchunks * nd, room));
  PetscFunctionReturn(PETSC_SUCCESS);
}

template <class F> PetscErrorCode ChunkFrameEnd(const PartialsRoom &room, PetscInt nchunks, const F &finish)
{
  const PetscScalar *host;

  PetscFunctionBegin;
  counters.launches++;
  if (room.deferred)
    FusedKSPCallCXX(PartialsDefer(room, nchunks, finish));
  else {
    PetscCall(PartialsToHost(room, &host));
    PetscCall(finish(nchunks, host));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The per-chunk partials of a reduction of n entries in ReduceChunks(n, maxblocks) chunks (align: see
   ChunkFrameBegin()), nd <= ND sums joined by
   Join (SumJoin: added) from 0.  On the host one work item per chunk runs chunk(start, end, part), the work of the
   entries [start, end) adding their terms to part[0..nd) (in index order, or in SIMD lanes); on a GPU one team per
   chunk runs entry(i, part) for each entry i of the chunk (the same work, one entry at a time), its threads
   striding over the chunk, and then reduces their partials.  The second stage finish(nchunks, part) then reads
   the nchunks rows of nd partials (host memory; see ChunkFrameEnd()).  The kernels are launched by functions
   without the type of finish among their template arguments: nvcc takes no type local to a function (a host
   lambda) there in a function that holds a device lambda.                                                     */
template <int ND, class Join, class Chunk, class Entry> void ChunkRangeKernel(const char *label, PetscInt n, int nd, PetscInt nchunks, PetscInt chunk, PetscScalar *dev, const Chunk &chunkbody, const Entry &entry)
{
  if constexpr (team_chunks) {
    const auto kernel = KOKKOS_LAMBDA(const TeamMember &team)
    {
      const PetscInt c = team.league_rank();
      PetscInt       start, end;
      Parts<ND>      sums;
      ChunkBounds(c, chunk, n, &start, &end);
      TeamPartials<ND, Join>(team, start, end, entry, sums);
      Kokkos::single(Kokkos::PerTeam(team), [&]() {
        for (int d = 0; d < nd; ++d) dev[c * nd + d] = sums.v[d];
      });
    };
    Kokkos::parallel_for(label, TeamSize(nchunks, CHUNK_TEAM, kernel), kernel);
  } else
    Kokkos::parallel_for(
        label, Kokkos::RangePolicy<ExecSpace>(0, nchunks), KOKKOS_LAMBDA(const PetscInt c) {
          PetscScalar part[ND] = {};
          PetscInt    start, end;
          const Chunk local = chunkbody; /* a copy whose captures the stores of the loops cannot alias: kept in registers */
          ChunkBounds(c, chunk, n, &start, &end);
          if (start < end) local(start, end, part);
          for (int d = 0; d < nd; ++d) dev[c * nd + d] = part[d];
        });
}

template <int ND, class Join = SumJoin, class Chunk, class Entry, class F> PetscErrorCode ChunkRangePartials(const char *label, PetscInt n, PetscInt maxblocks, int nd, const Chunk &chunkbody, const Entry &entry, const F &finish, PetscInt align = 1)
{
  PartialsRoom room;
  PetscInt     nchunks, chunk;
  bool         run;

  PetscFunctionBegin;
  PetscCall(ChunkFrameBegin(n, maxblocks, nd, n > 0, &nchunks, &chunk, &room, finish, &run, align));
  if (!run) PetscFunctionReturn(PETSC_SUCCESS);
  ChunkRangeKernel<ND, Join>(label, n, nd, nchunks, chunk, room.dev, chunkbody, entry);
  PetscCall(ChunkFrameEnd(room, nchunks, finish));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The host's chunk of ChunkPartials(): body(i, part) for the entries in order */
template <class Body> struct InOrder {
  Body body;

  KOKKOS_INLINE_FUNCTION void operator()(const PetscInt start, const PetscInt end, PetscScalar *KOKKOS_RESTRICT part) const
  {
    for (PetscInt i = start; i < end; ++i) body(i, part);
  }
};

/* ChunkRangePartials() with body(i, part) doing entry i and adding its terms (the host's chunk: the entries in order) */
template <int ND, class Join = SumJoin, class Body, class F> PetscErrorCode ChunkPartials(const char *label, PetscInt n, PetscInt maxblocks, int nd, const Body &body, const F &finish)
{
  PetscFunctionBegin;
  PetscCall(ChunkRangePartials<ND, Join>(label, n, maxblocks, nd, InOrder<Body>{body}, body, finish));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The sums of a multi-dot that one team of a chunk reduces on a GPU (registers for every group) */
constexpr int GROUP_DOTS = 4;

/* The per-chunk partials of nd sums of any number (a multi-dot) in ReduceChunks(n, maxblocks) chunks.  On the host
   one work item per chunk runs chunk(start, end, part), which writes the chunk's nd partials to part[0..nd); on a
   GPU one team per chunk and group of GROUP_DOTS sums runs entry(i, first, part) for each entry i of the chunk,
   adding the terms of the sums first, first + 1, ... (those below nd, at most GROUP_DOTS) to part[0..), then
   reduces them.  The second stage finish(nchunks, part) then reads the nchunks rows of nd partials (host memory;
   the kernels launched as in ChunkRangePartials()).                                                           */
template <class Chunk, class Entry> void ChunkGroupKernel(const char *label, PetscInt n, int nd, PetscInt nchunks, PetscInt chunk, PetscScalar *dev, const Chunk &chunkbody, const Entry &entry)
{
  if constexpr (team_chunks) {
    const PetscInt groups = (nd + GROUP_DOTS - 1) / GROUP_DOTS;
    const auto     kernel = KOKKOS_LAMBDA(const TeamMember &team)
    {
      const PetscInt    c = team.league_rank() / groups, first = (team.league_rank() % groups) * GROUP_DOTS;
      PetscInt          start, end;
      Parts<GROUP_DOTS> sums;
      ChunkBounds(c, chunk, n, &start, &end);
      TeamPartials<GROUP_DOTS, SumJoin>(
          team, start, end, [&](const PetscInt i, PetscScalar *part) { entry(i, first, part); }, sums);
      Kokkos::single(Kokkos::PerTeam(team), [&]() {
        for (int k = 0; k < GROUP_DOTS && first + k < nd; ++k) dev[c * nd + first + k] = sums.v[k];
      });
    };
    Kokkos::parallel_for(label, TeamSize(nchunks * groups, MDOT_TEAM, kernel), kernel);
  } else
    Kokkos::parallel_for(
        label, Kokkos::RangePolicy<ExecSpace>(0, nchunks), KOKKOS_LAMBDA(const PetscInt c) {
          PetscInt start, end;
          ChunkBounds(c, chunk, n, &start, &end);
          chunkbody(start, end, dev + c * nd);
        });
}

template <class Chunk, class Entry, class F> PetscErrorCode ChunkGroupPartials(const char *label, PetscInt n, PetscInt maxblocks, int nd, const Chunk &chunkbody, const Entry &entry, const F &finish)
{
  PartialsRoom room;
  PetscInt     nchunks, chunk;
  bool         run;

  PetscFunctionBegin;
  PetscCall(ChunkFrameBegin(n, maxblocks, nd, n > 0 && nd > 0, &nchunks, &chunk, &room, finish, &run));
  if (!run) PetscFunctionReturn(PETSC_SUCCESS);
  ChunkGroupKernel(label, n, nd, nchunks, chunk, room.dev, chunkbody, entry);
  PetscCall(ChunkFrameEnd(room, nchunks, finish));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* A pointwise kernel in the chunks of a reduction: on the host one work item per chunk runs chunk(start, end) (the
   entries [start, end), whose vectors then stay in its cache); on a GPU entry(i) runs for each entry */
template <class Chunk, class Entry> void ChunkForEach(const char *label, PetscInt n, PetscInt maxblocks, const Chunk &chunkbody, const Entry &entry)
{
  if (n <= 0) return;
  if constexpr (team_chunks)
    Kokkos::parallel_for(label, Kokkos::RangePolicy<ExecSpace>(0, n), entry);
  else {
    const PetscInt nchunks = ReduceChunks(n, maxblocks), chunk = (n + nchunks - 1) / nchunks;
    Kokkos::parallel_for(
        label, Kokkos::RangePolicy<ExecSpace>(0, nchunks), KOKKOS_LAMBDA(const PetscInt c) {
          PetscInt start, end;
          ChunkBounds(c, chunk, n, &start, &end);
          chunkbody(start, end);
        });
  }
  counters.launches++;
}

/* The partials in chunk order into dots[0..nd) (the second stage) */
inline void SumPartials(PetscInt nchunks, int nd, const PetscScalar *part, PetscScalar *dots)
{
  for (int d = 0; d < nd; ++d) dots[d] = 0;
  for (PetscInt c = 0; c < nchunks; ++c)
    for (int d = 0; d < nd; ++d) dots[d] += part[c * nd + d];
}

/* A reduction of nd <= ND sums: ChunkPartials(), then the partials added in chunk order, finish(sums) storing them */
template <int ND, class Body, class F> PetscErrorCode ChunkedSums(const char *label, PetscInt n, int nd, const Body &body, const F &finish)
{
  PetscFunctionBegin;
  PetscCall(ChunkPartials<ND>(label, n, ReduceChunkLimit(n), nd, body, [nd, finish](PetscInt nchunks, const PetscScalar *part) {
    PetscScalar sums[ND];

    SumPartials(nchunks, nd, part, sums);
    return finish(sums);
  }));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* A reduction of nd <= ND sums into dots[0..nd), as ChunkedSums() */
template <int ND, class Body> PetscErrorCode ChunkedReduce(const char *label, PetscInt n, int nd, PetscScalar *dots, const Body &body)
{
  PetscFunctionBegin;
  PetscCall(ChunkPartials<ND>(label, n, ReduceChunkLimit(n), nd, body, [nd, dots](PetscInt nchunks, const PetscScalar *part) {
    SumPartials(nchunks, nd, part, dots);
    return PETSC_SUCCESS;
  }));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* A pointwise kernel: body(i) for i in [0, n) (nothing runs for n == 0) */
template <class Body> inline void ForEach(const char *label, PetscInt n, const Body &body)
{
  if (n <= 0) return;
  Kokkos::parallel_for(label, Kokkos::RangePolicy<ExecSpace>(0, n), body);
  counters.launches++;
}

/* The dot specifications of one kernel, passed by value into it */
struct DotSpecs {
  DotSpec spec[FUSED_MAX_DOTS];
};
PetscErrorCode CopySpecs(int ndots, const DotSpec *specs, DotSpecs *out);

/* The pointer array of nv vectors (host memory) in the backend's memory, kept between calls */
PetscErrorCode PointerArray(PetscInt nv, const PetscScalar *const *V, const PetscScalar *const **dev);
/* nv coefficients (host memory) where the kernels read them, kept until the next call */
PetscErrorCode CoefficientArray(PetscInt nv, const PetscScalar *coef, const PetscScalar **dev);

#include "backend/backend_functions.hpp" /* the contract's kernel families in this namespace */

} // namespace kokkos
} // namespace fusedksp
