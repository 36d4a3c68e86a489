package dev.ubuf.cuda;

import jcuda.driver.JCudaDriver;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Page-locked host memory (cuMemHostAlloc): truly asynchronous copies, unlike copies from Java arrays, which JCuda
 * performs synchronously. Read and write it through {@link #segment()}.
 */
public final class PinnedHostBuffer implements AutoCloseable {
    private final CudaContext context;
    private final Handles.HostPtr ptr = new Handles.HostPtr();
    private final long bytes;
    private final MemorySegment segment;
    private final ResourceLedger.Entry entry;
    private final AtomicBoolean closed = new AtomicBoolean();

    PinnedHostBuffer(CudaContext context, long bytes) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("allocation size must be positive, got " + bytes);
        }
        this.context = context;
        this.bytes = bytes;
        context.makeCurrent();
        Cuda.check(JCudaDriver.cuMemHostAlloc(ptr, bytes, 0x01 /* CU_MEMHOSTALLOC_PORTABLE */), "cuMemHostAlloc");
        this.segment = MemorySegment.ofAddress(ptr.raw()).reinterpret(bytes);
        this.entry = context.ledger().track(this, "pinned host buffer", "", bytes);
    }

    public MemorySegment segment() {
        assertOpen();
        return segment;
    }

    jcuda.Pointer pointer() {
        assertOpen();
        return ptr;
    }

    public long bytes() {
        return bytes;
    }

    public void assertOpen() {
        if (closed.get()) {
            throw new IllegalStateException(this + " is closed");
        }
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            try {
                context.makeCurrent();
                Cuda.check(JCudaDriver.cuMemFreeHost(ptr), "cuMemFreeHost");
            } finally {
                entry.close();
            }
        }
    }

    @Override
    public String toString() {
        return "PinnedHostBuffer(" + bytes + " bytes)";
    }
}
