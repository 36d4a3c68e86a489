package dev.ubuf.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class ClockSamplerTest {
    @Test
    void aWindowTakesTheSamplesInsideItAndTalliesTheirClockAndLimits() {
        try (ClockSampler s = ClockSampler.unstarted()) {
            s.record(100, 1980, 0);
            s.record(200, 1500, ClockSampler.SW_POWER_CAP);
            s.record(300, 1400, ClockSampler.SW_POWER_CAP | 0x8L);
            s.record(400, 1900, 0x1L); // idle: no limit counted
            s.record(500, 1000, ClockSampler.SW_POWER_CAP);
            ClockSampler.Tally t = new ClockSampler.Tally();
            s.addTo(t, 150, 400); // 200, 300, 400 (both ends inclusive)
            assertEquals(3, t.samples());
            assertEquals((1500 + 1400 + 1900) / 3.0, t.meanMhz(), 1e-9);
            assertEquals(2 / 3.0, t.powerCapShare(), 1e-12);
            assertEquals(1 / 3.0, t.otherSlowdownShare(), 1e-12);
            s.addTo(t, 0, 100); // a second window adds to the same tally
            assertEquals(4, t.samples());
            assertEquals((1500 + 1400 + 1900 + 1980) / 4.0, t.meanMhz(), 1e-9);
            ClockSampler.Tally none = new ClockSampler.Tally();
            s.addTo(none, 501, 900);
            assertEquals(0, none.samples());
            assertTrue(Double.isNaN(none.meanMhz()) && Double.isNaN(none.powerCapShare()));
        }
    }

    @Test
    void withoutNvmlOrTheGpuStartSaysWhy() {
        // No GPU here (CI), or no GPU at this bus id on a GPU machine: either way a message, never a hang.
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> ClockSampler.start("0000:ff:1f.7", 250).close());
        assertTrue(e.getMessage().startsWith("GPU clocks cannot be sampled through NVML"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> ClockSampler.start("0000:18:00.0", 0));
    }
}
