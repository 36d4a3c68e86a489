// Row-broadcast bias add: the epilogue of a GEMM whose bias was not fused.
#include "ubuf_common.cuh"

namespace ubuf {

// out[r][c] = round(out[r][c] + bias[c]), the sum in fp32. bias has cols elements and must not overlap out.
template <class T>
__device__ __forceinline__ void add_bias_rows(T* out, i64 rows, i64 cols, i64 ld, const T* bias) {
    if (rows <= 0 || cols <= 0) return;
    constexpr int N = VecWidth<T, T>::N;
    if (cols % N == 0 && rows_aligned16<T>(out, ld) && aligned16(bias)) {
        for (RowColIter it(cols / N); it.row < rows; it.next()) {
            T* o = out + it.row * ld + it.col * N;
            float v[N], b[N];
            load_vec<T, N>(o, v);
            load_vec<T, N>(bias + it.col * N, b);
#pragma unroll
            for (int i = 0; i < N; ++i) v[i] += b[i];
            store_vec<T, N>(o, v);
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
