// Standalone probe (not part of the build), thirty-fifth session: the bf16 LayerNorm forward's word kernel with more
// words a thread. The product's paired kernel (ubuf_layernorm_fwd_words2_bf16: a thread for two of the word kernel's
// threads, so one wave of 64-thread blocks at 2048 x 4096) ran 0.987x the word kernel's time there in `bench kernels`
// but 0.892x at 1024 x 8192, where its blocks are 128 threads and 1024 of them (bench/results/2026-11-29-session35/
// call1-*). The variants here, all with the word kernel's bits (each row's sums in its order, its warp totals in its
// order):
//   R   rows a block, side by side: a thread holds its K groups of each (the word kernel's thread of each row), the R
//       rows' sums share one barrier; R = 2 at 2048 x 4096 is 1024 blocks of 128 threads, as 1024 x 8192 paired.
//   V   threads of the word kernel's block a thread stands in for (V = 2: the product's paired kernel).
//   W   the word kernel's warps at compile time (0: blockDim at run time), so the warp totals are W fixed adds.
// And the product's word function alone and beside its zero-centred twin (the product kernels carry both).
// Results (back-to-back launches, one H200; bench/results/2026-11-29-session35/call2-*, call3-*): at 2048 x 4096
// R = 2 ran 1.01-1.05x the word kernel's time (1024 x 8192 paired is faster for having the wide rows, not the
// blocks); W fixed 0.96-0.97x at every shape and V (R1 V1 W4 8.72 us, R1 V2 W4 8.58-8.81, the word kernel 9.04);
// the paired kernel 1.08x slower at 4096 x 4096 and 1.16x at 1024 x 4096, where the word kernel's blocks hold the
// rows in one wave or neither does. R = 4 and R = 2 with V = 2 spill (64 registers). Both gammas beside each other
// cost 0.3-0.9%. The product took W fixed for every block sum of 2, 4, 8 or 16 warps (62c6e46: the LayerNorms
// 0.97-0.99x in `bench kernels`, but the paired kernel at 2048 x 4096 unchanged, 8.42 us, 64.8% of copy).
// Build and run (PROBE_SHAPE=RxC for one shape):
//   nvcc -arch=sm_90 -O3 -std=c++17 -I../src/main/cuda layernorm_fwd_rows_probe.cu -o fwdrows && ./fwdrows
#include <cstdlib>
#include <cstring>

#include "../src/main/cuda/ubuf_layernorm.cu"
#include "probe_common.cuh"

using bf = __nv_bfloat16;
using ubuf::i64;

namespace probe {

// The sums of R rows, V partials each (thread t holds the wide block's thread t + i * blockDim), behind one
// barrier: every row's warp totals in the wide block's order. W: the wide block's warps, or 0 to take blockDim.
template <int R, int V, int W>
__device__ __forceinline__ void rows_sum(float (&v)[R][V], float (*totals)[ubuf::MAX_WARPS], float (&out)[R]) {
#pragma unroll
    for (int r = 0; r < R; ++r) {
#pragma unroll
        for (int i = 0; i < V; ++i) {
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) v[r][i] += __shfl_xor_sync(0xffffffffu, v[r][i], o);
        }
    }
    const int warps = W > 0 ? W / V : (int)(blockDim.x >> 5);
    if ((threadIdx.x & 31) == 0) {
#pragma unroll
        for (int r = 0; r < R; ++r) {
#pragma unroll
            for (int i = 0; i < V; ++i) totals[r][(threadIdx.x >> 5) + i * warps] = v[r][i];
        }
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < R; ++r) {
        float total = 0.f;
        if (W > 0) {
#pragma unroll
            for (int w = 0; w < (W > 0 ? W : 1); ++w) total += totals[r][w];
        } else {
            for (int w = 0; w < V * warps; ++w) total += totals[r][w];
        }
        out[r] = total;
    }
}

template <int K, int V, int R, int W>
__device__ __forceinline__ void fwd_rows(i64 rows, i64 cols, const bf* x, const bf* gamma, const bf* beta, float eps,
                                         bf* y, float* mean, float* rstd) {
    using Rg = ubuf::RawGroup<bf>;
    constexpr int N = 8;
    constexpr int J = K * V;
    if (rows <= 0 || cols <= 0 || (blockDim.x & 31) != 0 || cols % N != 0) return;
    const int groups = (int)(cols / N);
    if (groups > J * (int)blockDim.x) return;
    if (W > 0 && W * 32 != V * (int)blockDim.x) return;
    __shared__ float scratch[2][R][ubuf::MAX_WARPS];
    int parity = 0;
    const float n = (float)cols;
    const uint4* gammaW = reinterpret_cast<const uint4*>(gamma);
    const uint4* betaW = reinterpret_cast<const uint4*>(beta);
    for (i64 row0 = (i64)blockIdx.x * R; row0 < rows; row0 += (i64)gridDim.x * R) {
        uint4 raw[R][J];
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const uint4* xr = reinterpret_cast<const uint4*>(x + (row0 + r) * cols);
#pragma unroll
            for (int j = 0; j < J; ++j) {
                const int g = (int)threadIdx.x + j * (int)blockDim.x;
                if (g < groups && row0 + r < rows) raw[r][j] = xr[g];
            }
        }
        float s[R][V];
#pragma unroll
        for (int r = 0; r < R; ++r) {
#pragma unroll
            for (int i = 0; i < V; ++i) s[r][i] = 0.f;
#pragma unroll
            for (int j = 0; j < J; ++j) {
                const int g = (int)threadIdx.x + j * (int)blockDim.x;
                if (g < groups) {
                    float v[N];
                    Rg::unpack(raw[r][j], v);
#pragma unroll
                    for (int i = 0; i < N; ++i) s[r][j % V] += v[i];
                }
            }
        }
        float mu[R];
        rows_sum<R, V, W>(s, scratch[parity], mu);
        parity ^= 1;
        float q[R][V];
#pragma unroll
        for (int r = 0; r < R; ++r) {
            mu[r] = mu[r] / n;
#pragma unroll
            for (int i = 0; i < V; ++i) q[r][i] = 0.f;
#pragma unroll
            for (int j = 0; j < J; ++j) {
                const int g = (int)threadIdx.x + j * (int)blockDim.x;
                if (g < groups) {
                    float v[N];
                    Rg::unpack(raw[r][j], v);
#pragma unroll
                    for (int i = 0; i < N; ++i) {
                        const float d = v[i] - mu[r];
                        q[r][j % V] += d * d;
                    }
                }
            }
        }
        float var[R];
        rows_sum<R, V, W>(q, scratch[parity], var);
        parity ^= 1;
#pragma unroll
        for (int r = 0; r < R; ++r) {
            if (row0 + r >= rows) break;
            const float rs = 1.f / sqrtf(var[r] / n + eps);
            const float nmr = -mu[r] * rs;
            bf* yr = y + (row0 + r) * cols;
#pragma unroll
            for (int j = 0; j < J; ++j) {
                const int g = (int)threadIdx.x + j * (int)blockDim.x;
                if (g < groups) {
                    const uint4 gammaWord = gammaW[g];
                    const uint4 betaWord = betaW[g];
                    float v[N], gm[N], b[N];
                    Rg::unpack(raw[r][j], v);
                    Rg::unpack(gammaWord, gm);
                    Rg::unpack(betaWord, b);
#pragma unroll
                    for (int i = 0; i < N; ++i) v[i] = ubuf::ln_out<false>(v[i], rs, nmr, gm[i], b[i]);
                    ubuf::store_vec<bf, N>(yr + (i64)g * N, v);
                }
            }
            if (threadIdx.x == 0) {
                mean[row0 + r] = mu[r];
                rstd[row0 + r] = rs;
            }
        }
    }
}

template <int K, int V, int R, int W>
__global__ void __launch_bounds__(512 / V, 65536 / (64 * 512 / V)) rows_kernel(i64 rows, i64 cols, const bf* x,
                                                                               const bf* gamma, const bf* beta,
                                                                               float eps, bf* y, float* mean,
                                                                               float* rstd) {
    fwd_rows<K, V, R, W>(rows, cols, x, gamma, beta, eps, y, mean, rstd);
}

// The product's word function (ubuf::layernorm_fwd_words) for the usual gamma only, and behind the product kernels'
// run-time choice of the zero-centred gamma: does carrying both bodies cost the kernel?
__global__ void __launch_bounds__(512, 2) words_plain(i64 rows, i64 cols, const bf* x, const bf* gamma,
                                                      const bf* beta, float eps, bf* y, float* mean, float* rstd) {
    ubuf::layernorm_fwd_words<bf, false>(rows, cols, x, cols, gamma, beta, eps, y, cols, mean, rstd);
}

__global__ void __launch_bounds__(512, 2) words_both(i64 rows, i64 cols, const bf* x, const bf* gamma, const bf* beta,
                                                     float eps, bf* y, float* mean, float* rstd) {
    if (rows < 0) {  // never: rows is positive, but the compiler cannot know it
        ubuf::layernorm_fwd_words<bf, true>(-rows, cols, x, cols, gamma, beta, eps, y, cols, mean, rstd);
    } else {
        ubuf::layernorm_fwd_words<bf, false>(rows, cols, x, cols, gamma, beta, eps, y, cols, mean, rstd);
    }
}

}  // namespace probe

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
    const long long shapes[][2] = {{2048, 4096}, {1024, 8192}, {4096, 4096}, {1024, 4096}, {2048, 8192}};
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
        const ProbeTimer timer{rows, cols, n, 2 * bytes, 300, sms, 58, refY, diff};
        char name[160];
        auto stats = [&]() {
            unsigned long long st = 0;
            cudaMemset(diff, 0, 8);
            probe_count_diff<<<sms, 256>>>((const uint16_t*)mean, (const uint16_t*)refMean, 2 * rows, diff);
            probe_count_diff<<<sms, 256>>>((const uint16_t*)rstd, (const uint16_t*)refRstd, 2 * rows, diff);
            cudaMemcpy(&st, diff, 8, cudaMemcpyDeviceToHost);
            if (st != 0) printf("    mean/rstd halves differing %llu\n", st);
        };
        auto variant = [&](const char* what, auto kernel, int v, int r, int w) {
            const int block = block4 / v;
            if (block % 32 != 0 || (w > 0 && w * 32 != block4)) return;
            cudaFuncAttributes fa;
            cudaFuncGetAttributes(&fa, kernel);
            if (block > fa.maxThreadsPerBlock) return;
            int fit = 0;
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, kernel, block, 0);
            const int grid = (int)((rows + r - 1) / r);
            snprintf(name, sizeof name, "%s (b %d x %d, %d/SM, %d regs, local %zu)", what, grid, block, fit,
                     fa.numRegs, fa.localSizeBytes);
            cudaMemset(y, 0xff, bytes);
            cudaMemset(mean, 0xff, rows * 4);
            cudaMemset(rstd, 0xff, rows * 4);
            timer.time(name, y, [&] { kernel<<<grid, block>>>(rows, cols, x, gamma, beta, 1e-5f, y, mean, rstd); });
            stats();
        };
        printf("%lldx%lld forward\n", rows, cols);
        for (int pass = 0; pass < 2; ++pass) {
            timer.time("memcpy d2d (same bytes)", refY, [&] {
                cudaMemcpyAsync(cpyDst, cpySrc, bytes, cudaMemcpyDeviceToDevice);
            });
            cudaMemset(y, 0xff, bytes);
            timer.time("product words", y, [&] {
                ubuf_layernorm_fwd_words_bf16<<<(int)rows, block4>>>(rows, cols, x, cols, gamma, beta, 1e-5f, 0, y,
                                                                    cols, mean, rstd);
            });
            cudaMemset(y, 0xff, bytes);
            timer.time("product words2 (paired)", y, [&] {
                ubuf_layernorm_fwd_words2_bf16<<<(int)rows, block4 / 2>>>(rows, cols, x, cols, gamma, beta, 1e-5f, 0,
                                                                         y, cols, mean, rstd);
            });
            variant("product fn, usual gamma only", probe::words_plain, 1, 1, 0);
            variant("product fn, both gammas", probe::words_both, 1, 1, 0);
            variant("R1 V1 W-", probe::rows_kernel<4, 1, 1, 0>, 1, 1, 0);
            variant("R1 V1 W4", probe::rows_kernel<4, 1, 1, 4>, 1, 1, 4);
            variant("R1 V1 W8", probe::rows_kernel<4, 1, 1, 8>, 1, 1, 8);
            variant("R1 V2 W-", probe::rows_kernel<4, 2, 1, 0>, 2, 1, 0);
            variant("R1 V2 W4", probe::rows_kernel<4, 2, 1, 4>, 2, 1, 4);
            variant("R1 V2 W8", probe::rows_kernel<4, 2, 1, 8>, 2, 1, 8);
            variant("R2 V1 W-", probe::rows_kernel<4, 1, 2, 0>, 1, 2, 0);
            variant("R2 V1 W4", probe::rows_kernel<4, 1, 2, 4>, 1, 2, 4);
            variant("R2 V1 W8", probe::rows_kernel<4, 1, 2, 8>, 1, 2, 8);
        }
        cudaFree(x); cudaFree(y); cudaFree(refY); cudaFree(gamma); cudaFree(beta); cudaFree(mean); cudaFree(rstd);
        cudaFree(refMean); cudaFree(refRstd); cudaFree(diff); cudaFree(cpySrc); cudaFree(cpyDst);
    }
    return 0;
}
