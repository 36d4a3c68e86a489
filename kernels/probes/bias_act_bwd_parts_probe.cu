// Standalone probe (not part of the build), thirty-second session: the fused bias + SwiGLU backward
// (ubuf_bias_swiglu_bwd_partial_bf16, then ubuf_col_sums_f32_to_bf16 for the bias gradient, as LayerKernels launches
// them) at longer parts than LayerKernels.rowsPerPart's (32 rows at 8192): each part writes a row of 2F fp32 partial
// sums that the column sums read back, 2 x 14.7 MB at 8192 x 2 x 7168, about 9% of the op's bytes. dx must not
// change (its bits compared with the 32-row run's); the bias gradient's sums take another order. The biased GELU's
// backward (ubuf_bias_gelu_bwd_partial_bf16, one half of F columns) likewise.
// Session 33: the part lengths that fill the last wave too. The (part, tile) items run in waves of blocksPerSM x SMs
// (two an SM for SwiGLU, three for GELU since 4d92d28), so 896 items make 2.26 waves for GELU at 3584 and 7168
// columns; besides 32/64/128, each kernel runs at the longest parts giving at most k whole waves, k = 1..8 (parts of
// 32 to 256 rows; call 4). Second run (call 5): parts up to 1024 rows, and 4096 and 16384 rows as well as 8192.
// Taken (9612a01): the least k whose parts are at most 512 rows.
// Build and run:
//   nvcc -arch=sm_90 -O3 -std=c++17 -I../src/main/cuda bias_act_bwd_parts_probe.cu -o actparts && ./actparts
#include <vector>

#include "../src/main/cuda/ubuf_activation.cu"
#include "../src/main/cuda/ubuf_colsum.cu"
#include "probe_common.cuh"

using bf = __nv_bfloat16;

int main() {
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    for (long long rows : {8192LL, 16384LL, 4096LL})
    for (long long f : {3584LL, 7168LL, 14336LL}) {
        const long long c2 = 2 * f;
        const long long nx = rows * c2, ndy = rows * f;
        bf *dy, *x, *bias, *dx, *refDx, *db;
        float* part;
        char *cpySrc, *cpyDst;
        unsigned long long* diff;
        const long long bytes = 2 * (ndy + 2 * nx);  // dy and x read, dx written
        CK(cudaMalloc(&dy, ndy * 2));
        CK(cudaMalloc(&x, nx * 2));
        CK(cudaMalloc(&dx, nx * 2));
        CK(cudaMalloc(&refDx, nx * 2));
        CK(cudaMalloc(&bias, c2 * 2));
        CK(cudaMalloc(&db, c2 * 2));
        CK(cudaMalloc(&part, (rows / 32 + 1) * c2 * 4));
        CK(cudaMalloc(&diff, 8));
        CK(cudaMalloc(&cpySrc, bytes / 2));
        CK(cudaMalloc(&cpyDst, bytes / 2));
        probe_fill<<<sms * 4, 256>>>(dy, ndy, 7u, 0.02f);
        probe_fill<<<sms * 4, 256>>>(x, nx, 1u, 4.f);
        probe_fill<<<sms, 256>>>(bias, c2, 3u, 1.f);
        const int maxBlocks = sms * 8;
        const long long tiles = (f / 8 + 63) / 64;
        // 32, 64, 128, then for k = 1..8 waves of `resident` blocks the shortest parts whose items fit k waves.
        auto lengths = [&](int blocksPerSm) {
            std::vector<long long> v{32, 64, 128};
            const long long resident = (long long)blocksPerSm * sms;
            for (int k = 1; k <= 8; ++k) {
                const long long parts = k * resident / tiles;
                if (parts < 1) continue;
                const long long rpp = (rows + parts - 1) / parts;
                if (rpp < 32 || rpp > 1024) continue;
                bool seen = false;
                for (long long e : v) seen = seen || e == rpp;
                if (!seen) v.push_back(rpp);
            }
            return v;
        };
        auto run = [&](bf* out, long long rpp, bool sums) {
            const long long parts = (rows + rpp - 1) / rpp;
            const long long items = parts * tiles;
            ubuf_bias_swiglu_bwd_partial_bf16<<<(int)(items < maxBlocks ? items : maxBlocks), 256>>>(
                rows, f, dy, f, x, c2, bias, out, c2, rpp, part, c2);
            if (sums) {
                ubuf_col_sums_f32_to_bf16<<<(int)(c2 / 32 < maxBlocks ? c2 / 32 : maxBlocks), 512>>>(parts, c2, part,
                                                                                                    c2, db, 0);
            }
        };
        run(refDx, 32, true);
        CK(cudaDeviceSynchronize());
        const ProbeTimer timer{rows, c2, nx, bytes, 100, sms, 60, refDx, diff};
        char name[128];
        for (int pass = 0; pass < 2; ++pass) {
            timer.time("memcpy d2d (same bytes)", refDx, [&] {
                cudaMemcpyAsync(cpyDst, cpySrc, bytes / 2, cudaMemcpyDeviceToDevice);
            });
            for (long long rpp : lengths(2)) {
                const long long parts = (rows + rpp - 1) / rpp;
                snprintf(name, sizeof name, "OP parts of %lld rows (%lld items, %.2f waves)", rpp, parts * tiles,
                         parts * tiles / (2.0 * sms));
                cudaMemset(dx, 0xff, nx * 2);
                timer.time(name, dx, [&] { run(dx, rpp, true); });
            }
        }
        // The biased GELU's backward over F columns (x, dy and dx all F wide), the same rule's parts.
        const long long ng = rows * f;
        auto runGelu = [&](bf* out, long long rpp, bool sums) {
            const long long parts = (rows + rpp - 1) / rpp;
            const long long items = parts * tiles;
            ubuf_bias_gelu_bwd_partial_bf16<<<(int)(items < maxBlocks ? items : maxBlocks), 256>>>(
                rows, f, dy, f, x, f, bias, out, f, rpp, part, f);
            if (sums) {
                ubuf_col_sums_f32_to_bf16<<<(int)(f / 32 < maxBlocks ? f / 32 : maxBlocks), 512>>>(parts, f, part, f,
                                                                                                  db, 0);
            }
        };
        runGelu(refDx, 32, true);
        CK(cudaDeviceSynchronize());
        const long long gbytes = 2 * 3 * ng;  // dy and x read, dx written
        const ProbeTimer gtimer{rows, f, ng, gbytes, 100, sms, 60, refDx, diff};
        for (int pass = 0; pass < 2; ++pass) {
            gtimer.time("GELU memcpy d2d (same bytes)", refDx, [&] {
                cudaMemcpyAsync(cpyDst, cpySrc, gbytes / 2, cudaMemcpyDeviceToDevice);
            });
            for (long long rpp : lengths(3)) {
                const long long parts = (rows + rpp - 1) / rpp;
                snprintf(name, sizeof name, "GELU OP parts of %lld rows (%lld items, %.2f waves)", rpp, parts * tiles,
                         parts * tiles / (3.0 * sms));
                cudaMemset(dx, 0xff, ng * 2);
                gtimer.time(name, dx, [&] { runGelu(dx, rpp, true); });
            }
        }
        cudaFree(dy); cudaFree(x); cudaFree(dx); cudaFree(refDx); cudaFree(bias); cudaFree(db); cudaFree(part);
        cudaFree(diff); cudaFree(cpySrc); cudaFree(cpyDst);
    }
    return 0;
}
