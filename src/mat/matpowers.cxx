/*
   The matrix powers kernel of MATMPIAIJFUSED (Hoemmen 2010, "PA1"; the s products of a block of CA-GMRES, seed 001):
   Y[i+1] = A (w .* Y[i]) - c0 Y[i] - c1 Y[i-1] for i < s with ONE halo exchange instead of s.

   Ghost region.  Level 1 is the halo of A's own product (the columns of the off-diagonal block, MATMPIAIJ's garray,
   in that order); level d+1 holds the entries other ranks own that the rows of level d reach and no lower level
   holds (each level sorted by global index).  The slots of the ghost buffers are the levels in order, so the first
   n1 slots are A's halo slots and the off-diagonal block reads a ghost buffer as it reads the halo.  The rows of
   levels 1..s-1 (fetched from their owners with MatCreateSubMatrices() at setup) are split into the columns this
   rank owns (A_gl, a CSR mirror) and the ghost columns (A_gg, the rows with entries): every column of a row of
   level d is of level d+1 at most.

   One application.  H_0 = (w .* Y[0]) on the ghost slots (the one exchange, depth s), then for i < sb:
     local rows   Y[i+1] = Ad (w .* Y[i]) + Ao H_i[0:n1]                        (A's own product, halo = H_i)
     ghost rows   H_{i+1} = w_g .* (A_gl (w .* Y[i]) + A_gg H_i)                 (while i + 1 < sb)
     shifts       Y[i+1] -= c0 Y[i] + c1 Y[i-1];  H_{i+1} -= c0 H_i + c1 H_{i-1}
   H_i holds w .* Y[i] at the ghosts (as A's halo holds the weighted input) and the recurrence is linear, so the
   shifts apply to H as to Y.  The entries of level d of H_i are exact for d <= s - i: the rows of H_{i+1} of level
   s - i read H_i at level s - i + 1 and are not, but only rows that are not exact either read them, and the local
   rows of Y[i+1] read level 1 of H_i, exact for i < s.  Entries of level s of H_{i+1} are never computed (zero).
   The ghost rows add nrows / nlocal of a product (a 2D 5-point stencil with n rows per rank: about 4 s sqrt(n)).
   A ghost row sums in another order than its owner's, so Y agrees with s exchanged products to rounding.
*/
#include "mat/matpowers.hpp"
#include "mat/aijfused.hpp"
#include "mat/aijfused_private.hpp"
#include <petsc/private/matimpl.h>
#include <algorithm>
#include <unordered_map>

namespace fusedksp
{
struct MatPowers {
  Mat                      A  = nullptr; /* a reference */
  const Backend           *be = nullptr;
  PetscInt                 s = 0, nlocal = 0, nghost = 0, nrows = 0;
  PetscObjectState         state = -1, nonzerostate = -1; /* of A, when the ghost rows were fetched */
  Halo                     halo;                          /* depth s: H_0 lands in halo.halo */
  std::vector<PetscInt>    gl_i, gl_j, gg_i, gg_j;        /* the ghost rows' CSR on the host (in place on a backend in host memory) */
  std::vector<PetscScalar> gl_a, gg_a;
  Mirror                   rows_local;          /* A_gl: ghost rows x local columns          */
  OffDiagRows              rows_ghost;          /* A_gg: ghost rows x ghost slots            */
  PetscScalar             *H         = nullptr; /* backend: H_1 .. H_s, nghost entries each  */
  PetscScalar             *wghost    = nullptr; /* backend: the weights at the ghosts, or NULL */
  PetscInt64               exchanges = 0;
};

namespace
{
PetscErrorCode FreeContents(MatPowers *mp)
{
  const Backend *be = mp->be;

  PetscFunctionBegin;
  if (!be) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(HaloFree(be, &mp->halo));
  PetscCall(MirrorFree(be, &mp->rows_local));
  PetscCall(OffDiagRowsFree(be, &mp->rows_ghost));
  PetscCall(be->free_bytes(mp->H));
  PetscCall(be->free_bytes(mp->wghost));
  mp->H = mp->wghost = nullptr;
  mp->gl_i.clear();
  mp->gl_j.clear();
  mp->gl_a.clear();
  mp->gg_i.clear();
  mp->gg_j.clear();
  mp->gg_a.clear();
  mp->nghost = mp->nrows = 0;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The levels of the ghost region and the rows of levels 1..s-1 (global columns), from their owners.  Collective. */
PetscErrorCode GhostLevels(Mat A, PetscInt s, std::vector<PetscInt> &ghosts, std::unordered_map<PetscInt, PetscInt> &slot, std::vector<PetscInt> &ri, std::vector<PetscInt> &rj, std::vector<PetscScalar> &ra, PetscInt *nrows)
{
  const PetscInt *garray;
  const PetscInt  rstart = A->cmap->rstart, rend = A->cmap->rend;
  Mat             Ao;
  PetscInt        n1, begin = 0;
  IS              iscol;

  PetscFunctionBegin;
  PetscCall(MatMPIAIJGetSeqAIJ(A, nullptr, &Ao, &garray));
  PetscCall(MatGetLocalSize(Ao, nullptr, &n1));
  FusedKSPCallCXX(ghosts.assign(garray, garray + n1); ri.assign(1, 0); for (PetscInt k = 0; k < n1; ++k) slot[garray[k]] = k);
  PetscCall(ISCreateStride(PETSC_COMM_SELF, A->cmap->N, 0, 1, &iscol)); /* every column: MATMPIAIJ's path without a column map */
  for (PetscInt d = 1; d < s; ++d) {
    const PetscInt        end = (PetscInt)ghosts.size();
    std::vector<PetscInt> next;
    IS                    isrow;
    Mat                  *sub;

    PetscCall(ISCreateGeneral(PETSC_COMM_SELF, end - begin, ghosts.data() + begin, PETSC_USE_POINTER, &isrow));
    PetscCall(MatCreateSubMatrices(A, 1, &isrow, &iscol, MAT_INITIAL_MATRIX, &sub));
    for (PetscInt r = 0; r < end - begin; ++r) {
      const PetscInt    *cols;
      const PetscScalar *vals;
      PetscInt           nc;

      PetscCall(MatGetRow(sub[0], r, &nc, &cols, &vals));
      for (PetscInt k = 0; k < nc; ++k) {
        const PetscInt c = cols[k];

        FusedKSPCallCXX(rj.push_back(c); ra.push_back(vals[k]); if ((c < rstart || c >= rend) && slot.find(c) == slot.end()) {
          slot[c] = -1;
          next.push_back(c);
        });
      }
      PetscCall(MatRestoreRow(sub[0], r, &nc, &cols, &vals));
      FusedKSPCallCXX(ri.push_back((PetscInt)rj.size()));
    }
    PetscCall(MatDestroySubMatrices(1, &sub));
    PetscCall(ISDestroy(&isrow));
    FusedKSPCallCXX(std::sort(next.begin(), next.end()); for (PetscInt c
                                                              : next) {
      slot[c] = (PetscInt)ghosts.size();
      ghosts.push_back(c);
    });
    begin = end;
  }
  PetscCall(ISDestroy(&iscol));
  *nrows = begin; /* the rows of levels 1..s-1 */
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The ghost region of A, its exchange and its rows on the backend.  Collective. */
PetscErrorCode Build(MatPowers *mp)
{
  Mat                                    A = mp->A;
  const Backend                         *be;
  const Mirror                          *diag;
  const OffDiagRows                     *offdiag;
  PetscBool                              direct;
  std::vector<PetscInt>                  ghosts, ri, rj;
  std::vector<PetscScalar>               ra;
  std::unordered_map<PetscInt, PetscInt> slot;
  const PetscInt                         rstart = A->cmap->rstart, rend = A->cmap->rend;
  PetscSF                                sf;

  PetscFunctionBegin;
  PetscCall(MatMPIAIJFusedGetLocalProduct(A, &be, &diag, &offdiag, &direct));
  mp->be     = be;
  mp->nlocal = A->rmap->n;
  PetscCall(GhostLevels(A, mp->s, ghosts, slot, ri, rj, ra, &mp->nrows));
  mp->nghost = (PetscInt)ghosts.size();
  FusedKSPCallCXX(mp->gl_i.assign(1, 0); mp->gg_i.assign(1, 0));
  for (PetscInt r = 0; r < mp->nrows; ++r) {
    for (PetscInt k = ri[r]; k < ri[r + 1]; ++k) {
      const PetscInt c = rj[k];

      if (c >= rstart && c < rend) {
        FusedKSPCallCXX(mp->gl_j.push_back(c - rstart); mp->gl_a.push_back(ra[k]));
      } else {
        auto it = slot.find(c);

        PetscCheck(it != slot.end() && it->second >= 0, PETSC_COMM_SELF, PETSC_ERR_PLIB, "Column %" PetscInt_FMT " of a ghost row is outside the ghost region", c);
        FusedKSPCallCXX(mp->gg_j.push_back(it->second); mp->gg_a.push_back(ra[k]));
      }
    }
    FusedKSPCallCXX(mp->gl_i.push_back((PetscInt)mp->gl_j.size()); mp->gg_i.push_back((PetscInt)mp->gg_j.size()));
  }
  if (mp->nrows) {
    PetscCall(MirrorBuild(be, MAT_AIJFUSED_CSR, mp->nrows, mp->nlocal, mp->gl_i.data(), mp->gl_j.data(), be->host_memory, &mp->rows_local));
    PetscCall(MirrorSetValues(be, mp->gl_a.data(), be->host_memory, &mp->rows_local));
    PetscCall(OffDiagRowsMirror(be, mp->nrows, mp->nghost, mp->gg_i.data(), mp->gg_j.data(), mp->gg_a.data(), PETSC_TRUE, &mp->rows_ghost));
  }
  PetscCall(PetscSFCreate(PetscObjectComm((PetscObject)A), &sf));
  PetscCall(PetscSFSetGraphLayout(sf, A->cmap, mp->nghost, nullptr, PETSC_COPY_VALUES, ghosts.data()));
  PetscCall(HaloBuild((PetscObject)A, be, direct, sf, mp->nghost, &mp->halo));
  PetscCall(PetscSFDestroy(&sf));
  PetscCall(be->malloc_bytes(sizeof(PetscScalar) * PetscMax(mp->s * mp->nghost, 1), (void **)&mp->H));
  PetscCall(MatFusedBlas(be)->set(mp->s * mp->nghost, 0.0, mp->H));
  PetscCall(PetscObjectStateGet((PetscObject)A, &mp->state));
  mp->nonzerostate = A->nonzerostate;
  PetscCall(PetscInfo(A, "Matrix powers of depth %" PetscInt_FMT ": %" PetscInt_FMT " ghost entries, %" PetscInt_FMT " ghost rows\n", mp->s, mp->nghost, mp->nrows));
  PetscFunctionReturn(PETSC_SUCCESS);
}
} // namespace

PetscErrorCode MatPowersCreate(Mat A, PetscInt s, MatPowers **mp)
{
  PetscBool fused;

  PetscFunctionBegin;
  PetscCall(MatIsMPIAIJFused(A, &fused));
  PetscCheck(fused, PetscObjectComm((PetscObject)A), PETSC_ERR_ARG_WRONG, "The matrix powers kernel needs a MATMPIAIJFUSED on the active backend, not %s", ((PetscObject)A)->type_name);
  PetscCheck(s >= 1, PetscObjectComm((PetscObject)A), PETSC_ERR_ARG_OUTOFRANGE, "The depth of the matrix powers kernel must be at least 1, not %" PetscInt_FMT, s);
  PetscCheck(A->rmap->n == A->cmap->n && A->rmap->rstart == A->cmap->rstart, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "The matrix powers kernel needs the same row and column layout");
  FusedKSPCallCXX(*mp = new MatPowers());
  (*mp)->s = s;
  PetscCall(PetscObjectReference((PetscObject)A));
  (*mp)->A = A;
  PetscCall(Build(*mp));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MatPowersDestroy(MatPowers **mp)
{
  PetscFunctionBegin;
  if (!*mp) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(FreeContents(*mp));
  PetscCall(MatDestroy(&(*mp)->A));
  delete *mp;
  *mp = nullptr;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MatPowersUpdate(MatPowers *mp, const PetscScalar *w)
{
  Mat              A = mp->A;
  PetscObjectState state;

  PetscFunctionBegin;
  /* as PCSetUp(), a change of A's states is taken to be seen by every rank (the operations that change them are
     collective), so the rebuild below is collective without a reduction to agree on it */
  PetscCall(PetscObjectStateGet((PetscObject)A, &state));
  if (state != mp->state || A->nonzerostate != mp->nonzerostate) {
    PetscCall(FreeContents(mp));
    PetscCall(Build(mp));
  }
  if (!w) {
    PetscCall(mp->be->free_bytes(mp->wghost));
    mp->wghost = nullptr;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  if (!mp->wghost) PetscCall(mp->be->malloc_bytes(sizeof(PetscScalar) * PetscMax(mp->nghost, 1), (void **)&mp->wghost));
  PetscCall(HaloBegin(mp->be, &mp->halo, nullptr, w));
  PetscCall(HaloEnd(mp->be, &mp->halo));
  PetscCall(MatFusedBlas(mp->be)->copy(mp->nghost, mp->halo.halo, mp->wghost));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MatPowersApply(MatPowers *mp, const PetscScalar *w, PetscInt sb, const PetscScalar *c, PetscScalar *const *Y)
{
  const Backend     *be;
  const Mirror      *diag;
  const OffDiagRows *offdiag;
  PetscBool          direct;
  const PetscScalar *Hprev = nullptr, *Hcur;

  PetscFunctionBegin;
  PetscCheck(sb >= 1 && sb <= mp->s, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "%" PetscInt_FMT " products asked of a matrix powers kernel of depth %" PetscInt_FMT, sb, mp->s);
  PetscCheck(!w == !mp->wghost, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONGSTATE, "The weights of the matrix powers kernel are %s: call MatPowersUpdate() with them first", w ? "not at the ghosts" : "at the ghosts, but none given");
  PetscCall(MatMPIAIJFusedGetLocalProduct(mp->A, &be, &diag, &offdiag, &direct));
  PetscCall(HaloBegin(be, &mp->halo, w, Y[0]));
  PetscCall(HaloEnd(be, &mp->halo));
  mp->exchanges++;
  Hcur = mp->halo.halo;
  for (PetscInt i = 0; i < sb; ++i) {
    PetscScalar       *Hnext     = mp->H + i * mp->nghost;
    const PetscBool    ghosts    = (i + 1 < sb && mp->nrows > 0) ? PETSC_TRUE : PETSC_FALSE;
    const PetscScalar  coef[2]   = {c[2 * i], i > 0 ? c[2 * i + 1] : 0.0};
    const PetscInt     nv        = coef[1] != 0.0 ? 2 : coef[0] != 0.0 ? 1 : 0;
    const PetscScalar *Ylocal[2] = {Y[i], i > 0 ? Y[i - 1] : nullptr}, *Hghost[2] = {Hcur, Hprev};

    PetscCall(PetscLogEventBegin(events.spmv_dots, mp->A, 0, 0, 0));
    PetscCall(MirrorProduct(be, diag, nullptr, w, Y[i], Y[i + 1], 0, nullptr, nullptr));
    if (offdiag->csr.nrows) PetscCall(be->spmv_offdiag_dots(&offdiag->csr, offdiag->rows, nullptr, Hcur, Y[i], Y[i + 1], 0, nullptr, nullptr));
    if (ghosts) {
      PetscCall(MirrorProduct(be, &mp->rows_local, mp->wghost, w, Y[i], Hnext, 0, nullptr, nullptr));
      if (mp->rows_ghost.csr.nrows) PetscCall(be->spmv_offdiag_dots(&mp->rows_ghost.csr, mp->rows_ghost.rows, mp->wghost, Hcur, nullptr, Hnext, 0, nullptr, nullptr));
    }
    if (nv) {
      PetscCall(be->maxpy_scale(mp->nlocal, nv, coef, Ylocal, Y[i + 1], 1.0, nullptr, nullptr));
      if (ghosts) PetscCall(be->maxpy_scale(mp->nrows, nv, coef, Hghost, Hnext, 1.0, nullptr, nullptr));
    }
    PetscCall(PetscLogEventEnd(events.spmv_dots, mp->A, 0, 0, 0));
    PetscCall(PetscLogFlops(2.0 * (MirrorEntries(diag) + offdiag->nnz + (ghosts ? (PetscLogDouble)mp->gl_j.size() + mp->gg_j.size() : 0.0))));
    Hprev = Hcur;
    Hcur  = Hnext;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MatPowersGetInfo(MatPowers *mp, Mat *A, PetscInt *s, PetscInt *nghost, PetscInt *nghostrows, PetscInt64 *exchanges)
{
  PetscFunctionBegin;
  if (A) *A = mp->A;
  if (s) *s = mp->s;
  if (nghost) *nghost = mp->nghost;
  if (nghostrows) *nghostrows = mp->nrows;
  if (exchanges) *exchanges = mp->exchanges;
  PetscFunctionReturn(PETSC_SUCCESS);
}
} // namespace fusedksp
