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
        return a.stream();
    }

    static float ulp(DType t, float v) {
        if (t == DType.FP32) {
            return Math.ulp(v);
        }
        float r = Math.abs(t.round(v));
        return Math.abs(t.decode(t.encode(r) + 1) - r);
    }

    @ParameterizedTest(name = "{0}->{1} k={2} {3}x{4} accumulate={5}")
    @MethodSource("cases")
    void sumOfChunksIsWithinOneUlpOfHostFp32Sum(DType in, DType out, int k, int rows, int cols, boolean accumulate) {
        long seed = System.nanoTime();
        SplittableRandom rnd = new SplittableRandom(seed);
        int ldSrc = cols + 3;
        int ldDst = cols + 5;
        long chunkElems = (long) rows * ldSrc;
        float[][] chunks = new float[k][];
        float[] dst0 = HostTensors.random(rnd, (long) rows * cols, out, 4f);
        try (DeviceBuffer src = ctx.allocate(k * chunkElems * in.bytes());
             DeviceBuffer dst = ctx.allocate((long) rows * ldDst * out.bytes())) {
            List<TensorView> views = new ArrayList<>();
            for (int j = 0; j < k; j++) {
                chunks[j] = HostTensors.random(rnd, (long) rows * cols, in, 4f);
                TensorView v = new TensorView(src, j * chunkElems * in.bytes(), rows, cols, ldSrc, in);
                HostTensors.upload(ctx, stream, chunks[j], v);
                views.add(v);
            }
            TensorView dv = new TensorView(dst, 0, rows, cols, ldDst, out);
            HostTensors.upload(ctx, stream, dst0, dv);
            kernels.sum(views, dv, accumulate, stream);
            float[] got = HostTensors.download(ctx, stream, dv);
            for (int i = 0; i < rows * cols; i++) {
                // The kernel's documented order: the sources in index order, then the old dst added once.
                float acc = chunks[0][i];
                for (int j = 1; j < k; j++) {
                    acc += chunks[j][i];
                }
                float want = out.round(accumulate ? dst0[i] + acc : acc);
                float diff = Math.abs(got[i] - want);
                assertTrue(diff <= ulp(out, want), "element " + i + ": got " + got[i] + ", host fp32 sum " + want
                        + " (seed " + seed + ")");
            }
        }
    }
}
