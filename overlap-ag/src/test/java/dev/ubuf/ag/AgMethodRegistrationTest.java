package dev.ubuf.ag;

import dev.ubuf.op.Collective;
import dev.ubuf.op.MethodRegistry;
import dev.ubuf.op.OverlapMethod;
import dev.ubuf.op.Schedule;
import dev.ubuf.tensor.DType;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The AG methods reach the planner only through their ServiceLoader registration, with validated string options. */
class AgMethodRegistrationTest {
    private final MethodRegistry registry = MethodRegistry.load();
    private final AgShape shape = new AgShape(2, 4096, 1024, 512, DType.BF16);

    @Test
    void everyAgMethodOfThisModuleIsRegistered() {
        // containsAll, not equals: a new method is its class and its registration, no edit here
        List<String> names = registry.of(Collective.ALL_GATHER).stream().map(OverlapMethod::name).toList();
        assertTrue(names.containsAll(List.of("aggregate", "bulk", "oneshot", "ring")), names.toString());
        assertFalse(registry.get(Collective.ALL_GATHER, "bulk").hasGemm(), "bulk only gathers");
    }

    @Test
    void aVariantStringCompilesToTheSamePlansAsTheTypedOptions() {
        Schedule s = registry.schedule(shape, "ring:cs=2");
        assertEquals("ring:cs=2", s.label());
        assertEquals(AgPlans.domain(new RingAllGatherGemm(), shape, AgOptions.defaults().withComputeStreams(2)), s.plans());
    }

    @Test
    void badOptionsNameTheMethodTheKeyAndTheAllowedValues() {
        var e = assertThrows(IllegalArgumentException.class, () -> registry.schedule(shape, "ring:cs=x"));
        assertTrue(e.getMessage().contains("cs=x") && e.getMessage().contains("not an integer"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> registry.schedule(shape, "ring:cs=9"));
        assertTrue(e.getMessage().contains("outside 1..3"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> registry.schedule(shape, "ring:splits=2"));
        assertTrue(e.getMessage().contains("no option 'splits'") && e.getMessage().contains("cs ="), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> registry.schedule(shape, "atomic"));
        assertTrue(e.getMessage().contains("registered: " + String.join(", ", registry.of(Collective.ALL_GATHER)
                .stream().map(OverlapMethod::name).toList())),
                e.getMessage());
    }

    @Test
    void aggregateOffersNothingToPlanAtOddTp() {
        AgShape odd = new AgShape(3, 3 * 512, 256, 128, DType.BF16);
        assertTrue(registry.get(Collective.ALL_GATHER, "aggregate").tuningSpace(odd).isEmpty());
        assertEquals(List.of(Map.of("cs", "1"), Map.of(), Map.of("cs", "2")),
                registry.get(Collective.ALL_GATHER, "ring").tuningSpace(odd), "free=1 named only");
        assertThrows(IllegalArgumentException.class, () -> registry.schedule(odd, "aggregate"));
    }

    @Test
    void freeSmsAreTakenFromTheGemmsAndLeaveThePlanAsItIs() {
        AgShape shape = new AgShape(4, 4 * 512, 256, 128, DType.BF16);
        var free = registry.schedule(shape, "ring:cs=1,free=1");
        assertEquals(131, free.settings(dev.ubuf.exec.ExecutionSettings.DEFAULT, 132).gemmSmBudget());
        assertEquals(100, free.settings(dev.ubuf.exec.ExecutionSettings.DEFAULT.withGemmSmBudget(100), 132)
                .gemmSmBudget(), "an explicit budget is kept");
        assertEquals(0, registry.schedule(shape, "ring:cs=1").settings(dev.ubuf.exec.ExecutionSettings.DEFAULT, 132)
                .gemmSmBudget());
        for (int rank = 0; rank < 4; rank++) {
            assertEquals(registry.schedule(shape, "ring:cs=1").plan(rank), free.plan(rank));
        }
        var e = assertThrows(IllegalArgumentException.class, () -> registry.schedule(shape, "aggregate:free=70")
                .settings(dev.ubuf.exec.ExecutionSettings.DEFAULT, 132));
        assertTrue(e.getMessage().contains("free=70 would take 70 of this GPU's 132 SMs"), e.getMessage());
    }

    @Test
    void fanOutPushesTheShardToEveryPeerForwardsNothingAndMultipliesChunksInArrivalOrder() {
        AgShape shape = new AgShape(4, 4 * 512, 256, 128, DType.BF16);
        var method = registry.get(Collective.ALL_GATHER, "fanout");
        assertTrue(method.tuningSpace(shape).isEmpty(), "named only: behind the ring and aggregate, timed as replays");
        for (String options : new String[]{"fanout:cs=1", "fanout:cs=1,ms=3"}) {
            for (int rank = 0; rank < 4; rank++) {
                int r = rank;
                var plan = registry.schedule(shape, options).plan(rank);
                var copies = plan.steps().stream().filter(st -> st instanceof dev.ubuf.plan.PlanStep.Copy)
                        .map(st -> (dev.ubuf.plan.PlanStep.Copy) st).filter(c -> c.dst().rank() != r).toList();
                assertEquals(List.of((r + 1) % 4, (r + 2) % 4, (r + 3) % 4),
                        copies.stream().map(c -> c.dst().rank()).toList(), "one push a peer, r+1 first");
                assertTrue(copies.stream().allMatch(c -> c.src().rank() == r
                        && c.src().buffer() == dev.ubuf.plan.BufferRole.INPUT),
                        "only the own shard leaves: nothing forwarded");
                var gemmRows = plan.steps().stream().filter(st -> st instanceof dev.ubuf.plan.PlanStep.Gemm)
                        .map(st -> ((dev.ubuf.plan.PlanStep.Gemm) st).c().row() / 512).toList();
                assertEquals(List.of((long) r, (long) ((r + 3) % 4), (long) ((r + 2) % 4), (long) ((r + 1) % 4)),
                        gemmRows, "own chunk, then r-1, r-2, r-3 as they arrive");
            }
        }
    }
}
