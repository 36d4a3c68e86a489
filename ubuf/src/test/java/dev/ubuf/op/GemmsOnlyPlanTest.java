package dev.ubuf.op;

import dev.ubuf.plan.BufferRole;
import dev.ubuf.plan.Plan;
import dev.ubuf.plan.PlanBuilder;
import dev.ubuf.plan.PlanStep;
import dev.ubuf.plan.Region;
import dev.ubuf.plan.StreamRole;
import dev.ubuf.tensor.DType;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** A plan's GEMM decomposition, which benchmarks time for the ideal: the same GEMMs, in order, on one stream. */
class GemmsOnlyPlanTest {
    @Test
    void keepsEveryGemmInOrderOnOneStreamAndDropsAllElse() {
        PlanBuilder b = new PlanBuilder("ag", "toy", 0, 2);
        b.matrix(BufferRole.INPUT, DType.BF16, 4, 8);
        b.matrix(BufferRole.WEIGHT, DType.BF16, 8, 6);
        b.matrix(BufferRole.OUTPUT, DType.BF16, 4, 6);
        b.matrix(BufferRole.UBUF, DType.BF16, 4, 8);
        int comm = b.stream(StreamRole.COMM);
        int c0 = b.stream(StreamRole.COMPUTE);
        int c1 = b.stream(StreamRole.COMPUTE);
        b.flag(1);
        PlanStep.Gemm g0 = new PlanStep.Gemm(c0, Region.rows(BufferRole.INPUT, 0, 0, 2, 8),
                Region.rows(BufferRole.WEIGHT, 0, 0, 8, 6), Region.rows(BufferRole.OUTPUT, 0, 0, 2, 6), false);
        PlanStep.Gemm g1 = new PlanStep.Gemm(c1, Region.rows(BufferRole.UBUF, 0, 2, 2, 8),
                Region.rows(BufferRole.WEIGHT, 0, 0, 8, 6), Region.rows(BufferRole.OUTPUT, 0, 2, 2, 6), true);
        b.add(g0);
        b.add(new PlanStep.Copy(comm, Region.rows(BufferRole.INPUT, 0, 0, 2, 8), Region.rows(BufferRole.UBUF, 1, 0, 2, 8)));
        b.add(new PlanStep.Signal(comm, 1, 0));
        b.add(new PlanStep.WaitSignal(c1, 0, 1));
        b.add(g1);
        Plan gemms = b.build().gemmsOnly();
        assertEquals(List.of(StreamRole.COMPUTE), gemms.streams());
        assertEquals(0, gemms.flagCount());
        assertEquals(List.of(new PlanStep.Gemm(0, g0.a(), g0.b(), g0.c(), false),
                new PlanStep.Gemm(0, g1.a(), g1.b(), g1.c(), true)), gemms.steps());
        assertEquals("toy-gemms", gemms.method());
    }

    @Test
    void onTheirStreamsKeepsEachGemmOnItsComputeStreamRenumbered() {
        PlanBuilder b = new PlanBuilder("rs", "toy", 0, 2);
        b.matrix(BufferRole.INPUT, DType.BF16, 4, 8);
        b.matrix(BufferRole.WEIGHT, DType.BF16, 8, 6);
        b.matrix(BufferRole.OUTPUT, DType.BF16, 2, 6);
        b.matrix(BufferRole.UBUF, DType.BF16, 4, 6);
        int comm = b.stream(StreamRole.COMM);
        int c0 = b.stream(StreamRole.COMPUTE);
        int c1 = b.stream(StreamRole.COMPUTE);
        b.flag(1);
        PlanStep.Gemm g0 = new PlanStep.Gemm(c1, Region.rows(BufferRole.INPUT, 0, 0, 2, 8),
                Region.rows(BufferRole.WEIGHT, 0, 0, 8, 6), Region.rows(BufferRole.UBUF, 0, 0, 2, 6), false);
        PlanStep.Gemm g1 = new PlanStep.Gemm(c0, Region.rows(BufferRole.INPUT, 0, 2, 2, 8),
                Region.rows(BufferRole.WEIGHT, 0, 0, 8, 6), Region.rows(BufferRole.UBUF, 0, 2, 2, 6), false);
        PlanStep.Gemm g2 = new PlanStep.Gemm(c1, Region.rows(BufferRole.INPUT, 0, 0, 2, 8),
                Region.rows(BufferRole.WEIGHT, 0, 0, 8, 6), Region.rows(BufferRole.OUTPUT, 0, 0, 2, 6), true);
        b.add(g0);
        b.add(new PlanStep.Signal(comm, 1, 0));
        b.add(new PlanStep.WaitSignal(c0, 0, 1));
        b.add(g1);
        b.add(g2);
        Plan gemms = b.build().gemmsOnTheirStreams();
        assertEquals(List.of(StreamRole.COMPUTE, StreamRole.COMPUTE), gemms.streams(), "the comm stream is gone");
        assertEquals(0, gemms.flagCount());
        assertEquals(0, gemms.eventCount());
        // c1 is met first: stream 0; c0 second: stream 1. Order and accumulate flags kept.
        assertEquals(List.of(new PlanStep.Gemm(0, g0.a(), g0.b(), g0.c(), false),
                new PlanStep.Gemm(1, g1.a(), g1.b(), g1.c(), false),
                new PlanStep.Gemm(0, g2.a(), g2.b(), g2.c(), true)), gemms.steps());
        assertEquals("toy-gemms-streams", gemms.method());
    }

    @Test
    void aBiasThatRidesInAGemmsEpilogueStaysWithItAndOtherBiasesGo() {
        for (DType t : new DType[]{DType.BF16, DType.FP32}) {
            PlanBuilder b = new PlanBuilder("rs", "toy", 0, 2);
            b.matrix(BufferRole.INPUT, DType.BF16, 4, 8);
            b.matrix(BufferRole.WEIGHT, DType.BF16, 8, 6);
            b.matrix(BufferRole.OUTPUT, t, 2, 6);
            b.matrix(BufferRole.BIAS, t, 1, 6);
            b.matrix(BufferRole.UBUF, t, 2, 6);
            int c0 = b.stream(StreamRole.COMPUTE);
            int c1 = b.stream(StreamRole.COMPUTE);
            Region out = Region.rows(BufferRole.OUTPUT, 0, 0, 2, 6);
            PlanStep.Gemm g0 = new PlanStep.Gemm(c1, Region.rows(BufferRole.INPUT, 0, 0, 2, 8),
                    Region.rows(BufferRole.WEIGHT, 0, 0, 8, 6), out, false, null, Region.rows(BufferRole.UBUF, 0, 0, 2, 6));
            PlanStep.Gemm g1 = new PlanStep.Gemm(c0, Region.rows(BufferRole.INPUT, 0, 2, 2, 8),
                    Region.rows(BufferRole.WEIGHT, 0, 0, 8, 6), out, false);
            b.add(g0);
            b.add(new PlanStep.AddBias(c1, out)); // rides in g0's epilogue (bf16)
            b.add(g1);
            b.add(new PlanStep.Reduce(c0, List.of(Region.rows(BufferRole.UBUF, 0, 0, 2, 6)), out, true));
            b.add(new PlanStep.AddBias(c0, out)); // after a reduction: not a GEMM's
            Plan plan = b.build();
            List<PlanStep> expected = t == DType.BF16
                    ? List.of(g0.onStream(0), new PlanStep.AddBias(0, out), g1.onStream(0))
                    : List.of(g0.onStream(0), g1.onStream(0)); // no fp32 bias epilogue: the GEMMs alone
            assertEquals(expected, plan.gemmsOnly().steps(), t.toString());
            assertEquals(t == DType.BF16, Plan.biasInEpilogue(g0, new PlanStep.AddBias(c1, out),
                    role -> plan.matrix(role).dtype()));
            assertEquals(false, Plan.biasInEpilogue(g0, new PlanStep.AddBias(c0, out),
                    role -> plan.matrix(role).dtype()), "another stream");
        }
    }

    @Test
    void aPlanWithoutGemmHasNoDecomposition() {
        PlanBuilder b = new PlanBuilder("ag", "bulk", 0, 1);
        b.matrix(BufferRole.UBUF, DType.BF16, 4, 8);
        assertThrows(IllegalStateException.class, () -> b.build().gemmsOnly());
        assertThrows(IllegalStateException.class, () -> b.build().gemmsOnTheirStreams());
    }
}
