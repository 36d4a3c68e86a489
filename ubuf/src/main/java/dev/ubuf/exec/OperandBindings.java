package dev.ubuf.exec;

import dev.ubuf.tensor.TensorView;

/**
 * The caller's tensors for one run of a plan. {@code weightTransposed}: the weight is stored [N, K] (the layout of
 * a linear layer's weight, out = x * W^T) instead of [K, N]. Unused roles may be null.
 */
public record OperandBindings(TensorView input, TensorView weight, boolean weightTransposed, TensorView output,
                              TensorView bias) {
}
