package dev.ubuf.trace;

import java.util.List;

/**
 * One rank's traced step: its streams in display order (every span's stream is one of them) and its spans, times
 * relative to the rank's own step-start event.
 */
public record RankTrace(int rank, List<String> streams, List<Span> spans) {
    public RankTrace {
        streams = List.copyOf(streams);
        spans = List.copyOf(spans);
        for (Span s : spans) {
            if (!streams.contains(s.stream())) {
                throw new IllegalArgumentException("rank " + rank + ": span " + s.name() + " is on stream "
                        + s.stream() + ", which is not one of " + streams);
            }
        }
    }

    /** The end of the last span (0 without spans), in µs from the step start. */
    public double endUs() {
        return spans.stream().mapToDouble(Span::endUs).max().orElse(0);
    }

    /** The end of the last span of GPU work ({@link SpanKind#HOST} spans left out; 0 without any). */
    public double gpuEndUs() {
        return spans.stream().filter(s -> s.kind() != SpanKind.HOST).mapToDouble(Span::endUs).max().orElse(0);
    }
}
