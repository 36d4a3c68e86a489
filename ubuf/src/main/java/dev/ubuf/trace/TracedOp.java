package dev.ubuf.trace;

import dev.ubuf.cuda.CudaEvent;

import java.util.List;

/**
 * Work that times its own steps on its own streams, as an overlapped op does: what {@link Tracer#op} needs of it.
 * Defined here, and implemented by the op model, so that tracing depends on no op or executor.
 */
public interface TracedOp {
    /** What runs, e.g. "ring:sub=4": part of the span's name. */
    String label();

    /** What the op computes (its shape's key): the span's {@code op} detail in trace files. */
    String traceKey();

    /** Records per-step timing from the next call on, for {@link #trace(CudaEvent)}. */
    void enableTrace();

    /**
     * The last traced call's steps, timed from {@code origin}, a timing event of this rank's context recorded before
     * the call; call after the call completed. Steps on the stream the op was called on have the role "caller".
     */
    List<TraceSpan> trace(CudaEvent origin);
}
