// Standalone probe (not part of the build), written in the thirty-second session for the next GPU call: the biased
// GELU (fc1's bias fused in) against variants that walk the tensor as the unbiased GELU kernels do. `bench kernels`
// (bench/results/2026-11-29-session32/call13-*, one H200) has the biased forward at 68-70% of a copy of its bytes
// and the fused backward at 60-68%, where the unbiased GELU forward and backward run at 90-100%:
//   forward:  the product (ubuf_bias_gelu_fwd_bf16: map_elements, a (row, col) pair walk, the bias a broadcast
//             input) against fwd_dense: the words of the whole (dense) tensor two a thread, as map_dense walks
//             GELU's forward, each word's column from its index (a 32-bit remainder a word) and the bias word from
//             L1. The same op on every element, so the same bits.
//   backward: the product (ubuf_bias_gelu_bwd_partial_bf16 at LayerKernels.biasActivationRowsPerPart's parts, then
//             ubuf_col_sums_f32_to_f32) against bwd_dense + the bias gradient as LayerKernels.biasGrad takes it
//             (ubuf_col_sums_partial_bf16 over the stored dx, then the same column sums): one element-wise pass at
//             full occupancy and one more read of dx. dx the same bits; the bias gradient other sums (reported as
//             the largest relative difference).
// Not yet run on a GPU (no device time was left when it was written); compiles for sm_90 (45-50 registers).
// Build and run:
//   nvcc -arch=sm_90 -O3 -std=c++17 -I../src/main/cuda bias_gelu_probe.cu -o biasgelu && ./biasgelu
#include <cmath>
#include <vector>

#include "../src/main/cuda/ubuf_activation.cu"
#include "../src/main/cuda/ubuf_colsum.cu"
#include "probe_common.cuh"

using bf = __nv_bfloat16;
using ubuf::i64;

namespace probe {

// The words of a dense rows x cols tensor (cols a multiple of 8), two a thread (a block's 2 x blockDim words
// consecutive, as map_dense walks two inputs), each word's bias word found from its column.
template <bool BWD>
__global__ void __launch_bounds__(256) dense(i64 rows, i64 cols, const bf* dy, const bf* x, const bf* bias, bf* out) {
    constexpr int N = 8;
    using R = ubuf::RawGroup<bf>;
    const unsigned wordsPerRow = (unsigned)(cols / N);
    const i64 words = rows * wordsPerRow;
    const i64 stride = (i64)gridDim.x * blockDim.x;
    const i64 apart = blockDim.x;
    const uint4* xw = reinterpret_cast<const uint4*>(x);
    const uint4* dyw = reinterpret_cast<const uint4*>(dy);
    const uint4* bw = reinterpret_cast<const uint4*>(bias);
    for (i64 w = (i64)blockIdx.x * 2 * apart + threadIdx.x; w < words; w += 2 * stride) {
        const bool second = w + apart < words;
        uint4 rx[2], rd[2], rb[2];
        rx[0] = xw[w];
        if (BWD) rd[0] = dyw[w];
        rb[0] = bw[(unsigned)(w % wordsPerRow)];
        if (second) {
            rx[1] = xw[w + apart];
            if (BWD) rd[1] = dyw[w + apart];
            rb[1] = bw[(unsigned)((w + apart) % wordsPerRow)];
        }
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            if (h == 1 && !second) break;
            float v[N], b[N], d[N], o[N];
            R::unpack(rx[h], v);
            R::unpack(rb[h], b);
            if (BWD) R::unpack(rd[h], d);
#pragma unroll
            for (int i = 0; i < N; ++i) {
                const float z = ubuf::biased<bf>(v[i], b[i]);
                if (BWD) {
                    float dz[1];
                    ubuf::GeluGradOp()(d[i], {z}, dz);
                    o[i] = dz[0];
                } else {
                    o[i] = ubuf::gelu_tanh(z);
                }
            }
            ubuf::store_vec<bf, N>(out + (w + h * apart) * N, o);
        }
    }
}

}  // namespace probe

int main() {
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const long long rows = 8192;
    const int maxBlocks = sms * 8;
    for (long long f : {3584LL, 7168LL, 14336LL}) {
        const long long n = rows * f;
        bf *dy, *x, *bias, *y, *refY, *dx, *refDx;
        float *part, *db, *refDb;
        char *cpySrc, *cpyDst;
        unsigned long long* diff;
        CK(cudaMalloc(&dy, n * 2));
        CK(cudaMalloc(&x, n * 2));
        CK(cudaMalloc(&y, n * 2));
        CK(cudaMalloc(&refY, n * 2));
        CK(cudaMalloc(&dx, n * 2));
        CK(cudaMalloc(&refDx, n * 2));
        CK(cudaMalloc(&bias, f * 2));
        CK(cudaMalloc(&part, 256 * f * 4));
        CK(cudaMalloc(&db, f * 4));
        CK(cudaMalloc(&refDb, f * 4));
        CK(cudaMalloc(&diff, 8));
        CK(cudaMalloc(&cpySrc, n * 2));
        CK(cudaMalloc(&cpyDst, n * 2));
        probe_fill<<<sms * 4, 256>>>(dy, n, 7u, 0.02f);
        probe_fill<<<sms * 4, 256>>>(x, n, 1u, 4.f);
        probe_fill<<<sms, 256>>>(bias, f, 3u, 1.f);
        // LayerKernels.elementGrid: a block per 256 x 8 elements, at most 8 blocks an SM (grid-stride beyond).
        const int elemGrid = (int)((n + 2047) / 2048 < maxBlocks ? (n + 2047) / 2048 : maxBlocks);
        auto fwdProduct = [&](bf* out) {
            ubuf_bias_gelu_fwd_bf16<<<elemGrid, 256>>>(rows, f, x, f, bias, out, f, nullptr, 0);
        };
        // LayerKernels.biasActivationRowsPerPart at 132 SMs: 64 rows at f = 3584, 128 above.
        const long long tiles = (f / 8 + 63) / 64;
        long long rpp = 32;
        while (rpp * 2 <= 128 && (rows + rpp * 2 - 1) / (rpp * 2) * tiles >= 6LL * sms) rpp *= 2;
        const long long parts = (rows + rpp - 1) / rpp;
        auto bwdProduct = [&](bf* out, float* dbias) {
            const long long items = parts * tiles;
            ubuf_bias_gelu_bwd_partial_bf16<<<(int)(items < maxBlocks ? items : maxBlocks), 256>>>(
                rows, f, dy, f, x, f, bias, out, f, rpp, part, f);
            ubuf_col_sums_f32_to_f32<<<(int)(f / 32 < maxBlocks ? f / 32 : maxBlocks), 512>>>(parts, f, part, f,
                                                                                             dbias, 0);
        };
        // LayerKernels.biasGradRowsPerPart at 132 SMs (3 items an SM, tiles of 256 groups), without its one-wave rule.
        const long long gtiles = (f / 8 + 255) / 256;
        long long grpp = 32;
        while (grpp * 2 <= 128 && (rows + grpp * 2 - 1) / (grpp * 2) * gtiles >= 3LL * sms) grpp *= 2;
        const long long gparts = (rows + grpp - 1) / grpp;
        auto bwdDense = [&](bf* out, float* dbias) {
            probe::dense<true><<<elemGrid, 256>>>(rows, f, dy, x, bias, out);
            ubuf_col_sums_partial_bf16<<<(int)(gparts * gtiles < maxBlocks ? gparts * gtiles : maxBlocks), 256>>>(
                rows, f, out, f, grpp, part, f);
            ubuf_col_sums_f32_to_f32<<<(int)(f / 32 < maxBlocks ? f / 32 : maxBlocks), 512>>>(gparts, f, part, f,
                                                                                             dbias, 0);
        };
        fwdProduct(refY);
        bwdProduct(refDx, refDb);
        CK(cudaDeviceSynchronize());
        const ProbeTimer fwd{rows, f, n, 2 * n * 2, 100, sms, 52, refY, diff};
        const ProbeTimer bwd{rows, f, n, 3 * n * 2, 100, sms, 52, refDx, diff};
        for (int pass = 0; pass < 2; ++pass) {
            fwd.time("memcpy d2d (forward's bytes)", refY, [&] {
                cudaMemcpyAsync(cpyDst, cpySrc, n * 2, cudaMemcpyDeviceToDevice);
            });
            cudaMemset(y, 0xff, n * 2);
            fwd.time("FWD product (map_elements)", y, [&] { fwdProduct(y); });
            cudaMemset(y, 0xff, n * 2);
            fwd.time("FWD dense words", y, [&] { probe::dense<false><<<elemGrid, 256>>>(rows, f, dy, x, bias, y); });
            bwd.time("memcpy d2d (backward's bytes)", refDx, [&] {
                cudaMemcpyAsync(cpyDst, cpySrc, n * 3, cudaMemcpyDeviceToDevice);
            });
            cudaMemset(dx, 0xff, n * 2);
            bwd.time("BWD product (tiled, fused sums)", dx, [&] { bwdProduct(dx, db); });
            cudaMemset(dx, 0xff, n * 2);
            bwd.time("BWD dense words + bias gradient", dx, [&] { bwdDense(dx, db); });
            std::vector<float> a(f), b(f);
            cudaMemcpy(a.data(), db, f * 4, cudaMemcpyDeviceToHost);
            cudaMemcpy(b.data(), refDb, f * 4, cudaMemcpyDeviceToHost);
            double worst = 0;
            for (long long c = 0; c < f; ++c) {
                const double rel = std::fabs((double)a[c] - b[c]) / (std::fabs((double)b[c]) + 1e-30);
                if (rel > worst) worst = rel;
            }
            printf("%lldx%lld    bias gradient, dense against product: largest relative difference %.3g\n", rows, f,
                   worst);
        }
        cudaFree(dy); cudaFree(x); cudaFree(y); cudaFree(refY); cudaFree(dx); cudaFree(refDx); cudaFree(bias);
        cudaFree(part); cudaFree(db); cudaFree(refDb); cudaFree(diff); cudaFree(cpySrc); cudaFree(cpyDst);
    }
    return 0;
}
