static char help[] = "Checks the standard Vec operations of VECFUSED against VECSTANDARD (the device versions with\n\
-fused_backend cuda or kokkos, PETSc's host operations with the host backend).\n\
For each global size, random vectors (seeded, in [-1, 1]) are built as VECSTANDARD references and copied\n\
into VECFUSED vectors; every operation runs on both, pure outputs filled with NaN first, and every\n\
vector is compared afterwards (relative 1e-12 of its largest entry) as well as every reduction\n\
(1e-10 relative to |x||y| for dot products, to the value for norms).  With the cuda or kokkos backend the\n\
backend counters must show the device path (kernels launched, no host->device copy, one\n\
device->host copy per reduction); with the host backend no backend work at all; operations\n\
with a plain VECSTANDARD operand must fall back to the host (no kernel).  VecDuplicate() keeps an operation set with\n\
VecSetOperation() (as VECSTANDARD does).  With -fused_debug_mirror the host backend's kernels run on arrays of\n\
their own (kernels counted, no copies for reductions).  Host arrays allocated on first use (cuda, -fused_debug_mirror):\n\
a new vector reads as zeros on both sides, a vector used only by the backend gets no host array and no host<->device\n\
copy, and every host path (VecGetArrayRead, VecView, VecLoad, VecSetValues + assembly, VecGetValues, VecPlaceArray,\n\
VecReplaceArray, VecGetLocalVector, VecSetType) sees the right values; the offload mask says where they are.\n\
Options:\n\
  -sizes <0,1,31,32,33,1000,1000003>: global vector sizes\n\
  -nvs <1,3,8,9,16,17,32,33,70>: numbers of vectors of VecMAXPY / VecMDot\n\n";

#include <fusedksp.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define VEC_RTOL 1e-12
#define DOT_RTOL 1e-10
#define NPOOL 5   /* distinct vectors the multi-vector operations cycle through */
#define MAXNV 128 /* most vectors of one VecMAXPY / VecMDot                      */
#define MAXSIZES 32

/* Which work vectors an operation writes without reading (filled with NaN first) */
enum { P_X = 1, P_Y = 2, P_Z = 4, P_W = 8 };

/* What the backend counters must show for the fused operation */
typedef enum {
  DEVICE,  /* all operands fused: kernels on the device (CUDA), nothing on the host backend */
  FALLBACK /* a plain operand: the host operation, no kernel                                 */
} Path;

typedef struct {
  MPI_Comm   comm;
  PetscBool  device; /* the backend runs the operations with its own kernels (cuda, kokkos), not PETSc's host ones */
  PetscBool  mirror; /* -fused_debug_mirror: the host backend's kernels on arrays of their own (reductions copy nothing) */
  PetscBool  lazy;   /* fused vectors allocate their host array on first use (the backend's memory is not host memory) */
  PetscInt   n, nlocal;
  PetscInt   checks, failures;
  PetscInt64 c0[3]; /* backend counters before the fused operation */
} Tester;

/* The vectors of one flavor (reference VECSTANDARD or VECFUSED) */
typedef struct {
  Vec x0, y0, z0, w0, num0, div0; /* originals */
  Vec x, y, z, w;                 /* work vectors */
  Vec pool[NPOOL];
} Operands;

/* Records one check whose outcome is the same on every rank; prints the failing operation */
static PetscErrorCode Record(Tester *t, PetscBool ok, const char *label, const char *what, PetscReal diff, PetscReal tol)
{
  PetscFunctionBeginUser;
  t->checks++;
  if (!ok) {
    t->failures++;
    PetscCall(PetscPrintf(t->comm, "FAILED n=%" PetscInt_FMT " %s: %s (difference %g, tolerance %g)\n", t->n, label, what, (double)diff, (double)tol));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* This rank's part of the comparison of fused with ref: s = {max |difference|, max |ref|, NaN mismatch} */
static PetscErrorCode LocalDiff(Vec ref, Vec fused, PetscReal s[3])
{
  const PetscScalar *r, *f;
  PetscInt           n;

  PetscFunctionBeginUser;
  s[0] = s[1] = s[2] = 0;
  PetscCall(VecGetLocalSize(ref, &n));
  PetscCall(VecGetArrayRead(ref, &r));
  PetscCall(VecGetArrayRead(fused, &f));
  for (PetscInt i = 0; i < n; ++i) {
    if (PetscIsNanScalar(r[i]) != PetscIsNanScalar(f[i]))
      s[2] = 1;
    else if (!PetscIsNanScalar(r[i])) {
      s[0] = PetscMax(s[0], PetscAbsScalar(r[i] - f[i]));
      s[1] = PetscMax(s[1], PetscAbsScalar(r[i]));
    }
  }
  PetscCall(VecRestoreArrayRead(ref, &r));
  PetscCall(VecRestoreArrayRead(fused, &f));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Records a global comparison (LocalDiff maxima over the ranks): equal to VEC_RTOL of the largest
   reference entry, and no NaN left in the fused vector                                         */
static PetscErrorCode RecordDiff(Tester *t, const char *label, const char *name, const PetscReal s[3])
{
  PetscFunctionBeginUser;
  PetscCall(Record(t, (PetscBool)(s[2] == 0 && s[0] <= VEC_RTOL * s[1]), label, s[2] ? "NaN mismatch" : name, s[0], VEC_RTOL * s[1]));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Collective comparison of one vector */
static PetscErrorCode CompareVec(Tester *t, const char *label, const char *name, Vec ref, Vec fused)
{
  PetscReal loc[3], glob[3];

  PetscFunctionBeginUser;
  PetscCall(LocalDiff(ref, fused, loc));
  PetscCallMPI(MPIU_Allreduce(loc, glob, 3, MPIU_REAL, MPIU_MAX, t->comm));
  PetscCall(RecordDiff(t, label, name, glob));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* fused[k] must equal ref[k] to DOT_RTOL * scale[k] (both 0 when the scale is 0) */
static PetscErrorCode CompareValues(Tester *t, const char *label, const char *what, PetscInt k, const PetscScalar ref[], const PetscScalar fused[], const PetscReal scale[])
{
  PetscReal diff = 0, tol = 0;
  PetscBool ok = PETSC_TRUE;

  PetscFunctionBeginUser;
  for (PetscInt j = 0; j < k; ++j) {
    const PetscReal d = PetscAbsScalar(ref[j] - fused[j]);

    if (!(d <= DOT_RTOL * scale[j])) ok = PETSC_FALSE;
    if (!(d <= diff)) {
      diff = d;
      tol  = DOT_RTOL * scale[j];
    }
  }
  PetscCall(Record(t, ok, label, what, diff, tol));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* A fused copy of a reference vector whose valid data lie with the backend (on the device with
   the CUDA backend): standard -> fused is a host copy, fused -> fused a backend copy          */
static PetscErrorCode FusedCopy(Vec ref, Vec *fused)
{
  Vec      stage;
  PetscInt n;

  PetscFunctionBeginUser;
  PetscCall(VecGetSize(ref, &n));
  PetscCall(VecCreate(PetscObjectComm((PetscObject)ref), &stage));
  PetscCall(VecSetSizes(stage, PETSC_DECIDE, n));
  PetscCall(VecSetType(stage, VECFUSED));
  PetscCall(VecDuplicate(stage, fused));
  PetscCall(VecCopy(ref, stage));
  PetscCall(VecCopy(stage, *fused));
  PetscCall(VecDestroy(&stage));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Work vectors from the originals; the flagged ones filled with NaN */
static PetscErrorCode Load(Operands *v, int poison)
{
  PetscFunctionBeginUser;
  PetscCall(VecCopy(v->x0, v->x));
  PetscCall(VecCopy(v->y0, v->y));
  PetscCall(VecCopy(v->z0, v->z));
  PetscCall(VecCopy(v->w0, v->w));
  if (poison & P_X) PetscCall(VecSet(v->x, NAN));
  if (poison & P_Y) PetscCall(VecSet(v->y, NAN));
  if (poison & P_Z) PetscCall(VecSet(v->z, NAN));
  if (poison & P_W) PetscCall(VecSet(v->w, NAN));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode Prepare(Operands *R, Operands *F, int poison)
{
  PetscFunctionBeginUser;
  PetscCall(Load(R, poison));
  PetscCall(Load(F, poison));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Call right before the fused operation */
static PetscErrorCode Start(Tester *t)
{
  PetscFunctionBeginUser;
  PetscCall(FusedKSPGetBackendCounters(&t->c0[0], &t->c0[1], &t->c0[2]));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Right after the fused operation: the counters show the expected path on every rank (d2h:
   device->host copies of a device operation with local entries), and every work vector is
   compared (one reduction for all)                                                           */
static PetscErrorCode Finish(Tester *t, const char *label, Path path, PetscInt d2h, Operands *R, Operands *F)
{
  const char *names[] = {"x", "y", "z", "w"};
  PetscInt64  c[3], dl, dd, dh;
  PetscBool   ok;
  PetscReal   loc[13], glob[13]; /* counters wrong on some rank, then LocalDiff of x, y, z, w */
  char        what[256];

  PetscFunctionBeginUser;
  PetscCall(FusedKSPGetBackendCounters(&c[0], &c[1], &c[2]));
  dl = c[0] - t->c0[0];
  dd = c[1] - t->c0[1];
  dh = c[2] - t->c0[2];
  if (!t->device)
    ok = (PetscBool)(dl == 0 && dd == 0 && dh == 0);
  else if (path == FALLBACK)
    ok = (PetscBool)(dl == 0);
  else if (t->nlocal)
    ok = (PetscBool)(dl >= 1 && dd == (t->mirror ? 0 : d2h) && dh == 0);
  else /* the host backend's kernels run (and count) with no entries */
    ok = (PetscBool)((dl == 0 || t->mirror) && dd == 0 && dh == 0);
  PetscCall(PetscSNPrintf(what, sizeof(what), "backend counters: %" PetscInt64_FMT " launches, %" PetscInt64_FMT " device->host, %" PetscInt64_FMT " host->device (%s path, %" PetscInt_FMT " device->host expected)", dl, dd, dh,
                          path == DEVICE ? "device" : "fallback", d2h));
  loc[0] = ok ? 0 : 1;
  PetscCall(LocalDiff(R->x, F->x, &loc[1]));
  PetscCall(LocalDiff(R->y, F->y, &loc[4]));
  PetscCall(LocalDiff(R->z, F->z, &loc[7]));
  PetscCall(LocalDiff(R->w, F->w, &loc[10]));
  PetscCallMPI(MPIU_Allreduce(loc, glob, 13, MPIU_REAL, MPIU_MAX, t->comm));
  PetscCall(Record(t, (PetscBool)(glob[0] == 0), label, what, 0, 0));
  for (int k = 0; k < 4; ++k) PetscCall(RecordDiff(t, label, names[k], &glob[1 + 3 * k]));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Scale of <a, b> for the comparison: |a|_2 |b|_2 (bounds the sum of |a_i b_i|) */
static PetscErrorCode DotScale(Vec a, Vec b, PetscReal *scale)
{
  PetscReal na, nb;

  PetscFunctionBeginUser;
  PetscCall(VecNorm(a, NORM_2, &na));
  PetscCall(VecNorm(b, NORM_2, &nb));
  *scale = na * nb;
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode CreateVecs(MPI_Comm comm, PetscInt n, PetscRandom rnd, Operands *R, Operands *F)
{
  PetscScalar *a;
  PetscInt     lo, hi;
  Vec         *ref[] = {&R->x0, &R->y0, &R->z0, &R->w0};

  PetscFunctionBeginUser;
  for (int k = 0; k < 4; ++k) {
    PetscCall(VecCreate(comm, ref[k]));
    PetscCall(VecSetSizes(*ref[k], PETSC_DECIDE, n));
    PetscCall(VecSetType(*ref[k], VECSTANDARD));
    PetscCall(VecSetRandom(*ref[k], rnd));
  }
  /* numerator and divisor of VecPointwiseDivide: zeros at i % 5 == 0 in the divisor, of which
     the numerator shares those at i % 10 == 0 (0/0 -> 1 and x/0 -> 0 by PETSc's convention) */
  PetscCall(VecDuplicate(R->x0, &R->num0));
  PetscCall(VecDuplicate(R->y0, &R->div0));
  PetscCall(VecCopy(R->x0, R->num0));
  PetscCall(VecCopy(R->y0, R->div0));
  PetscCall(VecGetOwnershipRange(R->x0, &lo, &hi));
  PetscCall(VecGetArray(R->num0, &a));
  for (PetscInt i = lo; i < hi; ++i)
    if (i % 10 == 0) a[i - lo] = 0;
  PetscCall(VecRestoreArray(R->num0, &a));
  PetscCall(VecGetArray(R->div0, &a));
  for (PetscInt i = lo; i < hi; ++i)
    if (i % 5 == 0) a[i - lo] = 0;
  PetscCall(VecRestoreArray(R->div0, &a));
  for (int k = 0; k < NPOOL; ++k) {
    PetscCall(VecDuplicate(R->x0, &R->pool[k]));
    PetscCall(VecSetRandom(R->pool[k], rnd));
  }
  PetscCall(VecDuplicate(R->x0, &R->x));
  PetscCall(VecDuplicate(R->x0, &R->y));
  PetscCall(VecDuplicate(R->x0, &R->z));
  PetscCall(VecDuplicate(R->x0, &R->w));

  PetscCall(FusedCopy(R->x0, &F->x0));
  PetscCall(FusedCopy(R->y0, &F->y0));
  PetscCall(FusedCopy(R->z0, &F->z0));
  PetscCall(FusedCopy(R->w0, &F->w0));
  PetscCall(FusedCopy(R->num0, &F->num0));
  PetscCall(FusedCopy(R->div0, &F->div0));
  for (int k = 0; k < NPOOL; ++k) PetscCall(FusedCopy(R->pool[k], &F->pool[k]));
  PetscCall(VecDuplicate(F->x0, &F->x));
  PetscCall(VecDuplicate(F->x0, &F->y));
  PetscCall(VecDuplicate(F->x0, &F->z));
  PetscCall(VecDuplicate(F->x0, &F->w));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode DestroyVecs(Operands *v)
{
  PetscFunctionBeginUser;
  PetscCall(VecDestroy(&v->x0));
  PetscCall(VecDestroy(&v->y0));
  PetscCall(VecDestroy(&v->z0));
  PetscCall(VecDestroy(&v->w0));
  PetscCall(VecDestroy(&v->num0));
  PetscCall(VecDestroy(&v->div0));
  PetscCall(VecDestroy(&v->x));
  PetscCall(VecDestroy(&v->y));
  PetscCall(VecDestroy(&v->z));
  PetscCall(VecDestroy(&v->w));
  for (int k = 0; k < NPOOL; ++k) PetscCall(VecDestroy(&v->pool[k]));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The elementwise operations */
static PetscErrorCode TestUpdates(Tester *t, Operands *R, Operands *F)
{
  const PetscScalar a = 0.7, b = -1.3, c = 2.1;

  PetscFunctionBeginUser;
  PetscCall(Prepare(R, F, 0));
  PetscCall(VecAXPY(R->y, a, R->x));
  PetscCall(Start(t));
  PetscCall(VecAXPY(F->y, a, F->x));
  PetscCall(Finish(t, "VecAXPY", DEVICE, 0, R, F));

  for (int k = 0; k < 2; ++k) {
    const PetscScalar beta = k ? -1.0 : b;

    PetscCall(Prepare(R, F, 0));
    PetscCall(VecAYPX(R->y, beta, R->x));
    PetscCall(Start(t));
    PetscCall(VecAYPX(F->y, beta, F->x));
    PetscCall(Finish(t, k ? "VecAYPX beta=-1" : "VecAYPX", DEVICE, 0, R, F));
  }

  /* VecAXPBY: general, beta = 0 (y not read), alpha = 0 (VecScale), alpha = beta = 0 (zero) */
  {
    const PetscScalar al[] = {a, a, 0, 0}, be[] = {b, 0, b, 0};
    const int         po[] = {0, P_Y, 0, P_Y};
    const char *const lb[] = {"VecAXPBY", "VecAXPBY beta=0", "VecAXPBY alpha=0", "VecAXPBY alpha=beta=0"};

    for (int k = 0; k < 4; ++k) {
      PetscCall(Prepare(R, F, po[k]));
      PetscCall(VecAXPBY(R->y, al[k], be[k], R->x));
      PetscCall(Start(t));
      PetscCall(VecAXPBY(F->y, al[k], be[k], F->x));
      PetscCall(Finish(t, lb[k], DEVICE, 0, R, F));
    }
  }

  /* VecAXPBYPCZ: general, alpha = 1, gamma = 0 (z not read) */
  {
    const PetscScalar al[] = {a, 1.0, a}, ga[] = {c, c, 0};
    const int         po[] = {0, 0, P_Z};
    const char *const lb[] = {"VecAXPBYPCZ", "VecAXPBYPCZ alpha=1", "VecAXPBYPCZ gamma=0"};

    for (int k = 0; k < 3; ++k) {
      PetscCall(Prepare(R, F, po[k]));
      PetscCall(VecAXPBYPCZ(R->z, al[k], b, ga[k], R->x, R->y));
      PetscCall(Start(t));
      PetscCall(VecAXPBYPCZ(F->z, al[k], b, ga[k], F->x, F->y));
      PetscCall(Finish(t, lb[k], DEVICE, 0, R, F));
    }
  }

  /* VecWAXPY: general, alpha = 1, alpha = -1, x == y */
  {
    const PetscScalar al[] = {a, 1.0, -1.0, a};
    const char *const lb[] = {"VecWAXPY", "VecWAXPY alpha=1", "VecWAXPY alpha=-1", "VecWAXPY x=y"};

    for (int k = 0; k < 4; ++k) {
      PetscCall(Prepare(R, F, P_W));
      PetscCall(VecWAXPY(R->w, al[k], R->x, k == 3 ? R->x : R->y));
      PetscCall(Start(t));
      PetscCall(VecWAXPY(F->w, al[k], F->x, k == 3 ? F->x : F->y));
      PetscCall(Finish(t, lb[k], DEVICE, 0, R, F));
    }
  }

  PetscCall(Prepare(R, F, 0));
  PetscCall(VecScale(R->x, b));
  PetscCall(Start(t));
  PetscCall(VecScale(F->x, b));
  PetscCall(Finish(t, "VecScale", DEVICE, 0, R, F));

  PetscCall(Prepare(R, F, P_X));
  PetscCall(VecScale(R->x, 0.0));
  PetscCall(Start(t));
  PetscCall(VecScale(F->x, 0.0));
  PetscCall(Finish(t, "VecScale alpha=0 (of NaN)", DEVICE, 0, R, F));

  PetscCall(Prepare(R, F, P_X));
  PetscCall(VecSet(R->x, c));
  PetscCall(Start(t));
  PetscCall(VecSet(F->x, c));
  PetscCall(Finish(t, "VecSet", DEVICE, 0, R, F));

  PetscCall(Prepare(R, F, P_X));
  PetscCall(VecSet(R->x, 0.0));
  PetscCall(Start(t));
  PetscCall(VecSet(F->x, 0.0));
  PetscCall(Finish(t, "VecSet 0", DEVICE, 0, R, F));

  PetscCall(Prepare(R, F, P_W));
  PetscCall(VecCopy(R->x, R->w));
  PetscCall(Start(t));
  PetscCall(VecCopy(F->x, F->w));
  PetscCall(Finish(t, "VecCopy", DEVICE, 0, R, F));

  PetscCall(Prepare(R, F, 0));
  PetscCall(VecSwap(R->x, R->y));
  PetscCall(Start(t));
  PetscCall(VecSwap(F->x, F->y));
  PetscCall(Finish(t, "VecSwap", DEVICE, 0, R, F));

  /* VecPointwiseMult: w = x.*y, x = x.*y, w = x.*x */
  PetscCall(Prepare(R, F, P_W));
  PetscCall(VecPointwiseMult(R->w, R->x, R->y));
  PetscCall(Start(t));
  PetscCall(VecPointwiseMult(F->w, F->x, F->y));
  PetscCall(Finish(t, "VecPointwiseMult", DEVICE, 0, R, F));

  PetscCall(Prepare(R, F, 0));
  PetscCall(VecPointwiseMult(R->x, R->x, R->y));
  PetscCall(Start(t));
  PetscCall(VecPointwiseMult(F->x, F->x, F->y));
  PetscCall(Finish(t, "VecPointwiseMult w=x", DEVICE, 0, R, F));

  PetscCall(Prepare(R, F, P_W));
  PetscCall(VecPointwiseMult(R->w, R->x, R->x));
  PetscCall(Start(t));
  PetscCall(VecPointwiseMult(F->w, F->x, F->x));
  PetscCall(Finish(t, "VecPointwiseMult x=y", DEVICE, 0, R, F));

  /* VecPointwiseDivide with zero divisors: w = x./y and y = x./y */
  for (int k = 0; k < 2; ++k) {
    PetscCall(Prepare(R, F, k ? 0 : P_W));
    PetscCall(VecCopy(R->num0, R->x));
    PetscCall(VecCopy(R->div0, R->y));
    PetscCall(VecCopy(F->num0, F->x));
    PetscCall(VecCopy(F->div0, F->y));
    PetscCall(VecPointwiseDivide(k ? R->y : R->w, R->x, R->y));
    PetscCall(Start(t));
    PetscCall(VecPointwiseDivide(k ? F->y : F->w, F->x, F->y));
    PetscCall(Finish(t, k ? "VecPointwiseDivide w=y (zero divisors)" : "VecPointwiseDivide (zero divisors)", DEVICE, 0, R, F));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* VecMAXPY, VecMDot, VecMTDot with nv vectors X[j] = pool[j % NPOOL] (repeats allowed) */
static PetscErrorCode TestMulti(Tester *t, Operands *R, Operands *F, PetscInt nv, PetscRandom rnd)
{
  Vec         XR[MAXNV], XF[MAXNV];
  PetscScalar alpha[MAXNV], vr[MAXNV], vf[MAXNV];
  PetscReal   scale[MAXNV];
  char        label[64];

  PetscFunctionBeginUser;
  for (PetscInt j = 0; j < nv; ++j) {
    XR[j] = R->pool[j % NPOOL];
    XF[j] = F->pool[j % NPOOL];
    PetscCall(PetscRandomGetValue(rnd, &alpha[j]));
  }
  PetscCall(PetscSNPrintf(label, sizeof(label), "VecMAXPY nv=%" PetscInt_FMT, nv));
  PetscCall(Prepare(R, F, 0));
  PetscCall(VecMAXPY(R->y, nv, alpha, XR));
  PetscCall(Start(t));
  PetscCall(VecMAXPY(F->y, nv, alpha, XF));
  PetscCall(Finish(t, label, DEVICE, 0, R, F));

  for (int k = 0; k < 2; ++k) {
    PetscCall(PetscSNPrintf(label, sizeof(label), "%s nv=%" PetscInt_FMT, k ? "VecMTDot" : "VecMDot", nv));
    PetscCall(Prepare(R, F, 0));
    for (PetscInt j = 0; j < nv; ++j) {
      vr[j] = vf[j] = NAN;
      PetscCall(DotScale(R->x, XR[j], &scale[j]));
    }
    if (k)
      PetscCall(VecMTDot(R->x, nv, XR, vr));
    else
      PetscCall(VecMDot(R->x, nv, XR, vr));
    PetscCall(Start(t));
    if (k)
      PetscCall(VecMTDot(F->x, nv, XF, vf));
    else
      PetscCall(VecMDot(F->x, nv, XF, vf));
    PetscCall(Finish(t, label, DEVICE, 1, R, F));
    PetscCall(CompareValues(t, label, "values", nv, vr, vf, scale));
  }

  /* a plain operand among the vectors: the host operation */
  XF[nv - 1] = R->pool[(nv - 1) % NPOOL];
  PetscCall(PetscSNPrintf(label, sizeof(label), "VecMAXPY nv=%" PetscInt_FMT " one plain", nv));
  PetscCall(Prepare(R, F, 0));
  PetscCall(VecMAXPY(R->y, nv, alpha, XR));
  PetscCall(Start(t));
  PetscCall(VecMAXPY(F->y, nv, alpha, XF));
  PetscCall(Finish(t, label, FALLBACK, 0, R, F));

  PetscCall(PetscSNPrintf(label, sizeof(label), "VecMDot nv=%" PetscInt_FMT " one plain", nv));
  PetscCall(Prepare(R, F, 0));
  for (PetscInt j = 0; j < nv; ++j) vr[j] = vf[j] = NAN;
  PetscCall(VecMDot(R->x, nv, XR, vr));
  PetscCall(Start(t));
  PetscCall(VecMDot(F->x, nv, XF, vf));
  PetscCall(Finish(t, label, FALLBACK, 0, R, F));
  PetscCall(CompareValues(t, label, "values", nv, vr, vf, scale));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* VecDot, VecTDot, VecNorm of every type (x was just loaded: no cached norm) */
static PetscErrorCode TestReductions(Tester *t, Operands *R, Operands *F)
{
  const NormType    types[] = {NORM_1, NORM_2, NORM_FROBENIUS, NORM_INFINITY, NORM_1_AND_2};
  const char *const names[] = {"VecNorm NORM_1", "VecNorm NORM_2", "VecNorm NORM_FROBENIUS", "VecNorm NORM_INFINITY", "VecNorm NORM_1_AND_2"};
  PetscScalar       dr, df;
  PetscReal         scale;

  PetscFunctionBeginUser;
  for (int k = 0; k < 3; ++k) {
    const char *label = k == 0 ? "VecDot" : k == 1 ? "VecTDot" : "VecDot x=y";

    PetscCall(Prepare(R, F, 0));
    PetscCall(DotScale(R->x, k == 2 ? R->x : R->y, &scale));
    dr = df = NAN;
    if (k == 1)
      PetscCall(VecTDot(R->x, R->y, &dr));
    else
      PetscCall(VecDot(R->x, k == 2 ? R->x : R->y, &dr));
    PetscCall(Start(t));
    if (k == 1)
      PetscCall(VecTDot(F->x, F->y, &df));
    else
      PetscCall(VecDot(F->x, k == 2 ? F->x : F->y, &df));
    PetscCall(Finish(t, label, DEVICE, 1, R, F));
    PetscCall(CompareValues(t, label, "value", 1, &dr, &df, &scale));
  }

  { /* VecDotNorm2: <x,y> and <y,y> in one fused pass, one device->host copy */
    PetscScalar r[2] = {NAN, NAN}, f[2] = {NAN, NAN};
    PetscReal   sc[2];

    PetscCall(Prepare(R, F, 0));
    PetscCall(DotScale(R->x, R->y, &sc[0]));
    PetscCall(DotScale(R->y, R->y, &sc[1]));
    PetscCall(VecDotNorm2(R->x, R->y, &r[0], &r[1]));
    PetscCall(Start(t));
    PetscCall(VecDotNorm2(F->x, F->y, &f[0], &f[1]));
    PetscCall(Finish(t, "VecDotNorm2", DEVICE, 1, R, F));
    PetscCall(CompareValues(t, "VecDotNorm2", "value", 2, r, f, sc));
  }

  for (int k = 0; k < 5; ++k) {
    PetscReal   nr[2] = {NAN, NAN}, nf[2] = {NAN, NAN};
    PetscScalar sr[2], sf[2];
    PetscReal   sc[2];
    const int   two = types[k] == NORM_1_AND_2;

    PetscCall(Prepare(R, F, 0));
    PetscCall(VecNorm(R->x, types[k], nr));
    PetscCall(Start(t));
    PetscCall(VecNorm(F->x, types[k], nf));
    PetscCall(Finish(t, names[k], DEVICE, two ? 2 : 1, R, F));
    for (int j = 0; j < 1 + two; ++j) {
      sr[j] = nr[j];
      sf[j] = nf[j];
      sc[j] = nr[j];
    }
    PetscCall(CompareValues(t, names[k], "value", 1 + two, sr, sf, sc));
  }

  /* a plain operand: the host operation */
  PetscCall(Prepare(R, F, 0));
  PetscCall(DotScale(R->x, R->y, &scale));
  dr = df = NAN;
  PetscCall(VecDot(R->x, R->y, &dr));
  PetscCall(Start(t));
  PetscCall(VecDot(F->x, R->y, &df));
  PetscCall(Finish(t, "VecDot plain y", FALLBACK, 0, R, F));
  PetscCall(CompareValues(t, "VecDot plain y", "value", 1, &dr, &df, &scale));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The split-phase reductions (the *_local operations): one PetscSplitReduction of a dot, a tdot,
   the norms, an mdot and an mtdot of nv vectors */
static PetscErrorCode TestSplit(Tester *t, Operands *R, Operands *F, PetscInt nv)
{
  const NormType types[] = {NORM_1, NORM_2, NORM_INFINITY, NORM_1_AND_2};
  Vec            XR[MAXNV], XF[MAXNV];
  PetscScalar    vr[2 * MAXNV + 7], vf[2 * MAXNV + 7];
  PetscReal      scale[2 * MAXNV + 7];
  Operands      *V[2] = {R, F};

  PetscFunctionBeginUser;
  for (PetscInt j = 0; j < nv; ++j) {
    XR[j] = R->pool[j % NPOOL];
    XF[j] = F->pool[j % NPOOL];
  }
  PetscCall(Prepare(R, F, 0));
  for (int s = 0; s < 2; ++s) {
    Vec         *X = s ? XF : XR;
    PetscReal    nrm[5];
    PetscScalar *v = s ? vf : vr;

    for (PetscInt k = 0; k < 2 * nv + 7; ++k) v[k] = NAN;
    for (int k = 0; k < 5; ++k) nrm[k] = NAN;
    if (s) PetscCall(Start(t));
    PetscCall(VecDotBegin(V[s]->x, V[s]->y, &v[0]));
    PetscCall(VecTDotBegin(V[s]->x, V[s]->y, &v[1]));
    for (int k = 0; k < 4; ++k) PetscCall(VecNormBegin(V[s]->x, types[k], &nrm[k]));
    PetscCall(VecMDotBegin(V[s]->x, nv, X, &v[7]));
    PetscCall(VecMTDotBegin(V[s]->x, nv, X, &v[7 + nv]));
    PetscCall(VecDotEnd(V[s]->x, V[s]->y, &v[0]));
    PetscCall(VecTDotEnd(V[s]->x, V[s]->y, &v[1]));
    for (int k = 0; k < 3; ++k) PetscCall(VecNormEnd(V[s]->x, types[k], &nrm[k]));
    PetscCall(VecNormEnd(V[s]->x, NORM_1_AND_2, &nrm[3]));
    PetscCall(VecMDotEnd(V[s]->x, nv, X, &v[7]));
    PetscCall(VecMTDotEnd(V[s]->x, nv, X, &v[7 + nv]));
    for (int k = 0; k < 5; ++k) v[2 + k] = nrm[k];
  }
  /* device->host copies: dot, tdot, 3 norms, NORM_1_AND_2 (2), mdot, mtdot */
  PetscCall(Finish(t, "split-phase reductions", DEVICE, 9, R, F));
  PetscCall(DotScale(R->x, R->y, &scale[0]));
  scale[1] = scale[0];
  for (int k = 2; k < 7; ++k) scale[k] = PetscAbsScalar(vr[k]);
  for (PetscInt j = 0; j < nv; ++j) PetscCall(DotScale(R->x, XR[j], &scale[7 + j]));
  for (PetscInt j = 0; j < nv; ++j) scale[7 + nv + j] = scale[7 + j];
  PetscCall(CompareValues(t, "split-phase reductions", "values (dot, tdot, norms 1, 2, inf, 1_and_2, mdot, mtdot)", 2 * nv + 7, vr, vf, scale));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Operations with a plain VECSTANDARD operand run the host operation */
/* A view set with VecSetOperation(): counts its calls */
static PetscInt       views;
static PetscErrorCode CountingView(Vec v, PetscViewer viewer)
{
  PetscFunctionBeginUser;
  (void)v;
  (void)viewer;
  views++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* An operation set on a vector with VecSetOperation() (as DMShell's users and the DMs do) carries over to its
   duplicates, as with VECSEQ/VECMPI */
static PetscErrorCode TestDuplicateOps(Tester *t, Operands *F)
{
  Vec         a, b;
  PetscViewer viewer;
  char        text[64];

  PetscFunctionBeginUser;
  PetscCall(VecDuplicate(F->x0, &a));
  PetscCall(VecSetOperation(a, VECOP_VIEW, (PetscErrorCodeFn *)CountingView));
  PetscCall(VecDuplicate(a, &b));
  views = 0;
  PetscCall(PetscViewerStringOpen(t->comm, text, sizeof(text), &viewer)); /* no header, no output */
  PetscCall(VecView(b, viewer));
  PetscCall(PetscViewerDestroy(&viewer));
  PetscCall(Record(t, (PetscBool)(views == 1), "VecDuplicate", "the duplicate keeps the view set with VecSetOperation()", (PetscReal)views, 1));
  PetscCall(VecDestroy(&b));
  PetscCall(VecDestroy(&a));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode TestMixed(Tester *t, Operands *R, Operands *F)
{
  Vec plain;

  PetscFunctionBeginUser;
  PetscCall(Prepare(R, F, 0));
  PetscCall(VecAXPY(R->y, 0.7, R->x));
  PetscCall(Start(t));
  PetscCall(VecAXPY(F->y, 0.7, R->x));
  PetscCall(Finish(t, "VecAXPY plain x", FALLBACK, 0, R, F));

  PetscCall(Prepare(R, F, P_W));
  PetscCall(VecPointwiseMult(R->w, R->x, R->y));
  PetscCall(Start(t));
  PetscCall(VecPointwiseMult(F->w, F->x, R->y));
  PetscCall(Finish(t, "VecPointwiseMult plain y", FALLBACK, 0, R, F));

  /* fused -> plain */
  PetscCall(Prepare(R, F, 0));
  PetscCall(VecDuplicate(R->x0, &plain));
  PetscCall(VecSet(plain, NAN));
  PetscCall(Start(t));
  PetscCall(VecCopy(F->x, plain));
  PetscCall(Finish(t, "VecCopy fused to plain", FALLBACK, 0, R, F));
  PetscCall(CompareVec(t, "VecCopy fused to plain", "plain target", R->x, plain));
  PetscCall(VecDestroy(&plain));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ---- host arrays allocated on first use ---- */

/* A check whose outcome may differ between the ranks: recorded as failed when it fails on any rank */
static PetscErrorCode RecordAll(Tester *t, PetscBool ok, const char *label, const char *what)
{
  PetscMPIInt bad = ok ? 0 : 1, any;

  PetscFunctionBeginUser;
  PetscCallMPI(MPIU_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, t->comm));
  PetscCall(Record(t, (PetscBool)!any, label, what, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Whether fused vectors allocate their host array on first use: a new vector's offload mask is
   PETSC_OFFLOAD_UNALLOCATED (else PETSC_OFFLOAD_CPU, its host array being the backend's memory).  The host backend
   has host memory unless mirrored, cuda device memory; kokkos either, by its execution space. */
static PetscErrorCode LazyBackend(Tester *t, const char *backend)
{
  Vec              v;
  PetscOffloadMask mask;
  PetscBool        host, cuda;

  PetscFunctionBeginUser;
  PetscCall(VecCreate(t->comm, &v));
  PetscCall(VecSetSizes(v, PETSC_DECIDE, 10));
  PetscCall(VecSetType(v, VECFUSED));
  PetscCall(VecGetOffloadMask(v, &mask));
  PetscCall(VecDestroy(&v));
  t->lazy = (PetscBool)(mask == PETSC_OFFLOAD_UNALLOCATED);
  PetscCall(PetscStrcmp(backend, "host", &host));
  PetscCall(PetscStrcmp(backend, "cuda", &cuda));
  PetscCheck(mask == PETSC_OFFLOAD_UNALLOCATED || mask == PETSC_OFFLOAD_CPU, t->comm, PETSC_ERR_PLIB, "A new fused vector has the offload mask %s", PetscOffloadMaskToString(mask));
  if (host || cuda) PetscCheck(t->lazy == (PetscBool)(cuda || t->mirror), t->comm, PETSC_ERR_PLIB, "A new fused vector on the %s backend%s has the offload mask %s", backend, t->mirror ? " (mirrored)" : "", PetscOffloadMaskToString(mask));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The offload mask of v is `lazy` where host arrays are allocated on first use, else always PETSC_OFFLOAD_CPU (on
   ranks with local entries: an empty part is never accessed)                                                     */
static PetscErrorCode CheckMask(Tester *t, const char *label, Vec v, PetscOffloadMask lazy)
{
  PetscOffloadMask mask, want = t->lazy ? lazy : PETSC_OFFLOAD_CPU;
  PetscInt         nl;
  char             what[128];

  PetscFunctionBeginUser;
  PetscCall(VecGetOffloadMask(v, &mask));
  PetscCall(VecGetLocalSize(v, &nl));
  PetscCall(PetscSNPrintf(what, sizeof(what), "offload mask %s, expected %s", PetscOffloadMaskToString(mask), PetscOffloadMaskToString(want)));
  PetscCall(RecordAll(t, (PetscBool)(mask == want || !nl), label, what));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* VecView() of v to an ASCII viewer: every value printed is 0, and there are as many as v has entries */
static PetscErrorCode CheckViewZeros(Tester *t, const char *label, Vec v)
{
  char       *buf = NULL, *line, *save = NULL;
  size_t      len = 0;
  FILE       *fp;
  PetscViewer viewer;
  PetscInt    values = 0, nonzero = 0;
  PetscMPIInt rank;
  char        what[128];

  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_rank(t->comm, &rank));
  fp = open_memstream(&buf, &len); /* rank 0 prints every rank's values */
  PetscCheck(fp, PETSC_COMM_SELF, PETSC_ERR_SYS, "open_memstream() failed");
  PetscCall(PetscViewerASCIIOpenWithFILE(t->comm, fp, &viewer));
  PetscCall(VecView(v, viewer));
  PetscCall(PetscViewerDestroy(&viewer));
  fclose(fp);
  for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) { /* value lines start with a digit or a sign */
    if ((line[0] >= '0' && line[0] <= '9') || line[0] == '-') {
      values++;
      if (strtod(line, NULL) != 0.0) nonzero++;
    }
  }
  free(buf);
  PetscCall(PetscSNPrintf(what, sizeof(what), "VecView() printed %" PetscInt_FMT " values, %" PetscInt_FMT " of them nonzero (%" PetscInt_FMT " zeros expected)", values, nonzero, t->n));
  PetscCall(RecordAll(t, (PetscBool)(rank || (values == t->n && !nonzero)), label, what));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* x = VecDuplicate(ref) with the entries set by VecSetValues(): ADD_VALUES of i + 1 at every owned index i and of
   0.25 at the first index of the next rank (an off-process entry, stashed) */
static PetscErrorCode SetByValues(Vec ref, Vec *x)
{
  PetscInt lo, hi, N;

  PetscFunctionBeginUser;
  PetscCall(VecDuplicate(ref, x));
  PetscCall(VecGetOwnershipRange(*x, &lo, &hi));
  PetscCall(VecGetSize(*x, &N));
  for (PetscInt i = lo; i < hi; ++i) PetscCall(VecSetValue(*x, i, (PetscScalar)(i + 1), ADD_VALUES));
  if (N) PetscCall(VecSetValue(*x, hi % N, 0.25, ADD_VALUES));
  PetscCall(VecAssemblyBegin(*x));
  PetscCall(VecAssemblyEnd(*x));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* A vector used only by the backend (duplicates of a vector whose data are on the backend, written, read and
   reduced there) gets no host array, and neither PETSc's log (a PETSc with a device) nor the backend counts a
   host<->device copy (but the device->host copies of the 3 reductions' results, on cuda and kokkos) */
static PetscErrorCode TestLazyBackendOnly(Tester *t, Operands *R, Operands *F)
{
  Vec            a, b, ra, rb;
  PetscInt64     h[2], c[2][2], reductions = t->device && !t->mirror && t->nlocal ? 3 : 0;
  PetscLogDouble copies;
  PetscScalar    dr[2] = {0, 0}, df[2];
  PetscReal      nf, nr, scale[2];
  char           what[160];

  PetscFunctionBeginUser;
  PetscCall(FusedKSPDebugGetHostArrayCount(&h[0]));
  PetscCall(FusedKSPGetBackendCounters(NULL, &c[0][0], &c[0][1]));
  copies = petsc_ctog_ct + petsc_gtoc_ct;
  PetscCall(VecDuplicate(F->x0, &a));
  PetscCall(CheckMask(t, "new vector", a, PETSC_OFFLOAD_UNALLOCATED));
  PetscCall(VecDuplicate(a, &b));
  PetscCall(VecDot(b, F->x0, &df[0])); /* b read first by the backend: zeros there */
  PetscCall(VecAXPY(a, 0.5, F->x0));
  PetscCall(VecScale(a, 3.0));
  PetscCall(VecAXPY(b, 1.0, a));
  PetscCall(VecDot(a, b, &df[1]));
  PetscCall(VecNorm(b, NORM_2, &nf));
  PetscCall(CheckMask(t, "vector written by the backend", b, PETSC_OFFLOAD_GPU));
  PetscCall(FusedKSPDebugGetHostArrayCount(&h[1]));
  PetscCall(FusedKSPGetBackendCounters(NULL, &c[1][0], &c[1][1]));
  copies = petsc_ctog_ct + petsc_gtoc_ct - copies;
  PetscCall(PetscSNPrintf(what, sizeof(what), "%" PetscInt64_FMT " host arrays allocated, %g vector copies logged, %" PetscInt64_FMT " device->host and %" PetscInt64_FMT " host->device copies counted (0, 0, %" PetscInt64_FMT ", 0 expected)",
                          h[1] - h[0], (double)copies, c[1][0] - c[0][0], c[1][1] - c[0][1], reductions));
  PetscCall(RecordAll(t, (PetscBool)(h[1] == h[0] && copies == 0 && c[1][0] - c[0][0] == reductions && c[1][1] == c[0][1]), "vectors used only by the backend", what));

  PetscCall(VecDuplicate(R->x0, &ra));
  PetscCall(VecDuplicate(ra, &rb));
  PetscCall(VecAXPY(ra, 0.5, R->x0));
  PetscCall(VecScale(ra, 3.0));
  PetscCall(VecAXPY(rb, 1.0, ra));
  PetscCall(VecDot(ra, rb, &dr[1]));
  PetscCall(VecNorm(rb, NORM_2, &nr));
  PetscCall(DotScale(ra, rb, &scale[1]));
  scale[0] = 0; /* <0, x0> is exactly 0 */
  PetscCall(CompareValues(t, "vectors used only by the backend", "dot products", 2, dr, df, scale));
  PetscCall(Record(t, (PetscBool)(PetscAbsReal(nf - nr) <= DOT_RTOL * nr), "vectors used only by the backend", "norm", PetscAbsReal(nf - nr), DOT_RTOL * nr));
  PetscCall(CompareVec(t, "vectors used only by the backend", "a", ra, a));
  PetscCall(CompareVec(t, "vectors used only by the backend", "b", rb, b));
  PetscCall(VecDestroy(&a));
  PetscCall(VecDestroy(&b));
  PetscCall(VecDestroy(&ra));
  PetscCall(VecDestroy(&rb));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* New vectors (duplicates of a vector whose data are on the backend) read as zeros on the host: VecNorm(),
   VecGetArrayRead(), VecView() (ASCII, and binary read back by VecLoad() into a new vector and into one whose data
   are on the backend) */
static PetscErrorCode TestLazyZeros(Tester *t, Operands *R, Operands *F)
{
  Vec         z, zero, l[2];
  PetscInt64  h[2];
  PetscReal   nrm[3];
  PetscViewer viewer;
  char        file[64], info[72];
  int         pid = (int)getpid();
  PetscMPIInt rank;

  PetscFunctionBeginUser;
  PetscCall(VecDuplicate(R->x0, &zero));
  PetscCall(VecDuplicate(F->x0, &z));
  PetscCall(FusedKSPDebugGetHostArrayCount(&h[0]));
  PetscCall(CompareVec(t, "new vector", "VecGetArrayRead() zeros", zero, z));
  PetscCall(FusedKSPDebugGetHostArrayCount(&h[1]));
  PetscCall(RecordAll(t, (PetscBool)(h[1] - h[0] == (t->lazy && t->nlocal ? 1 : 0)), "new vector read on the host", "its host array allocated then (counted)"));
  PetscCall(CheckMask(t, "new vector read on the host", z, PETSC_OFFLOAD_CPU));
  PetscCall(VecDestroy(&z));
  PetscCall(VecDuplicate(F->x0, &z));
  PetscCall(VecNorm(z, NORM_1, &nrm[0]));
  PetscCall(VecNorm(z, NORM_2, &nrm[1]));
  PetscCall(VecNorm(z, NORM_INFINITY, &nrm[2]));
  PetscCall(Record(t, (PetscBool)(nrm[0] == 0 && nrm[1] == 0 && nrm[2] == 0), "new vector", "VecNorm() 1, 2, infinity are 0", PetscMax(nrm[0], PetscMax(nrm[1], nrm[2])), 0));
  PetscCall(VecDestroy(&z));
  if (t->n <= 1000) {
    PetscCall(VecDuplicate(F->x0, &z));
    PetscCall(CheckViewZeros(t, "new vector", z));
    PetscCall(VecDestroy(&z));
  }

  /* binary: a new vector and x0, into a vector whose data are on the backend and into a new one */
  PetscCallMPI(MPI_Comm_rank(t->comm, &rank));
  PetscCallMPI(MPI_Bcast(&pid, 1, MPI_INT, 0, t->comm));
  PetscCall(PetscSNPrintf(file, sizeof(file), "test_vecops-%d.bin", pid));
  PetscCall(PetscSNPrintf(info, sizeof(info), "%s.info", file));
  PetscCall(VecDuplicate(F->x0, &z));
  PetscCall(PetscViewerBinaryOpen(t->comm, file, FILE_MODE_WRITE, &viewer));
  PetscCall(VecView(z, viewer));
  PetscCall(VecView(F->x0, viewer));
  PetscCall(PetscViewerDestroy(&viewer));
  PetscCall(VecDestroy(&z));
  PetscCall(VecDuplicate(F->x0, &l[0]));
  PetscCall(VecDuplicate(F->x0, &l[1]));
  PetscCall(VecSet(l[0], 7.0));
  PetscCall(PetscViewerBinaryOpen(t->comm, file, FILE_MODE_READ, &viewer));
  PetscCall(VecLoad(l[0], viewer));
  PetscCall(VecLoad(l[1], viewer));
  PetscCall(PetscViewerDestroy(&viewer));
  PetscCall(CompareVec(t, "VecView/VecLoad binary", "new vector", zero, l[0]));
  PetscCall(CompareVec(t, "VecView/VecLoad binary", "x0", R->x0, l[1]));
  PetscCall(VecDestroy(&l[0]));
  PetscCall(VecDestroy(&l[1]));
  PetscCallMPI(MPI_Barrier(t->comm)); /* every rank has closed the file */
  if (rank == 0) {
    (void)remove(file);
    (void)remove(info);
  }
  PetscCall(VecDestroy(&zero));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* VecSetValues() + assembly (off-process entries through the stash) into a new vector, then a fused operation;
   VecGetValues() of a vector whose data are on the backend; VecSetType() of a VECSTANDARD with values */
static PetscErrorCode TestLazyValues(Tester *t, Operands *R, Operands *F)
{
  Vec         r, f;
  PetscInt    lo, hi, idx[3], k = 0;
  PetscScalar vr[3], vf[3];
  PetscReal   scale[3];

  PetscFunctionBeginUser;
  PetscCall(SetByValues(R->x0, &r));
  PetscCall(SetByValues(F->x0, &f));
  PetscCall(CheckMask(t, "VecSetValues() + assembly", f, PETSC_OFFLOAD_CPU));
  PetscCall(CompareVec(t, "VecSetValues() + assembly", "values", r, f));
  PetscCall(VecAXPY(r, 2.0, R->x0));
  PetscCall(VecAXPY(f, 2.0, F->x0));
  PetscCall(VecScale(r, -1.5));
  PetscCall(VecScale(f, -1.5));
  PetscCall(CheckMask(t, "VecSetValues() + assembly, VecAXPY(), VecScale()", f, PETSC_OFFLOAD_GPU));

  PetscCall(VecGetOwnershipRange(r, &lo, &hi));
  if (hi > lo) {
    idx[k++] = lo;
    idx[k++] = (lo + hi) / 2;
    idx[k++] = hi - 1;
  }
  PetscCall(VecGetValues(r, k, idx, vr));
  PetscCall(VecGetValues(f, k, idx, vf));
  for (PetscInt j = 0; j < k; ++j) scale[j] = PetscAbsScalar(vr[j]);
  {
    PetscBool ok = PETSC_TRUE;

    for (PetscInt j = 0; j < k; ++j)
      if (!(PetscAbsScalar(vr[j] - vf[j]) <= VEC_RTOL * scale[j])) ok = PETSC_FALSE;
    PetscCall(RecordAll(t, ok, "VecGetValues() of a vector whose data are on the backend", "values"));
  }
  PetscCall(CompareVec(t, "VecSetValues() + assembly, VecAXPY(), VecScale()", "values", r, f));
  PetscCall(VecDestroy(&f));

  /* VECSTANDARD -> VECFUSED keeps the values (VecSetType() gives them to the new type by VecReplaceArray()) */
  PetscCall(VecDuplicate(R->x0, &f));
  PetscCall(VecCopy(R->x0, f));
  PetscCall(VecSetType(f, VECFUSED));
  PetscCall(CheckMask(t, "VecSetType() VECSTANDARD to VECFUSED", f, PETSC_OFFLOAD_CPU));
  PetscCall(VecAXPY(f, 1.0, F->x0));
  PetscCall(VecWAXPY(r, 1.0, R->x0, R->x0));
  PetscCall(CompareVec(t, "VecSetType() VECSTANDARD to VECFUSED, VecAXPY()", "values", r, f));
  PetscCall(VecDestroy(&f));
  PetscCall(VecDestroy(&r));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* VecPlaceArray()/VecResetArray() on a new vector and on one whose data are on the backend: the placed array gets
   the values at the reset, the vector its own values back; VecReplaceArray() of a new vector */
static PetscErrorCode TestLazyArrays(Tester *t, Operands *R, Operands *F)
{
  Vec                zero, p, r;
  PetscScalar       *buf, *a;
  const PetscScalar *x;
  PetscInt           lo, hi, nl;
  PetscReal          diff = 0, big = 0;

  PetscFunctionBeginUser;
  PetscCall(VecGetOwnershipRange(R->x0, &lo, &hi));
  nl = hi - lo;
  PetscCall(VecDuplicate(R->x0, &zero));
  PetscCall(VecDuplicate(R->x0, &r));
  PetscCall(PetscMalloc1(nl, &buf));

  /* a new vector: buf + x0 in buf after the reset, zeros in the vector */
  for (PetscInt i = 0; i < nl; ++i) buf[i] = (PetscScalar)(lo + i + 1);
  PetscCall(VecDuplicate(F->x0, &p));
  PetscCall(VecPlaceArray(p, buf));
  PetscCall(VecAXPY(p, 1.0, F->x0));
  PetscCall(CheckMask(t, "VecPlaceArray(), VecAXPY()", p, PETSC_OFFLOAD_GPU));
  PetscCall(VecResetArray(p));
  PetscCall(CheckMask(t, "VecResetArray()", p, PETSC_OFFLOAD_CPU));
  PetscCall(VecGetArrayRead(R->x0, &x));
  for (PetscInt i = 0; i < nl; ++i) {
    diff = PetscMax(diff, PetscAbsScalar(buf[i] - (x[i] + (PetscScalar)(lo + i + 1))));
    big  = PetscMax(big, PetscAbsScalar(x[i] + (PetscScalar)(lo + i + 1)));
  }
  PetscCall(VecRestoreArrayRead(R->x0, &x));
  PetscCall(RecordAll(t, (PetscBool)(diff <= VEC_RTOL * big), "VecPlaceArray(), VecAXPY(), VecResetArray() of a new vector", "placed array"));
  PetscCall(VecNorm(p, NORM_INFINITY, &diff));
  PetscCall(Record(t, (PetscBool)(diff == 0), "VecPlaceArray(), VecAXPY(), VecResetArray() of a new vector", "zeros after the reset (VecNorm)", diff, 0));
  PetscCall(CompareVec(t, "VecPlaceArray(), VecAXPY(), VecResetArray() of a new vector", "zeros after the reset", zero, p));
  PetscCall(VecDestroy(&p));

  /* a vector whose data are on the backend: 1 in buf, its values back after the reset */
  PetscCall(VecDuplicate(F->x0, &p));
  PetscCall(VecCopy(F->x0, p));
  PetscCall(VecPlaceArray(p, buf));
  PetscCall(VecSet(p, 1.0));
  PetscCall(VecResetArray(p));
  diff = 0;
  for (PetscInt i = 0; i < nl; ++i) diff = PetscMax(diff, PetscAbsScalar(buf[i] - 1.0));
  PetscCall(RecordAll(t, (PetscBool)(diff == 0), "VecPlaceArray(), VecSet(), VecResetArray() of a vector on the backend", "placed array"));
  PetscCall(CompareVec(t, "VecPlaceArray(), VecSet(), VecResetArray() of a vector on the backend", "values after the reset", R->x0, p));
  PetscCall(VecDestroy(&p));
  PetscCall(PetscFree(buf));

  /* VecReplaceArray() of a new vector: the vector owns the array */
  PetscCall(PetscMalloc1(nl, &a));
  for (PetscInt i = 0; i < nl; ++i) a[i] = (PetscScalar)(lo + i + 1);
  PetscCall(VecDuplicate(F->x0, &p));
  PetscCall(VecReplaceArray(p, a));
  PetscCall(CheckMask(t, "VecReplaceArray()", p, PETSC_OFFLOAD_CPU));
  PetscCall(VecAXPY(p, 2.0, F->x0));
  PetscCall(VecGetArrayWrite(r, &a));
  for (PetscInt i = 0; i < nl; ++i) a[i] = (PetscScalar)(lo + i + 1);
  PetscCall(VecRestoreArrayWrite(r, &a));
  PetscCall(VecAXPY(r, 2.0, R->x0));
  PetscCall(CompareVec(t, "VecReplaceArray() of a new vector, VecAXPY()", "values", r, p));
  PetscCall(VecDestroy(&p));
  PetscCall(VecDestroy(&r));
  PetscCall(VecDestroy(&zero));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* VecGetLocalVectorRead() and VecGetLocalVector() of new vectors into a fused local vector: it shows the vector's
   arrays (its host array allocated and filled on the local vector's first host access, one device->host copy), the
   vector gets the local vector's changes, the local vector its own (zero) values back */
static PetscErrorCode TestLazyLocal(Tester *t, Operands *R, Operands *F)
{
  Vec                v, w, ref;
  const PetscScalar *a;
  PetscInt           nl;
  PetscReal          diff = 0;
  PetscInt64         copies[2];

  PetscFunctionBeginUser;
  PetscCall(VecGetLocalSize(F->x0, &nl));
  PetscCall(VecCreate(PETSC_COMM_SELF, &w));
  PetscCall(VecSetSizes(w, nl, nl));
  PetscCall(VecSetType(w, VECSEQFUSED));
  PetscCall(VecDuplicate(R->x0, &ref));

  PetscCall(VecDuplicate(F->x0, &v));
  PetscCall(VecSet(v, 3.0));
  PetscCall(FusedKSPGetBackendCounters(NULL, &copies[0], NULL));
  PetscCall(VecGetLocalVectorRead(v, w));
  PetscCall(VecGetArrayRead(w, &a));
  for (PetscInt i = 0; i < nl; ++i) diff = PetscMax(diff, PetscAbsScalar(a[i] - 3.0));
  PetscCall(VecRestoreArrayRead(w, &a));
  PetscCall(VecRestoreLocalVectorRead(v, w));
  PetscCall(RecordAll(t, (PetscBool)(diff == 0), "VecGetLocalVectorRead() of a vector on the backend", "host values of the local vector"));
  PetscCall(CheckMask(t, "VecRestoreLocalVectorRead() after a host read", v, PETSC_OFFLOAD_BOTH));
  PetscCall(VecSet(ref, 3.0));
  PetscCall(CompareVec(t, "VecGetLocalVectorRead() of a vector on the backend", "values", ref, v));
  PetscCall(FusedKSPGetBackendCounters(NULL, &copies[1], NULL));
  PetscCall(RecordAll(t, (PetscBool)(copies[1] - copies[0] == (t->lazy && nl ? 1 : 0) || (!nl && copies[1] - copies[0] <= 1)), "VecGetLocalVectorRead() of a vector on the backend", "one device->host copy (none or one for an empty vector)"));
  PetscCall(VecDestroy(&v));

  PetscCall(CheckMask(t, "local vector after VecRestoreLocalVectorRead()", w, PETSC_OFFLOAD_UNALLOCATED));
  PetscCall(VecNorm(w, NORM_INFINITY, &diff));
  PetscCall(Record(t, (PetscBool)(diff == 0), "local vector after VecRestoreLocalVectorRead()", "its own zeros", diff, 0));

  PetscCall(VecDuplicate(F->x0, &v));
  PetscCall(VecGetLocalVector(v, w));
  PetscCall(VecSet(w, 4.0));
  PetscCall(VecRestoreLocalVector(v, w));
  PetscCall(CheckMask(t, "VecRestoreLocalVector() after a backend write", v, PETSC_OFFLOAD_GPU));
  PetscCall(VecSet(ref, 4.0));
  PetscCall(CompareVec(t, "VecGetLocalVector(), VecSet() of the local vector", "values", ref, v));
  PetscCall(VecDestroy(&v));
  PetscCall(VecDestroy(&ref));
  PetscCall(VecDestroy(&w));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode TestLazy(Tester *t, Operands *R, Operands *F)
{
  PetscFunctionBeginUser;
  PetscCall(TestLazyBackendOnly(t, R, F));
  PetscCall(TestLazyZeros(t, R, F));
  PetscCall(TestLazyValues(t, R, F));
  PetscCall(TestLazyArrays(t, R, F));
  PetscCall(TestLazyLocal(t, R, F));
  PetscFunctionReturn(PETSC_SUCCESS);
}

int main(int argc, char **argv)
{
  PetscInt    sizes[MAXSIZES] = {0, 1, 31, 32, 33, 1000, 1000003}, nsizes = MAXSIZES;
  PetscInt    nvs[MAXSIZES] = {1, 3, 8, 9, 16, 17, 32, 33, 70}, nnvs = MAXSIZES;
  PetscBool   set;
  PetscRandom rnd;
  Tester      t = {0};
  const char *backend;

  PetscFunctionBeginUser;
  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(FusedKSPInitializePackage());
  t.comm = PETSC_COMM_WORLD;
  PetscCall(PetscOptionsGetIntArray(NULL, NULL, "-sizes", sizes, &nsizes, &set));
  if (!set) nsizes = 7;
  PetscCall(PetscOptionsGetIntArray(NULL, NULL, "-nvs", nvs, &nnvs, &set));
  if (!set) nnvs = 9;
  PetscCheck(nnvs >= 1, t.comm, PETSC_ERR_USER_INPUT, "-nvs: give at least one count");
  for (PetscInt k = 0; k < nnvs; ++k) PetscCheck(nvs[k] >= 1 && nvs[k] <= MAXNV, t.comm, PETSC_ERR_USER_INPUT, "-nvs: every count must be in [1, %d]", MAXNV);
  PetscCall(FusedKSPGetBackendName(&backend));
  PetscCall(PetscStrcmp(backend, "host", &t.device));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-fused_debug_mirror", &t.mirror, NULL));
  t.device = t.device && !t.mirror ? PETSC_FALSE : PETSC_TRUE;
  PetscCall(PetscPrintf(t.comm, "test_vecops: backend %s%s\n", backend, t.mirror ? " (mirrored)" : ""));
  PetscCall(LazyBackend(&t, backend));

  PetscCall(PetscRandomCreate(t.comm, &rnd));
  PetscCall(PetscRandomSetInterval(rnd, -1.0, 1.0));
  PetscCall(PetscRandomSetSeed(rnd, 20240601));
  PetscCall(PetscRandomSeed(rnd));

  for (PetscInt s = 0; s < nsizes; ++s) {
    Operands R, F;

    t.n = sizes[s];
    PetscCall(CreateVecs(t.comm, t.n, rnd, &R, &F));
    PetscCall(VecGetLocalSize(R.x, &t.nlocal));
    PetscCall(TestUpdates(&t, &R, &F));
    PetscCall(TestReductions(&t, &R, &F));
    for (PetscInt k = 0; k < nnvs; ++k) PetscCall(TestMulti(&t, &R, &F, nvs[k], rnd));
    PetscCall(TestSplit(&t, &R, &F, nvs[nnvs - 1]));
    PetscCall(TestMixed(&t, &R, &F));
    PetscCall(TestDuplicateOps(&t, &F));
    PetscCall(TestLazy(&t, &R, &F));
    PetscCall(DestroyVecs(&R));
    PetscCall(DestroyVecs(&F));
  }
  PetscCall(PetscRandomDestroy(&rnd));
  if (t.failures)
    PetscCall(PetscPrintf(t.comm, "test_vecops: %" PetscInt_FMT " of %" PetscInt_FMT " checks FAILED\n", t.failures, t.checks));
  else
    PetscCall(PetscPrintf(t.comm, "test_vecops: all %" PetscInt_FMT " checks passed\n", t.checks));
  PetscCall(PetscFinalize());
  return t.failures ? 1 : 0;
}
