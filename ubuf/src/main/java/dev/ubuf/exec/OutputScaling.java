package dev.ubuf.exec;

import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;

import java.util.Objects;

/**
 * How an op with an FP8 output quantizes it, bound per call: 1 x 1 fp32 views in device memory, as Transformer
 * Engine keeps an output's FP8 metadata. The output is {@code fp8(value * scale)}, rounded to nearest even and
 * saturated; the call raises {@code amax} to the largest |value| it quantized (max with what it held: the caller
 * resets it per step, e.g. into its amax history) and writes {@code 1 / scale} into {@code scaleInv} (what a GEMM
 * that reads the output takes).
 *
 * @param scale    the quantization scale; required
 * @param amax     raised to max |value|; null for none
 * @param scaleInv receives 1 / scale; null for none
 */
public record OutputScaling(TensorView scale, TensorView amax, TensorView scaleInv) {
    public OutputScaling {
        require(Objects.requireNonNull(scale, "output scale"), "output scale");
        if (amax != null) {
            require(amax, "output amax");
        }
        if (scaleInv != null) {
            require(scaleInv, "output scale_inv");
        }
    }

    private static void require(TensorView v, String what) {
        v.requireShape(1, 1, what);
        v.requireDType(DType.FP32, what);
    }
}
