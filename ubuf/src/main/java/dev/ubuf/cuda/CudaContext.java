package dev.ubuf.cuda;

import jcuda.driver.CUcontext;
import jcuda.driver.JCudaDriver;

import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The primary context of one device, retained for the lifetime of this object. Factory for the device's streams,
 * events and buffers, which it tracks in its {@link ResourceLedger}: closing it while any is open fails with their
 * names. While open, the ledger is visible through JMX (see {@link ResourceLedger}); a context collected without
 * close is reported by the {@link LeakTracker}.
 * Each thread that uses the device calls {@link #makeCurrent()}; the factories do it for you.
 */
public final class CudaContext implements AutoCloseable {
    static {
        JCudaNativeLibrary.ensureWritten(); // before JCudaDriver's class loads its library
    }

    private final CudaDevice device;
    private final Handles.Context handle = new Handles.Context();
    private final ResourceLedger ledger;
    private final LeakTracker.Tracked tracked;
    private final AtomicBoolean closed = new AtomicBoolean();
    private ReportReader reportReader; // guarded by this

    private CudaContext(CudaDevice device) {
        this.device = device;
        this.ledger = new ResourceLedger(device.ordinal(), LeakTracker.process());
        Cuda.check(JCudaDriver.cuDevicePrimaryCtxRetain(handle, device.handle()), "cuDevicePrimaryCtxRetain");
        this.tracked = LeakTracker.process().track(this, "CUDA context of " + device);
        try {
            ledger.publish(tracked.allocationStack().orElse(null));
            makeCurrent();
        } catch (RuntimeException e) {
            ledger.unpublish();
            tracked.closed();
            try {
                JCudaDriver.cuDevicePrimaryCtxRelease(device.handle()); // undo the retain
            } catch (RuntimeException undo) { // JCuda's exception mode may be on: the first error is the news
                e.addSuppressed(undo);
            }
            throw e;
        }
    }

    public static CudaContext retainPrimary(CudaDevice device) {
        return new CudaContext(device);
    }

    public static CudaContext retainPrimary(int ordinal) {
        return new CudaContext(CudaDevice.get(ordinal));
    }

    public CudaDevice device() {
        return device;
    }

    public ResourceLedger ledger() {
        return ledger;
    }

    CUcontext handle() {
        return handle;
    }

    /** Binds this context to the calling thread (cheap; call it at the top of every per-rank thread). */
    public CudaContext makeCurrent() {
        assertOpen();
        Cuda.check(JCudaDriver.cuCtxSetCurrent(handle), "cuCtxSetCurrent");
        return this;
    }

    public void synchronize() {
        makeCurrent();
        Cuda.check(JCudaDriver.cuCtxSynchronize(), "cuCtxSynchronize");
    }

    /** Lets kernels and copies on this device address {@code peer}'s memory directly; already-enabled is fine. */
    public void enablePeerAccess(CudaContext peer) {
        if (peer.device.ordinal() == device.ordinal()) {
            return;
        }
        if (!device.canAccessPeer(peer.device)) {
            throw new IllegalStateException(device + " cannot access " + peer.device + " (no P2P path)");
        }
        makeCurrent();
        int rc = Cuda.returnCode(() -> JCudaDriver.cuCtxEnablePeerAccess(peer.handle, 0));
        if (rc != jcuda.driver.CUresult.CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) {
            Cuda.check(rc, "cuCtxEnablePeerAccess(" + device + " -> " + peer.device + ")");
        }
    }

    /** Free and total device memory as seen by the driver, bytes. */
    public long[] memoryInfo() {
        makeCurrent();
        long[] free = new long[1];
        long[] total = new long[1];
        Cuda.check(JCudaDriver.cuMemGetInfo(free, total), "cuMemGetInfo");
        return new long[]{free[0], total[0]};
    }

    /**
     * Reads one int32 of device memory for a report, giving up after {@code deadline}: an asynchronous copy into
     * pinned memory on a stream of its own, polled. The plain synchronous read ({@link #readInt32(long)}) can block
     * for ever while the GPU's queues are stuck (seen with two ranks on one GPU whose waits deadlocked), and a report
     * of a stuck wait must never hang. The stream and its 4 pinned bytes are made on first use and kept for the next
     * report; after an expired read they are abandoned, never freed, since the copy may still land.
     *
     * @throws IllegalStateException when the value did not arrive within {@code deadline}
     */
    public synchronized int readInt32(long deviceAddress, java.time.Duration deadline) {
        makeCurrent();
        if (reportReader == null) {
            reportReader = new ReportReader();
        }
        ReportReader r = reportReader;
        Cuda.check(JCudaDriver.cuMemcpyDtoHAsync(r.host, Handles.ptr(deviceAddress), Integer.BYTES, r.stream),
                "cuMemcpyDtoHAsync(4 bytes)");
        long end = System.nanoTime() + deadline.toNanos();
        while (true) {
            int rc = Cuda.returnCode(() -> JCudaDriver.cuStreamQuery(r.stream));
            if (rc == jcuda.driver.CUresult.CUDA_SUCCESS) {
                return r.host.getByteBuffer(0, Integer.BYTES).order(java.nio.ByteOrder.nativeOrder()).getInt(0);
            }
            if (rc != jcuda.driver.CUresult.CUDA_ERROR_NOT_READY) {
                Cuda.check(rc, "cuStreamQuery");
            }
            if (System.nanoTime() - end > 0) {
                reportReader = null; // abandoned with its copy in flight
                throw new IllegalStateException("no answer from " + device + " within " + deadline.toMillis()
                        + " ms (its queues may be stuck)");
            }
            Thread.onSpinWait();
        }
    }

    /** The stream and pinned word of {@link #readInt32(long, java.time.Duration)}; untracked, freed by close. */
    private static final class ReportReader {
        final jcuda.driver.CUstream stream = new jcuda.driver.CUstream();
        final jcuda.Pointer host = new jcuda.Pointer();

        ReportReader() {
            Cuda.check(JCudaDriver.cuStreamCreate(stream, 0x1 /* CU_STREAM_NON_BLOCKING */), "cuStreamCreate");
            try {
                Cuda.check(JCudaDriver.cuMemAllocHost(host, Integer.BYTES), "cuMemAllocHost(4 bytes)");
            } catch (RuntimeException e) {
                JCudaDriver.cuStreamDestroy(stream);
                throw e;
            }
        }

        void free() {
            JCudaDriver.cuMemFreeHost(host);
            JCudaDriver.cuStreamDestroy(stream);
        }
    }

    /** Reads one int32 of device memory synchronously, outside every stream of ours (for diagnostics). */
    public int readInt32(long deviceAddress) {
        makeCurrent();
        int[] v = new int[1];
        Cuda.check(JCudaDriver.cuMemcpyDtoH(jcuda.Pointer.to(v), Handles.ptr(deviceAddress), Integer.BYTES),
                "cuMemcpyDtoH(4 bytes)");
        return v[0];
    }

    public DeviceBuffer allocate(long bytes) {
        return new DeviceBuffer(this, bytes, "");
    }

    /** A device allocation with a name that ledgers, leak reports and test failures show. */
    public DeviceBuffer allocate(long bytes, String name) {
        return new DeviceBuffer(this, bytes, name);
    }

    public PinnedHostBuffer allocateHost(long bytes) {
        return new PinnedHostBuffer(this, bytes);
    }

    /** Page-locked host memory the device can also reach ({@link PinnedHostBuffer#deviceAddress()}). */
    public PinnedHostBuffer allocateHostMapped(long bytes) {
        return new PinnedHostBuffer(this, bytes, true);
    }

    public CudaStream createStream(StreamPriority priority) {
        return new CudaStream(this, priority);
    }

    public CudaEvent createEvent(boolean timing) {
        return new CudaEvent(this, timing);
    }

    void assertOpen() {
        if (closed.get()) {
            throw new IllegalStateException("context of " + device + " is closed");
        }
    }

    boolean isOpen() {
        return !closed.get();
    }

    /** Releases the primary context; fails (without releasing) when resources created from it are still open. */
    @Override
    public void close() {
        var open = ledger.openResources();
        if (!open.isEmpty()) {
            throw new IllegalStateException("closing the context of " + device + " with " + open.size()
                    + " resources still open: " + open);
        }
        if (closed.compareAndSet(false, true)) {
            try {
                synchronized (this) {
                    if (reportReader != null) {
                        Cuda.check(JCudaDriver.cuCtxSetCurrent(handle), "cuCtxSetCurrent");
                        reportReader.free();
                        reportReader = null;
                    }
                }
                Cuda.check(JCudaDriver.cuDevicePrimaryCtxRelease(device.handle()), "cuDevicePrimaryCtxRelease");
            } finally {
                ledger.unpublish();
                tracked.closed();
            }
        }
    }

    @Override
    public String toString() {
        return "CudaContext(" + device + ")";
    }
}
