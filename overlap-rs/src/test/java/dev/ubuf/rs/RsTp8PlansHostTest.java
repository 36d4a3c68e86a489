package dev.ubuf.rs;

import dev.ubuf.op.Collective;
import dev.ubuf.op.Fp8Operands;
import dev.ubuf.op.MethodRegistry;
import dev.ubuf.op.OverlapMethod;
import dev.ubuf.op.Schedule;
import dev.ubuf.plan.HostPlanExecutor;
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
 * TP 8, which no lent machine has: every RS method of this module, with every option set its tuning space gives the
 * planner (the defaults for bulk, which the planner never measures), on bf16 shapes with and without bias, FP8
 * operands and an FP8 output, runs on the host executor in random interleavings against the float64 reference; and
 * the options whose limits depend on tp (sub-chunks per rank's rows, splits, the pull-reduce's source count) are
 * refused at tp 8 with a message naming them, on the host, before any GPU work. Seeds start at System.nanoTime() and
 * are printed on failure.
 */
class RsTp8PlansHostTest {
    private static final int TP = 8;
    private static final int SEEDS = 6;

    /** Rows per rank 1 and 4 (so ring's tuning space reaches sub=4); n = 32 takes 2, 4 and 8 splits. */
    private static List<RsShape> shapes() {
        List<RsShape> s = new ArrayList<>();
        for (int rows : new int[] {1, 4}) {
            s.add(new RsShape(TP, (long) rows * TP, 16, 32, DType.BF16, rows == 4));
            s.add(new RsShape(TP, (long) rows * TP, 16, 32, DType.BF16, true).withFp8(
                    rows == 1 ? Fp8Operands.E4M3 : new Fp8Operands(DType.FP8_E5M2, DType.FP8_E4M3)));
            s.add(new RsShape(TP, (long) rows * TP, 16, 32, DType.BF16, rows == 1).withFp8Output(
                    rows == 1 ? DType.FP8_E4M3 : DType.FP8_E5M2));
        }
        return s;
    }

    private static List<RsOverlapMethod> methods() {
        return MethodRegistry.load().of(Collective.REDUCE_SCATTER).stream()
                .filter(m -> m instanceof RsOverlapMethod).map(m -> (RsOverlapMethod) m).toList();
    }

    /** What the planner measures, or the defaults where the shape allows them for a method it never measures. */
    private static List<Map<String, String>> optionSets(OverlapMethod m, RsShape shape) {
        if (m.hasGemm()) {
            return m.tuningSpace(shape);
        }
        try {
            m.schedule(shape, Map.of());
            return List.of(Map.of());
        } catch (IllegalArgumentException e) {
            return List.of(); // bulk takes no FP8 operands
        }
    }

    static Stream<Arguments> cases() {
        List<Arguments> all = new ArrayList<>();
        for (RsOverlapMethod m : methods()) {
            for (RsShape shape : shapes()) {
                for (Map<String, String> opts : optionSets(m, shape)) {
                    all.add(Arguments.of(m.schedule(shape, opts), shape));
                }
            }
        }
        return all.stream();
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("cases")
    void exactInEveryInterleavingAtTp8(Schedule schedule, RsShape shape) {
        var plans = schedule.plans();
        boolean wide = shape.fp8().isEmpty() && shape.fp8Output().isEmpty();
        long base = System.nanoTime();
        for (int i = 0; i < SEEDS; i++) {
            long seed = base + i;
            String failure = wide
                    ? new RsReferenceCheck(shape, seed).run(plans, HostPlanExecutor.Options.seeded(seed))
                    : new RsFp8PlansHostTest.Check(shape, seed).run(plans, HostPlanExecutor.Options.seeded(seed));
            assertEquals(null, failure, schedule.label() + " " + shape.key() + " seed " + seed);
        }
    }

    @Test
    void everyMethodAndEveryTunedOptionSetIsCoveredAtTp8() {
        Set<String> covered = new TreeSet<>();
        cases().forEach(a -> covered.add(((Schedule) a.get()[0]).label()));
        assertEquals(5, methods().size(), "ring, pipeline, bulk, oneshot, scatter");
        for (RsOverlapMethod m : methods()) {
            assertTrue(covered.contains(m.name()) || covered.stream().anyMatch(l -> l.startsWith(m.name() + ":")),
                    m.name() + " not covered at tp 8: " + covered);
        }
        assertTrue(covered.containsAll(List.of("ring:sub=1", "ring:sub=2", "ring:sub=4", "pipeline:splits=2",
                "pipeline:splits=4", "pipeline:splits=8", "oneshot", "bulk", "scatter:sub=1,lowp=1",
                "scatter:sub=4,lowp=1", "scatter:sub=2")), covered.toString());
    }

    @Test
    void tpDependentLimitsAreRefusedAtTp8BeforeAnyGpuWork() {
        MethodRegistry r = MethodRegistry.load();
        RsShape shape = new RsShape(TP, 4L * TP, 16, 32, DType.BF16, false);
        // sub-chunks split one rank's m/tp = 4 rows
        r.schedule(shape, "ring:sub=4");
        var e = assertThrows(IllegalArgumentException.class, () -> r.schedule(shape, "ring:sub=5"));
        assertTrue(e.getMessage().contains("ringSubChunks=5 exceeds m/tp=4"), e.getMessage());
        // splits divide n; FP8 GEMMs write 16-byte rows, so n/splits bf16 columns must be a multiple of 8
        e = assertThrows(IllegalArgumentException.class, () -> r.schedule(shape, "pipeline:splits=3"));
        assertTrue(e.getMessage().contains("n=32 is not divisible by numSplits=3"), e.getMessage());
        RsShape fp8 = new RsShape(TP, 4L * TP, 16, 32, DType.BF16, false).withFp8(Fp8Operands.E4M3);
        e = assertThrows(IllegalArgumentException.class, () -> r.schedule(fp8, "pipeline:splits=8"));
        assertTrue(e.getMessage().contains("16-byte rows"), e.getMessage());
        assertTrue(r.get(Collective.REDUCE_SCATTER, "pipeline").tuningSpace(fp8).stream()
                .noneMatch(o -> "8".equals(o.get("splits"))), "the planner never measures it");
        // the pull-reduce reads every rank: 8 sources is the most, so tp 8 runs and tp 9 is refused
        for (String method : new String[] {"pipeline", "oneshot", "bulk", "scatter"}) {
            r.schedule(shape, method);
            RsShape nine = new RsShape(9, 4L * 9, 16, 32, DType.BF16, false);
            e = assertThrows(IllegalArgumentException.class, () -> r.schedule(nine, method));
            assertTrue(e.getMessage().contains("tp=9 exceeds 8 sources (use ring)"), e.getMessage());
            if (!method.equals("bulk")) {
                assertTrue(r.get(Collective.REDUCE_SCATTER, method).tuningSpace(nine).isEmpty(), method);
            }
        }
        r.schedule(new RsShape(9, 4L * 9, 16, 32, DType.BF16, false), "ring");
        e = assertThrows(IllegalArgumentException.class, () -> r.schedule(shape, "scatter:sub=5"));
        assertTrue(e.getMessage().contains("sub=5 exceeds m/tp=4"), e.getMessage());
        // rows must split over the 8 ranks evenly: chunks are never uneven
        e = assertThrows(IllegalArgumentException.class, () -> new RsShape(TP, 4L * TP + 2, 16, 32, DType.BF16, false));
        assertTrue(e.getMessage().contains("is not divisible by tp=8"), e.getMessage());
    }
}
