/* Per-object data of the fused types.  PETSc's `spptr` slot exists only in builds with a device,
   and the fused types must work in a PETSc built without one, so their data is kept here, keyed
   by the object's address (set at creation, erased at destruction). */
#pragma once

#include "sys/errors.hpp"
#include <unordered_map>

namespace fusedksp
{
template <class T> class ObjectData {
public:
  T *Get(const void *obj) const
  {
    auto it = map_.find(obj);
    return it == map_.end() ? nullptr : it->second;
  }
  PetscErrorCode Set(const void *obj, T *data)
  {
    PetscFunctionBegin;
    FusedKSPCallCXX(map_[obj] = data);
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  T *Take(const void *obj)
  {
    T *d = Get(obj);
    map_.erase(obj);
    return d;
  }

private:
  std::unordered_map<const void *, T *> map_;
};
} // namespace fusedksp
