package dev.ubuf.cuda;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import javax.management.JMX;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import java.lang.management.ManagementFactory;
import java.lang.ref.Reference;
import java.lang.ref.Cleaner;
import java.util.List;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A context's ledger without a GPU: host objects stand in for the resources. */
class ResourceLedgerTest {
    /** A device ordinal no real context uses, so that cleaning up cannot touch one. */
    static final int DEVICE = 71;

    private final BlockingQueue<String> reports = new LinkedBlockingQueue<>();
    private final LeakTracker tracker = new LeakTracker(Cleaner.create(), reports::add, false);
    private final MBeanServer server = ManagementFactory.getPlatformMBeanServer();

    @AfterEach
    void unpublishWhatATestLeftPublished() throws Exception {
        for (ObjectName name : published()) {
            server.unregisterMBean(name);
        }
    }

    private Set<ObjectName> published() throws Exception {
        return server.queryNames(new ObjectName("dev.ubuf:type=ResourceLedger,device=" + DEVICE + ",*"), null);
    }

    @Test
    void listsOpenResourcesByKindNameAndSizeAndCountsOnlyDeviceMemory() {
        ResourceLedger ledger = new ResourceLedger(DEVICE, tracker);
        Object buffer = new Object();
        Object stream = new Object();
        Object userBuffer = new Object();
        ResourceLedger.Entry b = ledger.trackDeviceMemory(buffer, "activations", 4096);
        ResourceLedger.Entry s = ledger.track(stream, "stream", "", 0);
        ResourceLedger.Entry u = ledger.track(userBuffer, "user buffer", "ag-ubuf", 1 << 20);
        assertEquals(List.of("device buffer 'activations' (4096 bytes) on cuda:71", "stream on cuda:71",
                "user buffer 'ag-ubuf' (1048576 bytes) on cuda:71"),
                ledger.openResources().stream().map(ResourceLedger.OpenResource::toString).toList());
        assertEquals(4096, ledger.deviceBytes(), "only device buffers count as the context's device memory");
        b.close();
        b.close(); // idempotent
        s.close();
        assertEquals(List.of("user buffer 'ag-ubuf' (1048576 bytes) on cuda:71"),
                ledger.openResources().stream().map(ResourceLedger.OpenResource::toString).toList());
        assertEquals(0, ledger.deviceBytes());
        assertEquals(4096, ledger.peakDeviceBytes());
        u.close();
        assertEquals(List.of(), ledger.openResources());
    }

    @Test
    void aPublishedLedgerShowsItsOpenResourcesThroughJmxUntilUnpublished() throws Exception {
        ResourceLedger ledger = new ResourceLedger(DEVICE, tracker);
        ledger.publish("\tat somewhere.retain(Here.java:1)");
        Object buffer = new Object();
        ResourceLedger.Entry b = ledger.trackDeviceMemory(buffer, "weights", 512);
        Set<ObjectName> names = published();
        assertEquals(1, names.size(), names.toString());
        ResourceLedgerMXBean view = JMX.newMXBeanProxy(server, names.iterator().next(), ResourceLedgerMXBean.class);
        assertEquals(DEVICE, view.getDevice());
        assertEquals(512, view.getDeviceBytes());
        assertEquals(List.of(new ResourceLedger.OpenResource(0, "device buffer", "weights", 512, DEVICE, null)),
                view.getOpenResources());
        assertEquals("\tat somewhere.retain(Here.java:1)", view.getContextAllocationStack());
        b.close();
        assertEquals(List.of(), view.getOpenResources());
        ledger.unpublish();
        ledger.unpublish(); // idempotent
        assertEquals(Set.of(), published());
    }

    @Test
    void twoLedgersOfOneDeviceArePublishedUnderDifferentNames() throws Exception {
        ResourceLedger first = new ResourceLedger(DEVICE, tracker);
        ResourceLedger second = new ResourceLedger(DEVICE, tracker);
        first.publish(null);
        second.publish(null);
        assertEquals(2, published().size());
        first.unpublish();
        assertEquals(1, published().size());
        second.unpublish();
    }

    @Test
    void anOwnerDroppedOpenIsReportedAndStaysListedBecauseNothingFreedIt() throws InterruptedException {
        ResourceLedger ledger = new ResourceLedger(DEVICE, tracker);
        trackAndDrop(ledger);
        String report = null;
        for (int i = 0; i < 200 && report == null; i++) {
            System.gc();
            report = reports.poll(100, TimeUnit.MILLISECONDS);
        }
        assertNotNull(report, "the dropped buffer was never reported");
        assertTrue(report.startsWith("ubuf: LEAKED device buffer 'dropped' (2048 bytes) on cuda:71 was collected"
                + " without close()"), report);
        assertEquals(List.of("device buffer 'dropped' (2048 bytes) on cuda:71"),
                ledger.openResources().stream().map(ResourceLedger.OpenResource::toString).toList(),
                "the cleaner reports only: the memory was never freed, so the ledger still lists it");
        assertEquals(2048, ledger.deviceBytes());
    }

    private static void trackAndDrop(ResourceLedger ledger) {
        ledger.trackDeviceMemory(new byte[64], "dropped", 2048);
    }

    @Test
    void withStacksEachOpenResourceSaysWhereItWasCreated() {
        ResourceLedger ledger = new ResourceLedger(DEVICE, new LeakTracker(Cleaner.create(), reports::add, true));
        Object event = new Object();
        ResourceLedger.Entry e = ledger.track(event, "event", "", 0);
        String stack = ledger.openResources().getFirst().allocationStack();
        assertNotNull(stack);
        assertTrue(stack.startsWith("\tat " + ResourceLedgerTest.class.getName()
                + ".withStacksEachOpenResourceSaysWhereItWasCreated("), stack);
        e.close();
        Reference.reachabilityFence(event); // closed while still reachable, as an owner's close() is
        System.gc();
        assertNull(reports.poll(), "a closed resource is not reported");
    }
}
