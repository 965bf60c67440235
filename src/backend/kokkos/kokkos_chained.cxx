/* Kokkos backend (host memory): the chained operations of chunks (backend/chained_host.hpp) */
#include "backend/kokkos/kokkos_reduce.hpp"

namespace fusedksp
{
namespace kokkos
{

static_assert(host_memory, "the chained operations compute their coefficients on the host");

static PetscErrorCode StoreChainedResults(int nd, const PetscScalar *all)
{
  return StoreResults(nd, all, nullptr);
}

static const auto ThisBackend = KokkosBackend;
static const auto ThisBlas    = KokkosBlas;

#include "backend/chained_host.hpp"

} // namespace kokkos
} // namespace fusedksp
