/* Shared parts of the fused solvers */
#include "ops/petscdevice.hpp"
#include "vec/vecfused.hpp"
#include "ksp/fusedcommon.hpp"
#include "pc/backendkernel.hpp"
#include <petsc/private/pcimpl.h>
#include <cstring>

namespace fusedksp
{

const char *const PCModeNames[] = {"none", "jacobi (fused into the kernels)", "general (PCApply)"};

PetscErrorCode KSPFusedPCHasTranspose(PC pc, PetscBool *has)
{
  PetscBool isksp, issplit;

  PetscFunctionBegin;
  PetscCall(PCApplyTransposeExists(pc, has));
  if (!*has) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(PetscObjectTypeCompare((PetscObject)pc, PCKSP, &isksp));
  PetscCall(PetscObjectTypeCompare((PetscObject)pc, PCFIELDSPLIT, &issplit));
  if (isksp) {
    KSP inner;
    PC  innerpc;

    PetscCall(PCKSPGetKSP(pc, &inner));
    PetscCall(KSPGetPC(inner, &innerpc));
    PetscCall(KSPFusedPCHasTranspose(innerpc, has));
  } else if (issplit && pc->setupcalled) {
    KSP     *sub;
    PetscInt nsub;

    PetscCall(PCFieldSplitGetSubKSP(pc, &nsub, &sub));
    for (PetscInt i = 0; i < nsub && *has; ++i) {
      PC subpc;

      PetscCall(KSPGetPC(sub[i], &subpc));
      PetscCall(KSPFusedPCHasTranspose(subpc, has));
    }
    PetscCall(PetscFree(sub));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPFusedPCMode(KSP ksp, Vec scratch, PCMode *mode, Vec *w)
{
  PC        pc;
  PetscBool none, jacobi;

  PetscFunctionBegin;
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(PetscObjectTypeCompare((PetscObject)pc, PCNONE, &none));
  PetscCall(PetscObjectTypeCompare((PetscObject)pc, PCJACOBI, &jacobi));
  *mode = none ? PCMode::NONE : (jacobi ? PCMode::JACOBI : PCMode::GENERAL);
  if (*mode == PCMode::JACOBI) {
    PetscInt n = -1, nw = -1;
    PetscCall(VecGetLocalSize(scratch, &n));
    if (*w) PetscCall(VecGetLocalSize(*w, &nw));
    if (n != nw) {
      PetscCall(VecDestroy(w));
      PetscCall(VecDuplicate(scratch, w));
    }
    PetscCall(VecSet(scratch, 1.0));
    PetscCall(PCApply(pc, scratch, *w));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode KSPFusedGetSolveCounters(KSP ksp, SolveCounters **counters);

PetscErrorCode KSPFusedPCIsKernel(KSP ksp, PetscBool *yes)
{
  PC           pc;
  Mat          A;
  MatNullSpace ns = nullptr, tns = nullptr;
  PetscBool    kernel, fused     = PETSC_FALSE;

  PetscFunctionBegin;
  *yes = PETSC_FALSE;
  if (PetscDefined(USE_COMPLEX)) PetscFunctionReturn(PETSC_SUCCESS); /* the kernel's transpose is not the Hermitian one */
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(PCBackendKernel(pc, &kernel));
  if (!kernel) PetscFunctionReturn(PETSC_SUCCESS);
  if (ksp->vec_sol) PetscCall(VecIsFused(ksp->vec_sol, &fused));
  PetscCall(KSPGetOperators(ksp, &A, NULL));
  PetscCall(MatGetNullSpace(A, &ns));
  PetscCall(MatGetTransposeNullSpace(A, &tns));
  *yes = fused && !ns && !tns ? PETSC_TRUE : PETSC_FALSE;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPFusedPCKernelKey(KSP ksp, std::vector<const void *> *key)
{
  PetscBool kernel;

  PetscFunctionBegin;
  PetscCall(KSPFusedPCIsKernel(ksp, &kernel));
  if (kernel) PetscCall(PCBackendKernelKey(ksp->pc, key));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* KSP_PCApply(), or with transpose KSP_PCApplyHermitianTranspose(), counted with the copies it made; a PC that is a
   kernel of the backend (KSPFusedPCIsKernel()) is applied by the kernel itself, without PCApply()'s host-side work,
   so that it can be recorded in a graph */
static PetscErrorCode ApplyPCCounted(KSP ksp, PetscBool transpose, Vec x, Vec y)
{
  SolveCounters *c;
  PetscBool      kernel;

  PetscFunctionBegin;
  PetscCall(KSPFusedGetSolveCounters(ksp, &c));
  PetscCall(KSPFusedPCIsKernel(ksp, &kernel));
  if (kernel) {
    PetscCall(PCBackendKernelApply(ksp->pc, transpose == ksp->transpose_solve ? PETSC_FALSE : PETSC_TRUE, x, y));
    c->pc_applies++;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
#if defined(PETSC_USE_LOG)
  const PetscLogDouble copies = petsc_ctog_ct + petsc_gtoc_ct, bytes = petsc_ctog_sz + petsc_gtoc_sz;
#endif
  if (transpose)
    PetscCall(KSP_PCApplyHermitianTranspose(ksp, x, y));
  else
    PetscCall(KSP_PCApply(ksp, x, y));
#if defined(PETSC_USE_LOG)
  c->pc_copies += petsc_ctog_ct + petsc_gtoc_ct - copies;
  c->pc_bytes += petsc_ctog_sz + petsc_gtoc_sz - bytes;
#endif
  c->pc_applies++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPFusedApplyPC(KSP ksp, Vec x, Vec y)
{
  PetscFunctionBegin;
  PetscCall(ApplyPCCounted(ksp, PETSC_FALSE, x, y));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPFusedApplyPCTranspose(KSP ksp, Vec x, Vec y)
{
  PetscFunctionBegin;
  PetscCall(ApplyPCCounted(ksp, PETSC_TRUE, x, y));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* z = w .* r | PCApply (transpose: PCApplyTranspose) | z = r; Jacobi is symmetric */
static PetscErrorCode PCApplyMode(KSP ksp, PCMode mode, PetscBool transpose, Vec w, Vec r, Vec z)
{
  PetscFunctionBegin;
  switch (mode) {
  case PCMode::NONE:
    PetscCall(VecCopy(r, z));
    break;
  case PCMode::JACOBI:
    PetscCall(VecPointwiseMult(z, w, r));
    break;
  case PCMode::GENERAL:
    PetscCall(ApplyPCCounted(ksp, transpose, r, z));
    break;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPFusedPCApply(KSP ksp, PCMode mode, Vec w, Vec r, Vec z)
{
  PetscFunctionBegin;
  PetscCall(PCApplyMode(ksp, mode, PETSC_FALSE, w, r, z));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPFusedPCApplyTranspose(KSP ksp, PCMode mode, Vec w, Vec r, Vec z)
{
  PetscFunctionBegin;
  PetscCall(PCApplyMode(ksp, mode, PETSC_TRUE, w, r, z));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscBool KSPFusedStatusStops(KSP ksp, RecurrenceStatus status)
{
  switch (status) {
  case RecurrenceStatus::OK:
    return PETSC_FALSE;
  case RecurrenceStatus::INDEFINITE_MAT:
    ksp->reason = KSP_DIVERGED_INDEFINITE_MAT;
    break;
  case RecurrenceStatus::INDEFINITE_PC:
    ksp->reason = KSP_DIVERGED_INDEFINITE_PC;
    break;
  case RecurrenceStatus::BREAKDOWN:
    ksp->reason = KSP_DIVERGED_BREAKDOWN;
    break;
  case RecurrenceStatus::NANORINF:
    ksp->reason = KSP_DIVERGED_NANORINF;
    break;
  }
  return PETSC_TRUE;
}

PetscErrorCode KSPFusedCheckPCFailed(KSP ksp)
{
  PCFailedReason pcreason;

  PetscFunctionBegin;
  if (ksp->reason != KSP_DIVERGED_NANORINF) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(PCReduceFailedReason(ksp->pc));
  PetscCall(PCGetFailedReason(ksp->pc, &pcreason));
  PetscCall(VecFlag(ksp->vec_sol, pcreason));
  if (pcreason) ksp->reason = KSP_DIVERGED_PC_FAILED;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPFusedMonitorAndTest(KSP ksp, PetscInt it, PetscReal rnorm)
{
  PetscFunctionBegin;
  PetscCall(PetscObjectSAWsTakeAccess((PetscObject)ksp));
  ksp->its   = it;
  ksp->rnorm = rnorm;
  PetscCall(PetscObjectSAWsGrantAccess((PetscObject)ksp));
  PetscCall(KSPLogResidualHistory(ksp, rnorm));
  PetscCall(KSPMonitor(ksp, it, rnorm));
  if (PetscIsInfOrNanReal(rnorm))
    ksp->reason = KSP_DIVERGED_NANORINF;
  else
    PetscCall((*ksp->converged)(ksp, it, rnorm, &ksp->reason, ksp->cnvP));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscInt KSPFusedNormDot(KSP ksp, PetscInt preconditioned, PetscInt unpreconditioned, PetscInt natural)
{
  switch (ksp->normtype) {
  case KSP_NORM_PRECONDITIONED:
    return preconditioned;
  case KSP_NORM_UNPRECONDITIONED:
    return unpreconditioned;
  case KSP_NORM_NATURAL:
    return natural;
  default:
    return -1;
  }
}

PetscReal KSPFusedNormOf(const PetscScalar *d, PetscInt dot)
{
  return dot >= 0 ? PetscSqrtReal(PetscAbsScalar(d[dot])) : 0;
}

PetscErrorCode KSPFusedTrueResidualConverged(KSP ksp, PCMode mode, Vec w, PetscBool leftpc, Vec r, Vec z, PetscReal *truenorm, PetscBool *ok)
{
  Mat A;

  PetscFunctionBegin;
  *ok = PETSC_TRUE;
  if (ksp->converged != KSPConvergedDefault || ksp->normtype == KSP_NORM_NONE) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(KSPGetOperators(ksp, &A, NULL));
  PetscCall(KSP_MatMult(ksp, A, ksp->vec_sol, r));
  PetscCall(VecAYPX(r, -1.0, ksp->vec_rhs));
  if (leftpc) PetscCall(KSPFusedPCApply(ksp, mode, w, r, z));
  switch (ksp->normtype) {
  case KSP_NORM_PRECONDITIONED:
    PetscCall(VecNorm(leftpc ? z : r, NORM_2, truenorm));
    break;
  case KSP_NORM_NATURAL: {
    PetscScalar rz;
    PetscCall(VecDot(r, z, &rz));
    *truenorm = PetscSqrtReal(PetscAbsScalar(rz));
  } break;
  default:
    PetscCall(VecNorm(r, NORM_2, truenorm));
  }
  /* the tolerance KSPConvergedDefault() applies (it set ksp->ttol at iteration 0), strictly: a true residual just
     above it is replaced too, and the few iterations that then take it below are the price of "converged" */
  if (ksp->reason == KSP_CONVERGED_ATOL || ksp->reason == KSP_CONVERGED_RTOL) *ok = (*truenorm <= ksp->ttol) ? PETSC_TRUE : PETSC_FALSE;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscBool KSPFusedTrueResidualStagnates(KSP ksp, PetscReal truenorm, TrueResidualGuard *guard)
{
  if (guard->best > 0 && truenorm >= 0.9 * guard->best)
    guard->stuck++;
  else
    guard->stuck = 0;
  if (guard->best == 0 || truenorm < guard->best) guard->best = truenorm;
  const PetscBool stagnates = guard->stuck >= 3 ? PETSC_TRUE : PETSC_FALSE;
  if (stagnates) {
    ksp->reason = KSP_DIVERGED_BREAKDOWN;
    (void)PetscInfo(ksp, "True residual %g stagnates above the tolerance after a residual replacement: the tolerance is below the attainable accuracy\n", (double)truenorm);
  }
  return stagnates;
}

PetscErrorCode KSPFusedTrueResidualReplace(KSP ksp, PCMode mode, Vec w, PetscBool leftpc, Vec r, Vec z, TrueResidualGuard *guard, PetscReal *truenorm, PetscBool *replace)
{
  PetscBool      ok;
  SolveCounters *counters;

  PetscFunctionBegin;
  *replace = PETSC_FALSE;
  PetscCall(KSPFusedTrueResidualConverged(ksp, mode, w, leftpc, r, z, truenorm, &ok));
  if (ok || (guard && KSPFusedTrueResidualStagnates(ksp, *truenorm, guard))) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(KSPFusedGetSolveCounters(ksp, &counters));
  counters->replacements++;
  ksp->reason = KSP_CONVERGED_ITERATING;
  *replace    = PETSC_TRUE;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPFusedRightOperator(KSP ksp, PCMode mode, Vec w, Mat A, Vec in, Vec out, Vec work)
{
  PetscFunctionBegin;
  switch (mode) {
  case PCMode::NONE:
    PetscCall(OpsApplyOperator(A, nullptr, nullptr, in, out, nullptr, 0, nullptr, nullptr));
    break;
  case PCMode::JACOBI:
    PetscCall(OpsApplyOperator(A, nullptr, w, in, out, work, 0, nullptr, nullptr));
    break;
  case PCMode::GENERAL:
    PetscCall(KSPFusedApplyPC(ksp, in, work));
    PetscCall(OpsApplyOperator(A, nullptr, nullptr, work, out, nullptr, 0, nullptr, nullptr));
    break;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPFusedResidualNorm(KSP ksp, Mat A, Vec r, Vec z, PCMode mode, Vec w, SolveCounters *counters, PetscReal *rho)
{
  const OpDot self = {DotKind::DOT_SELF, nullptr};
  PetscScalar rr;

  PetscFunctionBegin;
  PetscCall(KSP_MatMult(ksp, A, ksp->vec_sol, r));
  PetscCall(VecAYPX(r, -1.0, ksp->vec_rhs));
  if (z) PetscCall(KSPFusedPCApply(ksp, mode, w, r, z));
  PetscCall(OpsDots(nullptr, z ? z : r, 1, &self, &rr));
  PetscCall(OpsAllreduce(PetscObjectComm((PetscObject)ksp), &rr, 1, counters));
  *rho = PetscSqrtReal(PetscAbsScalar(rr));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPFusedCycleTest(KSP ksp, PetscInt its, PetscReal rho, PetscBool *stop)
{
  PetscFunctionBegin;
  if (its == 0)
    PetscCall(KSPFusedMonitorAndTest(ksp, 0, ksp->normtype == KSP_NORM_NONE ? 0.0 : rho));
  else {
    ksp->rnorm = rho;
    if (ksp->normtype != KSP_NORM_NONE) {
      if (PetscIsInfOrNanReal(rho))
        ksp->reason = KSP_DIVERGED_NANORINF;
      else
        PetscCall((*ksp->converged)(ksp, its, rho, &ksp->reason, ksp->cnvP));
    }
  }
  if (!ksp->reason && its >= ksp->max_it) ksp->reason = KSP_DIVERGED_ITS;
  *stop = ksp->reason || rho == 0 ? PETSC_TRUE : PETSC_FALSE;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPFusedRightUpdate(KSP ksp, PCMode mode, Vec w, PetscInt k, const PetscScalar *negy, const Vec *V, Vec x, Vec T, Vec T2)
{
  PetscFunctionBegin;
  if (mode == PCMode::NONE) { /* x -= sum_j (-y_j) v_j in one kernel */
    PetscCall(OpsMAXPYScale(k, negy, V, x, 1.0, nullptr, nullptr));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(VecSet(T, 0.0));
  PetscCall(OpsMAXPYScale(k, negy, V, T, 1.0, nullptr, nullptr));
  PetscCall(KSPFusedPCApply(ksp, mode, w, T, T2));
  PetscCall(VecAXPY(x, 1.0, T2));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPFusedCycleEnd(KSP ksp, PCMode mode, Vec w, PetscBool leftpc, Vec T, Vec T2, PetscInt k, PetscInt its, TrueResidualGuard *guard, PetscReal *truenorm, PetscBool *replaced, PetscBool *stop)
{
  PetscFunctionBegin;
  *replaced = PETSC_FALSE;
  *stop     = PETSC_TRUE;
  if (ksp->reason < 0) PetscFunctionReturn(PETSC_SUCCESS);
  if (ksp->reason > 0) {
    PetscCall(KSPFusedTrueResidualReplace(ksp, mode, w, leftpc, T, T2, guard, truenorm, replaced));
    if (!*replaced) PetscFunctionReturn(PETSC_SUCCESS);
  }
  if (k == 0) {
    ksp->reason = KSP_DIVERGED_BREAKDOWN;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  if (its >= ksp->max_it) {
    ksp->reason = KSP_DIVERGED_ITS;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  *stop = PETSC_FALSE;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPFusedViewCommon(KSP ksp, PetscViewer viewer, PCMode mode, const char *kernels)
{
  PetscBool      ascii;
  char           backend[PETSC_MAX_PATH_LEN], warning[PETSC_MAX_PATH_LEN];
  SolveCounters *c;

  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERASCII, &ascii));
  if (!ascii) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(KSPFusedGetSolveCounters(ksp, &c));
  PetscCall(BackendDescription(ActiveBackend(), PETSC_TRUE, backend, sizeof(backend)));
  PetscCall(DeviceSharingWarning(warning, sizeof(warning)));
  PetscCall(PetscViewerASCIIPrintf(viewer, "  FusedKSP backend: %s\n", backend));
  if (warning[0]) PetscCall(PetscViewerASCIIPrintf(viewer, "  %s\n", warning));
  PetscCall(PetscViewerASCIIPrintf(viewer, "  fused kernels: %s\n", kernels));
  if (ksp->vec_sol) {
    PetscBool fused, petscdevice;

    PetscCall(VecIsFused(ksp->vec_sol, &fused));
    PetscCall(VecIsPETScDevice(ksp->vec_sol, &petscdevice));
    if (fused)
      PetscCall(PetscViewerASCIIPrintf(viewer, "  vectors: %s, the fused kernels on their backend arrays\n", ((PetscObject)ksp->vec_sol)->type_name));
    else if (petscdevice) {
      PetscCall(PetscViewerASCIIPrintf(viewer, "  vectors: PETSc's %s, the fused kernels on their device arrays (no copy)\n", ((PetscObject)ksp->vec_sol)->type_name));
      if (ksp->pc && ksp->pc->mat) {
        PetscBool   read, sell;
        const char *why;

        PetscCall(MatIsPETScDevice(ksp->pc->mat, &read, &sell, &why));
        PetscBool mpi;

        PetscCall(PetscObjectTypeCompare((PetscObject)ksp->pc->mat, MATMPIAIJCUSPARSE, &mpi));
        if (read && mpi)
          PetscCall(PetscViewerASCIIPrintf(viewer, "  operator: PETSc's %s, the fused products on its diagonal block (%s), its off-diagonal block's rows and the halo exchange on the backend\n", ((PetscObject)ksp->pc->mat)->type_name,
                                           sell ? "a SELL-P copy made on the device" : "PETSc's CSR arrays in place"));
        else if (read && sell)
          PetscCall(PetscViewerASCIIPrintf(viewer, "  operator: PETSc's %s, the fused products on a SELL-P copy made on the device\n", ((PetscObject)ksp->pc->mat)->type_name));
        else
          PetscCall(
              PetscViewerASCIIPrintf(viewer, "  operator: %s, its MatMult() and the dot products apart (%s)\n", ((PetscObject)ksp->pc->mat)->type_name, why ? why : "the fused products read PETSc's seqaijcusparse and mpiaijcusparse, not this type"));
      }
    } else
      PetscCall(PetscViewerASCIIPrintf(viewer, "  vectors: %s, the fused operations as PETSc's vector operations (not fused)\n", ((PetscObject)ksp->vec_sol)->type_name));
  }
  PetscCall(PetscViewerASCIIPrintf(viewer, "  preconditioner in the kernels: %s\n", PCModeNames[(int)mode]));
  PetscCall(PetscViewerASCIIPrintf(viewer, "  last solve: %" PetscInt_FMT " global reductions, %" PetscInt_FMT " residual replacements\n", c->reductions, c->replacements));
  if (mode == PCMode::GENERAL) {
    const char *name;

    PetscCall(FusedKSPGetBackendName(&name));
    if (!c->pc_applies)
      PetscCall(PetscViewerASCIIPrintf(viewer, "  PCApply(): not applied yet\n"));
    else if (ActiveBackend()->host_memory)
      PetscCall(PetscViewerASCIIPrintf(viewer, "  PCApply(): %" PetscInt_FMT " applications, on the %s backend in host memory\n", c->pc_applies, name));
    else if (c->pc_copies == 0)
      PetscCall(PetscViewerASCIIPrintf(viewer, "  PCApply(): %" PetscInt_FMT " applications, on the %s backend: no host<->device vector copy (rank 0)\n", c->pc_applies, name));
    else
      PetscCall(PetscViewerASCIIPrintf(viewer, "  PCApply(): %" PetscInt_FMT " applications, parts on the host: %.3g host<->device vector copies and %.3g bytes per application (rank 0; -log_view: FusedCopyToHost, FusedCopyToDev)\n", c->pc_applies,
                                       (double)(c->pc_copies / c->pc_applies), (double)(c->pc_bytes / c->pc_applies)));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPFusedComposePointer(KSP ksp, const char *name, void *p)
{
  PetscContainer c = NULL;

  PetscFunctionBegin;
  if (p) {
    PetscCall(PetscContainerCreate(PetscObjectComm((PetscObject)ksp), &c));
    PetscCall(PetscContainerSetPointer(c, p));
  }
  PetscCall(PetscObjectCompose((PetscObject)ksp, name, (PetscObject)c));
  PetscCall(PetscContainerDestroy(&c));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPFusedQueryPointer(KSP ksp, const char *name, const char *missing, void **p)
{
  PetscContainer c;

  PetscFunctionBegin;
  PetscCall(PetscObjectQuery((PetscObject)ksp, name, (PetscObject *)&c));
  PetscCheck(c, PetscObjectComm((PetscObject)ksp), PETSC_ERR_PLIB, "%s", missing);
  PetscCall(PetscContainerGetPointer(c, p));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPFusedComposeMethods(KSP ksp, PetscInt n, const KSPFusedMethod methods[], PetscBool compose)
{
  PetscFunctionBegin;
  for (PetscInt i = 0; i < n; ++i) PetscCall(PetscObjectComposeFunction((PetscObject)ksp, methods[i].name, compose ? methods[i].fn : NULL));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode KSPFusedGetSolveCounters(KSP ksp, SolveCounters **counters)
{
  PetscFunctionBegin;
  PetscCall(KSPFusedQueryPointer(ksp, "FusedKSPSolveCounters", "No solve counters", (void **)counters));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* KSPFusedGetReductionCount() and KSPFusedGetResidualReplacementCount(): the counter `Count` of the last solve */
template <PetscInt SolveCounters::*Count> static PetscErrorCode KSPFusedGetCount_Fused(KSP ksp, PetscInt *count)
{
  SolveCounters *counters;

  PetscFunctionBegin;
  PetscCall(KSPFusedGetSolveCounters(ksp, &counters));
  *count = counters->*Count;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The methods composed with the solve counters */
static const KSPFusedMethod CounterMethods[] = {
    {"KSPFusedGetReductionCount_C", (PetscErrorCodeFn *)KSPFusedGetCount_Fused<&SolveCounters::reductions>},
    {"KSPFusedGetResidualReplacementCount_C", (PetscErrorCodeFn *)KSPFusedGetCount_Fused<&SolveCounters::replacements>},
};

PetscErrorCode KSPFusedCreateCommon(KSP ksp, void *data, SolveCounters *counters, const KSPFusedOps &ops, std::initializer_list<KSPFusedNorm> norms)
{
  PetscFunctionBegin;
  ksp->data                = data;
  ksp->ops->setup          = ops.setup;
  ksp->ops->solve          = ops.solve;
  ksp->ops->destroy        = ops.destroy;
  ksp->ops->view           = ops.view;
  ksp->ops->setfromoptions = ops.setfromoptions;
  ksp->ops->reset          = ops.reset;
  ksp->ops->buildsolution  = ops.buildsolution ? ops.buildsolution : KSPBuildSolutionDefault;
  ksp->ops->buildresidual  = KSPBuildResidualDefault;
  for (const KSPFusedNorm &norm : norms) {
    PetscCall(KSPSetSupportedNorm(ksp, norm.type, norm.side, &norm == norms.begin() ? 3 : 2));
    PetscCall(KSPSetSupportedNorm(ksp, KSP_NORM_NONE, norm.side, 1));
  }
  PetscCall(KSPFusedComposePointer(ksp, "FusedKSPSolveCounters", counters));
  PetscCall(KSPFusedComposeMethods(ksp, PETSC_STATIC_ARRAY_LENGTH(CounterMethods), CounterMethods, PETSC_TRUE));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode KSPFusedDestroyCommon(KSP ksp, Vec *w)
{
  PetscFunctionBegin;
  PetscCall(VecDestroy(w));
  PetscCall(KSPFusedComposePointer(ksp, "FusedKSPSolveCounters", NULL));
  PetscCall(KSPFusedComposeMethods(ksp, PETSC_STATIC_ARRAY_LENGTH(CounterMethods), CounterMethods, PETSC_FALSE));
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace fusedksp

/*@
  KSPFusedGetReductionCount - The number of global reductions (packed `MPI_Allreduce` calls, or
  host-side sums on one process) the last `KSPSolve()` of a FusedKSP solver made.

  Not Collective

  Input Parameter:
. ksp - a FusedKSP solver (`KSPFUSEDCG`, `KSPFUSEDBCGS`, `KSPFUSEDSGMRES`, `KSPFUSEDCAGMRES`, `KSPFUSEDBICG`)

  Output Parameter:
. count - the number of reductions

  Level: advanced

.seealso: `KSPFUSEDCG`, `KSPFUSEDBCGS`, `KSPFUSEDSGMRES`
@*/
PetscErrorCode KSPFusedGetReductionCount(KSP ksp, PetscInt *count)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(ksp, KSP_CLASSID, 1);
  PetscUseMethod(ksp, "KSPFusedGetReductionCount_C", (KSP, PetscInt *), (ksp, count));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*@
  KSPFusedGetResidualReplacementCount - The number of residual replacements the last `KSPSolve()` of a
  FusedKSP solver made: each time the recurrence residual met the convergence test but the true residual
  b - A x did not, the residual was replaced by the true one and the iteration went on from it.

  Not Collective

  Input Parameter:
. ksp - a FusedKSP solver (`KSPFUSEDCG`, `KSPFUSEDBCGS`, `KSPFUSEDSGMRES`, `KSPFUSEDCAGMRES`, `KSPFUSEDBICG`)

  Output Parameter:
. count - the number of replacements

  Level: advanced

.seealso: `KSPFusedGetReductionCount()`, `KSPFUSEDCG`, `KSPFUSEDBCGS`, `KSPFUSEDSGMRES`
@*/
PetscErrorCode KSPFusedGetResidualReplacementCount(KSP ksp, PetscInt *count)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(ksp, KSP_CLASSID, 1);
  PetscAssertPointer(count, 2);
  PetscUseMethod(ksp, "KSPFusedGetResidualReplacementCount_C", (KSP, PetscInt *), (ksp, count));
  PetscFunctionReturn(PETSC_SUCCESS);
}
