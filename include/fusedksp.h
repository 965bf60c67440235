/*
   FusedKSP: pipelined GPU Krylov solvers with fused kernels for PETSc.

   Load without recompiling:   -dll_append /path/lib/libfusedksp.so -ksp_type fusedcg -vec_type fused -mat_type aijfused
   or link -lfusedksp and call FusedKSPInitializePackage() after PetscInitialize().
*/
#pragma once

#include <petscksp.h>

#define KSPFUSEDCG "fusedcg"
#define KSPFUSEDBCGS "fusedbcgs"
#define KSPFUSEDSGMRES "fusedsgmres"
#define KSPFUSEDCAGMRES "fusedcagmres"
#define KSPFUSEDBICG "fusedbicg"

#define VECFUSED "fused"
#define VECSEQFUSED "seqfused"
#define VECMPIFUSED "mpifused"

#define MATAIJFUSED "aijfused"
#define MATSEQAIJFUSED "seqaijfused"
#define MATMPIAIJFUSED "mpiaijfused"

/* ILU(0)/ICC(0) of a seqaijfused matrix with the triangular solves on the backend (default for seqaijfused) */
#define MATSOLVERFUSED "fused"

/* Storage of a fused AIJ matrix on the backend (-mat_aijfused_format) */
typedef enum { MAT_AIJFUSED_CSR, MAT_AIJFUSED_SELL, MAT_AIJFUSED_AUTO } MatAIJFusedFormat;
PETSC_EXTERN PetscErrorCode MatAIJFusedSetFormat(Mat, MatAIJFusedFormat);

PETSC_EXTERN PetscErrorCode FusedKSPInitializePackage(void);
PETSC_EXTERN PetscErrorCode FusedKSPFinalizePackage(void);

/* The backend the fused operations run on: "host" or "cuda" */
PETSC_EXTERN PetscErrorCode FusedKSPGetBackendName(const char *[]);

/* The CUDA device of this MPI rank (-fused_device_id, default node-local rank modulo GPU count); -1 on the host backend */
PETSC_EXTERN PetscErrorCode FusedKSPGetDevice(PetscInt *);
/* The CUDA device's name, or "none" when the fused operations do not run on a CUDA device */
PETSC_EXTERN PetscErrorCode FusedKSPGetDeviceName(char[], size_t);

/* Waits until the work the backend has queued is complete (for timers) */
PETSC_EXTERN PetscErrorCode FusedKSPSynchronize(void);

/* fusedsgmres: one reorthogonalization pass (CGS2) */
PETSC_EXTERN PetscErrorCode KSPFusedSGMRESSetCGS2(KSP, PetscBool);
PETSC_EXTERN PetscErrorCode KSPFusedSGMRESGetCGS2(KSP, PetscBool *);

/* Number of global reductions (MPI_Allreduce calls) the last KSPSolve() of a fused solver made */
PETSC_EXTERN PetscErrorCode KSPFusedGetReductionCount(KSP, PetscInt *);
PETSC_EXTERN PetscErrorCode KSPFusedGetResidualReplacementCount(KSP, PetscInt *);
PETSC_EXTERN PetscErrorCode KSPFusedSetCheckInterval(KSP, PetscInt);
PETSC_EXTERN PetscErrorCode KSPFusedGetCheckInterval(KSP, PetscInt *);
PETSC_EXTERN PetscErrorCode KSPFusedSetUseGraph(KSP, PetscBool);
PETSC_EXTERN PetscErrorCode KSPFusedSetUsePersistent(KSP, PetscBool);
PETSC_EXTERN PetscErrorCode KSPFusedGetChunkCounts(KSP, PetscInt *, PetscInt *, PetscInt *);

/* Benchmark floor of the CUDA backend, measured on the active device: time of two empty kernel
   launches + one 1 KB device->host copy + stream synchronization (minimum and median over `reps`,
   microseconds), and device-to-device copy bandwidth (GB/s, bytes read + written).
   PETSC_ERR_SUP when the CUDA backend is not in use. */
PETSC_EXTERN PetscErrorCode FusedKSPMeasureDeviceFloor(PetscInt reps, PetscReal *latency_min_us, PetscReal *latency_median_us, PetscReal *copy_bandwidth_GBs);
PETSC_EXTERN PetscErrorCode FusedKSPMeasureDeviceGraphFloor(PetscInt reps, PetscInt its, PetscReal *min_us, PetscReal *median_us);

/* Work done by the active backend since the program started: fused kernel launches (host backend:
   fused loops), device->host and host->device copies.  For tests of kernels per iteration. */
PETSC_EXTERN PetscErrorCode FusedKSPGetBackendCounters(PetscInt64 *launches, PetscInt64 *device_to_host, PetscInt64 *host_to_device);
PETSC_EXTERN PetscErrorCode FusedKSPGetBackendUploadedBytes(PetscInt64 *bytes);

/* How the last chunk of iterations (-ksp_fused_check_interval k > 1) ran on the active backend: "steps",
   "cooperative grid", "grid as one cluster" or "resident", and the thread blocks of its persistent
   kernel (0 for steps); "none" before the first chunk.  For tests and sanitizer runs of each form. */
PETSC_EXTERN PetscErrorCode FusedKSPGetLastChunkForm(const char **form, PetscInt *blocks);

/* Fault injection (tests of the error paths): the n-th allocation of FusedKSP from now on fails with
   PETSC_ERR_MEM (0: none); the number of allocations since the last FusedKSPDebugFailAllocation() */
PETSC_EXTERN PetscErrorCode FusedKSPDebugFailAllocation(PetscInt64 n);
PETSC_EXTERN PetscErrorCode FusedKSPDebugGetAllocationCount(PetscInt64 *count);
/* Host arrays fused vectors allocated on first use of their host side (a backend whose memory is not host memory:
   cuda, -fused_debug_mirror), on this process, since the program started.  For tests of backend-only vectors. */
PETSC_EXTERN PetscErrorCode FusedKSPDebugGetHostArrayCount(PetscInt64 *count);
/* Side scopes of the active backend's second stream opened, and joins of it into the first (KSPFUSEDBICG's A^T side
   on the CUDA backend), on this process, since the program started; 0 on a backend with one stream */
PETSC_EXTERN PetscErrorCode FusedKSPDebugGetSideCounts(PetscInt64 *forks, PetscInt64 *joins);
