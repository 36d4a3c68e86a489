package dev.ubuf.exec;

import dev.ubuf.tensor.TensorView;

/**
 * The caller's tensors for one run of a plan. {@code weightTransposed}: the weight is stored [N, K] (the layout of
 * a linear layer's weight, out = x * W^T) instead of [K, N]. Unused roles may be null. {@code scales}: the
 * dequantization scales of an FP8 op's input and weight (null for an op that is not FP8; an FP8 op also needs the
 * weight stored [N, K], the one layout cuBLASLt's FP8 GEMMs take). {@code outputScaling}: how an op with an FP8
 * output quantizes it (null for any other op).
 */
public record OperandBindings(TensorView input, TensorView weight, boolean weightTransposed, TensorView output,
                              TensorView bias, DequantScales scales, OutputScaling outputScaling) {

    /** Bindings of an op whose output is not FP8. */
    public OperandBindings(TensorView input, TensorView weight, boolean weightTransposed, TensorView output,
                           TensorView bias, DequantScales scales) {
        this(input, weight, weightTransposed, output, bias, scales, null);
    }

    /** Bindings of an op that is not FP8. */
    public OperandBindings(TensorView input, TensorView weight, boolean weightTransposed, TensorView output,
                           TensorView bias) {
        this(input, weight, weightTransposed, output, bias, null, null);
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
