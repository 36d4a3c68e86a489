package dev.ubuf.trace;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * One traced piece of GPU work: the stream it ran on, what it was, and when it started and ended, in microseconds
 * from its rank's step start. {@code args} carries the detail (shapes, regions, bytes) in insertion order; its
 * values are strings, numbers or booleans.
 */
public record Span(String stream, String name, SpanKind kind, double startUs, double endUs, Map<String, Object> args) {
    public Span {
        Objects.requireNonNull(stream, "stream");
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(kind, "kind");
        if (!Double.isFinite(startUs) || !Double.isFinite(endUs)) {
            throw new IllegalArgumentException(name + ": start and end must be finite, got " + startUs + ", "
                    + endUs);
        }
        // An unmodifiable copy that keeps the order (Map.copyOf would not).
        args = args == null || args.isEmpty() ? Map.of() : Collections.unmodifiableMap(new LinkedHashMap<>(args));
    }

    public double durationUs() {
        return endUs - startUs;
    }
}
