package dev.ubuf.rs;

import dev.ubuf.tensor.DType;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class RsShapeAndOptionsTest {

    private static void assertRejected(String expectedFragment, Runnable r) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, r::run);
        assertTrue(e.getMessage().contains(expectedFragment),
                "message '" + e.getMessage() + "' should mention '" + expectedFragment + "'");
    }

    @Test
    void shapeGivesRowsPerRank() {
        assertEquals(3, new RsShape(4, 12, 8, 16, DType.BF16, false).rowsPerRank());
    }

    @Test
    void shapeRejectsRowsNotDivisibleByTp() {
        assertRejected("m=10 is not divisible by tp=4", () -> new RsShape(4, 10, 8, 8, DType.BF16, false));
    }

    @Test
    void shapeRejectsSingleRankAndNonPositiveDims() {
        assertRejected("tp >= 2", () -> new RsShape(1, 8, 8, 8, DType.BF16, false));
        assertRejected("must be positive", () -> new RsShape(2, 8, 0, 8, DType.BF16, false));
        assertRejected("must be positive", () -> new RsShape(2, 8, 8, -1, DType.BF16, false));
    }

    @Test
    void shapeRejectsReservedDtype() {
        assertRejected("reserved", () -> new RsShape(2, 8, 8, 8, DType.FP8_E4M3, false));
    }

    @Test
    void optionsRejectOutOfRangeKnobs() {
        RsOptions d = RsOptions.DEFAULTS;
        assertRejected("computeStreams must be 1..3", () -> d.withComputeStreams(4));
        assertRejected("computeStreams must be 1..3", () -> d.withComputeStreams(0));
        assertRejected("numSplits", () -> d.withNumSplits(0));
        assertRejected("gemmSmMargin", () -> d.withGemmSmMargin(-1));
        assertRejected("ringSubChunks", () -> d.withRingSubChunks(0));
        assertRejected("ringSlots must be >= 2", () -> d.withRingSlots(1));
        assertRejected("reserved", () -> d.withRingPartialDtype(DType.FP8_E5M2));
    }

    @Test
    void withersChangeOneKnob() {
        RsOptions o = RsOptions.DEFAULTS.withNumSplits(6);
        assertEquals(6, o.numSplits());
        assertEquals(RsOptions.DEFAULTS.computeStreams(), o.computeStreams());
        assertEquals(RsOptions.DEFAULTS.ringPartialDtype(), o.ringPartialDtype());
    }

    @Test
    void pipelineRejectsSplitsNotDividingN() {
        RsShape s = new RsShape(2, 8, 8, 10, DType.BF16, false);
        assertRejected("n=10 is not divisible by numSplits=4",
                () -> new PipelinedGemmReduceScatter().schedule(s, RsOptions.DEFAULTS.withNumSplits(4)));
    }

    @Test
    void pullMethodsRejectMoreThanEightRanks() {
        RsShape s = new RsShape(16, 32, 8, 8, DType.BF16, false);
        for (RsOverlapMethod m : List.of(new PipelinedGemmReduceScatter(), new BulkReduceScatter(),
                new OneShotGemmReduceScatter())) {
            assertRejected("exceeds 8 sources", () -> m.schedule(s, RsOptions.DEFAULTS.withNumSplits(1)));
        }
        assertEquals(16, new RingExchangeGemmReduceScatter().schedule(s, RsOptions.DEFAULTS).plans().size());
    }

    @Test
    void ringRejectsMoreSubChunksThanRows() {
        RsShape s = new RsShape(4, 8, 8, 8, DType.BF16, false);
        assertRejected("ringSubChunks=3 exceeds m/tp=2",
                () -> new RingExchangeGemmReduceScatter().schedule(s, RsOptions.DEFAULTS.withRingSubChunks(3)));
    }

    @Test
    void planRejectsRankOutsideDomain() {
        RsSchedule s = new OneShotGemmReduceScatter().schedule(new RsShape(2, 8, 8, 8, DType.BF16, false),
                RsOptions.DEFAULTS);
        assertRejected("rank 2 outside domain", () -> s.plan(2));
        assertRejected("rank -1 outside domain", () -> s.plan(-1));
    }
}
