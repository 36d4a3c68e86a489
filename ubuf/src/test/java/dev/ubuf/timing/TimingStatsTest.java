package dev.ubuf.timing;

import org.apache.commons.math3.stat.descriptive.DescriptiveStatistics;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class TimingStatsTest {
    @Test
    void matchesCommonsMathOnTheSameSamples() {
        double[] samples = {0.9, 1.4, 1.1, 3.0, 1.0, 1.2, 0.95, 1.05, 1.3, 2.2, 1.15};
        DescriptiveStatistics d = new DescriptiveStatistics(samples);
        TimingStats s = TimingStats.of(samples);
        assertEquals(samples.length, s.count());
        assertEquals(d.getMin(), s.min());
        assertEquals(d.getPercentile(10), s.p10());
        assertEquals(d.getPercentile(50), s.median());
        assertEquals(d.getPercentile(90), s.p90());
        assertEquals(d.getMax(), s.max());
        assertEquals(d.getMean(), s.mean(), 1e-15);
    }

    @Test
    void oneSampleIsEveryStatistic() {
        TimingStats s = TimingStats.of(2.5);
        assertEquals(new TimingStats(1, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5), s);
    }

    @Test
    void refusesNoSamples() {
        assertThrows(IllegalArgumentException.class, TimingStats::of);
        assertThrows(IllegalArgumentException.class, () -> new TimingStats(0, 0, 0, 0, 0, 0, 0));
    }
}
