package dev.ubuf.launch;

import java.util.Map;
import java.util.Objects;
import java.util.OptionalInt;

/**
 * What the launcher reads from the machine it runs on, read once at the edge and passed in, so that tests can say
 * what the machine looks like.
 *
 * @param environment the launcher's environment; the ranks inherit it (plus their launch variables)
 * @param visibleGpus GPUs the ranks could use, or empty where they cannot be counted
 */
public record LaunchHost(Map<String, String> environment, OptionalInt visibleGpus) {
    public LaunchHost {
        environment = Map.copyOf(Objects.requireNonNull(environment, "environment"));
        Objects.requireNonNull(visibleGpus, "visibleGpus");
    }

    /** This process's environment and the GPUs of this node that CUDA_VISIBLE_DEVICES leaves visible. */
    public static LaunchHost current() {
        Map<String, String> env = System.getenv();
        return new LaunchHost(env, VisibleGpus.count(VisibleGpus.DRIVER_GPUS, env));
    }
}
