package dev.ubuf.cuda;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Tracks the native resources a context owns so that closing the context with something still open is reported
 * by name instead of leaking silently. Thread-safe.
 */
public final class ResourceLedger {
    private final Map<Object, String> open = new LinkedHashMap<>();
    private long deviceBytes;
    private long peakDeviceBytes;

    synchronized void opened(Object resource, String description, long bytes) {
        open.put(resource, description);
        deviceBytes += bytes;
        peakDeviceBytes = Math.max(peakDeviceBytes, deviceBytes);
    }

    synchronized void closed(Object resource, long bytes) {
        if (open.remove(resource) != null) {
            deviceBytes -= bytes;
        }
    }

    public synchronized List<String> openResources() {
        return new ArrayList<>(open.values());
    }

    /** Device bytes currently allocated through this context's buffers. */
    public synchronized long deviceBytes() {
        return deviceBytes;
    }

    public synchronized long peakDeviceBytes() {
        return peakDeviceBytes;
    }
}
