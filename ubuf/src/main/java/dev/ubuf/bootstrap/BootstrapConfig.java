package dev.ubuf.bootstrap;

import java.time.Duration;
import java.util.Map;
import java.util.Objects;

/**
 * Settings of a bootstrap, read once at the edge of the program and passed down.
 *
 * @param timeout          the deadline of every bootstrap operation (connecting included)
 * @param handshakeTimeout how long rank 0 waits for a connecting process to introduce itself before it drops it, so
 *                         idle or slow strangers cannot hold rank 0's handshake threads
 * @param allowNoToken     let the TCP bootstrap run without a job token ({@link LaunchEnvironment#JOB_TOKEN}); only
 *                         for trusted single-user hosts, since any process that reaches rank 0 could then join
 */
public record BootstrapConfig(Duration timeout, Duration handshakeTimeout, boolean allowNoToken) {
    /** Environment variable with the deadline in seconds (decimals allowed). */
    public static final String TIMEOUT_VARIABLE = "UB_TIMEOUT";
    /** Environment variable with the handshake deadline in seconds (decimals allowed). */
    public static final String HANDSHAKE_TIMEOUT_VARIABLE = "UBUF_HANDSHAKE_TIMEOUT";
    /** Environment variable that, set to 1, lets the TCP bootstrap run without a job token. */
    public static final String ALLOW_NO_TOKEN_VARIABLE = "UBUF_ALLOW_NO_TOKEN";
    /** Deadline when {@value #TIMEOUT_VARIABLE} is not set. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(110);
    /** Handshake deadline when {@value #HANDSHAKE_TIMEOUT_VARIABLE} is not set: a real rank's hello takes a moment. */
    public static final Duration DEFAULT_HANDSHAKE_TIMEOUT = Duration.ofSeconds(5);

    public BootstrapConfig {
        requirePositive(timeout, "bootstrap timeout");
        requirePositive(handshakeTimeout, "handshake timeout");
    }

    /** A deadline of {@code timeout}, the default handshake deadline, and a job token required. */
    public BootstrapConfig(Duration timeout) {
        this(timeout, DEFAULT_HANDSHAKE_TIMEOUT, false);
    }

    private static void requirePositive(Duration duration, String what) {
        Objects.requireNonNull(duration, what);
        if (duration.isNegative() || duration.isZero()) {
            throw new IllegalArgumentException(what + " must be positive, got " + duration);
        }
    }

    public static BootstrapConfig defaults() {
        return new BootstrapConfig(DEFAULT_TIMEOUT);
    }

    public BootstrapConfig withHandshakeTimeout(Duration handshakeTimeout) {
        return new BootstrapConfig(timeout, handshakeTimeout, allowNoToken);
    }

    public BootstrapConfig withAllowNoToken(boolean allowNoToken) {
        return new BootstrapConfig(timeout, handshakeTimeout, allowNoToken);
    }

    /**
     * Reads {@value #TIMEOUT_VARIABLE} and {@value #HANDSHAKE_TIMEOUT_VARIABLE} (seconds, &gt; 0) and
     * {@value #ALLOW_NO_TOKEN_VARIABLE} (0 or 1) from {@code env}; a default for each that is absent or blank.
     */
    public static BootstrapConfig fromEnvironment(Map<String, String> env) {
        return new BootstrapConfig(seconds(env, TIMEOUT_VARIABLE, DEFAULT_TIMEOUT),
                seconds(env, HANDSHAKE_TIMEOUT_VARIABLE, DEFAULT_HANDSHAKE_TIMEOUT),
                flag(env, ALLOW_NO_TOKEN_VARIABLE));
    }

    private static Duration seconds(Map<String, String> env, String name, Duration absent) {
        String value = env.get(name);
        if (value == null || value.isBlank()) {
            return absent;
        }
        double seconds;
        try {
            seconds = Double.parseDouble(value.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(name + " must be a number of seconds, got '" + value + "'");
        }
        if (!(seconds > 0) || Double.isInfinite(seconds) || seconds > 365 * 86400.0) {
            throw new IllegalArgumentException(name + " must be a positive number of seconds (at most a year), got '"
                    + value + "'");
        }
        return Duration.ofNanos(Math.max(1_000_000L, Math.round(seconds * 1e9)));
    }

    private static boolean flag(Map<String, String> env, String name) {
        String value = env.get(name);
        if (value == null || value.isBlank()) {
            return false;
        }
        return switch (value.trim()) {
            case "1" -> true;
            case "0" -> false;
            default -> throw new IllegalArgumentException(name + " must be 0 or 1, got '" + value + "'");
        };
    }
}
