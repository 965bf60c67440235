/* Chunks of iterations as the backend operations of their steps (shared by the backends) */
#include "backend/backend.hpp"
#include <vector>

namespace fusedksp
{

/* Records how a chunk ran (BackendCounters::chunk_form): the CUDA backend overrides it when it launches a persistent kernel */
static void NoteChunkForm(const Backend *be, const char *form, PetscInt64 blocks)
{
  be->counters->chunk_form   = form;
  be->counters->chunk_blocks = blocks;
}

/* The operator of a chunk: the local matrix (CSR or SELL-P) and, with several processes, its parallel part */
struct ChunkOperator {
  const CSRView       *csr;
  const SELLView      *sell;
  const ChunkParallel *par;
};

/* out = wl.*(A (wr.*in)) on the backend, its ndots dot products to slot (when ndots > 0: nothing at all
   once *stop >= 0).  With several processes the halo is packed and exchanged (always: every process
   queues the same exchanges) and the off-diagonal block adds its part and the change of the dot
   products to slot, which sums them as the k = 1 product does.  The sums over the processes are the
   caller's (GlobalSum()).                                                                          */
static PetscErrorCode Product(const Backend *be, const ChunkOperator &op, const PetscScalar *wl, const PetscScalar *wr, const PetscScalar *in, PetscScalar *out, int ndots, const DotSpec *specs, PetscScalar *slot, const PetscInt *stop)
{
  const ChunkParallel *par = op.par;

  PetscFunctionBegin;
  if (par) PetscCall(be->gather(par->plan.nsend, par->send_idx, wr, in, par->plan.send_buf));
  if (ndots) PetscCall(be->reduce_target(slot, stop));
  if (op.csr)
    PetscCall(be->spmv_dots(op.csr, wl, wr, in, out, ndots, specs, nullptr));
  else
    PetscCall(be->spmv_sell_dots(op.sell, wl, wr, in, out, ndots, specs, nullptr));
  if (par) {
    PetscCall(be->exchange(par->comm, &par->plan));
    if (par->recv_idx) PetscCall(be->scatter(par->plan.nrecv, par->recv_idx, par->plan.recv_buf, PETSC_FALSE, par->halo));
    if (par->offdiag->nrows) {
      if (ndots) PetscCall(be->reduce_target(slot, stop));
      PetscCall(be->spmv_offdiag_dots(par->offdiag, par->offdiag_rows, wl, par->halo, in, out, ndots, specs, nullptr));
    }
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Sums buf[0..n) (backend memory) over the processes of a parallel chunk; nothing with one process */
static PetscErrorCode GlobalSum(const Backend *be, const ChunkParallel *par, PetscScalar *buf, PetscInt n)
{
  PetscFunctionBegin;
  if (par) PetscCall(be->allreduce(par->comm, buf, n));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   CGChunkSteps - Backend::cg_chunk as 2k operations of `be`: for each chunk iteration j, the CG
   update with its coefficients from slot j-1 and the sparse product q = A p (with <p,q>, <q,z>, <q,u>; M is symmetric, so <r,u> = <q,z>), each writing its dot
   products to slot j and doing nothing once ctl->stopped >= 0; a chunk that starts the solve first
   sets x = p = q = 0 and r = b with `blas` and runs its iteration 0 the same way
*/
PetscErrorCode CGChunkSteps(const Backend *be, const BlasKernels *blas, const CGChunkArgs *a)
{
  const PetscInt      n        = a->csr ? a->csr->nrows : a->sell->nrows;
  const ChunkOperator op       = {a->csr, a->sell, a->par};
  const DotSpec       qz       = {a->w ? DotKind::DOT_VECTOR_W : DotKind::DOT_VECTOR, a->r, a->w};
  const DotSpec       specs[3] = {{DotKind::DOT_INPUT, nullptr}, qz, {a->w ? DotKind::DOT_SELF_W : DotKind::DOT_SELF, a->w}}; /* <p,q>, <q,z>, <q,u> */

  PetscFunctionBegin;
  NoteChunkForm(be, "steps", 0);
  if (a->b) {
    if (a->guess) {
      PetscCall(Product(be, op, nullptr, nullptr, a->x, a->r, 0, nullptr, nullptr, nullptr));
      PetscCall(blas->aypx(n, -1.0, a->b, a->r));
    } else {
      PetscCall(blas->set(n, 0, a->x));
      PetscCall(blas->copy(n, a->b, a->r));
    }
    if (a->bnorm != CHUNK_BNORM_NONE) { /* into ctl->bnormsq; ||M^{-1} b|| through q, which is reset below */
      const DotSpec spec = {a->bnorm == CHUNK_BNORM_BMB && a->w ? DotKind::DOT_SELF_W : DotKind::DOT_SELF, a->w};
      const bool    mb   = a->bnorm == CHUNK_BNORM_MB && a->w;
      if (mb) PetscCall(blas->pointwise_mult(n, a->w, a->b, a->q));
      PetscCall(be->reduce_target(&a->ctl->bnormsq, &a->ctl->stopped));
      PetscCall(be->dots(n, nullptr, mb ? a->q : a->b, 1, &spec, nullptr));
      PetscCall(GlobalSum(be, a->par, &a->ctl->bnormsq, 1));
    }
    PetscCall(blas->set(n, 0, a->p));
    PetscCall(blas->set(n, 0, a->q));
  }
  for (PetscInt j = a->b ? 0 : 1; j <= a->k; ++j) {
    PetscScalar *slot = a->slots + j * CG_NSLOT;

    PetscCall(be->reduce_target(slot + CG_RZ, &a->ctl->stopped));
    PetscCall(be->cg_update_chained(n, j ? slot - CG_NSLOT : nullptr, a->ctl, j, a->x, a->r, nullptr, a->p, a->q, nullptr, a->w));
    PetscCall(Product(be, op, nullptr, nullptr, a->p, a->q, 3, specs, slot + CG_PQ, &a->ctl->stopped));
    PetscCall(GlobalSum(be, a->par, slot, CG_QU + 1)); /* the update's and the product's: one sum per iteration */
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   BCGSChunkSteps - Backend::bcgs_chunk as 4k operations of `be`, those of fusedbcgs's chunk body:
   Ap = Op p, s = r - alpha Ap, As = Op s, the update, each writing its dot products to slot j and
   doing nothing once ctl->stopped >= 0; a chunk that starts the solve first sets x = 0, r = r* = p =
   wl.*b with `blas` and writes <r,r*>, <r,r> to slot 0.  With several processes three sums per
   iteration: <Ap,r*> (alpha), <s,s> with the dots of As (omega), those of the update (the next alpha).
*/
PetscErrorCode BCGSChunkSteps(const Backend *be, const BlasKernels *blas, const BCGSChunkArgs *a)
{
  const PetscInt      n     = a->csr ? a->csr->nrows : a->sell->nrows;
  const ChunkOperator op    = {a->csr, a->sell, a->par};
  const DotSpec       ap    = {DotKind::DOT_VECTOR, a->rstar};
  const DotSpec       as[3] = {{DotKind::DOT_INPUT, nullptr}, {DotKind::DOT_SELF, nullptr}, {DotKind::DOT_VECTOR, a->rstar}};
  const DotSpec       rr[2] = {{DotKind::DOT_VECTOR, a->rstar}, {DotKind::DOT_SELF, nullptr}};
  PetscInt           *stop  = &a->ctl->stopped;

  PetscFunctionBegin;
  NoteChunkForm(be, "steps", 0);
  if (a->b) {
    PetscCall(blas->set(n, 0, a->x));
    if (a->wl)
      PetscCall(blas->pointwise_mult(n, a->wl, a->b, a->r));
    else
      PetscCall(blas->copy(n, a->b, a->r));
    PetscCall(blas->copy(n, a->r, a->rstar));
    PetscCall(blas->copy(n, a->r, a->p));
    PetscCall(be->reduce_target(a->slots + BCGS_RRSTAR, stop));
    PetscCall(be->dots(n, nullptr, a->r, 2, rr, nullptr));
    PetscCall(GlobalSum(be, a->par, a->slots + BCGS_RRSTAR, 2));
  }
  for (PetscInt j = 1; j <= a->k; ++j) {
    PetscScalar *prev = a->slots + (j - 1) * BCGS_NSLOT, *cur = prev + BCGS_NSLOT;

    PetscCall(Product(be, op, a->wl, a->wr, a->p, a->Ap, 1, &ap, cur + BCGS_APR, stop));
    PetscCall(GlobalSum(be, a->par, cur + BCGS_APR, 1));
    PetscCall(be->reduce_target(cur + BCGS_SS, stop));
    PetscCall(be->waxpy_dot_chained(n, prev, cur, a->ctl, j, a->r, a->Ap, a->s));
    PetscCall(Product(be, op, a->wl, a->wr, a->s, a->As, 3, as, cur + BCGS_ASS, stop));
    PetscCall(GlobalSum(be, a->par, cur + BCGS_SS, BCGS_ASR + 1 - BCGS_SS));
    PetscCall(be->reduce_target(cur + BCGS_RRSTAR, stop));
    PetscCall(be->bcgs_update_chained(n, prev, cur, a->ctl, j, a->wr, a->x, a->r, a->p, a->s, a->Ap, a->As, a->rstar));
    PetscCall(GlobalSum(be, a->par, cur + BCGS_RRSTAR, 2));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   SGMRESChunkSteps - Backend::sgmres_chunk as 3k operations of `be`, those of fusedsgmres's chunk
   body: V[i] = Op Z[i], the multi-dot of step i to slot j, the update of step i with <Z[i+1],Z[i+1]>
   to slot j + m + 1; the multi-dot and the update do nothing once ctl->stopped >= 0.  With several
   processes each step sums the multi-dot and <Z[i+1],Z[i+1]>.
*/
PetscErrorCode SGMRESChunkSteps(const Backend *be, const SGMRESChunkArgs *a)
{
  const PetscInt             n  = a->csr ? a->csr->nrows : a->sell->nrows;
  const PetscInt             nd = SGMRESChunkSlot(a->m);
  const ChunkOperator        op = {a->csr, a->sell, a->par};
  std::vector<PetscScalar *> vz;

  PetscFunctionBegin;
  NoteChunkForm(be, "steps", 0);
  PetscCheck(a->i0 >= 0 && a->k >= 0 && a->i0 + a->k <= a->m, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Steps %" PetscInt_FMT "..%" PetscInt_FMT " outside the restart cycle of %" PetscInt_FMT, a->i0 + 1, a->i0 + a->k, a->m);
  FusedKSPCallCXX(vz.resize((size_t)a->i0 + a->k));
  for (PetscInt j = 1; j <= a->k; ++j) {
    const PetscInt i    = a->i0 + j;
    PetscScalar   *prev = a->slots + (j - 1) * nd, *cur = prev + nd;

    for (PetscInt v = 1; v < i; ++v) vz[v - 1] = a->V[v];
    vz[i - 1] = a->Z[i];
    PetscCall(Product(be, op, nullptr, a->wr, a->Z[i], a->V[i], 0, nullptr, nullptr, nullptr));
    PetscCall(be->reduce_target(cur, &a->ctl->stopped));
    PetscCall(be->mdot(n, i, vz.data(), a->V[i], PETSC_TRUE, nullptr));
    PetscCall(GlobalSum(be, a->par, cur, i + 1));
    PetscCall(be->reduce_target(cur + a->m + 1, &a->ctl->stopped));
    PetscCall(be->sgmres_update_chained(n, i, a->m, a->keep, a->V + 1, a->V[i], a->Z[i], a->Z[i + 1], prev, cur, a->ctl, j));
    PetscCall(GlobalSum(be, a->par, cur + a->m + 1, 1));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   SGMRESChunkHostMemory - Backend::sgmres_chunk of a backend in host memory (host, Kokkos on CPU
   threads): the start of a chunk that starts the solve (args->b: <b,b> to its slot as Backend::dots
   sums it, SGMRESChunkStart() on the host, z_1 = b / rho as VecScale() by 1 / rho), then the steps
*/
PetscErrorCode SGMRESChunkHostMemory(const Backend *be, const SGMRESChunkArgs *args)
{
  const PetscInt n = args->csr ? args->csr->nrows : args->sell->nrows;

  PetscFunctionBegin;
  PetscCheck(be->host_memory, PETSC_COMM_SELF, PETSC_ERR_PLIB, "The start of an SGMRES chunk on the host needs a backend in host memory");
  PetscCheck(!args->b || args->i0 == 0, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONG, "Only the first chunk of a cycle starts the solve, not one from step %" PetscInt_FMT, args->i0 + 1);
  if (args->b) {
    const DotSpec self;
    PetscReal     rho;

    PetscCall(be->reduce_target(args->slots + args->m + 2, nullptr));
    PetscCall(be->dots(n, nullptr, args->b, 1, &self, nullptr));
    rho = SGMRESChunkStart(args->ctl, args->slots, args->m);
    if (rho != 0) { /* one pass, as VecScale() by 1 / rho; the backend's memory is the host's */
      const PetscScalar scale = 1 / rho;
      for (PetscInt i = 0; i < n; ++i) args->Z[1][i] = args->b[i] * scale;
      be->counters->launches++;
    }
  }
  PetscCall(SGMRESChunkSteps(be, args));
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace fusedksp
