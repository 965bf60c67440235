/* Host backend: the chained operations of chunks (backend/chained_host.hpp) */
#include "backend/host/host_reduce.hpp"

namespace fusedksp
{
namespace host
{

static PetscErrorCode StoreChainedResults(int nd, const PetscScalar *all)
{
  StoreResults(nd, all, nullptr);
  return PETSC_SUCCESS;
}

static const auto ThisBackend = HostBackend;
static const auto ThisBlas    = HostBlas;

#include "backend/chained_host.hpp"

} // namespace host
} // namespace fusedksp
