package dev.ubuf.bootstrap;

import java.time.Duration;

/** Human-readable durations for error messages ("3 s", "250 ms"). */
final class Durations {
    private Durations() {
    }

    static String format(Duration d) {
        long millis = d.toMillis();
        if (millis % 1000 == 0) {
            return (millis / 1000) + " s";
        }
        if (millis >= 1000) {
            return String.format(java.util.Locale.ROOT, "%.3f s", millis / 1000.0);
        }
        return millis + " ms";
    }
}
