package dev.ubuf.rs;

import dev.ubuf.op.Collective;
import dev.ubuf.op.Fp8Operands;
import dev.ubuf.op.OverlapShape;
import dev.ubuf.tensor.DType;

import java.util.Objects;
import java.util.Optional;

/**
 * The shape of one row-parallel GEMM→ReduceScatter: every rank holds X[m, k] and W[k, n] (k is this rank's slice
 * of the layer's inner dimension, K/tp), its product is a partial sum of the layer output, and rank r receives
 * rows [r*m/tp, (r+1)*m/tp) of the sum over ranks: out[m/tp, n] (+ bias[n], added once after the reduction).
 *
 * @param tp    ranks in the domain (at least 2: with one rank there is nothing to reduce)
 * @param m     rows (tokens) of the full product, divisible by tp
 * @param k     inner dimension on each rank (ignored by {@link BulkReduceScatter}, which runs no GEMM)
 * @param n     columns of the product and of the output
 * @param dtype element type of X, W, the user buffer of the pull methods, the output and the bias
 * @param bias  whether a bias row [1, n] is added after the reduction
 * @param fp8   FP8 input and weight (the weight stored [n, k]): the GEMMs are FP8 and write partial sums in
 *              {@code dtype} or fp32 (never FP8), the output is {@code dtype}; k and n must be multiples of 16
 * @param fp8Output the output quantized to this FP8 type (E4M3 or E5M2) after the reduction and the bias, with the
 *              scale the caller binds ({@link dev.ubuf.exec.OutputScaling}); the partial sums and the sum before
 *              quantization stay in {@code dtype} (or fp32). Empty for an output in {@code dtype}
 */
public record RsShape(int tp, long m, long k, long n, DType dtype, boolean bias, Optional<Fp8Operands> fp8,
                      Optional<DType> fp8Output) implements OverlapShape {

    public RsShape {
        Objects.requireNonNull(dtype, "dtype");
        Objects.requireNonNull(fp8, "fp8 (Optional.empty() for none)");
        Objects.requireNonNull(fp8Output, "fp8Output (Optional.empty() for none)");
        fp8Output.ifPresent(t -> {
            if (!t.isReserved()) {
                throw new IllegalArgumentException("an fp8 output is fp8e4m3 or fp8e5m2, got " + t.shortName()
                        + " (for a " + t.shortName() + " output make the shape's dtype " + t.shortName() + ")");
            }
        });
        if (tp < 2) {
            throw new IllegalArgumentException("reduce-scatter needs tp >= 2, got tp=" + tp
                    + " (with one rank run the GEMM directly)");
        }
        if (m <= 0 || k <= 0 || n <= 0) {
            throw new IllegalArgumentException("m, k, n must be positive, got m=" + m + " k=" + k + " n=" + n);
        }
        if (m % tp != 0) {
            throw new IllegalArgumentException("m=" + m + " is not divisible by tp=" + tp
                    + ": every rank receives m/tp whole rows");
        }
        if (dtype.isReserved()) {
            throw new IllegalArgumentException(dtype + " is reserved: GEMM and reduction support it not yet"
                    + (fp8.isPresent() ? "" : "; for fp8 operands give an Fp8Operands and the output's type"));
        }
        fp8.ifPresent(f -> f.validate("rs " + dtype.shortName() + " m" + m + " k" + k + " n" + n, k, n, dtype));
    }

    /** A shape whose operands are all {@code dtype}. */
    public RsShape(int tp, long m, long k, long n, DType dtype, boolean bias) {
        this(tp, m, k, n, dtype, bias, Optional.empty(), Optional.empty());
    }

    /** A shape with FP8 operands when {@code fp8} is present, and an output in {@code dtype}. */
    public RsShape(int tp, long m, long k, long n, DType dtype, boolean bias, Optional<Fp8Operands> fp8) {
        this(tp, m, k, n, dtype, bias, fp8, Optional.empty());
    }

    /** This shape with FP8 input and weight ({@code dtype} stays the output's and the partial sums' type). */
    public RsShape withFp8(Fp8Operands operands) {
        return new RsShape(tp, m, k, n, dtype, bias, Optional.of(operands), fp8Output);
    }

    /**
     * This shape with its output quantized to {@code type} (FP8_E4M3 or FP8_E5M2) after the reduction: Transformer
     * Engine's FP8 output for a consumer that reads FP8; the sum is still made in {@code dtype} (or fp32).
     */
    public RsShape withFp8Output(DType type) {
        return new RsShape(tp, m, k, n, dtype, bias, fp8, Optional.of(Objects.requireNonNull(type, "type")));
    }

    /** A plan of this shape's method, with the final quantization when the output is FP8 ({@link #fp8Output}). */
    public dev.ubuf.plan.Plan finish(dev.ubuf.plan.Plan plan) {
        return fp8Output.map(plan::withFp8Output).orElse(plan);
    }

    @Override
    public Collective collective() {
        return Collective.REDUCE_SCATTER;
    }

    /** Rows each rank receives: m / tp. */
    public long rowsPerRank() {
        return m / tp;
    }
}
