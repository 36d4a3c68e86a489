package dev.ubuf.timing;

import org.apache.commons.math3.stat.descriptive.DescriptiveStatistics;

/**
 * The statistics of one candidate's samples (ms) that benchmarks and the planner report: how many, the extremes,
 * the mean, and the 10th, 50th and 90th percentiles (Commons Math's default estimation).
 */
public record TimingStats(int count, double min, double p10, double median, double p90, double max, double mean) {
    public TimingStats {
        if (count < 1) {
            throw new IllegalArgumentException("statistics need at least one sample, got " + count);
        }
    }

    /** The statistics of {@code samples} (at least one). */
    public static TimingStats of(double... samples) {
        if (samples.length == 0) {
            throw new IllegalArgumentException("statistics need at least one sample, got none");
        }
        DescriptiveStatistics d = new DescriptiveStatistics(samples);
        return new TimingStats(samples.length, d.getMin(), d.getPercentile(10), d.getPercentile(50),
                d.getPercentile(90), d.getMax(), d.getMean());
    }
}
