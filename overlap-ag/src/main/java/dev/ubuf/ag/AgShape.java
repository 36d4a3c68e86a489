package dev.ubuf.ag;

import dev.ubuf.op.Collective;
import dev.ubuf.op.Fp8Operands;
import dev.ubuf.op.OverlapShape;
import dev.ubuf.tensor.DType;

import java.util.Objects;
import java.util.Optional;

/**
 * The shape of one AllGather-GEMM on each rank: out[m, n] = allgather_rows(x_shard[m/tp, k]) * w[k, n].
 * n is this rank's output width (N/tp of a column-parallel layer).
 *
 * <p>With {@code fp8} the shard, the gathered input in the user buffer and the weight are FP8 (the weight stored
 * [n, k]), the ring moves FP8 bytes, the chunk GEMMs are FP8 and write {@code dtype} (bf16, fp16 or fp32); k and n
 * must then be multiples of 16. Every rank's shard must be quantized with the same scale (one scale_inv dequantizes
 * the gathered input).
 *
 * <p>With {@code inputInUserBuffer} the caller's kernel that produces the shard writes it straight into this rank's
 * chunk of the op's user buffer ({@link dev.ubuf.op.OverlapOp#inputChunk()}) before the call, and binds no input:
 * the plans then have no copy of the shard into the user buffer (TE's LayerNormLinear writes ln_out into the UB).
 */
public record AgShape(int tp, long m, long k, long n, DType dtype, Optional<Fp8Operands> fp8,
                      boolean inputInUserBuffer) implements OverlapShape {
    public AgShape {
        Objects.requireNonNull(dtype, "dtype");
        Objects.requireNonNull(fp8, "fp8 (Optional.empty() for none)");
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
            throw new IllegalArgumentException(dtype + " is reserved: AG overlap takes fp32, fp16 or bf16"
                    + (fp8.isPresent() ? " outputs" : "; for fp8 operands give an Fp8Operands and the output's type"));
        }
        fp8.ifPresent(f -> f.validate("ag " + dtype.shortName() + " m" + m + " k" + k + " n" + n, k, n, dtype));
    }

    /** A shape whose caller binds its shard as the input. */
    public AgShape(int tp, long m, long k, long n, DType dtype, Optional<Fp8Operands> fp8) {
        this(tp, m, k, n, dtype, fp8, false);
    }

    /** A shape whose operands are all {@code dtype}. */
    public AgShape(int tp, long m, long k, long n, DType dtype) {
        this(tp, m, k, n, dtype, Optional.empty());
    }

    /** This shape with FP8 input and weight ({@code dtype} stays the output's type). */
    public AgShape withFp8(Fp8Operands operands) {
        return new AgShape(tp, m, k, n, dtype, Optional.of(operands), inputInUserBuffer);
    }

    /** This shape with the shard written into the user buffer by its producer (see the class comment). */
    public AgShape withInputInUserBuffer() {
        return new AgShape(tp, m, k, n, dtype, fp8, true);
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
