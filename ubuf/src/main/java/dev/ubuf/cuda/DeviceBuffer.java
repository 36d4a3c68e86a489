package dev.ubuf.cuda;

import jcuda.driver.JCudaDriver;

import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;

/** A device allocation (cuMemAlloc) owned by this object, optionally named for reports; freed once on close. */
public final class DeviceBuffer implements DeviceMemory, AutoCloseable {
    private final CudaContext context;
    private final Handles.DevPtr ptr = new Handles.DevPtr();
    private final long bytes;
    private final String name;
    private final long address;
    private final ResourceLedger.Entry entry;
    private final AtomicBoolean closed = new AtomicBoolean();

    DeviceBuffer(CudaContext context, long bytes, String name) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("allocation size must be positive, got " + bytes);
        }
        this.context = context;
        this.bytes = bytes;
        this.name = Objects.requireNonNull(name, "name");
        context.makeCurrent();
        Cuda.check(JCudaDriver.cuMemAlloc(ptr, bytes), "cuMemAlloc(" + bytes + " bytes on " + context.device() + ")");
        this.address = ptr.raw();
        this.entry = context.ledger().trackDeviceMemory(this, name, bytes);
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
                entry.close();
            }
        }
    }

    @Override
    public String toString() {
        return "DeviceBuffer(" + (name.isEmpty() ? "" : "'" + name + "', ") + bytes + " bytes on " + context.device()
                + ")";
    }
}
