package dev.ubuf.bench;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.ubuf.ffi.NativeLibrary;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * Samples one GPU's SM clock and what limits it (NVML's clock event reasons) on a thread of its own, so a benchmark
 * can say at what clock each of its timed windows ran. An H100 at its power cap lowers its clocks for everything on
 * it: data moving beside a GEMM then slows the GEMM too, which no stream or SM choice avoids. NVML reads the current
 * clock, not an average, so a sample every quarter millisecond resolves steps of a few milliseconds.
 */
public final class ClockSampler implements AutoCloseable {
    /** NVML_CLOCK_SM. */
    private static final int CLOCK_SM = 1;
    /** nvmlClocksEventReasonSwPowerCap: the power cap lowers the clocks. */
    public static final long SW_POWER_CAP = 0x4L;
    /** HW slowdown, SW and HW thermal slowdown, HW power brake: anything else that lowers them. */
    public static final long OTHER_SLOWDOWN = 0x8L | 0x20L | 0x40L | 0x80L;

    /** Samples kept; at the default period some minutes of sampling. Later samples are dropped (and counted). */
    static final int CAPACITY = 1 << 20;

    private final Arena arena;
    private final MethodHandle clockInfo;
    private final MethodHandle reasons;
    private final MethodHandle shutdown;
    private final MemorySegment device;
    private final long periodNanos;
    private final long[] at = new long[CAPACITY];
    private final int[] mhz = new int[CAPACITY];
    private final long[] why = new long[CAPACITY];
    /** Samples written; entries below it are complete (the thread publishes each by this volatile write). */
    private volatile int count;
    private volatile boolean stop;
    private volatile String failure;
    private final Thread thread;

    private ClockSampler(Arena arena, MethodHandle clockInfo, MethodHandle reasons, MethodHandle shutdown,
                         MemorySegment device, long periodNanos) {
        this.arena = arena;
        this.clockInfo = clockInfo;
        this.reasons = reasons;
        this.shutdown = shutdown;
        this.device = device;
        this.periodNanos = periodNanos;
        this.thread = Thread.ofPlatform().daemon().name("ubuf-clock-sampler").unstarted(this::loop);
    }

    /**
     * Starts sampling the GPU at {@code pciBusId} (CUDA's "0000:18:00.0" form) every {@code periodMicros}.
     *
     * @throws IllegalStateException saying why when NVML cannot be used (no library, no such GPU, a call failing)
     */
    public static ClockSampler start(String pciBusId, long periodMicros) {
        if (periodMicros < 1) {
            throw new IllegalArgumentException("periodMicros must be >= 1, got " + periodMicros);
        }
        Arena arena = Arena.ofShared();
        try {
            NativeLibrary lib = NativeLibrary.open(List.of("libnvidia-ml.so.1"), arena);
            MethodHandle init = lib.bindFirst(List.of("nvmlInit_v2", "nvmlInit"), FunctionDescriptor.of(JAVA_INT));
            MethodHandle byBus = lib.bind("nvmlDeviceGetHandleByPciBusId_v2",
                    FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
            MethodHandle clock = lib.bind("nvmlDeviceGetClockInfo",
                    FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS));
            // The newer name first; drivers before r535 only have the older one, the same call.
            MethodHandle reasons = lib.bindFirst(List.of("nvmlDeviceGetCurrentClocksEventReasons",
                    "nvmlDeviceGetCurrentClocksThrottleReasons"), FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
            MethodHandle shutdown = lib.bind("nvmlShutdown", FunctionDescriptor.of(JAVA_INT));
            check((int) init.invokeExact(), "nvmlInit");
            try {
                MemorySegment out = arena.allocate(ADDRESS);
                check((int) byBus.invokeExact(arena.allocateFrom(pciBusId), out),
                        "nvmlDeviceGetHandleByPciBusId(" + pciBusId + ")");
                ClockSampler s = new ClockSampler(arena, clock, reasons, shutdown, out.get(ADDRESS, 0),
                        TimeUnit.MICROSECONDS.toNanos(periodMicros));
                s.sampleOnce(arena.allocate(JAVA_INT), arena.allocate(JAVA_LONG)); // fails here, not in the thread
                s.thread.start();
                return s;
            } catch (Throwable t) {
                int ignored = (int) shutdown.invokeExact(); // NVML's reference count back, before the arena goes
                throw t;
            }
        } catch (Throwable t) {
            arena.close();
            throw new IllegalStateException("GPU clocks cannot be sampled through NVML: " + t.getMessage(), t);
        }
    }

    private static void check(int status, String call) {
        if (status != 0) {
            throw new IllegalStateException(call + " returned NVML status " + status);
        }
    }

    private void loop() {
        MemorySegment clock = arena.allocate(JAVA_INT);
        MemorySegment reason = arena.allocate(JAVA_LONG);
        while (!stop) {
            try {
                sampleOnce(clock, reason);
            } catch (Throwable t) {
                failure = t.toString();
                return;
            }
            LockSupport.parkNanos(periodNanos);
        }
    }

    private void sampleOnce(MemorySegment clock, MemorySegment reason) throws Throwable {
        long t = System.nanoTime();
        check((int) clockInfo.invokeExact(device, CLOCK_SM, clock), "nvmlDeviceGetClockInfo");
        check((int) reasons.invokeExact(device, reason), "nvmlDeviceGetCurrentClocksEventReasons");
        record(t, clock.get(JAVA_INT, 0), reason.get(JAVA_LONG, 0));
    }

    /** Keeps one sample (the sampling thread's only writer; in order of time); beyond the capacity it is dropped. */
    void record(long nanos, int clockMhz, long reasonBits) {
        int n = count;
        if (n < CAPACITY) {
            at[n] = nanos;
            mhz[n] = clockMhz;
            why[n] = reasonBits;
            count = n + 1;
        }
    }

    /** A sampler that never samples by itself: tests feed it through {@link #record}. */
    static ClockSampler unstarted() {
        return new ClockSampler(null, null, null, null, null, 1);
    }

    /** Adds the samples taken between {@code startNanos} and {@code endNanos} (System.nanoTime) to {@code tally}. */
    public void addTo(Tally tally, long startNanos, long endNanos) {
        int n = count;
        int i = firstAtOrAfter(startNanos, n);
        for (; i < n && at[i] <= endNanos; i++) {
            tally.add(mhz[i], why[i]);
        }
    }

    private int firstAtOrAfter(long t, int n) {
        int lo = 0;
        int hi = n;
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (at[mid] < t) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo;
    }

    /** Why sampling stopped early (an NVML call failing on the thread), or null. */
    public String failure() {
        return failure;
    }

    @Override
    public void close() {
        stop = true;
        LockSupport.unpark(thread);
        try {
            thread.join(TimeUnit.SECONDS.toMillis(5));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (shutdown == null) {
            return; // unstarted(): nothing native
        }
        try {
            int ignored = (int) shutdown.invokeExact();
        } catch (Throwable ignored) {
            // NVML's shutdown only drops its reference count; nothing to recover.
        }
        if (!thread.isAlive()) {
            arena.close();
        }
    }

    /** Samples summed over windows: their count, mean SM clock, and how often the power cap or another limit held. */
    public static final class Tally {
        private long samples;
        private long mhzSum;
        private long powerCap;
        private long otherSlowdown;

        void add(int clockMhz, long reasons) {
            samples++;
            mhzSum += clockMhz;
            if ((reasons & SW_POWER_CAP) != 0) {
                powerCap++;
            }
            if ((reasons & OTHER_SLOWDOWN) != 0) {
                otherSlowdown++;
            }
        }

        public long samples() {
            return samples;
        }

        /** Mean SM clock over the samples, MHz; NaN without any. */
        public double meanMhz() {
            return samples == 0 ? Double.NaN : (double) mhzSum / samples;
        }

        /** The share of samples taken while the power cap held the clocks down; NaN without any. */
        public double powerCapShare() {
            return samples == 0 ? Double.NaN : (double) powerCap / samples;
        }

        /** The share of samples with a thermal or hardware slowdown; NaN without any. */
        public double otherSlowdownShare() {
            return samples == 0 ? Double.NaN : (double) otherSlowdown / samples;
        }
    }
}
