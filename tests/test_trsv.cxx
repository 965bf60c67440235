/*
   test_trsv: the sparse triangular solves of the backends (Backend::trsv_analysis/trsv_csr/trsv_free) and the
   level schedule (TriangularLevels).

   Random unit lower and upper triangular factors (fixed seed; values in [-1, 1], never 0, each row's
   off-diagonal entries scaled to absolute sum 0.9 so the solution stays bounded; upper diagonals of absolute
   value 1..2 with random sign, stored inverted) of sizes 0, 1, 31, 32, 33, 1000 and 100003 on four patterns:
   random (0..8 entries a row at random columns), chain (row i depends on i-1: n levels), banded like the ILU(0)
   of a 5-point Laplacian (i-1 and i-m, m = sqrt(n)), and few levels (rows depend on rows at least n/8 before
   them: at most 8 levels).  Host backend (always): the level schedule is a permutation of the rows by level,
   every dependency of a row lies in an earlier level, and the host solution has a residual below 1e-12
   relative.  CUDA backend (skipped visibly without a GPU): for both algorithms (SYNCFREE, LEVELS) the result,
   written over a NaN-filled output, matches the host's to 1e-12 relative to its largest entry, for two
   consecutive solves with different right-hand sides (the sync-free flags are not reset between them), with
   one kernel launch per solve (SYNCFREE) or one per level (LEVELS).  Ends with "test_trsv: PASS".

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

const PetscInt SIZES[] = {0, 1, 31, 32, 33, 1000, 100003};

enum Pattern { RANDOM, CHAIN, BANDED, FEW_LEVELS };
const char *const PatternNames[] = {"random", "chain", "banded", "few-levels"};

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
/* Both algorithms of the device against the host's x (two solves: b and b2) */
PetscErrorCode CheckDevice(Tester &t, const Backend *dev, const Factor &f, const char *pname, PetscInt nlevels, const Index &levelptr, const Index &rows, const Array &b, const Array &x, const Array &b2, const Array &x2)
{
  const PetscInt    n   = f.n;
  const PetscScalar NaN = std::numeric_limits<PetscScalar>::quiet_NaN();
  PetscInt         *drowptr, *dcolidx;
  PetscScalar      *dvals, *dinv = nullptr, *db, *dx;
  Array             out(n);

  PetscFunctionBeginUser;
  PetscCall(dev->malloc_bytes((n + 1) * sizeof(PetscInt), (void **)&drowptr));
  PetscCall(dev->malloc_bytes(f.colidx.size() * sizeof(PetscInt), (void **)&dcolidx));
  PetscCall(dev->malloc_bytes(f.vals.size() * sizeof(PetscScalar), (void **)&dvals));
  PetscCall(dev->malloc_bytes(n * sizeof(PetscScalar), (void **)&db));
  PetscCall(dev->malloc_bytes(n * sizeof(PetscScalar), (void **)&dx));
  PetscCall(dev->copy_to_backend(drowptr, f.rowptr.data(), (n + 1) * sizeof(PetscInt)));
  PetscCall(dev->copy_to_backend(dcolidx, f.colidx.data(), f.colidx.size() * sizeof(PetscInt)));
  PetscCall(dev->copy_to_backend(dvals, f.vals.data(), f.vals.size() * sizeof(PetscScalar)));
  if (f.upper) {
    PetscCall(dev->malloc_bytes(n * sizeof(PetscScalar), (void **)&dinv));
    PetscCall(dev->copy_to_backend(dinv, f.invdiag.data(), n * sizeof(PetscScalar)));
  }
  for (TrsvAlgorithm alg : {TrsvAlgorithm::SYNCFREE, TrsvAlgorithm::LEVELS}) {
    const char    *aname = alg == TrsvAlgorithm::LEVELS ? "levels" : "syncfree";
    TriangularView v;

    v.n         = n;
    v.upper     = f.upper;
    v.rowptr    = drowptr;
    v.colidx    = dcolidx;
    v.vals      = dvals;
    v.invdiag   = dinv;
    v.algorithm = alg;
    PetscCall(dev->trsv_analysis(&v, nlevels, levelptr.data(), rows.data()));
    for (int solve = 0; solve < 2; ++solve) {
      const Array     &bb = solve ? b2 : b, &xx = solve ? x2 : x;
      const PetscInt64 before = dev->counters->launches;
      PetscReal        err    = 0;
      const PetscReal  scale  = PetscMax(MaxAbs(xx), 1e-300);

      std::fill(out.begin(), out.end(), NaN);
      PetscCall(dev->copy_to_backend(dx, out.data(), n * sizeof(PetscScalar)));
      PetscCall(dev->copy_to_backend(db, bb.data(), n * sizeof(PetscScalar)));
      PetscCall(dev->trsv_csr(&v, db, dx));
      const PetscInt64 launches = dev->counters->launches - before;
      PetscCall(dev->copy_to_host(out.data(), dx, n * sizeof(PetscScalar)));
      for (PetscInt i = 0; i < n; ++i) err = std::isfinite(out[i]) ? PetscMax(err, std::fabs(out[i] - xx[i]) / scale) : PETSC_INFINITY;
      PetscCall(t.Check(err <= 1e-12, solve ? "device solve 2 vs host" : "device solve 1 vs host", n, pname, f.upper, aname, err));
      PetscCall(t.Check(launches == (n == 0 ? 0 : alg == TrsvAlgorithm::LEVELS ? nlevels : 1), "kernel launches", n, pname, f.upper, aname, (PetscReal)launches));
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
  PetscFunctionReturn(PETSC_SUCCESS);
}
#endif

PetscErrorCode RunAll(Tester &t, const Backend *dev)
{
  const Backend *host = HostBackend();

  PetscFunctionBeginUser;
  for (PetscInt n : SIZES) {
    for (int p = RANDOM; p <= FEW_LEVELS; ++p) {
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
#if defined(FUSEDKSP_HAVE_CUDA)
        if (dev) PetscCall(CheckDevice(t, dev, f, PatternNames[p], nlevels, levelptr, rows, b, x, b2, x2));
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
