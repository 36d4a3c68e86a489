package dev.ubuf.plan;

import java.util.Objects;

/**
 * What makes a {@link PlanStep.Gemm} an FP8 GEMM: its A and B hold FP8 values (their matrices are declared
 * FP8_E4M3 or FP8_E5M2) and each is dequantized by a per-tensor fp32 scale the caller binds at run time (Transformer
 * Engine's scale_inv, a device scalar): {@code c = (scale(a) * a) * (scale(b) * b) (+ c)}. The step names which of
 * the caller's scales applies to which operand; the CUDA executor passes their device addresses to cuBLASLt, the host
 * executor multiplies by their values.
 *
 * @param a the scale that dequantizes the step's A
 * @param b the scale that dequantizes the step's B
 */
public record Fp8Scaling(Scale a, Scale b) {
    /** The per-tensor dequantization scales a call binds. */
    public enum Scale {
        /** The input's (x, or the gathered x of an all-gather: one scale for every rank's shard). */
        INPUT,
        /** The weight's. */
        WEIGHT
    }

    /** A is the input (or a chunk of it), B the weight: every FP8 GEMM of the AG and RS plans. */
    public static final Fp8Scaling INPUT_X_WEIGHT = new Fp8Scaling(Scale.INPUT, Scale.WEIGHT);

    public Fp8Scaling {
        Objects.requireNonNull(a, "a");
        Objects.requireNonNull(b, "b");
    }
}
