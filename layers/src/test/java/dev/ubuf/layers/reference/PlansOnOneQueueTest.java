package dev.ubuf.layers.reference;

import dev.ubuf.ag.AgShape;
import dev.ubuf.op.MethodRegistry;
import dev.ubuf.op.OverlapMethod;
import dev.ubuf.op.OverlapShape;
import dev.ubuf.op.Schedule;
import dev.ubuf.plan.HostPlanExecutor;
import dev.ubuf.plan.Plan;
import dev.ubuf.plan.PlanStep;
import dev.ubuf.rs.RsShape;
import dev.ubuf.tensor.DType;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every AG and RS plan completes when all of a rank's streams run as ONE in-order queue, in the plan's issue order: the
 * worst a GPU does when streams share a hardware queue (every stream with CUDA_DEVICE_MAX_CONNECTIONS=1, which
 * Megatron-LM sets; some whenever a context has more streams than connections), where a stream wait or event wait
 * holds the queue. The model is stricter than the GPU (it also holds the queue behind a running GEMM), so passing it
 * means no plan issues a wait ahead of work its peer's signal needs. Not here: the atomic methods (not on this class
 * path), whose GEMM kernel spins on flags that copies issued after its launch raise; the model would hold those
 * copies behind the kernel, a GPU does not.
 */
class PlansOnOneQueueTest {
    /** The step on stream 0. */
    static PlanStep onStream0(PlanStep s) {
        return switch (s) {
            case PlanStep.Gemm g -> new PlanStep.Gemm(0, g.a(), g.b(), g.c(), g.accumulate(), g.fp8());
            case PlanStep.Copy c -> new PlanStep.Copy(0, c.src(), c.dst());
            case PlanStep.Signal x -> new PlanStep.Signal(0, x.peer(), x.flag());
            case PlanStep.WaitSignal w -> new PlanStep.WaitSignal(0, w.flag(), w.count());
            case PlanStep.Reduce r -> new PlanStep.Reduce(0, r.sources(), r.dst(), r.accumulate());
            case PlanStep.RecordEvent e -> new PlanStep.RecordEvent(0, e.event());
            case PlanStep.WaitEvent e -> new PlanStep.WaitEvent(0, e.event());
            case PlanStep.AddBias b -> new PlanStep.AddBias(0, b.dst());
            case PlanStep.Quantize q -> new PlanStep.Quantize(0, q.src(), q.dst());
            case PlanStep.AtomicGemm g -> new PlanStep.AtomicGemm(0, g.a(), g.b(), g.c(), g.accumulate(), g.chunks(),
                    g.firstChunk(), g.arrivalFlag(), g.doneFlag(), g.kernel());
        };
    }

    /** The plan with every step on one stream, in its issue order. */
    static Plan oneQueue(Plan p) {
        List<PlanStep> steps = new ArrayList<>();
        for (PlanStep s : p.steps()) {
            steps.add(onStream0(s));
        }
        return new Plan(p.op(), p.method(), p.rank(), p.tp(), List.of(p.streams().getFirst()), p.matrices(),
                p.flagsReceivedPerCall(), p.eventCount(), steps);
    }

    @Test
    void everyMethodsPlansCompleteWithEachRanksStreamsOnOneQueue() {
        MethodRegistry registry = MethodRegistry.load();
        List<String> stuck = new ArrayList<>();
        int schedules = 0;
        int multiStream = 0;
        for (int tp : new int[]{2, 3, 4, 8}) {
            List<OverlapShape> shapes = List.of(new AgShape(tp, 32L * tp, 24, 40, DType.FP32),
                    new RsShape(tp, 32L * tp, 24, 40, DType.FP32, true),
                    new RsShape(tp, 32L * tp, 24, 40, DType.FP32, false));
            for (OverlapShape shape : shapes) {
                List<Schedule> all = new ArrayList<>();
                for (OverlapMethod m : registry.of(shape.collective())) {
                    for (Map<String, String> options : m.tuningSpace(shape)) {
                        all.add(m.schedule(shape, options));
                    }
                }
                if (shape.collective() == dev.ubuf.op.Collective.REDUCE_SCATTER) {
                    all.add(registry.schedule(shape, "bulk:stage=1")); // the layers' bulk RS, never planned
                    all.add(registry.schedule(shape, "bulk:serial=1,stage=1")); // the benchmark's comm alone
                }
                for (Schedule schedule : all) {
                    List<Plan> plans = new ArrayList<>();
                    for (Plan p : schedule.plans()) {
                        plans.add(oneQueue(p));
                    }
                    schedules++;
                    if (schedule.plan(0).streams().size() > 1) {
                        multiStream++;
                    }
                    for (long seed = 1; seed <= 2; seed++) {
                        try {
                            new HostPlanExecutor(plans, HostPlanExecutor.Options.seeded(seed)
                                    .withoutRaceDetection()).runCalls(3);
                        } catch (IllegalStateException e) {
                            stuck.add("tp " + tp + " " + shape.key() + " " + schedule.label() + ": "
                                    + e.getMessage().lines().findFirst().orElse(""));
                            break;
                        }
                    }
                }
            }
        }
        assertTrue(multiStream > 40, "the check must cover plans of several streams, got " + multiStream + " of "
                + schedules);
        assertEquals(List.of(), stuck, "plans that need more than one hardware queue");
    }

    @Test
    void aWaitIssuedAheadOfTheSignalItsPeerNeedsIsCaughtOnOneQueue() {
        // Rank r waits for its peer's flag before signalling the peer: on two queues (the signal on its own stream)
        // both ranks get through; on one queue, in this issue order, both wait for ever.
        List<Plan> plans = new ArrayList<>();
        for (int r = 0; r < 2; r++) {
            List<PlanStep> steps = List.of(new PlanStep.WaitSignal(0, 0, 1), new PlanStep.Signal(1, 1 - r, 0));
            plans.add(new Plan("ag", "probe", r, 2, List.of(dev.ubuf.plan.StreamRole.COMM,
                    dev.ubuf.plan.StreamRole.COMM), Map.of(dev.ubuf.plan.BufferRole.UBUF, new dev.ubuf.plan.MatrixSpec(
                    dev.ubuf.plan.BufferRole.UBUF, DType.FP32, 1, 1)), List.of(1), 0, steps));
        }
        new HostPlanExecutor(plans, HostPlanExecutor.Options.seeded(1).withoutRaceDetection()).runCalls(2);
        List<Plan> serial = plans.stream().map(PlansOnOneQueueTest::oneQueue).toList();
        try {
            new HostPlanExecutor(serial, HostPlanExecutor.Options.seeded(1).withoutRaceDetection()).runCalls(1);
            throw new AssertionError("one queue should have deadlocked");
        } catch (IllegalStateException expected) {
            assertTrue(expected.getMessage().toLowerCase(java.util.Locale.ROOT).contains("deadlock"),
                    expected.getMessage());
        }
    }
}
