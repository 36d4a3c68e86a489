package dev.ubuf.layers.tp;

import dev.ubuf.exec.DequantScales;
import dev.ubuf.exec.OperandBindings;
import dev.ubuf.tensor.TensorView;

import java.util.Objects;

/**
 * A tensor a layer's GEMM reads: a plain one in the layer's dtype, or an FP8 one that carries its own dequantization
 * scale (Transformer Engine's Float8Tensor with its scale_inv). The GEMMs pick FP8 from their operands' types
 * ({@link TpContext#multiply}, {@link #bind}), so each layer has one forward and one backward.
 */
sealed interface Operand permits Operand.Plain, Operand.Fp8 {
    /** The values as stored: rows x cols in the layer's dtype, or the FP8 values. */
    TensorView data();

    /** A tensor in the layer's dtype; a GEMM reads it in either layout through its transpose flags. */
    record Plain(TensorView data) implements Operand {
        public Plain {
            Objects.requireNonNull(data, "data");
        }
    }

    /**
     * An FP8 tensor. cuBLASLt runs FP8 only as A[m, k] B[n, k]^T, so a GEMM that reads it in the other layout takes
     * {@code transposed}, written when it was quantized or by a transpose of the stored values.
     *
     * @param transposed   {@code data^T}, or null where no GEMM reads the other layout
     * @param scaleInverse dequantizes both (real = stored * scaleInverse): a 1 x 1 fp32 device scalar, 16-byte
     *                     aligned as cuBLASLt wants its scale pointers
     */
    record Fp8(TensorView data, TensorView transposed, TensorView scaleInverse) implements Operand {
        public Fp8 {
            Objects.requireNonNull(data, "data");
            Objects.requireNonNull(scaleInverse, "scaleInverse");
        }

        /**
         * The values laid out as {@code [rows of op(X), cols of op(X)]} where op(X) = X^T when {@code transposed},
         * i.e. what a GEMM given no transpose flag for this operand reads.
         */
        TensorView as(boolean transposed, String what) {
            if (!transposed) {
                return data;
            }
            if (this.transposed == null) {
                throw new IllegalStateException(what + ": an FP8 GEMM reads this operand transposed, but it has no"
                        + " transposed copy (cuBLASLt multiplies FP8 only as A[m, k] B[n, k]^T)");
            }
            return this.transposed;
        }
    }

    /**
     * An overlapped op's bindings: out = x * op(w) (+ bias), where {@code weightTransposed} says w is stored [n, k]
     * for a plain w. FP8 operands bind their dequantization scales and the weight stored [n, k] (its transposed copy
     * where the plain layout would be [k, n]). With {@code inputInUserBuffer} x already sits in the op's user buffer
     * ({@link dev.ubuf.op.OverlapOp#inputChunk()}) and only its scale is bound.
     */
    static OperandBindings bind(Operand x, boolean inputInUserBuffer, Operand w, boolean weightTransposed,
                                TensorView out, TensorView bias) {
        TensorView input = inputInUserBuffer ? null : x.data();
        return switch (x) {
            case Plain p when w instanceof Plain pw ->
                    transposed(OperandBindings.of(input, pw.data()), weightTransposed).withOutput(out).withBias(bias);
            case Fp8 q when w instanceof Fp8 qw ->
                    OperandBindings.of(input, qw.as(!weightTransposed, "weight")).withWeightTransposed()
                            .withOutput(out).withBias(bias)
                            .withScales(new DequantScales(q.scaleInverse(), qw.scaleInverse()));
            default -> throw new IllegalArgumentException("one GEMM's operands are either all FP8 or none: got "
                    + x.getClass().getSimpleName() + " x " + w.getClass().getSimpleName());
        };
    }

    private static OperandBindings transposed(OperandBindings b, boolean weightTransposed) {
        return weightTransposed ? b.withWeightTransposed() : b;
    }
}
