/* The halo exchange of parallel products and the rows that read the halo (halo.hpp) */
#include "mat/halo.hpp"

namespace fusedksp
{
PetscErrorCode OffDiagRowsFree(const Backend *be, OffDiagRows *b)
{
  PetscFunctionBegin;
  if (!be->host_memory) {
    PetscCall(be->free_bytes(b->rows));
    PetscCall(be->free_bytes(b->rowptr));
    PetscCall(be->free_bytes(b->fullrowptr));
    PetscCall(be->free_bytes(b->colidx));
    PetscCall(be->free_bytes(b->vals));
  }
  *b = OffDiagRows();
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode OffDiagRowsMirror(const Backend *be, PetscInt m, PetscInt n, const PetscInt *ai, const PetscInt *aj, const PetscScalar *aa, PetscBool structure, OffDiagRows *b)
{
  PetscFunctionBegin;
  if (structure) {
    PetscCall(OffDiagRowsFree(be, b));
    for (PetscInt i = 0; i < m; ++i)
      if (ai[i + 1] > ai[i]) {
        FusedKSPCallCXX(b->host_rows.push_back(i); b->host_rowptr.push_back(ai[i]));
      }
    FusedKSPCallCXX(b->host_rowptr.push_back(ai[m]));
    FusedKSPCallCXX(b->host_fullrowptr.assign(ai, ai + m + 1));
    b->nnz = ai[m];
    if (!be->host_memory) {
      const size_t nb = b->host_rows.size();

      PetscCall(be->malloc_bytes(sizeof(PetscInt) * PetscMax(nb, 1), (void **)&b->rows));
      PetscCall(be->malloc_bytes(sizeof(PetscInt) * (nb + 1), (void **)&b->rowptr));
      PetscCall(be->malloc_bytes(sizeof(PetscInt) * PetscMax(ai[m], 1), (void **)&b->colidx));
      PetscCall(be->malloc_bytes(sizeof(PetscScalar) * PetscMax(ai[m], 1), (void **)&b->vals));
      PetscCall(be->copy_to_backend(b->rows, b->host_rows.data(), sizeof(PetscInt) * nb));
      PetscCall(be->copy_to_backend(b->rowptr, b->host_rowptr.data(), sizeof(PetscInt) * (nb + 1)));
      PetscCall(be->malloc_bytes(sizeof(PetscInt) * (m + 1), (void **)&b->fullrowptr));
      PetscCall(be->copy_to_backend(b->fullrowptr, ai, sizeof(PetscInt) * (m + 1)));
      PetscCall(be->copy_to_backend(b->colidx, aj, sizeof(PetscInt) * ai[m]));
    }
  }
  b->csr  = {(PetscInt)b->host_rows.size(), n, !be->host_memory ? b->rowptr : b->host_rowptr.data(), !be->host_memory ? b->colidx : aj, !be->host_memory ? b->vals : aa, ai[m]};
  b->full = {m, n, !be->host_memory ? b->fullrowptr : b->host_fullrowptr.data(), b->csr.colidx, b->csr.vals, ai[m]};
  if (be->host_memory)
    b->rows = b->host_rows.data();
  else {
    PetscCall(be->copy_to_backend(b->vals, aa, sizeof(PetscScalar) * ai[m]));
    PetscCall(PetscLogCpuToGpu((PetscLogDouble)sizeof(PetscScalar) * ai[m]));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode HaloFree(const Backend *be, Halo *h)
{
  PetscFunctionBegin;
  for (MPI_Request &r : h->requests) PetscCallMPI(MPI_Request_free(&r));
  for (MPI_Request &r : h->reverse) PetscCallMPI(MPI_Request_free(&r));
  PetscCall(be->free_bytes(h->send_idx));
  PetscCall(be->free_bytes(h->recv_idx));
  PetscCall(be->free_bytes(h->send_buf));
  PetscCall(be->free_bytes(h->recv_buf));
  PetscCall(be->free_bytes(h->halo));
  PetscCall(be->free_host(h->host_send));
  PetscCall(be->free_host(h->host_recv));
  *h = Halo();
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The ranks are taken from a PETSCSFBASIC copy of msf's graph, whose root-side lists (PetscSFGetLeafRanks) are in the
   order of the leaf side's (PetscSFGetRootRanks) on the other rank: the k-th entry sent to a rank is the k-th one it
   receives from this rank. */
PetscErrorCode HaloBuild(PetscObject obj, const Backend *be, PetscBool direct, PetscSF msf, PetscInt nhalo, Halo *hp)
{
  Halo              &h = *hp;
  MPI_Comm           comm;
  PetscSF            sf;
  PetscInt           nroots, nleaves;
  const PetscInt    *ilocal, *roffset, *rmine, *loffset, *lrootloc;
  const PetscSFNode *iremote;
  const PetscMPIInt *rranks, *lranks;
  PetscMPIInt        tag, rtag, count;
  PetscBool          ordered = PETSC_TRUE;
  PetscScalar       *sendptr, *recvptr;

  PetscFunctionBegin;
  PetscCall(HaloFree(be, &h));
  PetscCall(PetscObjectGetComm(obj, &comm));
  PetscCall(PetscSFGetGraph(msf, &nroots, &nleaves, &ilocal, &iremote));
  PetscCheck(nleaves == nhalo, PETSC_COMM_SELF, PETSC_ERR_PLIB, "The halo's PetscSF has %" PetscInt_FMT " leaves for %" PetscInt_FMT " halo slots", nleaves, nhalo);
  PetscCall(PetscSFCreate(comm, &sf));
  PetscCall(PetscSFSetType(sf, PETSCSFBASIC));
  PetscCall(PetscSFSetGraph(sf, nroots, nleaves, (PetscInt *)ilocal, PETSC_COPY_VALUES, (PetscSFNode *)iremote, PETSC_COPY_VALUES));
  PetscCall(PetscSFSetUp(sf));
  PetscCall(PetscSFGetRootRanks(sf, &h.nrecv_ranks, &rranks, &roffset, &rmine, nullptr));
  PetscCall(PetscSFGetLeafRanks(sf, &h.nsend_ranks, &lranks, &loffset, &lrootloc));
  h.nrecv  = roffset[h.nrecv_ranks];
  h.nsend  = loffset[h.nsend_ranks];
  h.direct = direct;
  for (PetscInt k = 0; k < h.nrecv; ++k) {
    PetscCheck(rmine[k] >= 0 && rmine[k] < nhalo, PETSC_COMM_SELF, PETSC_ERR_PLIB, "Halo slot %" PetscInt_FMT " out of range [0, %" PetscInt_FMT ")", rmine[k], nhalo);
    if (rmine[k] != k) ordered = PETSC_FALSE;
  }

  PetscCall(be->malloc_bytes(sizeof(PetscInt) * h.nsend, (void **)&h.send_idx));
  PetscCall(be->copy_to_backend(h.send_idx, lrootloc, sizeof(PetscInt) * h.nsend));
  PetscCall(be->malloc_bytes(sizeof(PetscScalar) * h.nsend, (void **)&h.send_buf));
  PetscCall(be->malloc_bytes(sizeof(PetscScalar) * nhalo, (void **)&h.halo));
  if (!ordered) {
    PetscCall(be->malloc_bytes(sizeof(PetscInt) * h.nrecv, (void **)&h.recv_idx));
    PetscCall(be->copy_to_backend(h.recv_idx, rmine, sizeof(PetscInt) * h.nrecv));
    PetscCall(be->malloc_bytes(sizeof(PetscScalar) * h.nrecv, (void **)&h.recv_buf));
  }
  if (!h.direct) {
    PetscCall(be->malloc_host(sizeof(PetscScalar) * h.nsend, (void **)&h.host_send));
    PetscCall(be->malloc_host(sizeof(PetscScalar) * h.nrecv, (void **)&h.host_recv));
  }
  sendptr = h.direct ? h.send_buf : h.host_send;
  recvptr = h.direct ? (ordered ? h.halo : h.recv_buf) : h.host_recv;

  /* the product receives the halo from its owners and sends the entries others need; the transposed product
     sends the (partial sums of the) halo back to its owners, in the same buffers, and receives theirs */
  PetscCall(PetscObjectGetNewTag(obj, &tag));
  PetscCall(PetscObjectGetNewTag(obj, &rtag));
  FusedKSPCallCXX(h.requests.resize((size_t)h.nrecv_ranks + h.nsend_ranks, MPI_REQUEST_NULL); h.reverse.resize(h.requests.size(), MPI_REQUEST_NULL));
  for (PetscMPIInt j = 0; j < h.nrecv_ranks; ++j) {
    PetscCall(PetscMPIIntCast(roffset[j + 1] - roffset[j], &count));
    PetscCallMPI(MPI_Recv_init(recvptr + roffset[j], count, MPIU_SCALAR, rranks[j], tag, comm, &h.requests[j]));
    PetscCallMPI(MPI_Send_init(recvptr + roffset[j], count, MPIU_SCALAR, rranks[j], rtag, comm, &h.reverse[j]));
  }
  for (PetscMPIInt i = 0; i < h.nsend_ranks; ++i) {
    PetscCall(PetscMPIIntCast(loffset[i + 1] - loffset[i], &count));
    PetscCallMPI(MPI_Send_init(sendptr + loffset[i], count, MPIU_SCALAR, lranks[i], tag, comm, &h.requests[h.nrecv_ranks + i]));
    PetscCallMPI(MPI_Recv_init(sendptr + loffset[i], count, MPIU_SCALAR, lranks[i], rtag, comm, &h.reverse[h.nrecv_ranks + i]));
  }
  FusedKSPCallCXX(h.recv_ranks.assign(rranks, rranks + h.nrecv_ranks); h.recv_offsets.assign(roffset, roffset + h.nrecv_ranks + 1); h.send_ranks.assign(lranks, lranks + h.nsend_ranks); h.send_offsets.assign(loffset, loffset + h.nsend_ranks + 1));
  PetscCall(PetscSFDestroy(&sf));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Starts the requests of an exchange once the fence of its buffers has passed */
static PetscErrorCode HaloStart(const Backend *be, std::vector<MPI_Request> &requests)
{
  PetscFunctionBegin;
  PetscCall(be->fence_wait());
  PetscCallMPI(MPI_Startall((PetscMPIInt)requests.size(), requests.data()));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Completes the requests of an exchange, starting them first unless HaloBegin() did */
static PetscErrorCode HaloComplete(const Backend *be, Halo *h, std::vector<MPI_Request> &requests)
{
  PetscFunctionBegin;
  PetscCall(PetscLogEventBegin(events.halo_mpi, 0, 0, 0, 0));
  if (!h->started) PetscCall(HaloStart(be, requests));
  h->started = PETSC_FALSE;
  PetscCallMPI(MPI_Waitall((PetscMPIInt)requests.size(), requests.data(), MPI_STATUSES_IGNORE));
  PetscCall(PetscLogEventEnd(events.halo_mpi, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode HaloBegin(const Backend *be, Halo *hp, const PetscScalar *wr, const PetscScalar *x)
{
  Halo &h = *hp;

  PetscFunctionBegin;
  if (h.requests.empty()) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCheck(!h.started, PETSC_COMM_SELF, PETSC_ERR_ORDER, "HaloBegin() called while an exchange of this halo is in flight");
  PetscCall(PetscLogEventBegin(events.halo_pack, 0, 0, 0, 0));
  PetscCall(be->gather(h.nsend, h.send_idx, wr, x, h.send_buf));
  if (!h.direct) PetscCall(be->copy_to_host_async(h.host_send, h.send_buf, sizeof(PetscScalar) * h.nsend));
  PetscCall(be->fence_record());
  if (be->host_memory) { /* the pack is done: the messages travel during the caller's product of the diagonal block */
    PetscCall(HaloStart(be, h.requests));
    h.started = PETSC_TRUE;
  }
  PetscCall(PetscLogEventEnd(events.halo_pack, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode HaloEnd(const Backend *be, Halo *hp)
{
  Halo &h = *hp;

  PetscFunctionBegin;
  if (h.requests.empty()) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(HaloComplete(be, hp, h.requests));
  if (!h.direct) PetscCall(be->copy_to_backend_async(h.recv_idx ? h.recv_buf : h.halo, h.host_recv, sizeof(PetscScalar) * h.nrecv));
  if (h.recv_idx) PetscCall(be->scatter(h.nrecv, h.recv_idx, h.recv_buf, PETSC_FALSE, h.halo));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode HaloReverseBegin(const Backend *be, Halo *hp)
{
  Halo &h = *hp;

  PetscFunctionBegin;
  if (h.reverse.empty()) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCheck(!h.started, PETSC_COMM_SELF, PETSC_ERR_ORDER, "HaloReverseBegin() called while an exchange of this halo is in flight");
  if (h.recv_idx) PetscCall(be->gather(h.nrecv, h.recv_idx, nullptr, h.halo, h.recv_buf));
  if (!h.direct) PetscCall(be->copy_to_host_async(h.host_recv, h.recv_idx ? h.recv_buf : h.halo, sizeof(PetscScalar) * h.nrecv));
  PetscCall(be->fence_record());
  if (be->host_memory) {
    PetscCall(HaloStart(be, h.reverse));
    h.started = PETSC_TRUE;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode HaloReverseEnd(const Backend *be, Halo *hp, PetscScalar *y)
{
  Halo &h = *hp;

  PetscFunctionBegin;
  if (h.reverse.empty()) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(HaloComplete(be, hp, h.reverse));
  if (!h.direct) PetscCall(be->copy_to_backend_async(h.send_buf, h.host_send, sizeof(PetscScalar) * h.nsend));
  PetscCall(be->scatter(h.nsend, h.send_idx, h.send_buf, PETSC_TRUE, y));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode ParallelProductDots(const Backend *be, const ParallelProduct &p, const PetscScalar *wl, const PetscScalar *wr, const PetscScalar *in, PetscScalar *out, int ndots, const DotSpec *specs, PetscScalar *dots)
{
  PetscFunctionBegin;
  PetscCall(HaloBegin(be, p.halo, wr, in));
  PetscCall(PetscLogEventBegin(events.spmv_dots, p.A, 0, 0, 0));
  PetscCall(MirrorProduct(be, p.diag, wl, wr, in, out, ndots, specs, dots));
  PetscCall(PetscLogEventEnd(events.spmv_dots, p.A, 0, 0, 0));
  PetscCall(HaloEnd(be, p.halo));
  if (p.offdiag->csr.nrows) {
    PetscCall(PetscLogEventBegin(events.spmv_offdiag, p.A, 0, 0, 0));
    PetscCall(be->spmv_offdiag_dots(&p.offdiag->csr, p.offdiag->rows, wl, p.halo->halo, in, out, ndots, specs, dots));
    PetscCall(PetscLogEventEnd(events.spmv_offdiag, p.A, 0, 0, 0));
  }
  PetscCall(PetscLogFlops(2.0 * p.offdiag->nnz));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode ParallelProductUpdate(const Backend *be, const ParallelProduct &p, PetscScalar *work, const RowUpdate *f, const PetscScalar *in, PetscScalar *out)
{
  RowUpdate diag, offdiag = *f;
  PetscInt  m;

  PetscFunctionBegin;
  diag.add  = f->add;
  diag.sign = f->sign;
  PetscCall(HaloBegin(be, p.halo, nullptr, in));
  PetscCall(PetscLogEventBegin(events.spmv_dots, p.A, 0, 0, 0));
  PetscCall(MirrorProductUpdate(be, p.diag, &diag, in, work));
  PetscCall(PetscLogEventEnd(events.spmv_dots, p.A, 0, 0, 0));
  PetscCall(HaloEnd(be, p.halo));
  offdiag.add = work;
  PetscCall(PetscLogEventBegin(events.spmv_offdiag, p.A, 0, 0, 0));
  PetscCall(be->spmv_update(&p.offdiag->full, nullptr, &offdiag, p.halo->halo, out));
  PetscCall(PetscLogEventEnd(events.spmv_offdiag, p.A, 0, 0, 0));
  PetscCall(MatGetLocalSize(p.A, &m, nullptr));
  if (be->host_memory)
    PetscCall(PetscLogFlops(2.0 * p.offdiag->nnz + 6.0 * m));
  else
    PetscCall(PetscLogGpuFlops(2.0 * p.offdiag->nnz + 6.0 * m));
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace fusedksp
