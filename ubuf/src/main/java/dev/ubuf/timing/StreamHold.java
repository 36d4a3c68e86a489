package dev.ubuf.timing;

import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.PinnedHostBuffer;
import dev.ubuf.resource.Closer;

import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Holds a stream on a device flag while the host enqueues work on it, then lets it go: the GPU starts that work
 * with all of it queued, so a time measured on the stream is the GPU's, not the host's pace of enqueueing. One
 * hold at a time, on the thread that owns the context.
 *
 * <p>Work whose enqueueing blocks until its stream makes progress would wait for ever on a held stream, so a
 * valve thread releases any hold still closed after {@code limit}; such holds are counted
 * ({@link #valveReleases()}) and logged, and a time measured across one includes host time.
 *
 * <p>The flag is page-locked host memory mapped for the device, and the host releases a hold with a plain store:
 * no stream is involved. A release written by a second stream (as before 2026-11-27, ninth session) waits in a
 * hardware queue, and when that queue is the held stream's (CUDA_DEVICE_MAX_CONNECTIONS=1 maps every stream onto one,
 * and the default 8 share them round-robin) it sits behind the wait it should end: the 8B demo at tp 4 hung in the
 * planner's first measurement at CUDA_DEVICE_MAX_CONNECTIONS=1 in 2 of 2 runs (four H100s), and this is the likeliest
 * cause of the fifth session's held whole steps that never started, whose valve release never ran either.
 *
 * <p>For an op's call, not a training step: holding a whole LayerNormMLP step (two H100s, 2026-11-27) blocked its
 * enqueueing for good (both ranks in ncclAllReduce).
 */
public final class StreamHold implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(StreamHold.class.getName());

    /** An open hold; closing it releases the stream (at most once, also when the enqueueing threw). */
    public interface Hold extends AutoCloseable {
        @Override
        void close();
    }

    private final CudaContext context;
    private final Duration limit;
    private final PinnedHostBuffer flag;
    private final ScheduledExecutorService valve;
    private final AtomicInteger valveReleases = new AtomicInteger();
    private final Closer closer = new Closer("stream hold");
    private int value;

    /** A hold on {@code context}'s device whose valve opens after {@code limit}. */
    public StreamHold(CudaContext context, Duration limit) {
        if (limit.isNegative() || limit.isZero()) {
            throw new IllegalArgumentException("the valve's limit must be positive, got " + limit);
        }
        this.context = context;
        this.limit = limit;
        context.makeCurrent();
        try {
            flag = closer.register("hold flag", context.allocateHostMapped(Integer.BYTES));
            release(0);
            valve = Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "ubuf-hold-valve");
                t.setDaemon(true);
                return t;
            });
        } catch (RuntimeException e) {
            throw closer.closeAfter(e);
        }
        closer.onClose("valve", valve::shutdownNow);
    }

    /**
     * Holds {@code stream}: work enqueued on it from now waits until the returned hold is closed (or the valve
     * opens). {@code what} names the held work in the valve's warning.
     */
    public Hold hold(CudaStream stream, String what) {
        closer.requireOpen();
        int v = ++value;
        stream.waitValue32(flag.deviceAddress(), v);
        AtomicBoolean released = new AtomicBoolean();
        var task = valve.schedule(() -> {
            if (released.compareAndSet(false, true)) {
                release(v);
                valveReleases.incrementAndGet();
                LOG.log(System.Logger.Level.WARNING, "ubuf: enqueueing " + what + " took over " + limit.toMillis()
                        + " ms; the stream was released early and a time measured across it includes host time");
            }
        }, limit.toMillis(), TimeUnit.MILLISECONDS);
        return () -> {
            task.cancel(false);
            if (released.compareAndSet(false, true)) {
                release(v);
            }
        };
    }

    /** The store the held stream's wait polls for, made visible before this returns. */
    private void release(int v) {
        flag.segment().set(ValueLayout.JAVA_INT, 0, v);
        VarHandle.fullFence();
    }

    /** How many holds the valve released since {@link #resetValveReleases()} (0 in a sound measurement). */
    public int valveReleases() {
        return valveReleases.get();
    }

    public void resetValveReleases() {
        valveReleases.set(0);
    }

    /** Stops the valve, then frees the flag; no hold may be open. */
    @Override
    public void close() {
        if (!closer.isClosed()) {
            context.makeCurrent();
            closer.close();
        }
    }
}
