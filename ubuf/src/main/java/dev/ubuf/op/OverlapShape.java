package dev.ubuf.op;

import dev.ubuf.tensor.DType;

/**
 * The shape of one overlapped GEMM on each rank, as its family defines it (AG: x_shard [m/tp, k], out [m, n];
 * RS: x [m, k], out [m/tp, n]). Implemented by each family's shape record; generic code (planner, benchmark,
 * tests) reads it through this view.
 */
public interface OverlapShape {
    Collective collective();

    int tp();

    long m();

    long k();

    long n();

    DType dtype();

    /** Whether a bias row [1, n] is added (once, after the reduction for RS). */
    boolean bias();

    /**
     * The FP8 operands of an FP8 op: then the input and weight are stored in these FP8 types (the weight [n, k]) and
     * dequantized by per-call scales, and {@link #dtype()} is the output's type (and the partial sums' of RS). Empty
     * for an op whose operands are all {@link #dtype()}.
     */
    default java.util.Optional<Fp8Operands> fp8() {
        return java.util.Optional.empty();
    }

    /**
     * The FP8 type of the output when the op quantizes it (an RS op's reduced sum: {@code dtype()} is then the
     * type of its partial sums and of the sum before quantization); empty for an output in {@link #dtype()}.
     */
    default java.util.Optional<DType> fp8Output() {
        return java.util.Optional.empty();
    }

    /**
     * Whether the caller's producer writes this rank's input straight into the op's user buffer
     * ({@link OverlapOp#inputChunk()}) and binds no input, so no plan copies it there (all-gathers only).
     */
    default boolean inputInUserBuffer() {
        return false;
    }

    /** The output's stored type: {@link #fp8Output()} when present, else {@link #dtype()}. */
    default DType outputDtype() {
        return fp8Output().orElse(dtype());
    }

    /** The input's stored type: the FP8 input type of an FP8 op, else {@link #dtype()}. */
    default DType inputDtype() {
        return fp8().map(Fp8Operands::input).orElse(dtype());
    }

    /** The weight's stored type: the FP8 weight type of an FP8 op, else {@link #dtype()}. */
    default DType weightDtype() {
        return fp8().map(Fp8Operands::weight).orElse(dtype());
    }

    /** Rows of the input operand on each rank. */
    default long inputRows() {
        return collective() == Collective.ALL_GATHER ? m() / tp() : m();
    }

    /** Rows of the output on each rank. */
    default long outputRows() {
        return collective() == Collective.ALL_GATHER ? m() : m() / tp();
    }

    /** Work of the whole GEMM on one rank, in FLOP. */
    default double flops() {
        return 2.0 * m() * k() * n();
    }

    /**
     * A stable key: "ag tp2 bf16 m8192 k8192 n8192" (+ " bias", + " fp8e4m3xfp8e4m3" for an FP8 op, + " ->fp8e4m3"
     * for an FP8 output, + " in-ubuf" for an input written into the user buffer).
     */
    default String key() {
        return collective().resultName() + " tp" + tp() + " " + dtype().shortName() + " m" + m() + " k" + k() + " n"
                + n() + (bias() ? " bias" : "") + fp8().map(f -> " " + f.describe()).orElse("")
                + fp8Output().map(t -> " ->" + t.shortName()).orElse("") + (inputInUserBuffer() ? " in-ubuf" : "");
    }
}
