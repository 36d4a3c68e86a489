package dev.ubuf.cuda;

import org.junit.jupiter.api.Test;

import java.lang.ref.Cleaner;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The close() backstop on the CPU: host objects stand in for device buffers and user buffers, which use the same
 * tracking through their context's ledger.
 */
class LeakTrackerTest {
    private final BlockingQueue<String> reports = new LinkedBlockingQueue<>();
    private final Cleaner cleaner = Cleaner.create();

    /** Tracks a fresh owner that nothing references once this returns (so the tracker alone must not hold it). */
    private static LeakTracker.Tracked trackAndDrop(LeakTracker tracker, String description) {
        return tracker.track(new byte[1024], description);
    }

    /** Collects garbage until a report arrives; null after 20 s. */
    private String awaitReport() throws InterruptedException {
        for (int i = 0; i < 200; i++) {
            System.gc();
            String report = reports.poll(100, TimeUnit.MILLISECONDS);
            if (report != null) {
                return report;
            }
        }
        return null;
    }

    @Test
    void anOwnerCollectedWithoutCloseIsReportedByName() throws InterruptedException {
        LeakTracker tracker = new LeakTracker(cleaner, reports::add, false);
        trackAndDrop(tracker, "device buffer 'activations' (4096 bytes) on cuda:0");
        assertEquals("ubuf: LEAKED device buffer 'activations' (4096 bytes) on cuda:0 was collected without close()"
                + " (-Dubuf.debug.leaks=true records where it was allocated)", awaitReport());
    }

    @Test
    void anOwnerClosedBeforeItIsCollectedIsNeverReported() throws InterruptedException {
        LeakTracker tracker = new LeakTracker(cleaner, reports::add, false);
        LeakTracker.Tracked closed = trackAndDrop(tracker, "user buffer 'closed' (64 bytes) on cuda:0");
        closed.closed();
        closed.closed(); // idempotent
        trackAndDrop(tracker, "user buffer 'dropped' (64 bytes) on cuda:0");
        String report = awaitReport();
        assertNotNull(report, "the dropped owner was never reported");
        assertTrue(report.contains("'dropped'"), report);
        System.gc();
        assertNull(reports.poll(200, TimeUnit.MILLISECONDS), "the closed owner was reported too");
    }

    @Test
    void withStacksTheReportAndTheHandleSayWhereTheOwnerWasCreated() throws InterruptedException {
        LeakTracker tracker = new LeakTracker(cleaner, reports::add, true);
        LeakTracker.Tracked tracked = trackAndDrop(tracker, "device buffer (8 bytes) on cuda:1");
        String stack = tracked.allocationStack().orElseThrow();
        assertTrue(stack.startsWith("\tat " + LeakTrackerTest.class.getName() + ".trackAndDrop("), stack);
        String report = awaitReport();
        assertNotNull(report, "never reported");
        assertTrue(report.startsWith("ubuf: LEAKED device buffer (8 bytes) on cuda:1 was collected without close();"
                + " allocated at:\n\tat " + LeakTrackerTest.class.getName() + ".trackAndDrop("), report);
    }

    @Test
    void withoutStacksNothingIsRecorded() {
        LeakTracker tracker = new LeakTracker(cleaner, reports::add, false);
        LeakTracker.Tracked tracked = tracker.track(new Object(), "stream on cuda:0");
        assertFalse(tracked.allocationStack().isPresent());
        assertEquals("stream on cuda:0", tracked.description());
        tracked.closed();
    }
}
