/* The off-process part of a parallel product on the backend: the halo exchange (the entries of the input that
   other ranks own, brought into a buffer of halo slots) and the sparse rows that read the halo.  Used by the
   product of MATMPIAIJFUSED (depth 1: the halo is MATMPIAIJ's lvec) and by its matrix powers kernel (depth s), and
   the parallel product itself from its parts (MATMPIAIJFUSED's and PETSc's MATMPIAIJCUSPARSE's).               */
#pragma once

#include "sys/fusedksp_impl.hpp"
#include "mat/mirror.hpp"
#include <petscsf.h>
#include <vector>

namespace fusedksp
{
/* The rows of a sparse block that have entries, in the backend's memory (with a backend in host memory: the
   caller's column and value arrays, our row lists)                                                           */
struct OffDiagRows {
  CSRView               csr;  /* nrows: the rows with entries                     */
  CSRView               full; /* every row of the block (empty ones too), on the same column and value arrays */
  std::vector<PetscInt> host_rows, host_rowptr, host_fullrowptr;
  PetscInt             *rows   = nullptr; /* row of each of csr's rows in the output       */
  PetscInt             *rowptr = nullptr, *colidx = nullptr, *fullrowptr = nullptr;
  PetscScalar          *vals = nullptr;
  PetscInt              nnz  = 0;
};

/* The halo exchange pattern, its buffers and its persistent requests (receives, then sends) */
struct Halo {
  PetscInt                 nsend = 0, nrecv = 0;                                     /* entries sent, received (= halo size) */
  PetscMPIInt              nsend_ranks = 0, nrecv_ranks = 0;                         /* ranks sent to, received from */
  PetscInt                *send_idx = nullptr, *recv_idx = nullptr;                  /* backend: local entries packed; halo slot of each received entry (NULL: received in halo order) */
  PetscScalar             *send_buf = nullptr, *recv_buf = nullptr, *halo = nullptr; /* backend (recv_buf only with recv_idx) */
  PetscScalar             *host_send = nullptr, *host_recv = nullptr;                /* staging buffers (not with direct) */
  PetscBool                direct  = PETSC_FALSE;                                    /* MPI reads and writes the backend buffers */
  PetscBool                started = PETSC_FALSE;                                    /* the exchange was started by the Begin (host memory) */
  std::vector<MPI_Request> requests;                                                 /* the product's exchange: receives, then sends                     */
  std::vector<MPI_Request> reverse;                                                  /* the transposed product's: the halo sent back, added by its owners */
  std::vector<PetscMPIInt> send_ranks, recv_ranks;                                   /* the exchange for a backend that queues it (Backend::exchange) */
  std::vector<PetscInt>    send_offsets, recv_offsets;
};

/* Releases the backend arrays of the rows and resets them */
PetscErrorCode OffDiagRowsFree(const Backend *be, OffDiagRows *b);
/* The rows with entries of the m x n CSR block ai/aj/aa, and all its rows (`full`) (the structure when `structure`, the
   arrays then reallocated on a backend with memory of its own), then its values.  In host memory aj and aa are used in
   place: keep them alive.                                                                                        */
PetscErrorCode OffDiagRowsMirror(const Backend *be, PetscInt m, PetscInt n, const PetscInt *ai, const PetscInt *aj, const PetscScalar *aa, PetscBool structure, OffDiagRows *b);

/* Releases the buffers and requests of the exchange and resets it */
PetscErrorCode HaloFree(const Backend *be, Halo *h);
/* Builds the exchange of nhalo halo slots (the leaves of msf, whose roots are the entries owned by other ranks)
   with persistent requests on obj's communicator; direct: MPI reads and writes the backend buffers.  Collective. */
PetscErrorCode HaloBuild(PetscObject obj, const Backend *be, PetscBool direct, PetscSF msf, PetscInt nhalo, Halo *h);
/* Queues the pack buf = (wr .* x)[entries others need] (wr may be NULL) and its copy to the host, marked by a fence;
   on a backend in host memory, where the pack is done when it returns, also starts the exchange, which then
   overlaps the caller's work up to HaloEnd() (the product of the diagonal block)                                */
PetscErrorCode HaloBegin(const Backend *be, Halo *h, const PetscScalar *wr, const PetscScalar *x);
/* Waits for the pack only, exchanges (or completes the exchange HaloBegin() started), queues the unpack into h->halo */
PetscErrorCode HaloEnd(const Backend *be, Halo *h);
/* The exchange reversed, for transposed products and prolongations: HaloReverseBegin() queues the copy of the
   values in h->halo (written by the caller) to the host, marked by a fence (in host memory it starts the sends, as
   HaloBegin()); HaloReverseEnd() waits for it, sends each
   halo slot's value to the rank that owns its entry, and adds what this rank receives into y (y[entry] += value) */
PetscErrorCode HaloReverseBegin(const Backend *be, Halo *h);
PetscErrorCode HaloReverseEnd(const Backend *be, Halo *h, PetscScalar *y);

/* The local rows of a parallel product from its parts: the diagonal block's copy, the off-diagonal block's rows
   and the halo exchange of the input (arrays in the backend's memory; A only names the logged events).  Collective. */
struct ParallelProduct {
  Mat                A;
  const Mirror      *diag;
  const OffDiagRows *offdiag;
  Halo              *halo;
};
/* out = wl .* (A (wr .* in)) with ndots partial dot products of out (Backend::spmv_dots): the halo exchange overlaps
   the diagonal block's product, then the off-diagonal block's rows add theirs and correct the dot products */
PetscErrorCode ParallelProductDots(const Backend *be, const ParallelProduct &p, const PetscScalar *wl, const PetscScalar *wr, const PetscScalar *in, PetscScalar *out, int ndots, const DotSpec *specs, PetscScalar *dots);
/* out = the RowUpdate f of A in in two kernels: work = f->add + f->sign A_d in during the halo exchange, then every row
   out = alpha u + beta v + gamma wl .* (work + sign A_o halo) (work: a backend array of the local rows) */
PetscErrorCode ParallelProductUpdate(const Backend *be, const ParallelProduct &p, PetscScalar *work, const RowUpdate *f, const PetscScalar *in, PetscScalar *out);
} // namespace fusedksp
