// Row-broadcast bias add: the epilogue of a GEMM whose bias was not fused.
#include "ubuf_common.cuh"

namespace ubuf {

// out[r][c] = round(out[r][c] + bias[c]), the sum in fp32. bias has cols elements and must not overlap out.
template <class T>
__device__ __forceinline__ void add_bias_rows(T* out, i64 rows, i64 cols, i64 ld, const T* bias) {
    if (rows <= 0 || cols <= 0) return;
    constexpr int N = VecWidth<T, T>::N;
    if (cols % N == 0 && rows_aligned16<T>(out, ld) && aligned16(bias)) {
        // Two items per thread per step, both loaded before either is stored: twice the loads in flight.
        for (RowColPair it(cols / N); it.a.row < rows; it.next()) {
            const bool hasB = it.b.row < rows;
            T* oa = out + it.a.row * ld + it.a.col * N;
            T* ob = out + it.b.row * ld + it.b.col * N;
            float va[N], ba[N], vb[N], bb[N];
            load_vec<T, N>(oa, va);
            load_vec<T, N>(bias + it.a.col * N, ba);
            if (hasB) {
                load_vec<T, N>(ob, vb);
                load_vec<T, N>(bias + it.b.col * N, bb);
            }
#pragma unroll
            for (int i = 0; i < N; ++i) va[i] += ba[i];
            store_vec<T, N>(oa, va);
            if (hasB) {
#pragma unroll
                for (int i = 0; i < N; ++i) vb[i] += bb[i];
                store_vec<T, N>(ob, vb);
            }
        }
    } else {
        for (RowColIter it(cols); it.row < rows; it.next()) {
            T* o = out + it.row * ld + it.col;
            *o = Elem<T>::store(Elem<T>::load(*o) + Elem<T>::load(bias[it.col]));
        }
    }
}

}  // namespace ubuf

#define UBUF_BIAS_KERNEL(NAME, T)                                                                  \
    extern "C" __global__ void __launch_bounds__(UBUF_MAX_THREADS)                                 \
    NAME(T* out, long long rows, long long cols, long long ld, const T* bias) {                    \
        ubuf::add_bias_rows<T>(out, rows, cols, ld, bias);                                         \
    }

UBUF_BIAS_KERNEL(ubuf_add_bias_f32, float)
UBUF_BIAS_KERNEL(ubuf_add_bias_f16, __half)
UBUF_BIAS_KERNEL(ubuf_add_bias_bf16, __nv_bfloat16)

#undef UBUF_BIAS_KERNEL
