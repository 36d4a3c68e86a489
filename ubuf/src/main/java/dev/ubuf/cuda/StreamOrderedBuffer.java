package dev.ubuf.cuda;

import jcuda.driver.JCudaDriver;

import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Device memory allocated in stream order (cuMemAllocAsync from the device's default pool) and freed on the same
 * stream when closed (cuMemFreeAsync). Neither call waits for the device, so scratch memory can be taken and given
 * back while other streams hold work that waits on peers, which cuMemAlloc and cuMemFree could block behind.
 * Usable by work on its stream after the allocation, and by other streams only once ordered after it.
 */
public final class StreamOrderedBuffer implements DeviceMemory, AutoCloseable {
    private final CudaStream stream;
    private final Handles.DevPtr ptr = new Handles.DevPtr();
    private final long bytes;
    private final ResourceLedger.Entry entry;
    private final long address;
    private final AtomicBoolean closed = new AtomicBoolean();

    StreamOrderedBuffer(CudaStream stream, long bytes) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("allocation size must be positive, got " + bytes);
        }
        this.stream = stream;
        this.bytes = bytes;
        stream.context().makeCurrent();
        Cuda.check(JCudaDriver.cuMemAllocAsync(ptr, bytes, stream.handle()),
                "cuMemAllocAsync(" + bytes + " bytes on " + stream.context().device() + ")");
        this.address = ptr.raw();
        this.entry = stream.context().ledger().trackDeviceMemory(this, toString(), bytes);
    }

    @Override
    public long address() {
        assertOpen();
        return address;
    }

    @Override
    public long bytes() {
        return bytes;
    }

    @Override
    public int device() {
        return stream.context().device().ordinal();
    }

    @Override
    public boolean isOpen() {
        return !closed.get();
    }

    /** Frees on the allocating stream: after the work issued there so far, without waiting for it. */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            try {
                stream.context().makeCurrent();
                Cuda.check(JCudaDriver.cuMemFreeAsync(ptr, stream.handle()), "cuMemFreeAsync");
            } finally {
                entry.close();
            }
        }
    }

    @Override
    public String toString() {
        return "StreamOrderedBuffer(" + bytes + " bytes on " + stream.context().device() + ")";
    }
}
