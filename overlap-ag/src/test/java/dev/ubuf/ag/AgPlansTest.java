package dev.ubuf.ag;

import dev.ubuf.op.Collective;
import dev.ubuf.op.MethodRegistry;
import dev.ubuf.plan.BufferRole;
import dev.ubuf.plan.Plan;
import dev.ubuf.plan.PlanStep;
import dev.ubuf.plan.Region;
import dev.ubuf.plan.StreamRole;
import dev.ubuf.tensor.DType;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Shapes, options, method choice and the structure of the plans (their results are in AgPlansHostTest). */
class AgPlansTest {
    private static long count(Plan p, Class<? extends PlanStep> kind) {
        return p.steps().stream().filter(kind::isInstance).count();
    }

    @Test
    void shapeRejectsRowsThatDoNotSplitOverTheRanks() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new AgShape(3, 100, 8, 8, DType.BF16));
        assertTrue(e.getMessage().contains("m = 100 rows cannot be split evenly over tp = 3"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new AgShape(0, 8, 8, 8, DType.BF16));
        assertThrows(IllegalArgumentException.class, () -> new AgShape(2, 8, 0, 8, DType.BF16));
        assertThrows(IllegalArgumentException.class, () -> new AgShape(2, 8, 8, 8, DType.FP8_E4M3));
        assertEquals(4, new AgShape(2, 8, 8, 8, DType.BF16).chunkRows());
    }

    @Test
    void optionsAreBounded() {
        assertThrows(IllegalArgumentException.class, () -> AgOptions.defaults().withComputeStreams(0));
        assertThrows(IllegalArgumentException.class, () -> AgOptions.defaults().withComputeStreams(4));
        assertThrows(IllegalArgumentException.class, () -> AgOptions.defaults().withCommStreams(0));
    }

    @Test
    void aggregateRejectsOddTp() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> AgPlans.domain(new AggregateAllGatherGemm(), new AgShape(3, 9, 4, 4, DType.BF16), AgOptions.defaults()));
        assertTrue(e.getMessage().contains("even tp"), e.getMessage());
    }

    @Test
    void bidirNeedsTwoRowsAShardAndSendsHalvesBothWays() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> AgPlans.domain(new BidirectionalRingAllGatherGemm(), new AgShape(4, 4, 4, 4, DType.BF16),
                        AgOptions.defaults()));
        assertTrue(e.getMessage().contains("two halves") && e.getMessage().contains("m/tp = 1"), e.getMessage());
        AgShape shape = new AgShape(4, 20, 4, 4, DType.BF16); // 5 rows a shard: halves of 2 and 3
        for (Plan p : AgPlans.domain(new BidirectionalRingAllGatherGemm(), shape, AgOptions.defaults())) {
            int next = (p.rank() + 1) % 4;
            int prev = (p.rank() + 3) % 4;
            assertEquals(List.of(3, 1, 3, 1), p.flagsReceivedPerCall());
            assertEquals(1 + 2 * 3, count(p, PlanStep.Gemm.class), "the own shard whole, then two halves a step");
            assertEquals(3, p.signalsSentPerCall(next, BidirectionalRingAllGatherGemm.DATA_A));
            assertEquals(3, p.signalsSentPerCall(prev, BidirectionalRingAllGatherGemm.DATA_B));
            List<PlanStep.Copy> copies = p.steps().stream().filter(s -> s instanceof PlanStep.Copy)
                    .map(s -> (PlanStep.Copy) s).toList();
            assertEquals(2 * 3 + 1, copies.size(), "three halves each way and the own shard into UBUF");
            assertEquals(2, copies.stream().map(PlanStep::stream).distinct().count(), "one comm stream a ring");
            for (PlanStep.Copy c : copies.subList(0, 6)) {
                boolean first = c.dst().rank() == next;
                assertEquals(first ? 2 : 3, c.dst().rows(), c.toString());
                assertEquals(first ? 0 : 2, c.dst().row() % 5, c.toString());
            }
        }
    }

    @Test
    void rankOutsideTheDomainIsRejected() {
        assertThrows(IllegalArgumentException.class,
                () -> AgPlans.plan(new RingAllGatherGemm(), new AgShape(2, 4, 4, 4, DType.BF16), 2, AgOptions.defaults()));
    }

    @Test
    void ringMultipliesEveryChunkOnceAndForwardsAllButTheLast() {
        AgShape shape = new AgShape(8, 24, 4, 4, DType.BF16);
        for (Plan p : AgPlans.domain(new RingAllGatherGemm(), shape, AgOptions.defaults())) {
            assertEquals("ring", p.method());
            assertEquals(List.of(7, 1), p.flagsReceivedPerCall());
            assertEquals(8, count(p, PlanStep.Gemm.class));
            assertEquals(7, p.signalsSentPerCall((p.rank() + 1) % 8, RingAllGatherGemm.DATA));
            assertEquals(1 + 3, p.streams().size(), "one comm + three compute streams");
            long gemmStreams = p.steps().stream().filter(s -> s instanceof PlanStep.Gemm).mapToInt(PlanStep::stream)
                    .distinct().count();
            assertEquals(3, gemmStreams);
            for (PlanStep s : p.steps()) {
                if (s instanceof PlanStep.Gemm) {
                    assertEquals(StreamRole.COMPUTE, p.streams().get(s.stream()));
                }
                if (s instanceof PlanStep.Copy) {
                    assertEquals(StreamRole.COMM, p.streams().get(s.stream()));
                }
            }
        }
    }

    @Test
    void inputInUbufDropsTheInputMatrixAndTheLocalCopy() {
        AgShape shape = new AgShape(4, 8, 4, 4, DType.BF16);
        for (AgOverlapMethod m : registered()) {
            Plan withInput = AgPlans.plan(m, shape, 1, AgOptions.defaults());
            Plan inUbuf = AgPlans.plan(m, shape, 1, AgOptions.defaults().withInputInUbuf(true));
            assertTrue(withInput.matrices().containsKey(BufferRole.INPUT), m.name());
            assertFalse(inUbuf.matrices().containsKey(BufferRole.INPUT), m.name());
            assertEquals(count(withInput, PlanStep.Copy.class) - 1, count(inUbuf, PlanStep.Copy.class), m.name());
        }
    }

    @Test
    void aShapeWhoseProducerWritesTheUserBufferHasNoOwnChunkCopy() {
        AgShape shape = new AgShape(4, 8, 4, 4, DType.BF16).withInputInUserBuffer();
        for (AgOverlapMethod m : registered()) {
            for (int rank = 0; rank < shape.tp(); rank++) {
                Plan p = AgPlans.plan(m, shape, rank, AgOptions.defaults());
                assertFalse(p.matrices().containsKey(BufferRole.INPUT), m.name() + " rank " + rank);
                Region own = Region.rows(BufferRole.UBUF, rank, rank * shape.chunkRows(), shape.chunkRows(),
                        shape.k());
                for (PlanStep s : p.steps()) {
                    assertFalse(s instanceof PlanStep.Copy c && c.dst().equals(own),
                            m.name() + " rank " + rank + " copies into its own chunk: " + s);
                }
            }
        }
        assertTrue(shape.key().endsWith(" in-ubuf"), "the planner caches it apart: " + shape.key());
        assertTrue(new AgShape(4, 16, 16, 16, DType.BF16).withInputInUserBuffer()
                .withFp8(dev.ubuf.op.Fp8Operands.E4M3).inputInUserBuffer(), "withFp8 keeps it");
    }

    @Test
    void bulkGathersWithoutGemmAndOneShotRunsOneGemm() {
        AgShape shape = new AgShape(4, 8, 4, 4, DType.BF16);
        Plan bulk = AgPlans.plan(new BulkAllGather(), shape, 2, AgOptions.defaults());
        assertFalse(bulk.matrices().containsKey(BufferRole.WEIGHT));
        assertFalse(bulk.matrices().containsKey(BufferRole.OUTPUT));
        assertEquals(0, count(bulk, PlanStep.Gemm.class));
        assertTrue(bulk.streams().stream().allMatch(s -> s == StreamRole.COMM));
        Plan oneShot = AgPlans.plan(new OneShotAllGatherGemm(), shape, 2, AgOptions.defaults().withCommStreams(3));
        assertEquals(1, count(oneShot, PlanStep.Gemm.class));
        assertEquals(3, oneShot.streams().stream().filter(s -> s == StreamRole.COMM).count());
        PlanStep.Gemm g = (PlanStep.Gemm) oneShot.steps().getLast();
        assertEquals(8, g.a().rows(), "the GEMM covers the whole gathered buffer");
    }

    @Test
    void aggregateMovesTwoChunkBlocksBetweenRanksOfTheSameParity() {
        AgShape shape = new AgShape(8, 16, 4, 4, DType.BF16);
        Plan p = AgPlans.plan(new AggregateAllGatherGemm(), shape, 3, AgOptions.defaults());
        assertEquals(2 + 3, count(p, PlanStep.Gemm.class), "own chunk, partner chunk, 3 blocks");
        assertEquals(1, p.signalsSentPerCall(2, AggregateAllGatherGemm.PAIR));
        assertEquals(3, p.signalsSentPerCall(5, AggregateAllGatherGemm.RING));
        for (PlanStep s : p.steps()) {
            if (s instanceof PlanStep.Copy c && c.dst().rank() == 5) {
                assertEquals(4, c.dst().rows(), "2 chunks of 2 rows");
            }
        }
    }

    @Test
    void methodNamesAreTheResultsVocabulary() {
        MethodRegistry registry = MethodRegistry.load();
        assertEquals("oneshot", new OneShotAllGatherGemm().name());
        assertEquals(AggregateAllGatherGemm.class, registry.get(Collective.ALL_GATHER, "Aggregate").getClass());
        assertEquals("ring", new RingAllGatherGemm().name());
        assertThrows(IllegalArgumentException.class, () -> registry.get(Collective.ALL_GATHER, "atomic"));
    }

    /** Every AG method registered for ServiceLoader (this module's, on the module path of its tests). */
    static List<AgOverlapMethod> registered() {
        return MethodRegistry.load().of(Collective.ALL_GATHER).stream().map(AgOverlapMethod.class::cast).toList();
    }
}
