package dev.ubuf.bench;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** How many runs a timing graph holds: about {@link EventTimer#GRAPH_MS} of GPU time, never 0, never above the cap. */
class EventTimerTest {
    @Test
    void aGraphHoldsAboutHalfAMillisecondOfRuns() {
        assertEquals(1, EventTimer.runsPerGraph(1.6), "a GEMM longer than the target is one run per graph");
        assertEquals(1, EventTimer.runsPerGraph(0.5));
        assertEquals(5, EventTimer.runsPerGraph(0.1));
        assertEquals(50, EventTimer.runsPerGraph(0.01));
        assertEquals(EventTimer.MAX_RUNS_PER_GRAPH, EventTimer.runsPerGraph(0.0001), "capped");
        assertEquals(EventTimer.MAX_RUNS_PER_GRAPH, EventTimer.runsPerGraph(0), "an unmeasurable run: the cap");
        assertEquals(EventTimer.MAX_RUNS_PER_GRAPH, EventTimer.runsPerGraph(Double.NaN));
    }
}
