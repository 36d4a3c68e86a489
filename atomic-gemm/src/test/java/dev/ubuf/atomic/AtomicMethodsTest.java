package dev.ubuf.atomic;

import dev.ubuf.ag.AgShape;
import dev.ubuf.exec.AtomicGemmLauncher;
import dev.ubuf.exec.ExecutionSettings;
import dev.ubuf.op.Candidate;
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

import java.util.List;
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
        AgShape ag = new AgShape(2, 1024, 512, 256, DType.BF16);
        assertEquals("atomic", r.schedule(ag, "atomic").label(), "selectable by name");
    }

    private static List<String> labels(List<Candidate> candidates) {
        return candidates.stream().map(Candidate::label).toList();
    }

    @Test
    void thePlannerMeasuresAtomicWhereTheKernelRunsTheShapeAndNowhereElse() {
        Planner p = new Planner(MethodRegistry.load(), PlannerSettings.inMemory());
        AgShape ag = new AgShape(2, 1024, 512, 256, DType.BF16);
        RsShape rs = new RsShape(2, 1024, 512, 256, DType.FP16, true);
        assertTrue(labels(p.candidates(ag)).contains("atomic"), labels(p.candidates(ag)).toString());
        assertTrue(labels(p.candidates(rs)).contains("atomic"), labels(p.candidates(rs)).toString());
        assertTrue(labels(p.candidates(ag)).containsAll(List.of("nccl", "ring", "oneshot")), "beside the others");
        // beyond two ranks it is no candidate (see its tuningSpace)
        List<String> tp8 = labels(p.candidates(new AgShape(8, 1024, 512, 256, DType.BF16)));
        assertTrue(!tp8.contains("atomic") && tp8.contains("ring"), tp8.toString());
        List<String> rs8 = labels(p.candidates(new RsShape(8, 1024, 512, 256, DType.FP16, true)));
        assertTrue(!rs8.contains("atomic") && rs8.contains("nccl"), rs8.toString());
        // shapes schedule() refuses: fp16 AG (bf16 kernel), n not a multiple of 8, FP8 operands
        for (var unsupported : List.of(new AgShape(2, 1024, 512, 256, DType.FP16),
                new RsShape(2, 1024, 512, 252, DType.BF16, false),
                new AgShape(2, 1024, 512, 256, DType.BF16).withFp8(new dev.ubuf.op.Fp8Operands(DType.FP8_E4M3,
                        DType.FP8_E4M3)))) {
            List<String> labels = labels(p.candidates(unsupported));
            assertTrue(!labels.contains("atomic") && labels.contains("nccl"), unsupported.key() + ": " + labels);
        }
        // graph-safe execution cannot run the atomic GEMM: skipped with the reason, the others stay
        ExecutionSettings graphSafe = new ExecutionSettings(true, 16, 0, true);
        List<String> graph = labels(p.candidates(ag, null, graphSafe));
        assertTrue(!graph.contains("atomic") && graph.contains("ring"), graph.toString());
        assertTrue(p.skipped(ag, null, graphSafe).get("atomic").contains("not graph-safe"),
                p.skipped(ag, null, graphSafe).toString());
        assertTrue(p.skipped(ag, null, ExecutionSettings.DEFAULT).isEmpty());
        // nor beside SM copies (use_ce false): its resident kernel would hold the SMs they need
        ExecutionSettings smCopy = ExecutionSettings.DEFAULT.withCopyEngine(false);
        assertTrue(!labels(p.candidates(rs, null, smCopy)).contains("atomic"), labels(p.candidates(rs, null, smCopy)).toString());
        assertTrue(p.skipped(rs, null, smCopy).get("atomic").contains("SM copies"), p.skipped(rs, null, smCopy).toString());
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
        // The planner measures the defaults on shapes it runs, nothing on the ones it refuses.
        assertEquals(List.of(Map.of()), r.get(Collective.ALL_GATHER, "atomic")
                .tuningSpace(new AgShape(2, 1024, 512, 256, DType.BF16)));
        assertEquals(List.of(Map.of()), r.get(Collective.REDUCE_SCATTER, "atomic")
                .tuningSpace(new RsShape(2, 1024, 512, 256, DType.BF16, false)));
        assertEquals(List.of(), r.get(Collective.ALL_GATHER, "atomic")
                .tuningSpace(new AgShape(2, 1024, 512, 256, DType.FP16)));
        // Beyond two ranks it can be named, but the planner does not measure it (its times spread at tp 4).
        r.schedule(new AgShape(4, 1024, 512, 256, DType.BF16), "atomic");
        assertEquals(List.of(), r.get(Collective.ALL_GATHER, "atomic")
                .tuningSpace(new AgShape(4, 1024, 512, 256, DType.BF16)));
        assertEquals(List.of(), r.get(Collective.REDUCE_SCATTER, "atomic")
                .tuningSpace(new RsShape(4, 1024, 512, 256, DType.BF16, false)));
        assertEquals(List.of(), r.get(Collective.REDUCE_SCATTER, "atomic")
                .tuningSpace(new RsShape(2, 1024, 500, 256, DType.BF16, false)));
    }

    @Test
    void theKernelOptionNamesTheGemmsTilingAndThePlannerAddsPingPongWhereTheRuleClusters() {
        MethodRegistry r = MethodRegistry.load();
        // K = 8192: 128 K steps a tile, where the rule takes clustered tiles
        AgShape ag = new AgShape(2, 1024, 8192, 256, DType.BF16);
        RsShape rs = new RsShape(2, 1024, 8192, 256, DType.BF16, false);
        for (String v : List.of("pingpong", "cooperative", "cooperative-cluster")) {
            for (int rank = 0; rank < 2; rank++) {
                assertEquals(v, only(r.schedule(ag, "atomic:kernel=" + v).plan(rank)).kernel());
                assertEquals(v, only(r.schedule(rs, "atomic:kernel=" + v).plan(rank)).kernel());
            }
        }
        assertEquals("pingpong", only(r.schedule(ag, "atomic:kernel=Ping-Pong").plan(0)).kernel(),
                "either spelling, any case");
        assertEquals(PlanStep.AtomicGemm.AUTO_KERNEL, only(r.schedule(ag, "atomic").plan(1)).kernel());
        assertEquals(PlanStep.AtomicGemm.AUTO_KERNEL, only(r.schedule(rs, "atomic:kernel=AUTO").plan(1)).kernel());
        var bad = assertThrows(MethodOptionException.class, () -> r.schedule(rs, "atomic:kernel=clustered"));
        assertTrue(bad.getMessage().contains("kernel=clustered") && bad.getMessage().contains("cooperative-cluster"),
                bad.getMessage());
        var e = assertThrows(IllegalArgumentException.class, () -> new PlanStep.AtomicGemm(0,
                only(r.schedule(ag, "atomic").plan(0)).a(), only(r.schedule(ag, "atomic").plan(0)).b(),
                only(r.schedule(ag, "atomic").plan(0)).c(), false, 2, 0, -1, -1, " "));
        assertTrue(e.getMessage().contains("blank"), e.getMessage());

        List<Map<String, String>> both = List.of(Map.of(), Map.of("kernel", "pingpong"));
        assertEquals(both, r.get(Collective.ALL_GATHER, "atomic").tuningSpace(ag));
        assertEquals(both, r.get(Collective.REDUCE_SCATTER, "atomic").tuningSpace(rs));
        assertEquals(both, r.get(Collective.REDUCE_SCATTER, "atomic")
                .tuningSpace(new RsShape(2, 1024, 4104, 256, DType.BF16, false)), "65 K steps");
        assertEquals(List.of(Map.of()), r.get(Collective.ALL_GATHER, "atomic")
                .tuningSpace(new AgShape(2, 1024, 4096, 256, DType.BF16)), "64 K steps: the rule's ping-pong alone");
        assertEquals(List.of(), r.get(Collective.ALL_GATHER, "atomic")
                .tuningSpace(new AgShape(4, 1024, 8192, 256, DType.BF16)));
        Planner p = new Planner(r, PlannerSettings.inMemory());
        assertTrue(labels(p.candidates(rs)).containsAll(List.of("atomic", "atomic:kernel=pingpong")),
                labels(p.candidates(rs)).toString());
        assertTrue(labels(p.candidates(new RsShape(2, 1024, 512, 256, DType.BF16, false))).stream()
                .noneMatch(l -> l.startsWith("atomic:")));
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
