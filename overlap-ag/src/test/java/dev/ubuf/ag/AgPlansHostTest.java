package dev.ubuf.ag;

import dev.ubuf.plan.HostPlanExecutor;
import dev.ubuf.plan.Plan;
import dev.ubuf.plan.PlanBuilder;
import dev.ubuf.plan.PlanStep;
import dev.ubuf.tensor.DType;
import org.junit.jupiter.api.Named;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Every AG method, on the host executor, against a float64 reference: exact, in every interleaving tried. */
class AgPlansHostTest {
    private static final int SEEDS = 50;
    private static final int CALLS = 3;
    /** (chunk rows, k, n): chunk rows 1, 3 and 5, none a power of two but 1. */
    private static final long[][] SHAPES = {{1, 2, 3}, {3, 4, 2}, {5, 3, 5}};

    static Stream<Arguments> domains() {
        List<Arguments> all = new ArrayList<>();
        for (AgOverlapMethod method : AgPlansTest.registered()) {
            for (int tp : new int[] {1, 2, 3, 4, 8}) {
                if (method instanceof AggregateAllGatherGemm && tp % 2 != 0) {
                    continue;
                }
                for (long[] s : SHAPES) {
                    if (method instanceof BidirectionalRingAllGatherGemm && s[0] < 2) {
                        continue; // a one-row shard has no halves
                    }
                    all.add(Arguments.of(Named.of(method.name(), method),
                            new AgShape(tp, s[0] * tp, s[1], s[2], DType.BF16)));
                }
            }
        }
        return all.stream();
    }

    /** Options vary with the seed so that every method sees 1..3 compute streams, 1..3 comm streams, both inputs. */
    private static AgOptions optionsFor(int seed) {
        return new AgOptions(1 + seed % 3, 1 + (seed / 3) % 3, (seed / 9) % 2 == 1);
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("domains")
    void exactInEveryInterleaving(AgOverlapMethod method, AgShape shape) {
        long base = System.nanoTime();
        for (int seed = 0; seed < SEEDS; seed++) {
            AgOptions options = optionsFor(seed);
            List<Plan> plans = AgPlans.domain(method, shape, options);
            long s = base + seed;
            AgReferenceCheck check = new AgReferenceCheck(shape, method.hasGemm(), options.inputInUbuf(), CALLS, s);
            String failure = check.run(plans, HostPlanExecutor.Options.seeded(s));
            assertEquals(null, failure, "seed " + s + ", " + options);
        }
    }

    // ---- the check can fail: break a correct RING plan and watch it being caught ----

    private static final AgShape RING_SHAPE = new AgShape(3, 9, 4, 2, DType.BF16);

    /** RING plans where {@code rank} lost the first step matching {@code drop}. */
    private static List<Plan> ringWithout(int rank, Predicate<PlanStep> drop) {
        List<Plan> plans = new ArrayList<>(AgPlans.domain(new RingAllGatherGemm(), RING_SHAPE, AgOptions.defaults()));
        Plan p = plans.get(rank);
        List<PlanStep> steps = new ArrayList<>(p.steps());
        int at = -1;
        for (int i = 0; i < steps.size() && at < 0; i++) {
            if (drop.test(steps.get(i))) {
                at = i;
            }
        }
        assertTrue(at >= 0, "no such step in\n" + p.describe());
        steps.remove(at);
        plans.set(rank, new Plan(p.op(), p.method(), p.rank(), p.tp(), p.streams(), p.matrices(),
                p.flagsReceivedPerCall(), p.eventCount(), steps));
        return plans;
    }

    private static final Predicate<PlanStep> GEMM_DATA_WAIT = s -> s instanceof PlanStep.WaitSignal w
            && w.flag() == RingAllGatherGemm.DATA && w.count() == 1 && w.stream() != 0;
    private static final Predicate<PlanStep> FORWARD_DATA_WAIT = s -> s instanceof PlanStep.WaitSignal w
            && w.flag() == RingAllGatherGemm.DATA && w.count() == 1 && w.stream() == 0;
    private static final Predicate<PlanStep> CREDIT_WAIT = s -> s instanceof PlanStep.WaitSignal w
            && w.flag() == RingAllGatherGemm.CREDIT;

    static Stream<Arguments> brokenPlans() {
        return Stream.of(
                Arguments.of("wait before a GEMM", ringWithout(1, GEMM_DATA_WAIT)),
                Arguments.of("wait before a forward", ringWithout(1, FORWARD_DATA_WAIT)),
                Arguments.of("credit wait", ringWithout(1, CREDIT_WAIT)));
    }

    @ParameterizedTest(name = "without the {0}")
    @MethodSource("brokenPlans")
    void aRemovedDependencyGivesWrongValuesInSomeInterleaving(String what, List<Plan> broken) {
        long base = System.nanoTime();
        int failing = 0;
        int runs = 4 * SEEDS; // the credit race needs a rank a whole call ahead: about 1 run in 7
        for (int seed = 0; seed < runs; seed++) {
            AgReferenceCheck check = new AgReferenceCheck(RING_SHAPE, true, false, CALLS, base + seed);
            if (check.run(broken, HostPlanExecutor.Options.seeded(base + seed).withoutRaceDetection()) != null) {
                failing++;
            }
        }
        assertTrue(failing > 0, "none of " + runs + " interleavings exposed the missing " + what);
    }

    @ParameterizedTest(name = "without the {0}")
    @MethodSource("brokenPlans")
    void aRemovedDependencyIsReportedAsARaceInEveryInterleaving(String what, List<Plan> broken) {
        for (int seed = 0; seed < SEEDS; seed++) {
            AgReferenceCheck check = new AgReferenceCheck(RING_SHAPE, true, false, CALLS, seed);
            int s = seed;
            IllegalStateException e = assertThrows(IllegalStateException.class,
                    () -> check.run(broken, HostPlanExecutor.Options.seeded(s)), "seed " + seed);
            assertTrue(e.getMessage().startsWith("data race on UBUF"), e.getMessage());
        }
    }

    @Test
    void aCreditAtTheEndOfTheCallWouldLetAPeerOverwriteTheHandedOutBuffer() {
        // The other credit design: rank 1 signals its credit at the end of its call (after every stream), and
        // rank 0 waits for count 0 (the credits of all earlier calls). Rank 0 may then write call e+1's chunks
        // while rank 1's caller still reads the buffer call e handed out: a race in every interleaving.
        List<Plan> plans = new ArrayList<>(AgPlans.domain(new RingAllGatherGemm(), RING_SHAPE, AgOptions.defaults()));
        Plan p1 = plans.get(1);
        List<PlanStep> steps = new ArrayList<>(p1.steps());
        PlanStep credit = steps.removeFirst();
        assertTrue(credit instanceof PlanStep.Signal sig && sig.flag() == RingAllGatherGemm.CREDIT, credit::toString);
        PlanBuilder b = rebuild(p1, steps);
        for (int s = 0; s < p1.streams().size(); s++) {
            b.order(s, credit.stream());
        }
        b.add(credit);
        plans.set(1, b.build());
        Plan p0 = plans.get(0);
        plans.set(0, rebuild(p0, p0.steps().stream().map(s -> CREDIT_WAIT.test(s)
                ? new PlanStep.WaitSignal(s.stream(), RingAllGatherGemm.CREDIT, 0) : s).toList()).build());
        for (int seed = 0; seed < SEEDS; seed++) {
            AgReferenceCheck check = new AgReferenceCheck(RING_SHAPE, true, false, CALLS, seed);
            int s = seed;
            IllegalStateException e = assertThrows(IllegalStateException.class,
                    () -> check.run(plans, HostPlanExecutor.Options.seeded(s)), "seed " + seed);
            assertTrue(e.getMessage().contains("data race on UBUF of rank 1"), e.getMessage());
            assertTrue(e.getMessage().contains("end of call (afterCall)"), e.getMessage());
        }
    }

    private static PlanBuilder rebuild(Plan p, List<PlanStep> steps) {
        PlanBuilder b = new PlanBuilder(p.op(), p.method(), p.rank(), p.tp());
        p.streams().forEach(b::stream);
        p.matrices().values().forEach(m -> b.matrix(m.role(), m.dtype(), m.rows(), m.cols()));
        p.flagsReceivedPerCall().forEach(b::flag);
        steps.forEach(b::add);
        return b;
    }
}
