package dev.ubuf.layers.tp;

import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;

import java.util.Objects;

/**
 * One trainable tensor of a layer on this rank: its value (the layer's dtype) and its gradient (fp32, the same
 * shape), both owned by the layer. {@code backward} adds into the gradient; {@code zeroGrad} clears it.
 *
 * @param name  e.g. "fc1.weight"
 * @param value this rank's shard: [N/tp, K] for a column-parallel weight, [N, K/tp] for a row-parallel one,
 *              1 x n for vectors
 * @param grad  fp32, value's shape
 */
public record Parameter(String name, TensorView value, TensorView grad) {
    public Parameter {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(value, "value");
        Objects.requireNonNull(grad, "grad");
        grad.requireShape(value.rows(), value.cols(), name + " gradient");
        grad.requireDType(DType.FP32, name + " gradient");
    }
}
