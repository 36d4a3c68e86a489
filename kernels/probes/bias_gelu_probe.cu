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
// First run (session 33 call 1, one H200): the dense forward (64-bit remainder a word) 0.89-0.92x the product's
// time; the dense backward plus the separate bias gradient 1.02-1.04x (the fused backward kept). Second version
// (call 2): the forward as a word a thread at full occupancy (as swiglu_fwd_words), two words a thread with 32-bit
// columns, and column-stationary threads (the bias word held for all a thread's rows); the fused backward at 3 and
// 4 blocks an SM; the unbiased GELU (map_dense) as the ceiling. Taken (4d92d28): the column-stationary forward
// (78% of copy against the product's 65%) and the fused backward at three blocks an SM (0.89-0.91x the time).
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

using R = ubuf::RawGroup<bf>;
constexpr int N = 8;

__device__ __forceinline__ void fwd_word(const uint4& rx, const uint4& rb, bf* out) {
    float v[N], b[N], o[N];
    R::unpack(rx, v);
    R::unpack(rb, b);
#pragma unroll
    for (int i = 0; i < N; ++i) o[i] = ubuf::gelu_tanh(ubuf::biased<bf>(v[i], b[i]));
    ubuf::store_vec<bf, N>(out, o);
}

// A word a thread (grid-stride, one pass on a grid of a thread a word), 32-bit row and column.
template <int MINB>
__global__ void __launch_bounds__(256, MINB) fwd_words(long long rows, long long cols, const bf* x, const bf* bias,
                                                       bf* y) {
    const unsigned perRow = (unsigned)(cols / N);
    const unsigned words = (unsigned)(rows * perRow);
    const unsigned stride = gridDim.x * blockDim.x;
    for (unsigned w = blockIdx.x * blockDim.x + threadIdx.x; w < words; w += stride) {
        const unsigned c = w % perRow;
        const uint4 rx = reinterpret_cast<const uint4*>(x)[w];
        const uint4 rb = reinterpret_cast<const uint4*>(bias)[c];
        fwd_word(rx, rb, y + (long long)w * N);
    }
}

// Two words a thread, the grid's threads apart (as map_dense walks one input), 32-bit columns.
template <int MINB>
__global__ void __launch_bounds__(256, MINB) fwd_pairs(long long rows, long long cols, const bf* x, const bf* bias,
                                                       bf* y) {
    const unsigned perRow = (unsigned)(cols / N);
    const unsigned words = (unsigned)(rows * perRow);
    const unsigned stride = gridDim.x * blockDim.x;
    for (unsigned w = blockIdx.x * blockDim.x + threadIdx.x; w < words; w += 2 * stride) {
        const bool second = w + stride < words;
        uint4 rx[2], rb[2];
        rx[0] = reinterpret_cast<const uint4*>(x)[w];
        rb[0] = reinterpret_cast<const uint4*>(bias)[w % perRow];
        if (second) {
            rx[1] = reinterpret_cast<const uint4*>(x)[w + stride];
            rb[1] = reinterpret_cast<const uint4*>(bias)[(w + stride) % perRow];
        }
        fwd_word(rx[0], rb[0], y + (long long)w * N);
        if (second) fwd_word(rx[1], rb[1], y + (long long)(w + stride) * N);
    }
}

// Column-stationary: span = k * perRow threads (k rows a sweep), thread t keeps column t % perRow and its bias
// word, and takes words t, t + span, ... two at a time.
template <int MINB>
__global__ void __launch_bounds__(256, MINB) fwd_colstat(long long rows, long long cols, const bf* x, const bf* bias,
                                                         bf* y, unsigned span) {
    const unsigned perRow = (unsigned)(cols / N);
    const unsigned words = (unsigned)(rows * perRow);
    const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= span) return;
    const uint4 rb = reinterpret_cast<const uint4*>(bias)[t % perRow];
    for (unsigned w = t; w < words; w += 2 * span) {
        const bool second = w + span < words;
        uint4 rx[2];
        rx[0] = reinterpret_cast<const uint4*>(x)[w];
        if (second) rx[1] = reinterpret_cast<const uint4*>(x)[w + span];
        fwd_word(rx[0], rb, y + (long long)w * N);
        if (second) fwd_word(rx[1], rb, y + (long long)(w + span) * N);
    }
}

// The product's fused backward at MINB blocks an SM, four rows ahead (as it was when this probe ran).
template <int MINB>
__global__ void __launch_bounds__(ubuf::ACT_BLOCK, MINB) bwd_fused(long long rows, long long cols, const bf* dy,
                                                                   const bf* x, const bf* bias, bf* dx,
                                                                   long long rowsPerPart, float* part) {
    ubuf::bias_act_bwd_partial_any<bf, ubuf::GeluGradOp, 4>(rows, cols, dy, cols, x, cols, bias, dx, cols,
                                                           rowsPerPart, part, cols, ubuf::GeluGradOp());
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
        CK(cudaMalloc(&cpySrc, n * 3));
        CK(cudaMalloc(&cpyDst, n * 3));
        probe_fill<<<sms * 4, 256>>>(dy, n, 7u, 0.02f);
        probe_fill<<<sms * 4, 256>>>(x, n, 1u, 4.f);
        probe_fill<<<sms, 256>>>(bias, f, 3u, 1.f);
        // LayerKernels.elementGrid: a block per 256 x 8 elements, at most 8 blocks an SM (grid-stride beyond).
        const int elemGrid = (int)((n + 2047) / 2048 < maxBlocks ? (n + 2047) / 2048 : maxBlocks);
        const long long words = n / 8;
        auto fwdProduct = [&](bf* out) {
            ubuf_bias_gelu_fwd_bf16<<<elemGrid, 256>>>(rows, f, x, f, bias, out, f, nullptr, 0);
        };
        // LayerKernels.biasActivationRowsPerPart as it was until 4d92d28 (132 SMs): 64 rows at f = 3584, 128 above.
        const long long tiles = (f / 8 + 63) / 64;
        long long rpp = 32;
        while (rpp * 2 <= 128 && (rows + rpp * 2 - 1) / (rpp * 2) * tiles >= 6LL * sms) rpp *= 2;
        const long long parts = (rows + rpp - 1) / rpp;
        const long long items = parts * tiles;
        const int bwdGrid = (int)(items < maxBlocks ? items : maxBlocks);
        const int sumGrid = (int)(f / 32 < maxBlocks ? f / 32 : maxBlocks);
        auto bwdProduct = [&](bf* out, float* dbias) {
            ubuf_bias_gelu_bwd_partial_bf16<<<bwdGrid, 256>>>(rows, f, dy, f, x, f, bias, out, f, rpp, part, f);
            ubuf_col_sums_f32_to_f32<<<sumGrid, 512>>>(parts, f, part, f, dbias, 0);
        };
        fwdProduct(refY);
        bwdProduct(refDx, refDb);
        CK(cudaDeviceSynchronize());
        const ProbeTimer fwd{rows, f, n, 2 * n * 2, 100, sms, 52, refY, diff};
        const ProbeTimer bwd{rows, f, n, 3 * n * 2, 100, sms, 52, refDx, diff};
        const int wordGrid = (int)((words + 255) / 256);
        const unsigned perRow = (unsigned)(f / 8);
        const unsigned span = (unsigned)(sms * 2048LL / perRow) * perRow;
        const int spanGrid = (int)((span + 255) / 256);
        auto checkDb = [&](const char* name) {
            std::vector<float> a(f), b(f);
            cudaMemcpy(a.data(), db, f * 4, cudaMemcpyDeviceToHost);
            cudaMemcpy(b.data(), refDb, f * 4, cudaMemcpyDeviceToHost);
            long long differ = 0;
            for (long long c = 0; c < f; ++c) differ += a[c] != b[c];
            printf("%lldx%lld    %s: bias gradient columns differing from the product's %lld\n", rows, f, name,
                   differ);
        };
        for (int pass = 0; pass < 2; ++pass) {
            fwd.time("memcpy d2d (forward's bytes)", refY, [&] {
                cudaMemcpyAsync(cpyDst, cpySrc, n * 2, cudaMemcpyDeviceToDevice);
            });
            cudaMemset(y, 0xff, n * 2);
            fwd.time("FWD unbiased GELU map_dense (ceiling; other op)", y, [&] {
                ubuf_gelu_fwd_dense_bf16<<<elemGrid, 256>>>(n, x, y);
            });
            cudaMemset(y, 0xff, n * 2);
            fwd.time("FWD product (map_elements)", y, [&] { fwdProduct(y); });
            cudaMemset(y, 0xff, n * 2);
            fwd.time("FWD word a thread, bounds 256x4", y, [&] {
                probe::fwd_words<4><<<wordGrid, 256>>>(rows, f, x, bias, y);
            });
            cudaMemset(y, 0xff, n * 2);
            fwd.time("FWD word a thread, bounds 256x8", y, [&] {
                probe::fwd_words<8><<<wordGrid, 256>>>(rows, f, x, bias, y);
            });
            cudaMemset(y, 0xff, n * 2);
            fwd.time("FWD two words a thread (32-bit), 256x8", y, [&] {
                probe::fwd_pairs<8><<<elemGrid, 256>>>(rows, f, x, bias, y);
            });
            cudaMemset(y, 0xff, n * 2);
            fwd.time("FWD column-stationary, 256x8", y, [&] {
                probe::fwd_colstat<8><<<spanGrid, 256>>>(rows, f, x, bias, y, span);
            });
            bwd.time("memcpy d2d (backward's bytes)", refDx, [&] {
                cudaMemcpyAsync(cpyDst, cpySrc, n * 3, cudaMemcpyDeviceToDevice);
            });
            cudaMemset(dx, 0xff, n * 2);
            bwd.time("BWD unbiased GELU map_dense (ceiling; no dbias)", dx, [&] {
                ubuf_gelu_bwd_dense_bf16<<<elemGrid, 256>>>(n, dy, x, dx);
            });
            cudaMemset(dx, 0xff, n * 2);
            bwd.time("BWD product (2 blocks an SM)", dx, [&] { bwdProduct(dx, db); });
            checkDb("product");
            cudaMemset(dx, 0xff, n * 2);
            cudaMemset(db, 0xff, f * 4);
            bwd.time("BWD fused, 3 blocks an SM", dx, [&] {
                probe::bwd_fused<3><<<bwdGrid, 256>>>(rows, f, dy, x, bias, dx, rpp, part);
                ubuf_col_sums_f32_to_f32<<<sumGrid, 512>>>(parts, f, part, f, db, 0);
            });
            checkDb("3 blocks");
            cudaMemset(dx, 0xff, n * 2);
            cudaMemset(db, 0xff, f * 4);
            bwd.time("BWD fused, 4 blocks an SM", dx, [&] {
                probe::bwd_fused<4><<<bwdGrid, 256>>>(rows, f, dy, x, bias, dx, rpp, part);
                ubuf_col_sums_f32_to_f32<<<sumGrid, 512>>>(parts, f, part, f, db, 0);
            });
            checkDb("4 blocks");
        }
        cudaFree(dy); cudaFree(x); cudaFree(y); cudaFree(refY); cudaFree(dx); cudaFree(refDx); cudaFree(bias);
        cudaFree(part); cudaFree(db); cudaFree(refDb); cudaFree(diff); cudaFree(cpySrc); cudaFree(cpyDst);
    }
    return 0;
}
