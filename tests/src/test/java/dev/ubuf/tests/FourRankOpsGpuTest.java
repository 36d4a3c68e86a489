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
 * The methods whose schedule differs most between two ranks and more (every peer a separate push or hop) on four
 * GPUs, one JVM with a thread per rank, checked as {@link OverlapOpsGpuTest} checks two ranks. A class of its own
 * because it needs four GPUs: on fewer it fails under {@code -Dubuf.requireGpu=true}, where a four-rank case inside
 * the two-GPU class could only be skipped.
 */
class FourRankOpsGpuTest {
    static final UbufEnvironment ENV = new UbufEnvironment(true, Duration.ofSeconds(60), false);

    static Stream<Arguments> cases() {
        List<Arguments> a = new ArrayList<>();
        for (String v : new String[]{"scatter", "scatter:sub=2,lowp=1", "scatter:sub=4,lowp=1", "ring:sub=2,lowp=1",
                "oneshot", "scatter:sm=8,lowp=1", "scatter:sub=2,lowp=1,serial=1", "scatter:serial=1,sm=8", "scatter:sub=1,tail=4,lowp=1",
                "scatter:sub=1,tail=4,lowp=1,fuse=1", "scatter:sub=2,tail=3,lowp=1,fuse=1,serial=1"}) {
            a.add(Arguments.of(REDUCE_SCATTER, v, DType.BF16, 4000, 384, 512, true, false, true));
            a.add(Arguments.of(REDUCE_SCATTER, v, DType.FP32, 1024, 640, 256, true, true, false));
        }
        // every rank pushing its shard to every peer, nothing forwarded; the GEMMs leaving SMs to the signals
        for (String v : new String[]{"fanout:cs=1", "fanout:ms=3", "fanout:cs=2,ms=3,free=1", "ring:cs=1,free=1"}) {
            a.add(Arguments.of(ALL_GATHER, v, DType.BF16, 4000, 512, 384, true, false, false));
            a.add(Arguments.of(ALL_GATHER, v, DType.FP16, 1024, 256, 640, true, true, false));
        }
        a.add(Arguments.of(ALL_GATHER, "fanout:cs=1", DType.BF16, 12, 128, 136, false, false, false)); // SM copies
        a.add(Arguments.of(REDUCE_SCATTER, "scatter:sub=2,lowp=1,free=3", DType.BF16, 4000, 384, 512, true, false,
                true));
        // the ring's fused tail past two ranks: the running sum received, this rank's partial and the bias added in
        // the last GEMMs' epilogue (as the 70B tp 4 layer plans it)
        a.add(Arguments.of(REDUCE_SCATTER, "ring:cs=1,sub=4,lowp=1,fuse=1", DType.BF16, 4000, 384, 512, true, false,
                true));
        a.add(Arguments.of(REDUCE_SCATTER, "ring:sub=2,lowp=1,fuse=1", DType.FP16, 1024, 640, 256, true, true, true));
        a.add(Arguments.of(ALL_GATHER, "auto", DType.BF16, 4096, 4096, 512, true, false, false));
        a.add(Arguments.of(REDUCE_SCATTER, "auto", DType.BF16, 4096, 4096, 512, true, false, true));
        return a.stream();
    }

    @ParameterizedTest(name = "tp4 {0} {1} {2} M={3} K={4} N={5} ce={6} weightT={7} bias={8}")
    @MethodSource("cases")
    void overlappedResultMatchesTheNcclReferenceOnFourRanks(Collective c, String variant, DType t, int m, int k,
                                                            int n, boolean ce, boolean weightT, boolean bias)
            throws Exception {
        Gpu.assumeGpus(4);
        RankScenario scenario = new OverlapScenario(c, variant, t, m, k, n, ce, weightT, bias);
        ThreadDomain.run(4, Duration.ofSeconds(120), (rank, boot, ctx) -> scenario.run(rank, boot, ctx, ENV));
    }

    static Stream<Fp8OverlapGpuTest.Case> fp8Cases() {
        return Stream.of(
                new Fp8OverlapGpuTest.Case(ALL_GATHER, "fanout:cs=1", DType.BF16, Fp8OverlapGpuTest.E4M3, 1024, 128,
                        256, true, false),
                new Fp8OverlapGpuTest.Case(ALL_GATHER, "fanout:cs=1,ms=3,free=1", DType.BF16,
                        Fp8OverlapGpuTest.E5M2_X, 512, 64, 384, true, false));
    }

    @ParameterizedTest(name = "tp4 {0}")
    @MethodSource("fp8Cases")
    void fp8OperandsMatchTheFp8NcclReferenceOnFourRanks(Fp8OverlapGpuTest.Case c) throws Exception {
        Gpu.assumeGpus(4);
        ThreadDomain.run(4, Duration.ofSeconds(180), (rank, boot, ctx) -> Fp8OverlapGpuTest.run(c, rank, boot, ctx));
    }
}
