package dev.ubuf.tests;

import dev.ubuf.ag.AgMethod;
import dev.ubuf.bench.ThreadDomain;
import dev.ubuf.config.UbufEnvironment;
import dev.ubuf.tensor.DType;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * AllGather->GEMM overlap on two GPUs (one JVM, a thread per rank) matches NCCL AllGather + one cuBLASLt GEMM and a
 * float64 product, on fresh random inputs, with poisoned outputs, over several consecutive calls. The body is
 * {@link AgScenario}, which {@link ProcessModeGpuTest} also runs with one JVM per rank.
 */
class AllGatherGemmGpuTest {
    static final UbufEnvironment ENV = new UbufEnvironment(true, Duration.ofSeconds(60), false);

    static Stream<Arguments> cases() {
        List<Arguments> a = new ArrayList<>();
        for (AgMethod m : new AgMethod[]{AgMethod.RING, AgMethod.AGGREGATE, AgMethod.ONESHOT}) {
            for (DType t : new DType[]{DType.BF16, DType.FP16, DType.FP32}) {
                a.add(Arguments.of(m, t, 2000, 512, 384, true, false));
            }
            a.add(Arguments.of(m, DType.BF16, 1024, 256, 640, false, false)); // SM copies (use_ce=false)
            a.add(Arguments.of(m, DType.BF16, 6, 128, 136, true, true));      // tiny M, transposed weight
        }
        return a.stream();
    }

    @ParameterizedTest(name = "{0} {1} M={2} K={3} N={4} copyEngine={5} weightT={6}")
    @MethodSource("cases")
    void overlappedResultMatchesNcclAllGatherPlusGemm(AgMethod method, DType t, int m, int k, int n, boolean ce,
                                                      boolean weightT) throws Exception {
        Gpu.assumeGpus(2);
        RankScenario scenario = new AgScenario(method, t, m, k, n, ce, weightT);
        ThreadDomain.run(2, Duration.ofSeconds(60), (rank, boot, ctx) -> scenario.run(rank, boot, ctx, ENV));
    }
}
