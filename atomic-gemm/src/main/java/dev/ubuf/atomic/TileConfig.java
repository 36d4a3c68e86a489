package dev.ubuf.atomic;

import java.util.Objects;

/**
 * The atomic GEMM's tile configurations: 128 × {@code tileN} output tiles, K in steps of 64, as many ring stages of
 * (16 KB of A + tileN × 128 bytes of B) as fit in a block's 227 KB (at most 8). Each is its own set of kernel
 * functions in the sm_90a image ({@code _n<tileN>} appended to the name; none for the default). Kept in step with
 * {@code Config<BN>} and the entry points of ubuf_atomic_gemm.cu.
 *
 * <p>{@link #N256} is the default and the best for shapes with many tiles. The narrower ones exist for shapes whose
 * 128 × 256 tiles fill the SMs badly (few tile rows, e.g. M = 1024, or a nearly empty last wave); {@link #select}
 * chooses among them.
 */
public enum TileConfig {
    N256(256, 100),
    N224(224, 98),
    N192(192, 97),
    N160(160, 95),
    N128(128, 90);

    /** Rows of a tile (two consumer warpgroups of 64 rows). */
    public static final int TILE_M = 128;
    /** K a pipeline stage holds: 64 16-bit elements, the 128-byte swizzle span. */
    public static final int TILE_K = 64;
    static final int MAX_SMEM_BYTES = 227 * 1024;
    static final int MAX_STAGES = 8;

    private final int tileN;
    private final int efficiencyPercent;

    TileConfig(int tileN, int efficiencyPercent) {
        this.tileN = tileN;
        this.efficiencyPercent = efficiencyPercent;
    }

    /** Columns of a tile. */
    public int tileN() {
        return tileN;
    }

    /**
     * The rule's estimate of how fast a full SM computes with this tile, in percent of the 128 × 256 tile (a
     * narrower wgmma reads A from shared memory more often per multiply-add, and its stages carry less work).
     */
    public int efficiencyPercent() {
        return efficiencyPercent;
    }

    public int stageBytes() {
        return stageBytes(TILE_M);
    }

    /** Bytes of one ring stage for tiles of {@code tileM} rows (128, or 64 for the ping-pong kernels). */
    public int stageBytes(int tileM) {
        return tileM * TILE_K * 2 + tileN * TILE_K * 2;
    }

    /** Pipeline stages: as many as fit next to 1024 bytes of alignment slack and 2 mbarriers a stage, at most 8. */
    public int stages() {
        return stages(TILE_M);
    }

    /** {@link #stages()} for tiles of {@code tileM} rows. */
    public int stages(int tileM) {
        return Math.min(MAX_STAGES, (MAX_SMEM_BYTES - 1024 - 2 * 8 * MAX_STAGES) / stageBytes(tileM));
    }

    /** Dynamic shared memory a CTA needs: alignment slack, the ring, the full and empty mbarriers. */
    public int smemBytes() {
        return smemBytes(TILE_M);
    }

    /** {@link #smemBytes()} for tiles of {@code tileM} rows (kept in step with {@code Config<BN, TM>}). */
    public int smemBytes(int tileM) {
        return 1024 + stages(tileM) * stageBytes(tileM) + 2 * stages(tileM) * 8;
    }

    /** Whether kernels exist for B stored this way: KN loads B in 64-column boxes, so tileN must be a multiple. */
    public boolean supports(BLayout layout) {
        return layout == BLayout.NK || tileN % 64 == 0;
    }

    /** Appended to the kernel name: empty for the default, {@code _n192} etc. otherwise. */
    public String kernelSuffix() {
        return this == N256 ? "" : "_n" + tileN;
    }

    @Override
    public String toString() {
        return TILE_M + "x" + tileN;
    }

    /** Output tiles of an m × n product in {@code chunks} chunks (tiles never straddle a chunk). */
    public int tiles(int m, int n, int chunks) {
        return tiles(m, n, chunks, TILE_M);
    }

    /** Output tiles of {@code tileM} rows (128, or 64 for the ping-pong kernels). */
    public int tiles(int m, int n, int chunks, int tileM) {
        return new TileSchedule(m, n, chunks, 0, tileN, tileM).totalTiles();
    }

    /**
     * The rule's cost of this configuration: waves × tile width × 100 / efficiency, where waves =
     * ceil(tiles / multiprocessors) (a persistent grid's time is its busiest CTA's tile count times one tile's
     * time, and a tile's time is proportional to its width at the given efficiency). Long arithmetic, no overflow.
     */
    public long cost(int m, int n, int chunks, int multiprocessors) {
        long waves = (tiles(m, n, chunks) + (long) multiprocessors - 1) / multiprocessors;
        return waves * tileN * 100L * 100L / efficiencyPercent;
    }

    /**
     * The selection rule: among the configurations that support {@code layout}, the one of least {@link #cost};
     * ties go to the wider tile (the declaration order), so N256 unless a narrower tile is strictly cheaper. A
     * narrower tile wins only where it cuts the waves by more than its width and efficiency lose, e.g. on 132 SMs
     * 1024x3072 (96 tiles of 128x256, one wave a quarter idle: 128 tiles of 128x192 in one wave) or 1024x5120
     * (160 tiles, 2 waves: 256 tiles of 128x160, 2 full waves); shapes with many tiles keep N256.
     */
    public static TileConfig select(int m, int n, int chunks, BLayout layout, int multiprocessors) {
        Objects.requireNonNull(layout, "layout");
        if (multiprocessors < 1) {
            throw new IllegalArgumentException("multiprocessors must be at least 1, got " + multiprocessors);
        }
        TileConfig best = N256;
        long bestCost = N256.cost(m, n, chunks, multiprocessors);
        for (TileConfig c : values()) {
            if (c.supports(layout)) {
                long cost = c.cost(m, n, chunks, multiprocessors);
                if (cost < bestCost) {
                    best = c;
                    bestCost = cost;
                }
            }
        }
        return best;
    }
}
