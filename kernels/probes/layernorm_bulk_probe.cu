// Standalone probe (not part of the build), thirty-second session: the LayerNorm kernels with their rows brought
// into shared memory by the Hopper bulk copy (cp.async.bulk, one instruction a row, completion counted in bytes on
// an mbarrier) instead of per-thread copies or loads.
//   fwd_bulk<S>  the forward's word kernel (ubuf::layernorm_fwd_words: the same sums in the same order, so the same
//                bits) with each block walking rows blockIdx.x, + gridDim.x, ..., S rows in flight: thread 0 asks for
//                row j + S as soon as the block's first barrier of row j shows every thread holds row j's words.
//                The product runs one row a block, so an SM's later rows wait for its earlier blocks to end.
//   bwd_bulk<S>  the staged backward (ubuf::layernorm_bwd_staged: the same sums, the same bits) with thread 0
//                copying each row's dy and x (two bulk copies) S - 1 rows ahead, every thread waiting on the slot's
//                mbarrier; the product's threads each issue their own 16-byte cp.async copies (about 75 of its
//                ~570 instructions a row a thread at 4096 columns, thirty-first session's SASS).
//   staged_k<K>  the product's staged backward at K groups a thread and other launch bounds (more warps or blocks an
//                SM: K = 1 in 512 threads, or K = 2 capped at 80 registers for 3 blocks an SM).
// Results (bench/results/2026-11-29-session32/call2-*, call3-*, one H200; every output bit-equal to the product's
// where the sums' order is the same): nothing faster. The forward's bulk walk ran 1.07-1.10x the product's time at
// its best (2 stages, 8 blocks an SM; 11.4 against 10.3-10.6 us at 2048 x 4096), slower with more stages or fewer
// blocks; the backward's 18.6 against 18.7 us with 3 stages (equal), slower with 4 or 6; staged_k 1.14-1.25x slower
// (80 registers without spills 1.14x at the same grid; shorter parts for a third block an SM write more partial
// rows). Neither kernel waits on issuing its copies at 2048 rows; the variants stay behind PROBE_ALL.
// Build and run (PROBE_SHAPE=RxC for one shape, PROBE_ALL=1 for every bulk variant):
//   nvcc -arch=sm_90 -O3 -std=c++17 -I../src/main/cuda layernorm_bulk_probe.cu -o bulk && ./bulk
#include <cstdlib>
#include <cstring>

#include "../src/main/cuda/ubuf_layernorm.cu"
#include "../src/main/cuda/ubuf_colsum.cu"
#include "probe_common.cuh"

using bf = __nv_bfloat16;
using ubuf::i64;

namespace probe {

__device__ __forceinline__ unsigned smem(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void bar_init(unsigned bar) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void bar_init_fence() {
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
// Thread 0's arrival on a slot's barrier, expecting `bytes` from the copies that follow.
__device__ __forceinline__ void bar_expect(unsigned bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void bulk_copy(unsigned dst, const void* src, unsigned bytes, unsigned bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
                 "l"(src), "r"(bytes), "r"(bar)
                 : "memory");
}
__device__ __forceinline__ bool bar_try(unsigned bar, unsigned parity) {
    unsigned ok;
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(ok)
        : "r"(bar), "r"(parity)
        : "memory");
    return ok != 0;
}
__device__ __forceinline__ void bar_wait(unsigned bar, unsigned parity) {
    while (!bar_try(bar, parity)) {
    }
}
// Orders this thread's earlier shared-memory accesses before the bulk copies it issues next.
__device__ __forceinline__ void proxy_fence() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

template <int S, bool FENCE>
__global__ void __launch_bounds__(512, 2) fwd_bulk(i64 rows, i64 cols, const bf* x, const bf* gamma, const bf* beta,
                                                   float eps, bf* y, float* mean, float* rstd) {
    using R = ubuf::RawGroup<bf>;
    constexpr int N = 8;
    constexpr int K = ubuf::LN_FWD_GROUPS;
    const int groups = (int)(cols / N);
    if (groups > K * (int)blockDim.x || cols % N != 0) return;
    extern __shared__ __align__(128) uint4 stage[];  // S slots of one row
    __shared__ __align__(8) unsigned long long bars[S];
    __shared__ float scratch[2][ubuf::MAX_WARPS];
    int parity = 0;
    const unsigned rowBytes = 16u * (unsigned)groups;
    if (threadIdx.x == 0) {
        for (int i = 0; i < S; ++i) bar_init(smem(&bars[i]));
        bar_init_fence();
    }
    __syncthreads();
    i64 copyRow = blockIdx.x;
    int copySlot = 0;
    auto issue = [&]() {  // thread 0 only
        if (copyRow < rows) {
            const unsigned b = smem(&bars[copySlot]);
            bar_expect(b, rowBytes);
            bulk_copy(smem(stage + copySlot * groups), x + copyRow * cols, rowBytes, b);
            copyRow += gridDim.x;
        }
        copySlot = copySlot + 1 == S ? 0 : copySlot + 1;
    };
    if (threadIdx.x == 0) {
        for (int i = 0; i < S; ++i) issue();
    }
    const float n = (float)cols;
    const uint4* gammaW = reinterpret_cast<const uint4*>(gamma);
    const uint4* betaW = reinterpret_cast<const uint4*>(beta);
    unsigned phases = 0;  // bit i: the parity slot i's next wait expects
    int slot = 0;
    for (i64 row = blockIdx.x; row < rows; row += gridDim.x) {
        bar_wait(smem(&bars[slot]), (phases >> slot) & 1u);
        phases ^= 1u << slot;
        const uint4* sr = stage + slot * groups;
        uint4 raw[K];
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const int g = (int)threadIdx.x + k * (int)blockDim.x;
            if (g < groups) raw[k] = sr[g];
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
        // Every thread has its words of this slot: it can take row + S * gridDim.x.
        if (threadIdx.x == 0) {
            if (FENCE) proxy_fence();
            issue();
        }
        float q = 0.f;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const int g = (int)threadIdx.x + k * (int)blockDim.x;
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
        const float rs = 1.f / sqrtf(ubuf::block_sum_alternating(q, scratch, parity) / n + eps);
        bf* yr = y + row * cols;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const int g = (int)threadIdx.x + k * (int)blockDim.x;
            if (g < groups) {
                const uint4 gammaWord = gammaW[g];
                const uint4 betaWord = betaW[g];
                float v[N], gm[N], b[N];
                R::unpack(raw[k], v);
                R::unpack(gammaWord, gm);
                R::unpack(betaWord, b);
#pragma unroll
                for (int i = 0; i < N; ++i) v[i] = (v[i] - mu) * rs * gm[i] + b[i];
                ubuf::store_vec<bf, N>(yr + (i64)g * N, v);
            }
        }
        if (threadIdx.x == 0) {
            mean[row] = mu;
            rstd[row] = rs;
        }
        slot = slot + 1 == S ? 0 : slot + 1;
    }
}

// ubuf::layernorm_bwd_staged (gamma not zero-centred) with the copies as above.
template <int S, bool FENCE>
__global__ void __launch_bounds__(UBUF_MAX_THREADS)
    bwd_bulk(i64 rows, i64 cols, const bf* dy, const bf* x, const float* mean, const float* rstd, const bf* gamma,
             bf* dx, i64 rowsPerPart, float* dgammaPart, float* dbetaPart, i64 ldPart) {
    using G = ubuf::ColGroups<bf>;
    using Grp = ubuf::LnBwdGroup<bf, false>;
    constexpr int N = G::N;
    constexpr int K = ubuf::LN_BWD_GROUPS;
    if (rows <= 0 || cols <= 0 || rowsPerPart <= 0 || (blockDim.x & 31) != 0 || cols % N != 0) return;
    if (cols / N > (i64)K * blockDim.x) return;
    const int groups = (int)(cols / N);
    extern __shared__ __align__(128) uint4 stage[];  // S slots of [dy row | x row]
    __shared__ __align__(8) unsigned long long bars[S];
    __shared__ float scratchA[2][ubuf::MAX_WARPS];
    __shared__ float scratchB[2][ubuf::MAX_WARPS];
    int parity = 0;
    ubuf::PartRows copying, computing;
    copying.start(rows, rowsPerPart);
    computing.start(rows, rowsPerPart);
    if (!computing.ok) return;
    const unsigned rowBytes = 16u * (unsigned)groups;
    if (threadIdx.x == 0) {
        for (int i = 0; i < S; ++i) bar_init(smem(&bars[i]));
        bar_init_fence();
    }
    __syncthreads();
    const float n = (float)cols;
    int copySlot = 0, slot = 0;
    auto issue = [&]() {  // thread 0 only
        if (copying.ok) {
            const unsigned b = smem(&bars[copySlot]);
            const unsigned s = smem(stage + copySlot * 2 * groups);
            bar_expect(b, 2 * rowBytes);
            bulk_copy(s, dy + copying.row * cols, rowBytes, b);
            bulk_copy(s + rowBytes, x + copying.row * cols, rowBytes, b);
            copying.next(rows, rowsPerPart);
        }
        copySlot = copySlot + 1 == S ? 0 : copySlot + 1;
    };
    uint4 gammaRaw[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const int g = (int)threadIdx.x + k * (int)blockDim.x;
        if (g < groups) gammaRaw[k] = reinterpret_cast<const uint4*>(gamma)[g];
    }
    if (threadIdx.x == 0) {
#pragma unroll
        for (int i = 0; i < S - 1; ++i) issue();
    }
    float dg[K][N], db[K][N];
#pragma unroll
    for (int k = 0; k < K; ++k) {
#pragma unroll
        for (int i = 0; i < N; ++i) dg[k][i] = db[k][i] = 0.f;
    }
    float rsNext = rstd[computing.row], meanNext = mean[computing.row];
    unsigned phases = 0;
    while (computing.ok) {
        // Into the previous row's slot: every thread passed that row's barrier after reading it.
        if (threadIdx.x == 0) {
            if (FENCE) proxy_fence();
            issue();
        }
        const i64 r = computing.row;
        const float rs = rsNext;
        const float nmr = -meanNext * rs;
        const i64 following = computing.following(rowsPerPart);
        if (following < rows) {
            rsNext = rstd[following];
            meanNext = mean[following];
        }
        bar_wait(smem(&bars[slot]), (phases >> slot) & 1u);
        phases ^= 1u << slot;
        const uint4* s = stage + slot * 2 * groups;
        uint4 dyRaw[K], xRaw[K];
        float s1 = 0.f, s2 = 0.f;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const int g = (int)threadIdx.x + k * (int)blockDim.x;
            if (g < groups) {
                dyRaw[k] = s[g];
                xRaw[k] = s[groups + g];
                Grp::accumulate(dyRaw[k], xRaw[k], gammaRaw[k], N, rs, nmr, s1, s2, dg[k], db[k]);
            }
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
        if (r + 1 == computing.end) {
#pragma unroll
            for (int k = 0; k < K; ++k) {
                const i64 g0 = (i64)(threadIdx.x & ~31u) + (i64)k * blockDim.x;
                ubuf::store_warp_groups<N>(dg[k], dgammaPart + computing.part * ldPart, g0, groups);
                ubuf::store_warp_groups<N>(db[k], dbetaPart + computing.part * ldPart, g0, groups);
#pragma unroll
                for (int i = 0; i < N; ++i) dg[k][i] = db[k][i] = 0.f;
            }
        }
        computing.next(rows, rowsPerPart);
        slot = slot + 1 == S ? 0 : slot + 1;
    }
}

// The product's staged backward (cp.async copies, 3 stages) at K column groups a thread, in blocks of groups / K
// threads: K = 1 doubles the warps a row (a 4096-column row in 512 threads), so two blocks an SM hold 32 warps where
// the product's hold 16, at most 64 registers. The same partial rows; other dx bits (the block sums over more warps).
template <int K, int MAXT, int MINB>
__global__ void __launch_bounds__(MAXT, MINB)
    staged_k(i64 rows, i64 cols, const bf* dy, const bf* x, const float* mean, const float* rstd, const bf* gamma,
             bf* dx, i64 rowsPerPart, float* dgammaPart, float* dbetaPart, i64 ldPart) {
    ubuf::layernorm_bwd_staged<bf, false, K>(rows, cols, dy, cols, x, cols, mean, rstd, gamma, dx, cols, rowsPerPart,
                                             dgammaPart, dbetaPart, ldPart);
}

}  // namespace probe

static bool wanted(long long rows, long long cols) {
    const char* only = getenv("PROBE_SHAPE");
    if (only == nullptr) return true;
    char shape[64];
    snprintf(shape, sizeof shape, "%lldx%lld", rows, cols);
    return strcmp(only, shape) == 0;
}

static unsigned long long count_diff(const void* a, const void* b, long long halves, int sms,
                                     unsigned long long* diff) {
    cudaDeviceSynchronize();
    cudaMemset(diff, 0, 8);
    probe_count_diff<<<sms * 4, 256>>>((const uint16_t*)a, (const uint16_t*)b, halves, diff);
    unsigned long long d = 0;
    cudaMemcpy(&d, diff, 8, cudaMemcpyDeviceToHost);
    return d;
}

int main() {
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const long long shapes[][2] = {{2048, 4096}, {4096, 4096}, {2048, 8192}, {4096, 8192}};
    for (auto& sh : shapes) {
        const long long rows = sh[0], cols = sh[1], n = rows * cols, bytes = n * 2;
        if (!wanted(rows, cols)) continue;
        const long long groups = cols / 8;
        const long long maxParts = 1024;
        bf *x, *dy, *dx, *refDx, *gamma, *beta, *y, *refY, *dgamma, *dbeta, *refDgamma, *refDbeta;
        float *mean, *rstd, *refMean, *refRstd, *part, *refPart;
        char *cpySrc, *cpyDst;
        unsigned long long* diff;
        CK(cudaMalloc(&x, bytes));
        CK(cudaMalloc(&dy, bytes));
        CK(cudaMalloc(&dx, bytes));
        CK(cudaMalloc(&refDx, bytes));
        CK(cudaMalloc(&y, bytes));
        CK(cudaMalloc(&refY, bytes));
        CK(cudaMalloc(&gamma, cols * 2));
        CK(cudaMalloc(&beta, cols * 2));
        CK(cudaMalloc(&dgamma, cols * 2));
        CK(cudaMalloc(&dbeta, cols * 2));
        CK(cudaMalloc(&refDgamma, cols * 2));
        CK(cudaMalloc(&refDbeta, cols * 2));
        CK(cudaMalloc(&mean, rows * 4));
        CK(cudaMalloc(&rstd, rows * 4));
        CK(cudaMalloc(&refMean, rows * 4));
        CK(cudaMalloc(&refRstd, rows * 4));
        CK(cudaMalloc(&part, 2 * maxParts * cols * 4));
        CK(cudaMalloc(&refPart, 2 * maxParts * cols * 4));
        CK(cudaMalloc(&diff, 8));
        CK(cudaMalloc(&cpySrc, bytes * 3 / 2));
        CK(cudaMalloc(&cpyDst, bytes * 3 / 2));
        probe_fill<<<sms * 4, 256>>>(x, n, 1u, 4.f);
        probe_fill<<<sms * 4, 256>>>(dy, n, 7u, 0.02f);
        probe_fill<<<sms, 256>>>(gamma, cols, 3u, 4.f);
        probe_fill<<<sms, 256>>>(beta, cols, 5u, 4.f);
        char name[160];

        // Forward: the product's word kernel, a block (of the fewest warps that hold the row in 4 words a thread)
        // a row, against fwd_bulk at several resident blocks an SM and stages.
        const int fwdBlock = (int)(((groups + 3) / 4 + 31) / 32 * 32);
        auto fwdProduct = [&](bf* out, float* m, float* r) {
            ubuf_layernorm_fwd_words_bf16<<<(int)rows, fwdBlock>>>(rows, cols, x, cols, gamma, beta, 1e-5f, 0, out,
                                                                  cols, m, r);
        };
        fwdProduct(refY, refMean, refRstd);
        CK(cudaDeviceSynchronize());
        const ProbeTimer fwdTimer{rows, cols, n, 2 * bytes, 200, sms, 58, refY, diff};
        printf("%lldx%lld forward, block %d\n", rows, cols, fwdBlock);
        auto fwdVariant = [&](const char* what, auto kernel, int stages, int perSm) {
            const int smemBytes = (int)(stages * groups * 16);
            cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smemBytes);
            int fit = 0;
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, kernel, fwdBlock, smemBytes);
            cudaFuncAttributes fa;
            cudaFuncGetAttributes(&fa, kernel);
            const int per = perSm < fit ? perSm : fit;
            const long long g = (long long)sms * per < rows ? (long long)sms * per : rows;
            snprintf(name, sizeof name, "FWD %s, %d/SM (fit %d, %d regs)", what, per, fit, fa.numRegs);
            cudaMemset(y, 0xff, bytes);
            fwdTimer.time(name, y, [&] {
                kernel<<<(int)g, fwdBlock, smemBytes>>>(rows, cols, x, gamma, beta, 1e-5f, y, mean, rstd);
            });
            const unsigned long long dm = count_diff(mean, refMean, 2 * rows, sms, diff)
                                          + count_diff(rstd, refRstd, 2 * rows, sms, diff);
            if (dm != 0) printf("%lldx%lld    %s: mean/rstd halves differing %llu\n", rows, cols, name, dm);
        };
        for (int pass = 0; pass < 2; ++pass) {
            fwdTimer.time("memcpy d2d (same bytes)", refY, [&] {
                cudaMemcpyAsync(cpyDst, cpySrc, bytes, cudaMemcpyDeviceToDevice);
            });
            fwdTimer.time("FWD product words, a block a row", y, [&] { fwdProduct(y, mean, rstd); });
            fwdVariant("bulk S2 fenced", probe::fwd_bulk<2, true>, 2, 8);
            if (getenv("PROBE_ALL") != nullptr) {
                for (int per : {2, 4, 8, 16}) {
                    fwdVariant("bulk S2", probe::fwd_bulk<2, false>, 2, per);
                    fwdVariant("bulk S3", probe::fwd_bulk<3, false>, 3, per);
                    fwdVariant("bulk S4", probe::fwd_bulk<4, false>, 4, per);
                }
                fwdVariant("bulk S4 fenced", probe::fwd_bulk<4, true>, 4, 4);
            }
        }

        // Backward: the product's staged kernel and column sums at the product's parts, against bwd_bulk.
        ubuf_layernorm_fwd_bf16<<<(int)rows, fwdBlock>>>(rows, cols, x, cols, gamma, beta, 1e-5f, 0, y, cols, mean,
                                                        rstd);
        const int block = (int)(((groups + 1) / 2 + 31) / 32 * 32);
        const long long resident = (long long)sms * (512 / block);
        long long rpp = (rows + 255) / 256 > 8 ? (rows + 255) / 256 : 8;
        if (rpp < (rows + resident - 1) / resident) rpp = (rows + resident - 1) / resident;
        const long long parts = (rows + rpp - 1) / rpp;
        const int grid = (int)(parts < resident ? parts : resident);
        const int smem3 = (int)(3 * 2 * groups * 16);
        CK(cudaFuncSetAttribute(ubuf_layernorm_bwd_staged_bf16, cudaFuncAttributeMaxDynamicSharedMemorySize, smem3));
        const int colGrid2 = (int)(2 * cols / 32 < sms * 8 ? 2 * cols / 32 : sms * 8);
        auto colSums2 = [&](float* p, long long np) {
            ubuf_col_sums2_f32_to_bf16<<<colGrid2, 512>>>(np, cols, p, p + maxParts * cols, cols, dgamma, dbeta, 0);
        };
        auto product = [&](bf* out, float* p) {
            ubuf_layernorm_bwd_staged_bf16<<<grid, block, smem3>>>(rows, cols, dy, cols, x, cols, mean, rstd, gamma,
                                                                   0, out, cols, rpp, p, p + maxParts * cols, cols);
        };
        product(refDx, refPart);
        colSums2(refPart, parts);
        CK(cudaMemcpy(refDgamma, dgamma, cols * 2, cudaMemcpyDeviceToDevice));
        CK(cudaMemcpy(refDbeta, dbeta, cols * 2, cudaMemcpyDeviceToDevice));
        CK(cudaDeviceSynchronize());
        const ProbeTimer timer{rows, cols, n, 3 * bytes, 200, sms, 58, refDx, diff};
        printf("%lldx%lld backward, block %d, product parts %lld of %lld rows, grid %d\n", rows, cols, block, parts,
               rpp, grid);
        // rowsPerPart 0: the product's parts; else parts of that many rows (other dgamma/dbeta bits).
        auto bwdVariant = [&](const char* what, auto kernel, int stages, long long rowsPer, int k = 2) {
            const int vblock = (int)(((groups + k - 1) / k + 31) / 32 * 32);
            if (vblock > 512) return;
            const long long vrpp = rowsPer == 0 ? rpp : rowsPer;
            const long long vparts = (rows + vrpp - 1) / vrpp;
            const int smemBytes = (int)(stages * 2 * groups * 16);
            cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smemBytes);
            int fit = 0;
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, kernel, vblock, smemBytes);
            cudaFuncAttributes fa;
            cudaFuncGetAttributes(&fa, kernel);
            const long long res = (long long)sms * fit;
            const int vgrid = (int)(vparts < res ? vparts : res);
            snprintf(name, sizeof name, "BWD %s, parts of %lld, grid %d x %d (%d/SM, %d regs)", what, vrpp, vgrid,
                     vblock, fit, fa.numRegs);
            cudaMemset(dx, 0xff, bytes);
            timer.time(name, dx, [&] {
                kernel<<<vgrid, vblock, smemBytes>>>(rows, cols, dy, x, mean, rstd, gamma, dx, vrpp, part,
                                                    part + maxParts * cols, cols);
                colSums2(part, vparts);
            });
            const unsigned long long dp = count_diff(dgamma, refDgamma, cols, sms, diff)
                                          + count_diff(dbeta, refDbeta, cols, sms, diff);
            printf("%lldx%lld    %s: dgamma/dbeta differing %llu%s\n", rows, cols, name, dp,
                   rowsPer == 0 ? "" : " (other parts: other sums)");
            snprintf(name, sizeof name, "   alone: %s S%d parts of %lld", what, stages, vrpp);
            timer.time(name, dx, [&] {
                kernel<<<vgrid, vblock, smemBytes>>>(rows, cols, dy, x, mean, rstd, gamma, dx, vrpp, part,
                                                    part + maxParts * cols, cols);
            });
        };
        for (int pass = 0; pass < 2; ++pass) {
            timer.time("memcpy d2d (same bytes)", refDx, [&] {
                cudaMemcpyAsync(cpyDst, cpySrc, bytes * 3 / 2, cudaMemcpyDeviceToDevice);
            });
            timer.time("BWD product (staged + col sums)", dx, [&] { product(dx, part); colSums2(part, parts); });
            timer.time("   product staged kernel alone", dx, [&] { product(dx, part); });
            if (getenv("PROBE_ALL") != nullptr) {
                bwdVariant("bulk S3", probe::bwd_bulk<3, false>, 3, 0);
                bwdVariant("bulk S3 fenced", probe::bwd_bulk<3, true>, 3, 0);
                bwdVariant("bulk S4", probe::bwd_bulk<4, false>, 4, 0);
                bwdVariant("bulk S6", probe::bwd_bulk<6, false>, 6, 0);
                bwdVariant("bulk S4", probe::bwd_bulk<4, false>, 4, 2 * rpp);
                bwdVariant("bulk S6", probe::bwd_bulk<6, false>, 6, 2 * rpp);
                bwdVariant("bulk S6", probe::bwd_bulk<6, false>, 6, 4 * rpp);
            }
            bwdVariant("staged K2 (256,2)", probe::staged_k<2, 256, 2>, 3, 0, 2);
            bwdVariant("staged K2 (256,3)", probe::staged_k<2, 256, 3>, 3, 0, 2);
            bwdVariant("staged K2 (256,3)", probe::staged_k<2, 256, 3>, 3, rpp * 3 / 4, 2);
            bwdVariant("staged K2 (256,3)", probe::staged_k<2, 256, 3>, 3, rpp * 5 / 8, 2);
            bwdVariant("staged K1 (512,2)", probe::staged_k<1, 512, 2>, 3, 0, 1);
            bwdVariant("staged K1 (512,1)", probe::staged_k<1, 512, 1>, 3, 0, 1);
        }
        cudaFree(x); cudaFree(dy); cudaFree(dx); cudaFree(refDx); cudaFree(y); cudaFree(refY); cudaFree(gamma);
        cudaFree(beta); cudaFree(dgamma); cudaFree(dbeta); cudaFree(refDgamma); cudaFree(refDbeta); cudaFree(mean);
        cudaFree(rstd); cudaFree(refMean); cudaFree(refRstd); cudaFree(part); cudaFree(refPart); cudaFree(diff);
        cudaFree(cpySrc); cudaFree(cpyDst);
    }
    return 0;
}
