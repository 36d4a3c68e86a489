package dev.ubuf.rs;

import dev.ubuf.op.Collective;
import dev.ubuf.op.MethodRegistry;
import dev.ubuf.plan.BufferRole;
import dev.ubuf.plan.Plan;
import dev.ubuf.plan.PlanStep;
import dev.ubuf.plan.Region;
import dev.ubuf.plan.StreamRole;
import dev.ubuf.tensor.DType;
import org.junit.jupiter.api.Test;

import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The shape of each method's plan: what it allocates, what it computes where, and where its data goes. */
class RsPlansTest {
    private static final RsShape SHAPE = new RsShape(4, 4 * 6, 8, 12, DType.BF16, true);

    private static <T extends PlanStep> List<T> steps(Plan p, Class<T> kind) {
        return p.steps().stream().filter(kind::isInstance).map(kind::cast).toList();
    }

    @Test
    void ringAccumulatesFp32PartialsInTwoSlotsAndCastsOnce() {
        RsSchedule ring = new RingExchangeGemmReduceScatter().schedule(SHAPE, RsOptions.DEFAULTS);
        Plan p = ring.plan(1);
        assertEquals(2, RingExchangeGemmReduceScatter.slots(ring.shape(), ring.rsOptions()));
        assertEquals(DType.FP32, p.matrix(BufferRole.UBUF).dtype());
        assertEquals(2 * 6, p.matrix(BufferRole.UBUF).rows());
        assertEquals(DType.FP32, p.matrix(BufferRole.SCRATCH).dtype());
        assertEquals(DType.BF16, p.matrix(BufferRole.OUTPUT).dtype());

        List<PlanStep.Gemm> gemms = steps(p, PlanStep.Gemm.class);
        assertEquals(4 * 2, gemms.size(), "tp steps of 2 sub-chunks");
        for (int g = 0; g < gemms.size(); g++) {
            boolean first = g < 2;
            assertEquals(!first, gemms.get(g).accumulate(), "only step 0 starts a sum");
            assertEquals(first ? BufferRole.SCRATCH : BufferRole.UBUF, gemms.get(g).c().buffer());
        }
        // step 0 works on chunk r+1, the last step on the rank's own chunk
        assertEquals(2 * 6, gemms.get(0).a().row());
        assertEquals(1 * 6 + 3, gemms.get(7).a().row());
        // consecutive GEMMs rotate over the 3 compute streams
        assertEquals(3, new HashSet<>(gemms.stream().map(PlanStep::stream).toList()).size());
        assertTrue(gemms.stream().allMatch(g -> p.streams().get(g.stream()) == StreamRole.COMPUTE));

        for (PlanStep.Copy c : steps(p, PlanStep.Copy.class)) {
            assertEquals(0, c.dst().rank(), "sums go to rank r-1");
            assertEquals(BufferRole.UBUF, c.dst().buffer());
            assertEquals(StreamRole.COMM, p.streams().get(c.stream()));
        }
        assertEquals(3 * 2, steps(p, PlanStep.Copy.class).size());

        List<PlanStep.Reduce> casts = steps(p, PlanStep.Reduce.class);
        assertEquals(2, casts.size(), "one cast per sub-chunk of the own chunk");
        for (PlanStep.Reduce r : casts) {
            assertEquals(1, r.sources().size());
            assertEquals(BufferRole.UBUF, r.sources().getFirst().buffer());
            assertEquals(1, r.sources().getFirst().rank());
            assertEquals(BufferRole.OUTPUT, r.dst().buffer());
        }
        assertEquals(2, steps(p, PlanStep.AddBias.class).size());
    }

    @Test
    void ringSlotsAreClampedToTheStepsThatReceiveAndThePartialTypeIsAnOption() {
        RsSchedule ring = new RingExchangeGemmReduceScatter().schedule(SHAPE,
                RsOptions.DEFAULTS.withRingSlots(10).withRingPartialDtype(DType.BF16));
        assertEquals(3, RingExchangeGemmReduceScatter.slots(ring.shape(), ring.rsOptions()));
        assertEquals(DType.BF16, ring.plan(0).matrix(BufferRole.UBUF).dtype());
        assertEquals(3 * 6, ring.plan(0).matrix(BufferRole.UBUF).rows());
        assertEquals(1, RingExchangeGemmReduceScatter.slots(new RsShape(2, 4, 2, 2, DType.FP16, false),
                RsOptions.DEFAULTS));
    }

    @Test
    void aRingWithSumsInTheOutputTypeRoundsItsOwnPartialIntoTheOutputThenAddsTheReceivedSum() {
        RsShape two = new RsShape(2, 8, 4, 6, DType.BF16, false);
        Plan p = new RingExchangeGemmReduceScatter().schedule(two, RsOptions.DEFAULTS.withRingPartialDtype(DType.BF16))
                .plan(0);
        List<PlanStep.Gemm> gemms = steps(p, PlanStep.Gemm.class);
        assertEquals(4, gemms.size(), "2 steps x 2 sub-chunks");
        for (PlanStep.Gemm g : gemms.subList(2, 4)) {
            assertEquals(BufferRole.OUTPUT, g.c().buffer(), "the own partial goes straight to the output");
            assertFalse(g.accumulate(), "and is rounded there on its own, as the unoverlapped GEMM rounds it");
        }
        List<PlanStep.Reduce> adds = steps(p, PlanStep.Reduce.class);
        assertEquals(2, adds.size());
        for (PlanStep.Reduce r : adds) {
            assertTrue(r.accumulate(), "the received sum is added to it");
            assertEquals(BufferRole.UBUF, r.sources().getFirst().buffer());
            assertEquals(BufferRole.OUTPUT, r.dst().buffer());
        }
        // fp32 sums keep the accumulating GEMM: the own partial is never rounded before the add.
        Plan wide = new RingExchangeGemmReduceScatter().schedule(two, RsOptions.DEFAULTS).plan(0);
        assertTrue(steps(wide, PlanStep.Gemm.class).stream().noneMatch(g -> g.c().buffer() == BufferRole.OUTPUT));
    }

    @Test
    void ringSubChunksSplitUnevenRowCountsWithoutGaps() {
        RsShape odd = new RsShape(3, 3 * 7, 2, 4, DType.BF16, false);
        Plan p = new RingExchangeGemmReduceScatter().schedule(odd, RsOptions.DEFAULTS.withRingSubChunks(3)).plan(2);
        List<PlanStep.Reduce> casts = steps(p, PlanStep.Reduce.class);
        long next = 0;
        for (PlanStep.Reduce r : casts) {
            assertEquals(next, r.dst().row());
            next = r.dst().endRow();
        }
        assertEquals(7, next);
    }

    @Test
    void pipelineComputesColumnBlocksAndPullsOwnRowsFromEveryRank() {
        RsOptions o = RsOptions.DEFAULTS.withNumSplits(3).withComputeStreams(2);
        RsSchedule pipe = new PipelinedGemmReduceScatter().schedule(SHAPE, o);
        Plan p = pipe.plan(2);
        assertEquals(4, PipelinedGemmReduceScatter.blockCols(pipe.shape(), pipe.rsOptions()));
        assertEquals(List.of(StreamRole.COMPUTE, StreamRole.COMPUTE, StreamRole.COMM, StreamRole.COMM), p.streams());
        assertEquals(DType.BF16, p.matrix(BufferRole.UBUF).dtype());
        assertEquals(SHAPE.m(), p.matrix(BufferRole.UBUF).rows());

        List<PlanStep.Gemm> gemms = steps(p, PlanStep.Gemm.class);
        assertEquals(3, gemms.size());
        for (int j = 0; j < 3; j++) {
            assertEquals(SHAPE.m(), gemms.get(j).c().rows(), "every block covers all rows");
            assertEquals(4L * j, gemms.get(j).c().col());
            assertEquals(j % 2, gemms.get(j).stream());
        }
        List<PlanStep.Reduce> reduces = steps(p, PlanStep.Reduce.class);
        assertEquals(3, reduces.size());
        for (PlanStep.Reduce r : reduces) {
            Set<Integer> ranks = new HashSet<>();
            for (Region s : r.sources()) {
                ranks.add(s.rank());
                assertEquals(2 * 6, s.row(), "this rank's rows");
            }
            assertEquals(Set.of(0, 1, 2, 3), ranks);
            assertEquals(StreamRole.COMM, p.streams().get(r.stream()));
        }
        assertEquals(16, o.gemmSmMargin(), "the executor's SM budget for this method's GEMMs");
    }

    @Test
    void bulkReducesTheCallersBufferWithoutAGemmAndEndsOnTheCredits() {
        Plan p = new BulkReduceScatter().schedule(SHAPE, RsOptions.DEFAULTS).plan(0);
        assertTrue(steps(p, PlanStep.Gemm.class).isEmpty());
        assertFalse(p.matrices().containsKey(BufferRole.INPUT));
        assertFalse(p.matrices().containsKey(BufferRole.WEIGHT));
        assertEquals(List.of(StreamRole.COMM), p.streams());
        assertEquals(1, steps(p, PlanStep.Reduce.class).size());
        PlanStep last = p.steps().getLast();
        assertTrue(last instanceof PlanStep.WaitSignal w && w.flag() >= SHAPE.tp() && w.count() == 1,
                "the call returns only when every peer has finished reading: " + last);
    }

    @Test
    void stagedBulkCopiesEachPeersRowsOnItsOwnStreamAndSumsLocally() {
        Plan p = new BulkReduceScatter().schedule(SHAPE, RsOptions.DEFAULTS.withBulkStaged(true)).plan(1);
        assertTrue(steps(p, PlanStep.Gemm.class).isEmpty());
        assertEquals(List.of(StreamRole.COMM, StreamRole.COMM, StreamRole.COMM), p.streams(), "one per peer");
        List<PlanStep.Copy> copies = steps(p, PlanStep.Copy.class);
        assertEquals(3, copies.size());
        Set<Integer> streams = new HashSet<>();
        for (PlanStep.Copy c : copies) {
            assertNotEquals(1, c.src().rank(), "a copy reads a peer");
            assertEquals(1, c.dst().rank(), "into this rank's scratch");
            assertEquals(BufferRole.SCRATCH, c.dst().buffer());
            streams.add(c.stream());
        }
        assertEquals(3, streams.size());
        PlanStep.Reduce r = steps(p, PlanStep.Reduce.class).getFirst();
        assertTrue(r.sources().stream().allMatch(s -> s.rank() == 1), "the sum reads local memory only");
        assertEquals(4, r.sources().size());
        PlanStep last = p.steps().getLast();
        assertTrue(last instanceof PlanStep.WaitSignal w && w.flag() >= SHAPE.tp() && w.count() == 1,
                "the call returns only when every peer has finished reading: " + last);
    }

    @Test
    void oneShotIsOneGemmAndOneReduce() {
        Plan p = new OneShotGemmReduceScatter().schedule(SHAPE, RsOptions.DEFAULTS).plan(3);
        assertEquals(1, steps(p, PlanStep.Gemm.class).size());
        assertEquals(1, steps(p, PlanStep.Reduce.class).size());
        assertEquals(4, steps(p, PlanStep.Reduce.class).getFirst().sources().size());
        assertEquals(List.of(StreamRole.COMPUTE), p.streams());
    }

    @Test
    void everyScheduleNamesItsMethodInItsPlans() {
        for (RsOverlapMethod m : registered()) {
            RsSchedule s = m.schedule(SHAPE, RsOptions.DEFAULTS.withNumSplits(3));
            assertEquals(m, s.method());
            for (Plan p : s.plans()) {
                assertEquals("rs", p.op());
                assertEquals(m.name(), p.method());
            }
        }
    }

    /** Every RS method registered for ServiceLoader (this module's, on the module path of its tests). */
    static List<RsOverlapMethod> registered() {
        return MethodRegistry.load().of(Collective.REDUCE_SCATTER).stream().map(RsOverlapMethod.class::cast).toList();
    }
}
