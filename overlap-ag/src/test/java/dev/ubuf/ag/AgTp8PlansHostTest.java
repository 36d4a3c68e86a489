package dev.ubuf.ag;

import dev.ubuf.op.Collective;
import dev.ubuf.op.Fp8Operands;
import dev.ubuf.op.MethodRegistry;
import dev.ubuf.op.OverlapMethod;
import dev.ubuf.op.Schedule;
import dev.ubuf.plan.HostPlanExecutor;
import dev.ubuf.plan.StreamRole;
import dev.ubuf.tensor.DType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * TP 8, which no lent machine has: every AG method of this module, with every option set its tuning space gives the
 * planner (the defaults for bulk, which the planner never measures), on bf16 and FP8 shapes, runs on the host executor
 * in random interleavings against the float64 reference; and the options whose limits depend on tp are refused at tp 8
 * with a message naming them, on the host, before any GPU work. Seeds start at System.nanoTime() and are printed on
 * failure.
 */
class AgTp8PlansHostTest {
    private static final int TP = 8;
    private static final int SEEDS = 8;
    private static final int CALLS = 2;

    /** Chunk rows 1 and 3; k and n multiples of 16 so the FP8 GEMMs run the same shapes. */
    private static List<AgShape> shapes() {
        List<AgShape> s = new ArrayList<>();
        for (int rows : new int[] {1, 3}) {
            s.add(new AgShape(TP, (long) rows * TP, 16, 32, DType.BF16));
            s.add(new AgShape(TP, (long) rows * TP, 16, 32, DType.BF16).withFp8(
                    rows == 1 ? Fp8Operands.E4M3 : new Fp8Operands(DType.FP8_E5M2, DType.FP8_E4M3)));
        }
        return s;
    }

    private static List<AgOverlapMethod> methods() {
        return MethodRegistry.load().of(Collective.ALL_GATHER).stream()
                .filter(m -> m instanceof AgOverlapMethod).map(m -> (AgOverlapMethod) m).toList();
    }

    /** What the planner measures, or the defaults for a method it never measures (bulk, and fanout: named only). */
    private static List<Map<String, String>> optionSets(OverlapMethod m, AgShape shape) {
        return m.hasGemm() && !(m instanceof FanOutAllGatherGemm) ? m.tuningSpace(shape) : List.of(Map.of());
    }

    static Stream<Arguments> cases() {
        List<Arguments> all = new ArrayList<>();
        for (AgOverlapMethod m : methods()) {
            for (AgShape shape : shapes()) {
                for (Map<String, String> opts : optionSets(m, shape)) {
                    all.add(Arguments.of(m.schedule(shape, opts), shape));
                }
            }
        }
        return all.stream();
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("cases")
    void exactInEveryInterleavingAtTp8(Schedule schedule, AgShape shape) {
        var plans = schedule.plans();
        boolean gemm = schedule.method().hasGemm();
        long base = System.nanoTime();
        for (int i = 0; i < SEEDS; i++) {
            long seed = base + i;
            String failure = shape.fp8().isPresent()
                    ? new AgFp8PlansHostTest.Check(shape, gemm, false, seed).run(plans, HostPlanExecutor.Options.seeded(seed))
                    : new AgReferenceCheck(shape, gemm, false, CALLS, seed).run(plans, HostPlanExecutor.Options.seeded(seed));
            assertEquals(null, failure, schedule.label() + " " + shape.key() + " seed " + seed);
        }
    }

    @Test
    void everyMethodAndEveryTunedOptionSetIsCoveredAtTp8() {
        Set<String> covered = new TreeSet<>();
        cases().forEach(a -> covered.add(((Schedule) a.get()[0]).label()));
        assertEquals(6, methods().size(), "ring, bidir, aggregate, bulk, oneshot, fanout");
        for (AgOverlapMethod m : methods()) {
            assertTrue(covered.stream().anyMatch(l -> l.equals(m.name()) || l.startsWith(m.name() + ":")),
                    m.name() + " not covered at tp 8: " + covered);
        }
        assertTrue(covered.containsAll(List.of("ring:cs=2", "aggregate:cs=2", "bidir:cs=2", "fanout")),
                covered.toString());
    }

    @Test
    void tpDependentLimitsAreRefusedAtTp8BeforeAnyGpuWork() {
        MethodRegistry r = MethodRegistry.load();
        AgShape shape = new AgShape(TP, 8L * TP, 16, 32, DType.BF16);
        // the one-shot and bulk pushes go to tp-1 = 7 peers over at most 8 comm streams
        var e = assertThrows(IllegalArgumentException.class, () -> r.schedule(shape, "oneshot:ms=9"));
        assertTrue(e.getMessage().contains("ms=9 is outside 1..8"), e.getMessage());
        assertEquals(TP - 1, r.schedule(shape, "oneshot:ms=8").plan(0).streams().stream()
                .filter(x -> x == StreamRole.COMM).count(), "no more comm streams than peers");
        e = assertThrows(IllegalArgumentException.class, () -> r.schedule(shape, "ring:cs=4"));
        assertTrue(e.getMessage().contains("cs=4 is outside 1..3"), e.getMessage());
        // rows must split over the 8 ranks evenly: chunks are never uneven
        e = assertThrows(IllegalArgumentException.class, () -> new AgShape(TP, 8L * TP + 4, 16, 32, DType.BF16));
        assertTrue(e.getMessage().contains("cannot be split evenly over tp = 8"), e.getMessage());
        // aggregate pairs ranks: 8 is even, its neighbours 7 and 9 are refused
        r.schedule(shape, "aggregate");
        for (int tp : new int[] {7, 9}) {
            AgShape odd = new AgShape(tp, 8L * tp, 16, 32, DType.BF16);
            e = assertThrows(IllegalArgumentException.class, () -> r.schedule(odd, "aggregate"));
            assertTrue(e.getMessage().contains("needs an even tp, got tp = " + tp), e.getMessage());
            assertTrue(r.get(Collective.ALL_GATHER, "aggregate").tuningSpace(odd).isEmpty(), "never a candidate");
        }
    }
}
