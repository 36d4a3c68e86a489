package dev.ubuf.tests;

import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.cuda.KernelLibrary;
import dev.ubuf.cuda.StreamPriority;
import dev.ubuf.devicekernels.DeviceKernels;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** The reduction kernel (ring-RS tail, pull-RS) is within one output ulp of a host fp32 sum of the same chunks. */
class ReductionKernelGpuTest {
    static CudaContext ctx;
    static CudaStream stream;
    static KernelLibrary lib;
    static DeviceKernels kernels;

    @BeforeAll
    static void open() {
        Gpu.assumeGpus(1);
        ctx = CudaContext.retainPrimary(0);
        stream = ctx.createStream(StreamPriority.NORMAL);
        lib = KernelLibrary.load(ctx);
        kernels = new DeviceKernels(lib);
    }

    @AfterAll
    static void close() {
        if (ctx != null) {
            lib.close();
            stream.close();
            ctx.close();
        }
    }

    static Stream<Arguments> cases() {
        List<Arguments> a = new ArrayList<>();
        for (DType in : new DType[]{DType.BF16, DType.FP16, DType.FP32}) {
            for (int k : new int[]{1, 2, 3, 8}) {
                for (boolean acc : new boolean[]{false, true}) {
                    a.add(Arguments.of(in, in, k, 333, 257, acc));
                }
            }
        }
        a.add(Arguments.of(DType.FP32, DType.BF16, 4, 512, 1024, false));
        a.add(Arguments.of(DType.FP32, DType.FP16, 2, 100, 130, true));
        a.add(Arguments.of(DType.BF16, DType.BF16, 3, 256, 1024, true));
        return a.stream().flatMap(x -> Stream.of(Arguments.of(append(x.get(), false, false)),
                Arguments.of(append(x.get(), true, false)), Arguments.of(append(x.get(), true, true))));
    }

    private static Object[] append(Object[] x, boolean dense, boolean bias) {
        Object[] y = java.util.Arrays.copyOf(x, x.length + 2);
        y[x.length] = dense;
        y[x.length + 1] = bias;
        return y;
    }

    static float ulp(DType t, float v) {
        if (t == DType.FP32) {
            return Math.ulp(v);
        }
        float r = Math.abs(t.round(v));
        return Math.abs(t.decode(t.encode(r) + 1) - r);
    }

    /**
     * Strided views take the row/column kernels; contiguous ones (ld == cols) the dense kernels, whose 16-byte words
     * apply where every pointer is 16-aligned (the 512x1024 and 256x1024 cases) and the element-wise walk elsewhere;
     * with a bias, the sum rounded, the bias added, rounded again.
     */
    @ParameterizedTest(name = "{0}->{1} k={2} {3}x{4} accumulate={5} dense={6} bias={7}")
    @MethodSource("cases")
    void sumOfChunksIsWithinOneUlpOfHostFp32Sum(DType in, DType out, int k, int rows, int cols, boolean accumulate,
                                                boolean dense, boolean withBias) {
        long seed = System.nanoTime();
        SplittableRandom rnd = new SplittableRandom(seed);
        int ldSrc = dense ? cols : cols + 3;
        int ldDst = dense ? cols : cols + 5;
        long chunkElems = (long) rows * ldSrc;
        float[][] chunks = new float[k][];
        float[] dst0 = HostTensors.random(rnd, (long) rows * cols, out, 4f);
        float[] bias = HostTensors.random(rnd, cols, out, 4f);
        try (DeviceBuffer src = ctx.allocate(k * chunkElems * in.bytes());
             DeviceBuffer dst = ctx.allocate((long) rows * ldDst * out.bytes());
             DeviceBuffer biasBuffer = ctx.allocate((long) cols * out.bytes())) {
            List<TensorView> views = new ArrayList<>();
            for (int j = 0; j < k; j++) {
                chunks[j] = HostTensors.random(rnd, (long) rows * cols, in, 4f);
                TensorView v = new TensorView(src, j * chunkElems * in.bytes(), rows, cols, ldSrc, in);
                HostTensors.upload(ctx, stream, chunks[j], v);
                views.add(v);
            }
            TensorView dv = new TensorView(dst, 0, rows, cols, ldDst, out);
            HostTensors.upload(ctx, stream, dst0, dv);
            TensorView bv = new TensorView(biasBuffer, 0, 1, cols, cols, out);
            HostTensors.upload(ctx, stream, bias, bv);
            kernels.sum(views, dv, accumulate, withBias ? bv : null, stream);
            float[] got = HostTensors.download(ctx, stream, dv);
            for (int i = 0; i < rows * cols; i++) {
                // The kernel's documented order: the sources in index order, then the old dst added once.
                float acc = chunks[0][i];
                for (int j = 1; j < k; j++) {
                    acc += chunks[j][i];
                }
                float want = out.round(accumulate ? dst0[i] + acc : acc);
                if (withBias) {
                    want = out.round(want + bias[i % cols]);
                }
                float diff = Math.abs(got[i] - want);
                assertTrue(diff <= ulp(out, want), "element " + i + ": got " + got[i] + ", host fp32 sum " + want
                        + " (seed " + seed + ")");
            }
        }
    }
}
