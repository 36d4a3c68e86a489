package dev.ubuf.cli;

import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.gemm.Gemm;
import dev.ubuf.devicekernels.DeviceKernels;
import dev.ubuf.devicekernels.Fp8Kernels;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;

/**
 * The FP8 benches' operands: E4M3 copies of two bf16 matrices, quantized with scale 1, and the scales an FP8 multiply
 * of them takes (the inverses the quantize kernel wrote).
 */
record QuantizedGemmOperands(TensorView a8, TensorView b8, Gemm.Fp8Scales scales) {
    /**
     * Quantizes a and b (bf16) into a8 and b8 (E4M3, the same shapes) on the stream; scalars (256 bytes) holds the
     * scale 1 and the two inverse scales.
     */
    static QuantizedGemmOperands quantize(DeviceKernels kernels, Fp8Kernels fp8, TensorView a, TensorView b, DeviceBuffer a8,
                                DeviceBuffer b8, DeviceBuffer scalars, CudaStream s) {
        TensorView a8v = TensorView.of(a8, a.rows(), a.cols(), DType.FP8_E4M3);
        TensorView b8v = TensorView.of(b8, b.rows(), b.cols(), DType.FP8_E4M3);
        TensorView one = new TensorView(scalars, 0, 1, 1, 1, DType.FP32);
        TensorView scaleInvA = new TensorView(scalars, 64, 1, 1, 1, DType.FP32);
        TensorView scaleInvB = new TensorView(scalars, 128, 1, 1, 1, DType.FP32);
        kernels.fillBits(one, Float.floatToRawIntBits(1f), s);
        fp8.quantize(a, one, a8v, null, scaleInvA, s);
        fp8.quantize(b, one, b8v, null, scaleInvB, s);
        return new QuantizedGemmOperands(a8v, b8v, Gemm.Fp8Scales.of(scaleInvA.address(), scaleInvB.address()));
    }
}
