package dev.ubuf.ag;

import dev.ubuf.op.Collective;
import dev.ubuf.op.OverlapShape;
import dev.ubuf.tensor.DType;

import java.util.Objects;

/**
 * The shape of one AllGather-GEMM on each rank: out[m, n] = allgather_rows(x_shard[m/tp, k]) * w[k, n].
 * n is this rank's output width (N/tp of a column-parallel layer).
 */
public record AgShape(int tp, long m, long k, long n, DType dtype) implements OverlapShape {
    public AgShape {
        Objects.requireNonNull(dtype, "dtype");
        if (tp < 1) {
            throw new IllegalArgumentException("tp must be at least 1, got " + tp);
        }
        if (m <= 0 || k <= 0 || n <= 0) {
            throw new IllegalArgumentException("AG shape must be positive, got m=" + m + " k=" + k + " n=" + n);
        }
        if (m % tp != 0) {
            throw new IllegalArgumentException("m = " + m + " rows cannot be split evenly over tp = " + tp
                    + " ranks (each rank holds m/tp rows of the sequence-parallel input)");
        }
        if (dtype.isReserved()) {
            throw new IllegalArgumentException(dtype + " is reserved: AG overlap takes fp32, fp16 or bf16");
        }
    }

    @Override
    public Collective collective() {
        return Collective.ALL_GATHER;
    }

    /** AG ops add no bias (a column-parallel bias is added by whoever consumes the output). */
    @Override
    public boolean bias() {
        return false;
    }

    /** Rows of one rank's shard = rows of one chunk of the gathered buffer. */
    public long chunkRows() {
        return m / tp;
    }

    /** Work of the GEMM on one chunk, in GFLOP (2 m k n / tp). */
    public double chunkGflop() {
        return 2.0 * chunkRows() * k * n / 1e9;
    }
}
