// Standalone probe (not part of the build): bf16 LayerNorm backward at the layer's per-rank shapes (8B and 70B dims,
// tp 2 and 4). The product's staged kernel (ubuf_layernorm_bwd_staged_bf16 at LayerKernels' launch: parts of
// max(8, rows / 256) rows, a block of whole warps holding 2 column groups a thread, as many blocks as stay resident,
// 3 row slots in shared memory) runs at 44-62% of a copy of its bytes on an H100. Beside it, variants of the same
// walk: deeper row staging (4 and 6 slots), the row's mean and rstd loaded a row ahead instead of after the wait for
// its data, and 4 column groups a thread (half the threads a row, twice the blocks an SM). Every variant computes
// dx and the partial sums as the product does; with the product's block the same sums in the same order (dx bit for
// bit), with 4 groups a thread the row sums add in another order (dx may differ in the last bit). Build and run:
//   nvcc -arch=sm_90 -O3 -std=c++17 -I../src/main/cuda layernorm_bwd_probe.cu -o layernorm_bwd_probe && ./layernorm_bwd_probe
#include "../src/main/cuda/ubuf_layernorm.cu"
#include "probe_common.cuh"

using bf = __nv_bfloat16;
using ubuf::i64;

// ubuf::layernorm_bwd_staged with S row slots, K column groups a thread and, with STATS_AHEAD, the next row's mean and
// rstd loaded while this row computes (the product loads them after waiting for the row's data: a dependent load a
// row). With 4 groups a thread the kernel is bounded at 256 threads, so its registers (about 210) do not spill.
template <int S, int K, bool STATS_AHEAD>
__global__ void __launch_bounds__(K > 2 ? 256 : 512) staged_variant(i64 rows, i64 cols, const bf* dy, const bf* x, const float* mean,
                                                      const float* rstd, const bf* gamma, bf* dx, i64 rowsPerPart,
                                                      float* dgammaPart, float* dbetaPart, i64 ldPart) {
    using G = ubuf::ColGroups<bf>;
    constexpr int N = G::N;
    const i64 groups = cols / N;
    extern __shared__ uint4 stage[];
    __shared__ float scratchA[ubuf::MAX_WARPS];
    __shared__ float scratchB[ubuf::MAX_WARPS];
    const i64 parts = (rows + rowsPerPart - 1) / rowsPerPart;
    if ((i64)blockIdx.x >= parts) return;
    const i64 myParts = (parts - 1 - blockIdx.x) / gridDim.x + 1;
    const float n = (float)cols;
    auto rowAt = [&](i64 idx, i64& part, i64& r) -> bool {
        const i64 pi = idx / rowsPerPart;
        if (pi >= myParts) return false;
        part = blockIdx.x + pi * gridDim.x;
        r = part * rowsPerPart + (idx - pi * rowsPerPart);
        return r < rows;
    };
    auto issue = [&](i64 idx) {
        i64 part, r;
        if (rowAt(idx, part, r)) {
            uint4* slot = stage + (idx % S) * 2 * groups;
#pragma unroll
            for (int k = 0; k < K; ++k) {
                const i64 g = threadIdx.x + (i64)k * blockDim.x;
                if (g < groups) {
                    ubuf::cp_async16(ubuf::shared_addr(slot + g), dy + r * cols + g * N);
                    ubuf::cp_async16(ubuf::shared_addr(slot + groups + g), x + r * cols + g * N);
                }
            }
        }
        ubuf::cp_async_commit();
    };
    uint4 gammaRaw[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const i64 g = threadIdx.x + (i64)k * blockDim.x;
        if (g < groups) gammaRaw[k] = reinterpret_cast<const uint4*>(gamma)[g];
    }
#pragma unroll
    for (int i = 0; i < S - 1; ++i) issue(i);
    float dg[K][N], db[K][N];
#pragma unroll
    for (int k = 0; k < K; ++k) {
#pragma unroll
        for (int i = 0; i < N; ++i) dg[k][i] = db[k][i] = 0.f;
    }
    i64 part, r;
    float muNext = 0.f, rsNext = 0.f;
    if (STATS_AHEAD && rowAt(0, part, r)) {
        muNext = mean[r];
        rsNext = rstd[r];
    }
    for (i64 idx = 0; rowAt(idx, part, r); ++idx) {
        issue(idx + S - 1);
        float mu, rs;
        i64 nextPart, nextRow;
        const bool more = rowAt(idx + 1, nextPart, nextRow);
        if (STATS_AHEAD) {
            mu = muNext;
            rs = rsNext;
            if (more) {
                muNext = mean[nextRow];
                rsNext = rstd[nextRow];
            }
        }
        ubuf::cp_async_wait<S - 1>();
        if (!STATS_AHEAD) {
            mu = mean[r];
            rs = rstd[r];
        }
        const uint4* slot = stage + (idx % S) * 2 * groups;
        uint4 dyRaw[K], xRaw[K];
        float s1 = 0.f, s2 = 0.f;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const i64 g = threadIdx.x + (i64)k * blockDim.x;
            if (g < groups) {
                dyRaw[k] = slot[g];
                xRaw[k] = slot[groups + g];
                ubuf::LnBwdGroup<bf, false>::accumulate(dyRaw[k], xRaw[k], gammaRaw[k], N, rs, -mu * rs, s1, s2,
                                                        dg[k], db[k]);
            }
        }
        ubuf::block_sum2(s1, s2, scratchA, scratchB);
        const float c1 = -rs * (s1 / n);
        const float c2 = -rs * (s2 / n);
        bf* dxr = dx + r * cols;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const i64 g = threadIdx.x + (i64)k * blockDim.x;
            if (g < groups) {
                float d[N];
                ubuf::LnBwdGroup<bf, false>::dx(dyRaw[k], xRaw[k], gammaRaw[k], rs, -mu * rs, c1, c2, d);
                ubuf::store_vec<bf, N>(dxr + g * N, d);
            }
        }
        if (!more || nextPart != part) {
#pragma unroll
            for (int k = 0; k < K; ++k) {
                const i64 g = threadIdx.x + (i64)k * blockDim.x;
                if (g < groups) {
                    float4* gp = reinterpret_cast<float4*>(dgammaPart + part * ldPart + g * N);
                    float4* bp = reinterpret_cast<float4*>(dbetaPart + part * ldPart + g * N);
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
    }
    ubuf::cp_async_wait<0>();
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
        bf *x, *dy, *dx, *ref, *gamma, *beta, *y;
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
        auto product = [&](bf* out) {
            ubuf_layernorm_bwd_staged_bf16<<<grid, block, smem>>>(rows, cols, dy, cols, x, cols, mean, rstd, gamma, 0,
                                                                  out, cols, rowsPerPart, dgp, dbp, cols);
        };
        product(ref);
        CK(cudaDeviceSynchronize());
        // dy and x read, dx written: the bytes a copy of the same traffic moves (the partial rows are ~1% more).
        const ProbeTimer timer{rows, cols, n, 3 * bytes, 200, sms, 40, ref, diff};
        auto time = [&](const char* name, auto launch) { timer.time(name, dx, launch); };
        time("memcpy d2d (same bytes)", [&] {
            cudaMemcpyAsync(cpyDst, cpySrc, bytes * 3 / 2, cudaMemcpyDeviceToDevice);
        });
        time("product staged kernel (its launch)", [&] { product(dx); });
        auto variant = [&](const char* name, auto kernel, int s, int k) {
            const int b = (int)(((groups + k - 1) / k + 31) / 32 * 32);
            const int sm = (int)(s * 2 * groups * 16);
            cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, sm);
            int perSm = 0;
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, kernel, b, sm);
            const long long res = (long long)sms * (perSm > 0 ? perSm : 1);
            const int g = (int)(parts < res ? parts : res);
            char label[96];
            snprintf(label, sizeof label, "%s (block %d, %d/SM)", name, b, perSm);
            time(label, [&] {
                kernel<<<g, b, sm>>>(rows, cols, dy, x, mean, rstd, gamma, dx, rowsPerPart, dgp, dbp, cols);
            });
        };
        variant("copy of the product", staged_variant<3, 2, false>, 3, 2);
        variant("stats a row ahead", staged_variant<3, 2, true>, 3, 2);
        variant("4 slots", staged_variant<4, 2, false>, 4, 2);
        variant("4 slots, stats ahead", staged_variant<4, 2, true>, 4, 2);
        variant("6 slots, stats ahead", staged_variant<6, 2, true>, 6, 2);
        variant("4 groups a thread", staged_variant<3, 4, false>, 3, 4);
        variant("4 groups a thread, 4 slots, stats ahead", staged_variant<4, 4, true>, 4, 4);
        cudaFree(x);
        cudaFree(dy);
        cudaFree(dx);
        cudaFree(ref);
        cudaFree(y);
        cudaFree(gamma);
        cudaFree(beta);
        cudaFree(mean);
        cudaFree(rstd);
        cudaFree(part);
        cudaFree(diff);
        cudaFree(cpySrc);
        cudaFree(cpyDst);
    }
    return 0;
}
