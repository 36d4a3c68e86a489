package dev.ubuf.op;

import dev.ubuf.config.UbufEnvironment;

import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;

/**
 * How the {@link Planner} decides, read once at the edge from the environment.
 *
 * @param tune       UB_TUNE (default 1): measure every candidate once per shape on the GPU and keep the fastest;
 *                   0: never measure, use a cached choice or else the NCCL reference
 * @param cacheFile  UB_PLAN_CACHE: the file of cached choices (default ~/.cache/ubuf/plans.properties; "off": none)
 * @param iters      UB_TUNE_ITERS (default 10): timed iterations per candidate while tuning (plus 3 warm-ups)
 * @param debug      UB_DEBUG=1: print each decision with its numbers
 */
public record PlannerSettings(boolean tune, Optional<Path> cacheFile, int iters, boolean debug) {
    public static final int DEFAULT_ITERS = 10;

    public PlannerSettings {
        if (iters < 1) {
            throw new IllegalArgumentException("UB_TUNE_ITERS must be >= 1, got " + iters);
        }
    }

    /** Tuning on, no disk cache, quiet: what tests use. */
    public static PlannerSettings inMemory() {
        return new PlannerSettings(true, Optional.empty(), DEFAULT_ITERS, false);
    }

    public static PlannerSettings from(Map<String, String> env) {
        boolean tune = UbufEnvironment.flag(env, "UB_TUNE", true);
        String c = env.get("UB_PLAN_CACHE");
        Optional<Path> cache;
        if (c != null && c.trim().equalsIgnoreCase("off")) {
            cache = Optional.empty();
        } else if (c != null && !c.isBlank()) {
            cache = Optional.of(Path.of(c.trim()));
        } else {
            String home = System.getProperty("user.home");
            cache = Optional.of(Path.of(home, ".cache", "ubuf", "plans.properties"));
        }
        int iters = DEFAULT_ITERS;
        String i = env.get("UB_TUNE_ITERS");
        if (i != null && !i.isBlank()) {
            try {
                iters = Integer.parseInt(i.trim());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("UB_TUNE_ITERS must be a positive integer, got '" + i + "'");
            }
        }
        return new PlannerSettings(tune, cache, iters, UbufEnvironment.flag(env, "UB_DEBUG", false));
    }
}
