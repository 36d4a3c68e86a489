package dev.ubuf.op;

import dev.ubuf.config.UbufEnvironment;
import dev.ubuf.timing.InterleavedTimer;
import dev.ubuf.timing.RoundBudget;

import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;

/**
 * How the {@link Planner} decides, read once at the edge from the environment.
 *
 * @param tune       UB_TUNE (default 1): measure every candidate once per shape on the GPU and keep the fastest;
 *                   0: never measure, use a cached choice or else the NCCL reference
 * @param cacheFile  UB_PLAN_CACHE: the file of cached choices (default ~/.cache/ubuf/plans.properties; "off": none)
 * @param iters      UB_TUNE_ITERS (default 10): the fewest timed rounds per candidate while tuning (after
 *                   {@link #WARMUP} warm-up rounds and one unheld first call)
 * @param budgetMs   UB_TUNE_MS (default 25): about this much measured time per candidate, so short ops, whose
 *                   samples are noisier, get more rounds (at most {@link #MAX_ROUNDS}, or {@code iters} if more);
 *                   0: exactly {@code iters}
 * @param debug      UB_DEBUG=1: print each decision with its numbers
 * @param stepCheck  UB_STEP_CHECK=1 (default 0): the layers check a several-stream choice against the one-stream
 *                   candidates in whole steps at initialisation (dev.ubuf.layers.tp.StepCheck). Off by default: the
 *                   70B demo hung in runs where such a check remade ops (2026-11-27, not understood)
 * @param callsPerSample UB_TUNE_CALLS (default 1): calls of a candidate each sample runs back to back, as the
 *                   benchmarks' {@code --calls-per-sample} (the same timer, {@link InterleavedTimer}); choices made
 *                   with more than one are cached apart
 */
public record PlannerSettings(boolean tune, Optional<Path> cacheFile, int iters, double budgetMs, boolean debug,
                              boolean stepCheck, int callsPerSample) {
    public static final int DEFAULT_ITERS = 10;
    public static final double DEFAULT_BUDGET_MS = 25;
    public static final int WARMUP = 3;
    public static final int MAX_ROUNDS = 200;

    public PlannerSettings {
        if (iters < 1) {
            throw new IllegalArgumentException("UB_TUNE_ITERS must be >= 1, got " + iters);
        }
        if (!(budgetMs >= 0) || Double.isInfinite(budgetMs)) {
            throw new IllegalArgumentException("UB_TUNE_MS must be a finite number >= 0, got " + budgetMs);
        }
        InterleavedTimer.requireCallsPerSample(callsPerSample, "UB_TUNE_CALLS");
    }

    /** One call a sample. */
    public PlannerSettings(boolean tune, Optional<Path> cacheFile, int iters, double budgetMs, boolean debug,
                           boolean stepCheck) {
        this(tune, cacheFile, iters, budgetMs, debug, stepCheck, 1);
    }

    /** No step check. */
    public PlannerSettings(boolean tune, Optional<Path> cacheFile, int iters, double budgetMs, boolean debug) {
        this(tune, cacheFile, iters, budgetMs, debug, false);
    }

    /** The default time budget per candidate, no step check. */
    public PlannerSettings(boolean tune, Optional<Path> cacheFile, int iters, boolean debug) {
        this(tune, cacheFile, iters, DEFAULT_BUDGET_MS, debug);
    }

    /** Tuning on, no disk cache, quiet: what tests use. */
    public static PlannerSettings inMemory() {
        return new PlannerSettings(true, Optional.empty(), DEFAULT_ITERS, false);
    }

    /** The rounds a measurement runs: {@link #WARMUP}, then {@code iters} to {@link #MAX_ROUNDS} by the budget. */
    public RoundBudget rounds() {
        return new RoundBudget(WARMUP, iters, Math.max(iters, MAX_ROUNDS), budgetMs);
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
        int iters = integer(env, "UB_TUNE_ITERS", DEFAULT_ITERS, "a positive integer");
        double budget = DEFAULT_BUDGET_MS;
        String b = env.get("UB_TUNE_MS");
        if (b != null && !b.isBlank()) {
            try {
                budget = Double.parseDouble(b.trim());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("UB_TUNE_MS must be a number of milliseconds >= 0, got '" + b + "'");
            }
        }
        int calls = integer(env, "UB_TUNE_CALLS", 1, "an integer from 1 to " + InterleavedTimer.MAX_CALLS_PER_SAMPLE);
        return new PlannerSettings(tune, cache, iters, budget, UbufEnvironment.flag(env, "UB_DEBUG", false),
                UbufEnvironment.flag(env, "UB_STEP_CHECK", false), calls);
    }

    /** {@code name}'s integer, {@code unset} when unset or blank; not an integer: it must be {@code expected}. */
    private static int integer(Map<String, String> env, String name, int unset, String expected) {
        String v = env.get(name);
        if (v == null || v.isBlank()) {
            return unset;
        }
        try {
            return Integer.parseInt(v.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(name + " must be " + expected + ", got '" + v + "'");
        }
    }
}
