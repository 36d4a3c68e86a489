package dev.ubuf.bench;

import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaEvent;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.cuda.StreamPriority;
import org.apache.commons.math3.stat.descriptive.DescriptiveStatistics;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Times stream work on one GPU with CUDA events, back to back, as a training step runs its GEMMs: one event pair per
 * run, medians and spread.
 *
 * <p>Why back to back, after a heat phase: a large GEMM holds an H200 at its power limit, where the clocks fall from
 * 1980 to about 1450 MHz. How fast a kernel runs therefore depends on how busy the GPU was just before: an idle GPU
 * runs its first second of work at boost clocks, and runs with idle gaps between them (a host synchronizing and
 * enqueueing the next one) run cooler than runs that follow each other. Two programs timed with different gaps or
 * power histories differ by up to 10% for the same kernel. So each candidate first runs once (whatever it does once
 * on the host, choosing or tuning an algorithm, happens then), then all run round-robin for {@code heat}, then the
 * warm-ups, and then the timed runs go in batches: the stream is held on a device flag while a batch's events and
 * work are enqueued, then released, so the runs follow each other with no host time inside or between them. The
 * PyTorch baselines time torch.matmul the same way (a spin kernel holds their stream).
 */
public final class EventTimer {
    /** Runs per held batch: few enough that enqueueing never fills the stream's queue (which would block the host
     *  while the stream is held), many enough that the batch's enqueue gap is a small share of its GPU time. */
    static final int BATCH_RUNS = 48;
    /** Rounds the heat phase enqueues between synchronizations: the GPU stays busy, the overshoot stays small. */
    private static final int HEAT_ROUNDS_AHEAD = 4;
    /**
     * A batch's enqueue takes milliseconds. If enqueueing blocked until the held stream made progress it would wait
     * for ever, so the hold is released after this long whatever happens; such a batch is reported.
     */
    static final Duration HOLD_LIMIT = Duration.ofSeconds(2);

    private EventTimer() {
    }

    /** Per-run milliseconds of {@code work} issued on {@code stream}, without a heat phase. */
    public static DescriptiveStatistics time(CudaContext ctx, CudaStream stream, int warmup, int iters, Runnable work) {
        LinkedHashMap<String, Runnable> one = new LinkedHashMap<>();
        one.put("work", work);
        return interleaved(ctx, stream, warmup, iters, one, Duration.ZERO).get("work");
    }

    /**
     * Times several candidates round-robin: each round runs every candidate once, in order, so slow drift of the GPU
     * (clocks, temperature, a neighbour) affects all of them alike and their ratios stay fair.
     *
     * @param heat how long the candidates run back to back before the warm-ups (zero for none)
     */
    public static Map<String, DescriptiveStatistics> interleaved(CudaContext ctx, CudaStream stream, int warmup,
            int iters, LinkedHashMap<String, Runnable> candidates, Duration heat) {
        if (warmup < 0 || iters < 1 || candidates.isEmpty()) {
            throw new IllegalArgumentException("need warmup >= 0, iters >= 1 and a candidate; got " + warmup + ", "
                    + iters + ", " + candidates.size());
        }
        List<String> names = List.copyOf(candidates.keySet());
        List<Runnable> work = List.copyOf(candidates.values());
        for (Runnable w : work) {
            w.run();
        }
        stream.synchronize();
        heat(stream, work, heat);
        for (int i = 0; i < warmup; i++) {
            work.forEach(Runnable::run);
        }
        stream.synchronize();
        Map<String, DescriptiveStatistics> stats = new LinkedHashMap<>();
        names.forEach(n -> stats.put(n, new DescriptiveStatistics()));
        int roundsPerBatch = Math.max(1, BATCH_RUNS / work.size());
        try (Hold hold = new Hold(ctx); Events events = new Events(ctx, roundsPerBatch * work.size())) {
            for (int done = 0; done < iters; ) {
                int rounds = Math.min(roundsPerBatch, iters - done);
                hold.batch(stream, () -> {
                    int e = 0;
                    for (int r = 0; r < rounds; r++) {
                        for (Runnable w : work) {
                            events.start(e).record(stream);
                            w.run();
                            events.end(e).record(stream);
                            e++;
                        }
                    }
                });
                events.end(rounds * work.size() - 1).synchronize();
                int e = 0;
                for (int r = 0; r < rounds; r++) {
                    for (String n : names) {
                        stats.get(n).addValue(events.end(e).elapsedMillisSince(events.start(e)));
                        e++;
                    }
                }
                done += rounds;
            }
        }
        return stats;
    }

    /** Runs the work round-robin until {@code heat} has passed, at most a few rounds ahead of the GPU. */
    private static void heat(CudaStream stream, List<Runnable> work, Duration heat) {
        if (heat.isZero() || heat.isNegative()) {
            return;
        }
        long end = System.nanoTime() + heat.toNanos();
        int rounds = 0;
        while (System.nanoTime() < end) {
            work.forEach(Runnable::run);
            if (++rounds % HEAT_ROUNDS_AHEAD == 0) {
                stream.synchronize();
            }
        }
        stream.synchronize();
    }

    /** The event pairs of one batch, made once and reused. */
    private static final class Events implements AutoCloseable {
        private final List<CudaEvent> all = new ArrayList<>();

        Events(CudaContext ctx, int pairs) {
            try {
                for (int i = 0; i < 2 * pairs; i++) {
                    all.add(ctx.createEvent(true));
                }
            } catch (RuntimeException e) {
                close();
                throw e;
            }
        }

        CudaEvent start(int i) {
            return all.get(2 * i);
        }

        CudaEvent end(int i) {
            return all.get(2 * i + 1);
        }

        @Override
        public void close() {
            for (int i = all.size() - 1; i >= 0; i--) {
                all.get(i).close();
            }
            all.clear();
        }
    }

    /** The device flag a batch's stream waits on while the batch is enqueued, and the stream that releases it. */
    private static final class Hold implements AutoCloseable {
        private final CudaContext ctx;
        private final CudaStream releaser;
        private final DeviceBuffer flag;
        private final ScheduledExecutorService valve = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "ubuf-event-timer-valve");
            t.setDaemon(true);
            return t;
        });
        private int value;

        Hold(CudaContext ctx) {
            this.ctx = ctx;
            releaser = ctx.createStream(StreamPriority.HIGH);
            try {
                flag = ctx.allocate(Integer.BYTES);
                releaser.fill32(flag.address(), 0, 1);
                releaser.synchronize();
            } catch (RuntimeException e) {
                releaser.close();
                valve.shutdownNow();
                throw e;
            }
        }

        /** Holds {@code stream}, runs {@code enqueue}, releases the stream (also when enqueueing failed). */
        void batch(CudaStream stream, Runnable enqueue) {
            int v = ++value;
            stream.waitValue32(flag.address(), v);
            AtomicBoolean released = new AtomicBoolean();
            var task = valve.schedule(() -> {
                if (released.compareAndSet(false, true)) {
                    ctx.makeCurrent();
                    releaser.writeValue32(flag.address(), v);
                    System.err.println("ubuf: enqueueing a timed batch took over " + HOLD_LIMIT.toMillis() + " ms;"
                            + " the stream was released early and its runs include host time");
                }
            }, HOLD_LIMIT.toMillis(), TimeUnit.MILLISECONDS);
            try {
                enqueue.run();
            } finally {
                task.cancel(false);
                if (released.compareAndSet(false, true)) {
                    releaser.writeValue32(flag.address(), v); // never leave the stream held
                }
            }
        }

        @Override
        public void close() {
            valve.shutdownNow();
            try {
                releaser.synchronize();
                flag.close();
            } finally {
                releaser.close();
            }
        }
    }
}
