package dev.ubuf.rs;

import dev.ubuf.exec.ExecutionSettings;
import dev.ubuf.op.Collective;
import dev.ubuf.op.MethodRegistry;
import dev.ubuf.op.OverlapMethod;
import dev.ubuf.op.Schedule;
import dev.ubuf.plan.BufferRole;
import dev.ubuf.plan.Plan;
import dev.ubuf.plan.PlanStep;
import dev.ubuf.tensor.DType;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The RS methods reach the planner through their ServiceLoader registration, with validated string options. */
class RsMethodRegistrationTest {
    private final MethodRegistry registry = MethodRegistry.load();

    private static RsShape shape(int tp, long m, long k, long n) {
        return new RsShape(tp, m, k, n, DType.BF16, false);
    }

    @Test
    void everyRsMethodOfThisModuleIsRegistered() {
        // containsAll, not equals: a new method is its class and its registration, no edit here
        List<String> names = registry.of(Collective.REDUCE_SCATTER).stream().map(OverlapMethod::name).toList();
        assertTrue(names.containsAll(List.of("bulk", "oneshot", "pipeline", "ring", "scatter")), names.toString());
        assertFalse(registry.get(Collective.REDUCE_SCATTER, "bulk").hasGemm(), "bulk only reduce-scatters");
    }

    @Test
    void variantStringsCompileToTheSamePlansAsTypedOptions() {
        RsShape s = shape(2, 4096, 1024, 1024);
        Schedule ring = registry.schedule(s, "ring:sub=4,lowp=1");
        RsOptions typed = RsOptions.DEFAULTS.withRingSubChunks(4).withRingPartialDtype(DType.BF16);
        assertEquals(new RingExchangeGemmReduceScatter().schedule(s, typed).plans(), ring.plans());
        assertEquals("ring:sub=4,lowp=1", ring.label());
        Schedule pipe = registry.schedule(s, "pipeline:splits=8,margin=24");
        assertEquals(new PipelinedGemmReduceScatter().schedule(s, RsOptions.DEFAULTS.withNumSplits(8).withGemmSmMargin(24))
                .plans(), pipe.plans());
    }

    @Test
    void pipelineLeavesItsMarginOfSmsToTheReduceKernel() {
        Schedule pipe = registry.schedule(shape(2, 4096, 1024, 1024), "pipeline:margin=20");
        assertEquals(112, pipe.settings(ExecutionSettings.DEFAULT, 132).gemmSmBudget());
        assertEquals(100, pipe.settings(ExecutionSettings.DEFAULT.withGemmSmBudget(100), 132).gemmSmBudget(),
                "an explicit budget is kept");
        assertEquals(0, registry.schedule(shape(2, 4096, 1024, 1024), "ring").settings(ExecutionSettings.DEFAULT, 132)
                .gemmSmBudget());
    }

    @Test
    void scatterWithSmPushesMovesItsCopiesToKernelsAndLeavesThemSmsPerPeer() {
        Schedule sm = registry.schedule(shape(4, 4096, 1024, 1024), "scatter:sm=8,lowp=1");
        ExecutionSettings s = sm.settings(ExecutionSettings.DEFAULT, 132);
        assertFalse(s.useCopyEngine(), "sm=8 pushes with SM copy kernels");
        assertEquals(8, s.smCopyCtas());
        assertEquals(132 - 3 * 8, s.gemmSmBudget(), "8 SMs for each of the 3 peers' pushes");
        assertEquals(100, sm.settings(ExecutionSettings.DEFAULT.withGemmSmBudget(100), 132).gemmSmBudget(),
                "an explicit budget is kept");
        assertEquals("scatter:lowp=1,sm=8", sm.label());
        assertEquals(ExecutionSettings.DEFAULT,
                registry.schedule(shape(4, 4096, 1024, 1024), "scatter:lowp=1").settings(ExecutionSettings.DEFAULT, 132),
                "without sm the pushes stay on the copy engines");
        var e = assertThrows(IllegalArgumentException.class,
                () -> registry.schedule(shape(4, 4096, 1024, 1024), "scatter:sm=65"));
        assertTrue(e.getMessage().contains("sm"), e.getMessage());
        Schedule wide = registry.schedule(shape(8, 4096, 1024, 1024), "scatter:sm=16");
        e = assertThrows(IllegalArgumentException.class, () -> wide.settings(ExecutionSettings.DEFAULT, 132));
        assertTrue(e.getMessage().contains("112 of this GPU's 132 SMs"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> registry.schedule(shape(4, 4096, 1024, 1024), "ring:sm=8"));
        assertTrue(e.getMessage().contains("no option 'sm'"), e.getMessage());
    }

    @Test
    void freeSmsAreTakenFromTheGemmsOfTheRingAndOfScatterBesideTheirPushKernelsWhenNamed() {
        RsShape s = shape(4, 4096, 1024, 1024);
        assertEquals(131, registry.schedule(s, "ring:lowp=1,cs=1,free=1").settings(ExecutionSettings.DEFAULT, 132)
                .gemmSmBudget());
        assertEquals(100, registry.schedule(s, "ring:free=1").settings(ExecutionSettings.DEFAULT.withGemmSmBudget(100),
                132).gemmSmBudget(), "an explicit budget is kept");
        ExecutionSettings scatter = registry.schedule(s, "scatter:lowp=1,free=3")
                .settings(ExecutionSettings.DEFAULT, 132);
        assertTrue(scatter.useCopyEngine(), "free SMs alone leave the pushes on the copy engines");
        assertEquals(129, scatter.gemmSmBudget());
        assertEquals(132 - 3 * 8 - 2, registry.schedule(s, "scatter:sm=8,free=2")
                .settings(ExecutionSettings.DEFAULT, 132).gemmSmBudget(), "pushes' SMs and free ones add up");
        var e = assertThrows(IllegalArgumentException.class,
                () -> registry.schedule(s, "ring:free=67").settings(ExecutionSettings.DEFAULT, 132));
        assertTrue(e.getMessage().contains("free=67 would take 67 of this GPU's 132 SMs"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> registry.schedule(s, "pipeline:free=1"));
        assertTrue(e.getMessage().contains("no option 'free'"), e.getMessage());
        for (String method : new String[]{"ring", "scatter"}) {
            assertTrue(registry.get(Collective.REDUCE_SCATTER, method).tuningSpace(s).stream()
                    .noneMatch(o -> o.containsKey("free")), method + ": named only, no gain timed as graph replays");
        }
        for (int rank = 0; rank < 4; rank++) {
            assertEquals(registry.schedule(s, "ring:lowp=1,cs=1,fuse=1,sub=2").plan(rank),
                    registry.schedule(s, "ring:lowp=1,cs=1,fuse=1,sub=2,free=1").plan(rank),
                    "free SMs change how the plan runs, not the plan");
        }
    }

    @Test
    void scatterWithSerialPushesSendsEveryPartialOnOneCopyStreamInStepOrder() {
        RsShape s = shape(4, 4096, 1024, 1024);
        dev.ubuf.plan.Plan perPeer = registry.schedule(s, "scatter:sub=2,lowp=1").plans().get(1);
        dev.ubuf.plan.Plan serial = registry.schedule(s, "scatter:sub=2,lowp=1,serial=1").plans().get(1);
        assertEquals(perPeer.streams().size() - 2, serial.streams().size(), "3 push streams become 1");
        List<Integer> copyStreams = serial.steps().stream()
                .filter(st -> st instanceof dev.ubuf.plan.PlanStep.Copy).map(dev.ubuf.plan.PlanStep::stream)
                .distinct().toList();
        assertEquals(1, copyStreams.size(), serial.describe());
        // Rank 1 pushes to 2, 3, 0 in that order (steps 0..2), each owner's two sub-chunks together.
        List<Integer> owners = serial.steps().stream()
                .filter(st -> st instanceof dev.ubuf.plan.PlanStep.Copy)
                .map(st -> ((dev.ubuf.plan.PlanStep.Copy) st).dst().rank()).toList();
        assertEquals(List.of(2, 2, 3, 3, 0, 0), owners);
        Schedule sm = registry.schedule(s, "scatter:sm=8,serial=1");
        assertEquals(132 - 8, sm.settings(ExecutionSettings.DEFAULT, 132).gemmSmBudget(), "one push at a time");
        assertTrue(registry.get(Collective.REDUCE_SCATTER, "scatter").tuningSpace(s).stream()
                .noneMatch(o -> o.containsKey("serial") || o.containsKey("sm")), "named only: no gain in the tp 4 sweep");
    }

    @Test
    void scatterCutsItsOwnStepApartAndFusesTheFirstArrivalOnlyWhereTheyCanWin() {
        OverlapMethod scatter = registry.get(Collective.REDUCE_SCATTER, "scatter");
        RsShape tp4 = shape(4, 8192, 4096, 4096);
        List<Map<String, String>> space4 = scatter.tuningSpace(tp4);
        assertTrue(space4.contains(Map.of("sub", "1", "lowp", "1", "fuse", "1")), space4.toString());
        assertTrue(space4.contains(Map.of("sub", "1", "tail", "4", "lowp", "1", "fuse", "1")), space4.toString());
        List<Map<String, String>> space2 = scatter.tuningSpace(shape(2, 8192, 4096, 4096));
        assertTrue(space2.stream().noneMatch(o -> o.containsKey("fuse") || o.containsKey("tail")),
                "at tp 2 the own GEMM would wait for the only push: " + space2);
        // 3 rows per rank: no 4 pieces
        assertTrue(scatter.tuningSpace(shape(4, 12, 64, 64)).stream().noneMatch(o -> o.containsKey("tail")));
        var e = assertThrows(IllegalArgumentException.class, () -> registry.schedule(tp4, "scatter:fuse=1"));
        assertTrue(e.getMessage().contains("needs lowp=1"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> registry.schedule(shape(4, 12, 64, 64), "scatter:sub=1,tail=4"));
        assertTrue(e.getMessage().contains("tail=4 exceeds m/tp=3"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> registry.schedule(tp4, "scatter:tail=0"));
        assertTrue(e.getMessage().contains("tail=0 is outside 1.."), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> registry.schedule(tp4, "ring:tail=2"));
        assertTrue(e.getMessage().contains("no option 'tail'"), e.getMessage());
    }

    @Test
    void badOptionsNameTheKeyAndTheAllowedValues() {
        RsShape s = shape(2, 4096, 1024, 1024);
        var e = assertThrows(IllegalArgumentException.class, () -> registry.schedule(s, "ring:splits=4"));
        assertTrue(e.getMessage().contains("no option 'splits'") && e.getMessage().contains("sub ="), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> registry.schedule(s, "pipeline:splits=3"));
        assertTrue(e.getMessage().contains("not divisible by numSplits=3"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> registry.schedule(s, "ring:lowp=yes"));
        assertTrue(e.getMessage().contains("must be 0 or 1"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> registry.schedule(s, "bogus"));
        assertTrue(e.getMessage().contains("registered: " + String.join(", ", registry.of(Collective.REDUCE_SCATTER)
                .stream().map(OverlapMethod::name).toList())),
                e.getMessage());
    }

    @Test
    void theRingTriesLowPrecisionPartialsAtEveryTpAsNcclsRingRoundsAtEveryHop() {
        OverlapMethod ring = registry.get(Collective.REDUCE_SCATTER, "ring");
        assertTrue(ring.tuningSpace(shape(2, 8192, 4096, 4096)).contains(Map.of("sub", "4", "lowp", "1")));
        assertEquals(List.of(Map.of("sub", "1"), Map.of("sub", "1", "lowp", "1", "cs", "1"),
                Map.of("sub", "1", "lowp", "1"), Map.of("sub", "2"), Map.of("sub", "2", "lowp", "1", "cs", "1"),
                Map.of("sub", "2", "lowp", "1"), Map.of("sub", "2", "lowp", "1", "cs", "1", "fuse", "1"),
                Map.of("sub", "4"), Map.of("sub", "4", "lowp", "1", "cs", "1"),
                Map.of("sub", "4", "lowp", "1"), Map.of("sub", "4", "lowp", "1", "cs", "1", "fuse", "1"),
                Map.of("sub", "1", "lowp", "1", "bidir", "1"), Map.of("sub", "2", "lowp", "1", "bidir", "1")),
                ring.tuningSpace(shape(4, 8192, 4096, 4096)), "one rounding a hop, as NCCL's ring and the layers, on"
                        + " one compute stream first; the received sum added by the last GEMM from 2 sub-chunks on;"
                        + " the bidirectional ring at the GEMM sizes of 2 and 4 sub-chunks");
        assertEquals(List.of(Map.of("sub", "1"), Map.of("sub", "1", "lowp", "1", "cs", "1"),
                Map.of("sub", "1", "lowp", "1")), ring.tuningSpace(shape(2, 2, 64, 64)),
                "one row per rank leaves one sub-chunk and no halves");
        assertEquals(List.of(Map.of("sub", "1"), Map.of("sub", "1", "lowp", "1", "cs", "1"),
                Map.of("sub", "1", "lowp", "1"), Map.of("sub", "2"), Map.of("sub", "2", "lowp", "1", "cs", "1"),
                Map.of("sub", "2", "lowp", "1"), Map.of("sub", "2", "lowp", "1", "cs", "1", "fuse", "1"),
                Map.of("sub", "1", "lowp", "1", "bidir", "1")),
                ring.tuningSpace(shape(2, 6, 64, 64)), "3 rows per rank: halves of 1 and 2 rows hold 1 sub-chunk");
    }

    @Test
    void directGemmsStoreIntoTheNeighboursSlotWithNoCopyAndNeedSumsInTheOutputsType() {
        assertTrue(registry.get(Collective.REDUCE_SCATTER, "ring").tuningSpace(shape(2, 8192, 4096, 4096)).stream()
                .noneMatch(o -> o.containsKey("direct")), "named only: slower than the copy engines where measured");
        var e = assertThrows(IllegalArgumentException.class,
                () -> registry.schedule(shape(2, 8192, 4096, 4096), "ring:direct=1"));
        assertTrue(e.getMessage().contains("needs lowp=1"), e.getMessage());
        for (int tp : new int[]{2, 4}) {
            for (int rank = 0; rank < tp; rank++) {
                Plan plan = registry.schedule(shape(tp, 8192, 4096, 4096), "ring:direct=1,lowp=1,sub=2,cs=1")
                        .plan(rank);
                int r = rank;
                assertTrue(plan.steps().stream().noneMatch(st -> st instanceof PlanStep.Copy
                        || st instanceof PlanStep.Reduce), "no copy and no reduction pass");
                assertFalse(plan.matrices().containsKey(BufferRole.SCRATCH), "no scratch");
                List<PlanStep.Gemm> gemms = plan.steps().stream().filter(st -> st instanceof PlanStep.Gemm)
                        .map(st -> (PlanStep.Gemm) st).toList();
                assertEquals(2 * tp, gemms.size());
                int left = Math.floorMod(rank - 1, tp);
                assertEquals(2 * (tp - 1), gemms.stream().filter(g -> g.c().rank() == left
                        && g.c().buffer() == BufferRole.UBUF).count(), "every step but the last stores into rank r-1");
                assertEquals(2, gemms.stream().filter(g -> g.c().rank() == r && g.c().buffer() == BufferRole.OUTPUT
                        && g.addend() != null).count(), "the last adds the received sum into the output");
                assertTrue(gemms.stream().allMatch(g -> g.a().rank() == r && g.b().rank() == r
                        && (g.addend() == null || g.addend().rank() == r)), "every GEMM reads its own memory");
                assertTrue(plan.gemmsOnly().steps().stream().allMatch(st -> st instanceof PlanStep.Gemm g
                        && g.c().rank() == r), "the GEMMs alone store locally");
            }
        }
    }

    @Test
    void theFusedTailNeedsSumsInTheOutputsType() {
        var e = assertThrows(IllegalArgumentException.class,
                () -> registry.schedule(shape(2, 8192, 4096, 4096), "ring:fuse=1"));
        assertTrue(e.getMessage().contains("needs lowp=1"), e.getMessage());
        Plan plan = registry.schedule(shape(2, 8192, 4096, 4096), "ring:fuse=1,lowp=1,sub=2").plan(0);
        assertEquals(2, plan.steps().stream().filter(st -> st instanceof PlanStep.Gemm g && g.addend() != null)
                .count(), "the last step's two sub-chunks add the received sums in their GEMMs");
        assertTrue(plan.steps().stream().noneMatch(st -> st instanceof PlanStep.Reduce),
                "no reduction pass is left");
    }

    @Test
    void theBidirectionalRingNeedsItsSubChunksInEachHalf() {
        OverlapMethod ring = registry.get(Collective.REDUCE_SCATTER, "ring");
        var e = assertThrows(IllegalArgumentException.class,
                () -> registry.schedule(shape(2, 6, 64, 64), "ring:bidir=1,sub=2"));
        assertTrue(e.getMessage().contains("bidir with ringSubChunks=2") && e.getMessage().contains("m/tp=3"),
                e.getMessage());
        assertTrue(ring.optionKeys().containsKey("bidir"), ring.optionKeys().toString());
    }

    @Test
    void pipelineTriesOnlySplitsThatDivideN() {
        OverlapMethod pipe = registry.get(Collective.REDUCE_SCATTER, "pipeline");
        assertEquals(List.of(Map.of("splits", "2", "cs", "1"), Map.of("splits", "2")),
                pipe.tuningSpace(shape(2, 4096, 1024, 1026)));
        assertTrue(pipe.tuningSpace(shape(16, 4096, 1024, 1024)).isEmpty(), "tp above the pull-reduce fan-in");
    }
}
