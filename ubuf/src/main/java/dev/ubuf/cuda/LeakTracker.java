package dev.ubuf.cuda;

import java.lang.ref.Cleaner;
import java.util.Arrays;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.stream.Collectors;

/**
 * The backstop behind {@code close()}: reports a native resource that the garbage collector found unreachable while
 * it was still open, naming it ("ubuf: LEAKED device buffer 'x' (4096 bytes) on cuda:0 was collected without
 * close()"), with the stack that created it when stacks are recorded ({@code -Dubuf.debug.leaks=true}).
 *
 * <p>It only reports; it never frees. The cleaner thread has no current CUDA context, the owner's context may already
 * be released, work queued on a stream may still use the memory, and a user buffer's peers may still copy into it,
 * so a free from here could corrupt memory or fail in ways nobody sees. The resource stays in its context's
 * {@link ResourceLedger}, which keeps refusing to close the context, so the leak stays visible there too.
 *
 * <p>Thread-safe and immutable; the per-resource state lives in each {@link Tracked}.
 */
public final class LeakTracker {
    /** System property: {@code true} records each tracked resource's creation stack (costly: for debugging). */
    public static final String DEBUG_PROPERTY = "ubuf.debug.leaks";

    /*
     * The process's tracker is a constant: one daemon cleaner thread (as the JDK's own shared cleaner), a logger and a
     * flag read once at start-up. Its only state is the cleaner's list of registrations, each of which lives exactly
     * as long as the object it watches, so nothing accumulates and nothing needs resetting.
     */
    private static final LeakTracker PROCESS = new LeakTracker(
            Cleaner.create(r -> new Thread(r, "ubuf-leak-tracker")), LeakTracker::log,
            Boolean.getBoolean(DEBUG_PROPERTY));

    private final Cleaner cleaner;
    private final Consumer<String> reports;
    private final boolean recordStacks;

    /**
     * @param cleaner      runs the reports (its thread calls {@code reports})
     * @param reports      receives one message per leaked resource, on the cleaner's thread
     * @param recordStacks whether to record each resource's creation stack
     */
    public LeakTracker(Cleaner cleaner, Consumer<String> reports, boolean recordStacks) {
        this.cleaner = Objects.requireNonNull(cleaner, "cleaner");
        this.reports = Objects.requireNonNull(reports, "reports");
        this.recordStacks = recordStacks;
    }

    /** The tracker every context uses: logs to {@code dev.ubuf.leaks}, records stacks with {@link #DEBUG_PROPERTY}. */
    public static LeakTracker process() {
        return PROCESS;
    }

    public boolean recordsStacks() {
        return recordStacks;
    }

    /**
     * Watches {@code owner} until {@link Tracked#closed()}. The owner keeps the returned handle and calls
     * {@code closed()} when it frees the resource; nothing here keeps the owner reachable.
     *
     * @param description what the resource is, e.g. "device buffer 'x' (4096 bytes) on cuda:0"
     */
    public Tracked track(Object owner, String description) {
        Objects.requireNonNull(owner, "owner");
        // Only plain data goes into the action: a reference to the owner would keep it reachable forever.
        Report report = new Report(description, recordStacks ? new Throwable("allocated here") : null, reports);
        return new Tracked(report, cleaner.register(owner, report));
    }

    /** One tracked resource, held by its owner. */
    public static final class Tracked {
        private final Report report;
        private final Cleaner.Cleanable cleanable;

        private Tracked(Report report, Cleaner.Cleanable cleanable) {
            this.report = report;
            this.cleanable = cleanable;
        }

        public String description() {
            return report.description;
        }

        /** Where the resource was created, one "\tat frame" line per frame; empty unless stacks are recorded. */
        public Optional<String> allocationStack() {
            return Optional.ofNullable(report.allocatedAt).map(LeakTracker::format);
        }

        /** The owner freed the resource: no report, now or later. Idempotent. */
        public void closed() {
            report.closed = true;
            cleanable.clean(); // deregisters at once, so a closed resource costs the cleaner nothing
        }
    }

    /** The cleaning action: runs once, on close (silently) or after the owner was collected (reporting). */
    private static final class Report implements Runnable {
        final String description;
        final Throwable allocatedAt;
        final Consumer<String> reports;
        volatile boolean closed;

        Report(String description, Throwable allocatedAt, Consumer<String> reports) {
            this.description = description;
            this.allocatedAt = allocatedAt;
            this.reports = reports;
        }

        @Override
        public void run() {
            if (!closed) {
                reports.accept("ubuf: LEAKED " + description + " was collected without close()"
                        + (allocatedAt == null ? " (-D" + DEBUG_PROPERTY + "=true records where it was allocated)"
                        : "; allocated at:\n" + format(allocatedAt)));
            }
        }
    }

    /** The creation stack without the tracking frames above the resource's own constructor. */
    static String format(Throwable allocatedAt) {
        return Arrays.stream(allocatedAt.getStackTrace())
                .dropWhile(f -> isTracking(f.getClassName()))
                .map(f -> "\tat " + f)
                .collect(Collectors.joining("\n"));
    }

    private static boolean isTracking(String className) {
        for (Class<?> c : new Class<?>[]{LeakTracker.class, ResourceLedger.class}) {
            if (className.equals(c.getName()) || className.startsWith(c.getName() + "$")) {
                return true;
            }
        }
        return false;
    }

    private static void log(String message) {
        System.getLogger("dev.ubuf.leaks").log(System.Logger.Level.WARNING, message);
    }
}
