package dev.ubuf.tests;

import dev.ubuf.comm.ThreadDomain;
import dev.ubuf.op.Fp8Operands;
import dev.ubuf.tensor.DType;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.time.Duration;
import java.util.List;
import java.util.stream.Stream;

import static dev.ubuf.op.Collective.REDUCE_SCATTER;

/**
 * The ring reduce-scatter whose last GEMMs add the received sums as their C operand ({@code fuse=1}): on two GPUs,
 * as {@link OverlapOpsGpuTest} and {@link Fp8OverlapGpuTest} check every method (fresh random inputs, poisoned
 * outputs, consecutive calls, against the NCCL reference and a float64 product), in bf16, fp16 and FP8, with and
 * without bias, copy engines and SM copies, whole and tiny shapes, one ring and two. And the ring whose every GEMM
 * stores its running sum straight into the neighbour's slot ({@code direct=1}: cuBLASLt's D at a peer's address).
 */
class RingFusedTailGpuTest {
    static Stream<Arguments> cases() {
        return Stream.of(
                Arguments.of("ring:sub=2,lowp=1,fuse=1", DType.BF16, 2000, 384, 512, true, false, true),
                Arguments.of("ring:sub=2,lowp=1,fuse=1", DType.FP16, 1024, 640, 256, false, true, false),
                Arguments.of("ring:sub=2,lowp=1,fuse=1", DType.BF16, 6, 136, 128, true, true, true),
                Arguments.of("ring:sub=4,lowp=1,fuse=1,cs=1", DType.BF16, 4096, 512, 256, true, false, false),
                Arguments.of("ring:sub=2,lowp=1,fuse=1,bidir=1,cs=1", DType.BF16, 4096, 512, 256, true, false, true),
                // every GEMM stores its sum straight into the neighbour's slot
                Arguments.of("ring:sub=1,lowp=1,direct=1,cs=1", DType.BF16, 2000, 384, 512, true, false, true),
                Arguments.of("ring:sub=2,lowp=1,direct=1,cs=1", DType.FP16, 1024, 640, 256, false, true, false),
                Arguments.of("ring:sub=2,lowp=1,direct=1", DType.BF16, 6, 136, 128, true, true, true),
                Arguments.of("ring:sub=4,lowp=1,direct=1,cs=2", DType.BF16, 4096, 512, 256, true, false, false),
                Arguments.of("ring:sub=1,lowp=1,direct=1,bidir=1,cs=1", DType.BF16, 4096, 512, 256, true, false,
                        true));
    }

    @ParameterizedTest(name = "{0} {1} M={2} K={3} N={4} ce={5} weightT={6} bias={7}")
    @MethodSource("cases")
    void theFusedTailMatchesTheNcclReference(String variant, DType t, int m, int k, int n, boolean ce,
                                             boolean weightT, boolean bias) throws Exception {
        Gpu.assumeGpus(2);
        RankScenario scenario = new OverlapScenario(REDUCE_SCATTER, variant, t, m, k, n, ce, weightT, bias);
        ThreadDomain.run(2, Duration.ofSeconds(120),
                (rank, boot, ctx) -> scenario.run(rank, boot, ctx, OverlapOpsGpuTest.ENV));
    }

    static Stream<Arguments> fp8Cases() {
        Fp8Operands e4m3 = Fp8OverlapGpuTest.E4M3;
        Fp8Operands e5m2 = Fp8OverlapGpuTest.E5M2_X;
        List<Fp8OverlapGpuTest.Case> c = List.of(
                new Fp8OverlapGpuTest.Case(REDUCE_SCATTER, "ring:lowp=1,fuse=1", DType.BF16, e4m3, 1024, 128, 256,
                        true, true),
                new Fp8OverlapGpuTest.Case(REDUCE_SCATTER, "ring:lowp=1,fuse=1", DType.FP32, e4m3, 1024, 128, 256,
                        true, false),
                new Fp8OverlapGpuTest.Case(REDUCE_SCATTER, "ring:lowp=1,fuse=1", DType.BF16, e5m2, 512, 64, 384,
                        false, false),
                new Fp8OverlapGpuTest.Case(REDUCE_SCATTER, "ring:lowp=1,fuse=1,cs=1,free=1", DType.BF16, e4m3, 1024,
                        128, 256, true, true),
                new Fp8OverlapGpuTest.Case(REDUCE_SCATTER, "ring:lowp=1,fuse=1", DType.BF16, e4m3, 1024, 128, 256,
                        true, true, DType.FP8_E4M3),
                new Fp8OverlapGpuTest.Case(REDUCE_SCATTER, "ring:sub=1,lowp=1,direct=1", DType.BF16, e4m3, 1024, 128,
                        256, true, true),
                new Fp8OverlapGpuTest.Case(REDUCE_SCATTER, "ring:lowp=1,direct=1", DType.FP32, e4m3, 1024, 128, 256,
                        true, false),
                new Fp8OverlapGpuTest.Case(REDUCE_SCATTER, "ring:lowp=1,direct=1", DType.BF16, e4m3, 1024, 128, 256,
                        true, true, DType.FP8_E4M3));
        return c.stream().map(Arguments::of);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("fp8Cases")
    void theFusedTailOfAnFp8RingMatchesTheFp8NcclReference(Fp8OverlapGpuTest.Case c) throws Exception {
        Gpu.assumeGpus(2);
        ThreadDomain.run(2, Duration.ofSeconds(180), (rank, boot, ctx) -> Fp8OverlapGpuTest.run(c, rank, boot, ctx));
    }
}
