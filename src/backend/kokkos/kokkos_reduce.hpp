/*
   Kokkos backend: the execution space, the two-stage reductions of the contract, and the declarations of
   the backend's functions.

   Every kernel is a Kokkos::parallel_for on the default execution space (OpenMP in the CPU build) over raw
   pointers in its memory space.  A reduction is cut into the ReduceChunks() chunks of the contract: one
   work item per chunk accumulates its partial sums (in index order, or in SIMD lanes for the dot products
   of the sparse products and the multi-dot), and the second stage adds the partials in chunk order.  The
   results agree with the host reference backend to rounding and do not depend on the number of threads.
*/
#pragma once

#include <Kokkos_Core.hpp>
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
   kernel parameters or as partial sums (counted once per reduction by PartialsToHost()) */
PetscErrorCode CopyArgsToBackend(void *dst, const void *hostsrc, size_t bytes);
PetscErrorCode CopyArgsToHost(void *hostdst, const void *src, size_t bytes);
/* The partial sums of a reduction to the host for its second stage: one device->host copy, unless its
   results go to a reduce target (then they stay where the backend computes, as on a device)      */
PetscErrorCode PartialsToHost(PetscScalar *host, const PetscScalar *dev, PetscInt count);

/* At the start of an operation that honours the reduce target: true when it must do nothing (its stop
   flag is set); the target is then used up                                                         */
bool TargetStopped();

/* The results of an operation: to the reduce target when one is set (then used up), else to dots */
PetscErrorCode StoreResults(int nd, const PetscScalar *all, PetscScalar *dots);

/* Room for `count` partial sums in the backend's memory, and its host mirror, kept between calls */
PetscErrorCode Partials(PetscInt count, PetscScalar **dev, PetscScalar **host);

/* The per-chunk partials of a reduction of n entries in ReduceChunks(n, maxblocks) chunks: chunk(start, end,
   part) does the work of the entries [start, end) and adds their terms to part[0..nd) in index order;
   *host_partials then holds nchunks rows of nd partials (host memory).  nd <= ND (the array each work
   item accumulates in).                                                                             */
template <int ND, class Chunk> PetscErrorCode ChunkRangePartials(const char *label, PetscInt n, PetscInt maxblocks, int nd, const Chunk &chunkbody, PetscInt *nchunks, const PetscScalar **host_partials)
{
  PetscScalar *dev, *host;

  PetscFunctionBegin;
  *nchunks       = n > 0 ? ReduceChunks(n, maxblocks) : 0;
  *host_partials = nullptr;
  if (!*nchunks) PetscFunctionReturn(PETSC_SUCCESS);
  const PetscInt chunk = (n + *nchunks - 1) / *nchunks;
  PetscCall(Partials(*nchunks * nd, &dev, &host));
  Kokkos::parallel_for(
      label, Kokkos::RangePolicy<ExecSpace>(0, *nchunks), KOKKOS_LAMBDA(const PetscInt c) {
        PetscScalar    part[ND] = {};
        const PetscInt start = c * chunk, end = start + chunk < n ? start + chunk : n;
        const Chunk    local = chunkbody; /* a copy whose captures the stores of the loops cannot alias: kept in registers */
        if (start < end) local(start, end, part);
        for (int d = 0; d < nd; ++d) dev[c * nd + d] = part[d];
      });
  PetscCall(PartialsToHost(host, dev, *nchunks * nd));
  *host_partials = host;
  counters.launches++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ChunkRangePartials() with body(i, part) doing entry i and adding its terms */
template <int ND, class Body> PetscErrorCode ChunkPartials(const char *label, PetscInt n, PetscInt maxblocks, int nd, const Body &body, PetscInt *nchunks, const PetscScalar **host_partials)
{
  PetscFunctionBegin;
  PetscCall(ChunkRangePartials<ND>(
      label, n, maxblocks, nd,
      KOKKOS_LAMBDA(const PetscInt start, const PetscInt end, PetscScalar *KOKKOS_RESTRICT part) {
        for (PetscInt i = start; i < end; ++i) body(i, part);
      },
      nchunks, host_partials));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The partials in chunk order into dots[0..nd) (the second stage) */
inline void SumPartials(PetscInt nchunks, int nd, const PetscScalar *part, PetscScalar *dots)
{
  for (int d = 0; d < nd; ++d) dots[d] = 0;
  for (PetscInt c = 0; c < nchunks; ++c)
    for (int d = 0; d < nd; ++d) dots[d] += part[c * nd + d];
}

/* A reduction of nd <= ND sums: ChunkPartials(), then the partials added in chunk order into dots[] */
template <int ND, class Body> PetscErrorCode ChunkedReduce(const char *label, PetscInt n, int nd, PetscScalar *dots, const Body &body)
{
  PetscInt           nchunks;
  const PetscScalar *part;

  PetscFunctionBegin;
  PetscCall(ChunkPartials<ND>(label, n, FUSED_REDUCE_BLOCKS, nd, body, &nchunks, &part));
  SumPartials(nchunks, nd, part, dots);
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
