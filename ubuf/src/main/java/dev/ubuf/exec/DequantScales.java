package dev.ubuf.exec;

import dev.ubuf.gemm.Gemm;
import dev.ubuf.plan.Fp8Scaling;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;

import java.util.Objects;

/**
 * The per-tensor dequantization scales of an FP8 op's operands, bound per call: 1 x 1 fp32 views in device memory
 * (Transformer Engine's scale_inv, which stays on the device), read by the GEMMs when they run, so a kernel earlier on
 * the caller's stream may write them. For an all-gather the input scale must be the same on every rank (the gathered
 * input has one scale: reduce the amax over the TP group before quantizing, as Transformer Engine does).
 *
 * @param input  dequantizes the input x (real x = stored x * input)
 * @param weight dequantizes the weight
 */
public record DequantScales(TensorView input, TensorView weight) {
    public DequantScales {
        require(input, "input");
        require(weight, "weight");
    }

    private static void require(TensorView v, String what) {
        Objects.requireNonNull(v, what + " scale");
        v.requireShape(1, 1, what + " scale");
        v.requireDType(DType.FP32, what + " scale");
        if (Long.remainderUnsigned(v.address(), Float.BYTES) != 0) {
            throw new IllegalArgumentException(what + " scale at 0x" + Long.toHexString(v.address())
                    + " is not 4-byte aligned");
        }
    }

    public TensorView get(Fp8Scaling.Scale which) {
        return switch (which) {
            case INPUT -> input;
            case WEIGHT -> weight;
        };
    }

    /** The cuBLASLt scales of a GEMM step with this scaling (no output scale, no amax: the outputs are not FP8). */
    public Gemm.Fp8Scales forGemm(Fp8Scaling scaling) {
        get(scaling.a()).memory().assertOpen();
        get(scaling.b()).memory().assertOpen();
        return Gemm.Fp8Scales.of(get(scaling.a()).address(), get(scaling.b()).address());
    }
}
