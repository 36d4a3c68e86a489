package dev.ubuf.cuda;

import jcuda.driver.JCudaDriver;

import java.util.concurrent.atomic.AtomicBoolean;

/** A device allocation (cuMemAlloc) owned by this object; freed once on close. */
public final class DeviceBuffer implements DeviceMemory, AutoCloseable {
    private final CudaContext context;
    private final Handles.DevPtr ptr = new Handles.DevPtr();
    private final long bytes;
    private final long address;
    private final AtomicBoolean closed = new AtomicBoolean();

    DeviceBuffer(CudaContext context, long bytes) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("allocation size must be positive, got " + bytes);
        }
        this.context = context;
        this.bytes = bytes;
        context.makeCurrent();
        Cuda.check(JCudaDriver.cuMemAlloc(ptr, bytes), "cuMemAlloc(" + bytes + " bytes on " + context.device() + ")");
        this.address = ptr.raw();
        context.ledger().opened(this, toString(), bytes);
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
        return context.device().ordinal();
    }

    @Override
    public boolean isOpen() {
        return !closed.get();
    }

    public CudaContext context() {
        return context;
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            try {
                context.makeCurrent();
                Cuda.check(JCudaDriver.cuMemFree(ptr), "cuMemFree");
            } finally {
                context.ledger().closed(this, bytes);
            }
        }
    }

    @Override
    public String toString() {
        return "DeviceBuffer(" + bytes + " bytes on " + context.device() + ")";
    }
}
