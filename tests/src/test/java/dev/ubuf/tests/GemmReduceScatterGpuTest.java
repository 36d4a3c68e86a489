package dev.ubuf.tests;

import dev.ubuf.bench.ThreadDomain;
import dev.ubuf.config.UbufEnvironment;
import dev.ubuf.rs.RsMethod;
import dev.ubuf.tensor.DType;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * GEMM->ReduceScatter overlap on two GPUs (one JVM, a thread per rank) matches one cuBLASLt GEMM + NCCL
 * ReduceScatter (+ bias) and a float64 reference, on fresh random inputs, poisoned outputs, three calls each. The body
 * is {@link RsScenario}, which {@link ProcessModeGpuTest} also runs with one JVM per rank.
 */
class GemmReduceScatterGpuTest {
    static final UbufEnvironment ENV = new UbufEnvironment(true, Duration.ofSeconds(60), false);

    static Stream<Arguments> cases() {
        List<Arguments> a = new ArrayList<>();
        for (RsMethod m : new RsMethod[]{RsMethod.RING, RsMethod.PIPELINE, RsMethod.ONESHOT}) {
            for (DType t : new DType[]{DType.BF16, DType.FP16, DType.FP32}) {
                a.add(Arguments.of(m, t, 2000, 384, 512, true, false));
            }
            a.add(Arguments.of(m, DType.BF16, 1024, 640, 256, false, true));
            a.add(Arguments.of(m, DType.BF16, 6, 136, 128, true, true));
        }
        return a.stream();
    }

    @ParameterizedTest(name = "{0} {1} M={2} K={3} N={4} bias={5} weightT={6}")
    @MethodSource("cases")
    void overlappedResultMatchesGemmPlusNcclReduceScatter(RsMethod method, DType t, int m, int k, int n,
                                                          boolean bias, boolean weightT) throws Exception {
        Gpu.assumeGpus(2);
        RankScenario scenario = new RsScenario(method, t, m, k, n, bias, weightT);
        ThreadDomain.run(2, Duration.ofSeconds(60), (rank, boot, ctx) -> scenario.run(rank, boot, ctx, ENV));
    }
}
