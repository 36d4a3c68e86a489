// Standalone probe (not part of the build), twenty-ninth session:
//  1. The bf16 LayerNorm forward a warp a row (ubuf_layernorm_fwd_warp_bf16: a lane stands in for the word kernel's
//     threads l, l + 32, ... of its block, so the word kernel's bits, and no barrier) against the word kernel on its
//     block at the layer's per-rank shapes and around them, in blocks of 1, 2 and 4 warps.
//  2. The LayerNorm backward's partial rows cut by thread block clusters: the staged walk as the product runs it, but
//     at the end of its (one) part each block leaves its dgamma / dbeta sums in its shared memory and the C blocks of
//     its cluster add them in rank order through distributed shared memory, one partial row a cluster, so the column
//     sums that finish the op read C times fewer rows (deterministic, another order than the product's; dx the same).
// Build and run:
//   nvcc -arch=sm_90 -O3 -std=c++17 -I../src/main/cuda layernorm_warp_probe.cu -o ln_warp && ./ln_warp
#include <cooperative_groups.h>

#include <cmath>
#include <vector>

#include "../src/main/cuda/ubuf_layernorm.cu"
#include "../src/main/cuda/ubuf_colsum.cu"
#include "probe_common.cuh"

namespace cg = cooperative_groups;
using bf = __nv_bfloat16;
using ubuf::i64;

// ubuf::layernorm_bwd_staged<bf, false> for grids of one part a block (LayerKernels' launch), with the cluster
// epilogue above in place of the per-part partial row.
template <int C>
__global__ void __cluster_dims__(C, 1, 1) __launch_bounds__(UBUF_MAX_THREADS)
    staged_cluster(i64 rows, i64 cols, const bf* dy, const bf* x, const float* mean, const float* rstd,
                   const bf* gamma, bf* dx, i64 rowsPerPart, float* dgammaPart, float* dbetaPart, i64 ldPart) {
    using G = ubuf::ColGroups<bf>;
    using Grp = ubuf::LnBwdGroup<bf, false>;
    constexpr int N = G::N;
    constexpr int K = ubuf::LN_BWD_GROUPS;
    constexpr int S = ubuf::LN_BWD_STAGES;
    const int groups = (int)(cols / N);
    extern __shared__ uint4 stage[];
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
                    ubuf::cp_async16(s + g, dyr + g);
                    ubuf::cp_async16(s + groups + g, xr + g);
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
    float dg[K][N], db[K][N];
#pragma unroll
    for (int k = 0; k < K; ++k) {
#pragma unroll
        for (int i = 0; i < N; ++i) dg[k][i] = db[k][i] = 0.f;
    }
    const i64 myPart = computing.part;
    while (computing.ok && computing.part == myPart) {
        issue();
        const i64 r = computing.row;
        const float rs = rstd[r];
        const float nmr = -mean[r] * rs;
        ubuf::cp_async_wait<S - 1>();
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
        computing.next(rows, rowsPerPart);
        slot = slot + 1 == S ? 0 : slot + 1;
    }
    ubuf::cp_async_wait<0>();
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

int main() {
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    // 1. The forward.
    const long long fshapes[][2] = {{1024, 4096}, {2048, 4096}, {4096, 4096}, {8192, 4096}, {2048, 2048},
                                    {4096, 2048}};
    for (auto& sh : fshapes) {
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
        const int wordBlock = (int)(((cols / 8 + 3) / 4 + 31) / 32 * 32);
        ubuf_layernorm_fwd_words_bf16<<<(int)rows, wordBlock>>>(rows, cols, x, cols, gamma, beta, 1e-5f, 0, ref, cols,
                                                               mean, rstd);
        CK(cudaDeviceSynchronize());
        const ProbeTimer timer{rows, cols, n, 2 * bytes, 300, sms, 40, ref, diff};
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
        const ProbeTimer timer{rows, cols, n, 3 * bytes, 200, sms, 52, ref, diff};
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
        cluster(staged_cluster<2>, 2);
        cluster(staged_cluster<4>, 4);
        cluster(staged_cluster<8>, 8);
        snprintf(name, sizeof name, "bwd OP: product again");
        time(name, [&] { staged(dx); colSums2(parts); });
        cudaFree(x); cudaFree(dy); cudaFree(dx); cudaFree(ref); cudaFree(y); cudaFree(gamma); cudaFree(beta);
        cudaFree(dgamma); cudaFree(dbeta); cudaFree(mean); cudaFree(rstd); cudaFree(part); cudaFree(diff);
        cudaFree(cpySrc); cudaFree(cpyDst);
    }
    return 0;
}
