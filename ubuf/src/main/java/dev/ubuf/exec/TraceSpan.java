package dev.ubuf.exec;

/**
 * One step of a traced call: the stream it ran on (index and role), what it did, and when it started and ended, in
 * ms from the call's start (CUDA events).
 */
public record TraceSpan(int stream, String role, String what, double startMs, double endMs) {
    public double durationMs() {
        return endMs - startMs;
    }
}
