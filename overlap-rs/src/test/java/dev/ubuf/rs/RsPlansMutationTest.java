package dev.ubuf.rs;

import dev.ubuf.plan.HostPlanExecutor;
import dev.ubuf.plan.Plan;
import dev.ubuf.plan.PlanStep;
import dev.ubuf.tensor.DType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The checks of {@link RsPlansHostTest} can fail: plans with one dependency removed (a data wait, an event wait,
 * a credit wait) are caught, by the race detector for every single wait of a plan, and by the exact output
 * comparison alone (race detection off) for representative ones.
 */
class RsPlansMutationTest {
    private static final long SEED_BASE = Long.getLong("rs.seed", System.nanoTime());
    private static final RsOptions D = RsOptions.DEFAULTS;

    static List<RsSchedule> schedules() {
        return List.of(
                new RingExchangeGemmReduceScatter().schedule(shape(4, 3, true), D),         // in-call slot reuse
                new RingExchangeGemmReduceScatter().schedule(shape(3, 2, false),
                        D.withRingSubChunks(1).withComputeStreams(1)),
                new PipelinedGemmReduceScatter().schedule(shape(3, 3, true), D.withNumSplits(3).withComputeStreams(2)),
                new BulkReduceScatter().schedule(shape(3, 3, true), D),
                new BulkReduceScatter().schedule(shape(3, 3, true), D.withBulkStaged(true)),
                new OneShotGemmReduceScatter().schedule(shape(3, 3, true), D),
                new ScatterGemmReduceScatter().schedule(shape(3, 3, true), D.withRingSubChunks(2)),
                new ScatterGemmReduceScatter().schedule(shape(4, 2, false),
                        D.withRingSubChunks(2).withRingPartialDtype(DType.BF16)));
    }

    private static RsShape shape(int tp, long rowsPerRank, boolean bias) {
        return new RsShape(tp, tp * rowsPerRank, 3, 6, DType.BF16, bias);
    }

    /** The domain's plans with step {@code index} of rank {@code rank}'s plan left out. */
    static List<Plan> without(List<Plan> plans, int rank, int index) {
        List<Plan> out = new ArrayList<>(plans);
        Plan p = plans.get(rank);
        List<PlanStep> steps = new ArrayList<>(p.steps());
        steps.remove(index);
        out.set(rank, new Plan(p.op(), p.method(), p.rank(), p.tp(), p.streams(), p.matrices(),
                p.flagsReceivedPerCall(), p.eventCount(), steps));
        return out;
    }

    /** How a run went wrong, or null when every output was exact and nothing was reported. */
    private static String failure(RsShape shape, List<Plan> plans, long seed, boolean detectRaces) {
        HostPlanExecutor.Options options = HostPlanExecutor.Options.seeded(seed);
        try {
            return new RsReferenceCheck(shape, seed).run(plans,
                    detectRaces ? options : options.withoutRaceDetection());
        } catch (IllegalStateException e) {
            return e.getMessage();
        }
    }

    @ParameterizedTest
    @MethodSource("schedules")
    void theRaceDetectorCatchesTheRemovalOfAnyWait(RsSchedule schedule) {
        List<Plan> plans = schedule.plans();
        int rank = 1;
        List<String> missed = new ArrayList<>();
        int waits = 0;
        for (int i = 0; i < plans.get(rank).steps().size(); i++) {
            PlanStep step = plans.get(rank).steps().get(i);
            if (!(step instanceof PlanStep.WaitSignal || step instanceof PlanStep.WaitEvent)) {
                continue;
            }
            waits++;
            List<Plan> broken = without(plans, rank, i);
            boolean caught = false;
            for (int s = 0; s < 5 && !caught; s++) {
                String f = failure(schedule.shape(), broken, SEED_BASE + s, true);
                caught = f != null;
            }
            if (!caught) {
                missed.add("#" + i + " " + step);
            }
        }
        assertTrue(waits > 0);
        assertEquals(List.of(), missed, schedule.method() + " " + schedule.shape() + ", seeds from " + SEED_BASE
                + ": removing these waits of rank " + rank + " went unnoticed");
    }

    /** Removes the first step of rank 1 matching {@code which}; the value check alone must see it in some seed. */
    private static void valueCheckCatches(RsSchedule schedule, Predicate<PlanStep> which) {
        valueCheckCatches(schedule, which, 50);
    }

    private static void valueCheckCatches(RsSchedule schedule, Predicate<PlanStep> which, int seeds) {
        List<Plan> plans = schedule.plans();
        int rank = 1;
        int index = -1;
        for (int i = 0; i < plans.get(rank).steps().size() && index < 0; i++) {
            if (which.test(plans.get(rank).steps().get(i))) {
                index = i;
            }
        }
        assertTrue(index >= 0, "no such step in " + plans.get(rank).describe());
        for (int s = 0; s < 20; s++) {
            assertNull(failure(schedule.shape(), plans, SEED_BASE + s, false), "the intact plan must pass");
        }
        List<Plan> broken = without(plans, rank, index);
        int caught = 0;
        for (int s = 0; s < seeds; s++) {
            String f = failure(schedule.shape(), broken, SEED_BASE + s, false);
            if (f != null) {
                caught++;
            }
        }
        assertTrue(caught > 0, "removing " + plans.get(rank).steps().get(index) + " went unnoticed in " + seeds
                + " seeds from " + SEED_BASE);
    }

    private static final int DATA = RingExchangeGemmReduceScatter.DATA_FLAG;
    private static final int CREDIT = RingExchangeGemmReduceScatter.CREDIT_FLAG;

    @Test
    void ringWithoutTheWaitForTheNeighboursSumFails() {
        valueCheckCatches(schedules().get(0), s -> s instanceof PlanStep.WaitSignal w && w.flag() == DATA);
    }

    @Test
    void ringWithoutTheEventBeforeTheSendFails() {
        valueCheckCatches(schedules().get(0), s -> s instanceof PlanStep.WaitEvent);
    }

    /**
     * The overwrite this credit prevents (the neighbour's first credit of the call, sent as its call starts) needs a
     * rank to finish its whole call and send its next call's first sum while its neighbour has not yet folded in the
     * last one: rare in uniform random interleavings (about 4% of seeds at tp=2 with whole chunks, far fewer at larger
     * tp, where the race detector is what catches it), so this runs the smallest ring over many cheap seeds.
     */
    @Test
    void ringWithoutTheCallsFirstCreditFails() {
        RsSchedule ring = new RingExchangeGemmReduceScatter().schedule(new RsShape(2, 4, 2, 3, DType.BF16, false),
                D.withRingSubChunks(1));
        valueCheckCatches(ring, s -> s instanceof PlanStep.WaitSignal w && w.flag() == CREDIT && w.count() == 1, 500);
    }

    @Test
    void ringWithoutTheInCallCreditFails() {
        // caught in about 10% of seeds: the neighbour must refill a slot before this rank has sent its sum onward
        valueCheckCatches(schedules().get(0), s -> s instanceof PlanStep.WaitSignal w && w.flag() == CREDIT
                && w.count() > 1, 300);
    }

    /*
     * The pull methods at tp=2, where a missing wait shows in 5-45% of seeds (at tp=3 only 2-6%: with more ranks
     * a lagging reader is rarer in uniform interleavings); 200 seeds make a miss vanishingly unlikely.
     */
    private static final RsShape PAIR = new RsShape(2, 4, 2, 6, DType.BF16, true);

    @Test
    void pipelineWithoutAPeersReadySignalFails() {
        valueCheckCatches(new PipelinedGemmReduceScatter().schedule(PAIR, D.withNumSplits(3).withComputeStreams(2)),
                s -> s instanceof PlanStep.WaitSignal w && w.flag() < 2 && w.count() > 0, 200);
    }

    @Test
    void pipelineWithoutTheCreditsFails() {
        valueCheckCatches(new PipelinedGemmReduceScatter().schedule(PAIR, D.withNumSplits(3).withComputeStreams(2)),
                s -> s instanceof PlanStep.WaitSignal w && w.flag() >= 2, 200);
    }

    @Test
    void bulkWithoutTheEndOfCallCreditFails() {
        valueCheckCatches(new BulkReduceScatter().schedule(PAIR, D),
                s -> s instanceof PlanStep.WaitSignal w && w.flag() >= 2, 200);
    }

    @Test
    void stagedBulkWithoutTheEndOfCallCreditFails() {
        valueCheckCatches(new BulkReduceScatter().schedule(PAIR, D.withBulkStaged(true)),
                s -> s instanceof PlanStep.WaitSignal w && w.flag() >= 2, 200);
    }

    @Test
    void stagedBulkWithoutAPeersReadySignalFails() {
        valueCheckCatches(new BulkReduceScatter().schedule(PAIR, D.withBulkStaged(true)),
                s -> s instanceof PlanStep.WaitSignal w && w.flag() < 2, 200);
    }

    @Test
    void oneShotWithoutTheCreditsFails() {
        valueCheckCatches(new OneShotGemmReduceScatter().schedule(PAIR, D),
                s -> s instanceof PlanStep.WaitSignal w && w.flag() >= 2, 200);
    }

    @Test
    void scatterWithoutAPeersReadySignalFails() {
        valueCheckCatches(new ScatterGemmReduceScatter().schedule(PAIR, D.withRingSubChunks(2)),
                s -> s instanceof PlanStep.WaitSignal w && w.flag() < 2, 200);
    }

    @Test
    void scatterWithoutTheCreditsFails() {
        valueCheckCatches(new ScatterGemmReduceScatter().schedule(PAIR, D.withRingSubChunks(2)
                        .withRingPartialDtype(DType.BF16)),
                s -> s instanceof PlanStep.WaitSignal w && w.flag() >= 2, 200);
    }
}
