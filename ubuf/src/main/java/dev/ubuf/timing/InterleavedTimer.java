package dev.ubuf.timing;

import dev.ubuf.comm.TpCommunicator;
import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaEvent;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.cuda.StreamPriority;
import dev.ubuf.resource.Closer;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * Times several candidates on every rank of a domain, fairly:
 * <ul>
 *   <li>each iteration runs every candidate once, in an order shuffled by a seeded random (recorded), so the GPU's
 *       slow drift and any order effect hit all candidates alike;</li>
 *   <li>each sample starts after a barrier of the domain, and the stream is held on a device flag while the start
 *       event, the work and the end event are enqueued, then released: the host's enqueue time is not measured;</li>
 *   <li>a sample's time is the maximum over ranks (the op is done when its slowest rank is).</li>
 * </ul>
 * Collective: every rank calls {@link #time} with the same candidate names.
 */
public final class InterleavedTimer implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(InterleavedTimer.class.getName());
    private final TpCommunicator comm;
    private final CudaStream stream;
    private final CudaStream releaser;
    private final DeviceBuffer hold;
    private final CudaEvent start;
    private final CudaEvent end;
    private int holdValue;
    private final Closer closer = new Closer("interleaved timer");
    /** Releases a hold the enqueueing thread did not release in time (see {@link #HOLD_LIMIT}). */
    private final java.util.concurrent.ScheduledExecutorService valve =
            java.util.concurrent.Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "ubuf-timer-valve");
                t.setDaemon(true);
                return t;
            });
    /** Samples of the current {@link #time} call whose hold the valve released (written by the valve thread). */
    private final java.util.concurrent.atomic.AtomicInteger valveReleases = new java.util.concurrent.atomic.AtomicInteger();

    /**
     * Enqueueing a candidate takes microseconds to milliseconds. A candidate whose enqueue blocks the host until its
     * stream makes progress would wait for ever on the held stream, so the hold is released after this long whatever
     * happens; such a sample includes host time and is counted in {@link Result#valveReleases()}.
     */
    static final java.time.Duration HOLD_LIMIT = java.time.Duration.ofSeconds(2);

    public InterleavedTimer(TpCommunicator comm, CudaStream stream) {
        this.comm = comm;
        this.stream = stream;
        CudaContext ctx = comm.context().makeCurrent();
        try {
            releaser = closer.register("releaser stream", ctx.createStream(StreamPriority.HIGH));
            hold = closer.register("hold flag", ctx.allocate(Integer.BYTES));
            start = closer.register("start event", ctx.createEvent(true));
            end = closer.register("end event", ctx.createEvent(true));
            releaser.fill32(hold.address(), 0, 1);
            releaser.synchronize();
        } catch (RuntimeException e) {
            throw closer.closeAfter(e);
        }
        closer.onClose("valve", valve::shutdownNow);
    }

    /**
     * What {@link #time} measured: per candidate the per-iteration maxima over ranks, the orders run, and how many
     * samples on this rank had their hold released by the valve (0 in a sound measurement).
     */
    public record Result(Map<String, TimingStats> stats, long seed, List<List<String>> orders,
                         int valveReleases) {
        public double median(String candidate) {
            return stats.get(candidate).median();
        }
    }

    /**
     * Runs {@code warmup} untimed and {@code iters} timed iterations of every candidate, each candidate's work issued
     * on the timer's stream. Returns the same result on every rank.
     */
    public Result time(Map<String, Runnable> candidates, int warmup, int iters, long seed) {
        if (warmup < 0 || iters < 1) {
            throw new IllegalArgumentException("warmup must be >= 0 and iters >= 1, got " + warmup + ", " + iters);
        }
        List<String> names = new ArrayList<>(candidates.keySet());
        valveReleases.set(0);
        // One unheld pass first: whatever a candidate does on the host at its first call (tuning its GEMMs,
        // creating its GEMM-only executor) happens here, never while the timed stream is held.
        for (String name : names) {
            comm.bootstrap().barrier();
            candidates.get(name).run();
            comm.await(stream, () -> "first call of " + name);
        }
        Random order = new Random(seed);
        double[][] mine = new double[names.size()][iters];
        List<List<String>> orders = new ArrayList<>();
        for (int it = 0; it < warmup + iters; it++) {
            List<Integer> idx = new ArrayList<>();
            for (int c = 0; c < names.size(); c++) {
                idx.add(c);
            }
            Collections.shuffle(idx, order);
            if (it >= warmup) {
                orders.add(idx.stream().map(names::get).toList());
            }
            for (int c : idx) {
                double ms = sample(names.get(c), candidates.get(names.get(c)));
                if (it >= warmup) {
                    mine[c][it - warmup] = ms;
                }
            }
        }
        return new Result(maxOverRanks(names, mine), seed, orders, valveReleases.get());
    }

    private double sample(String name, Runnable work) {
        comm.bootstrap().barrier();
        int v = ++holdValue;
        stream.waitValue32(hold.address(), v);
        java.util.concurrent.atomic.AtomicBoolean released = new java.util.concurrent.atomic.AtomicBoolean();
        var valveTask = valve.schedule(() -> {
            if (released.compareAndSet(false, true)) {
                comm.context().makeCurrent();
                releaser.writeValue32(hold.address(), v);
                valveReleases.incrementAndGet();
                LOG.log(System.Logger.Level.WARNING, "ubuf: timing '" + name + "' on rank " + comm.rank()
                        + ": enqueueing took over " + HOLD_LIMIT.toMillis() + " ms; the stream was released early and"
                        + " this sample includes host time");
            }
        }, HOLD_LIMIT.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
        try {
            start.record(stream);
            work.run();
            end.record(stream);
        } finally {
            valveTask.cancel(false);
            if (released.compareAndSet(false, true)) {
                releaser.writeValue32(hold.address(), v); // also when enqueueing failed: never leave the stream held
            }
        }
        comm.await(stream, () -> "timing " + name);
        return end.elapsedMillisSince(start);
    }

    private Map<String, TimingStats> maxOverRanks(List<String> names, double[][] mine) {
        int iters = mine.length == 0 ? 0 : mine[0].length;
        ByteBuffer b = ByteBuffer.allocate(names.size() * iters * Double.BYTES);
        for (double[] row : mine) {
            for (double x : row) {
                b.putDouble(x);
            }
        }
        byte[][] all = comm.bootstrap().allGather(b.array());
        Map<String, TimingStats> stats = new LinkedHashMap<>();
        for (int c = 0; c < names.size(); c++) {
            double[] maxima = new double[iters];
            for (int i = 0; i < iters; i++) {
                double max = 0;
                for (byte[] r : all) {
                    max = Math.max(max, ByteBuffer.wrap(r).getDouble((c * iters + i) * Double.BYTES));
                }
                maxima[i] = max;
            }
            stats.put(names.get(c), TimingStats.of(maxima));
        }
        return stats;
    }

    /** Stops the valve, then frees the events, the flag and the releasing stream. */
    @Override
    public void close() {
        closer.close();
    }
}
