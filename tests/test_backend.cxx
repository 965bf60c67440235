/*
   test_backend: every operation of the CUDA backend (-fused_backend cuda, the default) or of the Kokkos backend
   (-fused_backend kokkos, -fused_kokkos_threads n) checked against the host backend (the reference implementation of the
   contract in src/backend/backend.hpp).

   Random data in [-1, 1] (never 0) from a fixed seed, lengths 0, 1, 31, 32, 33, 1000, 4099, 1000003 (Kokkos:
   0, 1, 255, 256, 257, 2047, 2048, 2049, 4099, 524287, 524289, 1000003 - around the chunk width FUSED_MIN_CHUNK,
   the single chunk up to FUSED_SINGLE_BLOCK and the most chunks FUSED_REDUCE_BLOCKS x FUSED_MIN_CHUNK);
   pure outputs are filled with NaN before each call; random CSR matrices (row lengths 0..12 with
   empty rows, 0..2, 0..30, 16..64, a rectangular one) and a 7-point-like banded one, with and
   without the weights wl/wr, in CSR and in SELL-P with 1, 2, 4 and 8 threads per row (the layout placed by
   sell_from_csr, slot by slot against the host's placement; the products against the
   host's CSR product); csr_transpose (CUDA; exact against the host's counting sort); diag_get/diag_shift; every DotSpec kind; mdot/maxpy_scale with 1, 5, 40 (and 300)
   vectors (maxpy_scale with no dot, <y,y> and <y,dotvec>; sgmres_update); block_mdot and block_maxpy (CA-GMRES'
   block Gram-Schmidt) with nv = 0, 1, 5, 30, 61 (and 250) vectors and nw = 1, 2, 5, 8, 9, 16 columns on the
   lengths of BLOCK_SIZES (up to 524289: around the block width, the single block, the multi-dot's chunks and one
   row per thread), the host's also against per-column mdot and maxpy_scale, block_mdot also deferred in a batch
   and into a reduce target; a batch of deferred second stages; the halo operations (spmv_offdiag_dots on
   short-row and rectangular blocks with
   and without wl, gather with and without the weight, scatter) and the staging path (pinned
   buffers, asynchronous copies, fence); cg_chunk (a chunk of CG iterations, as one persistent kernel -
   one thread block for small matrices, or a grid - and in steps) on symmetric positive definite matrices, run through, stopped by the norm and by a
   breakdown, against the host's steps (1e-10: k iterations of rounding differences); bcgs_chunk
   likewise (1e-8) on nonsymmetric matrices, without Jacobi and with it on the left and on the right;
   sgmres_chunk likewise (1e-9) for a restart cycle run as two chunks, without Jacobi and with it on
   the right, ended by a breakdown in the first chunk through a cancellation threshold of 2;
   blockdiag_mult (point-block Jacobi) with blocks of sizes 1, 2, 3, 4, 5, 7 and of random sizes 1..8, plain and
   transposed, 0, 1, 255, 256, 257 and 4099 blocks (one thread per block on the GPU) and more blocks than the grid's
   threads, the host reference also against the definition, and a view with both a block size and offsets (an error).
   Vectors must agree to 1e-12 relative to their largest entry (every operand is compared, so
   inputs must come back unchanged), dot products to 1e-10 relative to the sum of the absolute
   values of their terms.  The CUDA backend's counters must show exactly one kernel launch and one
   device->host copy per fused call (none for empty ranges, no copy without dot products, one copy
   for all deferred calls of a batch) and no host->device copy; the Kokkos backend's the same, but that it runs
   every chunk as its steps and, on CPU threads (one work item per chunk), completes every call at once (one copy
   per call of a batch).

   -max_size N skips the lengths above N (the sanitizer runs).
   Without the backend (not compiled in, or no GPU) the test prints one SKIP line and exits 0.
   On the GPU machine:   make build/bin/test_backend && build/bin/test_backend
   and under the sanitizer (the out-of-memory check makes one deliberate failing cudaMalloc):
     compute-sanitizer --tool memcheck --leak-check full --report-api-errors no --error-exitcode 1 build/bin/test_backend
*/
#include <petscsys.h>
#include "backend/backend.hpp"
#include "mat/sellp.hpp"
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace fusedksp;

namespace
{

using Array = std::vector<PetscScalar>;

constexpr PetscReal VEC_RTOL = 1e-12;
constexpr PetscReal DOT_RTOL = 1e-10;
constexpr int       NONE     = -1; /* expected counter increment that is not checked */

const std::vector<PetscInt> CUDA_SIZES   = {0, 1, 31, 32, 33, 1000, 4099, 1000003};
const std::vector<PetscInt> KOKKOS_SIZES = {0, 1, 255, 256, 257, 2047, 2048, 2049, 4099, 524287, 524289, 1000003};

const PetscScalar NaN = std::numeric_limits<PetscScalar>::quiet_NaN();

/* Test state: the two backends, the random generator and the check tallies */
struct Tester {
  const Backend                              *host = nullptr, *dev = nullptr;
  std::mt19937_64                             rng{20240601};
  std::uniform_real_distribution<PetscScalar> uniform{-1.0, 1.0};
  PetscInt                                    checks = 0, failures = 0;
  PetscInt                                    max_size      = PETSC_INT_MAX; /* -max_size: skip longer vectors (sanitizer runs) */
  std::vector<PetscInt>                       sizes         = CUDA_SIZES;
  bool                                        device_chunks = true; /* the backend runs persistent chunks as one kernel (CUDA), else as their steps (then only
                                                                       the steps are tested: a persistent chunk runs the same code)                        */
  bool batches = true;                                              /* the backend defers second stages to batch_end() (CUDA, Kokkos's GPU shape), else completes each call */

  PetscScalar Random()
  {
    PetscScalar v;
    do v = uniform(rng);
    while (v == 0);
    return v;
  }

  Array RandomArray(PetscInt n)
  {
    Array a(n);
    for (auto &v : a) v = Random();
    return a;
  }

  PetscInt RandomInt(PetscInt lo, PetscInt hi) /* uniform in [lo, hi] */
  {
    return std::uniform_int_distribution<PetscInt>(lo, hi)(rng);
  }
};

/* Records one check; prints the failure (which op, n, what, the difference) */
PetscErrorCode Record(Tester &t, bool ok, const std::string &label, const char *what, PetscReal diff, PetscReal tol)
{
  PetscFunctionBegin;
  t.checks++;
  if (!ok) {
    t.failures++;
    PetscCall(PetscPrintf(PETSC_COMM_SELF, "FAILED %s: %s: max difference %g (tolerance %g)\n", label.c_str(), what, (double)diff, (double)tol));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Vector check: max_i |a_i - ref_i| <= rtol max_i |ref_i| (NaN anywhere fails) */
PetscErrorCode CheckVector(Tester &t, const std::string &label, const char *name, const Array &a, const Array &ref, PetscReal rtol = VEC_RTOL)
{
  PetscReal diff = 0, size = 0;
  bool      finite = a.size() == ref.size();

  PetscFunctionBegin;
  for (size_t i = 0; finite && i < ref.size(); ++i) {
    finite = std::isfinite(a[i]) && std::isfinite(ref[i]);
    diff   = std::max(diff, (PetscReal)std::abs(a[i] - ref[i]));
    size   = std::max(size, (PetscReal)std::abs(ref[i]));
  }
  if (!finite) diff = std::numeric_limits<PetscReal>::infinity();
  PetscCall(Record(t, diff <= rtol * size, label, name, size > 0 ? diff / size : diff, rtol));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Dot check: |a - ref| <= DOT_RTOL * scale, scale = sum of the absolute values of the terms */
PetscErrorCode CheckDots(Tester &t, const std::string &label, int nd, const PetscScalar *a, const PetscScalar *ref, const PetscReal *scale)
{
  PetscFunctionBegin;
  for (int d = 0; d < nd; ++d) {
    const PetscReal diff = std::abs(a[d] - ref[d]);
    const bool      ok   = std::isfinite(a[d]) && std::isfinite(ref[d]) && diff <= DOT_RTOL * scale[d];
    char            what[96];

    PetscCall(PetscSNPrintf(what, sizeof(what), "dots[%d] = %.16g, reference %.16g", d, (double)a[d], (double)ref[d]));
    PetscCall(Record(t, ok, label, what, scale[d] > 0 ? diff / scale[d] : diff, DOT_RTOL));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Counter check: the CUDA backend's counters moved by exactly the expected launches/copies */
PetscErrorCode CheckCounters(Tester &t, const std::string &label, const BackendCounters &before, PetscInt64 launches, PetscInt64 d2h)
{
  const BackendCounters &after = *t.dev->counters;

  PetscFunctionBegin;
  if (launches != NONE)
    PetscCall(Record(t, after.launches - before.launches == launches, label, "kernel launches (counter) differ from the expected count", (PetscReal)(after.launches - before.launches - launches), 0));
  else
    PetscCall(Record(t, after.launches - before.launches >= 1, label, "no kernel launch counted", 0, 0));
  if (d2h != NONE) PetscCall(Record(t, after.d2h - before.d2h == d2h, label, "device->host copies (counter) differ from the expected count", (PetscReal)(after.d2h - before.d2h - d2h), 0));
  PetscCall(Record(t, after.h2d == before.h2d, label, "unexpected host->device copies (counter)", (PetscReal)(after.h2d - before.h2d), 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* sum_i |a_i b_i (w_i)| : the scale of a dot product's rounding error */
PetscReal AbsDot(const Array &a, const Array &b, const Array *w = nullptr)
{
  PetscReal s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += std::abs(a[i] * b[i] * (w ? (*w)[i] : 1));
  return s;
}

/* The operands of one call: each a host array (the reference operand, updated by the host
   backend) and a device copy (updated by the CUDA backend) with the same initial values */
class Operands {
public:
  explicit Operands(Tester &t) : t_(t) {}

  /* Adds an operand with the given initial values (NaN for a pure output); returns its index.
     compare = false: an operand whose contents the two backends may leave different (not checked) */
  int Add(std::string name, Array values, bool compare = true)
  {
    list_.push_back({std::move(name), std::move(values), nullptr, compare});
    return (int)list_.size() - 1;
  }
  PetscScalar *Ref(int k)
  {
    return list_[k].ref.data();
  }
  PetscScalar *Dev(int k)
  {
    return list_[k].dev;
  }
  const Array &RefArray(int k) const
  {
    return list_[k].ref;
  }

  PetscErrorCode Upload()
  {
    PetscFunctionBegin;
    for (auto &op : list_) {
      PetscCall(t_.dev->malloc_bytes(std::max<size_t>(op.ref.size(), 1) * sizeof(PetscScalar), (void **)&op.dev));
      PetscCall(t_.dev->copy_to_backend(op.dev, op.ref.data(), op.ref.size() * sizeof(PetscScalar)));
    }
    PetscFunctionReturn(PETSC_SUCCESS);
  }

  /* Compares every operand's device copy with its reference (CheckVector, operands added with
     compare = false excepted), then frees the device copies                                     */
  PetscErrorCode CompareAndFree(const std::string &label, PetscReal rtol = VEC_RTOL)
  {
    PetscFunctionBegin;
    for (auto &op : list_) {
      Array back(op.ref.size());
      PetscCall(t_.dev->copy_to_host(back.data(), op.dev, back.size() * sizeof(PetscScalar)));
      if (op.compare) PetscCall(CheckVector(t_, label, op.name.c_str(), back, op.ref, rtol));
      PetscCall(t_.dev->free_bytes(op.dev));
      op.dev = nullptr;
    }
    PetscFunctionReturn(PETSC_SUCCESS);
  }

private:
  struct Operand {
    std::string  name;
    Array        ref;
    PetscScalar *dev;
    bool         compare;
  };
  Tester              &t_;
  std::vector<Operand> list_;
};

std::string Label(const char *op, const char *variant, PetscInt n)
{
  char buf[256];
  PetscCallAbort(PETSC_COMM_SELF, PetscSNPrintf(buf, sizeof(buf), "%s[%s] n=%" PetscInt_FMT, op, variant, n));
  return buf;
}

/* ---------------------------------------------------------------------------------------- */

enum class CGVariant { JACOBI, Z_UPDATE, UNPRECONDITIONED };

PetscErrorCode TestCGUpdate(Tester &t, PetscInt n, CGVariant variant)
{
  const char       *names[] = {"w .* r", "z -= a u", "z = r"};
  Operands          ops(t);
  const int         x = ops.Add("x", t.RandomArray(n)), r = ops.Add("r", t.RandomArray(n)), p = ops.Add("p", t.RandomArray(n)), q = ops.Add("q", t.RandomArray(n));
  const int         z = variant == CGVariant::Z_UPDATE ? ops.Add("z", t.RandomArray(n)) : NONE;
  const int         u = variant == CGVariant::Z_UPDATE ? ops.Add("u", t.RandomArray(n)) : NONE;
  const int         w = variant == CGVariant::JACOBI ? ops.Add("w", t.RandomArray(n)) : NONE;
  const PetscScalar a = t.Random(), b = t.Random();
  PetscScalar       ref[3] = {NaN, NaN, NaN}, dots[3] = {NaN, NaN, NaN};
  PetscReal         scale[3];
  BackendCounters   before;
  const std::string label = Label("cg_update", names[(int)variant], n);

  PetscFunctionBegin;
  PetscCall(ops.Upload());
  PetscCall(t.host->cg_update(n, a, b, ops.Ref(x), ops.Ref(r), z != NONE ? ops.Ref(z) : nullptr, ops.Ref(p), ops.Ref(q), u != NONE ? ops.Ref(u) : nullptr, w != NONE ? ops.Ref(w) : nullptr, ref));
  before = *t.dev->counters;
  PetscCall(t.dev->cg_update(n, a, b, ops.Dev(x), ops.Dev(r), z != NONE ? ops.Dev(z) : nullptr, ops.Dev(p), ops.Dev(q), u != NONE ? ops.Dev(u) : nullptr, w != NONE ? ops.Dev(w) : nullptr, dots));
  PetscCall(CheckCounters(t, label, before, n > 0, n > 0));
  {
    const Array &rr = ops.RefArray(r);
    Array        zz = z != NONE ? ops.RefArray(z) : rr;
    if (w != NONE)
      for (PetscInt i = 0; i < n; ++i) zz[i] = ops.RefArray(w)[i] * rr[i];
    scale[0] = AbsDot(rr, zz);
    scale[1] = AbsDot(rr, rr);
    scale[2] = AbsDot(zz, zz);
  }
  PetscCall(CheckDots(t, label, 3, dots, ref, scale));
  PetscCall(ops.CompareAndFree(label));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode TestWAXPYDot(Tester &t, PetscInt n)
{
  Operands          ops(t);
  const int         x = ops.Add("x", t.RandomArray(n)), v = ops.Add("v", t.RandomArray(n)), y = ops.Add("y", Array(n, NaN));
  const PetscScalar a      = t.Random();
  PetscScalar       ref[1] = {NaN}, dots[1] = {NaN};
  PetscReal         scale[1];
  BackendCounters   before;
  const std::string label = Label("waxpy_dot", "", n);

  PetscFunctionBegin;
  PetscCall(ops.Upload());
  PetscCall(t.host->waxpy_dot(n, a, ops.Ref(x), ops.Ref(v), ops.Ref(y), ref));
  before = *t.dev->counters;
  PetscCall(t.dev->waxpy_dot(n, a, ops.Dev(x), ops.Dev(v), ops.Dev(y), dots));
  PetscCall(CheckCounters(t, label, before, n > 0, n > 0));
  scale[0] = AbsDot(ops.RefArray(y), ops.RefArray(y));
  PetscCall(CheckDots(t, label, 1, dots, ref, scale));
  PetscCall(ops.CompareAndFree(label));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode TestBCGSUpdate(Tester &t, PetscInt n, bool with_wr, bool with_rhat)
{
  Operands          ops(t);
  const int         x = ops.Add("x", t.RandomArray(n)), r = ops.Add("r", Array(n, NaN)), p = ops.Add("p", t.RandomArray(n)), s = ops.Add("s", t.RandomArray(n));
  const int         Ap = ops.Add("Ap", t.RandomArray(n)), As = ops.Add("As", t.RandomArray(n)), rstar = ops.Add("rstar", t.RandomArray(n));
  const int         wr    = with_wr ? ops.Add("wr", t.RandomArray(n)) : NONE;
  const int         rhat  = with_rhat ? ops.Add("rhat", t.RandomArray(n)) : NONE;
  const PetscScalar alpha = t.Random(), omega = t.Random(), beta = t.Random();
  PetscScalar       ref[3] = {NaN, NaN, NaN}, dots[3] = {NaN, NaN, NaN};
  PetscReal         scale[3];
  BackendCounters   before;
  const std::string label = Label("bcgs_update", with_wr ? (with_rhat ? "wr rhat" : "wr") : "no wr", n);

  PetscFunctionBegin;
  PetscCall(ops.Upload());
  PetscCall(t.host->bcgs_update(n, alpha, omega, beta, wr != NONE ? ops.Ref(wr) : nullptr, ops.Ref(x), ops.Ref(r), ops.Ref(p), ops.Ref(s), ops.Ref(Ap), ops.Ref(As), ops.Ref(rstar), rhat != NONE ? ops.Ref(rhat) : nullptr, with_rhat ? 3 : 2, ref));
  before = *t.dev->counters;
  PetscCall(t.dev->bcgs_update(n, alpha, omega, beta, wr != NONE ? ops.Dev(wr) : nullptr, ops.Dev(x), ops.Dev(r), ops.Dev(p), ops.Dev(s), ops.Dev(Ap), ops.Dev(As), ops.Dev(rstar), rhat != NONE ? ops.Dev(rhat) : nullptr, with_rhat ? 3 : 2, dots));
  PetscCall(CheckCounters(t, label, before, n > 0, n > 0));
  scale[0] = AbsDot(ops.RefArray(r), ops.RefArray(rstar));
  scale[1] = AbsDot(ops.RefArray(r), ops.RefArray(r));
  if (with_rhat) scale[2] = AbsDot(ops.RefArray(r), ops.RefArray(rhat));
  PetscCall(CheckDots(t, label, with_rhat ? 3 : 2, dots, ref, scale));
  PetscCall(ops.CompareAndFree(label));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ---------------------------------------------------------------------------------------- */

/* The dot products of one spmv_dots/dots call: kinds, and for each its vector operand (if any) */
struct DotSet {
  std::vector<DotKind> kinds;
  std::string          Name() const
  {
    const char *letters = "ISWVX"; /* INPUT, SELF, SELF_W, VECTOR, VECTOR_W */
    std::string s;
    for (DotKind k : kinds) s += letters[(int)k];
    return s.empty() ? "no dots" : s;
  }
};

const DotSet DOT_SETS[] = {
    {{}},
    {{DotKind::DOT_INPUT}},
    {{DotKind::DOT_SELF}},
    {{DotKind::DOT_SELF_W}},
    {{DotKind::DOT_VECTOR}},
    {{DotKind::DOT_VECTOR_W}},
    {{DotKind::DOT_INPUT, DotKind::DOT_SELF, DotKind::DOT_SELF_W, DotKind::DOT_VECTOR}},
    {{DotKind::DOT_VECTOR, DotKind::DOT_SELF_W, DotKind::DOT_SELF, DotKind::DOT_INPUT}},
    {{DotKind::DOT_INPUT, DotKind::DOT_VECTOR_W, DotKind::DOT_SELF_W, DotKind::DOT_VECTOR}},
};
const DotSet &ALL_DOTS = DOT_SETS[6];

/* Adds the vector operands of a dot set (length n) and fills the host and device DotSpecs */
struct DotOperands {
  std::vector<int> vec, weight; /* operand indices per dot, NONE when the kind has no vector or weight */

  void Add(Tester &t, Operands &ops, const DotSet &set, PetscInt n)
  {
    for (DotKind k : set.kinds) {
      vec.push_back(k == DotKind::DOT_SELF_W ? ops.Add("dot weight", t.RandomArray(n)) : k == DotKind::DOT_VECTOR || k == DotKind::DOT_VECTOR_W ? ops.Add("dot vector", t.RandomArray(n)) : NONE);
      weight.push_back(k == DotKind::DOT_VECTOR_W ? ops.Add("dot weight", t.RandomArray(n)) : NONE);
    }
  }
  void Specs(Operands &ops, const DotSet &set, std::vector<DotSpec> &ref, std::vector<DotSpec> &dev)
  {
    for (size_t d = 0; d < set.kinds.size(); ++d) {
      ref.push_back({set.kinds[d], vec[d] != NONE ? ops.Ref(vec[d]) : nullptr, weight[d] != NONE ? ops.Ref(weight[d]) : nullptr});
      dev.push_back({set.kinds[d], vec[d] != NONE ? ops.Dev(vec[d]) : nullptr, weight[d] != NONE ? ops.Dev(weight[d]) : nullptr});
    }
  }
  /* sum_i |term_i| of each dot, from the reference operands */
  void Scales(const Operands &ops, const DotSet &set, const Array &in, const Array &out, PetscReal *scale) const
  {
    for (size_t d = 0; d < set.kinds.size(); ++d) {
      switch (set.kinds[d]) {
      case DotKind::DOT_INPUT:
        scale[d] = AbsDot(out, Array(in.begin(), in.begin() + out.size()));
        break;
      case DotKind::DOT_SELF:
        scale[d] = AbsDot(out, out);
        break;
      case DotKind::DOT_SELF_W:
        scale[d] = AbsDot(out, out, &ops.RefArray(vec[d]));
        break;
      case DotKind::DOT_VECTOR:
        scale[d] = AbsDot(out, ops.RefArray(vec[d]));
        break;
      case DotKind::DOT_VECTOR_W:
        scale[d] = AbsDot(out, ops.RefArray(vec[d]), &ops.RefArray(weight[d]));
        break;
      }
    }
  }
};

PetscErrorCode TestDots(Tester &t, PetscInt n, const DotSet &set)
{
  Operands             ops(t);
  const int            in = ops.Add("in", t.RandomArray(n)), out = ops.Add("out", t.RandomArray(n));
  DotOperands          dotops;
  std::vector<DotSpec> rspecs, dspecs;
  const int            nd = (int)set.kinds.size();
  PetscScalar          ref[FUSED_MAX_DOTS], dots[FUSED_MAX_DOTS];
  PetscReal            scale[FUSED_MAX_DOTS];
  BackendCounters      before;
  const std::string    label = Label("dots", set.Name().c_str(), n);

  PetscFunctionBegin;
  dotops.Add(t, ops, set, n);
  PetscCall(ops.Upload());
  dotops.Specs(ops, set, rspecs, dspecs);
  std::fill(ref, ref + FUSED_MAX_DOTS, NaN);
  std::fill(dots, dots + FUSED_MAX_DOTS, NaN);
  PetscCall(t.host->dots(n, ops.Ref(in), ops.Ref(out), nd, rspecs.data(), ref));
  before = *t.dev->counters;
  PetscCall(t.dev->dots(n, ops.Dev(in), ops.Dev(out), nd, dspecs.data(), dots));
  PetscCall(CheckCounters(t, label, before, n > 0 && nd > 0, n > 0 && nd > 0));
  dotops.Scales(ops, set, ops.RefArray(in), ops.RefArray(out), scale);
  PetscCall(CheckDots(t, label, nd, dots, ref, scale));
  PetscCall(ops.CompareAndFree(label));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ---------------------------------------------------------------------------------------- */

enum class MatrixKind { RANDOM_0_12, BANDED_7, SHORT_0_2, MEDIUM_0_30, LONG_16_64, RECTANGULAR_0_12 };
const char *MATRIX_NAMES[] = {"random 0..12", "banded 7-point", "random 0..2", "random 0..30", "random 16..64", "rectangular random 0..12"};

/* A CSR matrix on the host and its arrays on the device, in CSR and (sell.threads > 0) in SELL-P */
struct Matrix {
  PetscInt              nrows = 0, ncols = 0;
  std::vector<PetscInt> rowptr{0}, colidx;
  Array                 vals;
  CSRView               ref, dev;
  SELLView              sell; /* device arrays of the SELL-P layout; threads == 0: none */
  Matrix()
  {
    sell.threads = 0;
  }
};

void GenerateMatrix(Tester &t, MatrixKind kind, PetscInt n, Matrix &A)
{
  A.nrows = n;
  A.ncols = kind == MatrixKind::RECTANGULAR_0_12 ? 2 * n + 3 : n;
  if (kind == MatrixKind::BANDED_7) {
    const PetscInt nx        = std::max<PetscInt>(1, (PetscInt)std::lround(std::cbrt((double)n)));
    const PetscInt offsets[] = {-nx * nx, -nx, -1, 0, 1, nx, nx * nx};
    for (PetscInt i = 0; i < n; ++i) {
      for (PetscInt off : offsets)
        if (i + off >= 0 && i + off < n) {
          A.colidx.push_back(i + off);
          A.vals.push_back(t.Random());
        }
      A.rowptr.push_back((PetscInt)A.colidx.size());
    }
    return;
  }
  const PetscInt lo = kind == MatrixKind::LONG_16_64 ? 16 : 0;
  const PetscInt hi = kind == MatrixKind::SHORT_0_2 ? 2 : kind == MatrixKind::MEDIUM_0_30 ? 30 : kind == MatrixKind::LONG_16_64 ? 64 : 12;
  for (PetscInt i = 0; i < n; ++i) {
    const PetscInt len = t.RandomInt(lo, hi);
    for (PetscInt k = 0; k < len; ++k) {
      A.colidx.push_back(t.RandomInt(0, A.ncols - 1));
      A.vals.push_back(t.Random());
    }
    A.rowptr.push_back((PetscInt)A.colidx.size());
  }
}

PetscErrorCode UploadMatrix(Tester &t, Matrix &A)
{
  PetscInt    *rowptr, *colidx;
  PetscScalar *vals;
  const size_t nnz = A.colidx.size();

  PetscFunctionBegin;
  PetscCall(t.dev->malloc_bytes(A.rowptr.size() * sizeof(PetscInt), (void **)&rowptr));
  PetscCall(t.dev->malloc_bytes(std::max<size_t>(nnz, 1) * sizeof(PetscInt), (void **)&colidx));
  PetscCall(t.dev->malloc_bytes(std::max<size_t>(nnz, 1) * sizeof(PetscScalar), (void **)&vals));
  PetscCall(t.dev->copy_to_backend(rowptr, A.rowptr.data(), A.rowptr.size() * sizeof(PetscInt)));
  PetscCall(t.dev->copy_to_backend(colidx, A.colidx.data(), nnz * sizeof(PetscInt)));
  PetscCall(t.dev->copy_to_backend(vals, A.vals.data(), nnz * sizeof(PetscScalar)));
  A.ref.nrows = A.dev.nrows = A.nrows;
  A.ref.ncols = A.dev.ncols = A.ncols;
  A.ref.rowptr              = A.rowptr.data();
  A.ref.colidx              = A.colidx.data();
  A.ref.vals                = A.vals.data();
  A.dev.rowptr              = rowptr;
  A.dev.colidx              = colidx;
  A.dev.vals                = vals;
  A.ref.nnz = A.dev.nnz = (PetscInt64)nnz;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The SELL-P layout of A with `threads` threads per row, on the device: placed by the backend's sell_from_csr from
   A's CSR arrays there (the structure, then the values: two calls, as a mirror is made and refreshed), into
   poisoned arrays, and checked slot by slot against the host reference's placement (a copy: exact)             */
PetscErrorCode UploadSELL(Tester &t, Matrix &A, int threads)
{
  std::vector<PetscInt64> sliceptr;
  std::vector<PetscInt>   rcol, dcol;
  Array                   rvals, dvals;
  SELLView                ref;
  PetscInt64             *dsliceptr, nv;
  PetscInt               *colidx;
  PetscScalar            *vals;
  BackendCounters         before;
  const std::string       label = Label("sell_from_csr", (std::to_string(threads) + " threads per row").c_str(), A.nrows);
  bool                    same  = true;

  PetscFunctionBegin;
  PetscCall(SELLSlicePointers(A.nrows, A.rowptr.data(), threads, &sliceptr));
  nv = sliceptr.back();
  rcol.assign(nv, -7);
  dcol.assign(nv, -7);
  rvals.assign(nv, NaN);
  dvals.assign(nv, NaN);
  ref.nrows    = A.nrows;
  ref.ncols    = A.ncols;
  ref.threads  = threads;
  ref.sliceptr = sliceptr.data();
  PetscCall(t.host->sell_from_csr(&ref, A.rowptr.data(), A.colidx.data(), nullptr, rcol.data(), nullptr));
  PetscCall(t.host->sell_from_csr(&ref, A.rowptr.data(), nullptr, A.vals.data(), nullptr, rvals.data()));
  PetscCall(t.dev->malloc_bytes(sliceptr.size() * sizeof(PetscInt64), (void **)&dsliceptr));
  PetscCall(t.dev->malloc_bytes(std::max<PetscInt64>(nv, 1) * sizeof(PetscInt), (void **)&colidx));
  PetscCall(t.dev->malloc_bytes(std::max<PetscInt64>(nv, 1) * sizeof(PetscScalar), (void **)&vals));
  PetscCall(t.dev->copy_to_backend(dsliceptr, sliceptr.data(), sliceptr.size() * sizeof(PetscInt64)));
  PetscCall(t.dev->copy_to_backend(colidx, dcol.data(), nv * sizeof(PetscInt)));
  PetscCall(t.dev->copy_to_backend(vals, dvals.data(), nv * sizeof(PetscScalar)));
  A.sell.nrows    = A.nrows;
  A.sell.ncols    = A.ncols;
  A.sell.threads  = threads;
  A.sell.sliceptr = dsliceptr;
  before          = *t.dev->counters;
  PetscCall(t.dev->sell_from_csr(&A.sell, A.dev.rowptr, A.dev.colidx, nullptr, colidx, nullptr));
  PetscCall(t.dev->sell_from_csr(&A.sell, A.dev.rowptr, nullptr, A.dev.vals, nullptr, vals));
  PetscCall(CheckCounters(t, label, before, A.nrows ? 2 : 0, 0));
  A.sell.colidx = colidx;
  A.sell.vals   = vals;
  PetscCall(t.dev->copy_to_host(dcol.data(), colidx, nv * sizeof(PetscInt)));
  PetscCall(t.dev->copy_to_host(dvals.data(), vals, nv * sizeof(PetscScalar)));
  for (PetscInt64 p = 0; p < nv; ++p) same = same && dcol[p] == rcol[p] && rcol[p] >= -1 && dvals[p] == rvals[p];
  PetscCall(Record(t, same, label, "the device's slots differ from the host reference's, or a slot was not written", 0, 0));
  { /* csr_from_sell, the inverse: the CSR arrays again, on both backends, into poisoned arrays */
    const PetscInt64      nnz = (PetscInt64)A.colidx.size();
    std::vector<PetscInt> hcol(nnz, -7), back(nnz, -7);
    Array                 hvals(nnz, NaN), bvals(nnz, NaN);
    PetscInt             *ccol;
    PetscScalar          *cvals;

    ref.colidx = rcol.data();
    ref.vals   = rvals.data();
    PetscCall(t.host->csr_from_sell(&ref, A.rowptr.data(), hcol.data(), hvals.data()));
    PetscCall(t.dev->malloc_bytes(std::max<PetscInt64>(nnz, 1) * sizeof(PetscInt), (void **)&ccol));
    PetscCall(t.dev->malloc_bytes(std::max<PetscInt64>(nnz, 1) * sizeof(PetscScalar), (void **)&cvals));
    PetscCall(t.dev->copy_to_backend(ccol, back.data(), nnz * sizeof(PetscInt)));
    PetscCall(t.dev->copy_to_backend(cvals, bvals.data(), nnz * sizeof(PetscScalar)));
    before = *t.dev->counters;
    PetscCall(t.dev->csr_from_sell(&A.sell, A.dev.rowptr, ccol, nullptr));
    PetscCall(t.dev->csr_from_sell(&A.sell, A.dev.rowptr, nullptr, cvals));
    PetscCall(CheckCounters(t, label + " csr_from_sell", before, A.nrows ? 2 : 0, 0));
    PetscCall(t.dev->copy_to_host(back.data(), ccol, nnz * sizeof(PetscInt)));
    PetscCall(t.dev->copy_to_host(bvals.data(), cvals, nnz * sizeof(PetscScalar)));
    PetscCall(t.dev->free_bytes(ccol));
    PetscCall(t.dev->free_bytes(cvals));
    same = true;
    for (PetscInt64 p = 0; p < nnz; ++p) same = same && hcol[p] == A.colidx[p] && back[p] == A.colidx[p] && hvals[p] == A.vals[p] && bvals[p] == A.vals[p];
    PetscCall(Record(t, same, label, "csr_from_sell does not give the CSR arrays back (host reference or device)", 0, 0));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* csr_transpose of a backend that has one, against the host reference (poisoned outputs; a copy: exact) */
PetscErrorCode TestCSRTranspose(Tester &t, const Matrix &A, const char *matrix)
{
  const PetscInt64        nnz = (PetscInt64)A.colidx.size();
  std::vector<PetscInt>   rptr(A.ncols + 1, -7), rcol(nnz, -7), dptr(A.ncols + 1, -7), dcol(nnz, -7);
  Array                   rvals(nnz, NaN), dvals(nnz, NaN);
  PetscInt               *tptr, *tcol;
  PetscScalar            *tvals;
  BackendCounters         before;
  const std::string       label = Label("csr_transpose", matrix, A.nrows);

  PetscFunctionBegin;
  if (!t.dev->csr_transpose) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(t.host->csr_transpose(&A.ref, rptr.data(), rcol.data(), rvals.data()));
  PetscCall(t.dev->malloc_bytes(dptr.size() * sizeof(PetscInt), (void **)&tptr));
  PetscCall(t.dev->malloc_bytes(std::max<PetscInt64>(nnz, 1) * sizeof(PetscInt), (void **)&tcol));
  PetscCall(t.dev->malloc_bytes(std::max<PetscInt64>(nnz, 1) * sizeof(PetscScalar), (void **)&tvals));
  PetscCall(t.dev->copy_to_backend(tptr, dptr.data(), dptr.size() * sizeof(PetscInt)));
  PetscCall(t.dev->copy_to_backend(tcol, dcol.data(), nnz * sizeof(PetscInt)));
  PetscCall(t.dev->copy_to_backend(tvals, dvals.data(), nnz * sizeof(PetscScalar)));
  before = *t.dev->counters;
  PetscCall(t.dev->csr_transpose(&A.dev, tptr, tcol, tvals));
  PetscCall(CheckCounters(t, label, before, NONE, 0));
  PetscCall(t.dev->copy_to_host(dptr.data(), tptr, dptr.size() * sizeof(PetscInt)));
  PetscCall(t.dev->copy_to_host(dcol.data(), tcol, nnz * sizeof(PetscInt)));
  PetscCall(t.dev->copy_to_host(dvals.data(), tvals, nnz * sizeof(PetscScalar)));
  PetscCall(Record(t, dptr == rptr && rptr.back() == nnz, label, "row pointers of A^T differ from the host reference's", 0, 0));
  PetscCall(Record(t, dcol == rcol, label, "column indices of A^T differ from the host reference's", 0, 0));
  PetscCall(Record(t, std::equal(dvals.begin(), dvals.end(), rvals.begin()), label, "values of A^T differ from the host reference's", 0, 0));
  PetscCall(t.dev->free_bytes(tptr));
  PetscCall(t.dev->free_bytes(tcol));
  PetscCall(t.dev->free_bytes(tvals));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode FreeSELL(Tester &t, Matrix &A)
{
  PetscFunctionBegin;
  PetscCall(t.dev->free_bytes((void *)A.sell.sliceptr));
  PetscCall(t.dev->free_bytes((void *)A.sell.colidx));
  PetscCall(t.dev->free_bytes((void *)A.sell.vals));
  A.sell         = SELLView();
  A.sell.threads = 0;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode FreeMatrix(Tester &t, Matrix &A)
{
  PetscFunctionBegin;
  PetscCall(t.dev->free_bytes((void *)A.dev.rowptr));
  PetscCall(t.dev->free_bytes((void *)A.dev.colidx));
  PetscCall(t.dev->free_bytes((void *)A.dev.vals));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode TestSpMVDots(Tester &t, const Matrix &A, const char *matrix, bool with_wl, bool with_wr, const DotSet &set)
{
  Operands             ops(t);
  const int            in = ops.Add("in", t.RandomArray(A.ncols)), out = ops.Add("out", Array(A.nrows, NaN));
  const int            wl = with_wl ? ops.Add("wl", t.RandomArray(A.nrows)) : NONE;
  const int            wr = with_wr ? ops.Add("wr", t.RandomArray(A.ncols)) : NONE;
  DotOperands          dotops;
  std::vector<DotSpec> rspecs, dspecs;
  const int            nd = (int)set.kinds.size();
  PetscScalar          ref[FUSED_MAX_DOTS], dots[FUSED_MAX_DOTS];
  PetscReal            scale[FUSED_MAX_DOTS];
  BackendCounters      before;
  char                 variant[160];
  std::string          label;

  PetscFunctionBegin;
  PetscCall(PetscSNPrintf(variant, sizeof(variant), "%s%s%s, %s", matrix, with_wl ? ", wl" : "", with_wr ? ", wr" : "", set.Name().c_str()));
  if (A.sell.threads) {
    const std::string v = std::string(variant) + ", SELL-P " + std::to_string(A.sell.threads) + " threads per row";
    PetscCall(PetscStrncpy(variant, v.c_str(), sizeof(variant)));
  }
  label = Label(A.sell.threads ? "spmv_sell_dots" : "spmv_dots", variant, A.nrows);
  dotops.Add(t, ops, set, A.nrows);
  PetscCall(ops.Upload());
  dotops.Specs(ops, set, rspecs, dspecs);
  std::fill(ref, ref + FUSED_MAX_DOTS, NaN);
  std::fill(dots, dots + FUSED_MAX_DOTS, NaN);
  PetscCall(t.host->spmv_dots(&A.ref, wl != NONE ? ops.Ref(wl) : nullptr, wr != NONE ? ops.Ref(wr) : nullptr, ops.Ref(in), ops.Ref(out), nd, rspecs.data(), ref));
  before = *t.dev->counters;
  if (A.sell.threads)
    PetscCall(t.dev->spmv_sell_dots(&A.sell, wl != NONE ? ops.Dev(wl) : nullptr, wr != NONE ? ops.Dev(wr) : nullptr, ops.Dev(in), ops.Dev(out), nd, dspecs.data(), dots));
  else
    PetscCall(t.dev->spmv_dots(&A.dev, wl != NONE ? ops.Dev(wl) : nullptr, wr != NONE ? ops.Dev(wr) : nullptr, ops.Dev(in), ops.Dev(out), nd, dspecs.data(), dots));
  PetscCall(CheckCounters(t, label, before, A.nrows > 0, A.nrows > 0 && nd > 0));
  dotops.Scales(ops, set, ops.RefArray(in), ops.RefArray(out), scale);
  PetscCall(CheckDots(t, label, nd, dots, ref, scale));
  PetscCall(ops.CompareAndFree(label));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The row updates of spmv_update, each checked against the plain product (spmv_dots of the host backend) updated here,
   entry by entry, and against the host backend's spmv_update: out = alpha u + beta v + gamma wl (add + sign A in) */
enum class UpdateVariant { MULT_ADD, MULT_ADD_IN_PLACE, RESIDUAL, CHEBYSHEV, CHEBYSHEV_ON_U, GENERAL };
static const char *const UPDATE_VARIANT_NAMES[] = {"A in + add", "A in + out (in place)", "add - A in", "Chebyshev step", "Chebyshev step on u (in place)", "u, v and wl without add"};

PetscErrorCode TestSpMVUpdate(Tester &t, const Matrix &A, const char *matrix, UpdateVariant variant)
{
  const bool           inplace = variant == UpdateVariant::MULT_ADD_IN_PLACE || variant == UpdateVariant::CHEBYSHEV_ON_U;
  const bool           cheb    = variant == UpdateVariant::CHEBYSHEV || variant == UpdateVariant::CHEBYSHEV_ON_U || variant == UpdateVariant::GENERAL;
  Operands             ops(t);
  const int            in = ops.Add("in", t.RandomArray(A.ncols)), out = ops.Add("out", inplace ? t.RandomArray(A.nrows) : Array(A.nrows, NaN));
  const int            add = variant != UpdateVariant::GENERAL && variant != UpdateVariant::MULT_ADD_IN_PLACE ? ops.Add("add", t.RandomArray(A.nrows)) : NONE;
  const int            wl  = cheb ? ops.Add("wl", t.RandomArray(A.nrows)) : NONE;
  const int            u   = variant == UpdateVariant::CHEBYSHEV || variant == UpdateVariant::GENERAL ? ops.Add("u", t.RandomArray(A.nrows)) : NONE;
  const int            v   = cheb ? ops.Add("v", t.RandomArray(A.nrows)) : NONE;
  const Array          out0 = ops.RefArray(out);
  Array                prod(A.nrows, NaN), expected(A.nrows);
  RowUpdate            rf, df;
  BackendCounters      before;
  std::string          label;
  char                 variant_name[160];

  PetscFunctionBegin;
  PetscCall(PetscSNPrintf(variant_name, sizeof(variant_name), "%s, %s%s", matrix, UPDATE_VARIANT_NAMES[(int)variant], A.sell.threads ? (", SELL-P " + std::to_string(A.sell.threads) + " threads per row").c_str() : ""));
  label = Label("spmv_update", variant_name, A.nrows);
  PetscCall(ops.Upload());
  rf.sign = variant == UpdateVariant::RESIDUAL || cheb ? -1 : 1;
  if (cheb) {
    rf.gamma = t.Random();
    rf.alpha = t.Random();
    rf.beta  = t.Random();
  }
  df = rf;
  const int uop = variant == UpdateVariant::CHEBYSHEV_ON_U ? out : u, addop = variant == UpdateVariant::MULT_ADD_IN_PLACE ? out : add;
  rf.add = addop != NONE ? ops.Ref(addop) : nullptr;
  df.add = addop != NONE ? ops.Dev(addop) : nullptr;
  rf.wl  = wl != NONE ? ops.Ref(wl) : nullptr;
  df.wl  = wl != NONE ? ops.Dev(wl) : nullptr;
  rf.u   = uop != NONE ? ops.Ref(uop) : nullptr;
  df.u   = uop != NONE ? ops.Dev(uop) : nullptr;
  rf.v   = v != NONE ? ops.Ref(v) : nullptr;
  df.v   = v != NONE ? ops.Dev(v) : nullptr;
  /* the expected result from the plain product, before the in-place variants overwrite their operand */
  PetscCall(t.host->spmv_dots(&A.ref, nullptr, nullptr, ops.Ref(in), prod.data(), 0, nullptr, nullptr));
  for (PetscInt i = 0; i < A.nrows; ++i) {
    const PetscScalar a = addop == NONE ? 0 : (addop == out ? out0[i] : ops.RefArray(addop)[i]);
    PetscScalar       r = (a + rf.sign * prod[i]) * (wl != NONE ? ops.RefArray(wl)[i] : 1) * rf.gamma;
    if (uop != NONE) r += rf.alpha * (uop == out ? out0[i] : ops.RefArray(uop)[i]);
    if (v != NONE) r += rf.beta * ops.RefArray(v)[i];
    expected[i] = r;
  }
  PetscCall(t.host->spmv_update(&A.ref, nullptr, &rf, ops.Ref(in), ops.Ref(out)));
  before = *t.dev->counters;
  PetscCall(t.dev->spmv_update(A.sell.threads ? nullptr : &A.dev, A.sell.threads ? &A.sell : nullptr, &df, ops.Dev(in), ops.Dev(out)));
  PetscCall(CheckCounters(t, label, before, A.nrows > 0, 0));
  PetscCall(CheckVector(t, label, "host reference against the update of the plain product", ops.RefArray(out), expected));
  PetscCall(ops.CompareAndFree(label));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* spmv_update refuses an input that overlaps its output (a PETSc error, nothing written) */
PetscErrorCode TestSpMVUpdateOverlap(Tester &t, const Matrix &A, const char *matrix)
{
  Operands       ops(t);
  const int      io = ops.Add("in and out", t.RandomArray(std::max(A.nrows, A.ncols)));
  RowUpdate      f;
  PetscErrorCode ierr;

  PetscFunctionBegin;
  if (!A.nrows || !A.ncols) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(ops.Upload());
  PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, nullptr));
  ierr = t.dev->spmv_update(A.sell.threads ? nullptr : &A.dev, A.sell.threads ? &A.sell : nullptr, &f, ops.Dev(io), ops.Dev(io));
  PetscCall(PetscPopErrorHandler());
  PetscCall(Record(t, ierr == PETSC_ERR_ARG_IDN, Label("spmv_update", (std::string(matrix) + ", input = output").c_str(), A.nrows), "no PETSC_ERR_ARG_IDN error for an input that is the output", (PetscReal)ierr, 0));
  PetscCall(ops.CompareAndFree(Label("spmv_update", (std::string(matrix) + ", input = output, untouched").c_str(), A.nrows)));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Every weight combination with all dot kinds and with none, every single kind without weights */
PetscErrorCode TestSpMVMatrix(Tester &t, MatrixKind kind, PetscInt n)
{
  Matrix A;

  PetscFunctionBegin;
  GenerateMatrix(t, kind, n, A);
  PetscCall(UploadMatrix(t, A));
  PetscCall(TestCSRTranspose(t, A, MATRIX_NAMES[(int)kind]));
  for (const DotSet &set : DOT_SETS) {
    const bool all_weights = set.kinds.empty() || &set == &ALL_DOTS;
    for (int weights = 0; weights < (all_weights ? 4 : 1); ++weights) PetscCall(TestSpMVDots(t, A, MATRIX_NAMES[(int)kind], weights & 1, weights & 2, set));
  }
  for (int variant = 0; variant <= (int)UpdateVariant::GENERAL; ++variant) PetscCall(TestSpMVUpdate(t, A, MATRIX_NAMES[(int)kind], (UpdateVariant)variant));
  PetscCall(TestSpMVUpdateOverlap(t, A, MATRIX_NAMES[(int)kind]));
  for (int threads : {1, 2, 4, 8}) { /* SELL-P against the host's CSR product: all dots and none, every weight combination */
    PetscCall(UploadSELL(t, A, threads));
    for (const DotSet *set : {&DOT_SETS[0], &ALL_DOTS})
      for (int weights = 0; weights < 4; ++weights) PetscCall(TestSpMVDots(t, A, MATRIX_NAMES[(int)kind], weights & 1, weights & 2, *set));
    for (int variant = 0; variant <= (int)UpdateVariant::GENERAL; ++variant) PetscCall(TestSpMVUpdate(t, A, MATRIX_NAMES[(int)kind], (UpdateVariant)variant));
    PetscCall(TestSpMVUpdateOverlap(t, A, MATRIX_NAMES[(int)kind]));
    PetscCall(FreeSELL(t, A));
  }
  PetscCall(FreeMatrix(t, A));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ---------------------------------------------------------------------------------------- */

/* spmv_offdiag_dots: A holds the rows with entries of an off-diagonal block (A.ncols halo entries),
   the local rows 2 A.nrows + 3 of which A's rows are a sorted random subset; out and dots hold the
   diagonal block's product and its dot products on entry (random values) */
PetscErrorCode TestOffDiagDots(Tester &t, const Matrix &A, const char *matrix, bool with_wl, const DotSet &set)
{
  const PetscInt        nlocal = 2 * A.nrows + 3;
  Operands              ops(t);
  const int             halo = ops.Add("halo", t.RandomArray(A.ncols)), in = ops.Add("in", t.RandomArray(nlocal)), out = ops.Add("out", t.RandomArray(nlocal));
  const int             wl = with_wl ? ops.Add("wl", t.RandomArray(nlocal)) : NONE;
  DotOperands           dotops;
  std::vector<DotSpec>  rspecs, dspecs;
  std::vector<PetscInt> rows;
  PetscInt             *drows;
  const int             nd = (int)set.kinds.size();
  PetscScalar           ref[FUSED_MAX_DOTS], dots[FUSED_MAX_DOTS];
  PetscReal             scale[FUSED_MAX_DOTS];
  BackendCounters       before;
  char                  variant[160];
  std::string           label;

  PetscFunctionBegin;
  for (PetscInt i = 0; i < nlocal && (PetscInt)rows.size() < A.nrows; ++i) /* A.nrows of the nlocal rows, in order */
    if (t.RandomInt(0, nlocal - 1 - i) < A.nrows - (PetscInt)rows.size()) rows.push_back(i);
  PetscCall(PetscSNPrintf(variant, sizeof(variant), "%s%s, %s", matrix, with_wl ? ", wl" : "", set.Name().c_str()));
  label = Label("spmv_offdiag_dots", variant, A.nrows);
  dotops.Add(t, ops, set, nlocal);
  PetscCall(ops.Upload());
  dotops.Specs(ops, set, rspecs, dspecs);
  PetscCall(t.dev->malloc_bytes(std::max<size_t>(rows.size(), 1) * sizeof(PetscInt), (void **)&drows));
  PetscCall(t.dev->copy_to_backend(drows, rows.data(), rows.size() * sizeof(PetscInt)));
  for (int d = 0; d < FUSED_MAX_DOTS; ++d) ref[d] = dots[d] = t.Random(); /* the diagonal block's dot products */
  PetscCall(t.host->spmv_offdiag_dots(&A.ref, rows.data(), wl != NONE ? ops.Ref(wl) : nullptr, ops.Ref(halo), ops.Ref(in), ops.Ref(out), nd, rspecs.data(), ref));
  before = *t.dev->counters;
  PetscCall(t.dev->spmv_offdiag_dots(&A.dev, drows, wl != NONE ? ops.Dev(wl) : nullptr, ops.Dev(halo), ops.Dev(in), ops.Dev(out), nd, dspecs.data(), dots));
  PetscCall(CheckCounters(t, label, before, A.nrows > 0, A.nrows > 0 && nd > 0));
  PetscCall(t.dev->free_bytes(drows));
  dotops.Scales(ops, set, ops.RefArray(in), ops.RefArray(out), scale);
  for (int d = 0; d < nd; ++d) scale[d] += 1; /* the initial values */
  PetscCall(CheckDots(t, label, nd, dots, ref, scale));
  PetscCall(ops.CompareAndFree(label));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode TestOffDiagMatrix(Tester &t, MatrixKind kind, PetscInt n)
{
  Matrix A;

  PetscFunctionBegin;
  GenerateMatrix(t, kind, n, A);
  PetscCall(UploadMatrix(t, A));
  for (const DotSet &set : DOT_SETS)
    for (int wl = 0; wl < 2; ++wl) PetscCall(TestOffDiagDots(t, A, MATRIX_NAMES[(int)kind], wl, set));
  PetscCall(FreeMatrix(t, A));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* gather (random indices with repeats, with and without the weight), scatter (distinct indices) into
   a vector of n + 5 entries, and scatter with add (the gather's indices, with repeats) into another */
PetscErrorCode TestGatherScatter(Tester &t, PetscInt n, bool weighted)
{
  const PetscInt        m = n + 5;
  std::vector<PetscInt> gidx(n), sidx(m);
  PetscInt             *dgidx, *dsidx;
  Operands              ops(t);
  const int             x = ops.Add("x", t.RandomArray(m)), buf = ops.Add("buf", Array(n, NaN)), y = ops.Add("y", t.RandomArray(m));
  const int             w = weighted ? ops.Add("w", t.RandomArray(m)) : NONE, z = ops.Add("z", t.RandomArray(m));
  BackendCounters       before;
  const std::string     label = Label("gather + scatter", weighted ? "weighted" : "unweighted", n);

  PetscFunctionBegin;
  for (auto &i : gidx) i = t.RandomInt(0, m - 1);
  for (PetscInt i = 0; i < m; ++i) sidx[i] = i;
  std::shuffle(sidx.begin(), sidx.end(), t.rng);
  PetscCall(t.dev->malloc_bytes(std::max<size_t>(n, 1) * sizeof(PetscInt), (void **)&dgidx));
  PetscCall(t.dev->malloc_bytes(std::max<size_t>(n, 1) * sizeof(PetscInt), (void **)&dsidx));
  PetscCall(t.dev->copy_to_backend(dgidx, gidx.data(), n * sizeof(PetscInt)));
  PetscCall(t.dev->copy_to_backend(dsidx, sidx.data(), n * sizeof(PetscInt)));
  PetscCall(ops.Upload());
  PetscCall(t.host->gather(n, gidx.data(), w != NONE ? ops.Ref(w) : nullptr, ops.Ref(x), ops.Ref(buf)));
  PetscCall(t.host->scatter(n, sidx.data(), ops.Ref(buf), PETSC_FALSE, ops.Ref(y)));
  PetscCall(t.host->scatter(n, gidx.data(), ops.Ref(buf), PETSC_TRUE, ops.Ref(z)));
  before = *t.dev->counters;
  PetscCall(t.dev->gather(n, dgidx, w != NONE ? ops.Dev(w) : nullptr, ops.Dev(x), ops.Dev(buf)));
  PetscCall(CheckCounters(t, label + " (gather)", before, n > 0, 0));
  before = *t.dev->counters;
  PetscCall(t.dev->scatter(n, dsidx, ops.Dev(buf), PETSC_FALSE, ops.Dev(y)));
  PetscCall(CheckCounters(t, label + " (scatter)", before, n > 0, 0));
  before = *t.dev->counters;
  PetscCall(t.dev->scatter(n, dgidx, ops.Dev(buf), PETSC_TRUE, ops.Dev(z)));
  PetscCall(CheckCounters(t, label + " (scatter add)", before, n > 0, 0));
  PetscCall(ops.CompareAndFree(label));
  PetscCall(t.dev->free_bytes(dgidx));
  PetscCall(t.dev->free_bytes(dsidx));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* copy_within: random values into an array poisoned with NaN, whole and from an offset into the middle (in order
   with the copies before and after it; its own counters untouched)                                             */
PetscErrorCode TestCopyWithin(Tester &t, PetscInt n)
{
  const Array       data = t.RandomArray(n);
  const PetscInt    half = n / 2;
  Array             poison(n, NaN), back(n);
  PetscScalar      *dsrc, *ddst;
  BackendCounters   before;
  const std::string label = Label("copy_within", "whole and half", n);

  PetscFunctionBegin;
  PetscCall(t.dev->malloc_bytes(n * sizeof(PetscScalar), (void **)&dsrc));
  PetscCall(t.dev->malloc_bytes(n * sizeof(PetscScalar), (void **)&ddst));
  PetscCall(t.dev->copy_to_backend(dsrc, data.data(), n * sizeof(PetscScalar)));
  PetscCall(t.dev->copy_to_backend(ddst, poison.data(), n * sizeof(PetscScalar)));
  before = *t.dev->counters;
  PetscCall(t.dev->copy_within(ddst + (n - half), dsrc + 1, half * sizeof(PetscScalar)));
  PetscCall(Record(t, t.dev->counters->h2d == before.h2d && t.dev->counters->d2h == before.d2h, label, "counters: expected no host copy", 0, 0));
  PetscCall(t.dev->copy_to_host(back.data(), ddst, n * sizeof(PetscScalar)));
  {
    bool untouched = true;

    for (PetscInt i = 0; i < n - half; ++i) untouched = untouched && std::isnan(back[i]);
    PetscCall(Record(t, untouched, label, "entries before the copied range keep their poison", 0, 0));
  }
  PetscCall(CheckVector(t, label, "half", Array(back.begin() + (n - half), back.end()), Array(data.begin() + 1, data.begin() + 1 + half)));
  PetscCall(t.dev->copy_within(ddst, dsrc, n * sizeof(PetscScalar)));
  PetscCall(t.dev->copy_to_host(back.data(), ddst, n * sizeof(PetscScalar)));
  PetscCall(CheckVector(t, label, "whole", back, data));
  PetscCall(t.dev->free_bytes(dsrc));
  PetscCall(t.dev->free_bytes(ddst));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The staging path of the halo exchange: pinned host buffers, an asynchronous host->device copy,
   a kernel reading it, an asynchronous device->host copy of its result, a fence */
PetscErrorCode TestAsyncCopies(Tester &t, PetscInt n)
{
  const Array           data = t.RandomArray(n), w = t.RandomArray(n);
  std::vector<PetscInt> idx(n);
  PetscScalar          *hsrc, *hdst, *dsrc, *ddst, *dw;
  PetscInt             *didx;
  Array                 back(n), ref(n);
  BackendCounters       before;
  const std::string     label = Label("copy_to_backend_async + gather + copy_to_host_async + fence", "pinned", n);

  PetscFunctionBegin;
  for (PetscInt i = 0; i < n; ++i) {
    idx[i] = n - 1 - i;
    ref[i] = w[n - 1 - i] * data[n - 1 - i];
  }
  PetscCall(t.dev->malloc_host(n * sizeof(PetscScalar), (void **)&hsrc));
  PetscCall(t.dev->malloc_host(n * sizeof(PetscScalar), (void **)&hdst));
  PetscCall(t.dev->malloc_bytes(n * sizeof(PetscScalar), (void **)&dsrc));
  PetscCall(t.dev->malloc_bytes(n * sizeof(PetscScalar), (void **)&ddst));
  PetscCall(t.dev->malloc_bytes(n * sizeof(PetscScalar), (void **)&dw));
  PetscCall(t.dev->malloc_bytes(n * sizeof(PetscInt), (void **)&didx));
  PetscCall(t.dev->copy_to_backend(dw, w.data(), n * sizeof(PetscScalar)));
  PetscCall(t.dev->copy_to_backend(didx, idx.data(), n * sizeof(PetscInt)));
  std::copy(data.begin(), data.end(), hsrc);
  std::fill(hdst, hdst + n, NaN);
  before = *t.dev->counters;
  PetscCall(t.dev->copy_to_backend_async(dsrc, hsrc, n * sizeof(PetscScalar)));
  PetscCall(t.dev->gather(n, didx, dw, dsrc, ddst));
  PetscCall(t.dev->copy_to_host_async(hdst, ddst, n * sizeof(PetscScalar)));
  PetscCall(t.dev->fence_record());
  PetscCall(t.dev->fence_wait());
  std::copy(hdst, hdst + n, back.begin());
  PetscCall(Record(t, t.dev->counters->h2d - before.h2d == (n > 0) && t.dev->counters->d2h - before.d2h == (n > 0) && t.dev->counters->launches - before.launches == (n > 0), label, "counters: expected 1 h2d, 1 d2h, 1 launch", 0, 0));
  PetscCall(CheckVector(t, label, "round trip", back, ref));
  PetscCall(t.dev->free_host(hsrc));
  PetscCall(t.dev->free_host(hdst));
  PetscCall(t.dev->free_bytes(dsrc));
  PetscCall(t.dev->free_bytes(ddst));
  PetscCall(t.dev->free_bytes(dw));
  PetscCall(t.dev->free_bytes(didx));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ---------------------------------------------------------------------------------------- */

/* A call against nv vectors uses one launch in the CUDA backend up to this many dot products
   (the GMRES restarts the solvers use); above it only the single copy is asserted */
constexpr PetscInt ONE_LAUNCH_VECTORS = 200;

PetscErrorCode TestMDot(Tester &t, PetscInt n, PetscInt nv, PetscBool selfdot)
{
  Operands                         ops(t);
  std::vector<int>                 v;
  const int                        y  = ops.Add("y", t.RandomArray(n));
  const int                        nd = (int)nv + (selfdot ? 1 : 0);
  std::vector<const PetscScalar *> Vref, Vdev;
  Array                            ref(nd, NaN), dots(nd, NaN);
  std::vector<PetscReal>           scale(nd);
  BackendCounters                  before;
  char                             variant[64];
  std::string                      label;

  PetscFunctionBegin;
  PetscCall(PetscSNPrintf(variant, sizeof(variant), "nv=%" PetscInt_FMT "%s", nv, selfdot ? ", selfdot" : ""));
  label = Label("mdot", variant, n);
  for (PetscInt j = 0; j < nv; ++j) v.push_back(ops.Add("V[" + std::to_string(j) + "]", t.RandomArray(n)));
  PetscCall(ops.Upload());
  for (int k : v) {
    Vref.push_back(ops.Ref(k));
    Vdev.push_back(ops.Dev(k));
  }
  PetscCall(t.host->mdot(n, nv, Vref.data(), ops.Ref(y), selfdot, ref.data()));
  before = *t.dev->counters;
  PetscCall(t.dev->mdot(n, nv, Vdev.data(), ops.Dev(y), selfdot, dots.data()));
  PetscCall(CheckCounters(t, label, before, n == 0 || nd == 0 ? 0 : nd <= ONE_LAUNCH_VECTORS ? 1 : NONE, n > 0 && nd > 0));
  for (PetscInt j = 0; j < nv; ++j) scale[j] = AbsDot(ops.RefArray(v[j]), ops.RefArray(y));
  if (selfdot) scale[nv] = AbsDot(ops.RefArray(y), ops.RefArray(y));
  PetscCall(CheckDots(t, label, nd, dots.data(), ref.data(), scale.data()));
  PetscCall(ops.CompareAndFree(label));
  PetscFunctionReturn(PETSC_SUCCESS);
}

enum class MAXPYDot { NONE, SELF, VECTOR }; /* maxpy_scale's dot: none, <y,y>, <y,dotvec> */

PetscErrorCode TestMAXPYScale(Tester &t, PetscInt n, PetscInt nv, MAXPYDot mode)
{
  const char                      *modes[] = {"", ", <y,y>", ", <y,dotvec>"};
  Operands                         ops(t);
  std::vector<int>                 v;
  const int                        y      = ops.Add("y", t.RandomArray(n));
  const int                        dotvec = mode == MAXPYDot::VECTOR ? ops.Add("dotvec", t.RandomArray(n)) : NONE;
  const bool                       dot    = mode != MAXPYDot::NONE;
  const Array                      coef   = t.RandomArray(nv);
  const PetscScalar                scale  = t.Random();
  std::vector<const PetscScalar *> Vref, Vdev;
  PetscScalar                      ref = NaN, res = NaN;
  PetscReal                        dotscale;
  BackendCounters                  before;
  char                             variant[64];
  std::string                      label;

  PetscFunctionBegin;
  PetscCall(PetscSNPrintf(variant, sizeof(variant), "nv=%" PetscInt_FMT "%s", nv, modes[(int)mode]));
  label = Label("maxpy_scale", variant, n);
  for (PetscInt j = 0; j < nv; ++j) v.push_back(ops.Add("V[" + std::to_string(j) + "]", t.RandomArray(n)));
  PetscCall(ops.Upload());
  for (int k : v) {
    Vref.push_back(ops.Ref(k));
    Vdev.push_back(ops.Dev(k));
  }
  PetscCall(t.host->maxpy_scale(n, nv, coef.data(), Vref.data(), ops.Ref(y), scale, dotvec != NONE ? ops.Ref(dotvec) : nullptr, dot ? &ref : nullptr));
  before = *t.dev->counters;
  PetscCall(t.dev->maxpy_scale(n, nv, coef.data(), Vdev.data(), ops.Dev(y), scale, dotvec != NONE ? ops.Dev(dotvec) : nullptr, dot ? &res : nullptr));
  PetscCall(CheckCounters(t, label, before, n == 0 ? 0 : nv <= ONE_LAUNCH_VECTORS ? 1 : NONE, n > 0 && dot));
  if (dot) {
    dotscale = AbsDot(ops.RefArray(y), dotvec != NONE ? ops.RefArray(dotvec) : ops.RefArray(y));
    PetscCall(CheckDots(t, label, 1, &res, &ref, &dotscale));
  }
  PetscCall(ops.CompareAndFree(label));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode TestSGMRESUpdate(Tester &t, PetscInt n, PetscInt nv)
{
  Operands                         ops(t);
  std::vector<int>                 v;
  const int                        w = ops.Add("w", t.RandomArray(n)), zold = ops.Add("zold", t.RandomArray(n)), znew = ops.Add("znew", Array(n, NaN));
  const Array                      coef  = t.RandomArray(nv);
  const PetscScalar                scale = t.Random(), eta = t.Random();
  std::vector<const PetscScalar *> Vref, Vdev;
  PetscScalar                      ref[1] = {NaN}, dots[1] = {NaN};
  PetscReal                        dotscale[1];
  BackendCounters                  before;
  char                             variant[64];
  std::string                      label;

  PetscFunctionBegin;
  PetscCall(PetscSNPrintf(variant, sizeof(variant), "nv=%" PetscInt_FMT, nv));
  label = Label("sgmres_update", variant, n);
  for (PetscInt j = 0; j < nv; ++j) v.push_back(ops.Add("V[" + std::to_string(j) + "]", t.RandomArray(n)));
  PetscCall(ops.Upload());
  for (int k : v) {
    Vref.push_back(ops.Ref(k));
    Vdev.push_back(ops.Dev(k));
  }
  PetscCall(t.host->sgmres_update(n, nv, coef.data(), Vref.data(), ops.Ref(w), scale, eta, ops.Ref(zold), ops.Ref(znew), ref));
  before = *t.dev->counters;
  PetscCall(t.dev->sgmres_update(n, nv, coef.data(), Vdev.data(), ops.Dev(w), scale, eta, ops.Dev(zold), ops.Dev(znew), dots));
  PetscCall(CheckCounters(t, label, before, n == 0 ? 0 : nv <= ONE_LAUNCH_VECTORS ? 1 : NONE, n > 0));
  dotscale[0] = AbsDot(ops.RefArray(znew), ops.RefArray(znew));
  PetscCall(CheckDots(t, label, 1, dots, ref, dotscale));
  PetscCall(ops.CompareAndFree(label));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Deferred second stages: cg_update, spmv_dots, mdot, waxpy_dot and maxpy_scale called with
   batch_defer(PETSC_TRUE) inside one batch complete at batch_end() with ONE device->host copy in
   all; a dots() call made with batch_defer(PETSC_FALSE) inside the batch completes at once, with
   its own copy.  Run first with the largest n, the partial-sum buffer grows while sums are pending. */
PetscErrorCode TestBatch(Tester &t, PetscInt n)
{
  constexpr PetscInt               nv = 5;
  Operands                         ops(t);
  Matrix                           A;
  const int                        x = ops.Add("cg x", t.RandomArray(n)), r = ops.Add("cg r", t.RandomArray(n)), p = ops.Add("cg p", t.RandomArray(n)), q = ops.Add("cg q", t.RandomArray(n));
  const int                        in = ops.Add("spmv in", t.RandomArray(n)), out = ops.Add("spmv out", Array(n, NaN));
  const int                        ym = ops.Add("mdot y", t.RandomArray(n));
  const int                        xw = ops.Add("waxpy x", t.RandomArray(n)), vw = ops.Add("waxpy v", t.RandomArray(n)), yw = ops.Add("waxpy y", Array(n, NaN));
  const int                        ya = ops.Add("maxpy y", t.RandomArray(n)), dotvec = ops.Add("maxpy dotvec", t.RandomArray(n));
  const int                        din = ops.Add("dots in", t.RandomArray(n)), dout = ops.Add("dots out", t.RandomArray(n));
  std::vector<int>                 v;
  const Array                      coef = t.RandomArray(nv);
  const PetscScalar                a = t.Random(), b = t.Random(), aw = t.Random(), scale = t.Random();
  const DotSpec                    spmv_specs[2] = {{DotKind::DOT_INPUT, nullptr}, {DotKind::DOT_SELF, nullptr}}, self[1] = {{DotKind::DOT_SELF, nullptr}};
  std::vector<const PetscScalar *> Vref, Vdev;
  /* reference and device results: cg 3, spmv 2, mdot nv+1, waxpy 1, maxpy 1, dots 1 */
  constexpr int     ND = 3 + 2 + nv + 1 + 1 + 1 + 1;
  PetscScalar       ref[ND], res[ND];
  PetscReal         scales[ND];
  BackendCounters   before;
  const std::string label = Label("batch", "cg_update, spmv_dots, mdot, waxpy_dot, maxpy_scale deferred; dots not", n);

  PetscFunctionBegin;
  for (PetscInt j = 0; j < nv; ++j) v.push_back(ops.Add("mdot/maxpy V[" + std::to_string(j) + "]", t.RandomArray(n)));
  GenerateMatrix(t, MatrixKind::BANDED_7, n, A);
  PetscCall(UploadMatrix(t, A));
  PetscCall(ops.Upload());
  for (int k : v) {
    Vref.push_back(ops.Ref(k));
    Vdev.push_back(ops.Dev(k));
  }
  std::fill(ref, ref + ND, NaN);
  std::fill(res, res + ND, NaN);
  PetscCall(t.host->cg_update(n, a, b, ops.Ref(x), ops.Ref(r), nullptr, ops.Ref(p), ops.Ref(q), nullptr, nullptr, ref));
  PetscCall(t.host->spmv_dots(&A.ref, nullptr, nullptr, ops.Ref(in), ops.Ref(out), 2, spmv_specs, ref + 3));
  PetscCall(t.host->mdot(n, nv, Vref.data(), ops.Ref(ym), PETSC_TRUE, ref + 5));
  PetscCall(t.host->waxpy_dot(n, aw, ops.Ref(xw), ops.Ref(vw), ops.Ref(yw), ref + 6 + nv));
  PetscCall(t.host->maxpy_scale(n, nv, coef.data(), Vref.data(), ops.Ref(ya), scale, ops.Ref(dotvec), ref + 7 + nv));
  PetscCall(t.host->dots(n, ops.Ref(din), ops.Ref(dout), 1, self, ref + 8 + nv));

  before = *t.dev->counters;
  PetscCall(t.dev->batch_begin());
  PetscCall(t.dev->batch_defer(PETSC_TRUE));
  PetscCall(t.dev->cg_update(n, a, b, ops.Dev(x), ops.Dev(r), nullptr, ops.Dev(p), ops.Dev(q), nullptr, nullptr, res));
  PetscCall(t.dev->spmv_dots(&A.dev, nullptr, nullptr, ops.Dev(in), ops.Dev(out), 2, spmv_specs, res + 3));
  PetscCall(t.dev->mdot(n, nv, Vdev.data(), ops.Dev(ym), PETSC_TRUE, res + 5));
  PetscCall(t.dev->batch_defer(PETSC_FALSE));
  PetscCall(t.dev->dots(n, ops.Dev(din), ops.Dev(dout), 1, self, res + 8 + nv));
  PetscCall(Record(t, !std::isnan(res[8 + nv]), label, "dots() with batch_defer(PETSC_FALSE) did not complete at once", 0, 0));
  PetscCall(t.dev->batch_defer(PETSC_TRUE));
  PetscCall(t.dev->waxpy_dot(n, aw, ops.Dev(xw), ops.Dev(vw), ops.Dev(yw), res + 6 + nv));
  PetscCall(t.dev->maxpy_scale(n, nv, coef.data(), Vdev.data(), ops.Dev(ya), scale, ops.Dev(dotvec), res + 7 + nv));
  PetscCall(t.dev->batch_end());
  PetscCall(CheckCounters(t, label, before, n > 0 ? 6 : 0, n > 0 ? (t.batches ? 2 : 6) : 0));

  scales[0] = scales[1] = AbsDot(ops.RefArray(r), ops.RefArray(r));
  scales[2]             = scales[0];
  scales[3]             = AbsDot(ops.RefArray(out), ops.RefArray(in));
  scales[4]             = AbsDot(ops.RefArray(out), ops.RefArray(out));
  for (PetscInt j = 0; j < nv; ++j) scales[5 + j] = AbsDot(ops.RefArray(v[j]), ops.RefArray(ym));
  scales[5 + nv] = AbsDot(ops.RefArray(ym), ops.RefArray(ym));
  scales[6 + nv] = AbsDot(ops.RefArray(yw), ops.RefArray(yw));
  scales[7 + nv] = AbsDot(ops.RefArray(ya), ops.RefArray(dotvec));
  scales[8 + nv] = AbsDot(ops.RefArray(dout), ops.RefArray(dout));
  PetscCall(CheckDots(t, label, ND, res, ref, scales));
  PetscCall(ops.CompareAndFree(label));
  PetscCall(FreeMatrix(t, A));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ---------------------------------------------------------------------------------------- */

/* Lengths of the block tests: around the thread block and chunk width (256), the single block of a reduction
   (FUSED_SINGLE_BLOCK), the chunks of the block multi-dot (FUSED_MDOT_BLOCKS x FUSED_MIN_CHUNK, more on a GPU of
   more SMs) and one row per thread of the block multi-axpy (FUSED_REDUCE_BLOCKS x BLOCK_SIZE)                  */
const std::vector<PetscInt> BLOCK_SIZES = {0, 1, 31, 32, 33, 255, 256, 257, 1023, 1025, 2047, 2048, 2049, 4099, 32767, 32769, 524287, 524289};

/* The left vectors [V, W[0..j)] of column j of a block, as an array of pointers */
std::vector<const PetscScalar *> BlockList(const std::vector<PetscScalar *> &V, const std::vector<PetscScalar *> &W, PetscInt j)
{
  std::vector<const PetscScalar *> list(V.begin(), V.end());
  list.insert(list.end(), W.begin(), W.begin() + j);
  return list;
}

/* The operands of a block test: nv random vectors V and nw random columns W (indices in ops), uploaded, and their host
   (ref) and backend (dev) arrays */
struct BlockOperands {
  std::vector<int>           v, w;
  std::vector<PetscScalar *> Vref, Wref, Vdev, Wdev;
};

PetscErrorCode AddBlockOperands(Tester &t, Operands &ops, PetscInt n, PetscInt nv, PetscInt nw, BlockOperands &b)
{
  PetscFunctionBegin;
  for (PetscInt i = 0; i < nv; ++i) b.v.push_back(ops.Add("V[" + std::to_string(i) + "]", t.RandomArray(n)));
  for (PetscInt j = 0; j < nw; ++j) b.w.push_back(ops.Add("W[" + std::to_string(j) + "]", t.RandomArray(n)));
  PetscCall(ops.Upload());
  for (int k : b.v) {
    b.Vref.push_back(ops.Ref(k));
    b.Vdev.push_back(ops.Dev(k));
  }
  for (int k : b.w) {
    b.Wref.push_back(ops.Ref(k));
    b.Wdev.push_back(ops.Dev(k));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* block_mdot on V[0..nv) and W[0..nw): the host's against nw calls of the host's mdot (the results above the
   diagonal of the W part exactly 0), the backend's against the host's, plain (one launch up to a tile of columns,
   one copy), two calls deferred in a batch (one copy on a backend that defers) and into a reduce target (no copy) */
PetscErrorCode TestBlockMDot(Tester &t, PetscInt n, PetscInt nv, PetscInt nw)
{
  const PetscInt             ld = nv + nw, nd = nw * ld;
  Operands                   ops(t);
  BlockOperands              b;
  std::vector<int>          &v = b.v, &w = b.w;
  std::vector<PetscScalar *> &Vref = b.Vref, &Wref = b.Wref, &Vdev = b.Vdev, &Wdev = b.Wdev;
  Array                      ref(nd, NaN), col(ld, NaN), dots(nd, NaN), dots2(nd, NaN), back(nd, NaN);
  std::vector<PetscReal>     scale(nd);
  PetscScalar               *slot;
  BackendCounters            before;
  char                       variant[64];
  std::string                label;
  const bool                 one_launch = nw <= cuda::BLOCK_W_TILE && ld <= ONE_LAUNCH_VECTORS;

  PetscFunctionBegin;
  PetscCall(PetscSNPrintf(variant, sizeof(variant), "nv=%" PetscInt_FMT ", nw=%" PetscInt_FMT, nv, nw));
  label = Label("block_mdot", variant, n);
  PetscCall(AddBlockOperands(t, ops, n, nv, nw, b));
  for (PetscInt j = 0; j < nw; ++j)
    for (PetscInt l = 0; l < ld; ++l) scale[j * ld + l] = l <= nv + j ? AbsDot(ops.RefArray(l < nv ? v[l] : w[l - nv]), ops.RefArray(w[j])) : 0;

  PetscCall(t.host->block_mdot(n, nv, Vref.data(), nw, Wref.data(), ref.data()));
  for (PetscInt j = 0; j < nw; ++j) { /* the host reference against its per-column multi-dots */
    const std::vector<const PetscScalar *> list = BlockList(Vref, Wref, j);

    std::fill(col.begin(), col.end(), 0);
    PetscCall(t.host->mdot(n, nv + j, list.data(), Wref[j], PETSC_TRUE, col.data()));
    PetscCall(CheckDots(t, label + " host vs mdot column " + std::to_string(j), (int)ld, ref.data() + j * ld, col.data(), scale.data() + j * ld));
  }

  before = *t.dev->counters;
  PetscCall(t.dev->block_mdot(n, nv, Vdev.data(), nw, Wdev.data(), dots.data()));
  PetscCall(CheckCounters(t, label, before, n == 0 ? 0 : one_launch ? 1 : NONE, n > 0));
  PetscCall(CheckDots(t, label, (int)nd, dots.data(), ref.data(), scale.data()));

  std::fill(dots.begin(), dots.end(), NaN);
  before = *t.dev->counters;
  PetscCall(t.dev->batch_begin());
  PetscCall(t.dev->batch_defer(PETSC_TRUE));
  PetscCall(t.dev->block_mdot(n, nv, Vdev.data(), nw, Wdev.data(), dots.data()));
  PetscCall(t.dev->block_mdot(n, nv, Vdev.data(), nw, Wdev.data(), dots2.data()));
  PetscCall(t.dev->batch_end());
  PetscCall(CheckCounters(t, label + " deferred", before, n == 0 ? 0 : one_launch ? 2 : NONE, n > 0 ? (t.batches ? 1 : 2) : 0));
  PetscCall(CheckDots(t, label + " deferred", (int)nd, dots.data(), ref.data(), scale.data()));
  PetscCall(CheckDots(t, label + " deferred, second call", (int)nd, dots2.data(), ref.data(), scale.data()));

  PetscCall(t.dev->malloc_bytes(nd * sizeof(PetscScalar), (void **)&slot));
  PetscCall(t.dev->copy_to_backend(slot, back.data(), nd * sizeof(PetscScalar))); /* NaN */
  before = *t.dev->counters;
  PetscCall(t.dev->reduce_target(slot, nullptr));
  PetscCall(t.dev->block_mdot(n, nv, Vdev.data(), nw, Wdev.data(), nullptr));
  PetscCall(CheckCounters(t, label + " into a reduce target", before, n == 0 ? 0 : one_launch ? 1 : NONE, 0));
  PetscCall(t.dev->copy_to_host(back.data(), slot, nd * sizeof(PetscScalar)));
  PetscCall(t.dev->free_bytes(slot));
  PetscCall(CheckDots(t, label + " into a reduce target", (int)nd, back.data(), ref.data(), scale.data()));
  PetscCall(ops.CompareAndFree(label));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* block_maxpy: the host's against nw calls of the host's maxpy_scale, the backend's against the host's (one launch
   for up to 5 columns and 64 vectors); the coefficients of W are smaller than those of V, so that the back
   substitution keeps the columns' sizes (and the rounding relative to them) alike                              */
PetscErrorCode TestBlockMAXPY(Tester &t, PetscInt n, PetscInt nv, PetscInt nw)
{
  const PetscInt             ld = nv + nw;
  Operands                   ops(t);
  BlockOperands              b;
  const std::vector<int>    &w    = b.w;
  std::vector<PetscScalar *> &Vref = b.Vref, &Wref = b.Wref, &Vdev = b.Vdev, &Wdev = b.Wdev;
  std::vector<Array>         seq;
  std::vector<PetscScalar *> Wseq;
  Array                      coef = t.RandomArray(nw * ld), scale = t.RandomArray(nw);
  BackendCounters            before;
  char                       variant[64];
  std::string                label;

  PetscFunctionBegin;
  PetscCall(PetscSNPrintf(variant, sizeof(variant), "nv=%" PetscInt_FMT ", nw=%" PetscInt_FMT, nv, nw));
  label = Label("block_maxpy", variant, n);
  for (PetscInt j = 0; j < nw; ++j)
    for (PetscInt k = 0; k < nw; ++k) coef[j * ld + nv + k] *= 0.25;
  PetscCall(AddBlockOperands(t, ops, n, nv, nw, b));
  for (int k : b.w) seq.push_back(ops.RefArray(k));
  for (auto &a : seq) Wseq.push_back(a.data());

  PetscCall(t.host->block_maxpy(n, nv, Vref.data(), nw, Wref.data(), coef.data(), scale.data()));
  for (PetscInt j = 0; j < nw; ++j) { /* the host reference against maxpy_scale column by column */
    const std::vector<const PetscScalar *> list = BlockList(Vref, Wseq, j);

    PetscCall(t.host->maxpy_scale(n, nv + j, coef.data() + j * ld, list.data(), Wseq[j], scale[j], nullptr, nullptr));
    PetscCall(CheckVector(t, label + " host vs maxpy_scale", ("W[" + std::to_string(j) + "]").c_str(), ops.RefArray(w[j]), seq[j]));
  }

  before = *t.dev->counters;
  PetscCall(t.dev->block_maxpy(n, nv, Vdev.data(), nw, Wdev.data(), coef.data(), scale.data()));
  PetscCall(CheckCounters(t, label, before, n == 0 ? 0 : nw <= 5 && nv <= 64 ? 1 : NONE, 0));
  PetscCall(ops.CompareAndFree(label));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ---------------------------------------------------------------------------------------- */

/* malloc_bytes(0), a failing allocation (PETSC_ERR_MEM, not a crash) and the copy counters */
PetscErrorCode TestMemory(Tester &t)
{
  void             *ptr = &t;
  PetscErrorCode    ierr;
  const Array       data = t.RandomArray(33);
  Array             back(data.size(), NaN);
  BackendCounters   before;
  const std::string label = "memory";

  PetscFunctionBegin;
  PetscCall(t.dev->malloc_bytes(0, &ptr));
  PetscCall(Record(t, ptr == nullptr, label, "malloc_bytes(0) did not return NULL", 0, 0));
  PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, nullptr));
  ierr = t.dev->malloc_bytes((size_t)1 << 60, &ptr);
  PetscCall(PetscPopErrorHandler());
  PetscCall(Record(t, ierr == PETSC_ERR_MEM && ptr == nullptr, label, "malloc_bytes(2^60) did not fail with PETSC_ERR_MEM", (PetscReal)ierr, 0));

  PetscCall(t.dev->malloc_bytes(data.size() * sizeof(PetscScalar), &ptr));
  before = *t.dev->counters;
  PetscCall(t.dev->copy_to_backend(ptr, data.data(), data.size() * sizeof(PetscScalar)));
  PetscCall(t.dev->copy_to_host(back.data(), ptr, back.size() * sizeof(PetscScalar)));
  PetscCall(Record(t, t.dev->counters->h2d - before.h2d == 1 && t.dev->counters->d2h - before.d2h == 1 && t.dev->counters->launches == before.launches, label, "copy counters: expected 1 h2d, 1 d2h, 0 launches", 0, 0));
  PetscCall(CheckVector(t, label, "copy round trip", back, data));
  PetscCall(t.dev->free_bytes(ptr));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* diag_get (some rows without a diagonal entry) and diag_shift (every row has one) */
PetscErrorCode TestDiag(Tester &t, PetscInt n)
{
  Operands                ops(t);
  const int               vals = ops.Add("vals", t.RandomArray(3 * n + 1)), d = ops.Add("d", Array(n, NaN));
  std::vector<PetscInt64> pos(n), allpos(n);
  PetscInt64             *dpos, *dallpos;
  BackendCounters         before;
  const std::string       label = Label("diag_get, diag_shift", "", n);

  PetscFunctionBegin;
  for (PetscInt i = 0; i < n; ++i) {
    allpos[i] = 3 * i + t.RandomInt(0, 2);
    pos[i]    = i % 5 == 2 ? -1 : allpos[i];
  }
  PetscCall(ops.Upload());
  PetscCall(t.dev->malloc_bytes(std::max<size_t>(n, 1) * sizeof(PetscInt64), (void **)&dpos));
  PetscCall(t.dev->malloc_bytes(std::max<size_t>(n, 1) * sizeof(PetscInt64), (void **)&dallpos));
  PetscCall(t.dev->copy_to_backend(dpos, pos.data(), n * sizeof(PetscInt64)));
  PetscCall(t.dev->copy_to_backend(dallpos, allpos.data(), n * sizeof(PetscInt64)));
  PetscCall(t.host->diag_get(n, pos.data(), ops.Ref(vals), ops.Ref(d)));
  before = *t.dev->counters;
  PetscCall(t.dev->diag_get(n, dpos, ops.Dev(vals), ops.Dev(d)));
  PetscCall(CheckCounters(t, label, before, n > 0, 0));
  PetscCall(t.host->diag_shift(n, allpos.data(), 0.75, ops.Ref(vals)));
  PetscCall(t.dev->diag_shift(n, dallpos, 0.75, ops.Dev(vals)));
  PetscCall(t.dev->free_bytes(dpos));
  PetscCall(t.dev->free_bytes(dallpos));
  PetscCall(ops.CompareAndFree(label));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* blockdiag_mult (point-block Jacobi): nblocks random dense blocks (never zero), of size bs, or (bs = 0) of sizes
   1..8 at random; the host reference checked against the definition (column-major blocks: y_i = sum_j D(i,j) x_j
   with D(i,j) at i + j bs), the device against the host; y poisoned with NaN                                     */
PetscErrorCode TestBlockDiag(Tester &t, PetscInt nblocks, PetscInt bs, PetscBool transpose)
{
  std::vector<PetscInt>   rowptr(nblocks + 1, 0);
  std::vector<PetscInt64> valptr(nblocks + 1, 0);
  PetscInt               *drowptr = nullptr;
  PetscInt64             *dvalptr = nullptr;
  BlockDiagView           hview, dview;
  BackendCounters         before;
  char                    variant[64];

  PetscFunctionBegin;
  for (PetscInt k = 0; k < nblocks; ++k) {
    const PetscInt size = bs ? bs : t.RandomInt(1, 8);

    rowptr[k + 1] = rowptr[k] + size;
    valptr[k + 1] = valptr[k] + (PetscInt64)size * size;
  }
  const PetscInt n = rowptr[nblocks];
  if (n > t.max_size) PetscFunctionReturn(PETSC_SUCCESS);
  if (bs)
    PetscCall(PetscSNPrintf(variant, sizeof(variant), "bs %" PetscInt_FMT "%s, %" PetscInt_FMT " blocks", bs, transpose ? ", transposed" : "", nblocks));
  else
    PetscCall(PetscSNPrintf(variant, sizeof(variant), "sizes 1..8%s, %" PetscInt_FMT " blocks", transpose ? ", transposed" : "", nblocks));
  const std::string label = Label("blockdiag_mult", variant, n);
  Operands          ops(t);
  const int         vals = ops.Add("vals", t.RandomArray(valptr[nblocks])), x = ops.Add("x", t.RandomArray(n)), y = ops.Add("y", Array(n, NaN));
  Array             expect(n);

  for (PetscInt k = 0; k < nblocks; ++k) { /* the definition */
    const PetscInt     start = rowptr[k], size = rowptr[k + 1] - start;
    const PetscScalar *D = ops.RefArray(vals).data() + valptr[k];

    for (PetscInt i = 0; i < size; ++i) {
      PetscScalar sum = 0;
      for (PetscInt j = 0; j < size; ++j) sum += (transpose ? D[j + i * size] : D[i + j * size]) * ops.RefArray(x)[start + j];
      expect[start + i] = sum;
    }
  }
  hview.nblocks = dview.nblocks = nblocks;
  hview.bs = dview.bs = bs;
  if (!bs) {
    hview.rowptr = rowptr.data();
    hview.valptr = valptr.data();
  }
  PetscCall(ops.Upload());
  if (!bs) {
    PetscCall(t.dev->malloc_bytes((nblocks + 1) * sizeof(PetscInt), (void **)&drowptr));
    PetscCall(t.dev->malloc_bytes((nblocks + 1) * sizeof(PetscInt64), (void **)&dvalptr));
    PetscCall(t.dev->copy_to_backend(drowptr, rowptr.data(), (nblocks + 1) * sizeof(PetscInt)));
    PetscCall(t.dev->copy_to_backend(dvalptr, valptr.data(), (nblocks + 1) * sizeof(PetscInt64)));
    dview.rowptr = drowptr;
    dview.valptr = dvalptr;
  }
  hview.vals = ops.Ref(vals);
  dview.vals = ops.Dev(vals);
  PetscCall(t.host->blockdiag_mult(&hview, transpose, ops.Ref(x), ops.Ref(y)));
  PetscCall(CheckVector(t, label, "host reference against the definition", ops.RefArray(y), expect));
  before = *t.dev->counters;
  PetscCall(t.dev->blockdiag_mult(&dview, transpose, ops.Dev(x), ops.Dev(y)));
  PetscCall(CheckCounters(t, label, before, nblocks > 0, 0));
  PetscCall(t.dev->free_bytes(drowptr));
  PetscCall(t.dev->free_bytes(dvalptr));
  PetscCall(ops.CompareAndFree(label));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* blockdiag_mult with a view that has both a block size and offsets: a PETSc error before anything runs */
PetscErrorCode TestBlockDiagErrors(Tester &t)
{
  const PetscInt    rowptr[2] = {0, 1};
  const PetscInt64  valptr[2] = {0, 1};
  PetscScalar       one[1]    = {1};
  BlockDiagView     D;
  PetscErrorCode    ierr;
  const std::string label = "blockdiag_mult[bad view]";

  PetscFunctionBegin;
  D.nblocks = 1;
  D.bs      = 1;
  D.rowptr  = rowptr;
  D.valptr  = valptr;
  D.vals    = one;
  PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, nullptr));
  ierr = t.dev->blockdiag_mult(&D, PETSC_FALSE, one, one);
  PetscCall(PetscPopErrorHandler());
  PetscCall(Record(t, ierr == PETSC_ERR_ARG_WRONG, label, "a block size with offsets is not PETSC_ERR_ARG_WRONG", (PetscReal)ierr, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ---------------------------------------------------------------------------------------- */

/* A symmetric positive definite 7-point-like matrix: off-diagonal entries in [-1, -0.1] (the same
   value at (i,j) and (j,i)), diagonal = the row's absolute sum + 0.01 (condition ~1e3: CG does not
   converge within a chunk, so the iterations compared are far from rounding level); skew != 1
   scales the entries above the diagonal (a nonsymmetric, still diagonally dominant matrix), shift
   replaces 0.01                                                                                   */
void GenerateSPDMatrix(PetscInt n, Matrix &A, PetscReal skew = 1, PetscReal shift = 0.01)
{
  const PetscInt nx        = std::max<PetscInt>(1, (PetscInt)std::lround(std::cbrt((double)n)));
  const PetscInt offsets[] = {-nx * nx, -nx, -1, 0, 1, nx, nx * nx};
  auto           offdiag   = [](PetscInt i, PetscInt j) {
    const PetscInt64 lo = std::min(i, j), hi = std::max(i, j);
    const double     h = std::sin(12.9898 * (double)lo + 78.233 * (double)hi) * 43758.5453;
    return -(0.1 + 0.9 * (h - std::floor(h)));
  };

  A.nrows = A.ncols = n;
  for (PetscInt i = 0; i < n; ++i) {
    PetscScalar rowsum = 0;
    size_t      diag   = 0;
    for (PetscInt off : offsets)
      if (i + off >= 0 && i + off < n) {
        A.colidx.push_back(i + off);
        if (off == 0) {
          diag = A.vals.size();
          A.vals.push_back(0);
        } else {
          A.vals.push_back(off > 0 ? skew * offdiag(i, i + off) : offdiag(i, i + off));
          rowsum += std::abs(A.vals.back());
        }
      }
    A.vals[diag] = rowsum + shift;
    A.rowptr.push_back((PetscInt)A.colidx.size());
  }
}

/* A symmetric, diagonally dominant matrix whose first FUSED_BLOCK_CHUNK_ROWS rows have 21 entries (band
   10) and the others 3 (tridiagonal): with more than 12288 rows (blocks of FUSED_BLOCK_CHUNK_ROWS) its
   average fits the resident kernels, but the first block's rows do not fit in shared memory, so that
   block reads the matrix from global memory                                                       */
void GenerateSkewedSPDMatrix(PetscInt n, Matrix &A)
{
  const PetscInt wide = FUSED_BLOCK_CHUNK_ROWS, band = 10;

  A.nrows = A.ncols = n;
  for (PetscInt i = 0; i < n; ++i) {
    const PetscInt lo = i < wide ? std::max<PetscInt>(0, i - band) : i - 1, hi = i < wide - 1 ? std::min(wide - 1, i + band) : std::min(n - 1, i + 1);
    PetscScalar    rowsum = 0;
    size_t         diag   = 0;
    for (PetscInt j = lo; j <= hi; ++j) {
      A.colidx.push_back(j);
      if (j == i) {
        diag = A.vals.size();
        A.vals.push_back(0);
      } else {
        const double h = std::sin(12.9898 * (double)std::min(i, j) + 78.233 * (double)std::max(i, j)) * 43758.5453;
        A.vals.push_back(-(0.1 + 0.9 * (h - std::floor(h))));
        rowsum += std::abs(A.vals.back());
      }
    }
    A.vals[diag] = rowsum + 0.01;
    A.rowptr.push_back((PetscInt)A.colidx.size());
  }
}

/* How a CG chunk test ends: the whole chunk, a norm stop before chunk iteration 6 (min_it and a
   ttol every norm meets), or a coefficient failure at the first iteration (<p,q> < 0)          */
enum class ChunkEnd { FULL, NORM_STOP, BREAKDOWN };
const char *CHUNK_END_NAMES[] = {"full chunk", "norm stop", "breakdown"};

/* How a CG or BiCGStab chunk test runs on the device (ChunkForm): RESIDENT (the resident kernel - one block,
   or one cluster of up to FUSED_RESIDENT_CHUNK_BLOCKS - for small matrices, see FUSED_BLOCK_CHUNK_ROWS),
   GRID (always the grid kernel: cooperative or one cluster), or STEPS; names by ChunkForm's value    */
const char        *CHUNK_FORM_NAMES[] = {"auto", "steps", "persistent grid", "persistent (resident when small)"};
constexpr PetscInt RESIDENT_ROWS      = FUSED_RESIDENT_CHUNK_BLOCKS * FUSED_BLOCK_CHUNK_ROWS;

/* The control block of a chunk test that ends as `end` asks: the norm (slot value normdot) stops the
   chunk before iteration 6 (min_it, and a ttol every norm meets) for NORM_STOP, never otherwise     */
ChunkControl ChunkTestControl(ChunkEnd end, PetscInt normdot)
{
  ChunkControl c;

  c.ttol       = end == ChunkEnd::NORM_STOP ? 1e300 : -1;
  c.divlimit   = PETSC_INFINITY;
  c.normdot    = end == ChunkEnd::NORM_STOP ? normdot : -1;
  c.first_it   = 40;
  c.min_it     = 45; /* the norm of chunk iteration 5 stops: nothing runs from iteration 6 on */
  c.chknorm    = -1;
  c.stopped    = -1;
  c.stage      = 0;
  c.rho        = 0;
  c.start      = 0;
  c.rtol       = 0;
  c.abstol     = 0;
  c.divtol     = 0;
  c.bnorm      = CHUNK_BNORM_NONE;
  c.mininitial = 0;
  c.bnormsq    = 0;
  c.ref_rz     = 1; /* the signs of a positive definite solve's iteration 0 (CGCoefficients()) */
  c.ref_pq     = 1;
  return c;
}

/* Where a CG chunk test starts: from the state entering the chunk, or computing the solve's start from
   a zero initial guess or from x (then with the norm of b of ChunkBNorm (int)end for its limits)   */
enum class ChunkStart { NONE, ZERO_GUESS, GUESS };
const char *CHUNK_START_NAMES[] = {"", ", computing the start", ", computing the start from a guess"};

/* The control block of a chunk test whose chunk computes the solve's start: ttol from its iteration 0
   (ChunkStartLimits: abstol 1e300, a ttol every norm meets, for NORM_STOP and BREAKDOWN); BREAKDOWN
   then stands for a stop at iteration 0 (min_it at the first iteration), which no breakdown precedes */
ChunkControl ChunkTestStartControl(ChunkEnd end, PetscInt normdot)
{
  ChunkControl c = ChunkTestControl(end == ChunkEnd::BREAKDOWN ? ChunkEnd::NORM_STOP : end, normdot);

  c.start    = 1;
  c.ttol     = -1;
  c.abstol   = end == ChunkEnd::FULL ? 0 : 1e300;
  c.rtol     = 1e-5;
  c.divtol   = PETSC_INFINITY;
  c.divlimit = 0; /* replaced from the start's norm */
  if (end == ChunkEnd::BREAKDOWN) c.min_it = c.first_it;
  return c;
}

/* The stop a chunk test must end with (none, after iteration 5, or at once; at stage 0, or
   breakdown_stage for a breakdown) on the host, and the device's control block (copied back and
   freed) equal to the host's                                                                      */
PetscErrorCode CheckChunkStop(Tester &t, const std::string &label, ChunkEnd end, const ChunkControl &ref, ChunkControl *dev, PetscInt breakdown_stage = 0)
{
  const PetscInt want       = end == ChunkEnd::FULL ? -1 : (end == ChunkEnd::NORM_STOP ? 5 : 0);
  const PetscInt want_stage = end == ChunkEnd::BREAKDOWN ? breakdown_stage : 0;
  ChunkControl   back;

  PetscFunctionBegin;
  PetscCall(t.dev->copy_to_host(&back, dev, sizeof(ChunkControl)));
  PetscCall(t.dev->free_bytes(dev));
  PetscCall(Record(t, ref.stopped == want && ref.stage == want_stage, label, "host backend: ctl->stopped/stage is not where the chunk had to stop", (PetscReal)ref.stopped, 0));
  PetscCall(Record(t, back.stopped == ref.stopped && back.stage == ref.stage, label, "ctl->stopped/stage differ from the host's", (PetscReal)(back.stopped - ref.stopped), 0));
  if (ref.bnorm != CHUNK_BNORM_NONE) {
    const PetscReal diff = std::abs(back.bnormsq - ref.bnormsq) / std::max(std::abs(ref.bnormsq), PETSC_SMALL);
    PetscCall(Record(t, ref.bnormsq > 0 && diff <= 1e-12, label, "ctl->bnormsq (the squared norm of b of the start) differs from the host's, or is not positive", diff, 1e-12));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   TestCGChunk - cg_chunk on the device (persistent kernel or steps) against the host's steps: the
   state entering the chunk is consistent (z = w.*r, p = z, q = A p, slot 0 their dot products);
   x, r, p, q and every slot agree to 1e-10 (k iterations of rounding differences), slots after a
   stop keep their poison, and ctl->stopped/stage agree.  start: the chunk computes the solve's start
   from b (random) instead: x, r, p, q and slot 0 enter as NaN and poison, and its iteration 0 is
   tested (ChunkTestStartControl; BREAKDOWN: the stop at iteration 0).
*/
PetscErrorCode TestCGChunk(Tester &t, Matrix &A, int sell_threads, bool with_w, ChunkForm form, ChunkEnd end, ChunkStart start = ChunkStart::NONE)
{
  const bool            persistent = form != ChunkForm::STEPS;
  const PetscInt        k          = std::min<PetscInt>(12, std::max<PetscInt>(7, A.nrows / 4)); /* below 48 rows 12 iterations near CG's exact convergence, where the vectors shrink and their rounding differences grow relative to them */
  constexpr PetscScalar POISON     = -12345.678;
  const PetscInt        n          = A.nrows;
  Operands              ops(t);
  Array                 x = t.RandomArray(n), r = t.RandomArray(n), b = t.RandomArray(n), w(n), p(n), q(n, NaN), slots((k + 1) * CG_NSLOT, POISON);
  ChunkControl          ctl_ref, *ctl_dev;
  CGChunkArgs           ref, dev;
  BackendCounters       before;
  char                  variant[160];
  std::string           label;

  PetscFunctionBegin;
  for (PetscInt i = 0; i < n; ++i) {
    w[i] = 0.5 + std::abs(t.Random()); /* positive: an SPD preconditioner */
    p[i] = with_w ? w[i] * r[i] : r[i];
  }
  {
    const DotSpec none = {DotKind::DOT_SELF, nullptr};
    PetscCall(t.host->spmv_dots(&A.ref, nullptr, nullptr, p.data(), q.data(), 1, &none, slots.data() + CG_QU));
  }
  slots[CG_RZ] = slots[CG_RR] = slots[CG_ZZ] = slots[CG_PQ] = slots[CG_QZ] = 0;
  for (PetscInt i = 0; i < n; ++i) { /* z = p */
    slots[CG_RZ] += r[i] * p[i];
    slots[CG_RR] += r[i] * r[i];
    slots[CG_ZZ] += p[i] * p[i];
    slots[CG_PQ] += p[i] * q[i];
    slots[CG_QZ] += q[i] * p[i];
  }
  slots[CG_RU] = slots[CG_QZ];
  if (with_w) {
    slots[CG_QU] = 0;
    for (PetscInt i = 0; i < n; ++i) slots[CG_QU] += q[i] * w[i] * q[i];
  }
  if (end == ChunkEnd::BREAKDOWN) slots[CG_PQ] = -1;
  ctl_ref = ChunkTestControl(end, CG_ZZ);
  if (start != ChunkStart::NONE) {
    for (PetscInt i = 0; i < n; ++i) r[i] = p[i] = q[i] = NaN;
    if (start == ChunkStart::ZERO_GUESS)
      for (PetscInt i = 0; i < n; ++i) x[i] = NaN;
    for (PetscInt d = 0; d < CG_NSLOT; ++d) slots[d] = POISON;
    ctl_ref = ChunkTestStartControl(end, CG_ZZ);
    if (start == ChunkStart::GUESS) ctl_ref.bnorm = (PetscInt)end; /* CHUNK_BNORM_B, _MB, _BMB */
  }

  PetscCall(
      PetscSNPrintf(variant, sizeof(variant), "%s%s, %s, %s%s", sell_threads ? "SELL-P " : "CSR", sell_threads ? std::to_string(sell_threads).c_str() : "", with_w ? "Jacobi" : "no PC", CHUNK_FORM_NAMES[(int)form], CHUNK_START_NAMES[(int)start]));
  label        = Label("cg_chunk", (std::string(variant) + ", " + (start != ChunkStart::NONE && end == ChunkEnd::BREAKDOWN ? "stop at iteration 0" : CHUNK_END_NAMES[(int)end])).c_str(), n);
  const int ix = ops.Add("x", x), ir = ops.Add("r", r), ip = ops.Add("p", p), iq = ops.Add("q", q), iw = ops.Add("w", w), is = ops.Add("slots", slots), ib = ops.Add("b", b);
  PetscCall(ops.Upload());
  PetscCall(t.dev->malloc_bytes(sizeof(ChunkControl), (void **)&ctl_dev));
  PetscCall(t.dev->copy_to_backend(ctl_dev, &ctl_ref, sizeof(ChunkControl)));

  ref.csr        = &A.ref;
  ref.w          = with_w ? ops.Ref(iw) : nullptr;
  ref.b          = start != ChunkStart::NONE ? ops.Ref(ib) : nullptr;
  ref.guess      = start == ChunkStart::GUESS ? PETSC_TRUE : PETSC_FALSE;
  ref.bnorm      = ctl_ref.bnorm;
  ref.x          = ops.Ref(ix);
  ref.r          = ops.Ref(ir);
  ref.p          = ops.Ref(ip);
  ref.q          = ops.Ref(iq);
  ref.slots      = ops.Ref(is);
  ref.ctl        = &ctl_ref;
  ref.k          = k;
  dev            = ref;
  dev.csr        = sell_threads ? nullptr : &A.dev;
  dev.sell       = sell_threads ? &A.sell : nullptr;
  dev.w          = with_w ? ops.Dev(iw) : nullptr;
  dev.b          = start != ChunkStart::NONE ? ops.Dev(ib) : nullptr;
  dev.x          = ops.Dev(ix);
  dev.r          = ops.Dev(ir);
  dev.p          = ops.Dev(ip);
  dev.q          = ops.Dev(iq);
  dev.slots      = ops.Dev(is);
  dev.ctl        = ctl_dev;
  dev.form       = persistent ? form : ChunkForm::STEPS;
  dev.nnz        = (PetscInt64)A.colidx.size();

  PetscCall(t.host->cg_chunk(&ref));
  before = *t.dev->counters;
  PetscCall(t.dev->cg_chunk(&dev)); /* the start in steps: x = 0 and r = b or r = A x and r = b - r; p, q = 0; the norm of b (w.*b first); its update and product */
  PetscCall(CheckCounters(t, label, before, persistent && t.device_chunks ? 1 : 2 * k + (start != ChunkStart::NONE ? 6 : 0) + (ref.bnorm != CHUNK_BNORM_NONE ? (ref.bnorm == CHUNK_BNORM_MB && with_w ? 2 : 1) : 0), 0));
  PetscCall(CheckChunkStop(t, label, end, ctl_ref, ctl_dev));
  for (PetscInt j = 0; j <= k; ++j) { /* <r,u> is not computed with M symmetric (it is <q,z>): the forms may leave or write it */
    const PetscScalar zero = 0;

    ops.Ref(is)[j * CG_NSLOT + CG_RU] = 0;
    PetscCall(t.dev->copy_to_backend(ops.Dev(is) + j * CG_NSLOT + CG_RU, &zero, sizeof(PetscScalar)));
  }
  PetscCall(ops.CompareAndFree(label, 1e-10));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Jacobi in the BiCGStab operator: none, left (wl) or right (wr) */
enum class Side { NONE, LEFT, RIGHT };
const char *SIDE_NAMES[] = {"no PC", "Jacobi left", "Jacobi right"};

/*
   TestBCGSChunk - bcgs_chunk on the device (persistent kernel or steps) against the host's steps on
   a nonsymmetric diagonally dominant matrix, from r random, r* = r, p = r and slot 0 = <r,r*>, <r,r>
   (as fusedbcgs enters a chunk): x, r, p, s, Ap, As and every slot agree to 1e-8, outputs not
   written after a stop keep their poison, ctl->stopped/stage agree.  start: the chunk computes the
   solve's start from b (random) instead: x, r, p, r* enter as NaN, slot 0 as poison, and the start
   is tested (ChunkTestStartControl; BREAKDOWN: the stop at iteration 0).
*/
PetscErrorCode TestBCGSChunk(Tester &t, Matrix &A, int sell_threads, Side side, ChunkForm form, ChunkEnd end, bool start = false)
{
  const bool            persistent = form != ChunkForm::STEPS;
  constexpr PetscInt    k          = 8;
  constexpr PetscScalar POISON     = -12345.678;
  const PetscInt        n          = A.nrows;
  Operands              ops(t);
  Array                 r = t.RandomArray(n), x = t.RandomArray(n), b = t.RandomArray(n), w(n), slots((k + 1) * BCGS_NSLOT, POISON), poison(n, POISON);
  ChunkControl          ctl_ref, *ctl_dev;
  BCGSChunkArgs         ref, dev;
  BackendCounters       before;
  char                  variant[160];
  std::string           label;

  PetscFunctionBegin;
  for (PetscInt i = 0; i < n; ++i) w[i] = 0.5 + std::abs(t.Random());
  for (int d = 0; d < BCGS_NSLOT; ++d) slots[d] = 0;
  for (PetscInt i = 0; i < n; ++i) {
    slots[BCGS_RRSTAR] += r[i] * r[i];
    slots[BCGS_RR] += r[i] * r[i];
  }
  if (end == ChunkEnd::BREAKDOWN) slots[BCGS_RRSTAR] = 0;
  ctl_ref = ChunkTestControl(end, 0);
  if (start) {
    for (PetscInt i = 0; i < n; ++i) x[i] = r[i] = NaN;
    for (int d = 0; d < BCGS_NSLOT; ++d) slots[d] = POISON;
    ctl_ref = ChunkTestStartControl(end, 0);
  }

  PetscCall(
      PetscSNPrintf(variant, sizeof(variant), "%s%s, %s, %s%s", sell_threads ? "SELL-P " : "CSR", sell_threads ? std::to_string(sell_threads).c_str() : "", SIDE_NAMES[(int)side], CHUNK_FORM_NAMES[(int)form], start ? ", computing the start" : ""));
  label        = Label("bcgs_chunk", (std::string(variant) + ", " + (start && end == ChunkEnd::BREAKDOWN ? "stop at iteration 0" : CHUNK_END_NAMES[(int)end])).c_str(), n);
  const int ix = ops.Add("x", x), ir = ops.Add("r", r), ip = ops.Add("p", r), irs = ops.Add("rstar", r), is = ops.Add("s", poison), iap = ops.Add("Ap", poison), ias = ops.Add("As", poison), iw = ops.Add("w", w), isl = ops.Add("slots", slots),
            ib = ops.Add("b", b);
  PetscCall(ops.Upload());
  PetscCall(t.dev->malloc_bytes(sizeof(ChunkControl), (void **)&ctl_dev));
  PetscCall(t.dev->copy_to_backend(ctl_dev, &ctl_ref, sizeof(ChunkControl)));

  ref.csr        = &A.ref;
  ref.wl         = side == Side::LEFT ? ops.Ref(iw) : nullptr;
  ref.wr         = side == Side::RIGHT ? ops.Ref(iw) : nullptr;
  ref.b          = start ? ops.Ref(ib) : nullptr;
  ref.rstar      = ops.Ref(irs);
  ref.x          = ops.Ref(ix);
  ref.r          = ops.Ref(ir);
  ref.p          = ops.Ref(ip);
  ref.s          = ops.Ref(is);
  ref.Ap         = ops.Ref(iap);
  ref.As         = ops.Ref(ias);
  ref.slots      = ops.Ref(isl);
  ref.ctl        = &ctl_ref;
  ref.k          = k;
  dev            = ref;
  dev.csr        = sell_threads ? nullptr : &A.dev;
  dev.sell       = sell_threads ? &A.sell : nullptr;
  dev.wl         = side == Side::LEFT ? ops.Dev(iw) : nullptr;
  dev.wr         = side == Side::RIGHT ? ops.Dev(iw) : nullptr;
  dev.b          = start ? ops.Dev(ib) : nullptr;
  dev.rstar      = ops.Dev(irs);
  dev.x          = ops.Dev(ix);
  dev.r          = ops.Dev(ir);
  dev.p          = ops.Dev(ip);
  dev.s          = ops.Dev(is);
  dev.Ap         = ops.Dev(iap);
  dev.As         = ops.Dev(ias);
  dev.slots      = ops.Dev(isl);
  dev.ctl        = ctl_dev;
  dev.form       = persistent ? form : ChunkForm::STEPS;
  dev.nnz        = (PetscInt64)A.colidx.size();

  PetscCall(t.host->bcgs_chunk(&ref));
  before = *t.dev->counters;
  PetscCall(t.dev->bcgs_chunk(&dev));
  PetscCall(CheckCounters(t, label, before, persistent && t.device_chunks && (form == ChunkForm::GRID || dev.nnz <= tuning.bcgs_persistent_nnz) ? 1 : 4 * k + (start ? 5 : 0), 0)); /* start in steps: x = 0, r, r*, p, <r,r*> and <r,r> */
  PetscCall(CheckChunkStop(t, label, end, ctl_ref, ctl_dev));
  PetscCall(ops.CompareAndFree(label, 1e-8)); /* BiCGStab's coefficients are ratios of dot products that shrink: rounding grows faster than in CG (1e-10 to 1e-9 after 10 iterations of the steps too) */
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   TestSGMRESChunk - sgmres_chunk on the device (persistent kernel or steps) against the host's steps,
   for a restart cycle of m steps run as two chunks (steps 1..max(6, m/2), then the rest from the state
   the first left; m = 8 below 1000 rows, where a longer cycle nearly exhausts the space and its last
   basis vectors, divided by a tiny h, amplify rounding differences beyond any tolerance), on a nonsymmetric matrix, without a preconditioner and with right Jacobi: from z_1 =
   r/||r|| (r random) and slot 0 = <z_1,z_1> = 1 and ||r||^2, as fusedsgmres enters a cycle.  The
   norm stop and the breakdown (a cancellation threshold no column meets: stage 1) end the first
   chunk.  Every vector and slot agrees to 1e-9 (z_i shrinks with the residual: its rounding
   differences, relative to its largest entry, grow to about 1e-10 in 12 steps) and unwritten ones
   keep their poison, except the v_i of steps after a stop: the steps still compute their products
   there, the persistent kernel not.  start: the first chunk starts the solve from b (random): z_1
   and slot 0 enter as poison, and rho = ||b|| and the limits of its start (the norm stop: rtol
   1e300) agree with the host's.
*/
PetscErrorCode TestSGMRESChunk(Tester &t, Matrix &A, int sell_threads, bool with_w, bool persistent, ChunkEnd end, PetscInt restart = 0, bool start = false)
{
  constexpr PetscScalar      POISON = -12345.678;
  const PetscInt             n = A.nrows, m = restart ? restart : (n < 1000 ? 8 : 24), k1 = std::max<PetscInt>(6, m / 2), nd = SGMRESChunkSlot(m);
  const PetscReal            keep = end == ChunkEnd::BREAKDOWN ? 2.0 : 1e-8;
  const PetscInt             last = end == ChunkEnd::FULL ? m : (end == ChunkEnd::NORM_STOP ? 6 : 1); /* the last step whose v_i both compute */
  Operands                   ops(t);
  Array                      z1 = t.RandomArray(n), b = z1, w(n), slots((m + 1) * nd, POISON);
  std::vector<int>           iv(m + 1), iz(m + 2);
  std::vector<PetscScalar *> vref(m + 1), vdev(m + 1), zref(m + 2), zdev(m + 2);
  ChunkControl               ctl_ref, *ctl_dev;
  SGMRESChunkArgs            ref, dev;
  BackendCounters            before;
  PetscReal                  rho = 0;
  char                       variant[160];
  std::string                label;

  PetscFunctionBegin;
  for (PetscInt i = 0; i < n; ++i) {
    w[i] = 0.5 + std::abs(t.Random());
    rho += z1[i] * z1[i];
  }
  rho = std::sqrt(rho);
  for (PetscInt i = 0; i < n; ++i) z1[i] /= rho;
  ctl_ref     = ChunkTestControl(end, 0);
  ctl_ref.rho = rho;
  if (start) {
    std::fill(z1.begin(), z1.end(), POISON);
    ctl_ref.start  = 1;
    ctl_ref.rtol   = end == ChunkEnd::NORM_STOP ? 1e300 : 0;
    ctl_ref.divtol = PETSC_INFINITY;
  } else {
    slots[m + 1] = 1;
    slots[m + 2] = rho * rho;
  }

  PetscCall(PetscSNPrintf(variant, sizeof(variant), "%s%s, %s, %s, restart %" PetscInt_FMT "%s", sell_threads ? "SELL-P " : "CSR", sell_threads ? std::to_string(sell_threads).c_str() : "", with_w ? "Jacobi" : "no PC",
                          persistent ? "persistent" : "steps", m, start ? ", start" : ""));
  label = Label("sgmres_chunk", (std::string(variant) + ", " + CHUNK_END_NAMES[(int)end]).c_str(), n);
  for (PetscInt v = 1; v <= m; ++v) iv[v] = ops.Add("v_" + std::to_string(v), Array(n, POISON), v <= last);
  for (PetscInt v = 1; v <= m + 1; ++v) iz[v] = ops.Add("z_" + std::to_string(v), v == 1 ? z1 : Array(n, POISON));
  const int iw = ops.Add("w", w), is = ops.Add("slots", slots), ib = ops.Add("b", b);
  PetscCall(ops.Upload());
  PetscCall(t.dev->malloc_bytes(sizeof(ChunkControl), (void **)&ctl_dev));
  PetscCall(t.dev->copy_to_backend(ctl_dev, &ctl_ref, sizeof(ChunkControl)));
  for (PetscInt v = 1; v <= m; ++v) {
    vref[v] = ops.Ref(iv[v]);
    vdev[v] = ops.Dev(iv[v]);
  }
  for (PetscInt v = 1; v <= m + 1; ++v) {
    zref[v] = ops.Ref(iz[v]);
    zdev[v] = ops.Dev(iz[v]);
  }

  ref.csr        = &A.ref;
  ref.wr         = with_w ? ops.Ref(iw) : nullptr;
  ref.V          = vref.data();
  ref.Z          = zref.data();
  ref.m          = m;
  ref.keep       = keep;
  ref.ctl        = &ctl_ref;
  dev            = ref;
  dev.csr        = sell_threads ? nullptr : &A.dev;
  dev.sell       = sell_threads ? &A.sell : nullptr;
  dev.wr         = with_w ? ops.Dev(iw) : nullptr;
  dev.V          = vdev.data();
  dev.Z          = zdev.data();
  dev.ctl        = ctl_dev;
  dev.form       = persistent ? ChunkForm::AUTO : ChunkForm::STEPS;
  for (PetscInt i0 : {(PetscInt)0, k1}) {
    if (i0 > 0 && end != ChunkEnd::FULL) break;
    ref.i0 = dev.i0 = i0;
    ref.k = dev.k = i0 ? m - k1 : k1;
    ref.slots     = ops.Ref(is) + i0 * nd;
    dev.slots     = ops.Dev(is) + i0 * nd;
    ref.b         = start && !i0 ? ops.Ref(ib) : nullptr;
    dev.b         = start && !i0 ? ops.Dev(ib) : nullptr;
    PetscCall(t.host->sgmres_chunk(&ref));
    before = *t.dev->counters;
    PetscCall(t.dev->sgmres_chunk(&dev));
    PetscCall(CheckCounters(t, label, before, (persistent && t.device_chunks && n <= tuning.sgmres_persistent_rows ? 1 : 3 * ref.k) + (dev.b ? 2 : 0), 0)); /* the start: <b,b> and z_1 = b / rho */
  }
  if (start) {
    ChunkControl back;
    PetscCall(t.dev->copy_to_host(&back, ctl_dev, sizeof(ChunkControl)));
    const PetscReal diff = std::abs(back.rho - ctl_ref.rho) / std::max(ctl_ref.rho, PETSC_SMALL), tdiff = std::abs(back.ttol - ctl_ref.ttol) / std::max(std::abs(ctl_ref.ttol), PETSC_SMALL);
    PetscCall(Record(t, std::abs(ctl_ref.rho - rho) <= 1e-12 * rho && diff <= 1e-12 && tdiff <= 1e-12, label, "the start's rho = ||b|| or its ttol differs from the host's, or the host's from ||b||", diff, 1e-12));
  }
  PetscCall(CheckChunkStop(t, label, end, ctl_ref, ctl_dev, 1));
  PetscCall(ops.CompareAndFree(label, 1e-9));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* sgmres_chunk on CSR and SELL-P (1, 2, 4, 8 threads per row), with and without Jacobi, persistent
   and in steps, for a cycle that runs through, one stopped by the norm and one by a breakdown; one
   long cycle whose basis rows do not fit in shared memory; restarts 30 and 31 (resident kernel or not) */
PetscErrorCode TestSGMRESChunkMatrix(Tester &t, PetscInt n)
{
  Matrix A;

  PetscFunctionBegin;
  GenerateSPDMatrix(n, A, 1.3); /* nonsymmetric, condition ~1e3: no column cancels within a cycle */
  PetscCall(UploadMatrix(t, A));
  for (int threads : {0, 1, 2, 4, 8}) {
    if (threads) PetscCall(UploadSELL(t, A, threads));
    for (bool with_w : {false, true})
      for (bool persistent : {true, false})
        for (ChunkEnd end : {ChunkEnd::FULL, ChunkEnd::NORM_STOP, ChunkEnd::BREAKDOWN})
          if (t.device_chunks || !persistent) PetscCall(TestSGMRESChunk(t, A, threads, with_w, persistent, end));
    /* restart 120 on SELL-P 1 (256 rows per block): the block's rows of the basis do not fit in shared memory */
    if (threads == 1 && n == 4099)
      for (bool persistent : {true, false}) PetscCall(TestSGMRESChunk(t, A, threads, true, persistent, ChunkEnd::FULL, 120));
    /* restart 30, the longest cycle of the resident kernel (32 reduced values per step), and 31, the shortest
       it leaves to the cluster kernel, on CSR and SELL-P 1: clusters of 8 and 16 blocks of 4 warps, 12 of
       8, 9 of 16, 14 of 24, and 16 blocks of 16 warps with 2 rows per thread (one block, n <= 128: the
       default restart; 30 steps on 33 rows amplify rounding beyond the tolerance)                     */
    if (threads <= 1 && (n == 1000 || n == 2000 || n == 3000 || n == 4099 || n == 10007 || n == 15361))
      for (PetscInt restart : {30, 31})
        for (ChunkEnd end : {ChunkEnd::FULL, ChunkEnd::NORM_STOP}) PetscCall(TestSGMRESChunk(t, A, threads, true, true, end, restart));
    /* the start of the solve in the first chunk */
    for (bool persistent : {true, false})
      for (ChunkEnd end : {ChunkEnd::FULL, ChunkEnd::NORM_STOP}) PetscCall(TestSGMRESChunk(t, A, threads, threads != 2, persistent, end, 0, true));
    if (threads) PetscCall(FreeSELL(t, A));
  }
  PetscCall(FreeMatrix(t, A));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* cg_chunk on CSR and SELL-P (1, 2, 4, 8 threads per row), with and without Jacobi, persistent and
   in steps, for a chunk that runs through, one stopped by the norm and one by a breakdown         */
PetscErrorCode TestCGChunkMatrix(Tester &t, PetscInt n)
{
  Matrix A;

  PetscFunctionBegin;
  GenerateSPDMatrix(n, A);
  PetscCall(UploadMatrix(t, A));
  for (int threads : {0, 1, 2, 4, 8}) {
    if (threads) PetscCall(UploadSELL(t, A, threads));
    for (bool with_w : {false, true})
      for (ChunkForm form : {ChunkForm::RESIDENT, ChunkForm::GRID, ChunkForm::STEPS})
        for (ChunkEnd end : {ChunkEnd::FULL, ChunkEnd::NORM_STOP, ChunkEnd::BREAKDOWN})
          for (ChunkStart start : {ChunkStart::NONE, ChunkStart::ZERO_GUESS, ChunkStart::GUESS})
            if ((form != ChunkForm::RESIDENT || n <= RESIDENT_ROWS) && (t.device_chunks || form == ChunkForm::STEPS)) PetscCall(TestCGChunk(t, A, threads, with_w, form, end, start));
    if (threads) PetscCall(FreeSELL(t, A));
  }
  PetscCall(FreeMatrix(t, A));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* bcgs_chunk likewise, on a nonsymmetric matrix, without Jacobi and with it on either side */
PetscErrorCode TestBCGSChunkMatrix(Tester &t, PetscInt n)
{
  Matrix A;

  PetscFunctionBegin;
  GenerateSPDMatrix(n, A, 1.3, 1.0); /* well conditioned: BiCGStab's ratios stay away from breakdown for any random start */
  PetscCall(UploadMatrix(t, A));
  for (int threads : {0, 1, 2, 4, 8}) {
    if (threads) PetscCall(UploadSELL(t, A, threads));
    for (Side side : {Side::NONE, Side::LEFT, Side::RIGHT})
      for (ChunkForm form : {ChunkForm::RESIDENT, ChunkForm::GRID, ChunkForm::STEPS})
        for (ChunkEnd end : {ChunkEnd::FULL, ChunkEnd::NORM_STOP, ChunkEnd::BREAKDOWN})
          for (bool start : {false, true})
            if ((form != ChunkForm::RESIDENT || n <= RESIDENT_ROWS) && (t.device_chunks || form == ChunkForm::STEPS)) PetscCall(TestBCGSChunk(t, A, threads, side, form, end, start));
    if (threads) PetscCall(FreeSELL(t, A));
  }
  PetscCall(FreeMatrix(t, A));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The resident cg_chunk and bcgs_chunk kernels when one block's matrix rows do not fit in its shared
   memory (GenerateSkewedSPDMatrix: a cluster of 16 blocks of FUSED_BLOCK_CHUNK_ROWS rows, the first
   reading global memory)                                                                          */
PetscErrorCode TestResidentMatrixInGlobal(Tester &t)
{
  Matrix A;

  PetscFunctionBegin;
  GenerateSkewedSPDMatrix(FUSED_RESIDENT_CHUNK_BLOCKS * FUSED_BLOCK_CHUNK_ROWS - 96, A);
  PetscCall(UploadMatrix(t, A));
  for (int threads : {0, 1}) {
    if (threads) PetscCall(UploadSELL(t, A, threads));
    for (ChunkEnd end : {ChunkEnd::FULL, ChunkEnd::NORM_STOP}) {
      PetscCall(TestCGChunk(t, A, threads, true, ChunkForm::RESIDENT, end));
      PetscCall(TestCGChunk(t, A, threads, true, ChunkForm::RESIDENT, end, ChunkStart::ZERO_GUESS));
      PetscCall(TestCGChunk(t, A, threads, true, ChunkForm::RESIDENT, end, ChunkStart::GUESS));
      PetscCall(TestBCGSChunk(t, A, threads, Side::LEFT, ChunkForm::RESIDENT, end));
      PetscCall(TestBCGSChunk(t, A, threads, Side::LEFT, ChunkForm::RESIDENT, end, true));
    }
    if (threads) PetscCall(FreeSELL(t, A));
  }
  PetscCall(FreeMatrix(t, A));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode RunAll(Tester &t)
{
  const PetscInt nvs[] = {0, 1, 5, 40, 300};

  PetscFunctionBegin;
  PetscCall(TestMemory(t));
  /* block_mdot and block_maxpy: every shape of the lists below on a few lengths (the tiles of columns, 8, and of
     vectors, 8 per grid row of the dots, with their edges, and several launches of one tile: 250 vectors), and
     three shapes on every length of BLOCK_SIZES                                                                   */
  for (PetscInt n : BLOCK_SIZES) {
    const bool all_shapes = n == 1 || n == 257 || n == 2049 || n == 4099;

    if (n > t.max_size) continue;
    for (PetscInt nv : {(PetscInt)0, (PetscInt)1, (PetscInt)5, (PetscInt)30, (PetscInt)61, (PetscInt)250})
      for (PetscInt nw : {(PetscInt)1, (PetscInt)2, (PetscInt)5, (PetscInt)8, (PetscInt)9, (PetscInt)16}) {
        const bool some_shape = (nv == 0 && nw == 1) || (nv == 5 && nw == 5) || (nv == 30 && nw == 9);

        if (nv == 250 ? !all_shapes || n > 4099 || (nw != 1 && nw != 9) : !all_shapes && !some_shape) continue;
        PetscCall(TestBlockMDot(t, n, nv, nw));
        PetscCall(TestBlockMAXPY(t, n, nv, nw));
      }
  }
  /* point-block Jacobi: one thread per block on the device, so block counts around the thread block width of 256 */
  PetscCall(TestBlockDiagErrors(t));
  for (PetscInt nblocks : {(PetscInt)0, (PetscInt)1, (PetscInt)255, (PetscInt)256, (PetscInt)257, (PetscInt)4099})
    for (PetscInt bs : {(PetscInt)1, (PetscInt)2, (PetscInt)3, (PetscInt)4, (PetscInt)5, (PetscInt)7, (PetscInt)0})
      for (PetscBool transpose : {PETSC_FALSE, PETSC_TRUE}) PetscCall(TestBlockDiag(t, nblocks, bs, transpose));
  PetscCall(TestBlockDiag(t, 333334, 3, PETSC_FALSE)); /* more blocks than the grid's threads (a grid-stride loop) */
  PetscCall(TestBlockDiag(t, 200003, 0, PETSC_FALSE));
  for (PetscInt n : {t.sizes.back(), (PetscInt)0, (PetscInt)33, (PetscInt)4099})
    if (n <= t.max_size) PetscCall(TestBatch(t, n));
  /* resident kernels (DispatchResidentBlocks()): CG and BiCGStab on 31 and 33 rows one block of 256
     threads, 1000, 2000 and 3000 clusters of 4, 8 and 12 blocks of 256, 4099 9 of 512, 10007 14 of
     768, 15361 16 of 512 threads with 2 rows each (above the portable 8, a partial last block);
     simpler GMRES (restart 30) on 1000 and 2000 clusters of 8 and 16 blocks of 128 rows, then as CG;
     grid kernels: 2000 a cluster of 8 with SELL-P 1, 3000 a cluster of 12 (above the portable 8) with
     SELL-P 1, 65537 a cooperative grid, 1000003 more rows than resident threads (CG: the grid kernel
     compiled for more blocks per SM, CG_GRID_OCCUPANCY_ROWS)                    */
  for (PetscInt n : {(PetscInt)31, (PetscInt)33, (PetscInt)1000, (PetscInt)2000, (PetscInt)3000, (PetscInt)4099, (PetscInt)10007, (PetscInt)15361, (PetscInt)65537, (PetscInt)1000003}) {
    if (n > t.max_size) continue;
    PetscCall(TestCGChunkMatrix(t, n));
    PetscCall(TestBCGSChunkMatrix(t, n));
    PetscCall(TestSGMRESChunkMatrix(t, n));
  }
  /* the BiCGStab grid kernel compiled for more blocks per SM (at least BCGS_GRID_OCCUPANCY_ROWS = 2^17 rows, CUDA) */
  if (200003 <= t.max_size) PetscCall(TestBCGSChunkMatrix(t, 200003));
  if (FUSED_RESIDENT_CHUNK_BLOCKS * FUSED_BLOCK_CHUNK_ROWS <= t.max_size) PetscCall(TestResidentMatrixInGlobal(t));
  for (PetscInt n : t.sizes) {
    if (n > t.max_size) continue;
    for (CGVariant variant : {CGVariant::JACOBI, CGVariant::Z_UPDATE, CGVariant::UNPRECONDITIONED}) PetscCall(TestCGUpdate(t, n, variant));
    PetscCall(TestWAXPYDot(t, n));
    PetscCall(TestDiag(t, n));
    PetscCall(TestBCGSUpdate(t, n, false, false));
    PetscCall(TestBCGSUpdate(t, n, true, false));
    PetscCall(TestBCGSUpdate(t, n, true, true));
    for (const DotSet &set : DOT_SETS) PetscCall(TestDots(t, n, set));
    for (MatrixKind kind : {MatrixKind::RANDOM_0_12, MatrixKind::BANDED_7, MatrixKind::SHORT_0_2, MatrixKind::MEDIUM_0_30, MatrixKind::LONG_16_64, MatrixKind::RECTANGULAR_0_12}) {
      if (kind == MatrixKind::LONG_16_64 && n > 1000) continue; /* 40 M nonzeros: no new code path */
      PetscCall(TestSpMVMatrix(t, kind, n));
    }
    for (MatrixKind kind : {MatrixKind::SHORT_0_2, MatrixKind::RECTANGULAR_0_12}) PetscCall(TestOffDiagMatrix(t, kind, n));
    for (bool weighted : {false, true}) PetscCall(TestGatherScatter(t, n, weighted));
    PetscCall(TestAsyncCopies(t, n));
    PetscCall(TestCopyWithin(t, n));
    for (PetscInt nv : nvs) {
      if (nv > 40 && n > 1000) continue; /* 300 vectors of 10^6: 2.4 GB, no new code path */
      for (PetscBool selfdot : {PETSC_FALSE, PETSC_TRUE})
        if (nv > 0 || selfdot) PetscCall(TestMDot(t, n, nv, selfdot));
      for (MAXPYDot mode : {MAXPYDot::NONE, MAXPYDot::SELF, MAXPYDot::VECTOR}) PetscCall(TestMAXPYScale(t, n, nv, mode));
      PetscCall(TestSGMRESUpdate(t, n, nv));
    }
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace

int main(int argc, char **argv)
{
  Tester      t;
  const char *names[] = {"cuda", "kokkos"};
  PetscInt    which = 0, threads = 0;

  PetscCall(PetscInitialize(&argc, &argv, nullptr, "Checks every operation of the CUDA or Kokkos backend against the host backend"));
  t.host = HostBackend();
  PetscOptionsBegin(PETSC_COMM_WORLD, NULL, "test_backend options", NULL);
  PetscCall(PetscOptionsEList("-fused_backend", "The backend checked against the host backend", NULL, names, 2, names[which], &which, NULL));
  PetscCall(PetscOptionsInt("-fused_kokkos_threads", "Threads of the Kokkos backend (0: its default)", NULL, threads, &threads, NULL));
  PetscCall(PetscOptionsInt("-max_size", "Skip the lengths above this one (sanitizer runs)", NULL, t.max_size, &t.max_size, NULL));
  PetscOptionsEnd();
  if (which == 0) {
#if defined(FUSEDKSP_HAVE_CUDA)
    t.dev = CUDABackend();
#endif
  } else {
#if defined(FUSEDKSP_HAVE_KOKKOS)
    PetscCall(KokkosBackendInitialize(threads, -1));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "test_backend: kokkos backend, %s, %" PetscInt_FMT " threads\n", KokkosBackendSpaceName(), KokkosBackendThreads()));
    t.dev           = KokkosBackend();
    t.sizes         = KOKKOS_SIZES;
    t.device_chunks = false;
#if !defined(FUSEDKSP_KOKKOS_TEAMS) /* the GPU shape on CPU threads defers as on a GPU */
    t.batches = !t.dev->host_memory;
#endif
#endif
  }
  if (!t.dev) {
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "SKIP test_backend: %s\n", which == 0 ? "no GPU (CUDA backend not available)" : "libfusedksp built without the Kokkos backend"));
    PetscCall(PetscFinalize());
    return 0;
  }
  PetscCall(RunAll(t));
  if (t.failures)
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "test_backend: %" PetscInt_FMT " of %" PetscInt_FMT " checks FAILED\n", t.failures, t.checks));
  else
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "test_backend: all %" PetscInt_FMT " checks passed\n", t.checks));
  PetscCall(PetscFinalize());
  return t.failures ? 1 : 0;
}
