// Column sums over rows, deterministic: bias gradients (db[c] = sum over rows of dy[r][c]) and the finishing step
// of LayerNorm's dgamma/dbeta. Step 1 writes fp32 partial sums, one row per part of rowsPerPart rows; step 2 adds
// the parts in a fixed order into the output row, optionally onto its old value (gradient accumulation).
#include "ubuf_layer_common.cuh"

namespace ubuf {

// part[p][c] = sum, in row order, of src[r][c] over the rows of part p. A thread owns one (part, column group of
// 16 bytes' worth of columns) and reads it with one 16-byte load per row on the vector path (coalesced: a warp
// reads 512 contiguous bytes of a row); blocks take (part, tile of blockDim groups) items grid-stride, so the sums
// do not depend on the grid. The row loop is unrolled so eight rows' loads are in flight per thread.
template <class T>
__device__ __forceinline__ void col_sums_partial(i64 rows, i64 cols, const T* src, i64 ld, i64 rowsPerPart,
                                                 float* part, i64 ldPart) {
    if (rows <= 0 || cols <= 0 || rowsPerPart <= 0) return;
    using G = ColGroups<T>;
    constexpr int N = G::N;
    const bool vec = cols % N == 0 && rows_aligned16<T>(src, ld);
    const i64 groups = G::count(cols);
    const i64 parts = (rows + rowsPerPart - 1) / rowsPerPart;
    const i64 tiles = (groups + blockDim.x - 1) / blockDim.x;
    for (i64 item = blockIdx.x; item < parts * tiles; item += gridDim.x) {
        const i64 p = item / tiles;
        const i64 g = (item - p * tiles) * blockDim.x + threadIdx.x;
        if (g >= groups) continue;
        const int valid = G::valid(g, cols);
        const i64 r0 = p * rowsPerPart;
        const i64 r1 = r0 + rowsPerPart < rows ? r0 + rowsPerPart : rows;
        float acc[N];
#pragma unroll
        for (int i = 0; i < N; ++i) acc[i] = 0.f;
#pragma unroll 8
        for (i64 r = r0; r < r1; ++r) {
            float v[N];
            G::load(src + r * ld, g, valid, vec, v);
#pragma unroll
            for (int i = 0; i < N; ++i) acc[i] += v[i];
        }
        float* out = part + p * ldPart + g * N;
#pragma unroll
        for (int i = 0; i < N; ++i) {
            if (i < valid) out[i] = acc[i];
        }
    }
}

// dst[c] = round_D((accumulate ? dst[c] : 0) + sum of part[p][c] over p < parts) for the 32 columns of one tile
// (lane = column): warp w adds parts w, w + warps, ... in increasing order, then warp 0 adds the warps' sums in warp
// order and, last, the old value: a fixed order for a given blockDim (a multiple of 32), whatever the grid.
template <class D>
__device__ __forceinline__ void col_sums_f32_tile(i64 tile, i64 parts, i64 cols, const float* part, i64 ldPart,
                                                  D* dst, int accumulate, float (*warpSums)[32]) {
    const int lane = (int)(threadIdx.x & 31);
    const int warp = (int)(threadIdx.x >> 5);
    const int warps = (int)(blockDim.x >> 5);
    const i64 c = tile * 32 + lane;
    float acc = 0.f;
    if (c < cols) {
#pragma unroll 8
        for (i64 p = warp; p < parts; p += warps) acc += part[p * ldPart + c];
    }
    warpSums[warp][lane] = acc;
    __syncthreads();
    if (warp == 0 && c < cols) {
        float total = warpSums[0][lane];
        for (int w = 1; w < warps; ++w) total += warpSums[w][lane];
        if (accumulate) total = Elem<D>::load(dst[c]) + total;
        dst[c] = Elem<D>::store(total);
    }
    __syncthreads();
}

// The column sums of one set of parts: a block takes tiles of 32 columns, grid-stride. Does nothing unless blockDim
// is a multiple of 32.
template <class D>
__device__ __forceinline__ void col_sums_f32(i64 parts, i64 cols, const float* part, i64 ldPart, D* dst,
                                             int accumulate) {
    if (parts <= 0 || cols <= 0 || (blockDim.x & 31) != 0) return;
    __shared__ float warpSums[MAX_WARPS][32];
    const i64 tiles = (cols + 31) / 32;
    for (i64 tile = blockIdx.x; tile < tiles; tile += gridDim.x)
        col_sums_f32_tile<D>(tile, parts, cols, part, ldPart, dst, accumulate, warpSums);
}

// Two sets of parts of the same shape (LayerNorm's dgamma and dbeta) in one launch: tiles [0, tiles) are the first
// set's, [tiles, 2 tiles) the second's, each summed as col_sums_f32 sums it. One launch instead of two halves the
// fixed cost of a pass that is mostly latency (two launches took 10.5 us, one 5.2, at 256 parts of 4096 columns on
// an H200).
template <class D>
__device__ __forceinline__ void col_sums2_f32(i64 parts, i64 cols, const float* partA, const float* partB,
                                              i64 ldPart, D* dstA, D* dstB, int accumulate) {
    if (parts <= 0 || cols <= 0 || (blockDim.x & 31) != 0) return;
    __shared__ float warpSums[MAX_WARPS][32];
    const i64 tiles = (cols + 31) / 32;
    for (i64 tile = blockIdx.x; tile < 2 * tiles; tile += gridDim.x) {
        if (tile < tiles) col_sums_f32_tile<D>(tile, parts, cols, partA, ldPart, dstA, accumulate, warpSums);
        else col_sums_f32_tile<D>(tile - tiles, parts, cols, partB, ldPart, dstB, accumulate, warpSums);
    }
}

}  // namespace ubuf

#define UBUF_COL_SUMS_PARTIAL_KERNEL(SUFFIX, T)                                                              \
    extern "C" __global__ void __launch_bounds__(UBUF_MAX_THREADS)                                           \
    ubuf_col_sums_partial_##SUFFIX(long long rows, long long cols, const T* src, long long ld,               \
                                   long long rowsPerPart, float* part, long long ldPart) {                   \
        ubuf::col_sums_partial<T>(rows, cols, src, ld, rowsPerPart, part, ldPart);                           \
    }

#define UBUF_COL_SUMS_KERNEL(SUFFIX, D)                                                                      \
    extern "C" __global__ void __launch_bounds__(UBUF_MAX_THREADS)                                           \
    ubuf_col_sums_f32_to_##SUFFIX(long long parts, long long cols, const float* part, long long ldPart,      \
                                  D* dst, int accumulate) {                                                  \
        ubuf::col_sums_f32<D>(parts, cols, part, ldPart, dst, accumulate);                                   \
    }                                                                                                        \
    extern "C" __global__ void __launch_bounds__(UBUF_MAX_THREADS)                                           \
    ubuf_col_sums2_f32_to_##SUFFIX(long long parts, long long cols, const float* partA, const float* partB,  \
                                   long long ldPart, D* dstA, D* dstB, int accumulate) {                    \
        ubuf::col_sums2_f32<D>(parts, cols, partA, partB, ldPart, dstA, dstB, accumulate);                  \
    }

UBUF_COL_SUMS_PARTIAL_KERNEL(f32, float)
UBUF_COL_SUMS_PARTIAL_KERNEL(f16, __half)
UBUF_COL_SUMS_PARTIAL_KERNEL(bf16, __nv_bfloat16)
UBUF_COL_SUMS_KERNEL(f32, float)
UBUF_COL_SUMS_KERNEL(f16, __half)
UBUF_COL_SUMS_KERNEL(bf16, __nv_bfloat16)

#undef UBUF_COL_SUMS_PARTIAL_KERNEL
#undef UBUF_COL_SUMS_KERNEL
