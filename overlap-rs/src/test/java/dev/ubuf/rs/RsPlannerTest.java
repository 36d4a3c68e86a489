package dev.ubuf.rs;

import dev.ubuf.tensor.DType;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

class RsPlannerTest {
    private final RsPlanner planner = new RsPlanner(1024, 8192, RsOptions.DEFAULTS);

    private static RsShape shape(int tp, long m, long k, long n) {
        return new RsShape(tp, m, k, n, DType.BF16, false);
    }

    @Test
    void smallMGoesOneShot() {
        assertEquals(RsMethod.ONESHOT, planner.choose(shape(8, 1024, 4096, 8192)));
        assertInstanceOf(OneShotGemmReduceScatter.class, planner.schedule(shape(8, 512, 4096, 8192)));
    }

    @Test
    void largeMWithSmallKGoesPipelineAndLargeKGoesRing() {
        assertEquals(RsMethod.PIPELINE, planner.choose(shape(8, 8192, 3584, 8192)));
        assertEquals(RsMethod.RING, planner.choose(shape(8, 8192, 8192, 8192)));
    }

    @Test
    void fallsBackWhenThePreferredMethodCannotRunTheShape() {
        // n = 8190 is not divisible by 4 splits: pipeline cannot run it, ring can
        assertEquals(RsMethod.RING, planner.choose(shape(8, 8192, 1024, 8190)));
        // tp = 16 exceeds the pull-reduce fan-in: even small m goes ring
        assertEquals(RsMethod.RING, planner.choose(shape(16, 64, 1024, 8192)));
    }

    @Test
    void failsWhenNoMethodFits() {
        // tp = 16 (no pull method) and 1 row per chunk with 2 ring sub-chunks
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> planner.choose(shape(16, 16, 8, 8)));
        assertEquals(true, e.getMessage().startsWith("no RS method can run"), e.getMessage());
    }

    @Test
    void rejectsNegativeThresholds() {
        assertThrows(IllegalArgumentException.class, () -> new RsPlanner(-1, 0, RsOptions.DEFAULTS));
    }

    @org.junit.jupiter.api.Test
    void partialsTravelInTheOpsDtypeOnlyAtTpTwoWhereOneRoundingIsAllThereIs() {
        var two = RsPlanner.DEFAULT.optionsFor(new RsShape(2, 8192, 8192, 8192, dev.ubuf.tensor.DType.BF16, false));
        org.junit.jupiter.api.Assertions.assertEquals(dev.ubuf.tensor.DType.BF16, two.ringPartialDtype());
        var four = RsPlanner.DEFAULT.optionsFor(new RsShape(4, 8192, 8192, 8192, dev.ubuf.tensor.DType.BF16, false));
        org.junit.jupiter.api.Assertions.assertEquals(dev.ubuf.tensor.DType.FP32, four.ringPartialDtype(),
                "with more hops the running sum would be re-rounded at every hop");
    }

    @org.junit.jupiter.api.Test
    void largeChunksAreCutInFourSubChunks() {
        var big = RsPlanner.DEFAULT.optionsFor(new RsShape(2, 8192, 8192, 8192, dev.ubuf.tensor.DType.BF16, false));
        var small = RsPlanner.DEFAULT.optionsFor(new RsShape(2, 4096, 8192, 8192, dev.ubuf.tensor.DType.BF16, false));
        org.junit.jupiter.api.Assertions.assertEquals(4, big.ringSubChunks());
        org.junit.jupiter.api.Assertions.assertEquals(RsOptions.DEFAULTS.ringSubChunks(), small.ringSubChunks());
    }
}
