/*
   Test and benchmark problems for FusedKSP (see problems.h for the options).

   Every generator is assembled in parallel with the rows in the natural ordering split in contiguous
   blocks (PetscSplitOwnership(), or rank 0 heavier with -uneven).  The stencil and finite-element
   generators compute whole rows locally (no off-process entries) from a row function, called once to
   count the preallocation and once to insert.  randdd and MatrixMarket files insert off-process
   entries, so they are preallocated with MATPREALLOCATOR.  All random numbers come from a hash of
   (seed, global index), so a problem is the same on any number of ranks.
*/
#include <ctype.h>
#include "problems.h"

typedef enum { PROBLEM_POISSON2D, PROBLEM_FEM2D, PROBLEM_LAPLACE3D, PROBLEM_ELASTICITY3D, PROBLEM_CONVDIFF3D, PROBLEM_RANDDD, PROBLEM_SKEW, PROBLEM_INDEFINITE, PROBLEM_FILE, PROBLEM_ANISO3D, PROBLEM_JUMP3D, PROBLEM_DIRICHLET3D } ProblemType;
static const char *const ProblemTypes[] = {"poisson2d", "fem2d", "laplace3d", "elasticity3d", "convdiff3d", "randdd", "skew", "indefinite", "file", "aniso3d", "jump3d", "dirichlet3d", "ProblemType", "PROBLEM_", NULL};

typedef enum { RHS_ONES, RHS_RANDOM, RHS_SOLUTION } RhsType;
static const char *const RhsTypes[] = {"ones", "random", "solution", "RhsType", "RHS_", NULL};

/* default -n per problem: small enough for the test suite */
static const PetscInt DefaultN[] = {32, 32, 16, 6, 16, 1000, 16, 16, 0, 16, 16, 16};

#define MAX_ROW 128 /* the widest generated row: elasticity3d has 45 */

typedef struct {
  ProblemType type;
  PetscInt    n;          /* points (cells for elasticity3d) per direction; randdd: rows */
  PetscInt    N;          /* global number of rows */
  PetscReal   pe;         /* convdiff3d: velocity (1, 0.5, 0.25) * pe */
  PetscReal   shear;      /* fem2d: node (i, j) sits at ((i + shear j) h, j h) */
  PetscReal   shift;      /* indefinite: 5-point Laplacian (diagonal 4) minus shift * I */
  PetscReal   margin;     /* randdd: diagonal = sum |off-diagonal| + margin */
  PetscBool   nonsym;     /* randdd: independent values for (i,j) and (j,i) */
  PetscInt    seed;       /* randdd and the random right-hand sides */
  PetscReal   lambda, mu; /* elasticity3d: Lame parameters from E = 1, nu = 0.3 */
  PetscReal   eps;        /* aniso3d: diffusion coefficients (1, eps, eps^2) */
  PetscReal   contrast;   /* jump3d: the coefficient in the high blocks of the checkerboard */
} Gen;

/* splitmix64: a well-mixed 64-bit hash; uniform double in [0,1) from (seed, a, b) */
static PetscReal HashUniform(PetscInt seed, PetscInt a, PetscInt b)
{
  uint64_t z = (uint64_t)seed * 0x9E3779B97F4A7C15ULL + (uint64_t)a * 0xBF58476D1CE4E5B9ULL + (uint64_t)b * 0x94D049BB133111EBULL + 0x2545F4914F6CDD1DULL;

  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z = z ^ (z >> 31);
  return (PetscReal)(z >> 11) * (1.0 / 9007199254740992.0);
}

/* adds v to column c of a row being built (columns are few, a linear search is fine) */
static PetscErrorCode RowAdd(PetscInt *nc, PetscInt cols[], PetscScalar vals[], PetscInt c, PetscScalar v)
{
  PetscFunctionBeginUser;
  for (PetscInt k = 0; k < *nc; k++) {
    if (cols[k] == c) {
      vals[k] += v;
      PetscFunctionReturn(PETSC_SUCCESS);
    }
  }
  PetscCheck(*nc < MAX_ROW, PETSC_COMM_SELF, PETSC_ERR_PLIB, "Row has more than %d entries", MAX_ROW);
  cols[*nc] = c;
  vals[*nc] = v;
  (*nc)++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* 2D grid rows (poisson2d, skew, indefinite): unknown r = i + j n, i, j in [0, n) */
static PetscErrorCode RowGrid2d(const Gen *g, PetscInt r, PetscInt *nc, PetscInt cols[], PetscScalar vals[])
{
  const PetscInt n = g->n, i = r % n, j = r / n;
  PetscScalar    diag = 4.0, off = -1.0, east = 0.0, north = 0.0;

  PetscFunctionBeginUser;
  if (g->type == PROBLEM_INDEFINITE) diag = 4.0 - g->shift;
  if (g->type == PROBLEM_SKEW) { /* centered differences of (1, 0.5) . grad u: A^T = -A */
    diag  = 0.0;
    off   = 0.0;
    east  = 0.5;
    north = 0.25;
  }
  *nc = 0;
  PetscCall(RowAdd(nc, cols, vals, r, diag));
  if (i > 0) PetscCall(RowAdd(nc, cols, vals, r - 1, off - east));
  if (i < n - 1) PetscCall(RowAdd(nc, cols, vals, r + 1, off + east));
  if (j > 0) PetscCall(RowAdd(nc, cols, vals, r - n, off - north));
  if (j < n - 1) PetscCall(RowAdd(nc, cols, vals, r + n, off + north));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* 3D grid rows (laplace3d, convdiff3d): unknown r = i + j n + k n^2; convdiff3d adds first-order upwind
   convection with velocity (1, 0.5, 0.25) pe, scaled like the diffusion (by h^2, h = 1/(n+1)) */
static PetscErrorCode RowGrid3d(const Gen *g, PetscInt r, PetscInt *nc, PetscInt cols[], PetscScalar vals[])
{
  const PetscInt  n = g->n, idx[3] = {r % n, (r / n) % n, r / (n * n)}, stride[3] = {1, n, n * n};
  const PetscReal h = 1.0 / (PetscReal)(n + 1), vel[3] = {1.0, 0.5, 0.25};
  PetscScalar     diag = 6.0;

  PetscFunctionBeginUser;
  *nc = 0;
  if (g->type == PROBLEM_CONVDIFF3D) diag += h * g->pe * (vel[0] + vel[1] + vel[2]);
  PetscCall(RowAdd(nc, cols, vals, r, diag));
  for (PetscInt d = 0; d < 3; d++) {
    const PetscScalar upwind = g->type == PROBLEM_CONVDIFF3D ? -h * g->pe * vel[d] : 0.0;

    if (idx[d] > 0) PetscCall(RowAdd(nc, cols, vals, r - stride[d], -1.0 + upwind));
    if (idx[d] < n - 1) PetscCall(RowAdd(nc, cols, vals, r + stride[d], -1.0));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* jump3d: the diffusion coefficient at grid point (i, j, k): contrast on the cubes of a checkerboard of
   4 x 4 x 4 blocks, 1 elsewhere */
static PetscReal JumpCoefficient(const Gen *g, const PetscInt idx[3])
{
  const PetscInt b = PetscMax(1, g->n / 4);

  return ((idx[0] / b + idx[1] / b + idx[2] / b) % 2) ? g->contrast : 1.0;
}

/* 3D diffusion rows on an n^3 grid, unknown r = i + j n + k n^2:
     aniso3d      7-point, coefficients (1, eps, eps^2) in x, y, z, Dirichlet points eliminated: SPD
     jump3d       7-point, the coefficient of each link the harmonic mean of its end points' (JumpCoefficient(),
                  a point's own beyond the boundary), Dirichlet points eliminated: SPD
     dirichlet3d  7-point Laplacian whose boundary points stay unknowns with rows 6 e_r (as PETSc's DMDA
                  tutorials, ksp ex45 for one, set them): interior rows couple to them, the boundary rows do
                  not couple back, so A is not symmetric                                                   */
static PetscErrorCode RowDiffusion3d(const Gen *g, PetscInt r, PetscInt *nc, PetscInt cols[], PetscScalar vals[])
{
  const PetscInt n = g->n, idx[3] = {r % n, (r / n) % n, r / (n * n)}, stride[3] = {1, n, n * n};
  PetscScalar    diag = 0.0;

  PetscFunctionBeginUser;
  *nc = 0;
  PetscCall(RowAdd(nc, cols, vals, r, 0.0));
  if (g->type == PROBLEM_DIRICHLET3D && (idx[0] == 0 || idx[1] == 0 || idx[2] == 0 || idx[0] == n - 1 || idx[1] == n - 1 || idx[2] == n - 1)) {
    vals[0] = 6.0;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  for (PetscInt d = 0; d < 3; d++) {
    for (PetscInt side = -1; side <= 1; side += 2) {
      const PetscBool inside = (PetscBool)(side < 0 ? idx[d] > 0 : idx[d] < n - 1);
      PetscReal       c      = 1.0;

      if (g->type == PROBLEM_ANISO3D) c = d == 0 ? 1.0 : d == 1 ? g->eps : g->eps * g->eps;
      if (g->type == PROBLEM_JUMP3D) {
        PetscInt  nb[3] = {idx[0], idx[1], idx[2]};
        PetscReal ka    = JumpCoefficient(g, idx), kb;

        nb[d] += side;
        kb = inside ? JumpCoefficient(g, nb) : ka;
        c  = 2.0 * ka * kb / (ka + kb);
      }
      diag += c;
      if (inside) PetscCall(RowAdd(nc, cols, vals, r + side * stride[d], -c));
    }
  }
  vals[0] = diag;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* fem2d: -Laplace u = f, linear triangles on the (n+1) x (n+1) cells of the unit square (sheared by g->shear),
   each cell cut along its (0,0)-(1,1) diagonal, u = 0 on the boundary (boundary nodes eliminated).
   Grid nodes (I, J), I, J in [0, n+1]; unknown r = (I-1) + (J-1) n.  Row r is the sum over the triangles
   around its node of the element stiffness rows, so no off-process entries are needed. */
static PetscErrorCode RowFem2d(const Gen *g, PetscInt r, PetscInt *nc, PetscInt cols[], PetscScalar vals[])
{
  const PetscInt  n = g->n, gi = r % n + 1, gj = r / n + 1;
  const PetscReal h            = 1.0 / (PetscReal)(n + 1);
  const PetscInt  tri[2][3][2] = {{{0, 0}, {1, 0}, {1, 1}}, {{0, 0}, {1, 1}, {0, 1}}};

  PetscFunctionBeginUser;
  *nc = 0;
  for (PetscInt cj = gj - 1; cj <= gj; cj++) {
    for (PetscInt ci = gi - 1; ci <= gi; ci++) {
      for (PetscInt t = 0; t < 2; t++) {
        PetscInt  vi[3], vj[3], a = -1;
        PetscReal x[3], y[3], b[3], c[3], area2;

        for (PetscInt v = 0; v < 3; v++) {
          vi[v] = ci + tri[t][v][0];
          vj[v] = cj + tri[t][v][1];
          x[v]  = (vi[v] + g->shear * vj[v]) * h;
          y[v]  = vj[v] * h;
          if (vi[v] == gi && vj[v] == gj) a = v;
        }
        if (a < 0) continue;
        area2 = (x[1] - x[0]) * (y[2] - y[0]) - (x[2] - x[0]) * (y[1] - y[0]);
        for (PetscInt v = 0; v < 3; v++) { /* gradients of the barycentric coordinates, times area2 */
          b[v] = y[(v + 1) % 3] - y[(v + 2) % 3];
          c[v] = x[(v + 2) % 3] - x[(v + 1) % 3];
        }
        for (PetscInt v = 0; v < 3; v++) {
          if (vi[v] < 1 || vi[v] > n || vj[v] < 1 || vj[v] > n) continue;
          PetscCall(RowAdd(nc, cols, vals, (vi[v] - 1) + (vj[v] - 1) * n, (b[a] * b[v] + c[a] * c[v]) / (2.0 * area2)));
        }
      }
    }
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* 3x3 inverse (rows of the inverse of the edge matrix are the gradients of the barycentric coordinates) */
static PetscReal Inverse3(const PetscReal m[3][3], PetscReal inv[3][3])
{
  const PetscReal det = m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);

  for (PetscInt i = 0; i < 3; i++) {
    for (PetscInt j = 0; j < 3; j++) {
      const PetscInt i1 = (j + 1) % 3, i2 = (j + 2) % 3, j1 = (i + 1) % 3, j2 = (i + 2) % 3;

      inv[i][j] = (m[i1][j1] * m[i2][j2] - m[i1][j2] * m[i2][j1]) / det;
    }
  }
  return det;
}

/* elasticity3d: linear elasticity (E = 1, nu = 0.3) on the unit cube, n^3 cubes, each cut into the 6 tets of
   the Kuhn triangulation (all sharing the cube's (0,0,0)-(1,1,1) diagonal, conforming across cubes), linear
   tets, 3 dofs per node, the face x = 0 clamped (its nodes eliminated).  Nodes (gi, gj, gk) in [0, n]^3, unknown
   node (gi-1) + gj n + gk n (n+1), dof 3 node + c.  Element stiffness of dofs (a,c), (b,d):
   V (lambda g_a[c] g_b[d] + mu g_a[d] g_b[c] + mu delta_cd g_a . g_b), g = gradients of the hat functions. */
static PetscErrorCode RowElasticity3d(const Gen *g, PetscInt r, PetscInt *nc, PetscInt cols[], PetscScalar vals[])
{
  const PetscInt  n = g->n, node = r / 3, c = r % 3, gi = node % n + 1, gj = (node / n) % (n + 1), gk = node / (n * (n + 1));
  const PetscInt  perm[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  const PetscReal h          = 1.0 / (PetscReal)n;

  PetscFunctionBeginUser;
  *nc = 0;
  for (PetscInt ck = gk - 1; ck <= gk; ck++) {
    for (PetscInt cj = gj - 1; cj <= gj; cj++) {
      for (PetscInt ci = gi - 1; ci <= gi; ci++) {
        if (ci < 0 || ci >= n || cj < 0 || cj >= n || ck < 0 || ck >= n) continue;
        for (PetscInt t = 0; t < 6; t++) {
          PetscInt  v[4][3], a = -1;
          PetscReal edge[3][3], inv[3][3], grad[4][3], vol;

          v[0][0] = ci;
          v[0][1] = cj;
          v[0][2] = ck;
          for (PetscInt s = 1; s < 4; s++) {
            for (PetscInt d = 0; d < 3; d++) v[s][d] = v[s - 1][d];
            v[s][perm[t][s - 1]]++;
          }
          for (PetscInt s = 0; s < 4; s++)
            if (v[s][0] == gi && v[s][1] == gj && v[s][2] == gk) a = s;
          if (a < 0) continue;
          for (PetscInt s = 0; s < 3; s++)
            for (PetscInt d = 0; d < 3; d++) edge[d][s] = (v[s + 1][d] - v[0][d]) * h; /* columns: edges from vertex 0 */
          vol = PetscAbsReal(Inverse3(edge, inv)) / 6.0;
          for (PetscInt d = 0; d < 3; d++) {
            grad[0][d] = 0.0;
            for (PetscInt s = 1; s < 4; s++) {
              grad[s][d] = inv[s - 1][d];
              grad[0][d] -= inv[s - 1][d];
            }
          }
          for (PetscInt b = 0; b < 4; b++) {
            const PetscInt  bnode = (v[b][0] - 1) + v[b][1] * n + v[b][2] * n * (n + 1);
            const PetscReal dot   = grad[a][0] * grad[b][0] + grad[a][1] * grad[b][1] + grad[a][2] * grad[b][2];

            if (v[b][0] == 0) continue; /* clamped */
            for (PetscInt d = 0; d < 3; d++) PetscCall(RowAdd(nc, cols, vals, 3 * bnode + d, vol * (g->lambda * grad[a][c] * grad[b][d] + g->mu * grad[a][d] * grad[b][c] + (c == d ? g->mu * dot : 0.0))));
          }
        }
      }
    }
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode GenRow(const Gen *g, PetscInt r, PetscInt *nc, PetscInt cols[], PetscScalar vals[])
{
  PetscFunctionBeginUser;
  switch (g->type) {
  case PROBLEM_POISSON2D:
  case PROBLEM_SKEW:
  case PROBLEM_INDEFINITE:
    PetscCall(RowGrid2d(g, r, nc, cols, vals));
    break;
  case PROBLEM_LAPLACE3D:
  case PROBLEM_CONVDIFF3D:
    PetscCall(RowGrid3d(g, r, nc, cols, vals));
    break;
  case PROBLEM_ANISO3D:
  case PROBLEM_JUMP3D:
  case PROBLEM_DIRICHLET3D:
    PetscCall(RowDiffusion3d(g, r, nc, cols, vals));
    break;
  case PROBLEM_FEM2D:
    PetscCall(RowFem2d(g, r, nc, cols, vals));
    break;
  case PROBLEM_ELASTICITY3D:
    PetscCall(RowElasticity3d(g, r, nc, cols, vals));
    break;
  default:
    SETERRQ(PETSC_COMM_SELF, PETSC_ERR_PLIB, "Problem %s has no row function", ProblemTypes[g->type]);
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* local number of rows: PETSc's split, or with -uneven rank 0 gets half as many again as the others,
   or with -empty_rank the last rank owns no rows; in whole blocks of bs rows (-mat_block_size) */
static PetscBool empty_rank = PETSC_FALSE;

static PetscErrorCode LocalRows(MPI_Comm comm, PetscInt N, PetscInt bs, PetscBool uneven, PetscInt *m)
{
  PetscMPIInt size, rank;
  PetscInt    Nb;

  PetscFunctionBeginUser;
  PetscCheck(N % bs == 0, comm, PETSC_ERR_ARG_SIZ, "The block size %" PetscInt_FMT " (-mat_block_size) does not divide the %" PetscInt_FMT " rows", bs, N);
  Nb = N / bs;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  *m = PETSC_DECIDE;
  if (uneven && size > 1) {
    const PetscInt m0 = PetscMin(Nb, Nb / size + Nb / (2 * size)), rest = Nb - m0;

    *m = rank == 0 ? m0 : rest / (size - 1) + ((rank - 1) < rest % (size - 1) ? 1 : 0);
  } else if (empty_rank && size > 1) {
    *m = rank == size - 1 ? 0 : Nb / (size - 1) + (rank < Nb % (size - 1) ? 1 : 0);
  }
  PetscCall(PetscSplitOwnership(comm, m, &Nb));
  *m *= bs;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The block size of A (-mat_block_size; 1 when unset) */
static PetscErrorCode BlockSize(Mat A, PetscInt *bs)
{
  PetscFunctionBeginUser;
  PetscCall(MatGetBlockSize(A, bs));
  if (*bs < 1) *bs = 1;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* preallocates from the rows' counts (with a block size bs > 1, per block row: the most of its rows, in blocks, as
   MatXAIJSetPreallocation() takes them), then inserts the rows */
static PetscErrorCode AssembleRows(const Gen *g, Mat A)
{
  PetscInt    rstart, rend, cstart, cend, *dnnz, *onnz, nc, cols[MAX_ROW], bs;
  PetscScalar vals[MAX_ROW];

  PetscFunctionBeginUser;
  PetscCall(BlockSize(A, &bs));
  PetscCall(MatGetOwnershipRange(A, &rstart, &rend));
  PetscCall(MatGetOwnershipRangeColumn(A, &cstart, &cend));
  PetscCall(PetscCalloc2(rend - rstart, &dnnz, rend - rstart, &onnz));
  for (PetscInt r = rstart; r < rend; r++) {
    PetscCall(GenRow(g, r, &nc, cols, vals));
    for (PetscInt k = 0; k < nc; k++) {
      if (cols[k] >= cstart && cols[k] < cend)
        dnnz[r - rstart]++;
      else
        onnz[r - rstart]++;
    }
  }
  for (PetscInt r = 0; bs > 1 && r < rend - rstart; r++) { /* block row r / bs: the most of its rows' counts, in blocks */
    dnnz[r / bs] = PetscMax(r % bs ? dnnz[r / bs] : 0, (dnnz[r] + bs - 1) / bs);
    onnz[r / bs] = PetscMax(r % bs ? onnz[r / bs] : 0, (onnz[r] + bs - 1) / bs);
  }
  PetscCall(MatXAIJSetPreallocation(A, bs, dnnz, onnz, NULL, NULL));
  PetscCall(PetscFree2(dnnz, onnz));
  PetscCall(MatSetOption(A, MAT_NO_OFF_PROC_ENTRIES, PETSC_TRUE));
  for (PetscInt r = rstart; r < rend; r++) {
    PetscCall(GenRow(g, r, &nc, cols, vals));
    PetscCall(MatSetValues(A, 1, &r, nc, cols, vals, INSERT_VALUES));
  }
  PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* randdd: each row i links to 3 hashed columns j; the link puts v at (i,j) and at (j,i) (w, independent of v,
   with -nonsym) and adds |v| to a_ii and |w| to a_jj, so a_ii = margin + sum_j |a_ij| (symmetric: SPD) */
static PetscErrorCode FillRanddd(const Gen *g, Mat M)
{
  PetscInt rstart, rend;

  PetscFunctionBeginUser;
  PetscCall(MatGetOwnershipRange(M, &rstart, &rend));
  for (PetscInt i = rstart; i < rend; i++) {
    PetscCall(MatSetValue(M, i, i, g->margin, ADD_VALUES));
    for (PetscInt k = 0; k < 3; k++) {
      const PetscInt  j = (PetscInt)(HashUniform(g->seed, i, 5 * k) * g->N);
      const PetscReal v = (HashUniform(g->seed, i, 5 * k + 1) < 0.5 ? -1.0 : 1.0) * (0.1 + 0.9 * HashUniform(g->seed, i, 5 * k + 2));
      const PetscReal w = g->nonsym ? (HashUniform(g->seed, i, 5 * k + 3) < 0.5 ? -1.0 : 1.0) * (0.1 + 0.9 * HashUniform(g->seed, i, 5 * k + 4)) : v;

      if (j == i) continue;
      PetscCall(MatSetValue(M, i, j, v, ADD_VALUES));
      PetscCall(MatSetValue(M, j, i, w, ADD_VALUES));
      PetscCall(MatSetValue(M, i, i, PetscAbsReal(v), ADD_VALUES));
      PetscCall(MatSetValue(M, j, j, PetscAbsReal(w), ADD_VALUES));
    }
  }
  PetscCall(MatAssemblyBegin(M, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(M, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* MatrixMarket coordinate file, read on rank 0 */
typedef struct {
  PetscInt     N, nz;
  PetscInt    *i, *j;
  PetscScalar *v;
  PetscBool    symmetric, skew;
} MMData;

static PetscErrorCode MMRead(MPI_Comm comm, const char fname[], MMData *mm)
{
  PetscMPIInt rank;
  PetscInt    N = -1;

  PetscFunctionBeginUser;
  PetscCall(PetscMemzero(mm, sizeof(*mm)));
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  if (rank == 0) {
    FILE *fp;
    char  line[1024], banner[64], object[64], format[64], field[64], symmetry[64];
    long  M, Ncol, nz;

    PetscCall(PetscFOpen(PETSC_COMM_SELF, fname, "r", &fp));
    PetscCheck(fgets(line, sizeof(line), fp), PETSC_COMM_SELF, PETSC_ERR_FILE_READ, "%s: empty file", fname);
    for (char *s = line; *s; s++) *s = (char)tolower((unsigned char)*s);
    PetscCheck(sscanf(line, "%63s %63s %63s %63s %63s", banner, object, format, field, symmetry) == 5, PETSC_COMM_SELF, PETSC_ERR_FILE_UNEXPECTED, "%s: not a MatrixMarket file (bad banner line)", fname);
    PetscCheck(!strcmp(banner, "%%matrixmarket") && !strcmp(object, "matrix") && !strcmp(format, "coordinate"), PETSC_COMM_SELF, PETSC_ERR_SUP, "%s: only MatrixMarket 'matrix coordinate' files are supported", fname);
    PetscCheck(!strcmp(field, "real") || !strcmp(field, "integer") || !strcmp(field, "pattern"), PETSC_COMM_SELF, PETSC_ERR_SUP, "%s: field '%s' not supported (real, integer, pattern)", fname, field);
    PetscCheck(!strcmp(symmetry, "general") || !strcmp(symmetry, "symmetric") || !strcmp(symmetry, "skew-symmetric"), PETSC_COMM_SELF, PETSC_ERR_SUP, "%s: symmetry '%s' not supported (general, symmetric, skew-symmetric)", fname, symmetry);
    mm->symmetric = (PetscBool)!strcmp(symmetry, "symmetric");
    mm->skew      = (PetscBool)!strcmp(symmetry, "skew-symmetric");
    do PetscCheck(fgets(line, sizeof(line), fp), PETSC_COMM_SELF, PETSC_ERR_FILE_UNEXPECTED, "%s: no size line", fname);
    while (line[0] == '%');
    PetscCheck(sscanf(line, "%ld %ld %ld", &M, &Ncol, &nz) == 3, PETSC_COMM_SELF, PETSC_ERR_FILE_UNEXPECTED, "%s: bad size line '%s'", fname, line);
    PetscCheck(M == Ncol, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "%s: the matrix is not square (%ld x %ld); the solvers need a square matrix", fname, M, Ncol);
    mm->N  = (PetscInt)M;
    mm->nz = (PetscInt)nz;
    PetscCall(PetscMalloc3(nz, &mm->i, nz, &mm->j, nz, &mm->v));
    for (PetscInt k = 0; k < mm->nz; k++) {
      long   ii, jj;
      double val = 1.0;
      int    nread;

      PetscCheck(fgets(line, sizeof(line), fp), PETSC_COMM_SELF, PETSC_ERR_FILE_UNEXPECTED, "%s: %" PetscInt_FMT " of %ld entries read", fname, k, nz);
      nread = sscanf(line, "%ld %ld %lg", &ii, &jj, &val);
      PetscCheck(nread == 3 || (nread == 2 && !strcmp(field, "pattern")), PETSC_COMM_SELF, PETSC_ERR_FILE_UNEXPECTED, "%s: bad entry line '%s'", fname, line);
      PetscCheck(ii >= 1 && ii <= M && jj >= 1 && jj <= M, PETSC_COMM_SELF, PETSC_ERR_FILE_UNEXPECTED, "%s: entry (%ld, %ld) outside the %ld x %ld matrix", fname, ii, jj, M, M);
      mm->i[k] = (PetscInt)ii - 1;
      mm->j[k] = (PetscInt)jj - 1;
      mm->v[k] = (PetscScalar)val;
    }
    PetscCall(PetscFClose(PETSC_COMM_SELF, fp));
    N = mm->N;
  }
  PetscCallMPI(MPI_Bcast(&N, 1, MPIU_INT, 0, comm));
  mm->N = N;
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode FillMM(const MMData *mm, Mat M)
{
  PetscFunctionBeginUser;
  for (PetscInt k = 0; k < mm->nz; k++) {
    PetscCall(MatSetValue(M, mm->i[k], mm->j[k], mm->v[k], ADD_VALUES));
    if ((mm->symmetric || mm->skew) && mm->i[k] != mm->j[k]) PetscCall(MatSetValue(M, mm->j[k], mm->i[k], mm->skew ? -mm->v[k] : mm->v[k], ADD_VALUES));
  }
  PetscCall(MatAssemblyBegin(M, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(M, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* preallocates A from the pattern that fill() inserts into a MATPREALLOCATOR, then fills A */
static PetscErrorCode AssemblePreallocated(Mat A, PetscErrorCode (*fill)(const void *, Mat), const void *ctx)
{
  Mat      P;
  PetscInt m, n, M, N;

  PetscFunctionBeginUser;
  PetscCall(MatGetLocalSize(A, &m, &n));
  PetscCall(MatGetSize(A, &M, &N));
  PetscCall(MatCreate(PetscObjectComm((PetscObject)A), &P));
  PetscCall(MatSetType(P, MATPREALLOCATOR));
  PetscCall(MatSetSizes(P, m, n, M, N));
  PetscCall(MatSetUp(P));
  PetscCall(fill(ctx, P));
  PetscCall(MatPreallocatorPreallocate(P, PETSC_FALSE, A));
  PetscCall(MatDestroy(&P));
  PetscCall(fill(ctx, A));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode FillRandddFn(const void *ctx, Mat M)
{
  return FillRanddd((const Gen *)ctx, M);
}

static PetscErrorCode FillMMFn(const void *ctx, Mat M)
{
  return FillMM((const MMData *)ctx, M);
}

static PetscErrorCode CreateFromFile(MPI_Comm comm, const char fname[], PetscBool uneven, Mat A, PetscBool *symmetric)
{
  PetscInt  m, bs;
  PetscBool mtx;
  PetscReal anorm;

  PetscFunctionBeginUser;
  PetscCall(PetscStrendswith(fname, ".mtx", &mtx));
  if (mtx) {
    MMData mm;

    PetscCall(MMRead(comm, fname, &mm));
    PetscCall(BlockSize(A, &bs));
    PetscCall(LocalRows(comm, mm.N, bs, uneven, &m));
    PetscCall(MatSetSizes(A, m, m, mm.N, mm.N));
    PetscCall(AssemblePreallocated(A, FillMMFn, &mm));
    PetscCall(PetscFree3(mm.i, mm.j, mm.v));
  } else {
    PetscViewer viewer;
    PetscInt    M, N;

    PetscCall(PetscViewerBinaryOpen(comm, fname, FILE_MODE_READ, &viewer));
    if (uneven) { /* the local sizes must be set before MatLoad(): read the global size from the header */
      PetscInt header[4];

      PetscCall(PetscViewerBinaryRead(viewer, header, 4, NULL, PETSC_INT));
      PetscCheck(header[0] == MAT_FILE_CLASSID, comm, PETSC_ERR_FILE_UNEXPECTED, "%s: not a PETSc binary matrix file", fname);
      PetscCall(PetscViewerDestroy(&viewer));
      PetscCall(PetscViewerBinaryOpen(comm, fname, FILE_MODE_READ, &viewer));
      PetscCall(BlockSize(A, &bs));
      PetscCall(LocalRows(comm, header[1], bs, uneven, &m));
      PetscCall(MatSetSizes(A, m, m, header[1], header[2]));
    }
    PetscCall(MatLoad(A, viewer));
    PetscCall(PetscViewerDestroy(&viewer));
    PetscCall(MatGetSize(A, &M, &N));
    PetscCheck(M == N, comm, PETSC_ERR_ARG_SIZ, "%s: the matrix is not square (%" PetscInt_FMT " x %" PetscInt_FMT "); the solvers need a square matrix", fname, M, N);
  }
  PetscCall(MatNorm(A, NORM_INFINITY, &anorm)); /* symmetric up to rounding in the file's values */
  PetscCall(MatIsSymmetric(A, 1e-12 * anorm, symmetric));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* elasticity3d with block size 3 (-mat_block_size 3: ranks own whole nodes): the six rigid body modes from the node
   coordinates as the matrix's near-null space (MatSetNearNullSpace(), what PCGAMG builds its coarse spaces from) */
static PetscErrorCode RigidBodyModes(const Gen *g, Mat A)
{
  const PetscInt  n = g->n;
  const PetscReal h = 1.0 / (PetscReal)n;
  PetscInt        bs, rstart, rend;
  Vec             coords;
  PetscScalar    *c;
  MatNullSpace    nsp;

  PetscFunctionBeginUser;
  PetscCall(BlockSize(A, &bs));
  if (bs != 3) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(MatGetOwnershipRange(A, &rstart, &rend));
  PetscCall(VecCreate(PetscObjectComm((PetscObject)A), &coords));
  PetscCall(VecSetSizes(coords, rend - rstart, PETSC_DECIDE));
  PetscCall(VecSetBlockSize(coords, 3));
  PetscCall(VecSetType(coords, VECSTANDARD));
  PetscCall(VecGetArrayWrite(coords, &c));
  for (PetscInt r = rstart; r < rend; r += 3) {
    const PetscInt node = r / 3, gi = node % n + 1, gj = (node / n) % (n + 1), gk = node / (n * (n + 1));

    c[r - rstart]     = gi * h;
    c[r - rstart + 1] = gj * h;
    c[r - rstart + 2] = gk * h;
  }
  PetscCall(VecRestoreArrayWrite(coords, &c));
  PetscCall(MatNullSpaceCreateRigidBody(coords, &nsp));
  PetscCall(MatSetNearNullSpace(A, nsp));
  PetscCall(MatNullSpaceDestroy(&nsp));
  PetscCall(VecDestroy(&coords));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode ProblemCreate(MPI_Comm comm, const char prefix[], Problem *p)
{
  Gen       g;
  RhsType   rhs                       = RHS_ONES;
  PetscBool uneven                    = PETSC_FALSE;
  char      fname[PETSC_MAX_PATH_LEN] = "";
  PetscInt  m;
  PetscReal scale = 1.0;

  PetscFunctionBeginUser;
  PetscCall(PetscMemzero(p, sizeof(*p)));
  PetscCall(PetscMemzero(&g, sizeof(g)));
  g.type     = PROBLEM_POISSON2D;
  g.pe       = 10.0;
  g.shear    = 0.5;
  g.shift    = 4.5;
  g.margin   = 0.1;
  g.seed     = 0;
  g.eps      = 1e-2;
  g.contrast = 1e4;
  PetscOptionsBegin(comm, prefix, "Test problem (tutorials/problems.h)", "Problem");
  PetscCall(PetscOptionsEnum("-problem", "The problem", "ProblemCreate", ProblemTypes, (PetscEnum)g.type, (PetscEnum *)&g.type, NULL));
  g.n = DefaultN[g.type];
  PetscCall(PetscOptionsInt("-n", "Points per direction (elasticity3d: cubes per direction; randdd: rows)", "ProblemCreate", g.n, &g.n, NULL));
  PetscCall(PetscOptionsString("-f", "Matrix file (problem file): MatrixMarket if the name ends in .mtx, else PETSc binary", "ProblemCreate", fname, fname, sizeof(fname), NULL));
  PetscCall(PetscOptionsEnum("-rhs", "Right-hand side: ones, random, or A times a random exact solution", "ProblemCreate", RhsTypes, (PetscEnum)rhs, (PetscEnum *)&rhs, NULL));
  PetscCall(PetscOptionsReal("-pe", "convdiff3d: velocity (1, 0.5, 0.25) times pe", "ProblemCreate", g.pe, &g.pe, NULL));
  PetscCall(PetscOptionsReal("-shear", "fem2d: mesh shear (node (i,j) at ((i + shear j) h, j h))", "ProblemCreate", g.shear, &g.shear, NULL));
  PetscCall(PetscOptionsReal("-shift", "indefinite: 5-point Laplacian minus shift times the identity", "ProblemCreate", g.shift, &g.shift, NULL));
  PetscCall(PetscOptionsReal("-margin", "randdd: diagonal minus the sum of |off-diagonal| entries", "ProblemCreate", g.margin, &g.margin, NULL));
  PetscCall(PetscOptionsBool("-nonsym", "randdd: nonsymmetric variant", "ProblemCreate", g.nonsym, &g.nonsym, NULL));
  PetscCall(PetscOptionsReal("-eps", "aniso3d: diffusion coefficients (1, eps, eps^2)", "ProblemCreate", g.eps, &g.eps, NULL));
  PetscCall(PetscOptionsReal("-contrast", "jump3d: coefficient of the high blocks (1 elsewhere)", "ProblemCreate", g.contrast, &g.contrast, NULL));
  PetscCall(PetscOptionsInt("-seed", "Seed of randdd and of the random right-hand sides", "ProblemCreate", g.seed, &g.seed, NULL));
  PetscCall(PetscOptionsBool("-uneven", "Give rank 0 half as many rows again as the other ranks", "ProblemCreate", uneven, &uneven, NULL));
  PetscCall(PetscOptionsBool("-empty_rank", "The last rank owns no rows", "ProblemCreate", empty_rank, &empty_rank, NULL));
  PetscCall(PetscOptionsReal("-scale", "The matrix is scaled by this (e.g. -1: a negative definite system from an SPD problem)", "ProblemCreate", scale, &scale, NULL));
  PetscOptionsEnd();
  PetscCheck(scale != 0.0, comm, PETSC_ERR_ARG_OUTOFRANGE, "-scale must not be 0");
  PetscCheck(g.type == PROBLEM_FILE || g.n > 0, comm, PETSC_ERR_ARG_OUTOFRANGE, "-n must be positive, got %" PetscInt_FMT, g.n);
  PetscCheck(g.type != PROBLEM_FILE || fname[0], comm, PETSC_ERR_USER_INPUT, "Problem file needs -%sf <file>", prefix ? prefix : "");
  PetscCheck(g.margin > 0.0, comm, PETSC_ERR_ARG_OUTOFRANGE, "-margin must be positive, got %g", (double)g.margin);
  PetscCheck(g.eps > 0.0 && g.contrast > 0.0, comm, PETSC_ERR_ARG_OUTOFRANGE, "-eps and -contrast must be positive, got %g and %g", (double)g.eps, (double)g.contrast);
  g.lambda = 0.3 / ((1.0 + 0.3) * (1.0 - 2.0 * 0.3));
  g.mu     = 1.0 / (2.0 * (1.0 + 0.3));
  switch (g.type) {
  case PROBLEM_LAPLACE3D:
  case PROBLEM_CONVDIFF3D:
  case PROBLEM_ANISO3D:
  case PROBLEM_JUMP3D:
  case PROBLEM_DIRICHLET3D:
    g.N = g.n * g.n * g.n;
    break;
  case PROBLEM_ELASTICITY3D:
    g.N = 3 * g.n * (g.n + 1) * (g.n + 1);
    break;
  case PROBLEM_RANDDD:
    g.N = g.n;
    break;
  default:
    g.N = g.n * g.n;
  }

  PetscCall(MatCreate(comm, &p->A));
  if (prefix) PetscCall(MatSetOptionsPrefix(p->A, prefix));
  PetscCall(MatSetFromOptions(p->A));
  if (g.type == PROBLEM_FILE) {
    const char *base;

    PetscCall(CreateFromFile(comm, fname, uneven, p->A, &p->symmetric));
    base = strrchr(fname, '/');
    PetscCall(PetscSNPrintf(p->name, sizeof(p->name), "file %s", base ? base + 1 : fname));
  } else {
    PetscInt bs;

    PetscCall(BlockSize(p->A, &bs));
    PetscCall(LocalRows(comm, g.N, bs, uneven, &m));
    PetscCall(MatSetSizes(p->A, m, m, g.N, g.N));
    if (g.type == PROBLEM_RANDDD)
      PetscCall(AssemblePreallocated(p->A, FillRandddFn, &g));
    else
      PetscCall(AssembleRows(&g, p->A));
    p->symmetric =
        (PetscBool)(g.type == PROBLEM_POISSON2D || g.type == PROBLEM_FEM2D || g.type == PROBLEM_LAPLACE3D || g.type == PROBLEM_ELASTICITY3D || g.type == PROBLEM_ANISO3D || g.type == PROBLEM_JUMP3D || (g.type == PROBLEM_RANDDD && !g.nonsym));
    PetscCall(PetscSNPrintf(p->name, sizeof(p->name), "%s n=%" PetscInt_FMT "%s", ProblemTypes[g.type], g.n, g.type == PROBLEM_RANDDD && g.nonsym ? " nonsym" : ""));
  }
  if (scale != 1.0) PetscCall(MatScale(p->A, scale));
  if (p->symmetric) PetscCall(MatSetOption(p->A, MAT_SYMMETRIC, PETSC_TRUE));
  if (g.type == PROBLEM_ELASTICITY3D) PetscCall(RigidBodyModes(&g, p->A));

  PetscCall(MatCreateVecs(p->A, NULL, &p->b)); /* the matrix's vector type, or -vec_type if given */
  if (prefix) PetscCall(VecSetOptionsPrefix(p->b, prefix));
  PetscCall(VecSetFromOptions(p->b));
  if (rhs == RHS_ONES)
    PetscCall(VecSet(p->b, 1.0));
  else {
    Vec          v = p->b;
    PetscScalar *a;
    PetscInt     rstart, rend;

    if (rhs == RHS_SOLUTION) {
      PetscCall(VecDuplicate(p->b, &p->xexact));
      v = p->xexact;
    }
    PetscCall(VecGetOwnershipRange(v, &rstart, &rend));
    PetscCall(VecGetArrayWrite(v, &a));
    for (PetscInt i = rstart; i < rend; i++) a[i - rstart] = 2.0 * HashUniform(g.seed + 1, i, -1) - 1.0;
    PetscCall(VecRestoreArrayWrite(v, &a));
    if (rhs == RHS_SOLUTION) PetscCall(MatMult(p->A, p->xexact, p->b));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode ProblemDestroy(Problem *p)
{
  PetscFunctionBeginUser;
  PetscCall(MatDestroy(&p->A));
  PetscCall(VecDestroy(&p->b));
  PetscCall(VecDestroy(&p->xexact));
  PetscFunctionReturn(PETSC_SUCCESS);
}
