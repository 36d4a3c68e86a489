package dev.ubuf.ag;

import java.util.Objects;

/**
 * Picks the AG method for a shape: RING where the per-chunk GEMM is big enough to hide a chunk's transfer and pay
 * for a step's fixed costs (launches, waits), ONESHOT otherwise ("never slower than the baseline").
 * The defaults are first guesses, to be tuned on the GPU.
 *
 * @param minChunkRows  RING only when every chunk has at least this many rows (default 1024)
 * @param minChunkGflop RING only when one chunk's GEMM is at least this much work (default 1 GFLOP, a few
 *                      microseconds on an H100: about the fixed cost of one ring step)
 */
public record AgPlanner(long minChunkRows, double minChunkGflop) {
    public static final long DEFAULT_MIN_CHUNK_ROWS = 1024;
    public static final double DEFAULT_MIN_CHUNK_GFLOP = 1.0;

    public AgPlanner {
        if (minChunkRows < 1 || !(minChunkGflop >= 0)) {
            throw new IllegalArgumentException("thresholds must be positive, got " + minChunkRows + " rows, "
                    + minChunkGflop + " GFLOP");
        }
    }

    public static AgPlanner defaults() {
        return new AgPlanner(DEFAULT_MIN_CHUNK_ROWS, DEFAULT_MIN_CHUNK_GFLOP);
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
