// Standalone probe (not part of the build), thirty-fourth session: the fused bias + SwiGLU backward
// (ubuf_bias_swiglu_bwd_partial, then the column sums over both halves) at other (rows loaded ahead, resident blocks
// an SM) pairs than the product's (4, 2), on 41b0787's math (the sigmoid from the SFU's 2^x and 1 / x), which took
// its sm_90 spill from 40 to 4 bytes at 128 registers: fewer rows ahead fit fewer registers and more blocks an SM.
// Parts of each variant by LayerKernels.biasActivationRowsPerPart's rule (probe_bias_act_rows_per_part, for the
// variant's blocks). dx compared bit for bit with the product's (the rows ahead and the launch bounds do not change
// an element's math); the bias gradient's columns with the product's at the same parts. x is rows x 2F, dy rows x F.
// Run in session 34 call 3 (one H200): one row ahead at four blocks 0.90-0.93x the product's time at every shape,
// two or three rows at three or four blocks slower; and this probe's own kernel at the product's (4, 2) 0.94x the
// product's, its strides derived from F where the product takes them as arguments. In the product one row ahead at
// four blocks ran 1.06x (call 4; 48 bytes spilled) until the strides of dense views became one value (6517427).
// Build and run:
//   nvcc -arch=sm_90 -O3 -std=c++17 -I../src/main/cuda bias_swiglu_bwd_ahead_probe.cu -o swigluahead && ./swigluahead
#include <cstring>
#include <functional>
#include <vector>

#include "../src/main/cuda/ubuf_activation.cu"
#include "../src/main/cuda/ubuf_colsum.cu"
#include "probe_common.cuh"

using bf = __nv_bfloat16;

template <int AHEAD, int MINB>
__global__ void __launch_bounds__(ubuf::ACT_BLOCK, MINB) bwd(long long rows, long long f, const bf* dy,
                                                             const bf* x, const bf* bias, bf* dx,
                                                             long long rowsPerPart, float* part) {
    ubuf::bias_act_bwd_partial_any<bf, ubuf::SwigluGradOp, AHEAD>(rows, f, dy, f, x, 2 * f, bias, dx, 2 * f,
                                                                 rowsPerPart, part, 2 * f, ubuf::SwigluGradOp());
}

int main() {
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const int maxBlocks = sms * 8;
    struct Shape { long long rows, f; };
    for (Shape s : {Shape{8192, 7168}, Shape{8192, 14336}, Shape{16384, 7168}, Shape{4096, 14336}}) {
        const long long rows = s.rows, f = s.f, n = rows * f;
        bf *dy, *x, *bias, *dx, *refDx;
        float *part, *db, *refDb;
        char *cpySrc, *cpyDst;
        unsigned long long* diff;
        CK(cudaMalloc(&dy, n * 2));
        CK(cudaMalloc(&x, 2 * n * 2));
        CK(cudaMalloc(&dx, 2 * n * 2));
        CK(cudaMalloc(&refDx, 2 * n * 2));
        CK(cudaMalloc(&bias, 2 * f * 2));
        CK(cudaMalloc(&part, (rows / 32 + 1) * 2 * f * 4));
        CK(cudaMalloc(&db, 2 * f * 4));
        CK(cudaMalloc(&refDb, 2 * f * 4));
        CK(cudaMalloc(&diff, 8));
        CK(cudaMalloc(&cpySrc, n * 5));  // dy, x and dx: 5 n elements of 2 bytes, half read and half written
        CK(cudaMalloc(&cpyDst, n * 5));
        probe_fill<<<sms * 4, 256>>>(dy, n, 7u, 0.02f);
        probe_fill<<<sms * 4, 256>>>(x, 2 * n, 1u, 8.f);
        probe_fill<<<sms, 256>>>(bias, 2 * f, 3u, 1.f);
        const long long tiles = (f / 8 + 63) / 64;
        const int sumGrid = (int)(2 * f / 32 < maxBlocks ? 2 * f / 32 : maxBlocks);
        auto launcher = [&](auto kernel, int blocksPerSm) {
            return [=](bf* out, float* dbias) {
                const long long rpp = probe_bias_act_rows_per_part(rows, f, blocksPerSm, sms);
                const long long parts = (rows + rpp - 1) / rpp;
                const long long items = parts * tiles;
                kernel<<<(int)(items < maxBlocks ? items : maxBlocks), 256>>>(rows, f, dy, x, bias, out, rpp, part);
                ubuf_col_sums_f32_to_f32<<<sumGrid, 512>>>(parts, 2 * f, part, 2 * f, dbias, 0);
            };
        };
        struct Variant { const char* name; int blocks; std::function<void(bf*, float*)> run; };
        std::vector<Variant> variants;
        variants.push_back({"product (4 rows ahead, 2 blocks)", 2, [&](bf* o, float* d) {
            const long long rpp = probe_bias_act_rows_per_part(rows, f, 2, sms);
            const long long parts = (rows + rpp - 1) / rpp;
            const long long items = parts * tiles;
            ubuf_bias_swiglu_bwd_partial_bf16<<<(int)(items < maxBlocks ? items : maxBlocks), 256>>>(
                rows, f, dy, f, x, 2 * f, bias, o, 2 * f, rpp, part, 2 * f);
            ubuf_col_sums_f32_to_f32<<<sumGrid, 512>>>(parts, 2 * f, part, 2 * f, d, 0);
        }});
        variants.push_back({"4 rows ahead, 2 blocks", 2, launcher(bwd<4, 2>, 2)});
        variants.push_back({"3 rows ahead, 2 blocks", 2, launcher(bwd<3, 2>, 2)});
        variants.push_back({"3 rows ahead, 3 blocks", 3, launcher(bwd<3, 3>, 3)});
        variants.push_back({"2 rows ahead, 3 blocks", 3, launcher(bwd<2, 3>, 3)});
        variants.push_back({"2 rows ahead, 4 blocks", 4, launcher(bwd<2, 4>, 4)});
        variants.push_back({"1 row ahead, 4 blocks", 4, launcher(bwd<1, 4>, 4)});
        variants.push_back({"1 row ahead, 5 blocks", 5, launcher(bwd<1, 5>, 5)});
        variants[0].run(refDx, refDb);
        CK(cudaDeviceSynchronize());
        const ProbeTimer timer{rows, 2 * f, 2 * n, 5 * n * 2, 100, sms, 34, refDx, diff};
        char name[96];
        for (int pass = 0; pass < 2; ++pass) {
            timer.time("memcpy d2d (same bytes)", refDx, [&] {
                cudaMemcpyAsync(cpyDst, cpySrc, n * 5, cudaMemcpyDeviceToDevice);
            });
            for (const Variant& v : variants) {
                const long long rpp = probe_bias_act_rows_per_part(rows, f, v.blocks, sms);
                snprintf(name, sizeof name, "%s (%lld-row parts)", v.name, rpp);
                cudaMemset(dx, 0xff, 2 * n * 2);
                cudaMemset(db, 0xff, 2 * f * 4);
                timer.time(name, dx, [&] { v.run(dx, db); });
                if (rpp == probe_bias_act_rows_per_part(rows, f, 2, sms)) {
                    std::vector<float> a(2 * f), b(2 * f);
                    cudaMemcpy(a.data(), db, 2 * f * 4, cudaMemcpyDeviceToHost);
                    cudaMemcpy(b.data(), refDb, 2 * f * 4, cudaMemcpyDeviceToHost);
                    long long differ = 0;
                    for (long long c = 0; c < 2 * f; ++c) differ += a[c] != b[c];
                    if (differ) printf("    bias gradient columns differing from the product's: %lld\n", differ);
                }
            }
        }
        cudaFree(dy); cudaFree(x); cudaFree(dx); cudaFree(refDx); cudaFree(bias); cudaFree(part); cudaFree(db);
        cudaFree(refDb); cudaFree(diff); cudaFree(cpySrc); cudaFree(cpyDst);
    }
    return 0;
}
