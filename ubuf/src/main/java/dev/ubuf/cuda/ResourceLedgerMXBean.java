package dev.ubuf.cuda;

import java.util.List;

/**
 * An open context's {@link ResourceLedger} as JMX shows it ({@code dev.ubuf:type=ResourceLedger,device=N,id=...}):
 * what jconsole or JMC display, and what the test extension reads to find what a test left open.
 */
public interface ResourceLedgerMXBean {
    /** Ordinal of the context's device. */
    int getDevice();

    long getDeviceBytes();

    long getPeakDeviceBytes();

    /** The resources open now, oldest first. */
    List<ResourceLedger.OpenResource> getOpenResources();

    /** Where the context was retained, when stacks are recorded ({@link LeakTracker#DEBUG_PROPERTY}), else null. */
    String getContextAllocationStack();
}
