// fp32 -> 16-bit conversion of a row-major matrix (e.g. an fp32 GEMM or reduction result to the model dtype).
#include "ubuf_common.cuh"

namespace ubuf {

// dst[r][c] = round(src[r][c]), to nearest even. src and dst must not overlap.
template <class D>
__device__ __forceinline__ void cast_rows(const float* src, i64 rows, i64 cols, i64 srcLd, D* dst, i64 dstLd) {
    if (rows <= 0 || cols <= 0) return;
    constexpr int N = VecWidth<float, D>::N;
    if (cols % N == 0 && rows_aligned16<float>(src, srcLd) && rows_aligned16<D>(dst, dstLd)) {
        for (RowColPair it(cols / N); it.a.row < rows; it.next()) {
            const bool hasB = it.b.row < rows;
            float a[N], b[N];
            load_vec<float, N>(src + it.a.row * srcLd + it.a.col * N, a);
            if (hasB) load_vec<float, N>(src + it.b.row * srcLd + it.b.col * N, b);
            store_vec<D, N>(dst + it.a.row * dstLd + it.a.col * N, a);
            if (hasB) store_vec<D, N>(dst + it.b.row * dstLd + it.b.col * N, b);
        }
    } else {
        for (RowColIter it(cols); it.row < rows; it.next()) {
            dst[it.row * dstLd + it.col] = Elem<D>::store(src[it.row * srcLd + it.col]);
        }
    }
}

}  // namespace ubuf

#define UBUF_CAST_KERNEL(NAME, D)                                                                      \
    extern "C" __global__ void __launch_bounds__(UBUF_MAX_THREADS)                                     \
    NAME(const float* src, long long rows, long long cols, long long srcLd, D* dst, long long dstLd) { \
        ubuf::cast_rows<D>(src, rows, cols, srcLd, dst, dstLd);                                        \
    }

UBUF_CAST_KERNEL(ubuf_cast_f32_to_f16, __half)
UBUF_CAST_KERNEL(ubuf_cast_f32_to_bf16, __nv_bfloat16)

#undef UBUF_CAST_KERNEL
