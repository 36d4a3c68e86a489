package dev.ubuf.cuda;

import jcuda.driver.JCudaDriver;

import java.util.concurrent.atomic.AtomicBoolean;

/** A CUDA event: cross-stream ordering and, when created with timing, elapsed time between two records. */
public final class CudaEvent implements AutoCloseable {
    private final CudaContext context;
    private final Handles.Event handle = new Handles.Event();
    private final boolean timing;
    private final ResourceLedger.Entry entry;
    private final AtomicBoolean closed = new AtomicBoolean();

    CudaEvent(CudaContext context, boolean timing) {
        this.context = context;
        this.timing = timing;
        context.makeCurrent();
        Cuda.check(JCudaDriver.cuEventCreate(handle, timing ? 0 : 0x2 /* CU_EVENT_DISABLE_TIMING */), "cuEventCreate");
        this.entry = context.ledger().track(this, "event", "", 0);
    }

    Handles.Event handle() {
        assertOpen();
        return handle;
    }

    public void record(CudaStream stream) {
        Cuda.check(JCudaDriver.cuEventRecord(handle(), stream.handle()), "cuEventRecord");
    }

    /**
     * Records a timestamp of {@code stream}'s progress for {@link #elapsedMillisSince}. While the stream is capturing
     * a CUDA graph, the record becomes an event record node of the graph (CU_EVENT_RECORD_EXTERNAL), which each
     * replay records and which can be timed once the replay completed; a plain {@link #record} under capture only
     * orders the graph's streams and cannot be timed.
     */
    public void recordTimestamp(CudaStream stream) {
        if (!timing) {
            throw new IllegalStateException("a timestamp needs an event created with timing enabled");
        }
        if (stream.isCapturing()) {
            Cuda.check(JCudaDriver.cuEventRecordWithFlags(handle(), stream.handle(),
                    jcuda.driver.CUevent_record_flags.CU_EVENT_RECORD_EXTERNAL), "cuEventRecordWithFlags");
        } else {
            record(stream);
        }
    }

    /** Whether the work before the last record has completed; never waits. */
    public boolean isComplete() {
        int rc = Cuda.returnCode(() -> JCudaDriver.cuEventQuery(handle()));
        if (rc == jcuda.driver.CUresult.CUDA_ERROR_NOT_READY) {
            return false;
        }
        Cuda.check(rc, "cuEventQuery");
        return true;
    }

    public void synchronize() {
        Cuda.check(JCudaDriver.cuEventSynchronize(handle()), "cuEventSynchronize");
    }

    /** Milliseconds from {@code start}'s record to this event's (both recorded with timing enabled). */
    public float elapsedMillisSince(CudaEvent start) {
        if (!timing || !start.timing) {
            throw new IllegalStateException("elapsed time needs two events created with timing enabled");
        }
        float[] ms = new float[1];
        Cuda.check(JCudaDriver.cuEventElapsedTime(ms, start.handle(), handle()), "cuEventElapsedTime");
        return ms[0];
    }

    private void assertOpen() {
        if (closed.get()) {
            throw new IllegalStateException("event is closed");
        }
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            try {
                Cuda.check(JCudaDriver.cuEventDestroy(handle), "cuEventDestroy");
            } finally {
                entry.close();
            }
        }
    }
}
