package dev.ubuf.trace;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One step of a traced call: the stream it ran on (index and role, "caller" for the caller's own stream), what kind
 * of work it was and what it did, when it started and ended in ms from an origin event (CUDA events), and its detail
 * ({@code args}: regions, shapes, bytes, flags; insertion order).
 */
public record TraceSpan(int stream, String role, SpanKind kind, String what, double startMs, double endMs,
                        Map<String, Object> args) {
    public TraceSpan {
        args = args == null || args.isEmpty() ? Map.of() : Collections.unmodifiableMap(new LinkedHashMap<>(args));
    }

    public double durationMs() {
        return endMs - startMs;
    }
}
