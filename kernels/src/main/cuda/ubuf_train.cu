// What a training step needs around the layers (ubuf demo): the mean-squared-error loss's gradient with the loss's
// per-row partial sums, and a plain SGD step from fp32 gradients into weights of the layers' dtype. Scalar loops:
// both touch each element once per step, far below the GEMMs' cost, so vector paths would buy nothing measurable.
#include "ubuf_layer_common.cuh"

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
    /* ubuf_sgd_<t>: w[r][c] -= lr * g[r][c], g fp32, the difference rounded once to T. Grid-stride. */         \
    extern "C" __global__ void __launch_bounds__(UBUF_MAX_THREADS)                                               \
    ubuf_sgd_##SUFFIX(long long rows, long long cols, T* w, long long ldW, const float* g, long long ldG,        \
                      float lr) {                                                                                \
        const long long n = rows * cols;                                                                         \
        for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;                              \
             i += (long long)gridDim.x * blockDim.x) {                                                           \
            const long long r = i / cols, c = i - r * cols;                                                      \
            T* const p = w + r * ldW + c;                                                                        \
            *p = ubuf::Elem<T>::store(ubuf::Elem<T>::load(*p) - lr * g[r * ldG + c]);                            \
        }                                                                                                        \
    }

UBUF_TRAIN_KERNELS(f32, float)
UBUF_TRAIN_KERNELS(f16, __half)
UBUF_TRAIN_KERNELS(bf16, __nv_bfloat16)

#undef UBUF_TRAIN_KERNELS
