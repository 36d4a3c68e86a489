// Standalone probe (not part of the build), thirty-fourth session: the fused bias + SwiGLU backward
// (ubuf_bias_swiglu_bwd_partial, then the column sums over both halves) at other (rows loaded ahead, resident blocks
// an SM) pairs than the product's ((4, 2) when it ran in call 3, at 4adae00; (1, 4) since 6517427), on 41b0787's
// math (the sigmoid from the SFU's 2^x and 1 / x), which took its sm_90 spill from 40 to 4 bytes at 128 registers:
// fewer rows ahead fit fewer registers and more blocks an SM. The harness is probe_bias_act_bwd.cuh's.
// Parts of each variant by LayerKernels.biasActivationRowsPerPart's rule (probe_bias_act_rows_per_part, for the
// variant's blocks). dx compared bit for bit with the product's (the rows ahead and the launch bounds do not change
// an element's math); the bias gradient's columns with the product's at the same parts. x is rows x 2F, dy rows x F.
// Run in session 34 call 3 (one H200): one row ahead at four blocks 0.90-0.93x the product's time at every shape,
// two or three rows at three or four blocks slower; and this probe's own kernel at the product's (4, 2) 0.94x the
// product's, its strides derived from F where the product takes them as arguments. In the product one row ahead at
// four blocks ran 1.06x (call 4; 48 bytes spilled) until the strides of dense views became one value (6517427).
// Build and run:
//   nvcc -arch=sm_90 -O3 -std=c++17 -I../src/main/cuda bias_swiglu_bwd_ahead_probe.cu -o swigluahead && ./swigluahead
#include "../src/main/cuda/ubuf_activation.cu"
#include "../src/main/cuda/ubuf_colsum.cu"
#include "probe_common.cuh"
#include "probe_bias_act_bwd.cuh"

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
    struct Shape { long long rows, f; };
    for (Shape s : {Shape{8192, 7168}, Shape{8192, 14336}, Shape{16384, 7168}, Shape{4096, 14336}}) {
        BiasActBwdProbe p{s.rows, s.f, 2, sms, ubuf::ACT_SWIGLU_BWD_BLOCKS_PER_SM};
        if (p.alloc(8.f)) return 1;
        const BiasActBwdProbe q = p;
        const std::vector<BiasActBwdVariant> variants = {
            {"product", ubuf::ACT_SWIGLU_BWD_BLOCKS_PER_SM, [q](bf* o, float* d) {
                const long long rpp = q.rowsPerPart(ubuf::ACT_SWIGLU_BWD_BLOCKS_PER_SM);
                const long long parts = (q.rows + rpp - 1) / rpp;
                ubuf_bias_swiglu_bwd_partial_bf16<<<q.grid(parts), 256>>>(q.rows, q.f, q.dy, q.f, q.x, 2 * q.f,
                                                                          q.bias, o, 2 * q.f, rpp, q.part, 2 * q.f);
                q.sums(parts, d);
            }},
            p.variant("4 rows ahead, 2 blocks", bwd<4, 2>, 2),
            p.variant("3 rows ahead, 2 blocks", bwd<3, 2>, 2),
            p.variant("3 rows ahead, 3 blocks", bwd<3, 3>, 3),
            p.variant("2 rows ahead, 3 blocks", bwd<2, 3>, 3),
            p.variant("2 rows ahead, 4 blocks", bwd<2, 4>, 4),
            p.variant("1 row ahead, 4 blocks", bwd<1, 4>, 4),
            p.variant("1 row ahead, 5 blocks", bwd<1, 5>, 5),
        };
        if (p.run(variants, 34)) return 1;
        p.release();
    }
    return 0;
}
