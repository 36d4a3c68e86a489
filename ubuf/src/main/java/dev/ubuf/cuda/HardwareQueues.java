package dev.ubuf.cuda;

import dev.ubuf.posix.NativeEnvironment;

import java.util.HashMap;
import java.util.Map;

/**
 * How many hardware queues a CUDA context spreads its streams over (CUDA_DEVICE_MAX_CONNECTIONS, read when a context
 * is created): {@value #DEFAULT} unless the user set it, where the driver's default is 8.
 *
 * <p>Each overlapped op issues its work on streams of its own, so a layer's context holds far more streams than 8.
 * Streams that share a queue are issued through it in order: work behind a wait for a peer's flag holds back work of
 * other streams queued after it, and when those queues fill, the host blocks inside the driver before it issues the
 * signal the peer waits for. The 8B LayerNormMLP step at tp 4 hung so in its first step in 2 of 21 runs at 8 (rank 0's
 * host inside cuMemcpyAsync, the others' inside ncclAllReduce; session 10, 4x H100), and graph-safe ops, whose waits
 * are spinning kernels, deadlocked at 8 in 4 of 4 70B runs; every run at 32, the driver's most, completed.
 */
public final class HardwareQueues {
    /** The variable the driver reads when it creates a context. */
    public static final String VARIABLE = "CUDA_DEVICE_MAX_CONNECTIONS";
    /** The most queues the driver gives a context. */
    public static final int MOST = 32;
    /** What ubuf sets when the user did not: {@link #MOST}. */
    public static final String DEFAULT = "" + MOST;

    private static final DriverDefault SETTING = new DriverDefault(VARIABLE, DEFAULT,
            "the driver maps every context's streams onto 8 hardware queues");

    private HardwareQueues() {
    }

    /**
     * Sets CUDA_DEVICE_MAX_CONNECTIONS={@value #DEFAULT} in this process's C environment unless it is set; once per
     * process, before the driver starts (later calls do nothing). Never throws: without it the driver keeps 8.
     */
    static void mostUnlessChosen() {
        SETTING.applyOnce();
    }

    /** The driver's default where nothing sets the variable. */
    public static final String DRIVER_DEFAULT = "8";

    /** The queues per context as the driver reads them: the variable's value, else {@value #DRIVER_DEFAULT}. */
    public static String inEffect() {
        return effective(System.getenv()).getOrDefault(VARIABLE, DRIVER_DEFAULT);
    }

    /**
     * {@code env} with CUDA_DEVICE_MAX_CONNECTIONS as the driver sees it: the C environment's value, which ubuf may
     * have set after the JVM copied {@code env}; absent where neither has it.
     */
    public static Map<String, String> effective(Map<String, String> env) {
        Map<String, String> e = new HashMap<>(env);
        try {
            NativeEnvironment.get(VARIABLE).ifPresent(v -> e.put(VARIABLE, v));
        } catch (RuntimeException | LinkageError ignored) {
            // no libc binding: the JVM's copy is all there is to go by
        }
        return e;
    }
}
