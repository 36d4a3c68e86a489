package dev.ubuf.config;

import java.time.Duration;
import java.util.Map;

/**
 * The environment variables ubuf honours, read once at the edge (a launcher, a CLI, a test) and passed down.
 *
 * @param skipMulticast UB_SKIPMC=1: never create or touch NVLink multicast objects (mandatory on shared hosts)
 * @param timeout       UB_TIMEOUT seconds (default 110): deadline of every wait the host can observe
 * @param debug         UB_DEBUG=1: print topology and each registration
 */
public record UbufEnvironment(boolean skipMulticast, Duration timeout, boolean debug) {
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(110);

    public UbufEnvironment {
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("UB_TIMEOUT must be positive, got " + timeout);
        }
    }

    public static UbufEnvironment fromSystem() {
        return from(System.getenv());
    }

    public static UbufEnvironment from(Map<String, String> env) {
        boolean skip = flag(env, "UB_SKIPMC");
        boolean debug = flag(env, "UB_DEBUG");
        Duration timeout = DEFAULT_TIMEOUT;
        String t = env.get("UB_TIMEOUT");
        if (t != null && !t.isBlank()) {
            try {
                double s = Double.parseDouble(t.trim());
                if (!(s > 0)) {
                    throw new NumberFormatException();
                }
                timeout = Duration.ofMillis((long) (s * 1000));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("UB_TIMEOUT must be a positive number of seconds, got '" + t + "'");
            }
        }
        return new UbufEnvironment(skip, timeout, debug);
    }

    private static boolean flag(Map<String, String> env, String name) {
        String v = env.get(name);
        if (v == null || v.isBlank() || v.equals("0") || v.equalsIgnoreCase("false")) {
            return false;
        }
        if (v.equals("1") || v.equalsIgnoreCase("true")) {
            return true;
        }
        throw new IllegalArgumentException(name + " must be 0 or 1, got '" + v + "'");
    }

    /** Why multicast may not be used here, or null when it may (hardware support is checked separately). */
    public String multicastRefusal() {
        return skipMulticast ? "UB_SKIPMC=1: multicast disabled by the environment" : null;
    }
}
