package dev.ubuf.config;

import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

/**
 * The environment variables ubuf honours, read once at the edge (a launcher, a CLI, a test) and passed down.
 *
 * @param skipMulticast  UB_SKIPMC=1: never create or touch NVLink multicast objects (mandatory on shared hosts)
 * @param timeout        UB_TIMEOUT seconds (default 110): deadline of every wait the host can observe
 * @param debug          UB_DEBUG=1: print topology and each registration
 * @param gemmTuning     UB_GEMM_TUNING (default 1): time cuBLASLt's candidate algorithms for each GEMM once and keep
 *                       the fastest; 0 takes the heuristic's first choice untimed
 * @param gemmTuningFile UB_GEMM_TUNING_FILE: the file that caches the tuned choices; null for one file per device
 *                       and cuBLASLt version in {@code cacheDirectory}
 * @param cacheDirectory where ubuf keeps caches ($XDG_CACHE_HOME/ubuf, else ~/.cache/ubuf); null to keep tuned
 *                       choices in memory only (unless {@code gemmTuningFile} names a file)
 * @param bufferSharing  UB_BUFFER_SHARING ({@code in_process}, {@code vmm} or {@code ipc}): how user buffers are
 *                       shared between ranks; null (unset) for the automatic choice (in one JVM in_process, across
 *                       processes vmm where every device allows it, else ipc). {@code vmm} also works between the
 *                       threads of one JVM
 */
public record UbufEnvironment(boolean skipMulticast, Duration timeout, boolean debug, boolean gemmTuning,
                              Path gemmTuningFile, Path cacheDirectory, BufferSharing bufferSharing) {
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(110);

    /** The automatic buffer sharing. */
    public UbufEnvironment(boolean skipMulticast, Duration timeout, boolean debug, boolean gemmTuning,
                           Path gemmTuningFile, Path cacheDirectory) {
        this(skipMulticast, timeout, debug, gemmTuning, gemmTuningFile, cacheDirectory, null);
    }

    public UbufEnvironment {
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("UB_TIMEOUT must be positive, got " + timeout);
        }
    }

    /** GEMM tuning on, with its choices kept in memory only: nothing is written to disk. */
    public UbufEnvironment(boolean skipMulticast, Duration timeout, boolean debug) {
        this(skipMulticast, timeout, debug, true, null, null);
    }

    public static UbufEnvironment fromSystem() {
        return from(System.getenv());
    }

    public static UbufEnvironment from(Map<String, String> env) {
        boolean skip = flag(env, "UB_SKIPMC", false);
        String conflict = multicastConflict(env);
        if (conflict != null) {
            throw new IllegalArgumentException(conflict);
        }
        boolean debug = flag(env, "UB_DEBUG", false);
        boolean tuning = flag(env, "UB_GEMM_TUNING", true);
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
        Path tuningFile = path(env, "UB_GEMM_TUNING_FILE");
        Path cacheHome = path(env, "XDG_CACHE_HOME");
        Path cache = cacheHome != null ? cacheHome.resolve("ubuf")
                : Path.of(System.getProperty("user.home"), ".cache", "ubuf");
        return new UbufEnvironment(skip, timeout, debug, tuning, tuningFile, cache, sharing(env));
    }

    /**
     * A 0/1 switch of the environment: {@code unset} when absent or blank, 0 or false is off, 1 or true is on, and
     * anything else an error naming the variable. Every ubuf switch is read this way.
     */
    public static boolean flag(Map<String, String> env, String name, boolean unset) {
        String v = env.get(name);
        if (v == null || v.isBlank()) {
            return unset;
        }
        if (v.equals("0") || v.equalsIgnoreCase("false")) {
            return false;
        }
        if (v.equals("1") || v.equalsIgnoreCase("true")) {
            return true;
        }
        throw new IllegalArgumentException(name + " must be 0 or 1, got '" + v + "'");
    }

    /**
     * Why {@code env} contradicts itself on NVLink multicast, or null: {@code UB_SKIPMC=1} forbids it for the whole
     * process, and an {@code NCCL_NVLS_ENABLE} other than 0 lets NCCL create multicast objects.
     */
    public static String multicastConflict(Map<String, String> env) {
        String nvls = env.get("NCCL_NVLS_ENABLE");
        if (!forbidsMulticast(env) || nvls == null || nvls.isBlank() || nvls.trim().equals("0")) {
            return null;
        }
        return "UB_SKIPMC=1 forbids NVLink multicast in this process, but NCCL_NVLS_ENABLE=" + nvls.trim()
                + " lets NCCL create multicast objects: unset NCCL_NVLS_ENABLE (ubuf then sets it to 0) or set it to 0";
    }

    /**
     * Whether {@code env} forbids multicast ({@code UB_SKIPMC=1}); a malformed value counts as forbidding, the safe
     * side for code that runs before {@link #from} refuses it.
     */
    public static boolean forbidsMulticast(Map<String, String> env) {
        try {
            return flag(env, "UB_SKIPMC", false);
        } catch (IllegalArgumentException e) {
            return true;
        }
    }

    private static BufferSharing sharing(Map<String, String> env) {
        String v = env.get("UB_BUFFER_SHARING");
        if (v == null || v.isBlank()) {
            return null;
        }
        return switch (v.trim().toLowerCase(java.util.Locale.ROOT)) {
            case "in_process" -> BufferSharing.IN_PROCESS;
            case "vmm" -> BufferSharing.VMM_POSIX_FD;
            case "ipc" -> BufferSharing.LEGACY_IPC;
            default -> throw new IllegalArgumentException("UB_BUFFER_SHARING must be in_process, vmm or ipc, got '"
                    + v + "'");
        };
    }

    private static Path path(Map<String, String> env, String name) {
        String v = env.get(name);
        if (v == null || v.isBlank()) {
            return null;
        }
        try {
            return Path.of(v.strip());
        } catch (InvalidPathException e) {
            throw new IllegalArgumentException(name + " is not a usable path: '" + v + "' (" + e.getReason() + ")");
        }
    }

    /** Why multicast may not be used here, or null when it may (hardware support is checked separately). */
    public String multicastRefusal() {
        return skipMulticast ? "UB_SKIPMC=1: multicast disabled by the environment" : null;
    }
}
