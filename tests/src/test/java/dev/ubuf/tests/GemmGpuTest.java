package dev.ubuf.tests;

import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.cuda.KernelLibrary;
import dev.ubuf.cuda.StreamPriority;
import dev.ubuf.gemm.Gemm;
import dev.ubuf.devicekernels.DeviceKernels;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** cuBLASLt GEMMs from Java match a float64 product of the same rounded inputs. */
class GemmGpuTest {
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

    static Stream<Arguments> cases() {
        List<Arguments> a = new ArrayList<>();
        int[][] shapes = {{256, 256, 256}, {512, 384, 1024}, {129, 67, 255}, {1000, 520, 72}, {8, 1024, 4096}};
        for (DType t : new DType[]{DType.BF16, DType.FP16, DType.FP32}) {
            for (int[] s : shapes) {
                for (int tr = 0; tr < 4; tr++) {
                    a.add(Arguments.of(t, s[0], s[1], s[2], (tr & 1) != 0, (tr & 2) != 0));
                }
            }
        }
        return a.stream();
    }

    static double bound(DType t) {
        return t == DType.FP32 ? 1e-4 : 1e-2;
    }

    @ParameterizedTest(name = "{0} {1}x{2}x{3} transA={4} transB={5}")
    @MethodSource("cases")
    void productMatchesFloat64Reference(DType t, int m, int n, int k, boolean ta, boolean tb) {
        long seed = System.nanoTime();
        SplittableRandom rnd = new SplittableRandom(seed);
        float[] a = HostTensors.random(rnd, (long) m * k, t, 1f);
        float[] b = HostTensors.random(rnd, (long) k * n, t, 1f);
        try (DeviceBuffer da = ctx.allocate((long) m * k * t.bytes());
             DeviceBuffer db = ctx.allocate((long) k * n * t.bytes());
             DeviceBuffer dc = ctx.allocate((long) m * n * t.bytes())) {
            TensorView av = ta ? TensorView.of(da, k, m, t) : TensorView.of(da, m, k, t);
            TensorView bv = tb ? TensorView.of(db, n, k, t) : TensorView.of(db, k, n, t);
            TensorView cv = TensorView.of(dc, m, n, t);
            HostTensors.upload(ctx, stream, a, av);
            HostTensors.upload(ctx, stream, b, bv);
            kernels.poison(cv, stream);
            gemm.multiply(av, bv, cv, 1f, 0f, new Gemm.Options(ta, tb, 0, false), stream);
            float[] got = HostTensors.download(ctx, stream, cv);
            double err = HostTensors.relativeError(got, HostTensors.matmul(a, b, m, n, k, ta, tb));
            assertTrue(err < bound(t), "relative Frobenius error " + err + " (seed " + seed + ")");
        }
    }

    /** A GEMM on sub-views (row/column windows inside larger matrices, beta = 1) touches only its window. */
    @ParameterizedTest(name = "{0}")
    @MethodSource("dtypes")
    void subViewsWithAccumulationLeaveTheRestUntouched(DType t) {
        long seed = System.nanoTime();
        SplittableRandom rnd = new SplittableRandom(seed);
        int bigR = 300, bigC = 280, m = 96, n = 128, k = 160;
        float[] big = HostTensors.random(rnd, (long) bigR * bigC, t, 1f);
        float[] cbig = HostTensors.random(rnd, (long) bigR * bigC, t, 1f);
        try (DeviceBuffer da = ctx.allocate((long) bigR * bigC * t.bytes());
             DeviceBuffer dc = ctx.allocate((long) bigR * bigC * t.bytes())) {
            TensorView whole = TensorView.of(da, bigR, bigC, t);
            TensorView cwhole = TensorView.of(dc, bigR, bigC, t);
            HostTensors.upload(ctx, stream, big, whole);
            HostTensors.upload(ctx, stream, cbig, cwhole);
            TensorView av = whole.rows(8, m).cols(16, k);
            TensorView bv = whole.rows(120, k).cols(40, n);
            TensorView cv = cwhole.rows(50, m).cols(24, n);
            gemm.multiply(av, bv, cv, 1f, 1f, Gemm.Options.NN, stream);
            float[] got = HostTensors.download(ctx, stream, cwhole);
            float[] a = new float[m * k];
            float[] b = new float[k * n];
            for (int i = 0; i < m; i++) {
                for (int j = 0; j < k; j++) {
                    a[i * k + j] = big[(8 + i) * bigC + 16 + j];
                }
            }
            for (int i = 0; i < k; i++) {
                for (int j = 0; j < n; j++) {
                    b[i * n + j] = big[(120 + i) * bigC + 40 + j];
                }
            }
            double[] ref = HostTensors.matmul(a, b, m, n, k, false, false);
            float[] window = new float[m * n];
            for (int i = 0; i < bigR; i++) {
                for (int j = 0; j < bigC; j++) {
                    boolean inside = i >= 50 && i < 50 + m && j >= 24 && j < 24 + n;
                    if (inside) {
                        ref[(i - 50) * n + (j - 24)] += cbig[i * bigC + j];
                        window[(i - 50) * n + (j - 24)] = got[i * bigC + j];
                    } else {
                        assertEquals(cbig[i * bigC + j], got[i * bigC + j], "element outside the window changed at " + i + "," + j);
                    }
                }
            }
            double err = HostTensors.relativeError(window, ref);
            assertTrue(err < bound(t), "relative error " + err + " (seed " + seed + ")");
        }
    }

    static Stream<DType> dtypes() {
        return Stream.of(DType.BF16, DType.FP16, DType.FP32);
    }

    /** bf16 inputs with an fp32 output (the partial sums of the RS ring) are supported. */
    @Test
    void bf16InputsAccumulateIntoFp32Output() {
        long seed = System.nanoTime();
        SplittableRandom rnd = new SplittableRandom(seed);
        int m = 256, n = 192, k = 320;
        float[] a = HostTensors.random(rnd, (long) m * k, DType.BF16, 1f);
        float[] b = HostTensors.random(rnd, (long) k * n, DType.BF16, 1f);
        float[] c0 = HostTensors.random(rnd, (long) m * n, DType.FP32, 10f);
        try (DeviceBuffer da = ctx.allocate((long) m * k * 2); DeviceBuffer db = ctx.allocate((long) k * n * 2);
             DeviceBuffer dc = ctx.allocate((long) m * n * 4)) {
            TensorView av = TensorView.of(da, m, k, DType.BF16);
            TensorView bv = TensorView.of(db, k, n, DType.BF16);
            TensorView cv = TensorView.of(dc, m, n, DType.FP32);
            HostTensors.upload(ctx, stream, a, av);
            HostTensors.upload(ctx, stream, b, bv);
            HostTensors.upload(ctx, stream, c0, cv);
            gemm.multiply(av, bv, cv, 1f, 1f, Gemm.Options.NN, stream);
            double[] ref = HostTensors.matmul(a, b, m, n, k, false, false);
            for (int i = 0; i < ref.length; i++) {
                ref[i] += c0[i];
            }
            double err = HostTensors.relativeError(HostTensors.download(ctx, stream, cv), ref);
            assertTrue(err < 1e-5, "fp32 accumulation error " + err + " (seed " + seed + ")");
        }
    }
}
