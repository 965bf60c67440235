/*
   test_trsv: the sparse triangular solves of the backends (Backend::trsv_analysis/trsv_csr/trsv_free) and the
   level schedule (TriangularLevels).

   Random unit lower and upper triangular factors (fixed seed; values in [-1, 1], never 0, each row's
   off-diagonal entries scaled to absolute sum 0.9 so the solution stays bounded; upper diagonals of absolute
   value 1..2 with random sign, stored inverted) of sizes 0, 1, 31, 32, 33, 1000 and 100003 on four patterns:
   random (0..8 entries a row at random columns), chain (row i depends on i-1: n levels), banded like the ILU(0)
   of a 5-point Laplacian (i-1 and i-m, m = sqrt(n)), few levels (rows depend on rows at least n/8 before
   them: at most 8 levels) and wide (9..24 entries a row).  Host backend (always): the level schedule is a
   permutation of the rows by level, every dependency of a row lies in an earlier level, and the host solution
   has a residual below 1e-12 relative, and CUSPARSE there is the same exact solve, bit for bit; the approximate
   JACOBI solve with 0, 1, 2 and 5 sweeps equals this test's own evaluation of the Neumann series to 1e-13, and
   with levels - 1 sweeps (up to 64 levels) solves exactly (residual below 1e-12).  CUDA backend (skipped
   visibly without a GPU): for every algorithm (SYNCFREE, LEVELS, CUSPARSE, JACOBI with 0, 1, 2, 5 sweeps) the
   result, written over a NaN-filled output, matches the host backend's to 1e-12 relative to its largest entry,
   for two consecutive solves with different right-hand sides and vectors (the sync-free flags are not reset
   between them; the graph of the levels and cuSPARSE read their vectors anew), with one kernel launch per solve
   (SYNCFREE; CUSPARSE: one cusparseSpSV_solve), one per level (LEVELS: plus one when the levels are replayed as
   a graph, which they must be from 2 to 1000 levels) or one per sweep (JACOBI); then a third solve after the
   factor's values change in place (negated off-diagonal entries, halved inverted diagonal; CUSPARSE's analysis
   made again, as Backend::trsv_analysis asks) matches the host's solve of the new factor.  The two forms of
   TriangularView (unit lower; upper with its diagonal inverted) are those of every factor of fusedfactor.cxx,
   whose transposed factors are built in them too.  Ends with "test_trsv: PASS".

   On the GPU machine:   make build/bin/test_trsv && build/bin/test_trsv
*/
#include <fusedksp.h>
#include "backend/backend.hpp"
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

using namespace fusedksp;

namespace
{

using Array = std::vector<PetscScalar>;
using Index = std::vector<PetscInt>;

const PetscInt SIZES[]  = {0, 1, 31, 32, 33, 1000, 100003};
const PetscInt SWEEPS[] = {0, 1, 2, 5};

enum Pattern { RANDOM, CHAIN, BANDED, FEW_LEVELS, WIDE };
const char *const PatternNames[] = {"random", "chain", "banded", "few-levels", "wide"};

struct Factor {
  PetscInt  n     = 0;
  PetscBool upper = PETSC_FALSE;
  Index     rowptr, colidx;
  Array     vals, invdiag;
};

struct Tester {
  std::mt19937_64                             rng{20261125};
  std::uniform_real_distribution<PetscScalar> uniform{-1.0, 1.0};
  PetscInt                                    checks = 0, failures = 0;

  PetscScalar Random()
  {
    PetscScalar v;
    do v = uniform(rng);
    while (v == 0);
    return v;
  }

  PetscErrorCode Check(bool ok, const char *what, PetscInt n, const char *pattern, PetscBool upper, const char *alg, PetscReal value)
  {
    PetscFunctionBeginUser;
    checks++;
    if (!ok) {
      failures++;
      PetscCall(PetscPrintf(PETSC_COMM_WORLD, "FAILED %s: n %" PetscInt_FMT " %s %s %s (%g)\n", what, n, pattern, upper ? "upper" : "lower", alg, (double)value));
    }
    PetscFunctionReturn(PETSC_SUCCESS);
  }
};

/* The dependency columns of row i (all < i for lower; mapped to > i for upper by the caller) */
void RowColumns(Tester &t, Pattern p, PetscInt n, PetscInt i, std::vector<PetscInt> &cols)
{
  cols.clear();
  switch (p) {
  case RANDOM: {
    const int k = (int)(t.rng() % 9);
    for (int j = 0; j < k && i > 0; ++j) cols.push_back((PetscInt)(t.rng() % (unsigned long long)i));
  } break;
  case CHAIN:
    if (i > 0) cols.push_back(i - 1);
    break;
  case BANDED: {
    const PetscInt m = PetscMax(1, (PetscInt)std::sqrt((double)n));
    if (i % m) cols.push_back(i - 1);
    if (i >= m) cols.push_back(i - m);
  } break;
  case FEW_LEVELS: {
    const PetscInt gap = PetscMax(1, n / 8);
    for (int j = 0; j < 3 && i >= gap; ++j) cols.push_back((PetscInt)(t.rng() % (unsigned long long)(i - gap + 1)));
  } break;
  case WIDE: {
    const int k = 9 + (int)(t.rng() % 16);
    for (int j = 0; j < k && i > 0; ++j) cols.push_back((PetscInt)(t.rng() % (unsigned long long)i));
  } break;
  }
  std::sort(cols.begin(), cols.end());
  cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
}

Factor MakeFactor(Tester &t, Pattern p, PetscInt n, PetscBool upper)
{
  Factor                f;
  std::vector<PetscInt> cols;

  f.n     = n;
  f.upper = upper;
  f.rowptr.assign(n + 1, 0);
  if (upper) f.invdiag.resize(n);
  for (PetscInt i = 0; i < n; ++i) {
    /* an upper factor is the lower pattern of the reversed order: row i depends on n-1-c for c in cols(n-1-i) */
    RowColumns(t, p, n, upper ? n - 1 - i : i, cols);
    if (upper) {
      for (auto &c : cols) c = n - 1 - c;
      std::sort(cols.begin(), cols.end());
    }
    PetscReal sum = 0;
    for (PetscInt c : cols) {
      f.colidx.push_back(c);
      f.vals.push_back(t.Random());
      sum += std::fabs(f.vals.back());
    }
    for (size_t k = f.vals.size() - cols.size(); k < f.vals.size(); ++k) f.vals[k] *= 0.9 / sum;
    f.rowptr[i + 1] = (PetscInt)f.colidx.size();
    if (upper) f.invdiag[i] = 1.0 / ((1.0 + 0.5 * (t.Random() + 1.0)) * (t.Random() > 0 ? 1 : -1));
  }
  return f;
}

TriangularView HostView(const Factor &f)
{
  TriangularView v;

  v.n       = f.n;
  v.upper   = f.upper;
  v.rowptr  = f.rowptr.data();
  v.colidx  = f.colidx.data();
  v.vals    = f.vals.data();
  v.invdiag = f.upper ? f.invdiag.data() : nullptr;
  return v;
}

PetscReal MaxAbs(const Array &a)
{
  PetscReal m = 0;
  for (PetscScalar v : a) m = PetscMax(m, std::fabs(v));
  return m;
}

/* max_i |(T x - b)_i| / max(|b|): T x row i = (x_i / invdiag_i or x_i) + sum of the row's entries times x */
PetscReal Residual(const Factor &f, const Array &x, const Array &b)
{
  PetscReal r = 0;

  for (PetscInt i = 0; i < f.n; ++i) {
    PetscScalar s = f.upper ? x[i] / f.invdiag[i] : x[i];
    for (PetscInt k = f.rowptr[i]; k < f.rowptr[i + 1]; ++k) s += f.vals[k] * x[f.colidx[k]];
    r = PetscMax(r, std::fabs(s - b[i]));
  }
  return r / PetscMax(MaxAbs(b), 1e-300);
}

/* This test's own evaluation of the approximate solve of TriangularView: x_0 = D^{-1} b, then `sweeps` times
   x = D^{-1} (b - (T - D) x) with D the diagonal of T (1 for lower) */
Array NeumannSolve(const Factor &f, const Array &b, PetscInt sweeps)
{
  Array x(f.n), next(f.n);

  for (PetscInt i = 0; i < f.n; ++i) x[i] = f.upper ? b[i] * f.invdiag[i] : b[i];
  for (PetscInt m = 0; m < sweeps; ++m) {
    for (PetscInt i = 0; i < f.n; ++i) {
      PetscScalar s = 0;
      for (PetscInt k = f.rowptr[i]; k < f.rowptr[i + 1]; ++k) s += f.vals[k] * x[f.colidx[k]];
      next[i] = f.upper ? (b[i] - s) * f.invdiag[i] : b[i] - s;
    }
    x.swap(next);
  }
  return x;
}

/* The host backend's JACOBI against NeumannSolve(), and exact with levels - 1 sweeps */
PetscErrorCode CheckHostJacobi(Tester &t, const Factor &f, const char *pname, PetscInt nlevels, const Array &b)
{
  const Backend *host = HostBackend();

  PetscFunctionBeginUser;
  for (PetscInt sweeps : SWEEPS) {
    TriangularView hv  = HostView(f);
    const Array    ref = NeumannSolve(f, b, sweeps);
    Array          x(f.n, std::numeric_limits<PetscScalar>::quiet_NaN());
    const PetscReal scale = PetscMax(MaxAbs(ref), 1e-300);
    PetscReal       err   = 0;

    hv.algorithm = TrsvAlgorithm::JACOBI;
    hv.sweeps    = sweeps;
    PetscCall(host->trsv_analysis(&hv, 0, nullptr, nullptr));
    PetscCall(host->trsv_csr(&hv, b.data(), x.data()));
    PetscCall(host->trsv_free(&hv));
    for (PetscInt i = 0; i < f.n; ++i) err = std::isfinite(x[i]) ? PetscMax(err, std::fabs(x[i] - ref[i]) / scale) : PETSC_INFINITY;
    PetscCall(t.Check(err <= 1e-13, "host jacobi vs Neumann series", f.n, pname, f.upper, "jacobi", err));
  }
  if (nlevels >= 1 && nlevels <= 64) {
    TriangularView hv = HostView(f);
    Array          x(f.n);

    hv.algorithm = TrsvAlgorithm::JACOBI;
    hv.sweeps    = nlevels - 1;
    PetscCall(host->trsv_analysis(&hv, 0, nullptr, nullptr));
    PetscCall(host->trsv_csr(&hv, b.data(), x.data()));
    PetscCall(host->trsv_free(&hv));
    PetscCall(t.Check(Residual(f, x, b) <= 1e-12, "host jacobi with levels - 1 sweeps is exact", f.n, pname, f.upper, "jacobi", Residual(f, x, b)));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode CheckLevels(Tester &t, const Factor &f, const char *pname, PetscInt *nlevels, Index &levelptr, Index &rows)
{
  const PetscInt n = f.n;
  Index          level(n, -1);
  bool           ok = true;

  PetscFunctionBeginUser;
  levelptr.assign(n + 1, -1);
  rows.assign(n, -1);
  PetscCall(TriangularLevels(n, f.upper, f.rowptr.data(), f.colidx.data(), nlevels, levelptr.data(), rows.data()));
  ok = levelptr[0] == 0 && levelptr[*nlevels] == n;
  for (PetscInt l = 0; ok && l < *nlevels; ++l) {
    ok = levelptr[l + 1] > levelptr[l];
    for (PetscInt k = levelptr[l]; ok && k < levelptr[l + 1]; ++k) {
      ok = rows[k] >= 0 && rows[k] < n && level[rows[k]] < 0 && (k == levelptr[l] || rows[k] > rows[k - 1]);
      if (ok) level[rows[k]] = l;
    }
  }
  for (PetscInt i = 0; ok && i < n; ++i)
    for (PetscInt k = f.rowptr[i]; ok && k < f.rowptr[i + 1]; ++k) ok = level[f.colidx[k]] < level[i];
  PetscCall(t.Check(ok, "level schedule", n, pname, f.upper, "", (PetscReal)*nlevels));
  PetscFunctionReturn(PETSC_SUCCESS);
}

#if defined(FUSEDKSP_HAVE_CUDA)
/* Every algorithm of the device against the host backend's x (two solves: b and b2, in other device vectors) */
PetscErrorCode CheckDevice(Tester &t, const Backend *dev, const Factor &f, const char *pname, PetscInt nlevels, const Index &levelptr, const Index &rows, const Array &b, const Array &b2)
{
  const PetscInt    n   = f.n;
  const PetscScalar NaN = std::numeric_limits<PetscScalar>::quiet_NaN();
  PetscInt         *drowptr, *dcolidx;
  PetscScalar      *dvals, *dinv = nullptr, *db, *dx, *db2, *dx2;
  Array             out(n);
  struct Variant {
    TrsvAlgorithm alg;
    PetscInt      sweeps;
    const char   *name;
  };
  const Variant variants[] = {
    {TrsvAlgorithm::SYNCFREE, 0, "syncfree"  },
    {TrsvAlgorithm::LEVELS,   0, "levels"    },
    {TrsvAlgorithm::CUSPARSE, 0, "cusparse"  },
    {TrsvAlgorithm::JACOBI,   0, "jacobi(0)" },
    {TrsvAlgorithm::JACOBI,   1, "jacobi(1)" },
    {TrsvAlgorithm::JACOBI,   2, "jacobi(2)" },
    {TrsvAlgorithm::JACOBI,   5, "jacobi(5)" }
  };

  PetscFunctionBeginUser;
  PetscCall(dev->malloc_bytes((n + 1) * sizeof(PetscInt), (void **)&drowptr));
  PetscCall(dev->malloc_bytes(f.colidx.size() * sizeof(PetscInt), (void **)&dcolidx));
  PetscCall(dev->malloc_bytes(f.vals.size() * sizeof(PetscScalar), (void **)&dvals));
  PetscCall(dev->malloc_bytes(n * sizeof(PetscScalar), (void **)&db));
  PetscCall(dev->malloc_bytes(n * sizeof(PetscScalar), (void **)&dx));
  PetscCall(dev->malloc_bytes(n * sizeof(PetscScalar), (void **)&db2));
  PetscCall(dev->malloc_bytes(n * sizeof(PetscScalar), (void **)&dx2));
  PetscCall(dev->copy_to_backend(drowptr, f.rowptr.data(), (n + 1) * sizeof(PetscInt)));
  PetscCall(dev->copy_to_backend(dcolidx, f.colidx.data(), f.colidx.size() * sizeof(PetscInt)));
  PetscCall(dev->copy_to_backend(dvals, f.vals.data(), f.vals.size() * sizeof(PetscScalar)));
  if (f.upper) {
    PetscCall(dev->malloc_bytes(n * sizeof(PetscScalar), (void **)&dinv));
    PetscCall(dev->copy_to_backend(dinv, f.invdiag.data(), n * sizeof(PetscScalar)));
  }
  for (const Variant &var : variants) {
    const char    *aname = var.name;
    TriangularView v, hv = HostView(f);
    Array          x(n), x2(n);

    hv.algorithm = var.alg;
    hv.sweeps    = var.sweeps;
    PetscCall(HostBackend()->trsv_analysis(&hv, nlevels, levelptr.data(), rows.data()));
    PetscCall(HostBackend()->trsv_csr(&hv, b.data(), x.data()));
    PetscCall(HostBackend()->trsv_csr(&hv, b2.data(), x2.data()));
    PetscCall(HostBackend()->trsv_free(&hv));
    v.n         = n;
    v.upper     = f.upper;
    v.rowptr    = drowptr;
    v.colidx    = dcolidx;
    v.vals      = dvals;
    v.invdiag   = dinv;
    v.algorithm = var.alg;
    v.sweeps    = var.sweeps;
    PetscCall(dev->trsv_analysis(&v, nlevels, levelptr.data(), rows.data()));
    for (int solve = 0; solve < 2; ++solve) {
      const Array     &bb = solve ? b2 : b, &xx = solve ? x2 : x;
      PetscScalar     *vb = solve ? db2 : db, *vx = solve ? dx2 : dx;
      const PetscInt64 before = dev->counters->launches;
      PetscReal        err    = 0;
      const PetscReal  scale  = PetscMax(MaxAbs(xx), 1e-300);
      PetscInt64       expect = 0;

      std::fill(out.begin(), out.end(), NaN);
      PetscCall(dev->copy_to_backend(vx, out.data(), n * sizeof(PetscScalar)));
      PetscCall(dev->copy_to_backend(vb, bb.data(), n * sizeof(PetscScalar)));
      PetscCall(dev->trsv_csr(&v, vb, vx));
      const PetscInt64 launches = dev->counters->launches - before;
      PetscCall(dev->copy_to_host(out.data(), vx, n * sizeof(PetscScalar)));
      for (PetscInt i = 0; i < n; ++i) err = std::isfinite(out[i]) ? PetscMax(err, std::fabs(out[i] - xx[i]) / scale) : PETSC_INFINITY;
      PetscCall(t.Check(err <= 1e-12, solve ? "device solve 2 vs host" : "device solve 1 vs host", n, pname, f.upper, aname, err));
      if (n) {
        if (var.alg == TrsvAlgorithm::JACOBI) expect = PetscMax(var.sweeps, 1);
        else if (var.alg == TrsvAlgorithm::SYNCFREE || var.alg == TrsvAlgorithm::CUSPARSE) expect = 1;
        else expect = nlevels + (nlevels > 1 && (nlevels <= 1000 || launches == nlevels + 1) ? 1 : 0); /* a graph must replay 2..1000 levels */
      }
      PetscCall(t.Check(launches == expect, "kernel launches", n, pname, f.upper, aname, (PetscReal)launches));
    }
    { /* new values in the same arrays: the solve follows them (CUSPARSE after its analysis is made again) */
      Factor          g  = f;
      TriangularView  gv = HostView(g);
      Array           ref(n);
      PetscReal       err = 0, scale;

      for (PetscScalar &a : g.vals) a = -a;
      for (PetscScalar &d : g.invdiag) d *= 0.5;
      gv.algorithm = var.alg;
      gv.sweeps    = var.sweeps;
      PetscCall(HostBackend()->trsv_analysis(&gv, nlevels, levelptr.data(), rows.data()));
      PetscCall(HostBackend()->trsv_csr(&gv, b.data(), ref.data()));
      PetscCall(HostBackend()->trsv_free(&gv));
      PetscCall(dev->copy_to_backend(dvals, g.vals.data(), g.vals.size() * sizeof(PetscScalar)));
      if (f.upper) PetscCall(dev->copy_to_backend(dinv, g.invdiag.data(), n * sizeof(PetscScalar)));
      if (var.alg == TrsvAlgorithm::CUSPARSE) {
        PetscCall(dev->trsv_free(&v));
        PetscCall(dev->trsv_analysis(&v, nlevels, levelptr.data(), rows.data()));
      }
      std::fill(out.begin(), out.end(), NaN);
      PetscCall(dev->copy_to_backend(dx, out.data(), n * sizeof(PetscScalar)));
      PetscCall(dev->copy_to_backend(db, b.data(), n * sizeof(PetscScalar)));
      PetscCall(dev->trsv_csr(&v, db, dx));
      PetscCall(dev->copy_to_host(out.data(), dx, n * sizeof(PetscScalar)));
      scale = PetscMax(MaxAbs(ref), 1e-300);
      for (PetscInt i = 0; i < n; ++i) err = std::isfinite(out[i]) ? PetscMax(err, std::fabs(out[i] - ref[i]) / scale) : PETSC_INFINITY;
      PetscCall(t.Check(err <= 1e-12, "device solve after new values vs host", n, pname, f.upper, aname, err));
      PetscCall(dev->copy_to_backend(dvals, f.vals.data(), f.vals.size() * sizeof(PetscScalar)));
      if (f.upper) PetscCall(dev->copy_to_backend(dinv, f.invdiag.data(), n * sizeof(PetscScalar)));
    }
    PetscCall(dev->trsv_free(&v));
    PetscCall(t.Check(v.schedule == nullptr, "trsv_free resets the schedule", n, pname, f.upper, aname, 0));
  }
  PetscCall(dev->free_bytes(drowptr));
  PetscCall(dev->free_bytes(dcolidx));
  PetscCall(dev->free_bytes(dvals));
  PetscCall(dev->free_bytes(dinv));
  PetscCall(dev->free_bytes(db));
  PetscCall(dev->free_bytes(dx));
  PetscCall(dev->free_bytes(db2));
  PetscCall(dev->free_bytes(dx2));
  PetscFunctionReturn(PETSC_SUCCESS);
}
#endif

PetscErrorCode RunAll(Tester &t, const Backend *dev)
{
  const Backend *host = HostBackend();

  PetscFunctionBeginUser;
  for (PetscInt n : SIZES) {
    for (int p = RANDOM; p <= WIDE; ++p) {
      for (PetscBool upper : {PETSC_FALSE, PETSC_TRUE}) {
        const Factor   f  = MakeFactor(t, (Pattern)p, n, upper);
        TriangularView hv = HostView(f);
        Array          b(n), b2(n), x(n, std::numeric_limits<PetscScalar>::quiet_NaN()), x2(x);
        Index          levelptr, rows;
        PetscInt       nlevels;

        for (auto &v : b) v = t.Random();
        for (auto &v : b2) v = t.Random();
        PetscCall(CheckLevels(t, f, PatternNames[p], &nlevels, levelptr, rows));
        PetscCall(host->trsv_analysis(&hv, nlevels, levelptr.data(), rows.data()));
        PetscCall(host->trsv_csr(&hv, b.data(), x.data()));
        PetscCall(host->trsv_csr(&hv, b2.data(), x2.data()));
        PetscCall(host->trsv_free(&hv));
        PetscCall(t.Check(Residual(f, x, b) <= 1e-12 && Residual(f, x2, b2) <= 1e-12, "host residual", n, PatternNames[p], upper, "", Residual(f, x, b)));
        {
          TriangularView cv = HostView(f);
          Array          xc(n, std::numeric_limits<PetscScalar>::quiet_NaN());

          cv.algorithm = TrsvAlgorithm::CUSPARSE;
          PetscCall(host->trsv_analysis(&cv, nlevels, levelptr.data(), rows.data()));
          PetscCall(host->trsv_csr(&cv, b.data(), xc.data()));
          PetscCall(host->trsv_free(&cv));
          PetscCall(t.Check(xc == x, "host cusparse is the exact solve", n, PatternNames[p], upper, "cusparse", 0));
        }
        PetscCall(CheckHostJacobi(t, f, PatternNames[p], nlevels, b));
#if defined(FUSEDKSP_HAVE_CUDA)
        if (dev) PetscCall(CheckDevice(t, dev, f, PatternNames[p], nlevels, levelptr, rows, b, b2));
#endif
      }
    }
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace

int main(int argc, char **argv)
{
  Tester         t;
  const Backend *dev = nullptr;

  PetscCall(PetscInitialize(&argc, &argv, nullptr, "Checks the sparse triangular solves of the backends"));
  PetscCall(FusedKSPInitializePackage()); /* reads -fused_backend (the runner's) and binds the GPU */
#if defined(FUSEDKSP_HAVE_CUDA)
  dev = CUDABackend();
#endif
  if (!dev) PetscCall(PetscPrintf(PETSC_COMM_WORLD, "SKIP test_trsv CUDA part: no GPU (CUDA backend not available); host checks only\n"));
  PetscCall(RunAll(t, dev));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "test_trsv: %" PetscInt_FMT " of %" PetscInt_FMT " checks %s\n", t.failures ? t.failures : t.checks, t.checks, t.failures ? "FAILED" : "passed"));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "test_trsv: %s\n", t.failures ? "FAIL" : "PASS"));
  PetscCall(PetscFinalize());
  return t.failures ? 1 : 0;
}
