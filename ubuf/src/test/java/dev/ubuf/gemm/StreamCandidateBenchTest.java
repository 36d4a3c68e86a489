package dev.ubuf.gemm;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The tuner's samples: back-to-back runs worth about half a millisecond, at least one, at most the cap. */
class StreamCandidateBenchTest {
    @Test
    void aSampleHoldsAboutHalfAMillisecondOfRuns() {
        assertEquals(1, StreamCandidateBench.runsPerSample(1.6), "a long GEMM is its own sample");
        assertEquals(5, StreamCandidateBench.runsPerSample(0.1));
        assertEquals(StreamCandidateBench.MAX_RUNS_PER_SAMPLE, StreamCandidateBench.runsPerSample(0.001), "capped");
        assertEquals(StreamCandidateBench.MAX_RUNS_PER_SAMPLE, StreamCandidateBench.runsPerSample(0));
        assertEquals(StreamCandidateBench.MAX_RUNS_PER_SAMPLE, StreamCandidateBench.runsPerSample(Double.NaN));
    }
}
