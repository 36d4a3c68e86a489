package dev.ubuf.nccl;

import dev.ubuf.config.UbufEnvironment;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.SequencedMap;

/**
 * The NCCL variables ubuf sets in its own C environment before NCCL starts, where the user did not set them; and the
 * one combination it refuses. Pure, so the policy is tested without NCCL.
 *
 * <ul>
 *   <li>{@code NCCL_RUNTIME_CONNECT=0}: NCCL (2.22 on) otherwise connects a communicator's peers at its first
 *       collective of each kind, which allocates device memory and waits for the device; a layer's first NCCL call
 *       comes inside its first training step, while the step's other streams wait on a peer's flags.</li>
 *   <li>{@code NCCL_NVLS_ENABLE=0} under {@code UB_SKIPMC=1}: NCCL's NVLS algorithms create NVLink multicast
 *       objects, which {@code UB_SKIPMC=1} forbids for the whole process, not only for ubuf's own buffers.</li>
 * </ul>
 * NCCL is loaded once per process, so this reads the process's environment, not a {@code UbufEnvironment} built in
 * code: a program that sets {@code skipMulticast} in code sets {@code NCCL_NVLS_ENABLE=0} itself.
 */
public final class NcclEnvironment {
    /** NCCL's switch between connecting at init (0) and at each kind's first collective (1, its default). */
    public static final String RUNTIME_CONNECT = "NCCL_RUNTIME_CONNECT";
    /** NCCL's switch for its NVLink SHARP (multicast) algorithms. */
    public static final String NVLS_ENABLE = "NCCL_NVLS_ENABLE";

    private NcclEnvironment() {
    }

    /** The variables to set where absent from {@code env}, in order. */
    public static SequencedMap<String, String> defaults(Map<String, String> env) {
        SequencedMap<String, String> set = new LinkedHashMap<>();
        set.put(RUNTIME_CONNECT, "0");
        if (UbufEnvironment.forbidsMulticast(env)) {
            set.put(NVLS_ENABLE, "0");
        }
        set.keySet().removeIf(name -> present(env, name));
        return set;
    }

    /**
     * Why NCCL must not start under {@code env}, or null when it may: {@code UB_SKIPMC=1} beside an
     * {@code NCCL_NVLS_ENABLE} that is not 0 asks for multicast and forbids it at once.
     */
    public static String refusal(Map<String, String> env) {
        return UbufEnvironment.multicastConflict(env);
    }

    private static boolean present(Map<String, String> env, String name) {
        String v = env.get(name);
        return v != null && !v.isBlank();
    }
}
