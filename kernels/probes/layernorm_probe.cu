// Standalone probe (not part of the build): bf16 LayerNorm forward at the layer's per-rank shapes (8B and 70B dims,
// tp 2 and 4), the product's kernel (ubuf_layernorm_fwd_bf16, one block per row) at its launch and other block sizes,
// beside a walk in which a block takes several rows and loads the next row's words before it reduces and writes the
// current one (the same sums in the same order, so the same bits), against a device-to-device copy of the same bytes.
// At 2048 x 4096 the product's one wave of blocks reads every row, then reduces, then writes: the reads and the
// writes of the wave do not overlap. The twenty-fourth session added the register path without the scalar path
// ("regrow", K groups a thread at compile time): at K = 4 the product's bits, 56 registers, 10-16% faster
// (bench/results/2026-11-28-session24/call2-*); the product took it as ubuf_layernorm_fwd_words_<t>, which at first
// read gamma and beta a 2-byte element at a time (calls 4-5). gamma's and beta's words loaded with the row or before
// the second sum gained nothing at the 8B tp 4 shape (call 7). Build and run:
//   nvcc -arch=sm_90 -O3 -std=c++17 -I../src/main/cuda layernorm_probe.cu -o layernorm_probe && ./layernorm_probe
#include "../src/main/cuda/ubuf_layernorm.cu"
#include "probe_common.cuh"

using bf = __nv_bfloat16;
using ubuf::i64;

// As ubuf::layernorm_fwd on the vector path (cols a multiple of 8, every row 16-aligned), with the row after this
// block's current one loaded into a second set of registers before the current row's reductions.
template <int K>
__global__ void __launch_bounds__(512) prefetch_rows(i64 rows, i64 cols, const bf* x, const bf* gamma, const bf* beta,
                                                     float eps, bf* y, float* mean, float* rstd) {
    __shared__ float scratch[ubuf::MAX_WARPS];
    using G = ubuf::ColGroups<bf>;
    using R = ubuf::RawGroup<bf>;
    constexpr int N = G::N;
    const i64 groups = G::count(cols);
    const float n = (float)cols;
    uint4 cur[K], next[K];
    i64 row = blockIdx.x;
    if (row < rows) {
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const i64 g = threadIdx.x + (i64)k * blockDim.x;
            if (g < groups) cur[k] = R::load(x + row * cols, g, N, true);
        }
    }
    for (; row < rows; row += gridDim.x) {
        const i64 nrow = row + gridDim.x;
        if (nrow < rows) {
#pragma unroll
            for (int k = 0; k < K; ++k) {
                const i64 g = threadIdx.x + (i64)k * blockDim.x;
                if (g < groups) next[k] = R::load(x + nrow * cols, g, N, true);
            }
        }
        float s = 0.f;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const i64 g = threadIdx.x + (i64)k * blockDim.x;
            if (g < groups) {
                float v[N];
                R::unpack(cur[k], v);
#pragma unroll
                for (int i = 0; i < N; ++i) s += v[i];
            }
        }
        const float mu = ubuf::block_sum(s, scratch) / n;
        float q = 0.f;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const i64 g = threadIdx.x + (i64)k * blockDim.x;
            if (g < groups) {
                float v[N];
                R::unpack(cur[k], v);
#pragma unroll
                for (int i = 0; i < N; ++i) {
                    const float d = v[i] - mu;
                    q += d * d;
                }
            }
        }
        const float rs = 1.f / sqrtf(ubuf::block_sum(q, scratch) / n + eps);
        bf* yr = y + row * cols;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const i64 g = threadIdx.x + (i64)k * blockDim.x;
            if (g < groups) {
                float v[N], gm[N], b[N];
                R::unpack(cur[k], v);
                G::load(gamma, g, N, true, gm);
                G::load(beta, g, N, true, b);
#pragma unroll
                for (int i = 0; i < N; ++i) v[i] = (v[i] - mu) * rs * (gm[i] + 0.f) + b[i];
                G::store(yr, g, N, true, v);
            }
        }
        if (threadIdx.x == 0) {
            mean[row] = mu;
            rstd[row] = rs;
        }
#pragma unroll
        for (int k = 0; k < K; ++k) cur[k] = next[k];
    }
}

// The product's code (ubuf::layernorm_fwd, the same bits) compiled for more resident blocks: 88 registers a thread
// leave room for 5 blocks of 128 threads an SM, so 2048 rows take over three waves of blocks, each reading,
// reducing and writing in turn. (__launch_bounds__(UBUF_MAX_THREADS, 2) on the product kernel would give the same
// 64-register cap.)
template <int BLOCKS_PER_SM>
__global__ void __launch_bounds__(128, BLOCKS_PER_SM) product_bounded(i64 rows, i64 cols, const bf* x,
                                                                     const bf* gamma, const bf* beta, float eps,
                                                                     bf* y, float* mean, float* rstd) {
    ubuf::layernorm_fwd<bf, false>(rows, cols, x, cols, gamma, beta, eps, y, cols, mean, rstd);
}

// The product's register path (ubuf::layernorm_fwd, vector path) with K groups a thread fixed at compile time, so
// a block of groups / K threads takes a row: fewer, longer threads a row than the product's K = 4 mean smaller
// blocks, more of them resident, and block sums over fewer warps. PARITY: the two block sums of a row use two
// scratch buffers, so each needs one barrier instead of two (the next use of a buffer is a barrier later).
// Sums in each thread's group order, then the block's: other bits than the product's where the block differs.
template <int K, int MAXT, int MINB, bool PARITY>
__global__ void __launch_bounds__(MAXT, MINB) regrow(i64 rows, i64 cols, const bf* x, const bf* gamma,
                                                     const bf* beta, float eps, bf* y, float* mean, float* rstd) {
    __shared__ float scratch[2][ubuf::MAX_WARPS];
    using G = ubuf::ColGroups<bf>;
    using R = ubuf::RawGroup<bf>;
    constexpr int N = G::N;
    const i64 groups = G::count(cols);
    const float n = (float)cols;
    const int warps = (int)(blockDim.x >> 5);
    auto bsum = [&](float v, int which) {
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
        if ((threadIdx.x & 31) == 0) scratch[which][threadIdx.x >> 5] = v;
        __syncthreads();
        float total = 0.f;
        for (int w = 0; w < warps; ++w) total += scratch[which][w];
        if (!PARITY) __syncthreads();
        return total;
    };
    for (i64 row = blockIdx.x; row < rows; row += gridDim.x) {
        const bf* xr = x + row * cols;
        uint4 raw[K];
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const i64 g = threadIdx.x + (i64)k * blockDim.x;
            if (g < groups) raw[k] = reinterpret_cast<const uint4*>(xr)[g];
        }
        float s = 0.f;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const i64 g = threadIdx.x + (i64)k * blockDim.x;
            if (g < groups) {
                float v[N];
                R::unpack(raw[k], v);
#pragma unroll
                for (int i = 0; i < N; ++i) s += v[i];
            }
        }
        const float mu = bsum(s, 0) / n;
        float q = 0.f;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const i64 g = threadIdx.x + (i64)k * blockDim.x;
            if (g < groups) {
                float v[N];
                R::unpack(raw[k], v);
#pragma unroll
                for (int i = 0; i < N; ++i) {
                    const float d = v[i] - mu;
                    q += d * d;
                }
            }
        }
        const float rs = 1.f / sqrtf(bsum(q, PARITY ? 1 : 0) / n + eps);
        bf* yr = y + row * cols;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const i64 g = threadIdx.x + (i64)k * blockDim.x;
            if (g < groups) {
                float v[N], gm[N], b[N];
                R::unpack(raw[k], v);
                G::load(gamma, g, N, true, gm);
                G::load(beta, g, N, true, b);
#pragma unroll
                for (int i = 0; i < N; ++i) v[i] = (v[i] - mu) * rs * (gm[i] + 0.f) + b[i];
                G::store(yr, g, N, true, v);
            }
        }
        if (threadIdx.x == 0) {
            mean[row] = mu;
            rstd[row] = rs;
        }
    }
}

// The word kernel (as ubuf::layernorm_fwd_words, K groups a thread) with gamma's and beta's words loaded at another
// point (24th session, after calls 4-5 found the product reading them a 2-byte element at a time): GB = 0 after the
// two block sums (the product), 1 with the row's words, before the first sum, 2 before the second sum. The same bits.
template <int K, int GB>
__global__ void __launch_bounds__(512, 2) gbwords(i64 rows, i64 cols, const bf* x, const bf* gamma, const bf* beta,
                                                  float eps, bf* y, float* mean, float* rstd) {
    using G = ubuf::ColGroups<bf>;
    using R = ubuf::RawGroup<bf>;
    constexpr int N = G::N;
    const int groups = (int)(cols / N);
    __shared__ float scratch[2][ubuf::MAX_WARPS];
    int parity = 0;
    const float n = (float)cols;
    const float one = rows < 0 ? 1.f : 0.f;
    const uint4* gammaW = reinterpret_cast<const uint4*>(gamma);
    const uint4* betaW = reinterpret_cast<const uint4*>(beta);
    for (i64 row = blockIdx.x; row < rows; row += gridDim.x) {
        const uint4* xr = reinterpret_cast<const uint4*>(x + row * cols);
        uint4 raw[K], gw[K], bw[K];
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const int g = (int)threadIdx.x + k * (int)blockDim.x;
            if (g < groups) {
                raw[k] = xr[g];
                if (GB == 1) {
                    gw[k] = gammaW[g];
                    bw[k] = betaW[g];
                }
            }
        }
        float s = 0.f;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const int g = (int)threadIdx.x + k * (int)blockDim.x;
            if (g < groups) {
                float v[N];
                R::unpack(raw[k], v);
#pragma unroll
                for (int i = 0; i < N; ++i) s += v[i];
            }
        }
        const float mu = ubuf::block_sum_alternating(s, scratch, parity) / n;
        float q = 0.f;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const int g = (int)threadIdx.x + k * (int)blockDim.x;
            if (g < groups) {
                if (GB == 2) {
                    gw[k] = gammaW[g];
                    bw[k] = betaW[g];
                }
                float v[N];
                R::unpack(raw[k], v);
#pragma unroll
                for (int i = 0; i < N; ++i) {
                    const float d = v[i] - mu;
                    q += d * d;
                }
            }
        }
        const float rs = 1.f / sqrtf(ubuf::block_sum_alternating(q, scratch, parity) / n + eps);
        bf* yr = y + row * cols;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const int g = (int)threadIdx.x + k * (int)blockDim.x;
            if (g < groups) {
                if (GB == 0) {
                    gw[k] = gammaW[g];
                    bw[k] = betaW[g];
                }
                float v[N], gm[N], b[N];
                R::unpack(raw[k], v);
                R::unpack(gw[k], gm);
                R::unpack(bw[k], b);
#pragma unroll
                for (int i = 0; i < N; ++i) v[i] = (v[i] - mu) * rs * (gm[i] + one) + b[i];
                ubuf::store_vec<bf, N>(yr + (i64)g * N, v);
            }
        }
        if (threadIdx.x == 0) {
            mean[row] = mu;
            rstd[row] = rs;
        }
    }
}

int main() {
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const long long shapes[][2] = {{2048, 4096}, {4096, 4096}, {2048, 8192}, {4096, 8192}};
    for (auto& sh : shapes) {
        const long long rows = sh[0], cols = sh[1], n = rows * cols, bytes = n * 2;
        bf *x, *y, *ref, *gamma, *beta;
        float *mean, *rstd;
        unsigned long long* diff;
        CK(cudaMalloc(&x, bytes));
        CK(cudaMalloc(&y, bytes));
        CK(cudaMalloc(&ref, bytes));
        CK(cudaMalloc(&gamma, cols * 2));
        CK(cudaMalloc(&beta, cols * 2));
        CK(cudaMalloc(&mean, rows * 4));
        CK(cudaMalloc(&rstd, rows * 4));
        CK(cudaMalloc(&diff, 8));
        probe_fill<<<sms * 4, 256>>>(x, n, 1u, 4.f);
        probe_fill<<<sms, 256>>>(gamma, cols, 3u, 4.f);
        probe_fill<<<sms, 256>>>(beta, cols, 5u, 4.f);
        // The product's launch (LayerKernels.layerNormForward): a block per row, whole warps holding 4 groups each.
        const int productBlock = (int)(((cols / 8 + 3) / 4 + 31) / 32 * 32);
        ubuf_layernorm_fwd_bf16<<<(int)rows, productBlock>>>(rows, cols, x, cols, gamma, beta, 1e-5f, 0, ref, cols,
                                                            mean, rstd);
        CK(cudaDeviceSynchronize());
        const ProbeTimer timer{rows, cols, n, 2 * bytes, 200, sms, 32, ref, diff};
        auto time = [&](const char* name, auto launch) { timer.time(name, y, launch); };
        time("memcpy d2d", [&] { cudaMemcpyAsync(y, x, bytes, cudaMemcpyDeviceToDevice); });
        for (int block : {productBlock, 2 * productBlock, 4 * productBlock}) {
            if (block > 512) continue;
            char name[64];
            snprintf(name, sizeof name, "product, block %d%s", block, block == productBlock ? " (its launch)" : "");
            time(name, [&] {
                ubuf_layernorm_fwd_bf16<<<(int)rows, block>>>(rows, cols, x, cols, gamma, beta, 1e-5f, 0, y, cols,
                                                             mean, rstd);
            });
        }
        if (productBlock == 128) {
            time("product code, bounds (128, 8)", [&] {
                product_bounded<8><<<(int)rows, 128>>>(rows, cols, x, gamma, beta, 1e-5f, y, mean, rstd);
            });
            time("product code, bounds (128, 12)", [&] {
                product_bounded<12><<<(int)rows, 128>>>(rows, cols, x, gamma, beta, 1e-5f, y, mean, rstd);
            });
        }
        for (int per : {2, 4, 8}) {
            const long long grid = (long long)sms * per < rows ? (long long)sms * per : rows;
            char name[64];
            snprintf(name, sizeof name, "prefetch rows, %d blocks/SM", per);
            if (cols / 8 <= 4LL * productBlock) {
                time(name, [&] {
                    prefetch_rows<4><<<(int)grid, productBlock>>>(rows, cols, x, gamma, beta, 1e-5f, y, mean, rstd);
                });
            }
        }
        // Twenty-fourth session: K groups a thread at compile time (blocks of groups / K), 64 registers.
        auto reg = [&](const char* name, auto kernel, int k) {
            const int b = (int)((cols / 8 / k + 31) / 32 * 32);
            int perSm = 0;
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, kernel, b, 0);
            cudaFuncAttributes fa;
            cudaFuncGetAttributes(&fa, kernel);
            char label[96];
            snprintf(label, sizeof label, "%s (b %d, %d/SM, %d regs)", name, b, perSm, fa.numRegs);
            time(label, [&] { kernel<<<(int)rows, b>>>(rows, cols, x, gamma, beta, 1e-5f, y, mean, rstd); });
        };
        time("product words kernel (24th session)", [&] {
            ubuf_layernorm_fwd_words_bf16<<<(int)rows, productBlock>>>(rows, cols, x, cols, gamma, beta, 1e-5f, 0, y,
                                                                      cols, mean, rstd);
        });
        reg("gbwords K4, gamma/beta after the sums", gbwords<4, 0>, 4);
        reg("gbwords K4, gamma/beta with the row", gbwords<4, 1>, 4);
        reg("gbwords K4, gamma/beta before the 2nd sum", gbwords<4, 2>, 4);
        reg("gbwords K8, gamma/beta after the sums", gbwords<8, 0>, 8);
        reg("regrow K4 (the product's K)", regrow<4, 1024, 1, false>, 4);
        reg("regrow K4 parity", regrow<4, 1024, 1, true>, 4);
        reg("regrow K8", regrow<8, 1024, 1, false>, 8);
        reg("regrow K8 parity", regrow<8, 1024, 1, true>, 8);
        reg("regrow K16, 102 regs", regrow<16, 64, 10, false>, 16);
        reg("regrow K16 parity, 102 regs", regrow<16, 64, 10, true>, 16);
        reg("regrow K8 parity, 96 regs", regrow<8, 256, 2, true>, 8);
        cudaFree(x);
        cudaFree(y);
        cudaFree(ref);
        cudaFree(gamma);
        cudaFree(beta);
        cudaFree(mean);
        cudaFree(rstd);
        cudaFree(diff);
    }
    return 0;
}
