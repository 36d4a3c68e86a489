// Activations of the MLP block, element-wise in fp32 with one rounding per output: GELU with the tanh
// approximation (as Megatron-LM and TE use it), a fused bias + GELU forward, and SwiGLU (silu(a) * b over the two
// column halves of the fc1 output, a the first half).
#include "ubuf_layer_common.cuh"

namespace ubuf {

// gelu(x) = 0.5 x (1 + tanh(k0 (x + k1 x^3))), k0 = sqrt(2 / pi), k1 = 0.044715.
constexpr float GELU_K0 = 0.7978845608028654f;
constexpr float GELU_K1 = 0.044715f;

__device__ __forceinline__ float gelu_tanh(float x) {
    const float u = GELU_K0 * (x + GELU_K1 * x * x * x);
    return 0.5f * x * (1.f + tanhf(u));
}

// d gelu / dx = 0.5 (1 + t) + 0.5 x (1 - t^2) k0 (1 + 3 k1 x^2), t = tanh(u). Where tanh has saturated to +-1 the
// second term is 0 (written so, or x^3 overflowing to inf would make it 0 * inf = NaN).
__device__ __forceinline__ float gelu_tanh_grad(float x) {
    const float u = GELU_K0 * (x + GELU_K1 * x * x * x);
    const float t = tanhf(u);
    const float sech2 = 1.f - t * t;
    const float inner = sech2 == 0.f ? 0.f : 0.5f * x * sech2 * GELU_K0 * (1.f + 3.f * GELU_K1 * x * x);
    return 0.5f * (1.f + t) + inner;
}

// sigmoid(a) = 1 / (1 + exp(-a)): exp overflows to inf for a < -88, giving exactly 0, never NaN.
__device__ __forceinline__ float sigmoid(float a) {
    return 1.f / (1.f + expf(-a));
}

struct GeluFwd {
    __device__ __forceinline__ void operator()(const float (&x)[1], float (&y)[1]) const { y[0] = gelu_tanh(x[0]); }
};

// inputs (dy, x) -> dx
struct GeluBwd {
    __device__ __forceinline__ void operator()(const float (&x)[2], float (&y)[1]) const {
        y[0] = x[0] * gelu_tanh_grad(x[1]);
    }
};

// inputs (x, bias) -> y = gelu(x + bias), computed from the unrounded fp32 sum
struct BiasGeluFwd {
    __device__ __forceinline__ void operator()(const float (&x)[2], float (&y)[1]) const {
        y[0] = gelu_tanh(x[0] + x[1]);
    }
};

// inputs (x, bias) -> (y, pre): pre = x + bias, the pre-activation the backward needs
struct BiasGeluFwdPre {
    __device__ __forceinline__ void operator()(const float (&x)[2], float (&y)[2]) const {
        const float z = x[0] + x[1];
        y[0] = gelu_tanh(z);
        y[1] = z;
    }
};

// inputs (a, b) -> silu(a) * b
struct SwigluFwd {
    __device__ __forceinline__ void operator()(const float (&x)[2], float (&y)[1]) const {
        y[0] = x[0] * sigmoid(x[0]) * x[1];
    }
};

// inputs (dy, a, b) -> (da, db): da = dy * b * silu'(a), db = dy * silu(a), silu'(a) = s (1 + a (1 - s)).
struct SwigluBwd {
    __device__ __forceinline__ void operator()(const float (&x)[3], float (&y)[2]) const {
        const float dy = x[0], a = x[1], b = x[2];
        const float s = sigmoid(a);
        y[0] = dy * b * (s * (1.f + a * (1.f - s)));
        y[1] = dy * (a * s);
    }
};

}  // namespace ubuf

#define UBUF_ACTIVATION_KERNELS(SUFFIX, T)                                                                       \
    extern "C" __global__ void __launch_bounds__(UBUF_MAX_THREADS)                                               \
    ubuf_gelu_fwd_##SUFFIX(long long rows, long long cols, const T* x, long long ldX, T* y, long long ldY) {     \
        const T* const in[1] = {x};                                                                              \
        const long long ldIn[1] = {ldX};                                                                         \
        T* const out[1] = {y};                                                                                   \
        const long long ldOut[1] = {ldY};                                                                        \
        ubuf::map_elements<T, 1, 1>(rows, cols, in, ldIn, out, ldOut, ubuf::GeluFwd());                          \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(UBUF_MAX_THREADS)                                               \
    ubuf_gelu_bwd_##SUFFIX(long long rows, long long cols, const T* dy, long long ldDy, const T* x,              \
                           long long ldX, T* dx, long long ldDx) {                                               \
        const T* const in[2] = {dy, x};                                                                          \
        const long long ldIn[2] = {ldDy, ldX};                                                                   \
        T* const out[1] = {dx};                                                                                  \
        const long long ldOut[1] = {ldDx};                                                                       \
        ubuf::map_elements<T, 2, 1>(rows, cols, in, ldIn, out, ldOut, ubuf::GeluBwd());                          \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(UBUF_MAX_THREADS)                                               \
    ubuf_bias_gelu_fwd_##SUFFIX(long long rows, long long cols, const T* x, long long ldX, const T* bias,        \
                                T* y, long long ldY, T* pre, long long ldPre) {                                  \
        const T* const in[2] = {x, bias};                                                                        \
        const long long ldIn[2] = {ldX, 0}; /* ld 0: the bias row is broadcast */                                \
        if (pre == nullptr) {                                                                                    \
            T* const out[1] = {y};                                                                               \
            const long long ldOut[1] = {ldY};                                                                    \
            ubuf::map_elements<T, 2, 1>(rows, cols, in, ldIn, out, ldOut, ubuf::BiasGeluFwd());                  \
        } else {                                                                                                 \
            T* const out[2] = {y, pre};                                                                          \
            const long long ldOut[2] = {ldY, ldPre};                                                             \
            ubuf::map_elements<T, 2, 2>(rows, cols, in, ldIn, out, ldOut, ubuf::BiasGeluFwdPre());               \
        }                                                                                                        \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(UBUF_MAX_THREADS)                                               \
    ubuf_swiglu_fwd_##SUFFIX(long long rows, long long cols, const T* x, long long ldX, T* y, long long ldY) {   \
        const T* const in[2] = {x, x + cols};                                                                    \
        const long long ldIn[2] = {ldX, ldX};                                                                    \
        T* const out[1] = {y};                                                                                   \
        const long long ldOut[1] = {ldY};                                                                        \
        ubuf::map_elements<T, 2, 1>(rows, cols, in, ldIn, out, ldOut, ubuf::SwigluFwd());                        \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(UBUF_MAX_THREADS)                                               \
    ubuf_swiglu_bwd_##SUFFIX(long long rows, long long cols, const T* dy, long long ldDy, const T* x,            \
                             long long ldX, T* dx, long long ldDx) {                                             \
        const T* const in[3] = {dy, x, x + cols};                                                                \
        const long long ldIn[3] = {ldDy, ldX, ldX};                                                              \
        T* const out[2] = {dx, dx + cols};                                                                       \
        const long long ldOut[2] = {ldDx, ldDx};                                                                 \
        ubuf::map_elements<T, 3, 2>(rows, cols, in, ldIn, out, ldOut, ubuf::SwigluBwd());                        \
    }

UBUF_ACTIVATION_KERNELS(f32, float)
UBUF_ACTIVATION_KERNELS(f16, __half)
UBUF_ACTIVATION_KERNELS(bf16, __nv_bfloat16)

#undef UBUF_ACTIVATION_KERNELS
