package dev.ubuf.bench;

import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaEvent;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.cuda.StreamPriority;
import org.apache.commons.math3.stat.descriptive.DescriptiveStatistics;

/**
 * Times stream work on one GPU with CUDA events: warm-ups, then one event pair per timed run; medians and spread.
 *
 * <p>Each timed run is enqueued while its stream is held on a device flag (the events, the work, then the flag is
 * released), so the pair measures what the GPU did and not how long the host took to enqueue it: a cuBLASLt call from
 * Java costs the host tens of microseconds, as long as a small GEMM runs, and an idle GPU would wait that out between
 * the start event and the work. The first run of every candidate is not held: whatever it does once on the host
 * (choosing or tuning a GEMM's algorithm) must not happen while the stream waits.
 */
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
        java.util.LinkedHashMap<String, Runnable> one = new java.util.LinkedHashMap<>();
        one.put("work", work);
        return interleaved(ctx, stream, warmup, iters, one, between).get("work");
    }

    /**
     * Times several candidates round-robin: each iteration runs every candidate once, in order, so slow drift of
     * the GPU (clocks, temperature, a neighbour) affects all of them alike and their ratios stay fair.
     */
    public static java.util.Map<String, DescriptiveStatistics> interleaved(CudaContext ctx, CudaStream stream,
            int warmup, int iters, java.util.LinkedHashMap<String, Runnable> candidates, Runnable between) {
        return interleaved(ctx, stream, warmup, iters, candidates, between, java.time.Duration.ZERO);
    }

    /**
     * As above, with a heat phase after the first (untimed, unheld) run of each candidate: the candidates run back to
     * back, round-robin, for {@code heat} of wall time before the warm-ups. A GPU that has been idle runs its first
     * second of dense work at boost clocks, before its power limit pulls the clocks down (an H200 goes from 1980 to
     * about 1450 MHz at 690 W on large GEMMs): two programs timed from different power histories differ by up to 10%
     * for the same kernel. Heating each shape first times both in the steady state a training step runs in.
     */
    public static java.util.Map<String, DescriptiveStatistics> interleaved(CudaContext ctx, CudaStream stream,
            int warmup, int iters, java.util.LinkedHashMap<String, Runnable> candidates, Runnable between,
            java.time.Duration heat) {
        java.util.Map<String, DescriptiveStatistics> stats = new java.util.LinkedHashMap<>();
        candidates.keySet().forEach(k -> stats.put(k, new DescriptiveStatistics()));
        for (Runnable c : candidates.values()) {
            between.run();
            c.run();
        }
        stream.synchronize();
        heat(stream, candidates, between, heat);
        try (Hold hold = new Hold(ctx); CudaEvent start = ctx.createEvent(true); CudaEvent end = ctx.createEvent(true)) {
            for (int i = 0; i < warmup + iters; i++) {
                for (var c : candidates.entrySet()) {
                    between.run();
                    double ms = hold.sample(stream, start, end, c.getValue());
                    if (i >= warmup) {
                        stats.get(c.getKey()).addValue(ms);
                    }
                }
            }
        }
        return stats;
    }

    /** Runs the candidates round-robin until {@code heat} has passed, at most a few rounds ahead of the GPU. */
    private static void heat(CudaStream stream, java.util.LinkedHashMap<String, Runnable> candidates, Runnable between,
                             java.time.Duration heat) {
        if (heat.isZero() || heat.isNegative()) {
            return;
        }
        long end = System.nanoTime() + heat.toNanos();
        int rounds = 0;
        while (System.nanoTime() < end) {
            for (Runnable c : candidates.values()) {
                between.run();
                c.run();
            }
            if (++rounds % HEAT_ROUNDS_AHEAD == 0) {
                stream.synchronize(); // bounds the overshoot past the deadline to a few rounds of GPU work
            }
        }
        stream.synchronize();
    }

    /** Rounds the heat phase enqueues between synchronizations: enough to keep the GPU busy while the host enqueues. */
    private static final int HEAT_ROUNDS_AHEAD = 4;

    /** The device flag a timed run's stream waits on while the run is enqueued, and the stream that releases it. */
    private static final class Hold implements AutoCloseable {
        private final CudaStream releaser;
        private final DeviceBuffer flag;
        private int value;

        Hold(CudaContext ctx) {
            releaser = ctx.createStream(StreamPriority.HIGH);
            try {
                flag = ctx.allocate(Integer.BYTES);
                releaser.fill32(flag.address(), 0, 1);
                releaser.synchronize();
            } catch (RuntimeException e) {
                releaser.close();
                throw e;
            }
        }

        double sample(CudaStream stream, CudaEvent start, CudaEvent end, Runnable work) {
            int v = ++value;
            stream.waitValue32(flag.address(), v);
            try {
                start.record(stream);
                work.run();
                end.record(stream);
            } finally {
                releaser.writeValue32(flag.address(), v); // also when enqueueing failed: never leave the stream held
            }
            end.synchronize();
            return end.elapsedMillisSince(start);
        }

        @Override
        public void close() {
            try {
                releaser.synchronize();
                flag.close();
            } finally {
                releaser.close();
            }
        }
    }
}
