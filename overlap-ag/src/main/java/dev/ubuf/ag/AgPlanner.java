package dev.ubuf.ag;

import java.util.Objects;

/**
 * Picks the AG method for a shape: RING where the per-chunk GEMM is big enough to hide a chunk's transfer and pay
 * for a step's fixed costs (launches, waits), ONESHOT otherwise ("never slower than the baseline").
 * The defaults are first guesses, to be tuned on the GPU.
 *
 * @param minChunkRows        RING only when every chunk has at least this many rows (default 512)
 * @param minChunkGflop       RING only when one chunk's GEMM is at least this much work (default 1 GFLOP, a few
 *                            microseconds on an H100: about the fixed cost of one ring step)
 * @param ncclBelowChunkRows  below this many rows per rank the op runs NCCL AllGather + one GEMM instead of a plan
 *                            (default 512): at such sizes fixed costs dominate and NCCL's are the smallest
 *                            (2x H200, 2026-11-22: M = 256 took 0.111 ms through NCCL, 0.125 ms one-shot; M = 1024
 *                            took 0.243 ms through NCCL, 0.208 ms ring). 0 never falls back.
 */
public record AgPlanner(long minChunkRows, double minChunkGflop, long ncclBelowChunkRows) {
    public static final long DEFAULT_MIN_CHUNK_ROWS = 512;
    public static final double DEFAULT_MIN_CHUNK_GFLOP = 1.0;
    public static final long DEFAULT_NCCL_BELOW_CHUNK_ROWS = 512;

    /** A planner that never falls back to NCCL. */
    public AgPlanner(long minChunkRows, double minChunkGflop) {
        this(minChunkRows, minChunkGflop, 0);
    }

    public AgPlanner {
        if (minChunkRows < 1 || !(minChunkGflop >= 0) || ncclBelowChunkRows < 0) {
            throw new IllegalArgumentException("thresholds must be positive, got " + minChunkRows + " rows, "
                    + minChunkGflop + " GFLOP");
        }
    }

    public static AgPlanner defaults() {
        return new AgPlanner(DEFAULT_MIN_CHUNK_ROWS, DEFAULT_MIN_CHUNK_GFLOP, DEFAULT_NCCL_BELOW_CHUNK_ROWS);
    }

    /** Whether an op of this shape should run NCCL AllGather + one GEMM rather than any plan. */
    public boolean prefersNccl(AgShape shape) {
        return shape.chunkRows() < ncclBelowChunkRows;
    }

    /** RING or ONESHOT for an AllGather-GEMM (BULK and AGGREGATE are asked for explicitly). */
    public AgMethod choose(AgShape shape) {
        Objects.requireNonNull(shape, "shape");
        if (shape.tp() == 1 || shape.chunkRows() < minChunkRows || shape.chunkGflop() < minChunkGflop) {
            return AgMethod.ONESHOT;
        }
        return AgMethod.RING;
    }
}
