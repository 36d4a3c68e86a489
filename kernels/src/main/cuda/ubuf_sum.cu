// Element-wise sums of up to 8 row-major matrices into one, fp32 accumulation, one rounding at the store.
// One kernel serves the ring reduce-scatter tail (k local partial chunks) and the pull reduce-scatter (the
// same chunk of k peers' buffers, read through peer access or VMM mappings).
#include "ubuf_common.cuh"

// Passed BY VALUE as the first kernel parameter: 64 bytes, 8-byte aligned, p[j] at byte offset 8*j.
// Entries at j >= k are never read (pass 0).
struct SumSources {
    const void* p[8];
};
static_assert(sizeof(SumSources) == 64, "SumSources is 64 bytes: the Java side marshals 8 longs");
static_assert(alignof(SumSources) == 8, "SumSources is 8-byte aligned");

namespace ubuf {

// acc = ((src_0 + src_1) + ...) + src_{k-1} at N consecutive elements from offset off of every source.
template <class S, int N>
__device__ __forceinline__ void sum_sources_vec(const SumSources& srcs, int k, i64 off, float (&acc)[N]) {
    load_vec<S, N>(static_cast<const S*>(srcs.p[0]) + off, acc);
#pragma unroll
    for (int j = 1; j < 8; ++j) {
        if (j < k) {
            float v[N];
            load_vec<S, N>(static_cast<const S*>(srcs.p[j]) + off, v);
#pragma unroll
            for (int i = 0; i < N; ++i) acc[i] += v[i];
        }
    }
}

// d[0..N) = (accumulate ? d[0..N) + acc : acc), rounded once; with a bias (b non-null, N values), the rounded sum
// plus the bias, rounded again: bit for bit the sum followed by ubuf_add_bias, in one pass over d.
template <class D, int N>
__device__ __forceinline__ void finish_vec(D* d, float (&acc)[N], int accumulate, const D* b) {
    if (accumulate) {
        float old[N];
        load_vec<D, N>(d, old);
#pragma unroll
        for (int i = 0; i < N; ++i) acc[i] = old[i] + acc[i];
    }
    if (b != nullptr) {
        float bv[N];
        load_vec<D, N>(b, bv);
#pragma unroll
        for (int i = 0; i < N; ++i) acc[i] = Elem<D>::load(Elem<D>::store(acc[i])) + bv[i];
    }
    store_vec<D, N>(d, acc);
}

// One element of the sums below: *d = the sources at off summed in index order, then dst and the bias as finish_vec
// adds them, one element at a time (the walks' element-wise paths).
template <class S, class D>
__device__ __forceinline__ void sum_element(const SumSources& srcs, int k, i64 off, D* d, int accumulate,
                                            const D* b) {
    float acc = Elem<S>::load(static_cast<const S*>(srcs.p[0])[off]);
#pragma unroll
    for (int j = 1; j < 8; ++j) {
        if (j < k) acc += Elem<S>::load(static_cast<const S*>(srcs.p[j])[off]);
    }
    if (accumulate) acc = Elem<D>::load(*d) + acc;
    if (b != nullptr) acc = Elem<D>::load(Elem<D>::store(acc)) + Elem<D>::load(*b);
    *d = Elem<D>::store(acc);
}

// dst[r][c] = (accumulate ? dst[r][c] : 0) + (((src_0 + src_1) + ...) + src_{k-1})[r][c], in fp32, with
// the sources summed in index order first (deterministic) and dst added last. dst may be one of the sources
// (same pointer and ld: every element is read before it is written by the same thread) but must not
// otherwise overlap them. With bias (cols values, or null) each element is then rounded, plus bias[c], rounded
// again, as a separate ubuf_add_bias would leave it.
template <class S, class D>
__device__ __forceinline__ void sum_rows(const SumSources& srcs, int k, i64 rows, i64 cols, i64 srcLd,
                                         D* dst, i64 dstLd, int accumulate, const D* bias) {
    if (k < 1 || k > 8 || rows <= 0 || cols <= 0) return;  // the host validates; never read past p[7]
    constexpr int N = VecWidth<S, D>::N;
    bool vec = cols % N == 0 && rows_aligned16<D>(dst, dstLd) && (bias == nullptr || aligned16(bias));
#pragma unroll
    for (int j = 0; j < 8; ++j) {
        if (j < k) vec = vec && rows_aligned16<S>(srcs.p[j], srcLd);
    }
    if (vec) {
        for (RowColPair it(cols / N); it.a.row < rows; it.next()) {
            const bool hasB = it.b.row < rows;
            float accA[N], accB[N];
            sum_sources_vec<S, N>(srcs, k, it.a.row * srcLd + it.a.col * N, accA);
            if (hasB) sum_sources_vec<S, N>(srcs, k, it.b.row * srcLd + it.b.col * N, accB);
            D* dA = dst + it.a.row * dstLd + it.a.col * N;
            D* dB = dst + it.b.row * dstLd + it.b.col * N;
            finish_vec<D, N>(dA, accA, accumulate, bias == nullptr ? nullptr : bias + it.a.col * N);
            if (hasB) finish_vec<D, N>(dB, accB, accumulate, bias == nullptr ? nullptr : bias + it.b.col * N);
        }
    } else {
        for (RowColIter it(cols); it.row < rows; it.next()) {
            sum_element<S, D>(srcs, k, it.row * srcLd + it.col, dst + it.row * dstLd + it.col, accumulate,
                              bias == nullptr ? nullptr : bias + it.col);
        }
    }
}

// sum_rows over views whose elements are contiguous (every ld == cols, the reduce-scatters' slots and output rows):
// one 16-byte word of the narrower type a thread, on a one-shot grid of small blocks, so few registers stay live and
// an SM holds its full 2048 threads (the walk that took GELU from 86% of a copy's speed to the copy's); the same
// sums in the same order, so the same bits. n = rows * cols elements; cols only places the bias.
template <class S, class D>
__device__ __forceinline__ void sum_dense(const SumSources& srcs, int k, i64 n, i64 cols, D* dst, int accumulate,
                                          const D* bias) {
    if (k < 1 || k > 8 || n <= 0 || cols <= 0) return;  // the host validates; never read past p[7]
    constexpr int N = VecWidth<S, D>::N;
    bool vec = cols % N == 0 && aligned16(dst) && (bias == nullptr || aligned16(bias));
#pragma unroll
    for (int j = 0; j < 8; ++j) {
        if (j < k) vec = vec && aligned16(srcs.p[j]);
    }
    const i64 words = vec ? n / N : 0;
    const i64 stride = grid_threads();
    for (i64 w = global_thread(); w < words; w += stride) {
        float acc[N];
        sum_sources_vec<S, N>(srcs, k, w * N, acc);
        finish_vec<D, N>(dst + w * N, acc, accumulate, bias == nullptr ? nullptr : bias + (w * N) % cols);
    }
    for (i64 e = words * N + global_thread(); e < n; e += stride) {
        sum_element<S, D>(srcs, k, e, dst + e, accumulate, bias == nullptr ? nullptr : bias + e % cols);
    }
}

}  // namespace ubuf

#define UBUF_SUM_DENSE_KERNEL(NAME, S, D)                                                               \
    extern "C" __global__ void __launch_bounds__(UBUF_MAX_THREADS)                                      \
    NAME(SumSources srcs, int k, long long n, long long cols, D* dst, int accumulate, const D* bias) {  \
        ubuf::sum_dense<S, D>(srcs, k, n, cols, dst, accumulate, bias);                                 \
    }

UBUF_SUM_DENSE_KERNEL(ubuf_sum_dense_f32, float, float)
UBUF_SUM_DENSE_KERNEL(ubuf_sum_dense_f16, __half, __half)
UBUF_SUM_DENSE_KERNEL(ubuf_sum_dense_bf16, __nv_bfloat16, __nv_bfloat16)
UBUF_SUM_DENSE_KERNEL(ubuf_sum_dense_f32_to_f16, float, __half)
UBUF_SUM_DENSE_KERNEL(ubuf_sum_dense_f32_to_bf16, float, __nv_bfloat16)

#undef UBUF_SUM_DENSE_KERNEL

#define UBUF_SUM_KERNEL(NAME, S, D)                                                                     \
    extern "C" __global__ void __launch_bounds__(UBUF_MAX_THREADS)                                      \
    NAME(SumSources srcs, int k, long long rows, long long cols, long long srcLd, D* dst, long long dstLd, \
         int accumulate, const D* bias) {                                                               \
        ubuf::sum_rows<S, D>(srcs, k, rows, cols, srcLd, dst, dstLd, accumulate, bias);                 \
    }

// Same-type sums: partials in the output type.
UBUF_SUM_KERNEL(ubuf_sum_f32, float, float)
UBUF_SUM_KERNEL(ubuf_sum_f16, __half, __half)
UBUF_SUM_KERNEL(ubuf_sum_bf16, __nv_bfloat16, __nv_bfloat16)
// fp32 partials summed into a 16-bit output (fp32 -> fp32 is ubuf_sum_f32).
UBUF_SUM_KERNEL(ubuf_sum_f32_to_f16, float, __half)
UBUF_SUM_KERNEL(ubuf_sum_f32_to_bf16, float, __nv_bfloat16)

#undef UBUF_SUM_KERNEL
