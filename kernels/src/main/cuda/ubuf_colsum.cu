// Column sums over rows, deterministic: bias gradients (db[c] = sum over rows of dy[r][c]) and the finishing step
// of LayerNorm's dgamma/dbeta. Step 1 writes fp32 partial sums, one row per part of rowsPerPart rows; step 2 adds
// the parts in order into the output row, optionally onto its old value (gradient accumulation).
#include "ubuf_layer_common.cuh"

namespace ubuf {

// part[p][c] = sum, in row order, of src[r][c] over the rows of part p. Same work split as
// layernorm_bwd_params_partial: a thread per (part, column), (part, column tile) items grid-stride.
template <class T>
__device__ __forceinline__ void col_sums_partial(i64 rows, i64 cols, const T* src, i64 ld, i64 rowsPerPart,
                                                 float* part, i64 ldPart) {
    if (rows <= 0 || cols <= 0 || rowsPerPart <= 0) return;
    const i64 parts = (rows + rowsPerPart - 1) / rowsPerPart;
    const i64 tiles = (cols + blockDim.x - 1) / blockDim.x;
    for (i64 item = blockIdx.x; item < parts * tiles; item += gridDim.x) {
        const i64 p = item / tiles;
        const i64 c = (item - p * tiles) * blockDim.x + threadIdx.x;
        if (c >= cols) continue;
        const i64 r0 = p * rowsPerPart;
        const i64 r1 = r0 + rowsPerPart < rows ? r0 + rowsPerPart : rows;
        float acc = 0.f;
        for (i64 r = r0; r < r1; ++r) acc += Elem<T>::load(src[r * ld + c]);
        part[p * ldPart + c] = acc;
    }
}

// dst[c] = round_D((accumulate ? dst[c] : 0) + ((part[0][c] + part[1][c]) + ... + part[parts-1][c])): the parts
// summed in order first, then added to the old value; a thread per column, grid-stride.
template <class D>
__device__ __forceinline__ void col_sums_f32(i64 parts, i64 cols, const float* part, i64 ldPart, D* dst,
                                             int accumulate) {
    if (parts <= 0 || cols <= 0) return;
    for (i64 c = global_thread(); c < cols; c += grid_threads()) {
        float acc = part[c];
        for (i64 p = 1; p < parts; ++p) acc += part[p * ldPart + c];
        if (accumulate) acc = Elem<D>::load(dst[c]) + acc;
        dst[c] = Elem<D>::store(acc);
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
    }

UBUF_COL_SUMS_PARTIAL_KERNEL(f32, float)
UBUF_COL_SUMS_PARTIAL_KERNEL(f16, __half)
UBUF_COL_SUMS_PARTIAL_KERNEL(bf16, __nv_bfloat16)
UBUF_COL_SUMS_KERNEL(f32, float)
UBUF_COL_SUMS_KERNEL(f16, __half)
UBUF_COL_SUMS_KERNEL(bf16, __nv_bfloat16)

#undef UBUF_COL_SUMS_PARTIAL_KERNEL
#undef UBUF_COL_SUMS_KERNEL
