package dev.ubuf.rs;

import dev.ubuf.op.Fp8Operands;
import dev.ubuf.op.MethodRegistry;
import dev.ubuf.plan.BufferRole;
import dev.ubuf.plan.HostPlanExecutor;
import dev.ubuf.plan.Plan;
import dev.ubuf.plan.PlanStep;
import dev.ubuf.plan.Region;
import dev.ubuf.tensor.DType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * GEMM→ReduceScatter with an FP8 output ({@link RsShape#withFp8Output}) on the host executor: every method sums in
 * its wide type as before, into the staged output, and one last step quantizes the sum (+ bias) into the FP8 OUTPUT
 * with the caller's scale, raising the caller's amax. Every rank's OUTPUT must equal fp8(float64 sum * scale), rounded
 * to nearest even and saturated, and its amax the largest |sum| of its rows, after every call (fresh data, scales and
 * a reset amax each), in every interleaving tried; wide and FP8 GEMMs alike ({@link RsFp8PlansHostTest.Check}).
 * Stored values are small integers, so every sum is exact in any order.
 */
class RsFp8OutputPlansHostTest {
    private static final int SEEDS = 8;

    static Stream<Arguments> domains() {
        List<Arguments> all = new ArrayList<>();
        for (int tp : new int[]{2, 3, 4}) {
            for (String variant : new String[]{"ring:sub=1", "ring:sub=2", "ring:sub=2,lowp=1", "pipeline:splits=2",
                    "oneshot", "scatter:sub=2", "scatter:sub=2,lowp=1", "scatter:sub=1,lowp=1,fuse=1",
                    "scatter:sub=2,tail=1,lowp=1,fuse=1"}) {
                for (boolean fp8Gemms : new boolean[]{false, true}) {
                    all.add(Arguments.of(variant, tp, fp8Gemms, tp == 3 ? DType.FP8_E5M2 : DType.FP8_E4M3));
                }
            }
        }
        return all.stream();
    }

    private static RsShape shape(int tp, boolean fp8Gemms, DType out) {
        RsShape s = new RsShape(tp, 2L * tp, 16, 32, DType.BF16, tp != 3);
        return (fp8Gemms ? s.withFp8(Fp8Operands.E4M3) : s).withFp8Output(out);
    }

    @ParameterizedTest(name = "{0} tp={1} fp8 GEMMs={2} -> {3}")
    @MethodSource("domains")
    void theQuantizedSumIsExactAndTheAmaxIsTheSumsInEveryInterleaving(String variant, int tp, boolean fp8Gemms,
                                                                       DType out) {
        RsShape shape = shape(tp, fp8Gemms, out);
        List<Plan> plans = MethodRegistry.load().schedule(shape, variant).plans();
        for (Plan p : plans) {
            assertQuantizesOnceAtTheEnd(p, out, DType.BF16);
        }
        long base = System.nanoTime();
        for (int seed = 0; seed < SEEDS; seed++) {
            String failure = new RsFp8PlansHostTest.Check(shape, base + seed).run(plans,
                    HostPlanExecutor.Options.seeded(base + seed));
            assertEquals(null, failure, variant + " seed " + (base + seed));
        }
    }

    /** OUTPUT is the FP8 type and only the last step, a Quantize of the whole staged output on stream 0, writes it. */
    static void assertQuantizesOnceAtTheEnd(Plan p, DType out, DType staged) {
        assertEquals(out, p.matrix(BufferRole.OUTPUT).dtype(), p::describe);
        assertEquals(staged, p.matrix(BufferRole.STAGED_OUTPUT).dtype(), p::describe);
        PlanStep last = p.steps().getLast();
        PlanStep.Quantize q = assertInstanceOf(PlanStep.Quantize.class, last, p::describe);
        assertEquals(0, q.stream());
        assertEquals(new Region(BufferRole.STAGED_OUTPUT, p.rank(), 0, p.matrix(BufferRole.OUTPUT).rows(), 0,
                p.matrix(BufferRole.OUTPUT).cols()), q.src());
        assertEquals(BufferRole.OUTPUT, q.dst().buffer());
        assertEquals(1, p.steps().stream().filter(s -> s instanceof PlanStep.Quantize).count(), p::describe);
        for (PlanStep s : p.steps().subList(0, p.steps().size() - 1)) {
            assertTrue(regions(s).stream().noneMatch(r -> r.buffer() == BufferRole.OUTPUT), () -> s
                    + " touches OUTPUT before the quantization");
        }
    }

    private static List<Region> regions(PlanStep s) {
        return switch (s) {
            case PlanStep.Gemm g -> List.of(g.a(), g.b(), g.c());
            case PlanStep.Copy c -> List.of(c.src(), c.dst());
            case PlanStep.Reduce r -> Stream.concat(r.sources().stream(), Stream.of(r.dst())).toList();
            case PlanStep.AddBias b -> List.of(b.dst());
            case PlanStep.Quantize q -> List.of(q.src(), q.dst());
            case PlanStep.AtomicGemm g -> List.of(g.a(), g.b(), g.c());
            case PlanStep.Signal x -> List.of();
            case PlanStep.WaitSignal x -> List.of();
            case PlanStep.RecordEvent x -> List.of();
            case PlanStep.WaitEvent x -> List.of();
        };
    }

    @Test
    void everyMethodAndTheBulkPullQuantizeOnceAtTheEnd() {
        RsShape s = new RsShape(2, 64, 32, 64, DType.FP32, true).withFp8Output(DType.FP8_E4M3);
        MethodRegistry registry = MethodRegistry.load();
        for (String variant : new String[]{"ring", "pipeline", "oneshot", "bulk", "scatter", "scatter:lowp=1"}) {
            for (Plan p : registry.schedule(s, variant).plans()) {
                assertQuantizesOnceAtTheEnd(p, DType.FP8_E4M3, DType.FP32);
            }
        }
        assertTrue(s.key().endsWith(" ->fp8e4m3"), s.key());
        assertEquals(DType.FP8_E4M3, s.outputDtype());
    }

    @Test
    void aWideOutputTypeOrASecondQuantizationIsRefused() {
        RsShape s = new RsShape(2, 8, 32, 32, DType.BF16, false);
        var e = assertThrows(IllegalArgumentException.class, () -> s.withFp8Output(DType.BF16));
        assertTrue(e.getMessage().contains("fp8e4m3 or fp8e5m2"), e.getMessage());
        Plan p = MethodRegistry.load().schedule(s.withFp8Output(DType.FP8_E4M3), "ring").plan(0);
        e = assertThrows(IllegalArgumentException.class, () -> p.withFp8Output(DType.FP8_E5M2));
        assertTrue(e.getMessage().contains("already"), e.getMessage());
    }
}
