package dev.ubuf.cuda;

import jcuda.driver.JCudaDriver;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Page-locked host memory (cuMemHostAlloc): truly asynchronous copies, unlike copies from Java arrays, which JCuda
 * performs synchronously. Read and write it through {@link #segment()}. A mapped buffer
 * ({@link CudaContext#allocateHostMapped}) also has a {@link #deviceAddress()} that kernels and stream memory
 * operations reach over the bus, so the host can signal a stream with a plain store, through no stream of its own.
 */
public final class PinnedHostBuffer implements AutoCloseable {
    private final CudaContext context;
    private final Handles.HostPtr ptr = new Handles.HostPtr();
    private final long bytes;
    private final MemorySegment segment;
    private final ResourceLedger.Entry entry;
    private final AtomicBoolean closed = new AtomicBoolean();
    /** The device's address of a mapped buffer; 0 when not mapped. */
    private final long deviceAddress;

    PinnedHostBuffer(CudaContext context, long bytes) {
        this(context, bytes, false);
    }

    PinnedHostBuffer(CudaContext context, long bytes, boolean mapped) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("allocation size must be positive, got " + bytes);
        }
        this.context = context;
        this.bytes = bytes;
        context.makeCurrent();
        Cuda.check(JCudaDriver.cuMemHostAlloc(ptr, bytes, 0x01 /* CU_MEMHOSTALLOC_PORTABLE */
                | (mapped ? 0x02 /* CU_MEMHOSTALLOC_DEVICEMAP */ : 0)), "cuMemHostAlloc");
        long device = 0;
        if (mapped) {
            Handles.DevPtr d = new Handles.DevPtr();
            try {
                Cuda.check(JCudaDriver.cuMemHostGetDevicePointer(d, ptr, 0), "cuMemHostGetDevicePointer");
            } catch (RuntimeException e) {
                JCudaDriver.cuMemFreeHost(ptr);
                throw e;
            }
            device = d.raw();
        }
        this.deviceAddress = device;
        this.segment = MemorySegment.ofAddress(ptr.raw()).reinterpret(bytes);
        this.entry = context.ledger().track(this, mapped ? "mapped pinned host buffer" : "pinned host buffer", "",
                bytes);
    }

    /** Where the device reaches a mapped buffer; an {@link IllegalStateException} for an unmapped one. */
    public long deviceAddress() {
        assertOpen();
        if (deviceAddress == 0) {
            throw new IllegalStateException(this + " is not mapped for the device (CudaContext.allocateHostMapped)");
        }
        return deviceAddress;
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
