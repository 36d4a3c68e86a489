package dev.ubuf.op;

import dev.ubuf.tensor.DType;

import java.util.Objects;

/**
 * The FP8 operands of an overlapped GEMM (carried by its shape, {@link OverlapShape#fp8()}): the input x and the
 * weight are stored in FP8, each dequantized by a per-tensor fp32 scale that lives on the device and is bound per call
 * ({@link dev.ubuf.exec.DequantScales}: Transformer Engine's scale_inv). The GEMMs run in cuBLASLt's one FP8 layout,
 * out = x * W^T with W stored [n, k], and write the shape's {@link OverlapShape#dtype()} (bf16, fp16 or fp32): an AG
 * op gathers FP8 bytes (half of bf16's) and hands out the gathered FP8 input; an RS op keeps its partial sums in the
 * output's type or fp32, never in FP8 (the reduced sum may then be quantized: {@link OverlapShape#fp8Output()}).
 *
 * @param input  FP8_E4M3 or FP8_E5M2
 * @param weight FP8_E4M3 or FP8_E5M2; not both E5M2 (cuBLASLt has no E5M2 x E5M2 GEMM)
 */
public record Fp8Operands(DType input, DType weight) {
    /** cuBLASLt's FP8 kernels read and write every row in 16-byte multiples. */
    public static final int ALIGNMENT = 16;

    /** E4M3 input and weight: Transformer Engine's forward pass. */
    public static final Fp8Operands E4M3 = new Fp8Operands(DType.FP8_E4M3, DType.FP8_E4M3);

    public Fp8Operands {
        Objects.requireNonNull(input, "input");
        Objects.requireNonNull(weight, "weight");
        if (!input.isReserved() || !weight.isReserved()) {
            throw new IllegalArgumentException("fp8 operands must be fp8e4m3 or fp8e5m2, got input "
                    + input.shortName() + " and weight " + weight.shortName());
        }
        if (input == DType.FP8_E5M2 && weight == DType.FP8_E5M2) {
            throw new IllegalArgumentException("fp8e5m2 x fp8e5m2 has no cuBLASLt GEMM: make one operand fp8e4m3");
        }
    }

    /**
     * Checks an FP8 op's shape before any GPU work: k and n multiples of 16 (16-byte rows of x, W [n, k] and the
     * output, and 16-byte aligned chunks), and an output type an FP8 GEMM writes.
     */
    public void validate(String what, long k, long n, DType output) {
        Objects.requireNonNull(output, "output");
        if (output.isReserved()) {
            throw new IllegalArgumentException(what + ": an fp8 op writes bf16, fp16 or fp32 (the GEMMs' output and "
                    + "partial sums are never fp8), got " + output.shortName());
        }
        if (k % ALIGNMENT != 0) {
            throw new IllegalArgumentException(what + ": fp8 GEMMs need k to be a multiple of " + ALIGNMENT
                    + " (16-byte rows of x and W [n, k]), got k=" + k);
        }
        if (n % ALIGNMENT != 0) {
            throw new IllegalArgumentException(what + ": fp8 ops need n to be a multiple of " + ALIGNMENT
                    + " (16-byte rows of the weight's chunks and the output), got n=" + n);
        }
    }

    /** "fp8e4m3xfp8e4m3": input x weight, for keys and labels. */
    public String describe() {
        return input.shortName() + "x" + weight.shortName();
    }
}
