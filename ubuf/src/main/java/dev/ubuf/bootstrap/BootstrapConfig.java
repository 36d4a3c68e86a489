package dev.ubuf.bootstrap;

import java.time.Duration;
import java.util.Map;
import java.util.Objects;

/**
 * Settings of a bootstrap, read once at the edge of the program and passed down.
 *
 * @param timeout the deadline of every bootstrap operation (connecting included)
 */
public record BootstrapConfig(Duration timeout) {
    /** Environment variable with the deadline in seconds (decimals allowed). */
    public static final String TIMEOUT_VARIABLE = "UB_TIMEOUT";
    /** Deadline when {@value #TIMEOUT_VARIABLE} is not set. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(110);

    public BootstrapConfig {
        Objects.requireNonNull(timeout, "timeout");
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("bootstrap timeout must be positive, got " + timeout);
        }
    }

    public static BootstrapConfig defaults() {
        return new BootstrapConfig(DEFAULT_TIMEOUT);
    }

    /** Reads {@value #TIMEOUT_VARIABLE} (seconds, &gt; 0) from {@code env}; the default when it is absent or blank. */
    public static BootstrapConfig fromEnvironment(Map<String, String> env) {
        String value = env.get(TIMEOUT_VARIABLE);
        if (value == null || value.isBlank()) {
            return defaults();
        }
        double seconds;
        try {
            seconds = Double.parseDouble(value.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(TIMEOUT_VARIABLE + " must be a number of seconds, got '" + value + "'");
        }
        if (!(seconds > 0) || Double.isInfinite(seconds) || seconds > 365 * 86400.0) {
            throw new IllegalArgumentException(TIMEOUT_VARIABLE + " must be a positive number of seconds (at most a "
                    + "year), got '" + value + "'");
        }
        return new BootstrapConfig(Duration.ofNanos(Math.max(1_000_000L, Math.round(seconds * 1e9))));
    }
}
