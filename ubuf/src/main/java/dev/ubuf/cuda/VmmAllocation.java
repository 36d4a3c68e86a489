package dev.ubuf.cuda;

import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One physical VMM allocation ({@code CUmemGenericAllocationHandle}) of pinned device memory, created here with
 * {@link #create} (exportable as a POSIX file descriptor) or imported from a peer's descriptor with {@link #importFd}.
 * It has no address until a {@link VmmMapping} maps it. Closing releases the handle (cuMemRelease); memory that is
 * still mapped stays alive until it is unmapped, so an allocation may be closed before or after its mappings.
 *
 * <p>Calls use the CUDA context current on the calling thread (see {@link CudaVmm}). Closing is thread-safe and
 * idempotent.
 */
public final class VmmAllocation implements AutoCloseable {
    private final VmmDriver driver;
    private final long handle;
    private final long size;
    private final int device;
    private final long granularity;
    private final boolean imported;
    private final AtomicBoolean closed = new AtomicBoolean();

    private VmmAllocation(VmmDriver driver, long handle, long size, int device, long granularity, boolean imported) {
        this.driver = driver;
        this.handle = handle;
        this.size = size;
        this.device = device;
        this.granularity = granularity;
        this.imported = imported;
    }

    /**
     * Allocates at least {@code requestedSize} bytes on device ordinal {@code device}: the size is rounded up to the
     * device's minimum VMM granularity (2 MiB on current NVIDIA GPUs), which {@link #size()} reports.
     */
    public static VmmAllocation create(long requestedSize, int device) {
        return create(CudaVmm.driver(), requestedSize, device);
    }

    static VmmAllocation create(VmmDriver driver, long requestedSize, int device) {
        requirePositive(requestedSize, "requestedSize");
        requireDevice(device);
        long granularity = driver.granularity(device, CudaVmm.Granularity.MINIMUM);
        long size = CudaVmm.roundUpToGranularity(requestedSize, granularity);
        long handle = driver.memCreate(size, device);
        return new VmmAllocation(driver, handle, size, device, granularity, false);
    }

    /**
     * Imports a peer's allocation from the POSIX file descriptor it exported (received e.g. over a Unix socket with
     * SCM_RIGHTS). {@code size} must be the exporter's {@link #size()}; {@code device} is the ordinal, in this
     * process, of the GPU that holds the memory (it sets the granularity mappings must respect). The fd stays the
     * caller's: close it after this returns.
     */
    public static VmmAllocation importFd(int fd, long size, int device) {
        return importFd(CudaVmm.driver(), fd, size, device);
    }

    static VmmAllocation importFd(VmmDriver driver, int fd, long size, int device) {
        if (fd < 0) {
            throw new IllegalArgumentException("file descriptor must be non-negative, got " + fd);
        }
        requirePositive(size, "size");
        requireDevice(device);
        long granularity = driver.granularity(device, CudaVmm.Granularity.MINIMUM);
        if (size % granularity != 0) {
            throw new IllegalArgumentException("imported size " + size + " is not a multiple of device " + device
                    + "'s granularity " + granularity + "; pass the exporter's VmmAllocation.size()");
        }
        long handle = driver.importFromFd(fd);
        return new VmmAllocation(driver, handle, size, device, granularity, true);
    }

    /**
     * Exports this allocation as a new POSIX file descriptor (cuMemExportToShareableHandle). The caller owns the fd
     * and must close it once it has been sent.
     */
    public int exportFd() {
        return driver.exportToFd(handle());
    }

    /** The raw {@code CUmemGenericAllocationHandle}. */
    public long handle() {
        if (closed.get()) {
            throw new IllegalStateException(this + " is closed");
        }
        return handle;
    }

    /** Bytes, a multiple of {@link #granularity()}. */
    public long size() {
        return size;
    }

    /** Device ordinal that holds the memory. */
    public int device() {
        return device;
    }

    /** The device's minimum VMM granularity: mapping offsets of this allocation must be multiples of it. */
    public long granularity() {
        return granularity;
    }

    /** Whether this came from {@link #importFd} rather than {@link #create}. */
    public boolean isImported() {
        return imported;
    }

    public boolean isOpen() {
        return !closed.get();
    }

    /** Releases the handle (cuMemRelease) once; later calls do nothing. A failed release is not retried. */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            driver.memRelease(handle);
        }
    }

    @Override
    public String toString() {
        return "VmmAllocation[" + size + " bytes on device " + device + (imported ? ", imported" : "")
                + (isOpen() ? "" : ", closed") + "]";
    }

    private static void requirePositive(long v, String name) {
        if (v <= 0) {
            throw new IllegalArgumentException(name + " must be positive, got " + v);
        }
    }

    private static void requireDevice(int device) {
        if (device < 0) {
            throw new IllegalArgumentException("device ordinal must be non-negative, got " + device);
        }
    }
}
