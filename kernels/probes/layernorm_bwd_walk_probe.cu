// Standalone probe (not part of the build): where the bf16 LayerNorm backward's time goes at the layer's per-rank
// shapes (8B and 70B dims, tp 2 and 4), the op as LayerKernels launches it (the staged kernel, then one column-sum
// kernel for dgamma and one for dbeta) against:
//  - the staged walk rewritten without a division a row (the product finds a row's part with 64-bit divisions),
//    the row's mean and rstd loaded before the wait for its data, and other register caps (launch bounds): the
//    product's kernel takes 128 registers, so an SM holds 512 of its threads;
//  - one column group a thread (half the registers, twice the threads);
//  - the two-kernel path (partial sums, then dx: a re-read of dy and x, few registers);
//  - dgamma's and dbeta's column sums in one launch.
// Every walk computes dx and the partial sums; with two groups a thread in the product's order (dx bit for bit),
// with one the row sums add in another order (dx may differ in the last bit). Build and run:
//   nvcc -arch=sm_90 -O3 -std=c++17 -I../src/main/cuda layernorm_bwd_walk_probe.cu -o walk && ./walk
#include "../src/main/cuda/ubuf_layernorm.cu"
#include "../src/main/cuda/ubuf_colsum.cu"
#include "probe_common.cuh"

using bf = __nv_bfloat16;
using ubuf::i64;

// A block's rows in order: its parts blockIdx.x, + gridDim.x, ..., each rowsPerPart rows (the last part shorter).
struct Cursor {
    i64 part, r, end;
    bool ok;
    __device__ void start(i64 rows, i64 rpp) {
        part = blockIdx.x;
        r = part * rpp;
        end = r + rpp < rows ? r + rpp : rows;
        ok = r < rows;
    }
    __device__ void next(i64 rows, i64 rpp) {
        if (++r < end) return;
        part += gridDim.x;
        r = part * rpp;
        end = r + rpp < rows ? r + rpp : rows;
        ok = r < rows;
    }
};

template <int S, int K, int MAXT, int MINB>
__global__ void __launch_bounds__(MAXT, MINB) walk(i64 rows, i64 cols, const bf* dy, const bf* x, const float* mean,
                                                   const float* rstd, const bf* gamma, bf* dx, i64 rpp,
                                                   float* dgammaPart, float* dbetaPart, i64 ldPart) {
    using G = ubuf::ColGroups<bf>;
    constexpr int N = G::N;
    const int groups = (int)(cols / N);
    extern __shared__ uint4 stage[];
    __shared__ float scratchA[ubuf::MAX_WARPS];
    __shared__ float scratchB[ubuf::MAX_WARPS];
    const float n = (float)cols;
    Cursor ic, cc;
    ic.start(rows, rpp);
    cc.start(rows, rpp);
    if (!cc.ok) return;
    int issueSlot = 0, slot = 0;
    auto issue = [&]() {
        if (ic.ok) {
            uint4* s = stage + issueSlot * 2 * groups;
            const uint4* dyr = reinterpret_cast<const uint4*>(dy + ic.r * cols);
            const uint4* xr = reinterpret_cast<const uint4*>(x + ic.r * cols);
#pragma unroll
            for (int k = 0; k < K; ++k) {
                const int g = threadIdx.x + k * blockDim.x;
                if (g < groups) {
                    ubuf::cp_async16(s + g, dyr + g);
                    ubuf::cp_async16(s + groups + g, xr + g);
                }
            }
            ic.next(rows, rpp);
        }
        ubuf::cp_async_commit();
        issueSlot = issueSlot + 1 == S ? 0 : issueSlot + 1;
    };
    uint4 gammaRaw[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const int g = threadIdx.x + k * blockDim.x;
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
    while (cc.ok) {
        issue();
        const float mu = mean[cc.r];
        const float rs = rstd[cc.r];
        ubuf::cp_async_wait<S - 1>();
        const uint4* s = stage + slot * 2 * groups;
        uint4 dyRaw[K], xRaw[K];
        float s1 = 0.f, s2 = 0.f;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const int g = threadIdx.x + k * blockDim.x;
            if (g < groups) {
                dyRaw[k] = s[g];
                xRaw[k] = s[groups + g];
                ubuf::LnBwdGroup<bf>::accumulate(dyRaw[k], xRaw[k], gammaRaw[k], N, mu, rs, 0.f, s1, s2, dg[k],
                                                 db[k]);
            }
        }
        ubuf::block_sum2(s1, s2, scratchA, scratchB);
        const float m1 = s1 / n;
        const float m2 = s2 / n;
        bf* dxr = dx + cc.r * cols;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const int g = threadIdx.x + k * blockDim.x;
            if (g < groups) {
                float d[N];
                ubuf::LnBwdGroup<bf>::dx(dyRaw[k], xRaw[k], gammaRaw[k], mu, rs, 0.f, m1, m2, d);
                ubuf::store_vec<bf, N>(dxr + g * N, d);
            }
        }
        if (cc.r + 1 == cc.end) {
#pragma unroll
            for (int k = 0; k < K; ++k) {
                const int g = threadIdx.x + k * blockDim.x;
                if (g < groups) {
                    float4* gp = reinterpret_cast<float4*>(dgammaPart + cc.part * ldPart + g * N);
                    float4* bp = reinterpret_cast<float4*>(dbetaPart + cc.part * ldPart + g * N);
#pragma unroll
                    for (int q = 0; q < N / 4; ++q) {
                        gp[q] = make_float4(dg[k][4 * q], dg[k][4 * q + 1], dg[k][4 * q + 2], dg[k][4 * q + 3]);
                        bp[q] = make_float4(db[k][4 * q], db[k][4 * q + 1], db[k][4 * q + 2], db[k][4 * q + 3]);
                    }
                }
#pragma unroll
                for (int i = 0; i < N; ++i) dg[k][i] = db[k][i] = 0.f;
            }
        }
        cc.next(rows, rpp);
        slot = slot + 1 == S ? 0 : slot + 1;
    }
    ubuf::cp_async_wait<0>();
}

// dgamma's (blockIdx.y 0) and dbeta's (1) column sums in one launch, each as ubuf_col_sums_f32_to_bf16 adds them.
__global__ void __launch_bounds__(UBUF_MAX_THREADS) col_sums_both(i64 parts, i64 cols, const float* part,
                                                                  i64 ldPart, bf* dgamma, bf* dbeta) {
    if (blockIdx.y == 0) ubuf::col_sums_f32<bf>(parts, cols, part, ldPart, dgamma, 0);
    else ubuf::col_sums_f32<bf>(parts, cols, part + parts * ldPart, ldPart, dbeta, 0);
}

int main() {
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const long long shapes[][2] = {{2048, 4096}, {4096, 4096}, {2048, 8192}, {4096, 8192}};
    for (auto& sh : shapes) {
        const long long rows = sh[0], cols = sh[1], n = rows * cols, bytes = n * 2;
        const long long groups = cols / 8;
        // LayerKernels: rows per part, parts, the block holding 2 groups a thread, the resident grid.
        const long long rowsPerPart = rows / 256 > 8 ? rows / 256 : 8;
        const long long parts = (rows + rowsPerPart - 1) / rowsPerPart;
        const int block = (int)(((groups + 1) / 2 + 31) / 32 * 32);
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
        CK(cudaMalloc(&part, 2 * parts * cols * 4));
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
        const long long resident = (long long)sms * (512 / block);
        const int grid = (int)(parts < resident ? parts : resident);
        float* dgp = part;
        float* dbp = part + parts * cols;
        const int colGrid = (int)(cols / 32 < sms * 8 ? cols / 32 : sms * 8);
        auto staged = [&](bf* out) {
            ubuf_layernorm_bwd_staged_bf16<<<grid, block, smem>>>(rows, cols, dy, cols, x, cols, mean, rstd, gamma, 0,
                                                                  out, cols, rowsPerPart, dgp, dbp, cols);
        };
        auto colSums = [&] {
            ubuf_col_sums_f32_to_bf16<<<colGrid, 512>>>(parts, cols, dgp, cols, dgamma, 0);
            ubuf_col_sums_f32_to_bf16<<<colGrid, 512>>>(parts, cols, dbp, cols, dbeta, 0);
        };
        staged(ref);
        CK(cudaDeviceSynchronize());
        // dy and x read, dx written: the bytes a copy of the same traffic moves (the partial rows are more).
        const ProbeTimer timer{rows, cols, n, 3 * bytes, 200, sms, 52, ref, diff};
        auto time = [&](const char* name, auto launch) { timer.time(name, dx, launch); };
        time("memcpy d2d (same bytes)", [&] {
            cudaMemcpyAsync(cpyDst, cpySrc, bytes * 3 / 2, cudaMemcpyDeviceToDevice);
        });
        time("OP: product (staged + 2 col sums)", [&] { staged(dx); colSums(); });
        time("product staged kernel", [&] { staged(dx); });
        time("product 2 col sums", [&] { colSums(); });
        time("col sums, one launch", [&] {
            col_sums_both<<<dim3(colGrid, 2), 512>>>(parts, cols, part, cols, dgamma, dbeta);
        });
        const int pgrid = (int)(parts * ((cols + 255) / 256) < sms * 8 ? parts * ((cols + 255) / 256) : sms * 8);
        time("two kernels: partial sums + dx", [&] {
            ubuf_layernorm_bwd_params_partial_bf16<<<pgrid, 256>>>(rows, cols, dy, cols, x, cols, mean, rstd,
                                                                   rowsPerPart, dgp, dbp, cols);
            ubuf_layernorm_bwd_dx_bf16<<<(int)rows, 256>>>(rows, cols, dy, cols, x, cols, mean, rstd, gamma, 0, dx,
                                                           cols);
        });
        time("  of which dx alone", [&] {
            ubuf_layernorm_bwd_dx_bf16<<<(int)rows, 256>>>(rows, cols, dy, cols, x, cols, mean, rstd, gamma, 0, dx,
                                                           cols);
        });
        auto variant = [&](const char* name, auto kernel, int s, int k, int maxt, long long rpp, bool op) {
            const int b = (int)(((groups + k - 1) / k + 31) / 32 * 32);
            if (b > maxt) return;
            const int sm = (int)(s * 2 * groups * 16);
            cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, sm);
            int perSm = 0;
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, kernel, b, sm);
            cudaFuncAttributes fa;
            cudaFuncGetAttributes(&fa, kernel);
            const long long pts = (rows + rpp - 1) / rpp;
            const long long res = (long long)sms * (perSm > 0 ? perSm : 1);
            const int g = (int)(pts < res ? pts : res);
            char label[128];
            snprintf(label, sizeof label, "%s%s (b %d, %d/SM, %d regs, rpp %lld)", op ? "OP: " : "", name, b, perSm,
                     fa.numRegs, rpp);
            time(label, [&] {
                kernel<<<g, b, sm>>>(rows, cols, dy, x, mean, rstd, gamma, dx, rpp, dgp, dbp, cols);
                if (op) col_sums_both<<<dim3(colGrid, 2), 512>>>(pts, cols, part, cols, dgamma, dbeta);
            });
        };
        variant("walk K2 S3", walk<3, 2, 512, 1>, 3, 2, 512, rowsPerPart, false);
        variant("walk K2 S4", walk<4, 2, 512, 1>, 4, 2, 512, rowsPerPart, false);
        variant("walk K2 S3 bounds(256,3)", walk<3, 2, 256, 3>, 3, 2, 256, rowsPerPart, false);
        variant("walk K2 S4 bounds(256,3)", walk<4, 2, 256, 3>, 4, 2, 256, rowsPerPart, false);
        variant("walk K2 S3 bounds(512,2)", walk<3, 2, 512, 2>, 3, 2, 512, rowsPerPart, false);
        variant("walk K1 S3 bounds(512,2)", walk<3, 1, 512, 2>, 3, 1, 512, rowsPerPart, false);
        variant("walk K1 S4 bounds(512,2)", walk<4, 1, 512, 2>, 4, 1, 512, rowsPerPart, false);
        variant("walk K1 S3 bounds(512,3)", walk<3, 1, 512, 3>, 3, 1, 512, rowsPerPart, false);
        variant("walk K4 S3", walk<3, 4, 256, 1>, 3, 4, 256, rowsPerPart, false);
        variant("walk K2 S3 rpp x2", walk<3, 2, 512, 1>, 3, 2, 512, rowsPerPart * 2, false);
        variant("walk K2 S3 bounds(256,3) rpp x2", walk<3, 2, 256, 3>, 3, 2, 256, rowsPerPart * 2, false);
        variant("walk K2 S3", walk<3, 2, 512, 1>, 3, 2, 512, rowsPerPart, true);
        variant("walk K2 S3 bounds(256,3)", walk<3, 2, 256, 3>, 3, 2, 256, rowsPerPart, true);
        variant("walk K1 S3 bounds(512,2)", walk<3, 1, 512, 2>, 3, 1, 512, rowsPerPart, true);
        variant("walk K2 S3 bounds(256,3) rpp x2", walk<3, 2, 256, 3>, 3, 2, 256, rowsPerPart * 2, true);
        cudaFree(x);
        cudaFree(dy);
        cudaFree(dx);
        cudaFree(ref);
        cudaFree(y);
        cudaFree(gamma);
        cudaFree(beta);
        cudaFree(dgamma);
        cudaFree(dbeta);
        cudaFree(mean);
        cudaFree(rstd);
        cudaFree(part);
        cudaFree(diff);
        cudaFree(cpySrc);
        cudaFree(cpyDst);
    }
    return 0;
}
