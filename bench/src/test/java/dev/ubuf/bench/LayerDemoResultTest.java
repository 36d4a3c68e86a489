package dev.ubuf.bench;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The demo's medians over the timed iterations: the warm-up ones left out, per mode. */
class LayerDemoResultTest {
    @Test
    void mediansSkipTheWarmUpPerMode() {
        double[][] step = {{9, 1, 3, 2}, {9, 5, 6, 7}};
        double[][] host = {{9, 0.1, 0.3, 0.2}, {9, 0.5, 0.5, 0.5}};
        double[][] spread = {{9, 0.02, 0.04, 0.03}, {9, 0.001, 0.002, 0.003}};
        LayerDemo.Result r = new LayerDemo.Result("gpu", new double[4], new double[4], null, null, step, 1, null,
                null, null, null, null, 0, 0, 0, host, spread, Optional.empty(), List.of(), null, Map.of());
        assertEquals(2, r.median(0));
        assertEquals(6, r.median(1));
        assertEquals(0.2, r.hostMedian(0), 1e-12);
        assertEquals(0.03, r.rankSpreadMedian(0), 1e-12, "the warm-up's 9 left out");
        assertEquals(0.002, r.rankSpreadMedian(1), 1e-12);
    }
}
