/* The fused operations: dispatch to the backend kernel or run the same mathematics with PETSc calls */
#include "ops/fusedops.hpp"
#include "ops/petscdevice.hpp"
#include "vec/vecfused.hpp"
#include "mat/aijfused.hpp"
#include "mat/matpowers.hpp"
#include <petsc/private/vecimpl.h>
#include <array>
#include <cstring>
#include <vector>

namespace fusedksp
{
namespace
{

/* The access modes of backend arrays, short */
constexpr PetscMemoryAccessMode READ = PETSC_MEMORY_ACCESS_READ, WRITE = PETSC_MEMORY_ACCESS_WRITE, READ_WRITE = PETSC_MEMORY_ACCESS_READ_WRITE;

/* The batches are per solve (OpsSolveScoped()): scopes[nscopes - 1] is the innermost solve running,
   scopes[0] the operations called outside any solve.  A solve has at most one batch open; a fused
   solve nested in another (inside its PC or operator) has a scope of its own, so it neither sees nor
   joins the batch of the solve around it.                                                           */
struct Scope {
  bool batch_open  = false; /* an OpsBatchBegin() of this solve without its OpsBatchEnd() */
  bool batch_defer = false; /* ... that defers (not a general PC)                         */
  bool side_open   = false; /* an OpsSideBegin() of this solve without its OpsSideEnd()   */
  bool side_moved  = false; /* ... that opened a side scope of the backend                */
  bool side_forked = false; /* this solve opened side 1 of the backend since its last join */
};
constexpr int MAX_SCOPES = 64; /* fused solves nested in each other, plus the outermost level */
Scope         scopes[MAX_SCOPES];
int           nscopes        = 1;
bool          target_pending = false; /* an OpsReduceInto() not yet used by a fused operation */

inline Scope &Current()
{
  return scopes[nscopes - 1];
}

/* Switches deferral on around one fused kernel inside a deferring batch; the kernel uses up a
   pending OpsReduceInto() target                                                              */
PetscErrorCode DeferBegin()
{
  PetscFunctionBegin;
  if (Current().batch_open && Current().batch_defer && !target_pending) PetscCall(ActiveBackend()->batch_defer(PETSC_TRUE));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode DeferEnd()
{
  PetscFunctionBegin;
  if (Current().batch_open && Current().batch_defer) PetscCall(ActiveBackend()->batch_defer(PETSC_FALSE));
  target_pending = false;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* An operation that cannot honour a pending OpsReduceInto() target */
PetscErrorCode CheckNoTarget(const char *what)
{
  PetscFunctionBegin;
  PetscCheck(!target_pending, PETSC_COMM_SELF, PETSC_ERR_SUP, "Device-resident dot products (OpsReduceInto) need %s to run fused: fused vectors and a MATSEQAIJFUSED matrix", what);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Forgets a pending OpsReduceInto() target (after an error: the operation that would use it did not run) */
PetscErrorCode TargetDrop()
{
  PetscFunctionBegin;
  if (target_pending) {
    target_pending = false;
    PetscCall(ActiveBackend()->reduce_target(nullptr, nullptr));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* PETSC_TRUE when every non-NULL vector is fused (chunks of iterations run only then); with petsc_device, PETSc's
   device vectors the backend addresses count too (petscdevice.hpp): then the backend kernel of one operation runs */
PetscErrorCode VecsOnBackend(std::initializer_list<Vec> vecs, PetscBool petsc_device, PetscBool *fused)
{
  PetscFunctionBegin;
  *fused = PETSC_TRUE;
  for (Vec v : vecs) {
    PetscBool f;
    if (!v) continue;
    PetscCall(VecIsFused(v, &f));
    if (!f && petsc_device) PetscCall(VecIsPETScDevice(v, &f));
    if (!f) {
      *fused = PETSC_FALSE;
      break;
    }
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode AllFused(std::initializer_list<Vec> vecs, PetscBool *fused)
{
  PetscFunctionBegin;
  PetscCall(VecsOnBackend(vecs, PETSC_FALSE, fused));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The local part of <x,y>, without communication */
PetscErrorCode LocalDot(Vec x, Vec y, PetscScalar *val)
{
  PetscFunctionBegin;
  PetscCheck(x->ops->dot_local, PetscObjectComm((PetscObject)x), PETSC_ERR_SUP, "Vector type %s has no local dot product; the fused solvers need one (use a standard, CUDA or fused vector type)", ((PetscObject)x)->type_name);
  PetscUseTypeMethod(x, dot_local, y, val);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Holds backend arrays of several vectors (fused, or PETSc's device vectors) for one kernel and gives them back.
   After Length(n), every vector it gets must have the local length n: the kernel reads n entries of each array, so
   a vector of another layout is an error before any kernel runs.  With a PETSc device vector among them, PETSc's
   stream waits for the kernel when they are given back.                                                         */
class BackendArrays {
public:
  /* One operand of a kernel: the vector, the kernel's access, where its backend array goes */
  struct Operand {
    Vec                   v;
    PetscMemoryAccessMode mode;
    PetscScalar         **a;
  };
  void Length(PetscInt n)
  {
    n_ = n;
  }
  /* Length() with the local length *n of v */
  PetscErrorCode LengthOf(Vec v, PetscInt *n)
  {
    PetscFunctionBegin;
    PetscCall(VecGetLocalSize(v, n));
    n_ = *n;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  /* Get() of each operand, in order */
  PetscErrorCode Get(std::initializer_list<Operand> operands)
  {
    PetscFunctionBegin;
    for (const Operand &o : operands) PetscCall(Get(o.v, o.mode, o.a));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscErrorCode Get(Vec v, PetscMemoryAccessMode mode, PetscScalar **a)
  {
    PetscFunctionBegin;
    *a = nullptr;
    if (v) {
      if (n_ >= 0) {
        PetscInt n;

        PetscCall(VecGetLocalSize(v, &n));
        PetscCheck(n == n_, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ,
                   "A fused operation on vectors of local length %" PetscInt_FMT " got one of local length %" PetscInt_FMT ": the vectors of a solve must have the layout of the rows and columns of its matrix", n_, n);
      }
      for (auto &e : held_)
        if (e.v == v) {
          if (mode != READ) e.mode = READ_WRITE;
          *a = e.a;
          PetscFunctionReturn(PETSC_SUCCESS);
        }
      PetscBool petsc;
      PetscCall(VecIsPETScDevice(v, &petsc));
      if (mode == WRITE) mode = READ_WRITE;
      if (petsc)
        PetscCall(VecPETScDeviceGetArray(v, mode, a, &ordered_));
      else
        PetscCall(VecFusedGetArray(v, mode, a));
      FusedKSPCallCXX(held_.push_back({v, mode, mode, petsc, *a}));
    }
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  /* The backend's copy of a PETSc device matrix (MatIsPETScDevice()), for this kernel */
  PetscErrorCode GetPETScMatrix(Mat A, const Mirror **m)
  {
    PetscFunctionBegin;
    PetscCall(MatPETScDeviceGetMirror(A, m, &ordered_));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  /* The parts of a PETSc parallel device matrix (MatPETScDeviceGetParallelProduct()), for this kernel */
  PetscErrorCode GetPETScParallel(Mat A, ParallelProduct *p, PetscScalar **work)
  {
    PetscFunctionBegin;
    PetscCall(MatPETScDeviceGetParallelProduct(A, p, work, &ordered_));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscErrorCode RestoreAll()
  {
    PetscBool petsc = PETSC_FALSE;

    PetscFunctionBegin;
    for (auto &e : held_) {
      if (e.petsc) {
        PetscCall(VecPETScDeviceRestoreArray(e.v, e.got, (PetscBool)(e.mode != e.got), &e.a));
        petsc = PETSC_TRUE;
      } else
        PetscCall(VecFusedRestoreArray(e.v, e.mode, &e.a));
    }
    held_.clear();
    ordered_ = PETSC_FALSE;
    if (petsc) PetscCall(PETScDeviceAfterBackend());
    PetscFunctionReturn(PETSC_SUCCESS);
  }

private:
  struct Entry {
    Vec                   v;
    PetscMemoryAccessMode mode; /* the access of the kernel */
    PetscMemoryAccessMode got;  /* the access the array was got with (a later Get may have widened mode) */
    PetscBool             petsc;
    PetscScalar          *a;
  };
  std::vector<Entry> held_;
  PetscInt           n_       = -1;
  PetscBool          ordered_ = PETSC_FALSE; /* the backend waits for PETSc's stream (petscdevice.hpp) */
};

/* Backend DotSpecs for OpDots (arrays fetched read-only) */
PetscErrorCode BackendSpecs(BackendArrays &arr, int ndots, const OpDot *specs, DotSpec *bspecs)
{
  PetscFunctionBegin;
  PetscCheck(ndots >= 0 && ndots <= FUSED_MAX_DOTS, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "At most %d fused dot products, asked for %d", FUSED_MAX_DOTS, ndots);
  for (int k = 0; k < ndots; ++k) {
    PetscScalar *a = nullptr;
    bspecs[k].kind = specs[k].kind;
    if (specs[k].kind == DotKind::DOT_SELF_W || specs[k].kind == DotKind::DOT_VECTOR || specs[k].kind == DotKind::DOT_VECTOR_W) {
      PetscCheck(specs[k].vec, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "Dot product %d needs a vector", k);
      PetscCall(arr.Get(specs[k].vec, READ, &a));
    }
    bspecs[k].vec    = a;
    bspecs[k].weight = nullptr;
    if (specs[k].kind == DotKind::DOT_VECTOR_W) {
      PetscCheck(specs[k].weight, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "Dot product %d needs a weight", k);
      PetscCall(arr.Get(specs[k].weight, READ, &a));
      bspecs[k].weight = a;
    }
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The dot products of OpDots with PETSc calls (local values) */
PetscErrorCode DotsUnfused(Vec in, Vec out, int ndots, const OpDot *specs, PetscScalar *dots, Vec work)
{
  PetscFunctionBegin;
  for (int k = 0; k < ndots; ++k) {
    switch (specs[k].kind) {
    case DotKind::DOT_INPUT:
      PetscCall(LocalDot(out, in, &dots[k]));
      break;
    case DotKind::DOT_SELF:
      PetscCall(LocalDot(out, out, &dots[k]));
      break;
    case DotKind::DOT_SELF_W:
      PetscCheck(work, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "A weighted dot product needs a work vector");
      PetscCall(VecPointwiseMult(work, specs[k].vec, out));
      PetscCall(LocalDot(out, work, &dots[k]));
      break;
    case DotKind::DOT_VECTOR:
      PetscCall(LocalDot(out, specs[k].vec, &dots[k]));
      break;
    case DotKind::DOT_VECTOR_W:
      PetscCheck(work, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "A weighted dot product needs a work vector");
      PetscCall(VecPointwiseMult(work, specs[k].weight, specs[k].vec));
      PetscCall(LocalDot(out, work, &dots[k]));
      break;
    }
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The backend arrays of the CG update (cg_update and cg_update_chained): z and u only without Jacobi weights */
struct CGUpdateArrays {
  PetscInt     n = 0;
  PetscScalar *x = nullptr, *r = nullptr, *z = nullptr, *p = nullptr, *q = nullptr, *u = nullptr, *w = nullptr;
};

PetscErrorCode GetCGUpdateArrays(BackendArrays &arr, Vec x, Vec r, Vec z, Vec p, Vec q, Vec u, Vec w, CGUpdateArrays *a)
{
  PetscFunctionBegin;
  PetscCall(arr.LengthOf(x, &a->n));
  PetscCall(arr.Get({{x, READ_WRITE, &a->x}, {r, READ_WRITE, &a->r}, {p, READ_WRITE, &a->p}, {q, READ, &a->q}}));
  if (w)
    PetscCall(arr.Get(w, READ, &a->w));
  else if (u) {
    PetscCall(arr.Get({{z, READ_WRITE, &a->z}, {u, READ, &a->u}}));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The backend arrays of the BiCGStab update (bcgs_update and bcgs_update_chained); wr and rhat may be NULL */
struct BCGSUpdateArrays {
  PetscInt     n  = 0;
  PetscScalar *wr = nullptr, *x = nullptr, *r = nullptr, *p = nullptr, *s = nullptr, *Ap = nullptr, *As = nullptr, *rstar = nullptr, *rhat = nullptr;
};

PetscErrorCode GetBCGSUpdateArrays(BackendArrays &arr, Vec wr, Vec x, Vec r, Vec p, Vec s, Vec Ap, Vec As, Vec rstar, Vec rhat, BCGSUpdateArrays *a)
{
  PetscFunctionBegin;
  PetscCall(arr.LengthOf(x, &a->n));
  PetscCall(arr.Get({{wr, READ, &a->wr}, {x, READ_WRITE, &a->x}, {r, WRITE, &a->r}, {p, READ_WRITE, &a->p}, {s, READ, &a->s}, {Ap, READ, &a->Ap}, {As, READ, &a->As}, {rstar, READ, &a->rstar}, {rhat, READ, &a->rhat}}));
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace

PetscErrorCode AllOnBackend(std::initializer_list<Vec> vecs, PetscBool *yes)
{
  PetscFunctionBegin;
  PetscCall(VecsOnBackend(vecs, PETSC_TRUE, yes));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode OpsCGUpdate(PetscScalar a, PetscScalar b, Vec x, Vec r, Vec z, Vec p, Vec q, Vec u, Vec w, PetscScalar dots[3])
{
  PetscBool fused;

  PetscFunctionBegin;
  PetscCall(CheckNoTarget("this operation"));
  PetscCall(AllOnBackend({x, r, z, p, q, u, w}, &fused));
  if (fused) {
    BackendArrays  arr;
    CGUpdateArrays v;
    PetscCall(GetCGUpdateArrays(arr, x, r, z, p, q, u, w, &v));
    PetscCall(PetscLogEventBegin(events.cg_update, x, r, p, 0));
    PetscCall(DeferBegin());
    PetscCall(ActiveBackend()->cg_update(v.n, a, b, v.x, v.r, v.z, v.p, v.q, v.u, v.w, dots));
    PetscCall(DeferEnd());
    PetscCall(PetscLogEventEnd(events.cg_update, x, r, p, 0));
    PetscCall(PetscLogFlops(12.0 * v.n));
    PetscCall(arr.RestoreAll());
  } else {
    PetscCall(VecAXPY(x, a, p));
    PetscCall(VecAXPY(r, -a, q));
    if (w)
      PetscCall(VecPointwiseMult(z, w, r));
    else if (u)
      PetscCall(VecAXPY(z, -a, u));
    else
      PetscCall(VecCopy(r, z));
    PetscCall(VecAYPX(p, b, z));
    PetscCall(LocalDot(r, z, &dots[0]));
    PetscCall(LocalDot(r, r, &dots[1]));
    PetscCall(LocalDot(z, z, &dots[2]));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode OpsOperatorOnBackend(Mat A, PetscBool *yes, const char **why)
{
  PetscFunctionBegin;
  PetscCall(MatIsSeqAIJFused(A, yes));
  if (!*yes) PetscCall(MatIsMPIAIJFused(A, yes));
  if (*yes) {
    if (why) *why = nullptr;
  } else {
    PetscCall(MatIsPETScDevice(A, yes, NULL, why));
    if (*yes && why) *why = nullptr;
    if (!*yes && why && !*why) *why = "the operator is neither an aijfused matrix of the active backend nor PETSc's seqaijcusparse or mpiaijcusparse with the cuda backend";
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode OpsApplyOperator(Mat A, Vec wl, Vec wr, Vec in, Vec out, Vec work, int ndots, const OpDot *specs, PetscScalar *dots)
{
  PetscBool fusedvecs, fusedmat, fusedmpi, petscmat, petscsell, petscmpi;

  PetscFunctionBegin;
  PetscCall(AllOnBackend({wl, wr, in, out}, &fusedvecs));
  for (int k = 0; k < ndots && fusedvecs; ++k) PetscCall(AllOnBackend({specs[k].vec, specs[k].weight}, &fusedvecs));
  PetscCall(MatIsSeqAIJFused(A, &fusedmat));
  PetscCall(MatIsMPIAIJFused(A, &fusedmpi));
  PetscCall(MatIsPETScDevice(A, &petscmat, &petscsell, NULL));
  PetscCall(PetscObjectTypeCompare((PetscObject)A, MATMPIAIJCUSPARSE, &petscmpi));
  petscmpi = (PetscBool)(petscmpi && petscmat);                /* several processes: the fused product whatever the format of */
  petscmat = (PetscBool)(petscmat && (petscsell || petscmpi)); /* a rank's diagonal block (the same path on every rank); one:
                                                                  CSR-shaped, PETSc's product (faster than the fused one) */
  if (fusedvecs && (fusedmat || fusedmpi || petscmat)) {       /* MPI: the local rows, diagonal block overlapped with the halo exchange */
    BackendArrays   arr;
    DotSpec         bspecs[FUSED_MAX_DOTS];
    PetscScalar    *ina, *outa, *wla, *wra, *work;
    PetscInt        rows, cols;
    const Mirror   *m = nullptr;
    ParallelProduct par{};
    PetscCall(MatGetLocalSize(A, &rows, &cols));
    arr.Length(cols);
    PetscCall(arr.Get({{in, READ, &ina}, {wr, READ, &wra}}));
    arr.Length(rows);
    PetscCall(arr.Get({{out, WRITE, &outa}, {wl, READ, &wla}}));
    PetscCall(BackendSpecs(arr, ndots, specs, bspecs));
    if (petscmat && petscmpi)
      PetscCall(arr.GetPETScParallel(A, &par, &work));
    else if (petscmat)
      PetscCall(arr.GetPETScMatrix(A, &m));
    if (fusedmpi || petscmpi) PetscCall(CheckNoTarget("an MPI operator"));
    PetscCall(DeferBegin());
    if (fusedmpi)
      PetscCall(MatMPIAIJFusedMultDots(A, wla, wra, ina, outa, ndots, bspecs, dots));
    else if (petscmpi)
      PetscCall(ParallelProductDots(ActiveBackend(), par, wla, wra, ina, outa, ndots, bspecs, dots));
    else if (fusedmat)
      PetscCall(MatSeqAIJFusedMultDots(A, wla, wra, ina, outa, ndots, bspecs, dots));
    else {
      PetscCall(PetscLogEventBegin(events.spmv_dots, A, 0, 0, 0));
      PetscCall(MirrorProduct(ActiveBackend(), m, wla, wra, ina, outa, ndots, bspecs, dots));
      PetscCall(PetscLogEventEnd(events.spmv_dots, A, 0, 0, 0));
    }
    PetscCall(DeferEnd());
    PetscCall(arr.RestoreAll());
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(CheckNoTarget("the operator"));
  if (wr) {
    PetscCheck(work, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "A right-scaled operator needs a work vector");
    PetscCall(VecPointwiseMult(work, wr, in));
    PetscCall(MatMult(A, work, out));
  } else
    PetscCall(MatMult(A, in, out));
  if (wl) PetscCall(VecPointwiseMult(out, wl, out));
  PetscCall(OpsDots(in, out, ndots, specs, dots));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode OpsApplyOperatorUpdate(Mat A, const MatUpdateTerms *terms, Vec x, Vec y)
{
  Vec const       tv[4] = {terms->wl, terms->add, terms->u, terms->v};
  PetscScalar    *ta[4] = {}, *xa, *ya;
  PetscBool       fusedvecs, fusedmat, fusedmpi, petscmpi, onbackend;
  PetscInt        rows, cols;
  BackendArrays   arr;
  RowUpdate       f;
  const Mirror   *m = nullptr;
  ParallelProduct par{};
  PetscScalar    *work;

  PetscFunctionBegin;
  PetscCheck(x != y, PetscObjectComm((PetscObject)A), PETSC_ERR_ARG_IDN, "The input and the output of a sparse product must be different vectors");
  PetscCall(AllOnBackend({x, y, tv[0], tv[1], tv[2], tv[3]}, &fusedvecs));
  PetscCall(OpsOperatorOnBackend(A, &onbackend, NULL));
  PetscCheck(fusedvecs && onbackend, PetscObjectComm((PetscObject)A), PETSC_ERR_SUP, "A product with its update in one kernel needs an operator and vectors on the backend (OpsOperatorOnBackend(), AllOnBackend())");
  PetscCall(CheckNoTarget("a product with its update"));
  PetscCall(MatIsSeqAIJFused(A, &fusedmat));
  PetscCall(MatIsMPIAIJFused(A, &fusedmpi));
  PetscCall(PetscObjectTypeCompare((PetscObject)A, MATMPIAIJCUSPARSE, &petscmpi));
  PetscCall(MatGetLocalSize(A, &rows, &cols));
  arr.Length(rows);
  PetscCall(arr.Get(y, WRITE, &ya)); /* first: a term that is y then reads the same array */
  for (int k = 0; k < 4; ++k) PetscCall(arr.Get(tv[k], READ, &ta[k]));
  arr.Length(cols);
  PetscCall(arr.Get(x, READ, &xa));
  f.wl    = ta[0];
  f.add   = ta[1];
  f.u     = ta[2];
  f.v     = ta[3];
  f.sign  = terms->sign;
  f.gamma = terms->gamma;
  f.alpha = terms->alpha;
  f.beta  = terms->beta;
  if (fusedmat)
    PetscCall(MatSeqAIJFusedMultUpdate(A, &f, xa, ya));
  else if (fusedmpi)
    PetscCall(MatMPIAIJFusedMultUpdate(A, &f, xa, ya));
  else if (petscmpi) {
    PetscCall(arr.GetPETScParallel(A, &par, &work));
    PetscCall(ParallelProductUpdate(ActiveBackend(), par, work, &f, xa, ya));
  } else {
    PetscCall(arr.GetPETScMatrix(A, &m));
    PetscCall(PetscLogEventBegin(events.spmv_dots, A, 0, 0, 0));
    PetscCall(MirrorProductUpdate(ActiveBackend(), m, &f, xa, ya));
    PetscCall(PetscLogEventEnd(events.spmv_dots, A, 0, 0, 0));
  }
  PetscCall(arr.RestoreAll());
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode OpsApplyOperatorTranspose(Mat A, Vec in, Vec out, int ndots, const OpDot *specs, PetscScalar *dots)
{
  PetscBool fusedvecs, fusedmat;

  PetscFunctionBegin;
  PetscCall(AllOnBackend({in, out}, &fusedvecs));
  for (int k = 0; k < ndots && fusedvecs; ++k) PetscCall(AllOnBackend({specs[k].vec, specs[k].weight}, &fusedvecs));
  PetscCall(MatIsSeqAIJFused(A, &fusedmat));
  if (fusedvecs && fusedmat) {
    BackendArrays arr;
    DotSpec       bspecs[FUSED_MAX_DOTS];
    PetscScalar  *ina, *outa;
    PetscInt      rows, cols;
    PetscCall(MatGetLocalSize(A, &rows, &cols));
    arr.Length(rows);
    PetscCall(arr.Get(in, READ, &ina));
    arr.Length(cols);
    PetscCall(arr.Get(out, WRITE, &outa));
    PetscCall(BackendSpecs(arr, ndots, specs, bspecs));
    PetscCall(DeferBegin());
    PetscCall(MatSeqAIJFusedMultTransposeDots(A, ina, outa, ndots, bspecs, dots));
    PetscCall(DeferEnd());
    PetscCall(arr.RestoreAll());
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(CheckNoTarget("the transposed operator"));
  PetscCall(MatMultTranspose(A, in, out));
  PetscCall(OpsDots(in, out, ndots, specs, dots));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode OpsDots(Vec in, Vec out, int ndots, const OpDot *specs, PetscScalar *dots)
{
  PetscBool fused;

  PetscFunctionBegin;
  if (!ndots) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(AllOnBackend({in, out}, &fused));
  for (int k = 0; k < ndots && fused; ++k) PetscCall(AllOnBackend({specs[k].vec, specs[k].weight}, &fused));
  if (fused) {
    BackendArrays arr;
    DotSpec       bspecs[FUSED_MAX_DOTS];
    PetscScalar  *ina, *outa;
    PetscInt      n;
    PetscCall(arr.LengthOf(out, &n));
    PetscCall(arr.Get({{in, READ, &ina}, {out, READ, &outa}}));
    PetscCall(BackendSpecs(arr, ndots, specs, bspecs));
    PetscCall(PetscLogEventBegin(events.dots, in, out, 0, 0));
    PetscCall(DeferBegin());
    PetscCall(ActiveBackend()->dots(n, ina, outa, ndots, bspecs, dots));
    PetscCall(DeferEnd());
    PetscCall(PetscLogEventEnd(events.dots, in, out, 0, 0));
    PetscCall(arr.RestoreAll());
  } else {
    Vec work = nullptr;
    PetscCall(CheckNoTarget("the dot products"));
    for (int k = 0; k < ndots; ++k)
      if ((specs[k].kind == DotKind::DOT_SELF_W || specs[k].kind == DotKind::DOT_VECTOR_W) && !work) PetscCall(VecDuplicate(out, &work));
    PetscCall(DotsUnfused(in, out, ndots, specs, dots, work));
    PetscCall(VecDestroy(&work));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode OpsWAXPYDot(PetscScalar a, Vec x, Vec v, Vec y, PetscScalar dots[1])
{
  PetscBool fused;

  PetscFunctionBegin;
  PetscCall(CheckNoTarget("this operation"));
  PetscCall(AllOnBackend({x, v, y}, &fused));
  if (fused) {
    BackendArrays arr;
    PetscScalar  *xa, *va, *ya;
    PetscInt      n;
    PetscCall(arr.LengthOf(y, &n));
    PetscCall(arr.Get({{x, READ, &xa}, {v, READ, &va}, {y, WRITE, &ya}}));
    PetscCall(PetscLogEventBegin(events.waxpy_dot, x, v, y, 0));
    PetscCall(DeferBegin());
    PetscCall(ActiveBackend()->waxpy_dot(n, a, xa, va, ya, dots));
    PetscCall(DeferEnd());
    PetscCall(PetscLogEventEnd(events.waxpy_dot, x, v, y, 0));
    PetscCall(PetscLogFlops(4.0 * n));
    PetscCall(arr.RestoreAll());
  } else {
    PetscCall(VecWAXPY(y, a, v, x));
    PetscCall(LocalDot(y, y, &dots[0]));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode OpsBCGSUpdate(PetscScalar alpha, PetscScalar omega, PetscScalar beta, Vec wr, Vec pt, Vec st, Vec x, Vec r, Vec p, Vec s, Vec Ap, Vec As, Vec rstar, Vec rhat, PetscScalar *dots)
{
  PetscBool fused;

  PetscFunctionBegin;
  PetscCall(CheckNoTarget("this operation"));
  PetscCall(AllOnBackend({wr, x, r, p, s, Ap, As, rstar, rhat}, &fused));
  if (fused && (wr || !pt)) {
    BackendArrays    arr;
    BCGSUpdateArrays v;
    PetscCall(GetBCGSUpdateArrays(arr, wr, x, r, p, s, Ap, As, rstar, rhat, &v));
    PetscCall(PetscLogEventBegin(events.bcgs_update, x, r, p, 0));
    PetscCall(DeferBegin());
    PetscCall(ActiveBackend()->bcgs_update(v.n, alpha, omega, beta, v.wr, v.x, v.r, v.p, v.s, v.Ap, v.As, v.rstar, v.rhat, rhat ? 3 : 2, dots));
    PetscCall(DeferEnd());
    PetscCall(PetscLogEventEnd(events.bcgs_update, x, r, p, 0));
    PetscCall(PetscLogFlops(14.0 * v.n));
    PetscCall(arr.RestoreAll());
  } else {
    if (pt)
      PetscCall(VecAXPBYPCZ(x, alpha, omega, 1.0, pt, st));
    else {
      PetscCheck(!wr, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "The unfused right-preconditioned update needs wr.*p and wr.*s");
      PetscCall(VecAXPBYPCZ(x, alpha, omega, 1.0, p, s));
    }
    PetscCall(VecWAXPY(r, -omega, As, s));
    PetscCall(VecAXPBYPCZ(p, 1.0, -beta * omega, beta, r, Ap));
    PetscCall(LocalDot(r, rstar, &dots[0]));
    PetscCall(LocalDot(r, r, &dots[1]));
    if (rhat) PetscCall(LocalDot(r, rhat, &dots[2]));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode OpsMDot(PetscInt nv, const Vec V[], Vec y, PetscBool selfdot, PetscScalar *dots)
{
  PetscBool fused;

  PetscFunctionBegin;
  PetscCall(AllOnBackend({y}, &fused));
  for (PetscInt j = 0; j < nv && fused; ++j) PetscCall(AllOnBackend({V[j]}, &fused));
  if (fused) {
    BackendArrays              arr;
    std::vector<PetscScalar *> va;
    PetscScalar               *ya;
    PetscInt                   n;
    PetscCall(arr.LengthOf(y, &n));
    FusedKSPCallCXX(va.resize(nv > 0 ? nv : 1));
    PetscCall(arr.Get(y, READ, &ya));
    for (PetscInt j = 0; j < nv; ++j) PetscCall(arr.Get(V[j], READ, &va[j]));
    PetscCall(PetscLogEventBegin(events.mdot, y, 0, 0, 0));
    PetscCall(DeferBegin());
    PetscCall(ActiveBackend()->mdot(n, nv, va.data(), ya, selfdot, dots));
    PetscCall(DeferEnd());
    PetscCall(PetscLogEventEnd(events.mdot, y, 0, 0, 0));
    PetscCall(PetscLogFlops(2.0 * n * (nv + (selfdot ? 1 : 0))));
    PetscCall(arr.RestoreAll());
  } else {
    PetscCall(CheckNoTarget("the multi-dot"));
    for (PetscInt j = 0; j < nv; ++j) PetscCall(LocalDot(y, V[j], &dots[j]));
    if (selfdot) PetscCall(LocalDot(y, y, &dots[nv]));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode OpsMAXPYScale(PetscInt nv, const PetscScalar coef[], const Vec V[], Vec y, PetscScalar scale, Vec dotvec, PetscScalar *dot)
{
  PetscBool fused;

  PetscFunctionBegin;
  PetscCall(CheckNoTarget("this operation"));
  PetscCall(AllOnBackend({y, dotvec}, &fused));
  for (PetscInt j = 0; j < nv && fused; ++j) PetscCall(AllOnBackend({V[j]}, &fused));
  if (fused) {
    BackendArrays              arr;
    std::vector<PetscScalar *> va;
    PetscScalar               *ya, *da;
    PetscInt                   n;
    PetscCall(arr.LengthOf(y, &n));
    FusedKSPCallCXX(va.resize(nv > 0 ? nv : 1));
    PetscCall(arr.Get({{y, READ_WRITE, &ya}, {dotvec, READ, &da}}));
    for (PetscInt j = 0; j < nv; ++j) PetscCall(arr.Get(V[j], READ, &va[j]));
    PetscCall(PetscLogEventBegin(events.maxpy, y, 0, 0, 0));
    PetscCall(DeferBegin());
    PetscCall(ActiveBackend()->maxpy_scale(n, nv, coef, va.data(), ya, scale, da, dot));
    PetscCall(DeferEnd());
    PetscCall(PetscLogEventEnd(events.maxpy, y, 0, 0, 0));
    PetscCall(PetscLogFlops(2.0 * n * (nv + 1)));
    PetscCall(arr.RestoreAll());
  } else {
    std::vector<PetscScalar> neg;

    FusedKSPCallCXX(neg.resize(nv > 0 ? nv : 1));
    for (PetscInt j = 0; j < nv; ++j) neg[j] = -coef[j];
    if (nv) PetscCall(VecMAXPY(y, nv, neg.data(), const_cast<Vec *>(V)));
    if (scale != 1.0) PetscCall(VecScale(y, scale));
    if (dot) PetscCall(LocalDot(y, dotvec ? dotvec : y, dot));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode OpsSGMRESUpdate(PetscInt nv, const PetscScalar coef[], const Vec V[], Vec w, PetscScalar scale, PetscScalar eta, Vec zold, Vec znew, PetscScalar dots[1])
{
  PetscBool fused;

  PetscFunctionBegin;
  PetscCall(CheckNoTarget("this operation"));
  PetscCall(AllOnBackend({w, zold, znew}, &fused));
  for (PetscInt j = 0; j < nv && fused; ++j) PetscCall(AllOnBackend({V[j]}, &fused));
  if (fused) {
    BackendArrays              arr;
    std::vector<PetscScalar *> va;
    PetscScalar               *wa, *zo, *zn;
    PetscInt                   n;
    PetscCall(arr.LengthOf(w, &n));
    FusedKSPCallCXX(va.resize(nv > 0 ? nv : 1));
    PetscCall(arr.Get({{w, READ_WRITE, &wa}, {zold, READ, &zo}, {znew, WRITE, &zn}}));
    for (PetscInt j = 0; j < nv; ++j) PetscCall(arr.Get(V[j], READ, &va[j]));
    PetscCall(PetscLogEventBegin(events.maxpy, w, 0, 0, 0));
    PetscCall(DeferBegin());
    PetscCall(ActiveBackend()->sgmres_update(n, nv, coef, va.data(), wa, scale, eta, zo, zn, dots));
    PetscCall(DeferEnd());
    PetscCall(PetscLogEventEnd(events.maxpy, w, 0, 0, 0));
    PetscCall(PetscLogFlops(2.0 * n * (nv + 2)));
    PetscCall(arr.RestoreAll());
  } else {
    PetscCall(OpsMAXPYScale(nv, coef, V, w, scale, nullptr, nullptr));
    PetscCall(VecWAXPY(znew, -eta, w, zold));
    PetscCall(LocalDot(znew, znew, dots));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The block's vectors [V, W] in list, *fused = PETSC_TRUE when all of them are on the backend */
static PetscErrorCode BlockOnBackend(PetscInt nv, const Vec V[], PetscInt nw, const Vec W[], std::vector<Vec> &list, PetscBool *fused)
{
  PetscFunctionBegin;
  FusedKSPCallCXX(list.assign(V, V + nv); list.insert(list.end(), W, W + nw));
  *fused = PETSC_TRUE;
  for (Vec v : list)
    if (*fused) PetscCall(AllOnBackend({v}, fused));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The backend arrays a of the block operation's list [V, W] (V read, W with wmode) and their length *n */
static PetscErrorCode BlockGetArrays(BackendArrays &arr, const std::vector<Vec> &list, PetscInt nv, PetscMemoryAccessMode wmode, std::vector<PetscScalar *> &a, PetscInt *n)
{
  PetscFunctionBegin;
  PetscCall(arr.LengthOf(list[nv], n));
  FusedKSPCallCXX(a.resize(list.size()));
  for (size_t l = 0; l < list.size(); ++l) PetscCall(arr.Get(list[l], (PetscInt)l < nv ? READ : wmode, &a[l]));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode OpsBlockMDot(PetscInt nv, const Vec V[], PetscInt nw, const Vec W[], PetscScalar *dots)
{
  const PetscInt   ld = nv + nw;
  std::vector<Vec> list;
  PetscBool        fused;

  PetscFunctionBegin;
  PetscCall(BlockOnBackend(nv, V, nw, W, list, &fused));
  if (fused) {
    BackendArrays              arr;
    std::vector<PetscScalar *> a;
    PetscInt                   n;
    PetscCall(BlockGetArrays(arr, list, nv, READ, a, &n));
    PetscCall(PetscLogEventBegin(events.mdot, W[0], 0, 0, 0));
    PetscCall(DeferBegin());
    PetscCall(ActiveBackend()->block_mdot(n, nv, a.data(), nw, a.data() + nv, dots));
    PetscCall(DeferEnd());
    PetscCall(PetscLogEventEnd(events.mdot, W[0], 0, 0, 0));
    PetscCall(PetscLogFlops(2.0 * n * (nv * nw + nw * (nw + 1) / 2)));
    PetscCall(arr.RestoreAll());
  } else {
    for (PetscInt j = 0; j < nw; ++j) {
      for (PetscInt i = nv + j + 1; i < ld; ++i) dots[j * ld + i] = 0.0;
      PetscCall(OpsMDot(nv + j, list.data(), W[j], PETSC_TRUE, dots + j * ld)); /* the self-dot lands at nv + j */
    }
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode OpsBlockMAXPY(PetscInt nv, const Vec V[], PetscInt nw, const Vec W[], const PetscScalar *coef, const PetscScalar *scale)
{
  const PetscInt   ld = nv + nw;
  std::vector<Vec> list;
  PetscBool        fused;

  PetscFunctionBegin;
  PetscCall(CheckNoTarget("this operation"));
  PetscCall(BlockOnBackend(nv, V, nw, W, list, &fused));
  if (fused) {
    BackendArrays              arr;
    std::vector<PetscScalar *> a;
    PetscInt                   n;
    PetscCall(BlockGetArrays(arr, list, nv, READ_WRITE, a, &n));
    PetscCall(PetscLogEventBegin(events.maxpy, W[0], 0, 0, 0));
    PetscCall(ActiveBackend()->block_maxpy(n, nv, a.data(), nw, a.data() + nv, coef, scale));
    PetscCall(PetscLogEventEnd(events.maxpy, W[0], 0, 0, 0));
    PetscCall(PetscLogFlops(2.0 * n * (nv * nw + nw * (nw + 1) / 2)));
    PetscCall(arr.RestoreAll());
  } else
    for (PetscInt j = 0; j < nw; ++j) PetscCall(OpsMAXPYScale(nv + j, coef + j * ld, list.data(), W[j], scale[j], nullptr, nullptr));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode OpsBatchBegin(PetscBool enable)
{
  Scope &scope = Current();

  PetscFunctionBegin;
  PetscCheck(!scope.batch_open, PETSC_COMM_SELF, PETSC_ERR_ORDER, "A batch of fused operations is already open in this solve");
  if (enable) PetscCall(ActiveBackend()->batch_begin());
  scope.batch_open  = true;
  scope.batch_defer = enable ? true : false;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode OpsBatchEnd(void)
{
  Scope &scope = Current();

  PetscFunctionBegin;
  PetscCheck(scope.batch_open, PETSC_COMM_SELF, PETSC_ERR_ORDER, "No batch of fused operations is open in this solve");
  PetscCheck(!scope.side_open, PETSC_COMM_SELF, PETSC_ERR_ORDER, "A batch of fused operations ends inside a side scope (OpsSideBegin() without OpsSideEnd())");
  PetscCall(OpsSidesJoin());
  scope.batch_open = false;
  if (scope.batch_defer) {
    scope.batch_defer = false;
    PetscCall(ActiveBackend()->batch_end());
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscBool OpsBatchIsOpen(void)
{
  return Current().batch_open ? PETSC_TRUE : PETSC_FALSE;
}

PetscBool OpsHasSecondStream(void)
{
  return ActiveBackend()->side_begin ? PETSC_TRUE : PETSC_FALSE;
}

PetscErrorCode OpsSideBegin(PetscBool enable, int side)
{
  Scope         &scope = Current();
  const Backend *be    = ActiveBackend();

  PetscFunctionBegin;
  PetscCheck(side == 0 || side == 1, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Side %d: the sides are 0 and 1", side);
  PetscCheck(!scope.side_open, PETSC_COMM_SELF, PETSC_ERR_ORDER, "A side scope is already open in this solve");
  if (enable && be->side_begin) {
    PetscCall(be->side_begin(side));
    MatFusedFactorSetSide(side);
    scope.side_moved = true;
    if (side) scope.side_forked = true;
  }
  scope.side_open = true;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode OpsSideEnd(void)
{
  Scope &scope = Current();

  PetscFunctionBegin;
  PetscCheck(scope.side_open, PETSC_COMM_SELF, PETSC_ERR_ORDER, "No side scope is open in this solve");
  scope.side_open = false;
  if (scope.side_moved) {
    scope.side_moved = false;
    PetscCall(ActiveBackend()->side_end());
    MatFusedFactorSetSide(0);
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode OpsSidesJoin(void)
{
  Scope &scope = Current();

  PetscFunctionBegin;
  PetscCheck(!scope.side_open, PETSC_COMM_SELF, PETSC_ERR_ORDER, "The sides are joined inside a side scope (OpsSideBegin() without OpsSideEnd())");
  if (scope.side_forked) {
    scope.side_forked = false;
    PetscCall(ActiveBackend()->sides_join());
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Drops what an error left behind in the innermost scope: its side scope (closed, and side 1 joined, so the backend
   is back on its stream), its open batch (the deferred results are never filled; the batches of the solves around it
   stay as they were) and a pending reduce target */
static PetscErrorCode ScopeAbandon(void)
{
  Scope         &scope = Current();
  const bool     defer = scope.batch_open && scope.batch_defer, moved = scope.side_moved, forked = scope.side_forked;
  const Backend *be = ActiveBackend();

  PetscFunctionBegin;
  scope = Scope();
  PetscCall(TargetDrop());
  if (moved) {
    PetscCall(be->side_end());
    MatFusedFactorSetSide(0);
  }
  if (forked) PetscCall(be->sides_join());
  if (defer) PetscCall(be->batch_abandon());
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode OpsSolveScoped(KSP ksp, PetscErrorCode (*solve)(KSP))
{
  PetscErrorCode ierr;
  bool           open, sides;

  PetscFunctionBegin;
  PetscCheck(nscopes < MAX_SCOPES, PetscObjectComm((PetscObject)ksp), PETSC_ERR_SUP, "Fused solves nested more than %d deep", MAX_SCOPES - 1);
  scopes[nscopes++] = Scope();
  ierr              = solve(ksp);
  open              = Current().batch_open;
  sides             = Current().side_open || Current().side_forked;
  if (ierr || open || sides) {
    const PetscErrorCode aerr = ScopeAbandon();

    nscopes--;
    PetscCall(ierr);
    PetscCall(aerr);
  } else
    nscopes--;
  PetscCheck(!open, PETSC_COMM_SELF, PETSC_ERR_PLIB, "The fused solve returned with a batch of fused operations open");
  PetscCheck(!sides, PETSC_COMM_SELF, PETSC_ERR_PLIB, "The fused solve returned with a side scope open or side 1 not joined");
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode OpsAllreduce(MPI_Comm comm, PetscScalar *buf, PetscInt n, SolveCounters *counter)
{
  PetscMPIInt size, cnt;

  PetscFunctionBegin;
  if (counter) counter->reductions++;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  if (size == 1) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(PetscMPIIntCast(n, &cnt));
  PetscCall(PetscLogEventBegin(events.allreduce, 0, 0, 0, 0));
  PetscCallMPI(MPIU_Allreduce(MPI_IN_PLACE, buf, cnt, MPIU_SCALAR, MPIU_SUM, comm));
  PetscCall(PetscLogEventEnd(events.allreduce, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode OpsChunkSupported(Mat A, std::initializer_list<Vec> vecs, PetscBool nccl, PetscBool *parallel, const char **unsupported)
{
  const Backend *be = ActiveBackend();
  PetscBool      fusedvecs, fusedmat;
  PetscMPIInt    size;

  PetscFunctionBegin;
  PetscCall(AllFused(vecs, &fusedvecs));
  PetscCallMPI(MPI_Comm_size(PetscObjectComm((PetscObject)A), &size));
  *parallel    = size > 1 ? PETSC_TRUE : PETSC_FALSE;
  *unsupported = nullptr;
  if (size == 1) {
    PetscCall(MatIsSeqAIJFused(A, &fusedmat));
    if (!fusedvecs || !fusedmat) *unsupported = "chunks need fused vectors and a MATSEQAIJFUSED matrix (one process)";
  } else {
    PetscCall(MatIsMPIAIJFused(A, &fusedmat));
    if (!fusedvecs || !fusedmat)
      *unsupported = "chunks need fused vectors and a MATMPIAIJFUSED matrix (several processes)";
    else if (!be->allreduce)
      *unsupported = "with several processes this backend sums through the host in every iteration";
    else if (!be->host_memory && !nccl)
      *unsupported = "with several processes each iteration's reduction goes through the host (-fused_reduction nccl keeps them on the GPU's stream)";
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

namespace
{
/* The backend communicator of an MPI communicator, kept as an attribute of it (freed with it) */
struct ChunkComm {
  const Backend *backend = nullptr;
  void          *handle  = nullptr;
  const char    *why     = nullptr;
};
PetscMPIInt chunk_comm_keyval = MPI_KEYVAL_INVALID;

int ChunkCommDelete(MPI_Comm, PetscMPIInt, void *value, void *)
{
  ChunkComm *c = static_cast<ChunkComm *>(value);

  if (c->backend && c->handle && c->backend->comm_destroy(&c->handle)) return MPI_ERR_OTHER;
  delete c;
  return MPI_SUCCESS;
}
} // namespace

PetscErrorCode OpsChunkComm(Mat A, PetscBool create, void **handle, const char **why)
{
  MPI_Comm    comm = PetscObjectComm((PetscObject)A);
  ChunkComm  *c    = nullptr;
  PetscMPIInt found;

  PetscFunctionBegin;
  *handle = nullptr;
  *why    = nullptr;
  if (chunk_comm_keyval == MPI_KEYVAL_INVALID) PetscCallMPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, ChunkCommDelete, &chunk_comm_keyval, nullptr));
  PetscCallMPI(MPI_Comm_get_attr(comm, chunk_comm_keyval, &c, &found));
  if (found && c->backend != ActiveBackend()) { /* made by another backend: replaced */
    PetscCallMPI(MPI_Comm_delete_attr(comm, chunk_comm_keyval));
    found = 0;
  }
  if (!found) {
    PetscCheck(create, PETSC_COMM_SELF, PETSC_ERR_PLIB, "No backend communicator for this chunk: OpsChunkComm() with create first (collective)");
    FusedKSPCallCXX(c = new ChunkComm());
    c->backend = ActiveBackend();
    PetscCall(c->backend->comm_create(comm, &c->handle, &c->why));
    PetscCallMPI(MPI_Comm_set_attr(comm, chunk_comm_keyval, c));
  }
  *handle = c->handle;
  *why    = c->why;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode OpsChunkKey(Mat A, std::initializer_list<Vec> vecs, std::vector<const void *> *key)
{
  PetscInt64 generation;

  PetscFunctionBegin;
  for (Vec v : vecs) {
    PetscScalar *a;
    if (!v) continue;
    PetscCall(VecFusedGetArray(v, READ, &a));
    FusedKSPCallCXX(key->push_back(a));
    PetscCall(VecFusedRestoreArray(v, READ, &a));
  }
  PetscCall(MatAIJFusedGetArraysGeneration(A, &generation));
  FusedKSPCallCXX(key->push_back(reinterpret_cast<const void *>((uintptr_t)generation)));
  {
    PetscBool mpi;

    PetscCall(MatIsMPIAIJFused(A, &mpi));
    if (mpi) { /* the blocks' and the halo's arrays */
      const CSRView  *csr;
      const SELLView *sell;
      PetscInt64      nnz;
      ChunkParallel   par;

      PetscCall(MatMPIAIJFusedGetChunkView(A, &csr, &sell, &nnz, &par, &generation));
      FusedKSPCallCXX(key->insert(key->end(), {reinterpret_cast<const void *>((uintptr_t)generation), par.offdiag->vals, par.offdiag->colidx, par.offdiag_rows, par.send_idx, par.recv_idx, par.halo, par.plan.send_buf, par.plan.recv_buf}));
    }
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode OpsBackendBufferEnsure(size_t bytes, OpsBackendBuffer *buf)
{
  const Backend *be = ActiveBackend();

  PetscFunctionBegin;
  if (buf->bytes >= bytes) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(OpsBackendBufferDestroy(buf));
  PetscCall(be->malloc_bytes(bytes, &buf->device));
  PetscCall(be->malloc_host(bytes, &buf->host));
  buf->bytes = bytes;
  std::memset(buf->host, 0, bytes); /* defined contents: slots a solver does not compute are copied back too */
  PetscCall(be->copy_to_backend(buf->device, buf->host, bytes));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode OpsBackendBufferDestroy(OpsBackendBuffer *buf)
{
  const Backend *be = ActiveBackend();

  PetscFunctionBegin;
  if (buf->bytes) PetscCall(be->fence_record());
  if (buf->bytes) PetscCall(be->fence_wait());
  PetscCall(be->free_bytes(buf->device));
  PetscCall(be->free_host(buf->host));
  *buf = OpsBackendBuffer();
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode OpsBackendBufferToBackend(OpsBackendBuffer *buf, size_t offset, size_t bytes)
{
  PetscFunctionBegin;
  PetscCheck(offset + bytes <= buf->bytes, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Bytes [%zu, %zu) outside a buffer of %zu", offset, offset + bytes, buf->bytes);
  PetscCall(ActiveBackend()->copy_to_backend_async((char *)buf->device + offset, (char *)buf->host + offset, bytes));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode OpsBackendBufferToHost(OpsBackendBuffer *buf, size_t offset, size_t bytes)
{
  PetscFunctionBegin;
  PetscCheck(offset + bytes <= buf->bytes, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Bytes [%zu, %zu) outside a buffer of %zu", offset, offset + bytes, buf->bytes);
  PetscCall(ActiveBackend()->copy_to_host_async((char *)buf->host + offset, (char *)buf->device + offset, bytes));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode OpsWait(void)
{
  PetscFunctionBegin;
  PetscCall(PetscLogEventBegin(events.chunk_wait, 0, 0, 0, 0));
  PetscCall(ActiveBackend()->fence_record());
  PetscCall(ActiveBackend()->fence_wait());
  PetscCall(PetscLogEventEnd(events.chunk_wait, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode OpsReduceInto(PetscScalar *slot, const PetscInt *stop)
{
  PetscFunctionBegin;
  PetscCheck(!target_pending, PETSC_COMM_SELF, PETSC_ERR_ORDER, "The previous OpsReduceInto() target was not used");
  PetscCall(ActiveBackend()->reduce_target(slot, stop));
  target_pending = true;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode OpsCGUpdateChained(const PetscScalar *prev, ChunkControl *ctl, PetscInt j, Vec x, Vec r, Vec z, Vec p, Vec q, Vec u, Vec w)
{
  PetscBool      fused;
  BackendArrays  arr;
  CGUpdateArrays v;

  PetscFunctionBegin;
  PetscCheck(target_pending, PETSC_COMM_SELF, PETSC_ERR_ORDER, "OpsCGUpdateChained() needs an OpsReduceInto() target");
  PetscCall(AllFused({x, r, z, p, q, u, w}, &fused));
  PetscCheck(fused, PETSC_COMM_SELF, PETSC_ERR_SUP, "Device-resident scalars need fused vectors");
  PetscCall(GetCGUpdateArrays(arr, x, r, z, p, q, u, w, &v));
  PetscCall(PetscLogEventBegin(events.cg_update, x, r, p, 0));
  PetscCall(ActiveBackend()->cg_update_chained(v.n, prev, ctl, j, v.x, v.r, v.z, v.p, v.q, v.u, v.w));
  target_pending = false;
  PetscCall(PetscLogEventEnd(events.cg_update, x, r, p, 0));
  PetscCall(PetscLogFlops(12.0 * v.n));
  PetscCall(arr.RestoreAll());
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The checks of a whole-chunk operation (`what`: its solver) - fused operands, the vectors of the layout of the
   square matrix - and the backend view of its matrix                                                            */
static PetscErrorCode ChunkMatrix(const char *what, Mat A, std::initializer_list<Vec> vecs, const CSRView **csr, const SELLView **sell, PetscInt64 *nnz, ChunkParallel *par, const ChunkParallel **parp)
{
  PetscBool fused, seq, mpi;
  PetscInt  rows, cols;

  PetscFunctionBegin;
  PetscCheck(!target_pending, PETSC_COMM_SELF, PETSC_ERR_ORDER, "A chunk of %s iterations writes its own slots: no OpsReduceInto() target may be pending", what);
  PetscCall(AllFused(vecs, &fused));
  PetscCall(MatIsSeqAIJFused(A, &seq));
  PetscCall(MatIsMPIAIJFused(A, &mpi));
  PetscCheck(fused && (seq || mpi), PETSC_COMM_SELF, PETSC_ERR_SUP, "A chunk of %s iterations needs fused vectors and a MATSEQAIJFUSED or MATMPIAIJFUSED matrix", what);
  PetscCall(MatGetLocalSize(A, &rows, &cols));
  PetscCheck(rows == cols, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "A chunk of %s iterations needs a square matrix, not %" PetscInt_FMT " x %" PetscInt_FMT, what, rows, cols);
  for (Vec v : vecs) {
    PetscInt n;

    if (!v) continue;
    PetscCall(VecGetLocalSize(v, &n));
    PetscCheck(n == rows, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "A chunk of %s iterations on a matrix of %" PetscInt_FMT " local rows got a vector of local length %" PetscInt_FMT, what, rows, n);
  }
  *parp = nullptr;
  if (seq)
    PetscCall(MatSeqAIJFusedGetView(A, csr, sell, nnz));
  else {
    PetscInt64  generation;
    const char *why;

    PetscCall(MatMPIAIJFusedGetChunkView(A, csr, sell, nnz, par, &generation));
    PetscCall(OpsChunkComm(A, PETSC_FALSE, &par->comm, &why));
    PetscCheck(par->comm, PETSC_COMM_SELF, PETSC_ERR_SUP, "A chunk of %s iterations with several processes needs the backend's communicator: %s", what, why ? why : "none");
    *parp = par;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The fields every chunk's arguments share and the chunk's run on the backend, op, logged as event (x, p:
   the event's other objects, or 0)                                                                     */
template <class Args>
static PetscErrorCode RunChunk(Args *args, PetscScalar *slots, ChunkControl *ctl, PetscInt k, ChunkForm form, PetscInt64 nnz, PetscErrorCode (*Backend::*op)(const Args *), PetscLogEvent event, Mat A, PetscObject x, PetscObject p)
{
  PetscFunctionBegin;
  args->slots = slots;
  args->ctl   = ctl;
  args->k     = k;
  args->form  = args->par ? ChunkForm::STEPS : form; /* a persistent kernel cannot wait for the other processes */
  args->nnz   = nnz;
  PetscCall(PetscLogEventBegin(event, A, x, p, 0));
  PetscCall((ActiveBackend()->*op)(args));
  PetscCall(PetscLogEventEnd(event, A, x, p, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode OpsCGChunk(Mat A, PetscInt k, PetscScalar *slots, ChunkControl *ctl, Vec b, PetscBool guess, PetscInt bnorm, Vec x, Vec r, Vec p, Vec q, Vec w, ChunkForm form)
{
  const PetscMemoryAccessMode updated = b ? WRITE : READ_WRITE;
  BackendArrays               arr;
  CGChunkArgs                 args;
  PetscScalar                *wa, *ba;
  PetscInt                    n;
  PetscInt64                  nnz;

  ChunkParallel par;

  PetscFunctionBegin;
  PetscCall(ChunkMatrix("CG", A, {b, x, r, p, q, w}, &args.csr, &args.sell, &nnz, &par, &args.par));
  PetscCall(arr.LengthOf(x, &n));
  PetscCall(arr.Get({{b, READ, &ba}, {x, b && !guess ? updated : READ_WRITE, &args.x}, {r, updated, &args.r}, {p, updated, &args.p}, {q, updated, &args.q}, {w, READ, &wa}}));
  args.b     = ba;
  args.guess = b ? guess : PETSC_FALSE;
  args.bnorm = b ? bnorm : CHUNK_BNORM_NONE;
  args.w     = wa;
  PetscCall(RunChunk(&args, slots, ctl, k, form, nnz, &Backend::cg_chunk, events.cg_chunk, A, (PetscObject)x, (PetscObject)p));
  PetscCall(PetscLogFlops((k + (b ? 1 : 0)) * (16.0 * n + 2.0 * (PetscLogDouble)nnz) + (b && guess ? 2.0 * (PetscLogDouble)nnz : 0)));
  PetscCall(arr.RestoreAll());
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode OpsBCGSChunk(Mat A, PetscInt k, PetscScalar *slots, ChunkControl *ctl, Vec wl, Vec wr, Vec b, Vec x, Vec r, Vec p, Vec s, Vec Ap, Vec As, Vec rstar, ChunkForm form)
{
  BackendArrays arr;
  BCGSChunkArgs args;
  PetscScalar  *wla, *wra, *ba;
  PetscInt      n;
  PetscInt64    nnz;

  ChunkParallel par;

  PetscFunctionBegin;
  PetscCall(ChunkMatrix("BiCGStab", A, {wl, wr, b, x, r, p, s, Ap, As, rstar}, &args.csr, &args.sell, &nnz, &par, &args.par));
  PetscCall(arr.LengthOf(x, &n));
  PetscCall(arr.Get(
      {{wl, READ, &wla}, {wr, READ, &wra}, {b, READ, &ba}, {rstar, b ? WRITE : READ, &args.rstar}, {x, READ_WRITE, &args.x}, {r, READ_WRITE, &args.r}, {p, READ_WRITE, &args.p}, {s, WRITE, &args.s}, {Ap, WRITE, &args.Ap}, {As, WRITE, &args.As}}));
  args.wl = wla;
  args.wr = wra;
  args.b  = ba;
  PetscCall(RunChunk(&args, slots, ctl, k, form, nnz, &Backend::bcgs_chunk, events.bcgs_chunk, A, (PetscObject)x, (PetscObject)p));
  PetscCall(PetscLogFlops(k * (22.0 * n + 4.0 * (PetscLogDouble)nnz)));
  PetscCall(arr.RestoreAll());
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode OpsWAXPYDotChained(const PetscScalar *prev, const PetscScalar *cur, ChunkControl *ctl, PetscInt j, Vec x, Vec v, Vec y)
{
  PetscBool     fused;
  BackendArrays arr;
  PetscScalar  *xa, *va, *ya;
  PetscInt      n;

  PetscFunctionBegin;
  PetscCheck(target_pending, PETSC_COMM_SELF, PETSC_ERR_ORDER, "OpsWAXPYDotChained() needs an OpsReduceInto() target");
  PetscCall(AllFused({x, v, y}, &fused));
  PetscCheck(fused, PETSC_COMM_SELF, PETSC_ERR_SUP, "Device-resident scalars need fused vectors");
  PetscCall(arr.LengthOf(y, &n));
  PetscCall(arr.Get({{x, READ, &xa}, {v, READ, &va}, {y, WRITE, &ya}}));
  PetscCall(PetscLogEventBegin(events.waxpy_dot, x, v, y, 0));
  PetscCall(ActiveBackend()->waxpy_dot_chained(n, prev, cur, ctl, j, xa, va, ya));
  target_pending = false;
  PetscCall(PetscLogEventEnd(events.waxpy_dot, x, v, y, 0));
  PetscCall(PetscLogFlops(4.0 * n));
  PetscCall(arr.RestoreAll());
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode OpsBCGSUpdateChained(const PetscScalar *prev, const PetscScalar *cur, ChunkControl *ctl, PetscInt j, Vec wr, Vec x, Vec r, Vec p, Vec s, Vec Ap, Vec As, Vec rstar)
{
  PetscBool        fused;
  BackendArrays    arr;
  BCGSUpdateArrays v;

  PetscFunctionBegin;
  PetscCheck(target_pending, PETSC_COMM_SELF, PETSC_ERR_ORDER, "OpsBCGSUpdateChained() needs an OpsReduceInto() target");
  PetscCall(AllFused({wr, x, r, p, s, Ap, As, rstar}, &fused));
  PetscCheck(fused, PETSC_COMM_SELF, PETSC_ERR_SUP, "Device-resident scalars need fused vectors");
  PetscCall(GetBCGSUpdateArrays(arr, wr, x, r, p, s, Ap, As, rstar, nullptr, &v));
  PetscCall(PetscLogEventBegin(events.bcgs_update, x, r, p, 0));
  PetscCall(ActiveBackend()->bcgs_update_chained(v.n, prev, cur, ctl, j, v.wr, v.x, v.r, v.p, v.s, v.Ap, v.As, v.rstar));
  target_pending = false;
  PetscCall(PetscLogEventEnd(events.bcgs_update, x, r, p, 0));
  PetscCall(PetscLogFlops(14.0 * v.n));
  PetscCall(arr.RestoreAll());
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode OpsSGMRESChunk(Mat A, PetscInt i0, PetscInt k, PetscInt m, PetscReal keep, PetscScalar *slots, ChunkControl *ctl, Vec b, Vec wr, const Vec V[], const Vec Z[], ChunkForm form)
{
  BackendArrays              arr;
  SGMRESChunkArgs            args;
  std::vector<PetscScalar *> va, za;
  PetscScalar               *wra, *ba;
  ChunkParallel              par;
  PetscInt                   n;
  PetscInt64                 nnz;

  PetscFunctionBegin;
  PetscCheck(i0 >= 0 && k >= 0 && i0 + k <= m, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Steps %" PetscInt_FMT "..%" PetscInt_FMT " outside the restart cycle of %" PetscInt_FMT, i0 + 1, i0 + k, m);
  FusedKSPCallCXX(va.assign(m + 1, nullptr); za.assign(m + 2, nullptr));
  PetscCall(ChunkMatrix("simpler GMRES", A, {b, wr, Z[i0 + 1]}, &args.csr, &args.sell, &nnz, &par, &args.par));
  PetscCheck(!args.par || !b, PETSC_COMM_SELF, PETSC_ERR_SUP, "A chunk of simpler GMRES steps with several processes does not compute the start");
  PetscCall(arr.LengthOf(Z[i0 + 1], &n));
  PetscCall(arr.Get({{wr, READ, &wra}, {b, READ, &ba}}));
  for (PetscInt v = 1; v <= i0 + k; ++v) {
    PetscBool fused;

    PetscCall(AllFused({V[v], Z[v + 1]}, &fused));
    PetscCheck(fused, PETSC_COMM_SELF, PETSC_ERR_SUP, "A chunk of simpler GMRES steps needs fused vectors");
    PetscCall(arr.Get(V[v], v <= i0 ? READ : READ_WRITE, &va[v]));
  }
  for (PetscInt v = i0 + 1; v <= i0 + k + 1; ++v) PetscCall(arr.Get(Z[v], v == i0 + 1 && !b ? READ : READ_WRITE, &za[v]));
  args.wr   = wra;
  args.b    = ba;
  args.V    = va.data();
  args.Z    = za.data();
  args.i0   = i0;
  args.m    = m;
  args.keep = keep;
  PetscCall(RunChunk(&args, slots, ctl, k, form, nnz, &Backend::sgmres_chunk, events.sgmres_chunk, A, nullptr, nullptr));
  PetscCall(PetscLogFlops(k * (2.0 * (PetscLogDouble)nnz + 4.0 * n * (i0 + (k + 1) / 2.0 + 1))));
  PetscCall(arr.RestoreAll());
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode OpsSGMRESUpdateChained(PetscInt i, PetscInt m, PetscReal keep, const Vec V[], Vec w, Vec zold, Vec znew, const PetscScalar *prev, PetscScalar *cur, ChunkControl *ctl, PetscInt j)
{
  PetscBool                  fused;
  BackendArrays              arr;
  std::vector<PetscScalar *> va;
  PetscScalar               *wa, *zoa, *zna;
  PetscInt                   n;

  PetscFunctionBegin;
  FusedKSPCallCXX(va.resize(i > 1 ? i - 1 : 1));
  PetscCheck(target_pending, PETSC_COMM_SELF, PETSC_ERR_ORDER, "OpsSGMRESUpdateChained() needs an OpsReduceInto() target");
  PetscCall(AllFused({w, zold, znew}, &fused));
  for (PetscInt v = 0; v < i - 1 && fused; ++v) PetscCall(AllFused({V[v]}, &fused));
  PetscCheck(fused, PETSC_COMM_SELF, PETSC_ERR_SUP, "Device-resident scalars need fused vectors");
  PetscCall(arr.LengthOf(w, &n));
  for (PetscInt v = 0; v < i - 1; ++v) PetscCall(arr.Get(V[v], READ, &va[v]));
  PetscCall(arr.Get({{w, READ_WRITE, &wa}, {zold, READ, &zoa}, {znew, WRITE, &zna}}));
  PetscCall(PetscLogEventBegin(events.maxpy, w, 0, 0, 0));
  PetscCall(ActiveBackend()->sgmres_update_chained(n, i, m, keep, va.data(), wa, zoa, zna, prev, cur, ctl, j));
  target_pending = false;
  PetscCall(PetscLogEventEnd(events.maxpy, w, 0, 0, 0));
  PetscCall(PetscLogFlops(2.0 * n * (i + 1)));
  PetscCall(arr.RestoreAll());
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode OpsGraphRecord(PetscErrorCode (*body)(void *), void *ctx, void **graph, PetscBool *recorded)
{
  const Backend *be = ActiveBackend();
  PetscBool      capturing;

  PetscFunctionBegin;
  PetscCall(be->graph_begin(&capturing));
  *recorded = capturing;
  if (!capturing) PetscFunctionReturn(PETSC_SUCCESS);
  {
    PetscErrorCode ierr = body(ctx);
    if (!ierr) ierr = be->graph_end(graph);
    if (ierr) {
      PetscCall(TargetDrop());
      PetscCall(be->graph_abort());
      PetscCall(ierr);
    }
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode OpsGraphLaunch(void *graph, PetscBool *launched)
{
  PetscFunctionBegin;
  PetscCall(PetscLogEventBegin(events.graph_launch, 0, 0, 0, 0));
  PetscCall(ActiveBackend()->graph_launch(graph, launched));
  PetscCall(PetscLogEventEnd(events.graph_launch, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode OpsMarkWritten(std::initializer_list<Vec> vecs)
{
  PetscFunctionBegin;
  for (Vec v : vecs) {
    PetscScalar *a;
    if (!v) continue;
    PetscCall(VecFusedGetArray(v, READ_WRITE, &a));
    PetscCall(VecFusedRestoreArray(v, READ_WRITE, &a));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode OpsGraphDestroy(void **graph)
{
  PetscFunctionBegin;
  if (*graph) PetscCall(ActiveBackend()->graph_destroy(graph));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode OpsMatrixPowersSetUp(Mat A, PetscInt s, Vec w, Vec x, MatPowers **mp)
{
  PetscBool fusedmat, fusedvecs;

  PetscFunctionBegin;
  PetscCall(MatIsMPIAIJFused(A, &fusedmat));
  PetscCall(AllOnBackend({w, x}, &fusedvecs));
  if (*mp) {
    Mat      B;
    PetscInt depth;

    PetscCall(MatPowersGetInfo(*mp, &B, &depth, nullptr, nullptr, nullptr));
    if (!fusedmat || !fusedvecs || B != A || depth != s) PetscCall(MatPowersDestroy(mp));
  }
  if (!fusedmat || !fusedvecs) PetscFunctionReturn(PETSC_SUCCESS);
  if (!*mp) PetscCall(MatPowersCreate(A, s, mp));
  {
    BackendArrays arr;
    PetscScalar  *wa;

    PetscCall(arr.Get(w, READ, &wa));
    PetscCall(MatPowersUpdate(*mp, wa));
    PetscCall(arr.RestoreAll());
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode OpsMatrixPowersDestroy(MatPowers **mp)
{
  PetscFunctionBegin;
  PetscCall(MatPowersDestroy(mp));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode OpsMatrixPowers(MatPowers *mp, Vec w, PetscInt sb, const PetscScalar *c, const Vec Y[])
{
  BackendArrays              arr;
  std::vector<PetscScalar *> ya;
  PetscScalar               *wa;
  PetscInt                   n;

  PetscFunctionBegin;
  PetscCall(CheckNoTarget("the matrix powers kernel"));
  FusedKSPCallCXX(ya.resize(sb + 1));
  PetscCall(arr.LengthOf(Y[0], &n));
  PetscCall(arr.Get({{w, READ, &wa}, {Y[0], READ, &ya[0]}}));
  for (PetscInt i = 1; i <= sb; ++i) PetscCall(arr.Get(Y[i], WRITE, &ya[i]));
  PetscCall(MatPowersApply(mp, wa, sb, c, ya.data()));
  PetscCall(arr.RestoreAll());
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode OpsMatrixPowersGetInfo(MatPowers *mp, PetscInt *nghost, PetscInt *nghostrows, PetscInt64 *exchanges)
{
  PetscFunctionBegin;
  PetscCall(MatPowersGetInfo(mp, nullptr, nullptr, nghost, nghostrows, exchanges));
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace fusedksp
