// Standalone probe (not part of the build), thirtieth session: the staged LayerNorm backward with a row's dy and x
// words read from the shared-memory slot twice (once for the row's sums, again after the barrier for dx) instead of
// held in registers across the barrier. The product holds them (16 registers at two groups a thread) and takes
// about 121 registers, so an SM holds two blocks of 256 threads at 4096 columns; Nsight showed it issue- and
// latency-bound at 3.7 warps a scheduler. Without them live across the barrier the kernel may fit 80 registers,
// three blocks an SM. Every variant adds the same sums in the same order as the product (dx and the partial rows
// compared bit for bit below). Variants: the re-read at the product's bounds, at (256 threads, 3 blocks) with 3 and
// 4 row slots, and each on the product's parts and on parts of rows / resident blocks rows.
// Outcome (bench/results/2026-11-29-session30/call1-probe-h200, one H200): the same bits everywhere (dx and the
// partial rows), 105 registers at the product's bounds and 80 without spills at (256, 3), but every re-read variant
// 1.3-1.5x slower than the product as an op (2048x4096 26.3 -> 34.4-34.9 us, 4096x8192 68.3 -> 104 us), even at the
// product's occupancy: the slot's second read after the barrier sits on the row's critical path. Not taken.
// Build and run (PROBE_SHAPE=RxC for one shape):
//   nvcc -arch=sm_90 -O3 -std=c++17 -I../src/main/cuda layernorm_bwd_reread_probe.cu -o reread && ./reread
#include <cstdlib>
#include <cstring>
#include <vector>

#include "../src/main/cuda/ubuf_layernorm.cu"
#include "../src/main/cuda/ubuf_colsum.cu"
#include "probe_common.cuh"

using bf = __nv_bfloat16;
using ubuf::i64;

namespace ubuf {

// layernorm_bwd_staged<T, false> with S row slots and the row's words re-read from its slot for dx.
template <class T, int S>
__device__ __forceinline__ void layernorm_bwd_reread(i64 rows, i64 cols, const T* dy, const T* x, const float* mean,
                                                     const float* rstd, const T* gamma, T* dx, i64 rowsPerPart,
                                                     float* dgammaPart, float* dbetaPart, i64 ldPart) {
    using G = ColGroups<T>;
    using Grp = LnBwdGroup<T, false>;
    constexpr int N = G::N;
    constexpr int K = LN_BWD_GROUPS;
    if (cols / N > (i64)K * blockDim.x) return;
    const int groups = (int)(cols / N);
    extern __shared__ uint4 stage[];
    __shared__ float scratchA[2][MAX_WARPS];
    __shared__ float scratchB[2][MAX_WARPS];
    int parity = 0;
    PartRows copying, computing;
    copying.start(rows, rowsPerPart);
    computing.start(rows, rowsPerPart);
    if (!computing.ok) return;
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
                    cp_async16(shared_addr(s + g), dyr + g);
                    cp_async16(shared_addr(s + groups + g), xr + g);
                }
            }
            copying.next(rows, rowsPerPart);
        }
        cp_async_commit();
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
    float dg[K][N], db[K][N];
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
        cp_async_wait<S - 1>();
        const uint4* s = stage + slot * 2 * groups;
        float s1 = 0.f, s2 = 0.f;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const int g = (int)threadIdx.x + k * (int)blockDim.x;
            if (g < groups) Grp::accumulate(s[g], s[groups + g], gammaRaw[k], N, rs, nmr, s1, s2, dg[k], db[k]);
        }
        block_sum2_alternating(s1, s2, scratchA, scratchB, parity);  // its barrier: the words are read again below
        const float c1 = -rs * (s1 / n);
        const float c2 = -rs * (s2 / n);
        T* dxr = dx + r * cols;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const int g = (int)threadIdx.x + k * (int)blockDim.x;
            if (g < groups) {
                float d[N];
                Grp::dx(s[g], s[groups + g], gammaRaw[k], rs, nmr, c1, c2, d);
                store_vec<T, N>(dxr + g * N, d);
            }
        }
        if (r + 1 == computing.end) {
#pragma unroll
            for (int k = 0; k < K; ++k) {
                const i64 g0 = (i64)(threadIdx.x & ~31u) + (i64)k * blockDim.x;
                store_warp_groups<N>(dg[k], dgammaPart + computing.part * ldPart, g0, groups);
                store_warp_groups<N>(db[k], dbetaPart + computing.part * ldPart, g0, groups);
#pragma unroll
                for (int i = 0; i < N; ++i) dg[k][i] = db[k][i] = 0.f;
            }
        }
        computing.next(rows, rowsPerPart);
        slot = slot + 1 == S ? 0 : slot + 1;
    }
    cp_async_wait<0>();
}

}  // namespace ubuf

template <int MAXT, int MINB, int S>
__global__ void __launch_bounds__(MAXT, MINB)
    reread(i64 rows, i64 cols, const bf* dy, const bf* x, const float* mean, const float* rstd, const bf* gamma,
           bf* dx, i64 rowsPerPart, float* dgammaPart, float* dbetaPart, i64 ldPart) {
    ubuf::layernorm_bwd_reread<bf, S>(rows, cols, dy, x, mean, rstd, gamma, dx, rowsPerPart, dgammaPart, dbetaPart,
                                      ldPart);
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
    const long long shapes[][2] = {{2048, 4096}, {4096, 4096}, {8192, 4096}, {2048, 8192}, {4096, 8192}};
    for (auto& sh : shapes) {
        const long long rows = sh[0], cols = sh[1], n = rows * cols, bytes = n * 2;
        if (!wanted(rows, cols)) continue;
        const long long groups = cols / 8;
        const int block = (int)(((groups + 1) / 2 + 31) / 32 * 32);
        // The product's parts (LayerKernels.layerNormBackward): rows / 256, at least 8, at least rows / resident.
        const long long resident = (long long)sms * (512 / block);
        long long rpp = (rows + 255) / 256 > 8 ? (rows + 255) / 256 : 8;
        if (rpp < (rows + resident - 1) / resident) rpp = (rows + resident - 1) / resident;
        const long long parts = (rows + rpp - 1) / rpp;
        const int grid = (int)(parts < resident ? parts : resident);
        const long long maxParts = 1024;
        bf *x, *dy, *dx, *ref, *gamma, *beta, *y, *dgamma, *dbeta;
        float *mean, *rstd, *part, *refPart;
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
        CK(cudaMalloc(&part, 2 * maxParts * cols * 4));
        CK(cudaMalloc(&refPart, 2 * maxParts * cols * 4));
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
        const int smem3 = (int)(3 * 2 * groups * 16);
        CK(cudaFuncSetAttribute(ubuf_layernorm_bwd_staged_bf16, cudaFuncAttributeMaxDynamicSharedMemorySize, smem3));
        const int colGrid2 = (int)(2 * cols / 32 < sms * 8 ? 2 * cols / 32 : sms * 8);
        auto colSums2 = [&](float* p, long long np) {
            ubuf_col_sums2_f32_to_bf16<<<colGrid2, 512>>>(np, cols, p, p + maxParts * cols, cols, dgamma, dbeta, 0);
        };
        auto product = [&](bf* out, float* p, long long r, int g) {
            ubuf_layernorm_bwd_staged_bf16<<<g, block, smem3>>>(rows, cols, dy, cols, x, cols, mean, rstd, gamma, 0,
                                                                out, cols, r, p, p + maxParts * cols, cols);
        };
        const ProbeTimer timer{rows, cols, n, 3 * bytes, 200, sms, 58, ref, diff};
        char name[128];
        printf("%lldx%lld block %d, product parts %lld of %lld rows, grid %d\n", rows, cols, block, parts, rpp, grid);
        timer.time("memcpy d2d (same bytes)", dx, [&] {
            cudaMemcpyAsync(cpyDst, cpySrc, bytes * 3 / 2, cudaMemcpyDeviceToDevice);
        });
        product(ref, refPart, rpp, grid);
        CK(cudaDeviceSynchronize());
        snprintf(name, sizeof name, "OP product (staged + col sums)");
        timer.time(name, dx, [&] { product(dx, part, rpp, grid); colSums2(part, parts); });
        timer.time("product staged kernel alone", dx, [&] { product(dx, part, rpp, grid); });
        // A variant on parts of `vr` rows: its time as an op and alone, dx and (on the product's parts) the partial
        // rows against the product's.
        auto variant = [&](const char* what, auto kernel, int threads, int minBlocks, int slots, long long vr) {
            const int smem = (int)(slots * 2 * groups * 16);
            cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
            int perSm = 0;
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, kernel, block, smem);
            cudaFuncAttributes fa;
            cudaFuncGetAttributes(&fa, kernel);
            const long long vParts = (rows + vr - 1) / vr;
            const long long vResident = (long long)sms * perSm;
            const int vGrid = (int)(vParts < vResident ? vParts : vResident);
            if (vParts > maxParts || block > threads) return;
            snprintf(name, sizeof name, "OP %s: %d regs %d/SM, %lld parts", what, fa.numRegs, perSm, vParts);
            timer.time(name, dx, [&] {
                kernel<<<vGrid, block, smem>>>(rows, cols, dy, x, mean, rstd, gamma, dx, vr, part,
                                               part + maxParts * cols, cols);
                colSums2(part, vParts);
            });
            snprintf(name, sizeof name, "   %s alone (local bytes %zu)", what, fa.localSizeBytes);
            timer.time(name, dx, [&] {
                kernel<<<vGrid, block, smem>>>(rows, cols, dy, x, mean, rstd, gamma, dx, vr, part,
                                               part + maxParts * cols, cols);
            });
            if (vr == rpp) {
                cudaDeviceSynchronize();
                cudaMemset(diff, 0, 8);
                probe_count_diff<<<sms * 4, 256>>>((const uint16_t*)part, (const uint16_t*)refPart,
                                                   2 * parts * cols, diff);  // 16-bit halves
                probe_count_diff<<<sms * 4, 256>>>((const uint16_t*)(part + maxParts * cols),
                                                   (const uint16_t*)(refPart + maxParts * cols), 2 * parts * cols,
                                                   diff);
                unsigned long long d = 0;
                cudaMemcpy(&d, diff, 8, cudaMemcpyDeviceToHost);
                printf("%lldx%lld    %s: partial rows differing from the product's (16-bit halves) %llu\n", rows,
                       cols, what, d);
            }
            (void)minBlocks;
        };
        for (int pass = 0; pass < 2; ++pass) {
            variant("reread (512,1) S3", reread<512, 1, 3>, 512, 1, 3, rpp);
            variant("reread (256,3) S3", reread<256, 3, 3>, 256, 3, 3, rpp);
            variant("reread (256,3) S4", reread<256, 3, 4>, 256, 3, 4, rpp);
            variant("reread (512,2) S3", reread<512, 2, 3>, 512, 2, 3, rpp);
            // Parts of rows / (3 blocks an SM) rows, so every resident block has one.
            const long long r3 = (rows + 3LL * sms * (512 / block) / 2 - 1) / (3LL * sms * (512 / block) / 2);
            if (r3 != rpp) {
                variant("reread (256,3) S3 short parts", reread<256, 3, 3>, 256, 3, 3, r3);
                variant("reread (256,3) S4 short parts", reread<256, 3, 4>, 256, 3, 4, r3);
            }
            timer.time("OP product again", dx, [&] { product(dx, part, rpp, grid); colSums2(part, parts); });
        }
        cudaFree(x); cudaFree(dy); cudaFree(dx); cudaFree(ref); cudaFree(y); cudaFree(gamma); cudaFree(beta);
        cudaFree(dgamma); cudaFree(dbeta); cudaFree(mean); cudaFree(rstd); cudaFree(part); cudaFree(refPart);
        cudaFree(diff); cudaFree(cpySrc); cudaFree(cpyDst);
    }
    return 0;
}
