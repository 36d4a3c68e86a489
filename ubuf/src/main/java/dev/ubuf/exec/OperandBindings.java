package dev.ubuf.exec;

import dev.ubuf.tensor.TensorView;

/**
 * The caller's tensors for one run of a plan, made by naming each one:
 * {@code OperandBindings.of(x, w).withWeightTransposed().withOutput(y).withBias(b).withScales(s)}. Unused roles stay
 * null (a bulk all-gather binds only its input: {@link #inputOnly}; a bulk reduce-scatter only its output:
 * {@link #outputOnly}).
 *
 * <p>{@code weightTransposed}: the weight is stored [N, K] (the layout of a linear layer's weight, out = x * W^T)
 * instead of [K, N]. {@code scales}: the dequantization scales of an FP8 op's input and weight (null for an op that
 * is not FP8; an FP8 op also needs the weight stored [N, K], the one layout cuBLASLt's FP8 GEMMs take).
 * {@code outputScaling}: how an op with an FP8 output quantizes it (null for any other op).
 *
 * <p>The canonical constructor is public only because a record's must be; call sites use {@link #of} and the
 * {@code with*} methods, which name what they set.
 */
public record OperandBindings(TensorView input, TensorView weight, boolean weightTransposed, TensorView output,
                              TensorView bias, DequantScales scales, OutputScaling outputScaling) {

    /** The input and the weight (stored [K, N]; see {@link #withWeightTransposed()}); nothing else bound yet. */
    public static OperandBindings of(TensorView input, TensorView weight) {
        return new OperandBindings(input, weight, false, null, null, null, null);
    }

    /** The input alone: an op that only moves it (a bulk all-gather). */
    public static OperandBindings inputOnly(TensorView input) {
        return of(input, null);
    }

    /** The output alone: an op whose input is already in its user buffer (a bulk reduce-scatter). */
    public static OperandBindings outputOnly(TensorView output) {
        return of(null, null).withOutput(output);
    }

    /** These bindings with the weight stored [N, K] (a linear layer's weight) instead of [K, N]. */
    public OperandBindings withWeightTransposed() {
        return new OperandBindings(input, weight, true, output, bias, scales, outputScaling);
    }

    /** These bindings writing into {@code o}. */
    public OperandBindings withOutput(TensorView o) {
        return new OperandBindings(input, weight, weightTransposed, o, bias, scales, outputScaling);
    }

    /** These bindings adding the bias row {@code b} (null: none). */
    public OperandBindings withBias(TensorView b) {
        return new OperandBindings(input, weight, weightTransposed, output, b, scales, outputScaling);
    }

    /** These bindings with FP8 dequantization scales. */
    public OperandBindings withScales(DequantScales s) {
        return new OperandBindings(input, weight, weightTransposed, output, bias, s, outputScaling);
    }

    /** These bindings with the quantization of an FP8 output. */
    public OperandBindings withOutputScaling(OutputScaling o) {
        return new OperandBindings(input, weight, weightTransposed, output, bias, scales, o);
    }
}
