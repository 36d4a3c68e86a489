package dev.ubuf.bench;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * How many runs a timing graph holds: about {@link EventTimer#GRAPH_MS} of GPU time at the nominal rate, from the
 * shape alone (so both sides of a comparison hold the same), never 0, never above the cap.
 */
class EventTimerTest {
    @Test
    void aGraphHoldsAboutHalfAMillisecondOfRunsAtTheNominalRate() {
        assertEquals(1, EventTimer.runsPerGraph(8192, 8192, 8192), "1.1 TFLOP: longer than the target, one run");
        assertEquals(2, EventTimer.runsPerGraph(8192, 3072, 4096), "0.2 TFLOP: 0.29 ms nominal");
        assertEquals(14, EventTimer.runsPerGraph(1024, 5120, 2560), "0.038 ms nominal");
        assertEquals(EventTimer.MAX_RUNS_PER_GRAPH, EventTimer.runsPerGraph(256, 4096, 2048), "6 us nominal: capped");
        assertEquals(EventTimer.MAX_RUNS_PER_GRAPH, EventTimer.runsPerGraph(1, 1, 1));
    }

    @Test
    void theRunsDependOnTheShapeOnlyThroughItsFlops() {
        assertEquals(EventTimer.runsPerGraph(1024, 5120, 2560), EventTimer.runsPerGraph(2560, 1024, 5120));
    }

    @Test
    void aShapeWithAZeroDimensionIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> EventTimer.runsPerGraph(0, 8, 8));
    }
}
