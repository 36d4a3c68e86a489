// Standalone probe (not part of the build), thirty-second session: the LayerNorm forward's word kernel with fewer
// instructions an element. Its sm_90 SASS (bench/results/2026-11-29-session31/call1-f8d86ef-h200/ln.sass.gz) holds
// about 17 instructions an element of a thread's 32: x unpacked from bf16 three times (sum, variance, output), gamma
// and beta once each, and the output as ((x - mean) * rstd) * (gamma + one) + beta, `one` a runtime 0 or 1. At 2048
// x 4096 that is about 4.5 us of issue on an H200's 528 schedulers, beside a 5.4 us copy of the same bytes.
//   lean     y = fma(fma(x, rstd, -mean * rstd), gamma, beta) with gamma not zero-centred at compile time: 2
//            instructions an element where there were 4; the same mean and rstd (the same sums in the same order),
//            other y bits (compared here as elements more than one bf16 unit apart from the product's).
//   floats   x unpacked once into 8 K floats a thread, kept across the three passes (more registers).
//   K        column groups a thread: 4 as the product (128 threads a 4096-column row), or 8 (64 threads: 16 blocks an
//            SM at 64 registers, so 2048 rows run in one wave; other sums, so other mean/rstd bits).
// Results (bench/results/2026-11-29-session32/call7-*, one H200): lean K4 0.94-0.98x the product's time at the four
// shapes (2048 x 4096 9.69 against 10.26 us), the same mean and rstd, y within one bf16 unit of the product's but for
// 9-33 elements of 8-33 million (outputs near zero); the product took it (ln_out), where `bench kernels` (graph
// replays, call8-*) gives 0.98x at 2048 x 4096 and 1.00x at the other shapes. floats: register-bound, slower
// (8 blocks an SM and a spill at 64 registers, 6 at 74). K8: 0.89x at 2048 x 4096 (one wave of 64-thread blocks) and
// 0.96x at 4096 x 8192, but 1.03-1.08x at 4096 x 4096 and 2048 x 8192; not taken (its sums, and so its bits, would
// follow the row count).
// Build and run (PROBE_SHAPE=RxC for one shape):
//   nvcc -arch=sm_90 -O3 -std=c++17 -I../src/main/cuda layernorm_fwd_lean_probe.cu -o fwdlean && ./fwdlean
#include <cstdlib>
#include <cstring>

#include "../src/main/cuda/ubuf_layernorm.cu"
#include "probe_common.cuh"

using bf = __nv_bfloat16;
using ubuf::i64;

namespace probe {

template <int K, bool FLOATS>
__device__ __forceinline__ void fwd_lean(i64 rows, i64 cols, const bf* x, const bf* gamma, const bf* beta, float eps,
                                         bf* y, float* mean, float* rstd) {
    using R = ubuf::RawGroup<bf>;
    constexpr int N = 8;
    if (rows <= 0 || cols <= 0 || (blockDim.x & 31) != 0 || cols % N != 0) return;
    const int groups = (int)(cols / N);
    if (groups > K * (int)blockDim.x) return;
    __shared__ float scratch[2][ubuf::MAX_WARPS];
    int parity = 0;
    const float n = (float)cols;
    const uint4* gammaW = reinterpret_cast<const uint4*>(gamma);
    const uint4* betaW = reinterpret_cast<const uint4*>(beta);
    for (i64 row = blockIdx.x; row < rows; row += gridDim.x) {
        const uint4* xr = reinterpret_cast<const uint4*>(x + row * cols);
        uint4 raw[K];
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const int g = (int)threadIdx.x + k * (int)blockDim.x;
            if (g < groups) raw[k] = xr[g];
        }
        float v[FLOATS ? K : 1][N];
        float s = 0.f;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const int g = (int)threadIdx.x + k * (int)blockDim.x;
            if (g < groups) {
                float t[N];
                R::unpack(raw[k], t);
#pragma unroll
                for (int i = 0; i < N; ++i) {
                    s += t[i];
                    if (FLOATS) v[FLOATS ? k : 0][i] = t[i];
                }
            }
        }
        const float mu = ubuf::block_sum_alternating(s, scratch, parity) / n;
        float q = 0.f;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const int g = (int)threadIdx.x + k * (int)blockDim.x;
            if (g < groups) {
                float t[N];
                if (FLOATS) {
#pragma unroll
                    for (int i = 0; i < N; ++i) t[i] = v[FLOATS ? k : 0][i];
                } else {
                    R::unpack(raw[k], t);
                }
#pragma unroll
                for (int i = 0; i < N; ++i) {
                    const float d = t[i] - mu;
                    q += d * d;
                }
            }
        }
        const float rs = 1.f / sqrtf(ubuf::block_sum_alternating(q, scratch, parity) / n + eps);
        const float nmr = -mu * rs;
        bf* yr = y + row * cols;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const int g = (int)threadIdx.x + k * (int)blockDim.x;
            if (g < groups) {
                const uint4 gammaWord = gammaW[g];
                const uint4 betaWord = betaW[g];
                float t[N], gm[N], b[N];
                if (FLOATS) {
#pragma unroll
                    for (int i = 0; i < N; ++i) t[i] = v[FLOATS ? k : 0][i];
                } else {
                    R::unpack(raw[k], t);
                }
                R::unpack(gammaWord, gm);
                R::unpack(betaWord, b);
#pragma unroll
                for (int i = 0; i < N; ++i) t[i] = fmaf(fmaf(t[i], rs, nmr), gm[i], b[i]);
                ubuf::store_vec<bf, N>(yr + (i64)g * N, t);
            }
        }
        if (threadIdx.x == 0) {
            mean[row] = mu;
            rstd[row] = rs;
        }
    }
}

template <int K, bool FLOATS, int MAXT, int MINB>
__global__ void __launch_bounds__(MAXT, MINB) lean(i64 rows, i64 cols, const bf* x, const bf* gamma, const bf* beta,
                                                   float eps, bf* y, float* mean, float* rstd) {
    fwd_lean<K, FLOATS>(rows, cols, x, gamma, beta, eps, y, mean, rstd);
}

// The product's word kernel at K groups a thread (its code, its formula): K = 8 isolates what one wave changes.
template <int K, int MAXT, int MINB>
__global__ void __launch_bounds__(MAXT, MINB) words_k(i64 rows, i64 cols, const bf* x, const bf* gamma,
                                                      const bf* beta, float eps, bf* y, float* mean, float* rstd) {
    ubuf::layernorm_fwd_words<bf, false, K>(rows, cols, x, cols, gamma, beta, eps, y, cols, mean, rstd);
}

}  // namespace probe

// Elements of a and b (bf16) whose bit patterns, read as sign-magnitude integers, are more than one unit apart.
__global__ void count_far(const uint16_t* a, const uint16_t* b, long long n, unsigned long long* c) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const int ia = (a[i] & 0x8000) ? -(int)(a[i] & 0x7fff) : (int)a[i];
        const int ib = (b[i] & 0x8000) ? -(int)(b[i] & 0x7fff) : (int)b[i];
        if (ia - ib > 1 || ib - ia > 1) atomicAdd(c, 1ull);
    }
}

static bool wanted(long long rows, long long cols) {
    const char* only = getenv("PROBE_SHAPE");
    if (only == nullptr) return true;
    char shape[64];
    snprintf(shape, sizeof shape, "%lldx%lld", rows, cols);
    return strcmp(only, shape) == 0;
}

int main() {
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const long long shapes[][2] = {{2048, 4096}, {4096, 4096}, {2048, 8192}, {4096, 8192}};
    for (auto& sh : shapes) {
        const long long rows = sh[0], cols = sh[1], n = rows * cols, bytes = n * 2;
        if (!wanted(rows, cols)) continue;
        const long long groups = cols / 8;
        bf *x, *gamma, *beta, *y, *refY;
        float *mean, *rstd, *refMean, *refRstd;
        char *cpySrc, *cpyDst;
        unsigned long long* diff;
        CK(cudaMalloc(&x, bytes));
        CK(cudaMalloc(&y, bytes));
        CK(cudaMalloc(&refY, bytes));
        CK(cudaMalloc(&gamma, cols * 2));
        CK(cudaMalloc(&beta, cols * 2));
        CK(cudaMalloc(&mean, rows * 4));
        CK(cudaMalloc(&rstd, rows * 4));
        CK(cudaMalloc(&refMean, rows * 4));
        CK(cudaMalloc(&refRstd, rows * 4));
        CK(cudaMalloc(&diff, 8));
        CK(cudaMalloc(&cpySrc, bytes));
        CK(cudaMalloc(&cpyDst, bytes));
        probe_fill<<<sms * 4, 256>>>(x, n, 1u, 4.f);
        probe_fill<<<sms, 256>>>(gamma, cols, 3u, 4.f);
        probe_fill<<<sms, 256>>>(beta, cols, 5u, 4.f);
        const int block4 = (int)(((groups + 3) / 4 + 31) / 32 * 32);
        ubuf_layernorm_fwd_words_bf16<<<(int)rows, block4>>>(rows, cols, x, cols, gamma, beta, 1e-5f, 0, refY, cols,
                                                            refMean, refRstd);
        CK(cudaDeviceSynchronize());
        const ProbeTimer timer{rows, cols, n, 2 * bytes, 200, sms, 62, refY, diff};
        char name[160];
        auto compare = [&](const char* what) {
            cudaDeviceSynchronize();
            unsigned long long far = 0, st = 0;
            cudaMemset(diff, 0, 8);
            count_far<<<sms * 4, 256>>>((const uint16_t*)y, (const uint16_t*)refY, n, diff);
            cudaMemcpy(&far, diff, 8, cudaMemcpyDeviceToHost);
            cudaMemset(diff, 0, 8);
            probe_count_diff<<<sms, 256>>>((const uint16_t*)mean, (const uint16_t*)refMean, 2 * rows, diff);
            probe_count_diff<<<sms, 256>>>((const uint16_t*)rstd, (const uint16_t*)refRstd, 2 * rows, diff);
            cudaMemcpy(&st, diff, 8, cudaMemcpyDeviceToHost);
            printf("%lldx%lld    %s: y more than 1 unit off %llu, mean/rstd halves differing %llu\n", rows, cols, what,
                   far, st);
        };
        auto variant = [&](const char* what, auto kernel, int k) {
            const int block = (int)(((groups + k - 1) / k + 31) / 32 * 32);
            cudaFuncAttributes fa;
            cudaFuncGetAttributes(&fa, kernel);
            if (block > fa.maxThreadsPerBlock) return;
            int fit = 0;
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, kernel, block, 0);
            snprintf(name, sizeof name, "%s (b %d, %d/SM, %d regs, local %zu)", what, block, fit, fa.numRegs,
                     fa.localSizeBytes);
            cudaMemset(y, 0xff, bytes);
            timer.time(name, y, [&] {
                kernel<<<(int)rows, block>>>(rows, cols, x, gamma, beta, 1e-5f, y, mean, rstd);
            });
            compare(what);
        };
        printf("%lldx%lld forward\n", rows, cols);
        for (int pass = 0; pass < 2; ++pass) {
            timer.time("memcpy d2d (same bytes)", refY, [&] {
                cudaMemcpyAsync(cpyDst, cpySrc, bytes, cudaMemcpyDeviceToDevice);
            });
            cudaMemset(y, 0xff, bytes);
            timer.time("product words (b 4 groups a thread)", y, [&] {
                ubuf_layernorm_fwd_words_bf16<<<(int)rows, block4>>>(rows, cols, x, cols, gamma, beta, 1e-5f, 0, y,
                                                                    cols, mean, rstd);
            });
            variant("words K4 (512,2)", probe::words_k<4, 512, 2>, 4);
            variant("words K8 (512,2)", probe::words_k<8, 512, 2>, 8);
            variant("lean K4 (512,2)", probe::lean<4, false, 512, 2>, 4);
            variant("lean K4 floats (512,2)", probe::lean<4, true, 512, 2>, 4);
            variant("lean K4 floats (256,3)", probe::lean<4, true, 256, 3>, 4);
            variant("lean K8 (512,2)", probe::lean<8, false, 512, 2>, 8);
            variant("lean K8 floats (512,1)", probe::lean<8, true, 512, 1>, 8);
        }
        cudaFree(x); cudaFree(y); cudaFree(refY); cudaFree(gamma); cudaFree(beta); cudaFree(mean); cudaFree(rstd);
        cudaFree(refMean); cudaFree(refRstd); cudaFree(diff); cudaFree(cpySrc); cudaFree(cpyDst);
    }
    return 0;
}
