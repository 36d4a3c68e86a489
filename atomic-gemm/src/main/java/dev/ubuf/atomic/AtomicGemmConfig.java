package dev.ubuf.atomic;

import java.util.Objects;

/**
 * What one atomic GEMM launch runs: a tile configuration and a split-K factor. With {@code splits > 1} each output
 * tile's K steps are cut into {@code splits} near-equal ranges (work units); every unit writes an fp32 partial tile
 * to a workspace and the last of a tile's units adds them in split order and runs the epilogue (see
 * ubuf_atomic_gemm.cu).
 *
 * <p>{@link #select} estimates the busiest CTA's time of a persistent grid, in K steps of the chosen tile:
 * {@code waves × (steps a unit + per-unit overhead + split-K traffic) × tile width / efficiency}, where waves =
 * ceil(units / multiprocessors). The per-unit overhead ({@value #UNIT_OVERHEAD_STEPS} steps: pipeline fill and
 * epilogue) is the same for every configuration of one shape, so without splits the choice is exactly
 * {@link TileConfig#select}'s. A split unit also writes its partial tile (128 × width fp32) and the last unit reads
 * all {@code splits} of them back: {@value #PARTIAL_STEPS} step each (128 KB of fp32 against a step's 48 KB of bf16
 * operands, which the tensor cores take about as long to use as an SM takes to stream 128 KB through L2). Splits pay
 * only where tiles fill the SMs badly and K is long, e.g. M = 128: 16 tiles of 128x256 on 132 SMs.
 *
 * <p>{@link Schedule#PINGPONG} runs the ping-pong kernels instead: 64 × tileN tiles, the two consumer warpgroups
 * taking a CTA's tiles in turn so that one's epilogue overlaps the other's main loop. No split-K there (splits must
 * be 1). {@link Schedule#COOPERATIVE_CLUSTER} runs cooperative tiles in clusters of two CTAs that share each B load
 * (TMA multicast): 2/5 of the ping-pong's L2 traffic per FLOP, with the epilogue exposed as in the cooperative kernel.
 * The automatic choice ({@link #select}): split-K where the cooperative rule splits; else ping-pong up to
 * {@link #PINGPONG_MAX_K_STEPS} K steps, clustered cooperative tiles beyond (where pairs leave few placeholders).
 * On one H100 (2026-11-25, bench/results/2026-11-25-h100-atomic-cluster):
 * <ul>
 *   <li>the clustered tiles measured 0.87-0.98 of cuBLASLt on the 25 sweep GEMM shapes (median 0.948), against
 *       ping-pong's 0.80-1.02 (median 0.930);</li>
 *   <li>they were slower where ping-pong is at cuBLASLt's level: short K, and many tiles at K = 4096;</li>
 *   <li>they were far faster on the longest GEMMs, where ping-pong's L2 traffic costs clock at the power limit
 *       (16384x28672x8192: 0.966 against 0.797);</li>
 *   <li>the rule, made on 41 shapes, measured 0.85-1.05 on 24 shapes it had not seen.</li>
 * </ul>
 * Split-K stays cooperative and unclustered.
 *
 * @param tile     tile configuration; must support the call's B layout
 * @param splits   K ranges a tile is cut into, 1 (no split-K) to {@link #MAX_SPLITS}, never more than the K steps
 * @param schedule how the consumer warpgroups share the work
 */
public record AtomicGemmConfig(TileConfig tile, int splits, Schedule schedule) {
    /** How a CTA's two consumer warpgroups share its tiles. */
    public enum Schedule {
        /** Both work on one 128-row tile (64 rows each), main loop and epilogue together. */
        COOPERATIVE(TileConfig.TILE_M, "", 1),
        /** Each works on 64-row tiles of its own, in turn: one's epilogue runs under the other's main loop. */
        PINGPONG(TileSchedule.PINGPONG_TILE_M, "_pp", 1),
        /**
         * Cooperative 128-row tiles in clusters of two CTAs that compute the two halves of a 256-row tile pair and
         * share its B loads (TMA multicast inside the cluster); no split-K.
         */
        COOPERATIVE_CLUSTER(TileConfig.TILE_M, "_cc", 2);

        private final int tileM;
        private final String kernelTag;
        private final int clusterSize;

        Schedule(int tileM, String kernelTag, int clusterSize) {
            this.tileM = tileM;
            this.kernelTag = kernelTag;
            this.clusterSize = clusterSize;
        }

        /** CTAs of a cluster: 2 for {@link #COOPERATIVE_CLUSTER}, else 1. */
        public int clusterSize() {
            return clusterSize;
        }

        /** Whether the consumer warpgroups take 64-row tiles in turn (no split-K). */
        public boolean pingPong() {
            return tileM == TileSchedule.PINGPONG_TILE_M;
        }

        /** Whether its kernels can split K: only the unclustered cooperative ones. */
        public boolean splitsK() {
            return this == COOPERATIVE;
        }

        /** Rows of a tile. */
        public int tileM() {
            return tileM;
        }

        /** Inserted into the kernel name before the tile width's suffix: empty, or {@code _pp}. */
        public String kernelTag() {
            return kernelTag;
        }

        /** The name {@link #parse} reads: {@code cooperative}, {@code pingpong} or {@code cooperative-cluster}. */
        public String optionName() {
            return switch (this) {
                case COOPERATIVE -> "cooperative";
                case PINGPONG -> "pingpong";
                case COOPERATIVE_CLUSTER -> "cooperative-cluster";
            };
        }

        /** {@code cooperative}, {@code pingpong} or {@code cooperative-cluster} (any case). */
        public static Schedule parse(String s) {
            return switch (s.toLowerCase(java.util.Locale.ROOT)) {
                case "cooperative" -> COOPERATIVE;
                case "pingpong", "ping-pong" -> PINGPONG;
                case "cooperative-cluster" -> COOPERATIVE_CLUSTER;
                default -> throw new IllegalArgumentException(
                        "schedule must be cooperative, pingpong or cooperative-cluster, got " + s);
            };
        }
    }

    /**
     * Up to this many K steps a tile (K ≤ 4096), the automatic choice is ping-pong: the cooperative tile's epilogue,
     * which the ping-pong hides under the other warpgroup's main loop, weighs more there than the ping-pong's extra
     * L2 traffic. On one H100 (2026-11-25) ping-pong was ahead on 10 of the 14 sweep and held-out shapes with K ≤ 4096,
     * by up to 0.08 of cuBLASLt. With longer K the clustered tiles were ahead on 16 of 27, by up to 0.175, and at most
     * 0.056 behind.
     */
    static final int PINGPONG_MAX_K_STEPS = 64;
    /** The automatic choice clusters only where at most this percentage of the halves would be placeholders. */
    static final int MAX_PLACEHOLDER_PERCENT = 12;
    /** Most splits the rule or a caller may ask for. */
    public static final int MAX_SPLITS = 16;
    /** The rule's per-unit overhead in K steps (pipeline fill, epilogue), the same with or without splits. */
    static final int UNIT_OVERHEAD_STEPS = 2;
    /** The rule's cost of writing or reading one fp32 partial tile, in K steps of the same tile. */
    static final int PARTIAL_STEPS = 1;
    /** The rule never picks splits whose workspace would exceed this (forced configurations may). */
    public static final long MAX_RULE_WORKSPACE_BYTES = 64L << 20;
    /** Splits the rule tries: more rarely pays, since the reduction reads them all. */
    static final int MAX_RULE_SPLITS = 8;
    /**
     * Split-K must be estimated this much cheaper than the best unsplit configuration to be chosen: the estimate's
     * overheads are guesses until measured, and a marginal win is not worth a workspace (e.g. 1024x5120x8192 KN,
     * 6% by the estimate, stays unsplit).
     */
    static final int SPLIT_MARGIN_PERCENT = 10;

    public AtomicGemmConfig {
        Objects.requireNonNull(tile, "tile");
        Objects.requireNonNull(schedule, "schedule");
        if (splits < 1 || splits > MAX_SPLITS) {
            throw new IllegalArgumentException("splits must be in 1.." + MAX_SPLITS + ", got " + splits);
        }
        if (!schedule.splitsK() && splits != 1) {
            throw new IllegalArgumentException("the " + schedule.name().toLowerCase(java.util.Locale.ROOT)
                    + " kernels have no split-K: splits must be 1, got " + splits);
        }
    }

    /** Cooperative, {@code splits} K ranges a tile. */
    public AtomicGemmConfig(TileConfig tile, int splits) {
        this(tile, splits, Schedule.COOPERATIVE);
    }

    /** Cooperative, no split-K. */
    public static AtomicGemmConfig of(TileConfig tile) {
        return new AtomicGemmConfig(tile, 1);
    }

    /** Ping-pong 64 × tileN tiles (no split-K). */
    public static AtomicGemmConfig pingPong(TileConfig tile) {
        return new AtomicGemmConfig(tile, 1, Schedule.PINGPONG);
    }

    /** Clustered cooperative 128 × tileN tiles: two CTAs a cluster sharing B (no split-K). */
    public static AtomicGemmConfig cooperativeCluster(TileConfig tile) {
        return new AtomicGemmConfig(tile, 1, Schedule.COOPERATIVE_CLUSTER);
    }

    /** Rows of a tile: 128, or 64 with ping-pong. */
    public int tileM() {
        return schedule.tileM();
    }

    /** Output tiles of an m × n product in {@code chunks} chunks. */
    public int tiles(int m, int n, int chunks) {
        return tile.tiles(m, n, chunks, tileM());
    }

    /** Dynamic shared memory a CTA of these kernels needs. */
    public int smemBytes() {
        return tile.smemBytes(tileM());
    }

    /** Appended to the kernel's type and layout name: {@code _pp} for ping-pong, then the tile width's suffix. */
    public String kernelSuffix() {
        return schedule.kernelTag() + tile.kernelSuffix();
    }

    /** Work units of an m × n product in {@code chunks} chunks: tiles × splits. */
    public long units(int m, int n, int chunks) {
        return (long) tiles(m, n, chunks) * splits;
    }

    /** Bytes of fp32 partial tiles a launch needs: 0 without splits, else one 128 × tileN slot per unit. */
    public long workspaceBytes(int m, int n, int chunks) {
        return splits == 1 ? 0 : units(m, n, chunks) * tileM() * tile.tileN() * Float.BYTES;
    }

    /** Split-K semaphores a launch needs: one uint32 per tile with splits, none without. */
    public int semaphores(int m, int n, int chunks) {
        return splits == 1 ? 0 : tiles(m, n, chunks);
    }

    /**
     * The rule's cost (see the class comment); comparable between configurations of one shape and schedule. A
     * ping-pong tile is half a cooperative one, so its waves count 64-row tiles and each costs half (its overhead is
     * the same estimate, to calibrate).
     */
    public long cost(int m, int n, int k, int chunks, int multiprocessors) {
        long waves = (units(m, n, chunks) + multiprocessors - 1) / multiprocessors;
        long steps = ceilDiv(TileSchedule.kSteps(k), splits) + UNIT_OVERHEAD_STEPS
                + (splits == 1 ? 0 : (long) PARTIAL_STEPS * (1 + splits));
        return waves * steps * tile.tileN() * 100L * 100L / tile.efficiencyPercent() * tileM() / TileConfig.TILE_M;
    }

    /** Whether {@code splits} fits a k: every split gets at least one K step. */
    public boolean fits(int k) {
        return splits <= TileSchedule.kSteps(k);
    }

    /**
     * The automatic choice: {@link #selectCooperative}'s split-K configuration where it splits K; else, where a tile
     * has more than {@link #PINGPONG_MAX_K_STEPS} K steps, that rule's tile in 2-CTA clusters
     * ({@link Schedule#COOPERATIVE_CLUSTER}) unless more than {@link #MAX_PLACEHOLDER_PERCENT}% of a clustered
     * launch's halves would be placeholders (chunks of an odd number of 128-row tiles, e.g. 128 rows a chunk); else
     * {@link #selectPingPong}'s ping-pong tile.
     */
    public static AtomicGemmConfig select(int m, int n, int k, int chunks, BLayout layout, int multiprocessors) {
        AtomicGemmConfig cooperative = selectCooperative(m, n, k, chunks, layout, multiprocessors);
        if (cooperative.splits() > 1) {
            return cooperative;
        }
        AtomicGemmConfig clustered = cooperativeCluster(cooperative.tile());
        return TileSchedule.kSteps(k) > PINGPONG_MAX_K_STEPS
                && clustered.placeholderPercent(m, n, chunks) <= MAX_PLACEHOLDER_PERCENT ? clustered
                : selectPingPong(m, n, k, chunks, layout, multiprocessors);
    }

    /**
     * Percent of a clustered launch's tile halves that are placeholders (rounded down): a cluster's second CTA has
     * no rows where a chunk has an odd number of row tiles, and idles through that pair. 0 for unclustered schedules.
     */
    public int placeholderPercent(int m, int n, int chunks) {
        if (schedule.clusterSize() == 1) {
            return 0;
        }
        TileSchedule s = new TileSchedule(m, n, chunks, 0, tile.tileN(), tileM());
        long halves = 2L * s.totalPairs();
        return (int) (100 * (halves - s.totalTiles()) / halves);
    }

    /**
     * The configuration of a launch whose tiling is named {@code tiling}
     * ({@link dev.ubuf.plan.PlanStep.AtomicGemm#kernel}): the automatic choice
     * ({@link #select(int, int, int, int, BLayout, int)}) for "auto", else the named schedule by its own rule
     * ({@link #select(Schedule, int, int, int, int, BLayout, int)}).
     */
    public static AtomicGemmConfig forTiling(String tiling, int m, int n, int k, int chunks, BLayout layout,
                                             int multiprocessors) {
        return tiling.equals(dev.ubuf.plan.PlanStep.AtomicGemm.AUTO_KERNEL)
                ? select(m, n, k, chunks, layout, multiprocessors)
                : select(Schedule.parse(tiling), m, n, k, chunks, layout, multiprocessors);
    }

    /**
     * {@code schedule}'s configuration by its own rule ({@link #selectCooperative}, {@link #selectPingPong}, or
     * {@link TileConfig#select}'s tile in clusters): what {@link #forTiling} gives for the schedule's name.
     */
    public static AtomicGemmConfig select(Schedule schedule, int m, int n, int k, int chunks, BLayout layout,
                                          int multiprocessors) {
        return switch (schedule) {
            case COOPERATIVE -> selectCooperative(m, n, k, chunks, layout, multiprocessors);
            case PINGPONG -> selectPingPong(m, n, k, chunks, layout, multiprocessors);
            case COOPERATIVE_CLUSTER -> cooperativeCluster(TileConfig.select(m, n, chunks, layout, multiprocessors));
        };
    }

    /**
     * The cooperative rule: {@link TileConfig#select}'s tile without splits, unless a (tile, splits ≥ 2) pair that
     * supports {@code layout}, fits K and keeps its workspace within {@link #MAX_RULE_WORKSPACE_BYTES} costs at least
     * {@link #SPLIT_MARGIN_PERCENT}% less; among those the cheapest, ties to the fewer splits, then the wider tile.
     */
    public static AtomicGemmConfig selectCooperative(int m, int n, int k, int chunks, BLayout layout,
                                                     int multiprocessors) {
        Objects.requireNonNull(layout, "layout");
        if (k < 1) {
            throw new IllegalArgumentException("k must be at least 1, got " + k);
        }
        AtomicGemmConfig unsplit = of(TileConfig.select(m, n, chunks, layout, multiprocessors));
        AtomicGemmConfig best = unsplit;
        // A split configuration must beat this: the unsplit cost less the margin.
        long bestCost = unsplit.cost(m, n, k, chunks, multiprocessors) * (100 - SPLIT_MARGIN_PERCENT) / 100;
        for (int s = 2; s <= MAX_RULE_SPLITS; s++) {
            for (TileConfig t : TileConfig.values()) {
                AtomicGemmConfig c = new AtomicGemmConfig(t, s);
                if (!t.supports(layout) || !c.fits(k) || c.workspaceBytes(m, n, chunks) > MAX_RULE_WORKSPACE_BYTES) {
                    continue;
                }
                long cost = c.cost(m, n, k, chunks, multiprocessors);
                if (cost < bestCost) {
                    best = c;
                    bestCost = cost;
                }
            }
        }
        return best;
    }

    /**
     * The ping-pong tile rule: among the tiles that support {@code layout}, the ping-pong configuration of least
     * {@link #cost}; ties go to the wider tile. What {@link #select} uses wherever it does not split K.
     */
    public static AtomicGemmConfig selectPingPong(int m, int n, int k, int chunks, BLayout layout,
                                                  int multiprocessors) {
        Objects.requireNonNull(layout, "layout");
        if (k < 1 || multiprocessors < 1) {
            throw new IllegalArgumentException("k and multiprocessors must be at least 1, got " + k + ", "
                    + multiprocessors);
        }
        AtomicGemmConfig best = null;
        long bestCost = Long.MAX_VALUE;
        for (TileConfig t : TileConfig.values()) {
            if (t.supports(layout)) {
                AtomicGemmConfig c = pingPong(t);
                long cost = c.cost(m, n, k, chunks, multiprocessors);
                if (cost < bestCost) {
                    best = c;
                    bestCost = cost;
                }
            }
        }
        return best;
    }

    @Override
    public String toString() {
        return (switch (schedule) {
            case COOPERATIVE -> tile.toString();
            case PINGPONG -> tileM() + "x" + tile.tileN() + " ping-pong";
            case COOPERATIVE_CLUSTER -> tile + ", 2-CTA clusters";
        })
                + (splits == 1 ? "" : " split-K " + splits);
    }

    private static long ceilDiv(long a, long b) {
        return (a + b - 1) / b;
    }
}
