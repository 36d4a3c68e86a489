package dev.ubuf.bench;

import dev.ubuf.layers.tp.Activation;
import java.util.Locale;
import java.util.OptionalDouble;

/**
 * Model FLOPs of the demo's training step and the model FLOPs utilisation (MFU) they give: the GEMMs' multiply-adds
 * (2 FLOPs each) of fc1 and fc2, forward and backward (dgrad and wgrad, twice the forward), per GPU; LayerNorm,
 * activations and communication count nothing, as in the usual MFU. The peak is the GPU's dense bf16/fp16 tensor
 * rate from its data sheet, also for FP8 runs, so FP8 and bf16 steps compare on one scale.
 */
public final class StepFlops {
    private StepFlops() {
    }

    /** FLOPs per GPU of one step of {@code layers} LayerNormMLPs on {@code tokens} tokens, tensor-parallel over tp. */
    public static double perGpu(long hidden, long ffn, Activation activation, int layers, long tokens, int tp) {
        if (hidden <= 0 || ffn <= 0 || layers <= 0 || tokens <= 0 || tp <= 0) {
            throw new IllegalArgumentException("sizes must be positive");
        }
        double fc1Out = activation.fc1Outputs(ffn);
        double forward = 2.0 * tokens * hidden * fc1Out + 2.0 * tokens * ffn * hidden;
        return 3.0 * forward * layers / tp;
    }

    /** Dense bf16 tensor TFLOP/s of the GPU named {@code device} (as CUDA names it), if known. */
    public static OptionalDouble peakTflops(String device) {
        String d = device.toUpperCase(Locale.ROOT);
        // H100 SXM5 (80GB HBM3) and H200 share the SXM5 compute: 989.4 dense bf16 TFLOP/s; the PCIe H100 is slower.
        if (d.contains("H200") || (d.contains("H100") && (d.contains("HBM3") || d.contains("SXM")))) {
            return OptionalDouble.of(989.4);
        }
        if (d.contains("H100") && d.contains("PCIE")) {
            return OptionalDouble.of(756.0);
        }
        if (d.contains("A100")) {
            return OptionalDouble.of(312.0);
        }
        return OptionalDouble.empty();
    }

    /** The MFU of a step of {@code flopsPerGpu} that took {@code ms}, against {@code peakTflops}. */
    public static double mfu(double flopsPerGpu, double ms, double peakTflops) {
        return flopsPerGpu / (ms * 1e-3) / (peakTflops * 1e12);
    }
}
