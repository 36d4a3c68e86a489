package dev.ubuf.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.cuda.KernelLibrary;
import dev.ubuf.cuda.StreamPriority;
import dev.ubuf.fp8.Fp8Format;
import dev.ubuf.gemm.Gemm;
import dev.ubuf.devicekernels.DeviceKernels;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * FP8 GEMMs through cuBLASLt against a float64 GEMM of the dequantized operands. The operands are random multiples
 * of 1/4 in [-2, 2] (exact in E4M3 and E5M2) and K is 64, so every partial sum is a multiple of 1/16 below 2^9: exact
 * in any accumulator of 13 or more bits, which Hopper's FP8 tensor cores have. The scales are powers of two (not 1),
 * so the scaled result is exact in fp32 too: the only rounding left is the output's, and every element must equal
 * the reference rounded once to the output type. C is poisoned first, so an element never written fails.
 */
class Fp8GemmGpuTest {
    static final float SCALE_A = 0.5f;
    static final float SCALE_B = 4f;
    static CudaContext ctx;
    static CudaStream stream;
    static KernelLibrary lib;
    static DeviceKernels kernels;
    static Gemm gemm;

    @BeforeAll
    static void open() {
        Gpu.assumeGpus(1);
        ctx = CudaContext.retainPrimary(0);
        stream = ctx.createStream(StreamPriority.NORMAL);
        lib = KernelLibrary.load(ctx);
        kernels = new DeviceKernels(lib);
        gemm = new Gemm(ctx);
    }

    @AfterAll
    static void close() {
        if (ctx != null) {
            gemm.close();
            lib.close();
            stream.close();
            assertEquals(List.of(), ctx.ledger().openResources(), "everything the tests opened is closed");
            ctx.close();
        }
    }

    /** Random multiples of 1/4 in [-2, 2]: exact in both FP8 formats. */
    static float[] quarters(SplittableRandom rnd, int n) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = rnd.nextInt(-8, 9) / 4f;
        }
        return v;
    }

    /** alpha * sA * sB * A[m, k] * B[n, k]^T in float64 (exact here). */
    static double[] reference(float[] a, float[] b, int m, int n, int k, float alpha) {
        double[] c = new double[m * n];
        for (int i = 0; i < m; i++) {
            for (int j = 0; j < n; j++) {
                double s = 0;
                for (int p = 0; p < k; p++) {
                    s += (double) a[i * k + p] * b[j * k + p];
                }
                c[i * n + j] = s * alpha * SCALE_A * SCALE_B;
            }
        }
        return c;
    }

    static TensorView scalar(DeviceBuffer buffer, long byteOffset, float value) {
        TensorView v = new TensorView(buffer, byteOffset, 1, 1, 1, DType.FP32);
        HostTensors.upload(ctx, stream, new float[] {value}, v);
        return v;
    }

    /** Runs one FP8 GEMM on fresh operands (A inside a wider matrix, so lda != k) and returns output, reference, amax. */
    record Outcome(float[] got, double[] want, float amax) {
    }

    static Outcome run(DType aType, DType bType, DType cType, int m, int n, int k, float alpha, float scaleD,
                       boolean amax) {
        SplittableRandom rnd = new SplittableRandom();
        float[] a = quarters(rnd, m * k);
        float[] b = quarters(rnd, n * k);
        int lda = k + 32;
        try (DeviceBuffer da = ctx.allocate((long) m * lda);
             DeviceBuffer db = ctx.allocate((long) n * k);
             DeviceBuffer dc = ctx.allocate((long) m * n * cType.bytes());
             DeviceBuffer scales = ctx.allocate(256)) {
            TensorView av = new TensorView(da, 0, m, k, lda, aType);
            TensorView bv = TensorView.of(db, n, k, bType);
            TensorView cv = TensorView.of(dc, m, n, cType);
            HostTensors.upload(ctx, stream, a, av);
            HostTensors.upload(ctx, stream, b, bv);
            kernels.poison(cv, stream);
            TensorView sa = scalar(scales, 0, SCALE_A);
            TensorView sb = scalar(scales, 64, SCALE_B);
            TensorView sd = scaleD == 0 ? null : scalar(scales, 128, scaleD);
            TensorView am = amax ? scalar(scales, 192, -1f) : null;
            Gemm.Fp8Scales s = new Gemm.Fp8Scales(sa.address(), sb.address(), sd == null ? 0 : sd.address(),
                    am == null ? 0 : am.address());
            gemm.multiply(av, bv, cv, alpha, 0f, Gemm.Options.NT, s, stream);
            float[] got = HostTensors.download(ctx, stream, cv);
            float amaxGot = am == null ? Float.NaN : HostTensors.download(ctx, stream, am)[0];
            return new Outcome(got, reference(a, b, m, n, k, alpha), amaxGot);
        }
    }

    static float roundTo(DType t, double v) {
        return t == DType.FP8_E4M3 || t == DType.FP8_E5M2 ? Fp8Format.of(t).round((float) v) : t.round((float) v);
    }

    static void assertEveryElement(Outcome o, DType cType, float scaleD, int n) {
        for (int i = 0; i < o.want().length; i++) {
            float expected = roundTo(cType, o.want()[i] * (scaleD == 0 ? 1 : scaleD));
            assertEquals(expected, o.got()[i], "element (" + i / n + ", " + i % n + "): exact value "
                    + o.want()[i] + " rounded to " + cType.shortName());
        }
    }

    static float maxAbs(double[] v) {
        double m = 0;
        for (double x : v) {
            m = Math.max(m, Math.abs(x));
        }
        return (float) m;
    }

    @ParameterizedTest(name = "{0} x {1} -> {2}, {3}x{4}x{5}")
    @CsvSource({
            "FP8_E4M3, FP8_E4M3, BF16, 96, 80, 64",
            "FP8_E4M3, FP8_E4M3, BF16, 200, 128, 64",
            "FP8_E4M3, FP8_E4M3, FP32, 96, 80, 64",
            "FP8_E5M2, FP8_E4M3, BF16, 96, 80, 64",
            "FP8_E4M3, FP8_E5M2, FP32, 130, 48, 64",
    })
    void theProductIsTheExactProductOfTheDequantizedOperandsRoundedOnce(DType aType, DType bType, DType cType, int m,
                                                                         int n, int k) {
        Outcome o = run(aType, bType, cType, m, n, k, 1f, 0, false);
        assertEveryElement(o, cType, 0, n);
    }

    @Test
    void alphaScalesTheProductOnTopOfTheOperandScales() {
        Outcome o = run(DType.FP8_E4M3, DType.FP8_E4M3, DType.FP32, 64, 64, 64, 0.25f, 0, false);
        assertEveryElement(o, DType.FP32, 0, 64);
    }

    /**
     * An FP8 output is {@code fp8(value * scaleD)}, rounded to nearest even; amax_d is max |value| before scaleD
     * (what delayed scaling records for the output). scaleD keeps every value within E4M3's range.
     */
    @Test
    void anFp8OutputIsScaledByScaleDAndItsAmaxIsTakenBeforeScaling() {
        float scaleD = 0.5f; // |value| <= 2 * 2 * 64 * sA * sB = 512, so |value * scaleD| <= 256 < 448
        Outcome o = run(DType.FP8_E4M3, DType.FP8_E4M3, DType.FP8_E4M3, 96, 64, 64, 1f, scaleD, true);
        assertEveryElement(o, DType.FP8_E4M3, scaleD, 64);
        assertEquals(maxAbs(o.want()), o.amax(), "amax_d is the largest |value| before scale_d");
    }

    /**
     * amax_d with a bf16 output. cuBLASLt documents amax_d as "the maximum of absolute values in the output matrix";
     * Transformer Engine only sets it for FP8 outputs, so this checks that cuBLASLt computes it for bf16 as well.
     */
    @Test
    void amaxDOfABf16OutputIsRefusedBeforeAnyGpuWork() {
        // cuBLASLt computes amax_d only for fp8 outputs (it rejected this in the heuristic on H200, 2026-11-23).
        var e = assertThrows(IllegalArgumentException.class,
                () -> run(DType.FP8_E4M3, DType.FP8_E4M3, DType.BF16, 96, 64, 64, 1f, 0, true));
        assertTrue(e.getMessage().contains("amax_d is computed only for an fp8 output"), e.getMessage());
    }
}
