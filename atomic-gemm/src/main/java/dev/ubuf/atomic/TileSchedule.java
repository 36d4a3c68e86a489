package dev.ubuf.atomic;

import java.util.ArrayList;
import java.util.List;

/**
 * The kernel's tile arithmetic in Java (kept in step with {@code decode_tile} in ubuf_atomic_gemm.cu): which output
 * tile the t-th scheduled tile is, and which tiles a persistent CTA visits, for 128 × {@code tileN} tiles
 * ({@link TileConfig}; 256 unless given).
 *
 * <p>The M rows are split into {@code chunks} equal chunks of {@code m / chunks} rows; tiles never straddle a chunk,
 * so a chunk has ceil(chunkRows / 128) row tiles and ceil(n / tileN) column tiles. Tiles are numbered chunk by chunk
 * in the order firstChunk, firstChunk + 1, ... (mod chunks); inside a chunk, groups of 8 row tiles are taken one column
 * tile after another, rows fastest, so tiles running at the same time share rows of A and columns of B in L2.
 * CTA b of a grid of g visits tiles b, b + g, b + 2g, ...
 *
 * <p>Tiles have {@code tileM} rows: 128 (cooperative kernels) or 64 (ping-pong kernels, where CTA b's j-th tile belongs
 * to consumer warpgroup j % 2). A group spans 1024 rows either way (8 row tiles of 128, 16 of 64). A clustered
 * cooperative launch pairs 128-row tiles: its pairs are this schedule's tiles of 256 rows (4 to a group), see
 * {@link #clusterTilesOfBlock}.
 */
public record TileSchedule(int m, int n, int chunks, int firstChunk, int tileN, int tileM) {
    public static final int TILE_M = TileConfig.TILE_M;
    /** The default tile width (TileConfig.N256). */
    public static final int TILE_N = 256;
    public static final int TILE_K = TileConfig.TILE_K;
    static final int GROUP_M = 8;
    /** Rows of a ping-pong tile (one warpgroup's m64 wgmma). */
    public static final int PINGPONG_TILE_M = 64;

    /** An output tile: rows [row0, rowEnd) and columns [col0, colEnd) are the ones it stores. */
    public record Tile(int chunk, int row0, int rowEnd, int col0, int colEnd) {
        /** A clustered launch's half that lies wholly past its chunk: it stores (and counts) nothing. */
        public boolean placeholder() {
            return row0 >= rowEnd;
        }
    }

    /** The schedule of the default 128 × 256 tiles. */
    public TileSchedule(int m, int n, int chunks, int firstChunk) {
        this(m, n, chunks, firstChunk, TILE_N);
    }

    /** The schedule of {@code config}'s tiles. */
    public TileSchedule(int m, int n, int chunks, int firstChunk, TileConfig config) {
        this(m, n, chunks, firstChunk, config.tileN());
    }

    /** The schedule of 128 × {@code tileN} tiles. */
    public TileSchedule(int m, int n, int chunks, int firstChunk, int tileN) {
        this(m, n, chunks, firstChunk, tileN, TILE_M);
    }

    public TileSchedule {
        if (tileM != TILE_M && tileM != PINGPONG_TILE_M && tileM != 2 * TILE_M) {
            throw new IllegalArgumentException("tileM must be " + PINGPONG_TILE_M + ", " + TILE_M + " or "
                    + 2 * TILE_M + " (a clustered cooperative launch's tile pairs), got " + tileM);
        }
        if (tileN < 8 || tileN > 256 || tileN % 8 != 0) {
            throw new IllegalArgumentException("tileN must be a multiple of 8 in 8..256, got " + tileN);
        }
        if (m < 1 || n < 1) {
            throw new IllegalArgumentException("m and n must be at least 1, got m=" + m + ", n=" + n);
        }
        if (chunks < 1 || m % chunks != 0) {
            throw new IllegalArgumentException("m=" + m + " must split into chunks=" + chunks + " equal chunks");
        }
        if (firstChunk < 0 || firstChunk >= chunks) {
            throw new IllegalArgumentException("firstChunk=" + firstChunk + " is not a chunk of " + chunks);
        }
    }

    public int chunkRows() {
        return m / chunks;
    }

    public int rowTilesPerChunk() {
        return ceilDiv(chunkRows(), tileM);
    }

    public int colTiles() {
        return ceilDiv(n, tileN);
    }

    public int tilesPerChunk() {
        return rowTilesPerChunk() * colTiles();
    }

    public int totalTiles() {
        return Math.multiplyExact(tilesPerChunk(), chunks);
    }

    /** The t-th tile of the schedule, 0 ≤ t < totalTiles(). */
    public Tile tile(int t) {
        if (t < 0 || t >= totalTiles()) {
            throw new IndexOutOfBoundsException("tile " + t + " of " + totalTiles());
        }
        int mTiles = rowTilesPerChunk();
        int nTiles = colTiles();
        int tilesPerChunk = mTiles * nTiles;
        int slot = t / tilesPerChunk;
        int q = t - slot * tilesPerChunk;
        int chunk = (firstChunk + slot) % chunks;
        int groupRowTiles = GROUP_M * TILE_M / tileM;
        int groupTiles = groupRowTiles * nTiles;
        int group = q / groupTiles;
        int firstM = group * groupRowTiles;
        int groupM = Math.min(groupRowTiles, mTiles - firstM);
        int r = q - group * groupTiles;
        int mt = firstM + r % groupM;
        int nt = r / groupM;
        int row0 = chunk * chunkRows() + mt * tileM;
        int rowEnd = Math.min(row0 + tileM, (chunk + 1) * chunkRows());
        int col0 = nt * tileN;
        return new Tile(chunk, row0, rowEnd, col0, Math.min(col0 + tileN, n));
    }

    /** The tiles CTA {@code block} of a persistent grid of {@code grid} CTAs computes, in its order. */
    public List<Tile> tilesOfBlock(int block, int grid) {
        List<Tile> tiles = new ArrayList<>();
        for (int t = block; t < totalTiles(); t += grid) {
            tiles.add(tile(t));
        }
        return tiles;
    }

    /**
     * The tiles CTA {@code block} of a clustered launch (clusters of two CTAs, cooperative 128-row tiles) computes, in its
     * order; kept in step with {@code decode_cluster_tile}. Cluster {@code block / 2} takes tile pairs c, c + grid / 2,
     * ...; pair p is the p-th tile of this schedule with {@code 2 · tileM} rows, and rank {@code block % 2} takes its
     * rows from {@code rank · tileM}. A half wholly past its chunk's rows is a {@link Tile#placeholder()}: its CTA
     * still loads half of the pair's B for the other, and stores nothing.
     */
    public List<Tile> clusterTilesOfBlock(int block, int grid) {
        TileSchedule pairs = pairSchedule();
        if (grid < 2 || grid % 2 != 0 || block < 0 || block >= grid) {
            throw new IllegalArgumentException("block " + block + " of a grid of " + grid
                    + " (clusters of 2: an even grid)");
        }
        int rank = block % 2;
        List<Tile> tiles = new ArrayList<>();
        for (int p = block / 2; p < pairs.totalTiles(); p += grid / 2) {
            Tile pair = pairs.tile(p);
            int row0 = pair.row0() + rank * tileM;
            tiles.add(new Tile(pair.chunk(), row0, Math.min(row0 + tileM, pair.rowEnd()), pair.col0(), pair.colEnd()));
        }
        return tiles;
    }

    /** Tile pairs of a clustered launch: the tiles of {@code 2 · tileM} rows. */
    public int totalPairs() {
        return pairSchedule().totalTiles();
    }

    /** A clustered launch's grid: two CTAs for each co-resident cluster, never more than the tile pairs need. */
    public int clusterGrid(int maxActiveClusters) {
        if (maxActiveClusters < 1) {
            throw new IllegalArgumentException("maxActiveClusters must be at least 1, got " + maxActiveClusters);
        }
        return 2 * Math.min(maxActiveClusters, totalPairs());
    }

    private TileSchedule pairSchedule() {
        if (tileM != TILE_M) {
            throw new IllegalStateException("clusters pair the cooperative kernels' " + TILE_M + "-row tiles, not "
                    + tileM + "-row ones");
        }
        return new TileSchedule(m, n, chunks, firstChunk, tileN, 2 * tileM);
    }

    /** The persistent grid: one CTA per multiprocessor, never more CTAs than tiles. */
    public int grid(int multiprocessors) {
        return Math.min(multiprocessors, totalTiles());
    }

    /** K steps per tile (TMA zero-fills the last partial one). */
    public static int kSteps(int k) {
        return ceilDiv(k, TILE_K);
    }

    /**
     * The K steps [from, to) that split {@code split} of {@code splits} covers (kept in step with the kernel's kb0,
     * kb1): {@code split · steps / splits} to {@code (split + 1) · steps / splits}, so ranges are near-equal and,
     * with splits ≤ steps, none is empty. Work unit u of a split-K launch is tile u / splits, split u % splits.
     */
    public static int[] kRange(int split, int splits, int steps) {
        if (splits < 1 || split < 0 || split >= splits) {
            throw new IllegalArgumentException("split " + split + " of " + splits);
        }
        return new int[]{(int) ((long) split * steps / splits), (int) ((long) (split + 1) * steps / splits)};
    }

    static int ceilDiv(int a, int b) {
        return (a + b - 1) / b;
    }
}
