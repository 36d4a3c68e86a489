package dev.ubuf.bench;

import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaEvent;
import dev.ubuf.cuda.CudaStream;
import org.apache.commons.math3.stat.descriptive.DescriptiveStatistics;

/** Times stream work with CUDA events: warm-up runs, then one event pair per timed run; medians and spread. */
public final class EventTimer {
    private EventTimer() {
    }

    /** Per-run milliseconds of {@code work} issued on {@code stream}. */
    public static DescriptiveStatistics time(CudaContext ctx, CudaStream stream, int warmup, int iters, Runnable work) {
        return time(ctx, stream, warmup, iters, work, () -> { });
    }

    /** As above; {@code between} runs before each run, outside the timed region (e.g. a barrier). */
    public static DescriptiveStatistics time(CudaContext ctx, CudaStream stream, int warmup, int iters, Runnable work,
                                             Runnable between) {
        for (int i = 0; i < warmup; i++) {
            between.run();
            work.run();
        }
        stream.synchronize();
        DescriptiveStatistics stats = new DescriptiveStatistics();
        try (CudaEvent start = ctx.createEvent(true); CudaEvent end = ctx.createEvent(true)) {
            for (int i = 0; i < iters; i++) {
                between.run();
                start.record(stream);
                work.run();
                end.record(stream);
                end.synchronize();
                stats.addValue(end.elapsedMillisSince(start));
            }
        }
        return stats;
    }

    /**
     * Times several candidates round-robin: each iteration runs every candidate once, in order, so slow drift of
     * the GPU (clocks, temperature, a neighbour) affects all of them alike and their ratios stay fair.
     */
    public static java.util.Map<String, DescriptiveStatistics> interleaved(CudaContext ctx, CudaStream stream,
            int warmup, int iters, java.util.LinkedHashMap<String, Runnable> candidates, Runnable between) {
        java.util.Map<String, DescriptiveStatistics> stats = new java.util.LinkedHashMap<>();
        candidates.keySet().forEach(k -> stats.put(k, new DescriptiveStatistics()));
        try (CudaEvent start = ctx.createEvent(true); CudaEvent end = ctx.createEvent(true)) {
            for (int i = 0; i < warmup + iters; i++) {
                for (var c : candidates.entrySet()) {
                    between.run();
                    start.record(stream);
                    c.getValue().run();
                    end.record(stream);
                    end.synchronize();
                    if (i >= warmup) {
                        stats.get(c.getKey()).addValue(end.elapsedMillisSince(start));
                    }
                }
            }
        }
        return stats;
    }
}
