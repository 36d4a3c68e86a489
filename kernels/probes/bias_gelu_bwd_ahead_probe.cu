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
// The harness is probe_bias_act_bwd.cuh's (since session 34; the same buffers, parts, variants and timing). Build and
// run:
//   nvcc -arch=sm_90 -O3 -std=c++17 -I../src/main/cuda bias_gelu_bwd_ahead_probe.cu -o geluahead && ./geluahead
#include "../src/main/cuda/ubuf_activation.cu"
#include "../src/main/cuda/ubuf_colsum.cu"
#include "probe_common.cuh"
#include "probe_bias_act_bwd.cuh"

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
    struct Shape { long long rows, f; };
    for (Shape s : {Shape{8192, 3584}, Shape{8192, 7168}, Shape{8192, 14336}, Shape{16384, 3584}, Shape{4096, 7168}}) {
        BiasActBwdProbe p{s.rows, s.f, 1, sms, 3};
        if (p.alloc(4.f)) return 1;
        auto product = [p](bool sums) {
            return [p, sums](bf* o, float* d) {
                const long long rpp = p.rowsPerPart(3);
                const long long parts = (p.rows + rpp - 1) / rpp;
                ubuf_bias_gelu_bwd_partial_bf16<<<p.grid(parts), 256>>>(p.rows, p.f, p.dy, p.f, p.x, p.f, p.bias, o,
                                                                        p.f, rpp, p.part, p.f);
                if (sums) p.sums(parts, d);
            };
        };
        const std::vector<BiasActBwdVariant> variants = {
            {"product (4 rows ahead until 2e211e2, 3 since)", 3, product(true)},
            {"product's partial kernel alone (no sums)", 3, product(false)},
            p.variant("3 rows ahead, 3 blocks", bwd<3, 3>, 3),
            p.variant("2 rows ahead, 3 blocks", bwd<2, 3>, 3),
            p.variant("2 rows ahead, 4 blocks", bwd<2, 4>, 4),
            p.variant("2 rows ahead, 5 blocks", bwd<2, 5>, 5),
            p.variant("1 row ahead, 4 blocks", bwd<1, 4>, 4),
            p.variant("1 row ahead, 6 blocks", bwd<1, 6>, 6),
            p.variant("1 row ahead, 8 blocks", bwd<1, 8>, 8),
        };
        if (p.run(variants, 44)) return 1;
        p.release();
    }
    return 0;
}
