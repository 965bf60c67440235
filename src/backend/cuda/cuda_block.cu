/*
   CUDA backend: the block Gram-Schmidt kernels of CA-GMRES (Backend::block_mdot, Backend::block_maxpy).

   Both see the basis V[0..nv) and the block W[0..nw) as one list of "left" vectors L = [V, W] (W[k] is L[nv + k])
   and work on the columns of W in tiles of BLOCK_W_TILE, one register per column and row.

   block_mdot is the tall-skinny product L^T W: grid row g of a launch (blockIdx.x; blockIdx.y is the chunk of rows)
   reduces the dot products of TV = BlockVTile(TW) left vectors with the tile's TW columns (TW = the tile's width,
   a template parameter, so that a thread holds exactly the TV x TW <= 32 sums it needs), each thread loading its rows
   of those vectors and of the columns once for all TV x TW products.  So a launch reads every left vector
   once and the columns once per grid row, but the grid rows of one chunk are consecutive blocks, run at about the same
   time, and find the columns the first one read in L2: from DRAM the columns are read about once.  A left vector
   L[l] = W[k] enters only the columns j >= k; the other results are zeros.
   The second stage is mdot's: the blocks of a grid row write their partials, the last of them (ticket) sums them.

   block_maxpy gives each thread one row: it loads the row of the tile's columns into registers, subtracts the
   terms of the left vectors (V and the columns of the earlier tiles, final by then) one vector at a time, then
   those of the tile's earlier columns, scales, and stores the row.

   The vector pointers and the coefficients are kernel parameters (__grid_constant__, as cuda_gmres.cu passes
   them), within 4 KB: a tile whose left vectors do not fit one table takes several launches (the first ones only
   subtract their terms, in order), as do more than BLOCK_W_TILE columns (a launch per tile).  For the CA-GMRES
   blocks (nw <= 8, nv + nw <= MAX_TABLE for the dots, nv <= 64 for the update at nw <= 5) each is ONE launch.
*/
#include "backend/cuda/cuda_rows.cuh"
#include <climits>

namespace fusedksp
{
namespace cuda
{

constexpr int TILE_W = BLOCK_W_TILE;
constexpr int WARPS  = BLOCK_SIZE / 32;

/* The left vectors L[first .. first + count) (count <= MAX_TABLE) and the columns W[j0 .. j0 + ncols) of one
   block_mdot launch */
struct BlockDotTable {
  const PetscScalar *left[MAX_TABLE];
  const PetscScalar *col[TILE_W];
};

/* Where the sums of one block_mdot launch go (tiles of TV left vectors by TW columns, ncols = TW): sum k * TW + j of
   grid row g is <L[first + g TV + k], W[j0 + j]>, result slot (j0 + j) ld + first + g TV + k; it is zero (not
   summed) when that left vector is W[q] with q > j0 + j                                                       */
struct BlockDotShape {
  int first, count, j0, nv, ld;
  int zero_from; /* block (0, 0) writes the zero results of the left vectors zero_from .. ld-1 (none: ld) */

  template <int TV, int TW> __device__ bool Valid(int d) const
  {
    return d / TW < count - (int)blockIdx.x * TV;
  }
  template <int TV, int TW> __device__ int Slot(int d) const
  {
    return (j0 + d % TW) * ld + first + (int)blockIdx.x * TV + d / TW;
  }
  template <int TV, int TW> __device__ bool Zero(int d) const
  {
    return first + (int)blockIdx.x * TV + d / TW - nv > j0 + d % TW;
  }
};

/* Partials of the sums of grid row blockIdx.x (BlockDotShape) over chunk blockIdx.y, then mdot's second stage.  The
   grid rows of one chunk are consecutive blocks, so they run at the same time and the columns of W that the first
   reads from DRAM the others find in L2: W is read from memory about once per launch, not once per grid row. */
template <int TW, int TV = BlockVTile(TW)> __global__ void __launch_bounds__(BLOCK_SIZE, 3) BlockMDotKernel(PetscInt n, PetscInt chunk, const __grid_constant__ BlockDotTable table, const BlockDotShape shape, const Reduction red)
{
  __shared__ PetscScalar sums[WARPS][TV * TW];
  __shared__ bool        last;
  const unsigned int     group = blockIdx.x, nblocks = gridDim.y; /* the grid row (left vectors) and the chunks */
  const PetscInt64       begin = (PetscInt64)blockIdx.y * chunk;
  const ChunkRange       range = {begin, begin + PetscMin((PetscInt64)chunk, (PetscInt64)n - begin)};
  const int              lbase = group * TV, nl = min(TV, shape.count - lbase);
  const int              warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  PetscScalar            acc[TV * TW] = {};

  if (Stopped(red)) return;
  if (blockIdx.x == 0 && blockIdx.y == 0)
    for (int z = threadIdx.x; z < (shape.ld - shape.zero_from) * TW; z += blockDim.x) red.result[(shape.j0 + z % TW) * shape.ld + shape.zero_from + z / TW] = 0;

  for (PetscInt64 i = range.begin + threadIdx.x; i < range.end; i += blockDim.x) {
    PetscScalar w[TW];
#pragma unroll
    for (int j = 0; j < TW; ++j) w[j] = table.col[j][i];
#pragma unroll
    for (int k = 0; k < TV; ++k)
      if (k < nl) {
        const PetscScalar v = table.left[lbase + k][i];
#pragma unroll
        for (int j = 0; j < TW; ++j) acc[k * TW + j] += v * w[j];
      }
  }

  /* first stage: each warp's sums (LaneSum), then the warps' in order, one thread per sum */
#pragma unroll
  for (int d = 0; d < TV * TW; ++d)
    if (shape.template Valid<TV, TW>(d)) {
      const PetscScalar v = LaneSum(acc[d]);
      if (lane == 0) sums[warp][d] = v;
    }
  __syncthreads();
  if (threadIdx.x < TV * TW && shape.template Valid<TV, TW>(threadIdx.x)) {
    const int   d = threadIdx.x, slot = shape.template Slot<TV, TW>(d);
    PetscScalar v = 0;
    for (int q = 0; q < WARPS; ++q) v += sums[q][d];
    if (nblocks == 1)
      red.result[slot] = shape.template Zero<TV, TW>(d) ? 0 : v; /* one block: its sums are the results */
    else {
      red.partials[(size_t)slot * nblocks + blockIdx.y] = v;
      __threadfence(); /* the partial is visible before the block's ticket is */
    }
  }
  if (nblocks == 1) return;
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(&red.tickets[group], 1u) == nblocks - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();

  /* second stage, in the grid row's last block: one warp per sum */
  for (int d = warp; d < TV * TW; d += WARPS) {
    if (!shape.template Valid<TV, TW>(d)) continue;
    const int          slot = shape.template Slot<TV, TW>(d);
    const PetscScalar *part = red.partials + (size_t)slot * nblocks;
    PetscScalar        v    = 0;
    for (unsigned int b = lane; b < nblocks; b += 32) v += __ldcg(part + b);
    v = LaneSum(v);
    if (lane == 0) red.result[slot] = shape.template Zero<TV, TW>(d) ? 0 : v;
  }
  if (threadIdx.x == 0) red.tickets[group] = 0; /* ready for the next launch */
}

/* The left vectors of a block_maxpy launch with their coefficients (coef[l * ncols + j]: of L[first + l] in column
   j0 + j), the tile's columns and, for the tile's last launch, the coefficients of the tile's earlier columns
   (tri[j (j - 1) / 2 + k]: of column j0 + k in column j0 + j) and the scales                                  */
constexpr int BLOCK_AXPY_LEFT = 64, BLOCK_AXPY_COEF = 320;
struct BlockAXPYTable {
  const PetscScalar *left[BLOCK_AXPY_LEFT];
  PetscScalar       *col[TILE_W];
  PetscScalar        coef[BLOCK_AXPY_COEF];
  PetscScalar        tri[TILE_W * (TILE_W - 1) / 2];
  PetscScalar        scale[TILE_W];
};

static_assert(sizeof(BlockAXPYTable) + 64 <= 4096, "a block_maxpy launch must fit in 4 KB of kernel parameters");
static_assert(sizeof(BlockDotTable) + sizeof(BlockDotShape) + sizeof(Reduction) + 64 <= 4096, "a block_mdot launch must fit in 4 KB of kernel parameters");
static_assert(BLOCK_AXPY_COEF >= TILE_W, "a block_maxpy launch takes at least one left vector");
static_assert((MAX_TABLE + BlockVTile(TILE_W) - 1) / BlockVTile(TILE_W) <= MAX_GRID_ROWS, "the grid rows of a block_mdot launch need a ticket each");
static_assert(TILE_W == 8, "BlockMDotKernelFor() instantiates tiles of 1 to 8 columns");

/* The instantiation of BlockMDotKernel for a tile of ncols (1 .. TILE_W) columns */
static const void *BlockMDotKernelFor(int ncols)
{
  static const void *const kernels[TILE_W] = {(const void *)BlockMDotKernel<1>, (const void *)BlockMDotKernel<2>, (const void *)BlockMDotKernel<3>, (const void *)BlockMDotKernel<4>,
                                              (const void *)BlockMDotKernel<5>, (const void *)BlockMDotKernel<6>, (const void *)BlockMDotKernel<7>, (const void *)BlockMDotKernel<8>};
  return kernels[ncols - 1];
}

/* One row per thread: the tile's columns minus the terms of the count left vectors; with `last`, minus those of the
   tile's earlier columns, then scaled (each entry takes its terms in the order of maxpy_scale's)                 */
__global__ void BlockMAXPYKernel(PetscInt n, PetscInt chunk, const __grid_constant__ BlockAXPYTable table, int count, int ncols, bool last)
{
  const ChunkRange range = BlockChunk(n, chunk);

  for (PetscInt64 i = range.begin + threadIdx.x; i < range.end; i += blockDim.x) {
    PetscScalar w[TILE_W];
#pragma unroll
    for (int j = 0; j < TILE_W; ++j) w[j] = j < ncols ? table.col[j][i] : 0;
#pragma unroll 8
    for (int l = 0; l < count; ++l) { /* 8 loads of left vectors in flight per thread */
      const PetscScalar v = table.left[l][i];
#pragma unroll
      for (int j = 0; j < TILE_W; ++j)
        if (j < ncols) w[j] -= table.coef[l * ncols + j] * v;
    }
    if (last) {
#pragma unroll
      for (int j = 0; j < TILE_W; ++j)
        if (j < ncols) {
#pragma unroll
          for (int k = 0; k < j; ++k) w[j] -= table.tri[j * (j - 1) / 2 + k] * w[k];
          w[j] *= table.scale[j];
        }
    }
#pragma unroll
    for (int j = 0; j < TILE_W; ++j)
      if (j < ncols) table.col[j][i] = w[j];
  }
}

/* The arguments every backend checks */
static PetscErrorCode CheckBlockArgs(PetscInt n, PetscInt nv, const PetscScalar *const *V, PetscInt nw, const void *W)
{
  PetscFunctionBegin;
  PetscCheck(n >= 0 && nv >= 0, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Negative length %" PetscInt_FMT " or number of vectors %" PetscInt_FMT, n, nv);
  PetscCheck(nw >= 1 && nw <= 64, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "A block of %" PetscInt_FMT " columns: 1 to 64", nw);
  PetscCheck((nv == 0 || V) && W, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "%" PetscInt_FMT " vectors and %" PetscInt_FMT " columns but V or W is NULL", nv, nw);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   BlockMDot - Backend::block_mdot on the device: per tile of BLOCK_W_TILE columns, ceil((nv + the tile's last
   column + 1) / MAX_TABLE) launches (ONE for a CA-GMRES block), and ONE device->host copy of the nw (nv + nw)
   results (none into a reduce target); nothing launched when n == 0.  Each grid row takes FUSED_MDOT_BLOCKS
   chunks, or more when the rows are few: about one wave of blocks in all, as mdot.
*/
PetscErrorCode BlockMDot(PetscInt n, PetscInt nv, const PetscScalar *const *V, PetscInt nw, const PetscScalar *const *W, PetscScalar *dots)
{
  const PetscInt64 ld = (PetscInt64)nv + nw, nd = nw * ld;
  PetscInt         wave = 0;
  Partition        part;
  Reduction        red;
  cudaStream_t     stream;

  PetscFunctionBegin;
  PetscCall(CheckBlockArgs(n, nv, V, nw, W));
  if (n > 0) PetscCall(WaveBlocks(BlockMDotKernelFor((int)PetscMin(nw, (PetscInt)TILE_W)), &wave));
  {
    const PetscInt tv   = BlockVTile((int)PetscMin(nw, (PetscInt)TILE_W));
    const PetscInt rows = (PetscMin(nv + PetscMin(nw, (PetscInt)TILE_W), (PetscInt)MAX_TABLE) + tv - 1) / tv; /* grid rows of the first launch */
    part                = PartitionRange(n, PetscMax(FUSED_MDOT_BLOCKS, wave / rows));
  }
  PetscCheck(part.nblocks <= 65535, PETSC_COMM_SELF, PETSC_ERR_PLIB, "%" PetscInt_FMT " chunks exceed the grid's second dimension", (PetscInt)part.nblocks);
  PetscCheck(nd <= INT_MAX / PetscMax(part.nblocks, 1), PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Too many vectors for one block multi-dot: %" PetscInt_FMT " and %" PetscInt_FMT, nv, nw);
  if (part.nblocks) {
    PetscCall(GetStream(&stream));
    PetscCall(GetReduction((int)nd, part.nblocks, &red));
    for (PetscInt j0 = 0; j0 < nw; j0 += TILE_W) {
      const int     ncols = (int)PetscMin((PetscInt)TILE_W, nw - j0);
      const int     nleft = (int)(nv + j0 + ncols); /* the left vectors with nonzero results in the tile */
      BlockDotTable table = {};

      for (int j = 0; j < ncols; ++j) table.col[j] = W[j0 + j];
      for (int first = 0; first < nleft; first += MAX_TABLE) {
        const BlockDotShape shape = {first, PetscMin(MAX_TABLE, nleft - first), (int)j0, (int)nv, (int)ld, first ? (int)ld : nleft};
        const dim3          grid((shape.count + BlockVTile(ncols) - 1) / BlockVTile(ncols), part.nblocks);
        void               *args[] = {(void *)&n, (void *)&part.chunk, (void *)&table, (void *)&shape, (void *)&red};

        for (int l = 0; l < shape.count; ++l) table.left[l] = first + l < nv ? V[first + l] : W[first + l - nv];
        FusedKSPCallCUDA(cudaLaunchKernel(BlockMDotKernelFor(ncols), grid, dim3(BLOCK_SIZE), args, 0, stream));
        counters.launches++;
      }
    }
  }
  PetscCall(FinishReduction((int)nd, part.nblocks, dots));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/*
   BlockMAXPY - Backend::block_maxpy on the device, one row per thread (PartitionRows(), as maxpy_scale without a
   dot product): per tile of BLOCK_W_TILE columns, ceil((nv + the tile's first column) / the left vectors a table
   holds) launches, at least one (ONE for a CA-GMRES block); nothing when n == 0.  No copy either way.
*/
PetscErrorCode BlockMAXPY(PetscInt n, PetscInt nv, const PetscScalar *const *V, PetscInt nw, PetscScalar *const *W, const PetscScalar *coef, const PetscScalar *scale)
{
  const PetscInt  ld   = nv + nw;
  const Partition part = PartitionRows(n, 1);
  cudaStream_t    stream;

  PetscFunctionBegin;
  PetscCall(CheckBlockArgs(n, nv, V, nw, W));
  PetscCheck(coef && scale, PETSC_COMM_SELF, PETSC_ERR_ARG_NULL, "The block multi-axpy needs its coefficients and scales");
  if (!part.nblocks) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(GetStream(&stream));
  for (PetscInt j0 = 0; j0 < nw; j0 += TILE_W) {
    const int      ncols = (int)PetscMin((PetscInt)TILE_W, nw - j0);
    const PetscInt nleft = nv + j0; /* V and the columns of the earlier tiles */
    const PetscInt per   = PetscMin((PetscInt)BLOCK_AXPY_LEFT, (PetscInt)(BLOCK_AXPY_COEF / ncols));
    BlockAXPYTable table = {};

    for (int j = 0; j < ncols; ++j) table.col[j] = W[j0 + j];
    for (PetscInt first = 0;; first += per) {
      const int  count = (int)PetscMin(per, nleft - first);
      const bool last  = first + count == nleft;

      for (int l = 0; l < count; ++l) {
        table.left[l] = first + l < nv ? V[first + l] : W[first + l - nv];
        for (int j = 0; j < ncols; ++j) table.coef[l * ncols + j] = coef[(j0 + j) * ld + first + l];
      }
      if (last)
        for (int j = 0; j < ncols; ++j) {
          for (int k = 0; k < j; ++k) table.tri[j * (j - 1) / 2 + k] = coef[(j0 + j) * ld + nv + j0 + k];
          table.scale[j] = scale[j0 + j];
        }
      BlockMAXPYKernel<<<part.nblocks, BLOCK_SIZE, 0, stream>>>(n, part.chunk, table, count, ncols, last);
      FusedKSPCheckLaunch();
      counters.launches++;
      if (last) break;
    }
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

} // namespace cuda
} // namespace fusedksp
