// Standalone probe (not part of the build), twenty-ninth session (outputs: bench/results/2026-11-28-session29/call1-*,
// call2-*, call5-*, one H200):
//  1. The bf16 LayerNorm forward a warp a row (ubuf_layernorm_fwd_warp_bf16 below: a lane stands in for the word
//     kernel's threads l, l + 32, ... of its block, so the word kernel's bits, and no barrier) against the word kernel
//     on its block, in blocks of 1, 2 and 4 warps. Slower or no faster everywhere (2048 x 4096 10.55 against 10.46
//     us; 1024 rows 1.5x, 4096 rows 1.34x): a warp computes a row's 4096 elements alone where the word kernel spreads
//     them over 4 warps, and the rows in flight did not make up for it. Taken into the product and reverted.
//  2. The LayerNorm backward's partial rows cut by thread block clusters: at the end of its (one) part each block
//     leaves its dgamma / dbeta sums in its shared memory and the C blocks of its cluster add them in rank order
//     through distributed shared memory, one partial row a cluster. The column sums took 3.9 against 5.6 us, but the
//     staged kernel in clusters ran 1.07x (C = 2) to 1.8x (C = 4, 8) slower: no net gain.
//  3. The staged kernel's partial rows stored 512 contiguous bytes a store instruction (staged_store<2>, warp
//     shuffles) instead of a thread's two float4 words 32 bytes apart (half of every sector each store touched): the
//     op 2.5-7% faster, the same values at the same places. In the product since (store_warp_groups).
//  4. A row's two sums in two chains a thread (staged_store<2, true>, one per column group; other bits): within 0.3%
//     of one chain (call5-*), so the walk's fixed-latency stalls are not these adds.
// Build and run:
//   nvcc -arch=sm_90 -O3 -std=c++17 -I../src/main/cuda layernorm_warp_probe.cu -o ln_warp && ./ln_warp
#include <cooperative_groups.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "../src/main/cuda/ubuf_layernorm.cu"
#include "../src/main/cuda/ubuf_colsum.cu"
#include "probe_common.cuh"

namespace ubuf {

// layernorm_fwd_words a warp a row, for rows of at most LN_FWD_GROUPS * 32 * LN_FWD_WARP_VW groups (4096 bf16 or
// fp16 columns, 2048 fp32): no barrier and one row a warp, so every row of a layer's shard is in flight at once where
// the words kernel's blocks (9 an SM) took 2048 rows of 4096 columns in two waves of load, two block sums, store.
// The words kernel's sums in its order, so its bits: its block for the row has V = 32 * VW threads, thread t holding
// groups t + k * V; lane l here holds the groups of its threads l + 32 * w (w < VW), adds each one's terms in that
// thread's order, runs each of their warps' butterflies, and adds the VW warp totals in warp order. Same conditions
// as the words kernel (whole aligned words). Every warp of a block runs the same iterations (rows past the end
// masked), so the butterflies are uniform.
constexpr int LN_FWD_WARP_VW = 4;

template <class T, int VW>
__device__ __forceinline__ void layernorm_fwd_warp_rows(i64 rows, int groups, const T* x, i64 ldX, const T* gamma,
                                                        const T* beta, float eps, float one, T* y, i64 ldY,
                                                        float* mean, float* rstd) {
    using R = RawGroup<T>;
    constexpr int N = R::N;
    constexpr int K = LN_FWD_GROUPS;
    constexpr int V = 32 * VW;
    const int lane = (int)(threadIdx.x & 31);
    const i64 warps = blockDim.x >> 5;
    const float n = (float)((i64)groups * N);
    const uint4* gammaW = reinterpret_cast<const uint4*>(gamma);
    const uint4* betaW = reinterpret_cast<const uint4*>(beta);
    for (i64 base = (i64)blockIdx.x * warps; base < rows; base += (i64)gridDim.x * warps) {
        const i64 row = base + (threadIdx.x >> 5);
        const bool active = row < rows;
        const uint4* xr = reinterpret_cast<const uint4*>(x + (active ? row : 0) * ldX);
        uint4 raw[VW][K];
#pragma unroll
        for (int w = 0; w < VW; ++w) {
#pragma unroll
            for (int k = 0; k < K; ++k) {
                const int g = lane + 32 * w + k * V;
                raw[w][k] = active && g < groups ? xr[g] : make_uint4(0u, 0u, 0u, 0u);
            }
        }
        float s[VW];
#pragma unroll
        for (int w = 0; w < VW; ++w) {
            s[w] = 0.f;
#pragma unroll
            for (int k = 0; k < K; ++k) {
                if (lane + 32 * w + k * V < groups) {
                    float v[N];
                    R::unpack(raw[w][k], v);
#pragma unroll
                    for (int i = 0; i < N; ++i) s[w] += v[i];
                }
            }
        }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
#pragma unroll
            for (int w = 0; w < VW; ++w) s[w] += __shfl_xor_sync(0xffffffffu, s[w], o);
        }
        float total = 0.f;
#pragma unroll
        for (int w = 0; w < VW; ++w) total += s[w];
        const float mu = total / n;
        float q[VW];
#pragma unroll
        for (int w = 0; w < VW; ++w) {
            q[w] = 0.f;
#pragma unroll
            for (int k = 0; k < K; ++k) {
                if (lane + 32 * w + k * V < groups) {
                    float v[N];
                    R::unpack(raw[w][k], v);
#pragma unroll
                    for (int i = 0; i < N; ++i) {
                        const float d = v[i] - mu;
                        q[w] += d * d;
                    }
                }
            }
        }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
#pragma unroll
            for (int w = 0; w < VW; ++w) q[w] += __shfl_xor_sync(0xffffffffu, q[w], o);
        }
        float qTotal = 0.f;
#pragma unroll
        for (int w = 0; w < VW; ++w) qTotal += q[w];
        const float rs = 1.f / sqrtf(qTotal / n + eps);
        if (!active) continue;
        T* yr = y + row * ldY;
#pragma unroll
        for (int w = 0; w < VW; ++w) {
#pragma unroll
            for (int k = 0; k < K; ++k) {
                const int g = lane + 32 * w + k * V;
                if (g < groups) {
                    const uint4 gammaWord = gammaW[g];
                    const uint4 betaWord = betaW[g];
                    float v[N], gm[N], b[N];
                    R::unpack(raw[w][k], v);
                    R::unpack(gammaWord, gm);
                    R::unpack(betaWord, b);
#pragma unroll
                    for (int i = 0; i < N; ++i) v[i] = (v[i] - mu) * rs * (gm[i] + one) + b[i];
                    store_vec<T, N>(yr + (i64)g * N, v);
                }
            }
        }
        if (lane == 0) {
            if (mean != nullptr) mean[row] = mu;
            if (rstd != nullptr) rstd[row] = rs;
        }
    }
}

// The virtual block's warps from the row's groups, as LayerKernels sizes the words kernel's block; nothing for rows
// longer than LN_FWD_WARP_VW of them hold or a block that is not whole warps.
template <class T>
__device__ __forceinline__ void layernorm_fwd_warp(i64 rows, i64 cols, const T* x, i64 ldX, const T* gamma,
                                                   const T* beta, float eps, int zeroCentered, T* y, i64 ldY,
                                                   float* mean, float* rstd) {
    constexpr int N = RawGroup<T>::N;
    if (rows <= 0 || cols <= 0 || (blockDim.x & 31) != 0 || cols % N != 0) return;
    const i64 groups = cols / N;
    const i64 vw = ((groups + LN_FWD_GROUPS - 1) / LN_FWD_GROUPS + 31) / 32;
    const float one = zeroCentered ? 1.f : 0.f;
    const int gr = (int)groups;
    switch (vw) {
        case 1: layernorm_fwd_warp_rows<T, 1>(rows, gr, x, ldX, gamma, beta, eps, one, y, ldY, mean, rstd); break;
        case 2: layernorm_fwd_warp_rows<T, 2>(rows, gr, x, ldX, gamma, beta, eps, one, y, ldY, mean, rstd); break;
        case 3: layernorm_fwd_warp_rows<T, 3>(rows, gr, x, ldX, gamma, beta, eps, one, y, ldY, mean, rstd); break;
        case 4: layernorm_fwd_warp_rows<T, 4>(rows, gr, x, ldX, gamma, beta, eps, one, y, ldY, mean, rstd); break;
        default: break;
    }
}

}  // namespace ubuf

// In blocks of 4 warps at most 102 registers (5 blocks an SM, 20 rows in flight): uncapped it took 126, capped lower
// it spilled (nvcc 13.0, sm_90).
extern "C" __global__ void __launch_bounds__(128, 5)
    ubuf_layernorm_fwd_warp_bf16(long long rows, long long cols, const __nv_bfloat16* x, long long ldX,
                                 const __nv_bfloat16* gamma, const __nv_bfloat16* beta, float eps,
                                 int zeroCenteredGamma, __nv_bfloat16* y, long long ldY, float* mean, float* rstd) {
    ubuf::layernorm_fwd_warp<__nv_bfloat16>(rows, cols, x, ldX, gamma, beta, eps, zeroCenteredGamma, y, ldY, mean,
                                            rstd);
}

namespace cg = cooperative_groups;
using bf = __nv_bfloat16;
using ubuf::i64;

constexpr int BN = ubuf::ColGroups<bf>::N;
constexpr int BK = ubuf::LN_BWD_GROUPS;

// The product's staged walk (ubuf::layernorm_bwd_staged<bf, false>, its rows' part of it) with what happens at a
// part's end left to the caller: partEnd(part) gets the part's dgamma / dbeta sums in dg / db and must zero them for
// the next part. `stage` is the dynamic shared memory. SPLIT: a row's two sums each in two chains, one per column
// group of the thread, added at the end (half the dependent adds in a row; other bits than the product).
template <bool SPLIT = false, class PartEnd>
__device__ __forceinline__ void staged_walk(i64 rows, i64 cols, const bf* dy, const bf* x, const float* mean,
                                            const float* rstd, const bf* gamma, bf* dx, i64 rowsPerPart,
                                            uint4* stage, float (&dg)[BK][BN], float (&db)[BK][BN],
                                            PartEnd partEnd) {
    using Grp = ubuf::LnBwdGroup<bf, false>;
    constexpr int N = BN;
    constexpr int K = BK;
    constexpr int S = ubuf::LN_BWD_STAGES;
    const int groups = (int)(cols / N);
    __shared__ float scratchA[2][ubuf::MAX_WARPS];
    __shared__ float scratchB[2][ubuf::MAX_WARPS];
    int parity = 0;
    ubuf::PartRows copying, computing;
    copying.start(rows, rowsPerPart);
    computing.start(rows, rowsPerPart);
    const float n = (float)cols;
    int copySlot = 0, slot = 0;
    auto issue = [&]() {
        if (copying.ok) {
            uint4* s = stage + copySlot * 2 * groups;
            const uint4* dyr = reinterpret_cast<const uint4*>(dy + copying.row * cols);
            const uint4* xr = reinterpret_cast<const uint4*>(x + copying.row * cols);
#pragma unroll
            for (int k = 0; k < K; ++k) {
                const int g = (int)threadIdx.x + k * (int)blockDim.x;
                if (g < groups) {
                    ubuf::cp_async16(ubuf::shared_addr(s + g), dyr + g);
                    ubuf::cp_async16(ubuf::shared_addr(s + groups + g), xr + g);
                }
            }
            copying.next(rows, rowsPerPart);
        }
        ubuf::cp_async_commit();
        copySlot = copySlot + 1 == S ? 0 : copySlot + 1;
    };
    uint4 gammaRaw[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const int g = (int)threadIdx.x + k * (int)blockDim.x;
        if (g < groups) gammaRaw[k] = reinterpret_cast<const uint4*>(gamma)[g];
    }
#pragma unroll
    for (int i = 0; i < S - 1; ++i) issue();
#pragma unroll
    for (int k = 0; k < K; ++k) {
#pragma unroll
        for (int i = 0; i < N; ++i) dg[k][i] = db[k][i] = 0.f;
    }
    while (computing.ok) {
        issue();
        const i64 r = computing.row;
        const float rs = rstd[r];
        const float nmr = -mean[r] * rs;
        ubuf::cp_async_wait<S - 1>();
        const uint4* s = stage + slot * 2 * groups;
        uint4 dyRaw[K], xRaw[K];
        float s1 = 0.f, s2 = 0.f, s1b = 0.f, s2b = 0.f;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const int g = (int)threadIdx.x + k * (int)blockDim.x;
            if (g < groups) {
                dyRaw[k] = s[g];
                xRaw[k] = s[groups + g];
                const bool b = SPLIT && (k & 1);
                Grp::accumulate(dyRaw[k], xRaw[k], gammaRaw[k], N, rs, nmr, b ? s1b : s1, b ? s2b : s2, dg[k], db[k]);
            }
        }
        if (SPLIT) {
            s1 += s1b;
            s2 += s2b;
        }
        ubuf::block_sum2_alternating(s1, s2, scratchA, scratchB, parity);
        const float c1 = -rs * (s1 / n);
        const float c2 = -rs * (s2 / n);
        bf* dxr = dx + r * cols;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const int g = (int)threadIdx.x + k * (int)blockDim.x;
            if (g < groups) {
                float d[N];
                Grp::dx(dyRaw[k], xRaw[k], gammaRaw[k], rs, nmr, c1, c2, d);
                ubuf::store_vec<bf, N>(dxr + g * N, d);
            }
        }
        if (r + 1 == computing.end) partEnd(computing.part);
        computing.next(rows, rowsPerPart);
        slot = slot + 1 == S ? 0 : slot + 1;
    }
    ubuf::cp_async_wait<0>();
}

// The walk for grids of one part a block (LayerKernels' launch) with the cluster epilogue of item 2 in place of the
// per-part partial row. Blocks past the last part (the grid padded to whole clusters) add zeros.
template <int C>
__global__ void __cluster_dims__(C, 1, 1) __launch_bounds__(UBUF_MAX_THREADS)
    staged_cluster(i64 rows, i64 cols, const bf* dy, const bf* x, const float* mean, const float* rstd,
                   const bf* gamma, bf* dx, i64 rowsPerPart, float* dgammaPart, float* dbetaPart, i64 ldPart) {
    constexpr int N = BN;
    constexpr int K = BK;
    const int groups = (int)(cols / N);
    extern __shared__ uint4 stage[];
    float dg[K][N], db[K][N];
    staged_walk(rows, cols, dy, x, mean, rstd, gamma, dx, rowsPerPart, stage, dg, db, [](i64) {});
    __syncthreads();  // every thread done with the slots: they hold the block's sums now
    float* red = reinterpret_cast<float*>(stage);  // [dgamma | dbeta], cols each
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const int g = (int)threadIdx.x + k * (int)blockDim.x;
        if (g < groups) {
#pragma unroll
            for (int i = 0; i < N; ++i) {
                red[g * N + i] = dg[k][i];
                red[cols + g * N + i] = db[k][i];
            }
        }
    }
    cg::cluster_group cl = cg::this_cluster();
    cl.sync();
    const i64 total = 2 * cols;
    const i64 slice = (total + C - 1) / C;
    const i64 lo = (i64)cl.block_rank() * slice;
    const i64 hi = lo + slice < total ? lo + slice : total;
    const float* peers[C];
#pragma unroll
    for (int b = 0; b < C; ++b) peers[b] = cl.map_shared_rank(red, b);
    const i64 row = blockIdx.x / C;
    for (i64 e = lo + threadIdx.x; e < hi; e += blockDim.x) {
        float acc = 0.f;
#pragma unroll
        for (int b = 0; b < C; ++b) acc += peers[b][e];
        if (e < cols) dgammaPart[row * ldPart + e] = acc;
        else dbetaPart[row * ldPart + e - cols] = acc;
    }
    cl.sync();  // no block leaves while a peer may still read its shared memory
}

// The walk with its per-part partial rows stored three ways (item 3): MODE 0 as the product did (a thread's 8
// floats of a group as two float4 stores 32 bytes apart, so each store instruction covers half of each 32-byte
// sector it touches: Nsight Compute counted 12% of the kernel's sectors as excessive at 2048 x 4096, twenty-third
// session), MODE 2 the same layout with the warp's words exchanged by shuffles so each store instruction writes 512
// contiguous bytes (the same values at the same places: the column sums unchanged; the product's store_warp_groups
// since), MODE 1 float4 q of group g at (q * groups + g) (coalesced without shuffles; another layout, so the column
// sums read it wrongly: timing only). Rows a multiple of 32 groups.
template <int MODE, bool SPLIT = false>
__global__ void __launch_bounds__(UBUF_MAX_THREADS)
    staged_store(i64 rows, i64 cols, const bf* dy, const bf* x, const float* mean, const float* rstd,
                 const bf* gamma, bf* dx, i64 rowsPerPart, float* dgammaPart, float* dbetaPart, i64 ldPart) {
    constexpr int N = BN;
    constexpr int K = BK;
    const int groups = (int)(cols / N);
    extern __shared__ uint4 stage[];
    float dg[K][N], db[K][N];
    const int lane = (int)(threadIdx.x & 31);
    // A warp's 32 groups of one array, 64 float4 words, as two stores of 512 contiguous bytes.
    auto storeWarp = [&](const float (&a)[N], float* warpBase) {
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            const int src = half * 16 + (lane >> 1);
            float v[4];
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const float lo = __shfl_sync(0xffffffffu, a[i], src);
                const float hi = __shfl_sync(0xffffffffu, a[4 + i], src);
                v[i] = (lane & 1) ? hi : lo;
            }
            reinterpret_cast<float4*>(warpBase)[half * 32 + lane] = make_float4(v[0], v[1], v[2], v[3]);
        }
    };
    auto partEnd = [&](i64 part) {
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const int g = (int)threadIdx.x + k * (int)blockDim.x;
            float* gRow = dgammaPart + part * ldPart;
            float* bRow = dbetaPart + part * ldPart;
            if (MODE == 2) {
                if (g - lane < groups) {
                    storeWarp(dg[k], gRow + (i64)(g - lane) * N);
                    storeWarp(db[k], bRow + (i64)(g - lane) * N);
                }
            } else if (g < groups) {
#pragma unroll
                for (int q = 0; q < N / 4; ++q) {
                    const i64 at = MODE == 1 ? ((i64)q * groups + g) * 4 : (i64)g * N + 4 * q;
                    *reinterpret_cast<float4*>(gRow + at) =
                        make_float4(dg[k][4 * q], dg[k][4 * q + 1], dg[k][4 * q + 2], dg[k][4 * q + 3]);
                    *reinterpret_cast<float4*>(bRow + at) =
                        make_float4(db[k][4 * q], db[k][4 * q + 1], db[k][4 * q + 2], db[k][4 * q + 3]);
                }
            }
#pragma unroll
            for (int i = 0; i < N; ++i) dg[k][i] = db[k][i] = 0.f;
        }
    };
    staged_walk<SPLIT>(rows, cols, dy, x, mean, rstd, gamma, dx, rowsPerPart, stage, dg, db, partEnd);
}

// PROBE_SHAPE=RxC runs that shape only, PROBE_REPS=n times each variant n times (for a profiler's launch counts).
static bool wanted(long long rows, long long cols) {
    const char* only = getenv("PROBE_SHAPE");
    if (only == nullptr) return true;
    char shape[64];
    snprintf(shape, sizeof shape, "%lldx%lld", rows, cols);
    return strcmp(only, shape) == 0;
}

static int reps(int fallback) {
    const char* r = getenv("PROBE_REPS");
    return r == nullptr ? fallback : atoi(r);
}

int main() {
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    // 1. The forward.
    const long long fshapes[][2] = {{1024, 4096}, {2048, 4096}, {4096, 4096}, {8192, 4096}, {2048, 2048},
                                    {4096, 2048}};
    for (auto& sh : fshapes) {
        const long long rows = sh[0], cols = sh[1], n = rows * cols, bytes = n * 2;
        if (!wanted(rows, cols)) continue;
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
        const int wordBlock = (int)(((cols / 8 + 3) / 4 + 31) / 32 * 32);
        ubuf_layernorm_fwd_words_bf16<<<(int)rows, wordBlock>>>(rows, cols, x, cols, gamma, beta, 1e-5f, 0, ref, cols,
                                                               mean, rstd);
        CK(cudaDeviceSynchronize());
        const ProbeTimer timer{rows, cols, n, 2 * bytes, reps(300), sms, 40, ref, diff};
        auto time = [&](const char* name, auto launch) { timer.time(name, y, launch); };
        time("fwd memcpy d2d", [&] { cudaMemcpyAsync(y, x, bytes, cudaMemcpyDeviceToDevice); });
        time("fwd words (product before)", [&] {
            ubuf_layernorm_fwd_words_bf16<<<(int)rows, wordBlock>>>(rows, cols, x, cols, gamma, beta, 1e-5f, 0, y,
                                                                   cols, mean, rstd);
        });
        for (int warps : {4, 2, 1}) {
            char name[64];
            snprintf(name, sizeof name, "fwd warp a row, %d warps a block%s", warps, warps == 4 ? " (product)" : "");
            const int grid = (int)((rows + warps - 1) / warps);
            time(name, [&] {
                ubuf_layernorm_fwd_warp_bf16<<<grid, 32 * warps>>>(rows, cols, x, cols, gamma, beta, 1e-5f, 0, y, cols,
                                                                  mean, rstd);
            });
        }
        time("fwd words again", [&] {
            ubuf_layernorm_fwd_words_bf16<<<(int)rows, wordBlock>>>(rows, cols, x, cols, gamma, beta, 1e-5f, 0, y,
                                                                   cols, mean, rstd);
        });
        time("fwd warp a row, 4 warps again", [&] {
            ubuf_layernorm_fwd_warp_bf16<<<(int)((rows + 3) / 4), 128>>>(rows, cols, x, cols, gamma, beta, 1e-5f, 0,
                                                                        y, cols, mean, rstd);
        });
        cudaFree(x); cudaFree(y); cudaFree(ref); cudaFree(gamma); cudaFree(beta); cudaFree(mean); cudaFree(rstd);
        cudaFree(diff);
    }
    // 2. The backward's partial rows cut by clusters.
    const long long bshapes[][2] = {{2048, 4096}, {4096, 4096}, {2048, 8192}, {4096, 8192}};
    for (auto& sh : bshapes) {
        const long long rows = sh[0], cols = sh[1], n = rows * cols, bytes = n * 2;
        if (!wanted(rows, cols)) continue;
        const long long groups = cols / 8;
        const int block = (int)(((groups + 1) / 2 + 31) / 32 * 32);
        const long long resident = (long long)sms * (512 / block);
        long long rpp = rows / 256 > 8 ? rows / 256 : 8;
        if (rpp < (rows + resident - 1) / resident) rpp = (rows + resident - 1) / resident;
        const long long parts = (rows + rpp - 1) / rpp;
        const int grid = (int)(parts < resident ? parts : resident);
        bf *x, *dy, *dx, *ref, *gamma, *beta, *y, *dgamma, *dbeta;
        float *mean, *rstd, *part;
        char *cpySrc, *cpyDst;
        unsigned long long* diff;
        CK(cudaMalloc(&x, bytes));
        CK(cudaMalloc(&dy, bytes));
        CK(cudaMalloc(&dx, bytes));
        CK(cudaMalloc(&ref, bytes));
        CK(cudaMalloc(&y, bytes));
        CK(cudaMalloc(&gamma, cols * 2));
        CK(cudaMalloc(&beta, cols * 2));
        CK(cudaMalloc(&dgamma, cols * 2));
        CK(cudaMalloc(&dbeta, cols * 2));
        CK(cudaMalloc(&mean, rows * 4));
        CK(cudaMalloc(&rstd, rows * 4));
        CK(cudaMalloc(&part, 2 * (parts + 8) * cols * 4));
        CK(cudaMalloc(&diff, 8));
        CK(cudaMalloc(&cpySrc, bytes * 3 / 2));
        CK(cudaMalloc(&cpyDst, bytes * 3 / 2));
        probe_fill<<<sms * 4, 256>>>(x, n, 1u, 4.f);
        probe_fill<<<sms * 4, 256>>>(dy, n, 7u, 0.02f);
        probe_fill<<<sms, 256>>>(gamma, cols, 3u, 4.f);
        probe_fill<<<sms, 256>>>(beta, cols, 5u, 4.f);
        const int fwdBlock = (int)(((groups + 3) / 4 + 31) / 32 * 32);
        ubuf_layernorm_fwd_bf16<<<(int)rows, fwdBlock>>>(rows, cols, x, cols, gamma, beta, 1e-5f, 0, y, cols, mean,
                                                        rstd);
        const int smem = (int)(3 * 2 * groups * 16);
        CK(cudaFuncSetAttribute(ubuf_layernorm_bwd_staged_bf16, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
        float* dgp = part;
        float* dbp = part + (parts + 8) * cols;
        const int colGrid2 = (int)(2 * cols / 32 < sms * 8 ? 2 * cols / 32 : sms * 8);
        auto colSums2 = [&](long long p) {
            ubuf_col_sums2_f32_to_bf16<<<colGrid2, 512>>>(p, cols, dgp, dbp, cols, dgamma, dbeta, 0);
        };
        auto staged = [&](bf* out) {
            ubuf_layernorm_bwd_staged_bf16<<<grid, block, smem>>>(rows, cols, dy, cols, x, cols, mean, rstd, gamma, 0,
                                                                  out, cols, rpp, dgp, dbp, cols);
        };
        staged(ref);
        colSums2(parts);
        CK(cudaDeviceSynchronize());
        std::vector<uint16_t> refG(cols), gotG(cols);
        CK(cudaMemcpy(refG.data(), dgamma, cols * 2, cudaMemcpyDeviceToHost));
        auto dgammaDiff = [&]() {
            cudaDeviceSynchronize();
            cudaMemcpy(gotG.data(), dgamma, cols * 2, cudaMemcpyDeviceToHost);
            double worst = 0;
            for (long long c = 0; c < cols; ++c) {
                const float a = __bfloat162float(*reinterpret_cast<const bf*>(&refG[c]));
                const float b = __bfloat162float(*reinterpret_cast<const bf*>(&gotG[c]));
                worst = fmax(worst, fabs((double)a - b) / (fabs((double)a) + 1e-3));
            }
            printf("%lldx%lld    dgamma against the product's: worst relative difference %.3g\n", rows, cols, worst);
        };
        const ProbeTimer timer{rows, cols, n, 3 * bytes, reps(200), sms, 52, ref, diff};
        auto time = [&](const char* name, auto launch) { timer.time(name, dx, launch); };
        time("bwd memcpy d2d (same bytes)", [&] {
            cudaMemcpyAsync(cpyDst, cpySrc, bytes * 3 / 2, cudaMemcpyDeviceToDevice);
        });
        char name[96];
        snprintf(name, sizeof name, "bwd OP: product (staged + col sums, %lld parts)", parts);
        time(name, [&] { staged(dx); colSums2(parts); });
        time("bwd product staged kernel", [&] { staged(dx); });
        time("bwd product col sums", [&] { colSums2(parts); });
        auto cluster = [&](auto kernel, int c) {
            cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
            const int cgrid = (grid + c - 1) / c * c;
            const long long cparts = cgrid / c;
            snprintf(name, sizeof name, "bwd OP: clusters of %d (%lld partial rows)", c, cparts);
            time(name, [&] {
                kernel<<<cgrid, block, smem>>>(rows, cols, dy, x, mean, rstd, gamma, dx, rpp, dgp, dbp, cols);
                colSums2(cparts);
            });
            dgammaDiff();
            snprintf(name, sizeof name, "bwd   clusters of %d, the staged kernel alone", c);
            time(name, [&] {
                kernel<<<cgrid, block, smem>>>(rows, cols, dy, x, mean, rstd, gamma, dx, rpp, dgp, dbp, cols);
            });
            snprintf(name, sizeof name, "bwd   clusters of %d, the col sums alone", c);
            time(name, [&] { colSums2(cparts); });
        };
        auto stores = [&](auto kernel, const char* what) {
            cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
            snprintf(name, sizeof name, "bwd   staged kernel alone, partial rows %s", what);
            time(name, [&] {
                kernel<<<grid, block, smem>>>(rows, cols, dy, x, mean, rstd, gamma, dx, rpp, dgp, dbp, cols);
            });
            snprintf(name, sizeof name, "bwd OP: partial rows %s", what);
            time(name, [&] {
                kernel<<<grid, block, smem>>>(rows, cols, dy, x, mean, rstd, gamma, dx, rpp, dgp, dbp, cols);
                colSums2(parts);
            });
            dgammaDiff();
        };
        stores(staged_store<0>, "as the product");
        stores(staged_store<2>, "by shuffles, 512 B a store");
        stores(staged_store<1>, "q-major (sums wrong)");
        time("bwd product staged kernel again", [&] { staged(dx); });
        stores(staged_store<2>, "by shuffles, 512 B a store, again");
        stores(staged_store<2, true>, "by shuffles, the row sums in two chains");
        stores(staged_store<2>, "by shuffles, 512 B a store, third");
        stores(staged_store<2, true>, "by shuffles, the row sums in two chains, again");
        cluster(staged_cluster<2>, 2);
        snprintf(name, sizeof name, "bwd OP: product again");
        time(name, [&] { staged(dx); colSums2(parts); });
        cudaFree(x); cudaFree(dy); cudaFree(dx); cudaFree(ref); cudaFree(y); cudaFree(gamma); cudaFree(beta);
        cudaFree(dgamma); cudaFree(dbeta); cudaFree(mean); cudaFree(rstd); cudaFree(part); cudaFree(diff);
        cudaFree(cpySrc); cudaFree(cpyDst);
    }
    return 0;
}
