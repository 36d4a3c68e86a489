package dev.ubuf.cuda;

import javax.management.InstanceAlreadyExistsException;
import javax.management.InstanceNotFoundException;
import javax.management.JMException;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import javax.management.StandardMBean;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The native resources a context has open, by kind and name, so that closing the context with something still open
 * is refused naming it, and tests can check that they closed what they opened. Each entry is also watched by a
 * {@link LeakTracker}, which reports an owner collected without {@code close()}.
 *
 * <p>While its context is open the ledger is published in the platform MBean server as
 * {@code dev.ubuf:type=ResourceLedger,device=N,id=...} ({@link ResourceLedgerMXBean}): jconsole or JMC show every open
 * context's resources, and the test extension reads them there, with no registry of ubuf's own.
 *
 * <p>Entries never reference their owners, so an owner that is dropped unclosed can be collected and reported.
 * Thread-safe.
 */
public final class ResourceLedger {
    /** Matches the JMX names of every published ledger, i.e. of every open context of this JVM. */
    public static final String JMX_QUERY = "dev.ubuf:type=ResourceLedger,*";

    private final int device;
    private final LeakTracker tracker;
    private final Map<Long, Entry> entries = new LinkedHashMap<>();
    private long nextId;
    private long deviceBytes;
    private long peakDeviceBytes;
    private ObjectName published;
    private String contextAllocationStack;

    ResourceLedger(int device, LeakTracker tracker) {
        this.device = device;
        this.tracker = tracker;
    }

    /**
     * Records an open resource that is not device memory of this context (a stream, an event, a user buffer, a peer's
     * mapped memory). The owner keeps the entry and closes it when it frees the resource.
     *
     * @param kind  what it is, e.g. "stream" or "user buffer"
     * @param name  the owner's name for it, or "" when it has none
     * @param bytes its size, shown in reports, or 0 when size means nothing for it
     */
    public Entry track(Object owner, String kind, String name, long bytes) {
        return add(owner, kind, name, bytes, false);
    }

    /** Records a device allocation of this context: like {@link #track}, and counted in {@link #deviceBytes()}. */
    public Entry trackDeviceMemory(Object owner, String name, long bytes) {
        return add(owner, "device buffer", name, bytes, true);
    }

    private Entry add(Object owner, String kind, String name, long bytes, boolean deviceMemory) {
        String description = describe(kind, name, bytes, device);
        // Outside the lock: recording a stack is slow when stacks are on.
        LeakTracker.Tracked tracked = tracker.track(owner, description);
        synchronized (this) {
            Entry e = new Entry(nextId++, kind, name, bytes, deviceMemory, tracked);
            entries.put(e.id, e);
            if (deviceMemory) {
                deviceBytes += bytes;
                peakDeviceBytes = Math.max(peakDeviceBytes, deviceBytes);
            }
            return e;
        }
    }

    private synchronized void remove(Entry e) {
        if (entries.remove(e.id) != null && e.deviceMemory) {
            deviceBytes -= e.bytes;
        }
    }

    /** "device buffer 'x' (4096 bytes) on cuda:0": how ledgers, leak reports and test failures name a resource. */
    static String describe(String kind, String name, long bytes, int device) {
        return kind + (name.isEmpty() ? "" : " '" + name + "'") + (bytes > 0 ? " (" + bytes + " bytes)" : "")
                + " on cuda:" + device;
    }

    /** What is open now, oldest first. */
    public synchronized List<OpenResource> openResources() {
        List<OpenResource> list = new ArrayList<>(entries.size());
        for (Entry e : entries.values()) {
            list.add(new OpenResource(e.id, e.kind, e.name, e.bytes, device,
                    e.tracked.allocationStack().orElse(null)));
        }
        return list;
    }

    /** Device bytes currently allocated through this context's buffers. */
    public synchronized long deviceBytes() {
        return deviceBytes;
    }

    public synchronized long peakDeviceBytes() {
        return peakDeviceBytes;
    }

    /** Ordinal of the device whose context this ledger belongs to. */
    public int device() {
        return device;
    }

    /**
     * One open resource as the ledger saw it: {@code id} is unique within its ledger; {@code allocationStack} is the
     * creation stack when stacks are recorded ({@link LeakTracker#DEBUG_PROPERTY}), else null.
     */
    public record OpenResource(long id, String kind, String name, long bytes, int device, String allocationStack) {
        @Override
        public String toString() {
            return describe(kind, name, bytes, device);
        }
    }

    /** An open resource's place in the ledger; its owner closes it when it frees the resource. */
    public final class Entry {
        private final long id;
        private final String kind;
        private final String name;
        private final long bytes;
        private final boolean deviceMemory;
        private final LeakTracker.Tracked tracked;

        private Entry(long id, String kind, String name, long bytes, boolean deviceMemory,
                      LeakTracker.Tracked tracked) {
            this.id = id;
            this.kind = kind;
            this.name = name;
            this.bytes = bytes;
            this.deviceMemory = deviceMemory;
            this.tracked = tracked;
        }

        /** The resource was freed (or its free was attempted and must not be retried). Idempotent. */
        public void close() {
            remove(this);
            tracked.closed();
        }
    }

    /** Makes this ledger visible in the platform MBean server until {@link #unpublish()}. */
    synchronized void publish(String contextAllocationStack) {
        this.contextAllocationStack = contextAllocationStack;
        MBeanServer server = ManagementFactory.getPlatformMBeanServer();
        String base = "dev.ubuf:type=ResourceLedger,device=" + device + ",id="
                + Integer.toHexString(System.identityHashCode(this));
        try {
            StandardMBean bean = new StandardMBean(new View(), ResourceLedgerMXBean.class, true);
            // Identity hashes of live objects may collide: the first free suffix keeps the name unique.
            for (int attempt = 0; published == null; attempt++) {
                ObjectName name = new ObjectName(attempt == 0 ? base : base + "-" + attempt);
                try {
                    server.registerMBean(bean, name);
                    published = name;
                } catch (InstanceAlreadyExistsException taken) {
                    // try the next suffix
                }
            }
        } catch (JMException e) {
            throw new IllegalStateException("could not publish the resource ledger of cuda:" + device + ": " + e, e);
        }
    }

    synchronized void unpublish() {
        if (published != null) {
            try {
                ManagementFactory.getPlatformMBeanServer().unregisterMBean(published);
            } catch (InstanceNotFoundException gone) {
                // someone unregistered it by hand: nothing left to do
            } catch (JMException e) {
                throw new IllegalStateException("could not unpublish " + published + ": " + e, e);
            } finally {
                published = null;
            }
        }
    }

    /** The JMX face: a separate object, so the getter-style names stay out of the ledger's own API. */
    private final class View implements ResourceLedgerMXBean {
        @Override
        public int getDevice() {
            return device;
        }

        @Override
        public long getDeviceBytes() {
            return deviceBytes();
        }

        @Override
        public long getPeakDeviceBytes() {
            return peakDeviceBytes();
        }

        @Override
        public List<OpenResource> getOpenResources() {
            return openResources();
        }

        @Override
        public String getContextAllocationStack() {
            synchronized (ResourceLedger.this) {
                return contextAllocationStack;
            }
        }
    }
}
