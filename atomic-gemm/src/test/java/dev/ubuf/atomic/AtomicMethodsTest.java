package dev.ubuf.atomic;

import dev.ubuf.ag.AgShape;
import dev.ubuf.exec.AtomicGemmLauncher;
import dev.ubuf.op.Collective;
import dev.ubuf.op.MethodOptionException;
import dev.ubuf.op.MethodRegistry;
import dev.ubuf.op.Planner;
import dev.ubuf.op.PlannerSettings;
import dev.ubuf.op.Schedule;
import dev.ubuf.plan.Plan;
import dev.ubuf.plan.PlanStep;
import dev.ubuf.rs.RsShape;
import dev.ubuf.tensor.DType;
import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.ServiceLoader;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Registration, validation and the device reason of the "atomic" methods (no GPU). */
class AtomicMethodsTest {
    @Test
    void atomicIsRegisteredInBothFamiliesAndTheLauncherToo() {
        MethodRegistry r = MethodRegistry.load();
        assertTrue(r.get(Collective.ALL_GATHER, "atomic") instanceof AtomicAllGatherGemm);
        assertTrue(r.get(Collective.REDUCE_SCATTER, "atomic") instanceof AtomicGemmReduceScatter);
        assertTrue(ServiceLoader.load(AtomicGemmLauncher.Provider.class).findFirst().orElseThrow()
                instanceof AtomicLauncherProvider);
        Planner p = new Planner(r, PlannerSettings.inMemory());
        AgShape ag = new AgShape(2, 1024, 512, 256, DType.BF16);
        assertTrue(p.candidates(ag).stream().noneMatch(c -> c.label().equals("atomic")),
                "not a planner candidate until it has run on GPUs");
        assertEquals("atomic", r.schedule(ag, "atomic").label(), "but selectable by name");
    }

    @Test
    void schedulesAreOnePlanStepPerRankWithTheKernelsVisitOrder() {
        Schedule ag = MethodRegistry.load().schedule(new AgShape(4, 1024, 512, 256, DType.BF16), "atomic");
        Schedule rs = MethodRegistry.load().schedule(new RsShape(4, 1024, 512, 256, DType.FP16, true), "atomic");
        for (int rank = 0; rank < 4; rank++) {
            PlanStep.AtomicGemm a = only(ag.plan(rank));
            assertEquals(rank, a.firstChunk());
            assertEquals(0, a.arrivalFlag());
            assertEquals(-1, a.doneFlag());
            PlanStep.AtomicGemm g = only(rs.plan(rank));
            assertEquals((rank + 1) % 4, g.firstChunk());
            assertEquals(-1, g.arrivalFlag());
            assertEquals(0, g.doneFlag());
        }
        assertEquals("atomic", ag.label());
    }

    private static PlanStep.AtomicGemm only(Plan p) {
        var steps = p.steps().stream().filter(s -> s instanceof PlanStep.AtomicGemm).toList();
        assertEquals(1, steps.size(), p.describe());
        assertTrue(p.steps().stream().noneMatch(s -> s instanceof PlanStep.Gemm), p.describe());
        return (PlanStep.AtomicGemm) steps.getFirst();
    }

    @Test
    void shapesTheKernelCannotRunAreRejectedAndThePlannerMeasuresNone() {
        MethodRegistry r = MethodRegistry.load();
        var e1 = assertThrows(IllegalArgumentException.class,
                () -> r.schedule(new AgShape(2, 1024, 512, 256, DType.FP16), "atomic"));
        assertTrue(e1.getMessage().contains("ag/atomic runs [bf16]"), e1.getMessage());
        var e2 = assertThrows(IllegalArgumentException.class,
                () -> r.schedule(new RsShape(2, 1024, 500, 256, DType.BF16, false), "atomic"));
        assertTrue(e2.getMessage().contains("multiples of 8"), e2.getMessage());
        var e3 = assertThrows(IllegalArgumentException.class,
                () -> r.schedule(new AgShape(1, 1024, 512, 256, DType.BF16), "atomic"));
        assertTrue(e3.getMessage().contains("tp >= 2"), e3.getMessage());
        var e4 = assertThrows(IllegalArgumentException.class, () -> r.schedule(new AgShape(2, 1024, 512, 256,
                DType.BF16).withFp8(new dev.ubuf.op.Fp8Operands(DType.FP8_E4M3, DType.FP8_E4M3)), "atomic"));
        assertTrue(e4.getMessage().contains("no FP8 kernel"), e4.getMessage());
        assertThrows(MethodOptionException.class,
                () -> r.schedule(new AgShape(2, 1024, 512, 256, DType.BF16), "atomic:cs=2"));
        // Nothing for the planner even on shapes it runs: not a candidate until it has run on GPUs.
        assertEquals(0, r.get(Collective.ALL_GATHER, "atomic")
                .tuningSpace(new AgShape(2, 1024, 512, 256, DType.BF16)).size());
        assertEquals(0, r.get(Collective.REDUCE_SCATTER, "atomic")
                .tuningSpace(new RsShape(2, 1024, 512, 256, DType.BF16, false)).size());
    }

    @Test
    void devicesWithoutSm90aAreNamedInTheReason() {
        assertTrue(AtomicSchedule.unsupportedOn("ag/atomic", "NVIDIA H100 80GB HBM3", 90).isEmpty());
        String why = AtomicSchedule.unsupportedOn("rs/atomic", "NVIDIA A100-SXM4-80GB", 80).orElseThrow();
        assertTrue(why.contains("sm_90a") && why.contains("A100") && why.contains("8.0"), why);
        assertTrue(AtomicSchedule.unsupportedOn("ag/atomic", "NVIDIA B200", 100).isPresent());
    }

    @Test
    void planValidationRejectsChunkFlagsThatReceiveMoreThanOneSignal() {
        Plan p = AtomicAllGatherGemm.plan(new AgShape(2, 4, 8, 8, DType.BF16), 0);
        var counts = new java.util.ArrayList<>(p.flagsReceivedPerCall());
        counts.set(1, 2);
        var e = assertThrows(IllegalArgumentException.class, () -> new Plan(p.op(), p.method(), p.rank(), p.tp(),
                p.streams(), p.matrices(), counts, p.eventCount(), p.steps()));
        assertTrue(e.getMessage().contains("exactly one signal per call"), e.getMessage());
        assertEquals(Map.of(), Map.of());
    }
}
