package dev.ubuf.trace;

import dev.ubuf.cuda.CudaStream;

import java.util.Map;

/**
 * Where traced work reports its spans. Code that may be traced holds a tracer and always calls it; {@link #NOOP}
 * (the default) records nothing, {@link StepTracer} records CUDA events for one step of one rank.
 */
public interface Tracer {
    /** Ends a span: closing it marks the end of what was issued on the span's stream. */
    interface Scope extends AutoCloseable {
        /** A span that records nothing. */
        Scope NONE = () -> {
        };

        @Override
        void close();
    }

    /** Records nothing: what untraced work runs with. */
    Tracer NOOP = new Tracer() {
        @Override
        public void nameStream(CudaStream stream, String name) {
        }

        @Override
        public Scope span(CudaStream stream, String name, SpanKind kind, Map<String, Object> args) {
            return Scope.NONE;
        }

        @Override
        public Scope op(CudaStream stream, String name, TracedOp op) {
            return Scope.NONE;
        }

        @Override
        public String toString() {
            return "Tracer.NOOP";
        }
    };

    /** Names {@code stream} in the trace ("caller", "side", ...). */
    void nameStream(CudaStream stream, String name);

    /**
     * Opens a span of {@code kind} on {@code stream}: what is issued on the stream until the returned scope is
     * closed. {@code args} (may be null) is the span's detail in trace files.
     */
    Scope span(CudaStream stream, String name, SpanKind kind, Map<String, Object> args);

    /**
     * Opens a span for one call of {@code op} (an overlapped op) on {@code stream}; issue the call, then close the
     * scope.
     */
    Scope op(CudaStream stream, String name, TracedOp op);
}
