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
}
