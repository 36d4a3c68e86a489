// Standalone probe (not part of the build), session 33: the fused bias + GELU backward (ubuf_bias_gelu_bwd_partial,
// then the column sums) at other (rows loaded ahead, resident blocks an SM) pairs than the product's (4, 3): fewer
// rows ahead take fewer registers, so more blocks fit an SM, where the unbiased GELU backward runs at full
// occupancy and 90% of a copy's speed (bench kernels, H200) against the fused one's 67-75%. Parts of each variant
// by LayerKernels.biasActivationRowsPerPart's rule (9612a01: the longest parts up to 512 rows whose items fill whole
// waves of its resident blocks). dx compared bit for bit with the product's; the bias gradient's columns with the
// product's at the same parts (the sums' order does not depend on AHEAD or the launch bounds). Run in session 33's
// call 7: three rows ahead at three blocks 0.95-0.99x the time, taken (2e211e2); the rest no faster.
// Session 33 call 9, after 2e211e2 (the product three rows ahead): its partial kernel alone, without the column
// sums, 3.4-6.8 us faster (what d0de407's in-kernel finish tried to save, and did not: reverted in 939f57b).
// Session 34 call 1, on 41b0787's math (GELU from the SFU's 2^x and 1 / x, no tanhf): the product 55.9 us at
// 8192 x 3584 (66.8 before), and three rows ahead at three blocks still the fastest pair at every shape.
// Build and run:
//   nvcc -arch=sm_90 -O3 -std=c++17 -I../src/main/cuda bias_gelu_bwd_ahead_probe.cu -o geluahead && ./geluahead
#include <cstring>
#include <functional>
#include <vector>

#include "../src/main/cuda/ubuf_activation.cu"
#include "../src/main/cuda/ubuf_colsum.cu"
#include "probe_common.cuh"

using bf = __nv_bfloat16;

template <int AHEAD, int MINB>
__global__ void __launch_bounds__(ubuf::ACT_BLOCK, MINB) bwd(long long rows, long long cols, const bf* dy,
                                                             const bf* x, const bf* bias, bf* dx,
                                                             long long rowsPerPart, float* part) {
    ubuf::bias_act_bwd_partial_any<bf, ubuf::GeluGradOp, AHEAD>(rows, cols, dy, cols, x, cols, bias, dx, cols,
                                                               rowsPerPart, part, cols, ubuf::GeluGradOp());
}

int main() {
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const int maxBlocks = sms * 8;
    struct Shape { long long rows, f; };
    for (Shape s : {Shape{8192, 3584}, Shape{8192, 7168}, Shape{8192, 14336}, Shape{16384, 3584}, Shape{4096, 7168}}) {
        const long long rows = s.rows, f = s.f, n = rows * f;
        bf *dy, *x, *bias, *dx, *refDx;
        float *part, *db, *refDb;
        char *cpySrc, *cpyDst;
        unsigned long long* diff;
        CK(cudaMalloc(&dy, n * 2));
        CK(cudaMalloc(&x, n * 2));
        CK(cudaMalloc(&dx, n * 2));
        CK(cudaMalloc(&refDx, n * 2));
        CK(cudaMalloc(&bias, f * 2));
        CK(cudaMalloc(&part, (rows / 32 + 1) * f * 4));
        CK(cudaMalloc(&db, f * 4));
        CK(cudaMalloc(&refDb, f * 4));
        CK(cudaMalloc(&diff, 8));
        CK(cudaMalloc(&cpySrc, n * 3));
        CK(cudaMalloc(&cpyDst, n * 3));
        probe_fill<<<sms * 4, 256>>>(dy, n, 7u, 0.02f);
        probe_fill<<<sms * 4, 256>>>(x, n, 1u, 4.f);
        probe_fill<<<sms, 256>>>(bias, f, 3u, 1.f);
        const long long tiles = (f / 8 + 63) / 64;
        const int sumGrid = (int)(f / 32 < maxBlocks ? f / 32 : maxBlocks);
        auto launcher = [&](auto kernel, int blocksPerSm) {
            return [=](bf* out, float* dbias) {
                const long long rpp = probe_bias_act_rows_per_part(rows, f, blocksPerSm, sms);
                const long long parts = (rows + rpp - 1) / rpp;
                const long long items = parts * tiles;
                kernel<<<(int)(items < maxBlocks ? items : maxBlocks), 256>>>(rows, f, dy, x, bias, out, rpp, part);
                ubuf_col_sums_f32_to_f32<<<sumGrid, 512>>>(parts, f, part, f, dbias, 0);
            };
        };
        struct Variant { const char* name; int blocks; std::function<void(bf*, float*)> run; };
        std::vector<Variant> variants;
        variants.push_back({"product (4 rows ahead until 2e211e2, 3 since)", 3, [&](bf* o, float* d) {
            const long long rpp = probe_bias_act_rows_per_part(rows, f, 3, sms);
            const long long parts = (rows + rpp - 1) / rpp;
            const long long items = parts * tiles;
            ubuf_bias_gelu_bwd_partial_bf16<<<(int)(items < maxBlocks ? items : maxBlocks), 256>>>(
                rows, f, dy, f, x, f, bias, o, f, rpp, part, f);
            ubuf_col_sums_f32_to_f32<<<sumGrid, 512>>>(parts, f, part, f, d, 0);
        }});
        variants.push_back({"product's partial kernel alone (no sums)", 3, [&](bf* o, float* d) {
            const long long rpp = probe_bias_act_rows_per_part(rows, f, 3, sms);
            const long long parts = (rows + rpp - 1) / rpp;
            const long long items = parts * tiles;
            ubuf_bias_gelu_bwd_partial_bf16<<<(int)(items < maxBlocks ? items : maxBlocks), 256>>>(
                rows, f, dy, f, x, f, bias, o, f, rpp, part, f);
        }});
        variants.push_back({"3 rows ahead, 3 blocks", 3, launcher(bwd<3, 3>, 3)});
        variants.push_back({"2 rows ahead, 3 blocks", 3, launcher(bwd<2, 3>, 3)});
        variants.push_back({"2 rows ahead, 4 blocks", 4, launcher(bwd<2, 4>, 4)});
        variants.push_back({"2 rows ahead, 5 blocks", 5, launcher(bwd<2, 5>, 5)});
        variants.push_back({"1 row ahead, 4 blocks", 4, launcher(bwd<1, 4>, 4)});
        variants.push_back({"1 row ahead, 6 blocks", 6, launcher(bwd<1, 6>, 6)});
        variants.push_back({"1 row ahead, 8 blocks", 8, launcher(bwd<1, 8>, 8)});
        variants[0].run(refDx, refDb);
        CK(cudaDeviceSynchronize());
        const ProbeTimer timer{rows, f, n, 3 * n * 2, 100, sms, 44, refDx, diff};
        char name[96];
        for (int pass = 0; pass < 2; ++pass) {
            timer.time("memcpy d2d (same bytes)", refDx, [&] {
                cudaMemcpyAsync(cpyDst, cpySrc, n * 3, cudaMemcpyDeviceToDevice);
            });
            for (const Variant& v : variants) {
                const long long rpp = probe_bias_act_rows_per_part(rows, f, v.blocks, sms);
                snprintf(name, sizeof name, "%s (%lld-row parts)", v.name, rpp);
                cudaMemset(dx, 0xff, n * 2);
                cudaMemset(db, 0xff, f * 4);
                timer.time(name, dx, [&] { v.run(dx, db); });
                if (rpp == probe_bias_act_rows_per_part(rows, f, 3, sms) && strstr(v.name, "alone") == nullptr) {
                    std::vector<float> a(f), b(f);
                    cudaMemcpy(a.data(), db, f * 4, cudaMemcpyDeviceToHost);
                    cudaMemcpy(b.data(), refDb, f * 4, cudaMemcpyDeviceToHost);
                    long long differ = 0;
                    for (long long c = 0; c < f; ++c) differ += a[c] != b[c];
                    if (differ) printf("    bias gradient columns differing from the product's: %lld\n", differ);
                }
            }
        }
        cudaFree(dy); cudaFree(x); cudaFree(dx); cudaFree(refDx); cudaFree(bias); cudaFree(part); cudaFree(db);
        cudaFree(refDb); cudaFree(diff); cudaFree(cpySrc); cudaFree(cpyDst);
    }
    return 0;
}
