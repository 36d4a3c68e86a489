package dev.ubuf.tests;

import dev.ubuf.comm.ThreadDomain;
import dev.ubuf.tensor.DType;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static dev.ubuf.tests.LayerScenario.Block.COLUMN;
import static dev.ubuf.tests.LayerScenario.Block.LN_LINEAR;
import static dev.ubuf.tests.LayerScenario.Block.MLP_GELU;
import static dev.ubuf.tests.LayerScenario.Block.MLP_SWIGLU;
import static dev.ubuf.tests.LayerScenario.Block.ROW;

/**
 * Every tensor-parallel building block (column- and row-parallel linear, LayerNormLinear, LayerNormMLP with GELU
 * and SwiGLU) with the overlap each configuration selects computes what the same block with overlap off computes:
 * output, input gradient and every weight gradient, on two GPUs (a thread per rank); LayerNormMLP in fp32 also
 * against float64. FP8 cases (overlap names ending in +fp8 or +fp8current) run every GEMM of both blocks in FP8 and
 * compare them the same way, over two steps of the recipe (tolerances in {@link LayerScenario}). The body is
 * {@link LayerScenario}; {@link ProcessModeGpuTest} runs one case with a JVM per rank.
 */
class TpLayersGpuTest {
    static Stream<Arguments> cases() {
        List<Arguments> a = new ArrayList<>();
        for (LayerScenario.Block b : LayerScenario.Block.values()) {
            for (String overlap : new String[]{"te", "rs_dgrad", "ring", "sm"}) {
                a.add(Arguments.of(b, overlap, DType.BF16, 512, 1024, 1024));
            }
            a.add(Arguments.of(b, "te", DType.FP32, 256, 512, 512));
            a.add(Arguments.of(b, "te", DType.FP16, 256, 512, 512));
        }
        a.add(Arguments.of(MLP_SWIGLU, "rs_dgrad", DType.FP32, 128, 256, 256)); // float64 check of the rs_dgrad path
        a.add(Arguments.of(MLP_GELU, "ring", DType.FP32, 128, 256, 256));
        a.add(Arguments.of(MLP_SWIGLU, "auto", DType.BF16, 1024, 4096, 2048)); // the planner's choices
        a.add(Arguments.of(COLUMN, "te", DType.BF16, 4096, 4096, 4096));
        a.add(Arguments.of(ROW, "te", DType.BF16, 4096, 4096, 4096));
        a.add(Arguments.of(LN_LINEAR, "rs_dgrad", DType.BF16, 64, 128, 8)); // few tokens: 2 rows per rank at half
        // FP8 (delayed scaling unless "current"): every block, TE's methods and ub_overlap_rs_dgrad, then the other
        // methods and current scaling on a few; dimensions multiples of 16, tokens of 32 (the half round too).
        for (LayerScenario.Block b : LayerScenario.Block.values()) {
            for (String overlap : new String[]{"te+fp8", "rs_dgrad+fp8", "te+fp8current"}) {
                a.add(Arguments.of(b, overlap, DType.BF16, 512, 1024, 1024));
            }
        }
        a.add(Arguments.of(MLP_GELU, "ring+fp8", DType.BF16, 512, 1024, 1024));
        a.add(Arguments.of(MLP_SWIGLU, "sm+fp8", DType.BF16, 512, 1024, 1024));
        a.add(Arguments.of(MLP_SWIGLU, "rs_dgrad+fp8current", DType.BF16, 512, 1024, 1024));
        a.add(Arguments.of(COLUMN, "te+fp8", DType.FP16, 256, 512, 512));
        a.add(Arguments.of(ROW, "te+fp8", DType.BF16, 4096, 4096, 4096));
        a.add(Arguments.of(LN_LINEAR, "rs_dgrad+fp8", DType.BF16, 64, 128, 64)); // 16 rows per rank at half
        return a.stream();
    }

    @ParameterizedTest(name = "{0} {1} {2} hidden={3} ffn={4} tokens<={5}")
    @MethodSource("cases")
    void overlappedBlockMatchesTheSameBlockWithoutOverlap(LayerScenario.Block block, String overlap, DType dtype,
                                                          int hidden, int ffn, int maxTokens) throws Exception {
        Gpu.assumeGpus(2);
        LayerScenario scenario = new LayerScenario(block, overlap, dtype, hidden, ffn, maxTokens);
        ThreadDomain.run(2, Duration.ofSeconds(120), (rank, boot, ctx) -> scenario.run(rank, boot, ctx,
                OverlapOpsGpuTest.ENV));
    }
}
