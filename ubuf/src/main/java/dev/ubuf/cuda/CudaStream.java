package dev.ubuf.cuda;

import jcuda.driver.CUgraph;
import jcuda.driver.CUresult;
import jcuda.driver.JCudaDriver;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A non-blocking CUDA stream and the stream-ordered operations ubuf issues on it: copies (including to a peer's
 * memory, which the copy engines carry), memsets, 32-bit flag writes and waits, event waits.
 */
public final class CudaStream implements AutoCloseable {
    private final CudaContext context;
    private final Handles.Stream handle = new Handles.Stream();
    private final StreamPriority priority;
    private final ResourceLedger.Entry entry;
    private final AtomicBoolean closed = new AtomicBoolean();

    CudaStream(CudaContext context, StreamPriority priority) {
        this.context = context;
        this.priority = priority;
        context.makeCurrent();
        int[] least = new int[1];
        int[] greatest = new int[1];
        Cuda.check(JCudaDriver.cuCtxGetStreamPriorityRange(least, greatest), "cuCtxGetStreamPriorityRange");
        int p = priority == StreamPriority.HIGH ? greatest[0] : least[0];
        Cuda.check(JCudaDriver.cuStreamCreateWithPriority(handle, 0x1 /* CU_STREAM_NON_BLOCKING */, p),
                "cuStreamCreateWithPriority");
        String kind = priority == StreamPriority.HIGH ? "high-priority stream" : "stream";
        this.entry = context.ledger().track(this, kind, "", 0);
    }

    Handles.Stream handle() {
        if (closed.get()) {
            throw new IllegalStateException("stream is closed");
        }
        return handle;
    }

    /** The raw cudaStream_t, for libraries bound through java.lang.foreign (cuBLASLt, NCCL). */
    public long nativeHandle() {
        return handle().raw();
    }

    public CudaContext context() {
        return context;
    }

    public StreamPriority priority() {
        return priority;
    }

    /**
     * {@code bytes} of device memory in this stream's order, freed on this stream when closed; neither waits for the
     * device (see {@link StreamOrderedBuffer}).
     */
    public StreamOrderedBuffer allocate(long bytes) {
        return new StreamOrderedBuffer(this, bytes);
    }

    /** Asynchronous copy of {@code bytes} between two device addresses, on either GPU (unified addressing). */
    public void copy(long dstAddress, long srcAddress, long bytes) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("copy size must be positive, got " + bytes);
        }
        Cuda.check(JCudaDriver.cuMemcpyAsync(Handles.ptr(dstAddress), Handles.ptr(srcAddress), bytes, handle()),
                "cuMemcpyAsync(" + bytes + " bytes)");
    }

    public void copy(DeviceMemory dst, long dstOffset, DeviceMemory src, long srcOffset, long bytes) {
        checkRange(dst, dstOffset, bytes);
        checkRange(src, srcOffset, bytes);
        copy(dst.address() + dstOffset, src.address() + srcOffset, bytes);
    }

    /**
     * Asynchronous 2-D copy: {@code height} rows of {@code widthBytes}, rows {@code srcPitch}/{@code dstPitch} bytes
     * apart, between device addresses on either GPU (copy engines handle the strides).
     */
    public void copy2d(long dstAddress, long dstPitch, long srcAddress, long srcPitch, long widthBytes, long height) {
        if (widthBytes <= 0 || height <= 0 || dstPitch < widthBytes || srcPitch < widthBytes) {
            throw new IllegalArgumentException("bad 2-D copy: " + height + " rows of " + widthBytes + " bytes, pitches "
                    + srcPitch + " -> " + dstPitch);
        }
        if (dstPitch == widthBytes && srcPitch == widthBytes) {
            copy(dstAddress, srcAddress, widthBytes * height);
            return;
        }
        jcuda.driver.CUDA_MEMCPY2D c = new jcuda.driver.CUDA_MEMCPY2D();
        c.srcMemoryType = jcuda.driver.CUmemorytype.CU_MEMORYTYPE_DEVICE;
        c.srcDevice = Handles.ptr(srcAddress);
        c.srcPitch = srcPitch;
        c.dstMemoryType = jcuda.driver.CUmemorytype.CU_MEMORYTYPE_DEVICE;
        c.dstDevice = Handles.ptr(dstAddress);
        c.dstPitch = dstPitch;
        c.WidthInBytes = widthBytes;
        c.Height = height;
        Cuda.check(JCudaDriver.cuMemcpy2DAsync(c, handle()), "cuMemcpy2DAsync");
    }

    public void copyFromHost(DeviceMemory dst, long dstOffset, PinnedHostBuffer src, long srcOffset, long bytes) {
        checkRange(dst, dstOffset, bytes);
        if (srcOffset < 0 || srcOffset + bytes > src.bytes()) {
            throw new IllegalArgumentException("host range " + srcOffset + "+" + bytes + " outside " + src);
        }
        Cuda.check(JCudaDriver.cuMemcpyHtoDAsync(Handles.ptr(dst.address() + dstOffset),
                src.pointer().withByteOffset(srcOffset), bytes, handle()), "cuMemcpyHtoDAsync");
    }

    public void copyToHost(PinnedHostBuffer dst, long dstOffset, DeviceMemory src, long srcOffset, long bytes) {
        checkRange(src, srcOffset, bytes);
        if (dstOffset < 0 || dstOffset + bytes > dst.bytes()) {
            throw new IllegalArgumentException("host range " + dstOffset + "+" + bytes + " outside " + dst);
        }
        Cuda.check(JCudaDriver.cuMemcpyDtoHAsync(dst.pointer().withByteOffset(dstOffset),
                Handles.ptr(src.address() + srcOffset), bytes, handle()), "cuMemcpyDtoHAsync");
    }

    /** Fills {@code count} 32-bit words at {@code address} with {@code bits}. */
    public void fill32(long address, int bits, long count) {
        Cuda.check(JCudaDriver.cuMemsetD32Async(Handles.ptr(address), bits, count, handle()), "cuMemsetD32Async");
    }

    public void fill8(long address, byte bits, long count) {
        Cuda.check(JCudaDriver.cuMemsetD8Async(Handles.ptr(address), bits, count, handle()), "cuMemsetD8Async");
    }

    /** After this stream's earlier work, write {@code value} to the 32-bit word at {@code address} (any GPU). */
    public void writeValue32(long address, int value) {
        Cuda.check(JCudaDriver.cuStreamWriteValue32(handle(), Handles.ptr(address), value, 0),
                "cuStreamWriteValue32");
    }

    /** Block this stream until the word at {@code address} reaches {@code value} (cyclic >=, wrap-safe). */
    public void waitValue32(long address, int value) {
        waitValue32(address, value, false);
    }

    /**
     * As {@link #waitValue32(long, int)}; with {@code flush}, the wait is followed by a flush of outstanding remote
     * writes (CU_STREAM_WAIT_VALUE_FLUSH), legal only where {@link CudaDevice#canFlushRemoteWrites()}.
     */
    public void waitValue32(long address, int value, boolean flush) {
        int flags = 0 /* CU_STREAM_WAIT_VALUE_GEQ */ | (flush ? 1 << 30 /* CU_STREAM_WAIT_VALUE_FLUSH */ : 0);
        Cuda.check(JCudaDriver.cuStreamWaitValue32(handle(), Handles.ptr(address), value, flags),
                "cuStreamWaitValue32");
    }

    public void waitEvent(CudaEvent event) {
        Cuda.check(JCudaDriver.cuStreamWaitEvent(handle(), event.handle(), 0), "cuStreamWaitEvent");
    }

    /** Whether all work issued so far has completed. */
    public boolean isIdle() {
        int rc = Cuda.returnCode(() -> JCudaDriver.cuStreamQuery(handle()));
        if (rc == CUresult.CUDA_ERROR_NOT_READY) {
            return false;
        }
        Cuda.check(rc, "cuStreamQuery");
        return true;
    }

    public void synchronize() {
        Cuda.check(JCudaDriver.cuStreamSynchronize(handle()), "cuStreamSynchronize");
    }

    /**
     * Waits for this stream with a deadline, polling so that a hang (for example a peer that never signals) becomes
     * an error instead of a stuck thread.
     *
     * @return true when the stream finished, false when the deadline passed first
     */
    public boolean synchronize(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        long sleepNanos = 2_000;
        while (!isIdle()) {
            if (System.nanoTime() - deadline > 0) {
                return false;
            }
            java.util.concurrent.locks.LockSupport.parkNanos(sleepNanos);
            sleepNanos = Math.min(sleepNanos * 2, 1_000_000);
        }
        return true;
    }

    /** Whether this stream is recording into a graph (work issued now is captured, not run). */
    public boolean isCapturing() {
        int[] status = new int[1];
        Cuda.check(JCudaDriver.cuStreamIsCapturing(handle(), status), "cuStreamIsCapturing");
        return status[0] != 0; // CU_STREAM_CAPTURE_STATUS_NONE = 0
    }

    /** Starts recording this stream's work into a graph instead of running it. */
    public void beginCapture() {
        Cuda.check(JCudaDriver.cuStreamBeginCapture(handle(), 2 /* CU_STREAM_CAPTURE_MODE_RELAXED */),
                "cuStreamBeginCapture");
    }

    /** Ends a capture started with {@link #beginCapture()} and instantiates the graph. */
    public CudaGraph endCapture() {
        return endCapture(false);
    }

    /**
     * Ends a capture and instantiates the graph; with {@code nodePriorities} a replay runs each kernel at the priority
     * of the stream it was captured on (communication kernels ahead of GEMMs, as on the streams), not at the priority
     * of the stream the graph is launched into.
     */
    public CudaGraph endCapture(boolean nodePriorities) {
        CUgraph graph = new CUgraph();
        Cuda.check(JCudaDriver.cuStreamEndCapture(handle(), graph), "cuStreamEndCapture");
        return new CudaGraph(context, graph, nodePriorities ? CudaGraph.USE_NODE_PRIORITY : 0);
    }

    /**
     * {@code work} captured from this stream into a graph ({@code nodePriorities}: see {@link #endCapture(boolean)});
     * if it throws, the capture is ended and its graph dropped before the exception goes on.
     */
    public CudaGraph capture(Runnable work, boolean nodePriorities) {
        beginCapture();
        try {
            work.run();
        } catch (RuntimeException | Error e) {
            try {
                endCapture().close();
            } catch (RuntimeException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
        return endCapture(nodePriorities);
    }

    private static void checkRange(DeviceMemory m, long offset, long bytes) {
        m.assertOpen();
        if (offset < 0 || bytes <= 0 || offset + bytes > m.bytes()) {
            throw new IllegalArgumentException("range " + offset + "+" + bytes + " outside " + m
                    + " of " + m.bytes() + " bytes");
        }
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            try {
                Cuda.check(JCudaDriver.cuStreamDestroy(handle), "cuStreamDestroy");
            } finally {
                entry.close();
            }
        }
    }
}
