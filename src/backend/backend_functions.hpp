/*
   The kernel families of the backend contract (backend.hpp) as every backend defines them in its own
   namespace (host::CGUpdate, kokkos::CGUpdate, cuda::CGUpdate, ...), declared once: each backend's
   header includes this file inside its namespace, and its table (Backend) points at them.  Meant to be
   included once per backend namespace, so it has no include guard.
*/
PetscErrorCode CGUpdate(PetscInt, PetscScalar, PetscScalar, PetscScalar *, PetscScalar *, PetscScalar *, PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar[3]);
PetscErrorCode SpMVDots(const CSRView *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *, int, const DotSpec *, PetscScalar *);
PetscErrorCode SpMVSELLDots(const SELLView *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *, int, const DotSpec *, PetscScalar *);
PetscErrorCode SpMVUpdate(const CSRView *, const SELLView *, const RowUpdate *, const PetscScalar *, PetscScalar *);
PetscErrorCode DiagGet(PetscInt, const PetscInt64 *, const PetscScalar *, PetscScalar *);
PetscErrorCode DiagShift(PetscInt, const PetscInt64 *, PetscScalar, PetscScalar *);
PetscErrorCode SELLFromCSR(const SELLView *, const PetscInt *, const PetscInt *, const PetscScalar *, PetscInt *, PetscScalar *);
PetscErrorCode CSRFromSELL(const SELLView *, const PetscInt *, PetscInt *, PetscScalar *);
PetscErrorCode TrsvAnalysis(TriangularView *, PetscInt, const PetscInt *, const PetscInt *);
PetscErrorCode TrsvCSR(const TriangularView *, const PetscScalar *, PetscScalar *);
PetscErrorCode TrsvFree(TriangularView *);
PetscErrorCode BlockDiagMult(const BlockDiagView *, PetscBool, const PetscScalar *, PetscScalar *);
PetscErrorCode Dots(PetscInt, const PetscScalar *, const PetscScalar *, int, const DotSpec *, PetscScalar *);
PetscErrorCode WAXPYDot(PetscInt, PetscScalar, const PetscScalar *, const PetscScalar *, PetscScalar *, PetscScalar[1]);
PetscErrorCode BCGSUpdate(PetscInt, PetscScalar, PetscScalar, PetscScalar, const PetscScalar *, PetscScalar *, PetscScalar *, PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, int,
                          PetscScalar *);
PetscErrorCode MDot(PetscInt, PetscInt, const PetscScalar *const *, const PetscScalar *, PetscBool, PetscScalar *);
PetscErrorCode MAXPYScale(PetscInt, PetscInt, const PetscScalar *, const PetscScalar *const *, PetscScalar *, PetscScalar, const PetscScalar *, PetscScalar *);
PetscErrorCode BlockMDot(PetscInt, PetscInt, const PetscScalar *const *, PetscInt, const PetscScalar *const *, PetscScalar *);
PetscErrorCode BlockMAXPY(PetscInt, PetscInt, const PetscScalar *const *, PetscInt, PetscScalar *const *, const PetscScalar *, const PetscScalar *);
PetscErrorCode SGMRESUpdate(PetscInt, PetscInt, const PetscScalar *, const PetscScalar *const *, PetscScalar *, PetscScalar, PetscScalar, const PetscScalar *, PetscScalar *, PetscScalar[1]);
PetscErrorCode Gather(PetscInt, const PetscInt *, const PetscScalar *, const PetscScalar *, PetscScalar *);
PetscErrorCode Scatter(PetscInt, const PetscInt *, const PetscScalar *, PetscBool, PetscScalar *);
PetscErrorCode SpMVOffDiagDots(const CSRView *, const PetscInt *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *, int, const DotSpec *, PetscScalar *);
PetscErrorCode CGChunk(const CGChunkArgs *);
PetscErrorCode BCGSChunk(const BCGSChunkArgs *);
PetscErrorCode SGMRESChunk(const SGMRESChunkArgs *);
PetscErrorCode CGUpdateChained(PetscInt, const PetscScalar *, ChunkControl *, PetscInt, PetscScalar *, PetscScalar *, PetscScalar *, PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *);
PetscErrorCode WAXPYDotChained(PetscInt, const PetscScalar *, const PetscScalar *, ChunkControl *, PetscInt, const PetscScalar *, const PetscScalar *, PetscScalar *);
PetscErrorCode BCGSUpdateChained(PetscInt, const PetscScalar *, const PetscScalar *, ChunkControl *, PetscInt, const PetscScalar *, PetscScalar *, PetscScalar *, PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *,
                                 const PetscScalar *);
PetscErrorCode SGMRESUpdateChained(PetscInt, PetscInt, PetscInt, PetscReal, const PetscScalar *const *, PetscScalar *, const PetscScalar *, PetscScalar *, const PetscScalar *, PetscScalar *, ChunkControl *, PetscInt);
/* The halo exchange's copies (complete after the next fence) and the wait for the fence */
PetscErrorCode CopyToHostAsync(void *, const void *, size_t);
PetscErrorCode CopyToBackendAsync(void *, const void *, size_t);
PetscErrorCode FenceWait(void);
