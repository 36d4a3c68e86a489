package dev.ubuf.tests;

import dev.ubuf.comm.ThreadDomain;
import dev.ubuf.config.UbufEnvironment;
import dev.ubuf.op.Collective;
import dev.ubuf.tensor.DType;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static dev.ubuf.op.Collective.ALL_GATHER;
import static dev.ubuf.op.Collective.REDUCE_SCATTER;

/**
 * Every overlap method of both families, and the planner's choice ("auto"), on two GPUs (one JVM, a thread per
 * rank) matches the NCCL reference and a float64 product, on fresh random inputs with poisoned outputs, over
 * consecutive calls from alternating caller streams. The body is {@link OverlapScenario}, which
 * {@link ProcessModeGpuTest} also runs with one JVM per rank.
 */
class OverlapOpsGpuTest {
    static final UbufEnvironment ENV = new UbufEnvironment(true, Duration.ofSeconds(60), false);

    static Stream<Arguments> cases() {
        List<Arguments> a = new ArrayList<>();
        for (String v : new String[]{"ring", "bidir", "aggregate", "oneshot"}) {
            for (DType t : new DType[]{DType.BF16, DType.FP16, DType.FP32}) {
                a.add(Arguments.of(ALL_GATHER, v, t, 2000, 512, 384, true, false, false));
            }
            a.add(Arguments.of(ALL_GATHER, v, DType.BF16, 1024, 256, 640, false, false, false)); // SM copies
            a.add(Arguments.of(ALL_GATHER, v, DType.BF16, 6, 128, 136, true, true, false));      // tiny M, W^T
        }
        a.add(Arguments.of(ALL_GATHER, "ring:cs=1", DType.BF16, 2000, 512, 384, true, false, false));
        for (String v : new String[]{"ring", "pipeline", "oneshot", "scatter", "scatter:sub=2,lowp=1"}) {
            for (DType t : new DType[]{DType.BF16, DType.FP16, DType.FP32}) {
                a.add(Arguments.of(REDUCE_SCATTER, v, t, 2000, 384, 512, true, false, true));
            }
            a.add(Arguments.of(REDUCE_SCATTER, v, DType.BF16, 1024, 640, 256, false, true, false));
            a.add(Arguments.of(REDUCE_SCATTER, v, DType.BF16, 6, 136, 128, true, true, true));
        }
        a.add(Arguments.of(REDUCE_SCATTER, "ring:sub=4,lowp=1", DType.BF16, 4096, 512, 256, true, false, false));
        // scatter's pushes as SM copy kernels (sm=C), the GEMMs leaving them C SMs
        a.add(Arguments.of(REDUCE_SCATTER, "scatter:sm=8,lowp=1", DType.BF16, 2000, 384, 512, true, false, true));
        a.add(Arguments.of(REDUCE_SCATTER, "scatter:sm=16,sub=2", DType.FP32, 1024, 640, 256, true, true, false));
        a.add(Arguments.of(REDUCE_SCATTER, "ring:bidir=1", DType.BF16, 2000, 384, 512, true, false, true));
        a.add(Arguments.of(REDUCE_SCATTER, "ring:bidir=1,lowp=1,sub=2", DType.BF16, 4096, 512, 256, true, false,
                false));
        a.add(Arguments.of(REDUCE_SCATTER, "ring:bidir=1,sub=1", DType.BF16, 6, 136, 128, false, true, true));
        a.add(Arguments.of(REDUCE_SCATTER, "pipeline:splits=8,margin=24", DType.BF16, 2048, 512, 512, true, false,
                true));
        // the GEMMs leaving SMs to the signal and wait kernels (cuBLASLt SM_COUNT_TARGET below the GPU's SMs)
        a.add(Arguments.of(ALL_GATHER, "aggregate:cs=1,free=1", DType.BF16, 2000, 512, 384, true, false, false));
        a.add(Arguments.of(ALL_GATHER, "ring:cs=1,free=1", DType.FP16, 1024, 256, 640, true, true, false));
        a.add(Arguments.of(REDUCE_SCATTER, "ring:sub=2,lowp=1,cs=1,fuse=1,free=1", DType.BF16, 2000, 384, 512, true,
                false, true));
        a.add(Arguments.of(REDUCE_SCATTER, "ring:sub=1,lowp=1,cs=1,free=1", DType.FP32, 1024, 640, 256, true, true,
                false));
        a.add(Arguments.of(REDUCE_SCATTER, "scatter:sub=2,lowp=1,free=1", DType.BF16, 2000, 384, 512, true, false,
                true));
        // scatter's own step cut apart from its pushes (pieces straddling their sub-chunks), and the own GEMM adding
        // the first partial to arrive as its C operand
        a.add(Arguments.of(REDUCE_SCATTER, "scatter:sub=1,tail=4,lowp=1", DType.BF16, 2000, 384, 512, true, false,
                true));
        a.add(Arguments.of(REDUCE_SCATTER, "scatter:sub=2,tail=3", DType.FP16, 1024, 640, 256, true, true, false));
        a.add(Arguments.of(REDUCE_SCATTER, "scatter:sub=2,tail=3,lowp=1,fuse=1", DType.BF16, 2000, 384, 512, true,
                false, true));
        a.add(Arguments.of(REDUCE_SCATTER, "scatter:sub=3,tail=1,lowp=1,fuse=1", DType.FP16, 6, 136, 128, true, true,
                true));
        // NCCL's reduce-scatter pipelined over GEMM column blocks, with and without the bias, W and W^T
        a.add(Arguments.of(REDUCE_SCATTER, "nccl:splits=4,margin=16", DType.BF16, 2000, 384, 512, true, false,
                true));
        a.add(Arguments.of(REDUCE_SCATTER, "nccl:splits=2", DType.FP16, 1024, 640, 256, true, true, false));
        a.add(Arguments.of(REDUCE_SCATTER, "nccl:splits=8,margin=32", DType.FP32, 2048, 256, 1024, true, false,
                true));
        for (Collective c : Collective.values()) { // the planner measures every candidate, then runs its choice
            a.add(Arguments.of(c, "auto", DType.BF16, 512, 1024, 768, true, false, false));
            a.add(Arguments.of(c, "auto", DType.BF16, 4096, 4096, 512, true, false, c == REDUCE_SCATTER));
        }
        return a.stream();
    }

    @ParameterizedTest(name = "{0} {1} {2} M={3} K={4} N={5} ce={6} weightT={7} bias={8}")
    @MethodSource("cases")
    void overlappedResultMatchesTheNcclReference(Collective c, String variant, DType t, int m, int k, int n,
                                                 boolean ce, boolean weightT, boolean bias) throws Exception {
        Gpu.assumeGpus(2);
        RankScenario scenario = new OverlapScenario(c, variant, t, m, k, n, ce, weightT, bias);
        ThreadDomain.run(2, Duration.ofSeconds(120), (rank, boot, ctx) -> scenario.run(rank, boot, ctx, ENV));
    }
}
