// Standalone probe (not part of the build), thirty-first session: the staged LayerNorm backward with less work a row
// outside its elements. Its sm_90 SASS (bench/results/2026-11-29-session31/call1-f8d86ef-h200/ln.sass.gz) spends
// about 570 instructions a row a thread at 4096 columns (16 elements a thread): 320 on the elements, the rest on
// the block sums' add of the warp totals (a runtime loop of scalar shared loads, about 110 executed), issuing the
// next row's copies (75: a generic-to-shared conversion and 64-bit row offsets every row) and the walk. Variants,
// each the product's staged kernel with the same sums in the same order (dx and the partial rows compared bit for
// bit with the product's):
//   vsum   the warp totals read four at a time (float4 shared loads), added in the same order;
//   ahead  the next row's mean and rstd loaded a row ahead, so the row's first adds never wait on them;
//   issue  the copies issued from shared addresses and per-thread offsets computed once.
// Build and run (PROBE_SHAPE=RxC for one shape):
//   nvcc -arch=sm_90 -O3 -std=c++17 -I../src/main/cuda layernorm_bwd_lean_probe.cu -o lean && ./lean
#include <cstdlib>
#include <cstring>
#include <vector>

#include "../src/main/cuda/ubuf_layernorm.cu"
#include "../src/main/cuda/ubuf_colsum.cu"
#include "probe_common.cuh"

using bf = __nv_bfloat16;
using ubuf::i64;

namespace ubuf {

// warp_totals_sum2 with the totals read as float4 words where the warps come in fours: the same adds in the same
// order (0 + t0 + t1 + ...), so the same bits. The totals must be 16-byte aligned.
__device__ __forceinline__ void warp_totals_sum2_vec(float& a, float& b, float* totalsA, float* totalsB) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        a += __shfl_xor_sync(0xffffffffu, a, o);
        b += __shfl_xor_sync(0xffffffffu, b, o);
    }
    if ((threadIdx.x & 31) == 0) {
        totalsA[threadIdx.x >> 5] = a;
        totalsB[threadIdx.x >> 5] = b;
    }
    __syncthreads();
    const int warps = (int)(blockDim.x >> 5);
    float ta = 0.f, tb = 0.f;
    if ((warps & 3) == 0) {
        const float4* a4 = reinterpret_cast<const float4*>(totalsA);
        const float4* b4 = reinterpret_cast<const float4*>(totalsB);
        for (int w = 0; w < warps / 4; ++w) {
            const float4 va = a4[w], vb = b4[w];
            ta += va.x; ta += va.y; ta += va.z; ta += va.w;
            tb += vb.x; tb += vb.y; tb += vb.z; tb += vb.w;
        }
    } else {
        for (int w = 0; w < warps; ++w) {
            ta += totalsA[w];
            tb += totalsB[w];
        }
    }
    a = ta;
    b = tb;
}

template <class T, int S, bool VSUM, bool AHEAD, bool ISSUE, bool GF>
__device__ __forceinline__ void layernorm_bwd_lean(i64 rows, i64 cols, const T* dy, const T* x, const float* mean,
                                                   const float* rstd, const T* gamma, T* dx, i64 rowsPerPart,
                                                   float* dgammaPart, float* dbetaPart, i64 ldPart) {
    using G = ColGroups<T>;
    using Grp = LnBwdGroup<T, false>;
    constexpr int N = G::N;
    constexpr int K = LN_BWD_GROUPS;
    if (cols / N > (i64)K * blockDim.x) return;
    const int groups = (int)(cols / N);
    extern __shared__ uint4 stage[];
    __shared__ __align__(16) float scratchA[2][MAX_WARPS];
    __shared__ __align__(16) float scratchB[2][MAX_WARPS];
    int parity = 0;
    PartRows copying, computing;
    copying.start(rows, rowsPerPart);
    computing.start(rows, rowsPerPart);
    if (!computing.ok) return;
    const float n = (float)cols;
    int copySlot = 0, slot = 0;
    // ISSUE: this thread's shared addresses of slot 0 (dy word, x word, per k) and the bytes a slot takes.
    const unsigned sbase = (unsigned)__cvta_generic_to_shared(stage) + 16u * threadIdx.x;
    const unsigned slotBytes = 32u * (unsigned)groups;
    const unsigned kBytes = 16u * blockDim.x;
    auto issue = [&]() {
        if (copying.ok) {
            if (ISSUE) {
                const char* dyr = reinterpret_cast<const char*>(dy + copying.row * cols) + 16 * threadIdx.x;
                const char* xr = reinterpret_cast<const char*>(x + copying.row * cols) + 16 * threadIdx.x;
                const unsigned s = sbase + copySlot * slotBytes;
#pragma unroll
                for (int k = 0; k < K; ++k) {
                    const int g = (int)threadIdx.x + k * (int)blockDim.x;
                    if (g < groups) {
                        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s + k * kBytes),
                                     "l"(dyr + k * kBytes));
                        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s + 16u * groups + k * kBytes),
                                     "l"(xr + k * kBytes));
                    }
                }
            } else {
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
            }
            copying.next(rows, rowsPerPart);
        }
        cp_async_commit();
        copySlot = copySlot + 1 == S ? 0 : copySlot + 1;
    };
    uint4 gammaRaw[K];
    float gammaF[K][N];  // GF: gamma unpacked once (the same values: unpacking is exact)
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const int g = (int)threadIdx.x + k * (int)blockDim.x;
        if (g < groups) gammaRaw[k] = reinterpret_cast<const uint4*>(gamma)[g];
        if (GF) RawGroup<T>::unpack(gammaRaw[k], gammaF[k]);
    }
#pragma unroll
    for (int i = 0; i < S - 1; ++i) issue();
    float dg[K][N], db[K][N];
#pragma unroll
    for (int k = 0; k < K; ++k) {
#pragma unroll
        for (int i = 0; i < N; ++i) dg[k][i] = db[k][i] = 0.f;
    }
    float rsAhead = 0.f, meanAhead = 0.f;
    if (AHEAD) {
        rsAhead = rstd[computing.row];
        meanAhead = mean[computing.row];
    }
    while (computing.ok) {
        issue();
        const i64 r = computing.row;
        float rs, nmr;
        if (AHEAD) {
            rs = rsAhead;
            nmr = -meanAhead * rs;
            const i64 nr = r + 1 < computing.end ? r + 1 : (computing.part + gridDim.x) * rowsPerPart;
            if (nr < rows) {
                rsAhead = rstd[nr];
                meanAhead = mean[nr];
            }
        } else {
            rs = rstd[r];
            nmr = -mean[r] * rs;
        }
        cp_async_wait<S - 1>();
        const uint4* s = stage + slot * 2 * groups;
        uint4 dyRaw[K], xRaw[K];
        float s1 = 0.f, s2 = 0.f;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const int g = (int)threadIdx.x + k * (int)blockDim.x;
            if (g < groups) {
                dyRaw[k] = s[g];
                xRaw[k] = s[groups + g];
                if (GF) {
                    // Grp::accumulate's terms in its order, gamma from registers.
                    float d[N], v[N];
                    RawGroup<T>::unpack(dyRaw[k], d);
                    RawGroup<T>::unpack(xRaw[k], v);
#pragma unroll
                    for (int i = 0; i < N; ++i) {
                        const float xhat = ln_xhat(v[i], rs, nmr);
                        const float dxhat = Grp::scaled(d[i], gammaF[k][i]);
                        s1 += dxhat;
                        s2 += dxhat * xhat;
                        dg[k][i] += d[i] * xhat;
                        db[k][i] += d[i];
                    }
                } else {
                    Grp::accumulate(dyRaw[k], xRaw[k], gammaRaw[k], N, rs, nmr, s1, s2, dg[k], db[k]);
                }
            }
        }
        if (VSUM) {
            float* halfA = scratchA[parity];
            float* halfB = scratchB[parity];
            parity ^= 1;
            warp_totals_sum2_vec(s1, s2, halfA, halfB);
        } else {
            block_sum2_alternating(s1, s2, scratchA, scratchB, parity);
        }
        const float c1 = -rs * (s1 / n);
        const float c2 = -rs * (s2 / n);
        T* dxr = dx + r * cols;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const int g = (int)threadIdx.x + k * (int)blockDim.x;
            if (g < groups) {
                float d[N];
                if (GF) {
                    float v[N];
                    RawGroup<T>::unpack(dyRaw[k], d);
                    RawGroup<T>::unpack(xRaw[k], v);
#pragma unroll
                    for (int i = 0; i < N; ++i) d[i] = Grp::dx_element(d[i], v[i], gammaF[k][i], rs, nmr, c1, c2);
                } else {
                    Grp::dx(dyRaw[k], xRaw[k], gammaRaw[k], rs, nmr, c1, c2, d);
                }
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

// col_sums2_f32 with a lane adding four adjacent columns (float4 loads: a warp reads 512 contiguous bytes of a
// partial row instead of 128): warp w adds parts w, w + warps, ... as there, then warp 0 the warps' sums in warp
// order, so every column gets the same adds in the same order for the same blockDim (the same bits). cols and
// ldPart multiples of 4, the partial rows 16-byte aligned.
template <class D>
__device__ __forceinline__ void col_sums2_f32_v4(i64 parts, i64 cols, const float* partA, const float* partB,
                                                 i64 ldPart, D* dstA, D* dstB, int accumulate) {
    __shared__ float4 warpSums[MAX_WARPS][32];
    const int lane = (int)(threadIdx.x & 31);
    const int warp = (int)(threadIdx.x >> 5);
    const int warps = (int)(blockDim.x >> 5);
    const i64 tiles = (cols + 127) / 128;
    for (i64 tile = blockIdx.x; tile < 2 * tiles; tile += gridDim.x) {
        const bool second = tile >= tiles;
        const float* part = second ? partB : partA;
        D* dst = second ? dstB : dstA;
        const i64 c = ((second ? tile - tiles : tile) * 32 + lane) * 4;
        float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
        if (c < cols) {
#pragma unroll 8
            for (i64 p = warp; p < parts; p += warps) {
                const float4 v = *reinterpret_cast<const float4*>(part + p * ldPart + c);
                acc.x += v.x; acc.y += v.y; acc.z += v.z; acc.w += v.w;
            }
        }
        warpSums[warp][lane] = acc;
        __syncthreads();
        if (warp == 0 && c < cols) {
            float4 t = warpSums[0][lane];
            for (int w = 1; w < warps; ++w) {
                const float4 v = warpSums[w][lane];
                t.x += v.x; t.y += v.y; t.z += v.z; t.w += v.w;
            }
            if (accumulate) {
                t.x = Elem<D>::load(dst[c]) + t.x;
                t.y = Elem<D>::load(dst[c + 1]) + t.y;
                t.z = Elem<D>::load(dst[c + 2]) + t.z;
                t.w = Elem<D>::load(dst[c + 3]) + t.w;
            }
            dst[c] = Elem<D>::store(t.x);
            dst[c + 1] = Elem<D>::store(t.y);
            dst[c + 2] = Elem<D>::store(t.z);
            dst[c + 3] = Elem<D>::store(t.w);
        }
        __syncthreads();
    }
}

}  // namespace ubuf

__global__ void __launch_bounds__(UBUF_MAX_THREADS)
    colsums4(long long parts, long long cols, const float* partA, const float* partB, long long ldPart, bf* dstA,
             bf* dstB, int accumulate) {
    ubuf::col_sums2_f32_v4<bf>(parts, cols, partA, partB, ldPart, dstA, dstB, accumulate);
}

template <bool VSUM, bool AHEAD, bool ISSUE, bool GF = false>
__global__ void __launch_bounds__(UBUF_MAX_THREADS)
    lean(i64 rows, i64 cols, const bf* dy, const bf* x, const float* mean, const float* rstd, const bf* gamma, bf* dx,
         i64 rowsPerPart, float* dgammaPart, float* dbetaPart, i64 ldPart) {
    ubuf::layernorm_bwd_lean<bf, ubuf::LN_BWD_STAGES, VSUM, AHEAD, ISSUE, GF>(rows, cols, dy, x, mean, rstd, gamma, dx,
                                                                         rowsPerPart, dgammaPart, dbetaPart, ldPart);
}

// The same at (256 threads, 2 blocks an SM): at most 128 registers.
template <bool GF>
__global__ void __launch_bounds__(256, 2)
    lean2(i64 rows, i64 cols, const bf* dy, const bf* x, const float* mean, const float* rstd, const bf* gamma, bf* dx,
          i64 rowsPerPart, float* dgammaPart, float* dbetaPart, i64 ldPart) {
    if (blockDim.x > 256) return;
    ubuf::layernorm_bwd_lean<bf, ubuf::LN_BWD_STAGES, false, true, true, GF>(rows, cols, dy, x, mean, rstd, gamma, dx,
                                                                           rowsPerPart, dgammaPart, dbetaPart, ldPart);
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
        bf *refDgamma, *refDbeta;
        CK(cudaMalloc(&refDgamma, cols * 2));
        CK(cudaMalloc(&refDbeta, cols * 2));
        auto colSums4 = [&](float* p, long long np) {
            colsums4<<<(int)(2 * ((cols + 127) / 128)), 512>>>(np, cols, p, p + maxParts * cols, cols, dgamma, dbeta,
                                                               0);
        };
        auto product = [&](bf* out, float* p) {
            ubuf_layernorm_bwd_staged_bf16<<<grid, block, smem3>>>(rows, cols, dy, cols, x, cols, mean, rstd, gamma,
                                                                   0, out, cols, rpp, p, p + maxParts * cols, cols);
        };
        const ProbeTimer timer{rows, cols, n, 3 * bytes, 200, sms, 58, ref, diff};
        char name[128];
        printf("%lldx%lld block %d, product parts %lld of %lld rows, grid %d\n", rows, cols, block, parts, rpp, grid);
        timer.time("memcpy d2d (same bytes)", dx, [&] {
            cudaMemcpyAsync(cpyDst, cpySrc, bytes * 3 / 2, cudaMemcpyDeviceToDevice);
        });
        product(ref, refPart);
        colSums2(refPart, parts);
        CK(cudaMemcpy(refDgamma, dgamma, cols * 2, cudaMemcpyDeviceToDevice));
        CK(cudaMemcpy(refDbeta, dbeta, cols * 2, cudaMemcpyDeviceToDevice));
        CK(cudaDeviceSynchronize());
        auto variant = [&](const char* what, auto kernel, bool four) {
            cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem3);
            int perSm = 0;
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, kernel, block, smem3);
            cudaFuncAttributes fa;
            cudaFuncGetAttributes(&fa, kernel);
            snprintf(name, sizeof name, "OP %s: %d regs %d/SM", what, fa.numRegs, perSm);
            timer.time(name, dx, [&] {
                kernel<<<grid, block, smem3>>>(rows, cols, dy, x, mean, rstd, gamma, dx, rpp, part,
                                               part + maxParts * cols, cols);
                if (four) colSums4(part, parts);
                else colSums2(part, parts);
            });
            cudaDeviceSynchronize();
            cudaMemset(diff, 0, 8);
            probe_count_diff<<<1, 256>>>((const uint16_t*)dgamma, (const uint16_t*)refDgamma, cols, diff);
            probe_count_diff<<<1, 256>>>((const uint16_t*)dbeta, (const uint16_t*)refDbeta, cols, diff);
            unsigned long long dp = 0;
            cudaMemcpy(&dp, diff, 8, cudaMemcpyDeviceToHost);
            printf("%lldx%lld    %s: dgamma and dbeta differing from the product's %llu\n", rows, cols, what, dp);
            snprintf(name, sizeof name, "   %s alone (local bytes %zu)", what, fa.localSizeBytes);
            timer.time(name, dx, [&] {
                kernel<<<grid, block, smem3>>>(rows, cols, dy, x, mean, rstd, gamma, dx, rpp, part,
                                               part + maxParts * cols, cols);
            });
            cudaDeviceSynchronize();
            cudaMemset(diff, 0, 8);
            probe_count_diff<<<sms * 4, 256>>>((const uint16_t*)part, (const uint16_t*)refPart, 2 * parts * cols,
                                               diff);
            probe_count_diff<<<sms * 4, 256>>>((const uint16_t*)(part + maxParts * cols),
                                               (const uint16_t*)(refPart + maxParts * cols), 2 * parts * cols, diff);
            unsigned long long d = 0;
            cudaMemcpy(&d, diff, 8, cudaMemcpyDeviceToHost);
            printf("%lldx%lld    %s: partial rows differing from the product's (16-bit halves) %llu\n", rows, cols,
                   what, d);
        };
        for (int pass = 0; pass < 2; ++pass) {
            timer.time("OP product (staged + col sums)", dx, [&] { product(dx, part); colSums2(part, parts); });
            timer.time("   product staged kernel alone", dx, [&] { product(dx, part); });
            if (getenv("PROBE_ALL") != nullptr) {
                variant("probe's copy of the product", lean<false, false, false>, false);
                variant("col sums by float4", lean<false, false, false>, true);
                variant("ahead", lean<false, true, false>, false);
                variant("ahead+issue, col sums by float4", lean<false, true, true>, true);
                variant("vsum+ahead+issue", lean<true, true, true>, false);
                variant("vsum+ahead+issue, col sums by float4", lean<true, true, true>, true);
            }
            variant("ahead+issue", lean<false, true, true>, false);
            variant("ahead+issue+gamma floats", lean<false, true, true, true>, false);
            variant("ahead+issue+gamma floats (256,2)", lean2<true>, false);
        }
        cudaFree(x); cudaFree(dy); cudaFree(dx); cudaFree(ref); cudaFree(y); cudaFree(gamma); cudaFree(beta);
        cudaFree(dgamma); cudaFree(dbeta); cudaFree(mean); cudaFree(rstd); cudaFree(part); cudaFree(refPart);
        cudaFree(diff); cudaFree(cpySrc); cudaFree(cpyDst); cudaFree(refDgamma); cudaFree(refDbeta);
    }
    return 0;
}
