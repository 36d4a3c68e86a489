package dev.ubuf.gemm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The online tuner's rule that a candidate faster alone than cuBLASLt's first choice must also be faster back to back
 * before it may replace it, on given times: which candidates are timed back to back, which are screened out, and what
 * the tuner then picks.
 */
class StreamCandidateBenchTest {
    static final double INF = Double.POSITIVE_INFINITY;

    @Test
    void theFastestFewFasterAloneThanTheFirstAreChallengersFastestFirst() {
        double[] alone = {0.020, 0.017, 0.025, Double.NaN, 0.019, 0.016, 0.018, 0.0205};
        assertEquals(List.of(5, 1, 6), StreamCandidateBench.challengers(alone));
        assertEquals(StreamCandidateBench.MAX_CHALLENGERS, StreamCandidateBench.challengers(alone).size());
        assertEquals(List.of(), StreamCandidateBench.challengers(new double[] {0.01, 0.02, 0.03}), "none faster");
        assertEquals(List.of(), StreamCandidateBench.challengers(new double[] {Double.NaN, 0.01}),
                "nothing to confirm against when the first did not run");
        assertEquals(List.of(1, 2), StreamCandidateBench.challengers(new double[] {0.03, 0.02, 0.02}),
                "equal times: the lower index first");
    }

    @Test
    void aChallengerSlowerBackToBackIsScreenedOutAndTheTunerKeepsTheFirst() {
        // 256x4096x3072 on an H200: rank 5 won alone by 15%, ran 10% slower back to back.
        double[] alone = {0.0202, 0.0210, 0.0230, 0.0240, 0.0250, 0.0172, 0.0260, 0.0270};
        List<Integer> challengers = StreamCandidateBench.challengers(alone);
        assertEquals(List.of(5), challengers);
        StreamCandidateBench.screen(alone, challengers, new double[] {0.0127, 0.0139});
        assertEquals(INF, alone[5]);
        assertEquals(0, GemmTuner.fastest(alone), "the first stays");
    }

    @Test
    void aChallengerFasterBothWaysStaysAndTheTunerTakesIt() {
        double[] alone = {0.1730, 0.1800, 0.1570, 0.1900};
        List<Integer> challengers = StreamCandidateBench.challengers(alone);
        StreamCandidateBench.screen(alone, challengers, new double[] {0.1908, 0.1832});
        assertArrayEquals(new double[] {0.1730, 0.1800, 0.1570, 0.1900}, alone, "nothing screened out");
        assertEquals(2, GemmTuner.fastest(alone));
    }

    @Test
    void onlyTheConfirmedRemainAmongThoseFasterAlone() {
        double[] alone = {0.050, 0.040, 0.041, 0.042, 0.043, 0.060};
        List<Integer> challengers = StreamCandidateBench.challengers(alone);
        assertEquals(List.of(1, 2, 3), challengers);
        // 1: slower back to back; 2: faster by exactly the margin (not below it); 3: faster by 2%; 4 never timed.
        double first = 0.045;
        StreamCandidateBench.screen(alone, challengers, new double[] {first, 0.046,
                first * (1 - StreamCandidateBench.BURST_MARGIN), first * 0.98});
        assertArrayEquals(new double[] {0.050, INF, INF, 0.042, INF, 0.060}, alone);
        assertEquals(3, GemmTuner.fastest(alone, 0.0));
    }

    @Test
    void aChallengerNotTimedBackToBackIsScreenedOut() {
        double[] alone = {0.050, 0.040, 0.041};
        StreamCandidateBench.screen(alone, List.of(1, 2), new double[] {0.045, Double.NaN, 0.040});
        assertArrayEquals(new double[] {0.050, INF, 0.041}, alone);
        double[] firstNotTimed = {0.050, 0.040};
        StreamCandidateBench.screen(firstNotTimed, List.of(1), new double[] {Double.NaN, 0.030});
        assertArrayEquals(new double[] {0.050, INF}, firstNotTimed, "nothing to compare with: the first stays");
        assertThrows(IllegalArgumentException.class,
                () -> StreamCandidateBench.screen(new double[] {0.05, 0.04}, List.of(1), new double[] {0.05}));
    }

    @Test
    void aBackToBackGraphHoldsAboutTwoHundredMicrosecondsOfRuns() {
        assertEquals(16, StreamCandidateBench.burstRuns(0.0125));
        assertEquals(1, StreamCandidateBench.burstRuns(10.0));
        assertEquals(StreamCandidateBench.MAX_BURST_RUNS, StreamCandidateBench.burstRuns(0.001));
        assertEquals(StreamCandidateBench.MAX_BURST_RUNS, StreamCandidateBench.burstRuns(0.0));
    }

    @Test
    void aGraphReplaysAloneForAboutFiftyMillisecondsBeforeItsTimedReplays() {
        assertEquals(250, StreamCandidateBench.heatReplays(0.2));
        assertEquals(15, StreamCandidateBench.heatReplays(3.4));
        assertEquals(1, StreamCandidateBench.heatReplays(80.0), "a replay longer than the heat still runs once");
        assertEquals(StreamCandidateBench.MAX_HEAT_REPLAYS, StreamCandidateBench.heatReplays(0.001));
        assertEquals(StreamCandidateBench.MAX_HEAT_REPLAYS, StreamCandidateBench.heatReplays(0.0));
    }
}
