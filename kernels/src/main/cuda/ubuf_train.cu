// What a training step needs around the layers (ubuf demo): the mean-squared-error loss's gradient with the loss's
// per-row partial sums, and a plain SGD step from fp32 gradients into weights of the layers' dtype (which also clears
// the gradients). The loss gradient is a scalar loop; the SGD step, over every parameter, has a vector path.
#include "ubuf_layer_common.cuh"

namespace ubuf {

// w[r][c] = round_T(w[r][c] - lr * g[r][c]); then, with zeroGrad, g[r][c] = 0. 16-byte vectors of w (and the
// matching fp32 words of g) when cols is a multiple of the vector and both views' rows are 16-aligned: the update
// moves every byte of w and g once, so the scalar loop's per-element index division was its cost.
template <class T>
__device__ __forceinline__ void sgd_rows(i64 rows, i64 cols, T* w, i64 ldW, float* g, i64 ldG, float lr,
                                         int zeroGrad) {
    if (rows <= 0 || cols <= 0) return;
    constexpr int N = VecWidth<T, float>::N;
    if (cols % N == 0 && rows_aligned16<T>(w, ldW) && rows_aligned16<float>(g, ldG)) {
        const float zeros[N] = {};
        for (RowColPair it(cols / N); it.a.row < rows; it.next()) {
            const bool hasB = it.b.row < rows;
            T* wa = w + it.a.row * ldW + it.a.col * N;
            T* wb = w + it.b.row * ldW + it.b.col * N;
            float* ga = g + it.a.row * ldG + it.a.col * N;
            float* gb = g + it.b.row * ldG + it.b.col * N;
            float va[N], da[N], vb[N], db[N];
            load_vec<T, N>(wa, va);
            load_vec<float, N>(ga, da);
            if (hasB) {
                load_vec<T, N>(wb, vb);
                load_vec<float, N>(gb, db);
            }
#pragma unroll
            for (int i = 0; i < N; ++i) va[i] = va[i] - lr * da[i];
            store_vec<T, N>(wa, va);
            if (zeroGrad) store_vec<float, N>(ga, zeros);
            if (hasB) {
#pragma unroll
                for (int i = 0; i < N; ++i) vb[i] = vb[i] - lr * db[i];
                store_vec<T, N>(wb, vb);
                if (zeroGrad) store_vec<float, N>(gb, zeros);
            }
        }
    } else {
        for (RowColIter it(cols); it.row < rows; it.next()) {
            T* const p = w + it.row * ldW + it.col;
            float* const q = g + it.row * ldG + it.col;
            *p = Elem<T>::store(Elem<T>::load(*p) - lr * *q);
            if (zeroGrad) *q = 0.f;
        }
    }
}

}  // namespace ubuf

// ubuf_mse_grad_<t>: for each row r (one block per row, grid-stride over rows), with d = y - target in fp32:
//   dy[r][c] = scale * d          (scale = 2 / numel of the whole loss, numel over every rank)
//   rowSq[r] = sum over c of d^2  (fp32, a deterministic block sum; the caller adds the rows up on the host)
// dy may be y itself (each element is read before it is written, by the same thread). blockDim.x must be a
// multiple of 32 (block_sum's whole warps); the launcher uses 256.
#define UBUF_TRAIN_KERNELS(SUFFIX, T)                                                                            \
    extern "C" __global__ void __launch_bounds__(UBUF_MAX_THREADS)                                               \
    ubuf_mse_grad_##SUFFIX(long long rows, long long cols, const T* y, long long ldY, const T* target,           \
                           long long ldT, float scale, T* dy, long long ldDy, float* rowSq) {                    \
        __shared__ float scratch[ubuf::MAX_WARPS];                                                               \
        if ((blockDim.x & 31u) != 0u) return;                                                                    \
        for (long long r = blockIdx.x; r < rows; r += gridDim.x) {                                               \
            float acc = 0.f;                                                                                     \
            for (long long c = threadIdx.x; c < cols; c += blockDim.x) {                                         \
                const float d = ubuf::Elem<T>::load(y[r * ldY + c]) - ubuf::Elem<T>::load(target[r * ldT + c]);  \
                dy[r * ldDy + c] = ubuf::Elem<T>::store(scale * d);                                              \
                acc += d * d;                                                                                    \
            }                                                                                                    \
            const float total = ubuf::block_sum(acc, scratch);                                                   \
            if (threadIdx.x == 0) rowSq[r] = total;                                                              \
        }                                                                                                        \
    }                                                                                                            \
    /* ubuf_sgd_<t>: w[r][c] -= lr * g[r][c], g fp32, the difference rounded once to T; with zeroGrad, g[r][c] = 0  \
       after it is read (the step's gradients cleared for the next, in the same pass). */                       \
    extern "C" __global__ void __launch_bounds__(UBUF_MAX_THREADS)                                               \
    ubuf_sgd_##SUFFIX(long long rows, long long cols, T* w, long long ldW, float* g, long long ldG, float lr,   \
                      int zeroGrad) {                                                                            \
        ubuf::sgd_rows<T>(rows, cols, w, ldW, g, ldG, lr, zeroGrad);                                             \
    }

UBUF_TRAIN_KERNELS(f32, float)
UBUF_TRAIN_KERNELS(f16, __half)
UBUF_TRAIN_KERNELS(bf16, __nv_bfloat16)

#undef UBUF_TRAIN_KERNELS
