// Standalone probe (not part of the build), thirty-fourth session: the accuracy of the activations' fp32 math with
// the SFU's 2^x and 1 / x (ubuf_activation.cu: gelu_tanh, gelu_tanh_grad, sigmoid as the product computes them
// since this session) beside the formulas before it (tanhf, expf and IEEE division, copied below), each against
// the same function in double on the host, on a dense grid of x in [-16, 16] and at the edges (huge, infinite and
// NaN inputs). Prints, per function and formula, the largest absolute error, the largest error relative to
// (|f(x)| + 1) (the GPU tests allow 2^-17 = 7.6e-6 of |reference| + the output's RMS in fp32) and where it is, and
// any edge input whose result is not the reference's (a NaN where it should not be, or none where it should).
// Build and run:
//   nvcc -arch=sm_90 -O3 -std=c++17 -I../src/main/cuda gelu_math_probe.cu -o gelu_math && ./gelu_math
#include <cmath>
#include <cstdio>
#include <vector>

#include "../src/main/cuda/ubuf_activation.cu"
#include "probe_common.cuh"

namespace before {
constexpr float K0 = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float K1 = 0.044715f;

__device__ float gelu(float x) {
    const float u = K0 * (x + K1 * x * x * x);
    return 0.5f * x * (1.f + tanhf(u));
}

__device__ float gelu_grad(float x) {
    const float u = K0 * (x + K1 * x * x * x);
    const float t = tanhf(u);
    const float sech2 = 1.f - t * t;
    const float inner = sech2 == 0.f ? 0.f : 0.5f * x * sech2 * K0 * (1.f + 3.f * K1 * x * x);
    return 0.5f * (1.f + t) + inner;
}

__device__ float sigmoid(float a) { return 1.f / (1.f + expf(-a)); }
}  // namespace before

__device__ float silu_grad_of(float s, float a) { return s * (1.f + a * (1.f - s)); }

// out[f * n + i]: f = 0 gelu, 1 gelu', 2 sigmoid, 3 silu' (s (1 + a (1 - s)), as swiglu_grad), by the product's
// formulas (NEW) or the ones before (OLD).
template <bool NEW>
__global__ void eval(const float* x, long long n, float* out) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float v = x[i];
        const float s = NEW ? ubuf::sigmoid(v) : before::sigmoid(v);
        out[i] = NEW ? ubuf::gelu_tanh(v) : before::gelu(v);
        out[n + i] = NEW ? ubuf::gelu_tanh_grad(v) : before::gelu_grad(v);
        out[2 * n + i] = s;
        out[3 * n + i] = silu_grad_of(s, v);
    }
}

static double ref(int f, double x) {
    const double k0 = std::sqrt(2.0 / M_PI), k1 = 0.044715;
    const double u = k0 * (x + k1 * x * x * x);
    const double t = std::tanh(u);
    const double s = 1.0 / (1.0 + std::exp(-x));
    switch (f) {
        case 0: return 0.5 * x * (1.0 + t);
        case 1: {
            // 0.5 (1 + t) + 0.5 x (1 - t^2) k0 (1 + 3 k1 x^2), the last term 0 where 1 - t^2 underflows
            const double sech2 = 1.0 - t * t;
            return 0.5 * (1.0 + t) + (sech2 == 0.0 ? 0.0 : 0.5 * x * sech2 * k0 * (1.0 + 3.0 * k1 * x * x));
        }
        case 2: return s;
        default: return s * (1.0 + x * (1.0 - s));
    }
}

int main() {
    std::vector<float> xs;
    for (int i = -(16 << 14); i <= (16 << 14); ++i) xs.push_back((float)i / (1 << 14));  // step 2^-14
    const float edges[] = {1e13f, -1e13f, 1e20f, -1e20f, 3.0e38f, -3.0e38f, INFINITY, -INFINITY, NAN, 88.f, -88.f,
                           -89.f, 100.f, -100.f, 1e-30f, -1e-30f, 0.f, -0.f};
    const long long dense = (long long)xs.size();
    for (float e : edges) xs.push_back(e);
    const long long n = (long long)xs.size();
    float *dx, *dOut;
    CK(cudaMalloc(&dx, n * 4));
    CK(cudaMalloc(&dOut, 4 * n * 4));
    CK(cudaMemcpy(dx, xs.data(), n * 4, cudaMemcpyHostToDevice));
    const char* names[] = {"gelu", "gelu'", "sigmoid", "silu'"};
    for (int formula = 0; formula < 2; ++formula) {
        if (formula) eval<true><<<1024, 256>>>(dx, n, dOut);
        else eval<false><<<1024, 256>>>(dx, n, dOut);
        CK(cudaDeviceSynchronize());
        std::vector<float> out(4 * n);
        CK(cudaMemcpy(out.data(), dOut, 4 * n * 4, cudaMemcpyDeviceToHost));
        for (int f = 0; f < 4; ++f) {
            double maxAbs = 0, maxRel = 0;
            float atAbs = 0, atRel = 0;
            for (long long i = 0; i < dense; ++i) {
                const double r = ref(f, xs[i]), got = out[f * n + i];
                const double a = std::fabs(got - r), rel = a / (std::fabs(r) + 1.0);
                if (!(a <= maxAbs)) { maxAbs = a; atAbs = xs[i]; }
                if (!(rel <= maxRel)) { maxRel = rel; atRel = xs[i]; }
            }
            printf("%-6s %-7s max |error| %.3g (x = %g), max |error| / (|f| + 1) %.3g (x = %g)\n",
                   formula ? "new" : "before", names[f], maxAbs, atAbs, maxRel, atRel);
            for (long long i = dense; i < n; ++i) {
                const double r = ref(f, xs[i]), got = out[f * n + i];
                const bool same = (std::isnan(r) && std::isnan(got)) || got == r
                                  || std::fabs(got - r) <= 1e-6 * (std::fabs(r) + 1.0);
                if (!same) printf("    edge x = %g: %g, reference %g\n", xs[i], got, r);
            }
        }
    }
    cudaFree(dx);
    cudaFree(dOut);
    return 0;
}
