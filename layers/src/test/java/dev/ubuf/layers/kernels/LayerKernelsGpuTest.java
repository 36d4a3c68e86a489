package dev.ubuf.layers.kernels;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.ubuf.cuda.Cuda;
import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaGraph;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.cuda.KernelLibrary;
import dev.ubuf.cuda.PinnedHostBuffer;
import dev.ubuf.cuda.StreamPriority;
import dev.ubuf.layers.reference.HostLayerMath;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The layer kernels on a GPU through {@link LayerKernels}, against the float64 reference {@link HostLayerMath}
 * within the dtype's rounding; outputs start as NaN so an unwritten element fails. Skipped, saying why, without a
 * GPU or without kernels (a build without nvcc).
 */
class LayerKernelsGpuTest {
    private static CudaContext ctx;
    private static CudaStream stream;
    private static KernelLibrary library;
    private static LayerKernels kernels;
    private static String unavailable;

    private final List<DeviceBuffer> buffers = new ArrayList<>();
    private final SplittableRandom rnd = new SplittableRandom(20261123);

    @BeforeAll
    static void open() {
        Optional<String> reason = Cuda.unavailableReason(1);
        if (reason.isEmpty() && !KernelLibrary.available()) {
            reason = Optional.of("built without nvcc (no kernels)");
        }
        if (reason.isPresent()) {
            unavailable = reason.get();
            System.out.println("SKIPPED (GPU test): " + unavailable);
            return;
        }
        ctx = CudaContext.retainPrimary(0);
        stream = ctx.createStream(StreamPriority.NORMAL);
        library = KernelLibrary.load(ctx);
        kernels = new LayerKernels(library);
    }

    @AfterAll
    static void close() {
        if (ctx != null) {
            library.close();
            stream.close();
            ctx.close();
        }
    }

    @BeforeEach
    void needsGpu() {
        assumeTrue(unavailable == null, () -> "GPU test skipped: " + unavailable);
    }

    @AfterEach
    void free() {
        if (stream != null) {
            stream.synchronize();
        }
        buffers.forEach(DeviceBuffer::close);
    }

    /** A rows x cols view with leading dimension ld, filled with NaN (all-ones bits) everywhere. */
    TensorView alloc(long rows, long cols, long ld, DType t) {
        long bytes = ((rows - 1) * ld + cols) * t.bytes();
        bytes = (bytes + 3) / 4 * 4;
        DeviceBuffer b = ctx.allocate(bytes);
        buffers.add(b);
        stream.fill32(b.address(), -1, bytes / 4);
        return new TensorView(b, 0, rows, cols, ld, t);
    }

    TensorView alloc(long rows, long cols, DType t) {
        return alloc(rows, cols, cols, t);
    }

    /** Uniform values in [-scale, scale), rounded to t, so host and device see the same numbers. */
    double[] random(long n, DType t, double scale) {
        double[] a = new double[Math.toIntExact(n)];
        for (int i = 0; i < a.length; i++) {
            a[i] = t.round((float) rnd.nextDouble(-scale, scale));
        }
        return a;
    }

    TensorView upload(double[] values, TensorView v) {
        int e = v.dtype().bytes();
        long rowBytes = v.cols() * e;
        try (PinnedHostBuffer h = ctx.allocateHost(rowBytes * v.rows())) {
            MemorySegment seg = h.segment();
            for (int i = 0; i < values.length; i++) {
                if (e == 4) {
                    seg.setAtIndex(ValueLayout.JAVA_FLOAT, i, (float) values[i]);
                } else {
                    seg.setAtIndex(ValueLayout.JAVA_SHORT, i, (short) v.dtype().encode((float) values[i]));
                }
            }
            for (long r = 0; r < v.rows(); r++) {
                stream.copyFromHost(v.memory(), v.byteOffset() + r * v.ld() * e, h, r * rowBytes, rowBytes);
            }
            stream.synchronize();
        }
        return v;
    }

    double[] download(TensorView v) {
        int e = v.dtype().bytes();
        long rowBytes = v.cols() * e;
        double[] out = new double[Math.toIntExact(v.rows() * v.cols())];
        try (PinnedHostBuffer h = ctx.allocateHost(rowBytes * v.rows())) {
            for (long r = 0; r < v.rows(); r++) {
                stream.copyToHost(h, r * rowBytes, v.memory(), v.byteOffset() + r * v.ld() * e, rowBytes);
            }
            stream.synchronize();
            MemorySegment seg = h.segment();
            for (int i = 0; i < out.length; i++) {
                out[i] = e == 4 ? seg.getAtIndex(ValueLayout.JAVA_FLOAT, i)
                        : v.dtype().decode(seg.getAtIndex(ValueLayout.JAVA_SHORT, i));
            }
        }
        return out;
    }

    /** Round-off allowed, as a fraction of (|reference| + the output's RMS): fp32 math, or one ulp at 1. */
    static double tolerance(DType t) {
        return switch (t) {
            case FP32 -> 0x1p-17;
            case FP16 -> 0x1p-10;
            case BF16 -> 0x1p-7;
            default -> throw new IllegalArgumentException(t.toString());
        };
    }

    static void assertClose(double[] expected, double[] actual, double tol, String what) {
        assertEquals(expected.length, actual.length, what + ": length");
        double sq = 0;
        for (double e : expected) {
            sq += e * e;
        }
        double rms = Math.sqrt(sq / expected.length);
        for (int i = 0; i < expected.length; i++) {
            double allowed = tol * (Math.abs(expected[i]) + rms);
            int at = i;
            assertTrue(Math.abs(actual[i] - expected[i]) <= allowed, () -> what + "[" + at + "]: expected "
                    + expected[at] + ", got " + actual[at] + " (allowed " + allowed + ")");
        }
    }

    @ParameterizedTest(name = "{0} {1}x{2} ld {3} zero-centred {4}")
    @CsvSource({
            "BF16, 300, 4096, 4096, false",
            "FP16, 64, 8192, 8200, true",
            "FP32, 33, 1003, 1010, false",
            "BF16, 512, 16384, 16384, false",
            "BF16, 2000, 1024, 1024, true",
            // The demo's shard (8B dims, tp 2) and 70B dims at tp 4: fused backward, 256 and 512 threads.
            "BF16, 4096, 4096, 4096, false",
            "BF16, 2048, 8192, 8192, true",
            // Odd sizes: cols not a multiple of 8 (scalar path), rows not a multiple of the 8-row parts.
            "BF16, 37, 1003, 1003, true",
            "FP16, 1, 24, 24, false",
            "FP32, 4099, 4096, 4096, false",
            // Rows too long for the registers: the looped forward and the two-kernel backward.
            "FP32, 19, 8200, 8200, false",
            "BF16, 17, 20000, 20008, true",
    })
    void layerNormForwardAndBackwardMatchTheReference(DType t, int rows, int cols, int ld, boolean zc) {
        float eps = 1e-5f;
        double[] x = random((long) rows * cols, t, 3);
        for (int i = 0; i < x.length; i++) {
            x[i] = t.round((float) (x[i] + 0.01 * (i / cols))); // a per-row offset, so the mean matters
        }
        double[] gamma = random(cols, t, 1);
        double[] beta = random(cols, t, 1);
        double[] dy = random((long) rows * cols, t, 1);
        TensorView xv = upload(x, alloc(rows, cols, ld, t));
        TensorView gv = upload(gamma, alloc(1, cols, t));
        TensorView bv = upload(beta, alloc(1, cols, t));
        TensorView dyv = upload(dy, alloc(rows, cols, ld, t));
        TensorView y = alloc(rows, cols, ld, t);
        TensorView mean = alloc(1, rows, DType.FP32);
        TensorView rstd = alloc(1, rows, DType.FP32);
        kernels.layerNormForward(xv, gv, bv, eps, zc, y, mean, rstd, stream);
        HostLayerMath.LayerNormForward f = HostLayerMath.layerNormForward(x, rows, cols, gamma, beta, eps, zc);
        double[] deviceMean = download(mean);
        double[] deviceRstd = download(rstd);
        assertClose(f.mean(), deviceMean, 0x1p-20, "mean");
        assertClose(f.rstd(), deviceRstd, 0x1p-18, "rstd");
        assertClose(f.y(), download(y), tolerance(t), "y");

        TensorView dx = alloc(rows, cols, ld, t);
        TensorView dgamma = alloc(1, cols, DType.FP32);
        TensorView dbeta = alloc(1, cols, t);
        TensorView ws = alloc(LayerKernels.layerNormBackwardWorkspaceRows(rows), cols, DType.FP32);
        kernels.layerNormBackward(dyv, xv, mean, rstd, gv, zc, dx, dgamma, dbeta, false, ws, stream);
        HostLayerMath.LayerNormBackward b = HostLayerMath.layerNormBackward(dy, x, deviceMean, deviceRstd, gamma, zc,
                rows, cols);
        assertClose(b.dx(), download(dx), tolerance(t), "dx");
        assertClose(b.dgamma(), download(dgamma), tolerance(DType.FP32), "dgamma (fp32)");
        assertClose(b.dbeta(), download(dbeta), tolerance(t), "dbeta");
    }

    @Test
    void layerNormBackwardIsDeterministicAndWorksInPlace() {
        int rows = 1000;
        int cols = 2048;
        DType t = DType.BF16;
        double[] x = random((long) rows * cols, t, 2);
        double[] dy = random((long) rows * cols, t, 1);
        double[] gamma = random(cols, t, 1);
        TensorView xv = upload(x, alloc(rows, cols, t));
        TensorView gv = upload(gamma, alloc(1, cols, t));
        TensorView bv = upload(random(cols, t, 1), alloc(1, cols, t));
        TensorView mean = alloc(1, rows, DType.FP32);
        TensorView rstd = alloc(1, rows, DType.FP32);
        kernels.layerNormForward(xv, gv, bv, 1e-5f, false, alloc(rows, cols, t), mean, rstd, stream);
        TensorView ws = alloc(LayerKernels.layerNormBackwardWorkspaceRows(rows), cols, DType.FP32);
        double[][] runs = new double[3][];
        double[] dxOut = null;
        for (int run = 0; run < 3; run++) {
            TensorView dyv = upload(dy, alloc(rows, cols, t));
            TensorView dgamma = alloc(1, cols, DType.FP32);
            // dx over dy: the parameter sums read dy before dx overwrites it.
            kernels.layerNormBackward(dyv, xv, mean, rstd, gv, false, dyv, dgamma, alloc(1, cols, DType.FP32), false,
                    ws, stream);
            runs[run] = download(dgamma);
            dxOut = download(dyv);
        }
        assertArrayEquals(runs[0], runs[1], "bit-identical dgamma run to run");
        assertArrayEquals(runs[0], runs[2], "bit-identical dgamma run to run");
        HostLayerMath.LayerNormBackward b = HostLayerMath.layerNormBackward(dy, x, download(mean), download(rstd),
                gamma, false, rows, cols);
        assertClose(b.dgamma(), runs[0], tolerance(DType.FP32), "dgamma");
        assertClose(b.dx(), dxOut, tolerance(t), "dx in place over dy");
    }

    /**
     * The staged backward and its finishing column sums, eager and replayed from a CUDA graph twice into
     * NaN-poisoned outputs: the same bits every time, every value written.
     */
    @Test
    void layerNormBackwardGivesTheSameBitsEagerAndAsAGraph() {
        int rows = 2048;
        int cols = 4096;
        DType t = DType.BF16;
        double[] x = random((long) rows * cols, t, 2);
        TensorView xv = upload(x, alloc(rows, cols, t));
        TensorView dyv = upload(random((long) rows * cols, t, 1), alloc(rows, cols, t));
        TensorView gv = upload(random(cols, t, 1), alloc(1, cols, t));
        TensorView mean = alloc(1, rows, DType.FP32);
        TensorView rstd = alloc(1, rows, DType.FP32);
        kernels.layerNormForward(xv, gv, upload(random(cols, t, 1), alloc(1, cols, t)), 1e-5f, false,
                alloc(rows, cols, t), mean, rstd, stream);
        TensorView ws = alloc(LayerKernels.layerNormBackwardWorkspaceRows(rows), cols, DType.FP32);
        double[][] outs = new double[3][];
        for (int run = 0; run < 3; run++) {
            TensorView dx = alloc(rows, cols, t);
            TensorView dgamma = alloc(1, cols, DType.FP32);
            TensorView dbeta = alloc(1, cols, DType.FP32);
            Runnable op = () -> kernels.layerNormBackward(dyv, xv, mean, rstd, gv, false, dx, dgamma, dbeta, false,
                    ws, stream);
            if (run == 0) {
                op.run();
            } else {
                try (CudaGraph g = stream.capture(op, false)) {
                    g.launch(stream);
                    stream.synchronize();
                    if (run == 2) {
                        stream.fill32(dgamma.address(), -1, cols); // poisoned again: the second replay writes it
                        g.launch(stream);
                        stream.synchronize();
                    }
                }
            }
            double[] dxh = download(dx);
            double[] all = new double[dxh.length + 2 * cols];
            System.arraycopy(dxh, 0, all, 0, dxh.length);
            System.arraycopy(download(dgamma), 0, all, dxh.length, cols);
            System.arraycopy(download(dbeta), 0, all, dxh.length + cols, cols);
            outs[run] = all;
        }
        assertTrue(java.util.Arrays.stream(outs[0]).allMatch(Double::isFinite), "every dx, dgamma, dbeta written");
        assertArrayEquals(outs[0], outs[1], "a graph replay against the eager op");
        assertArrayEquals(outs[0], outs[2], "a second replay against the eager op");
    }

    /**
     * The forward on aligned rows (the word kernel; paired at 2048 x 4096 bf16 and 1000 x 4096 fp32 on 132 SMs) and
     * on the same rows one element apart (the scalar path): the same sums in the same order, so bit-identical y, mean
     * and rstd.
     */
    @ParameterizedTest(name = "{0} {1}x{2}")
    @CsvSource({"BF16, 2048, 4096", "FP16, 333, 1000", "FP32, 77, 2048", "BF16, 64, 3072", "BF16, 40, 8192",
                "FP32, 1000, 4096"})
    void forwardKernelsAgreeBitForBit(DType t, int rows, int cols) {
        double[] x = random((long) rows * cols, t, 3);
        TensorView gv = upload(random(cols, t, 1), alloc(1, cols, t));
        TensorView bv = upload(random(cols, t, 1), alloc(1, cols, t));
        double[][] outs = new double[2][];
        for (int ld : new int[]{cols, cols + 1}) {
            TensorView y = alloc(rows, cols, ld, t);
            TensorView mean = alloc(1, rows, DType.FP32);
            TensorView rstd = alloc(1, rows, DType.FP32);
            kernels.layerNormForward(upload(x, alloc(rows, cols, ld, t)), gv, bv, 1e-5f, false, y, mean, rstd, stream);
            double[] yh = download(y);
            double[] all = new double[yh.length + 2 * rows];
            System.arraycopy(yh, 0, all, 0, yh.length);
            System.arraycopy(download(mean), 0, all, yh.length, rows);
            System.arraycopy(download(rstd), 0, all, yh.length + rows, rows);
            outs[ld == cols ? 0 : 1] = all;
        }
        assertTrue(java.util.Arrays.stream(outs[0]).allMatch(Double::isFinite), "every y, mean and rstd written");
        assertArrayEquals(outs[1], outs[0], "aligned rows against the same rows one element apart");
    }

    /**
     * The staged backward (rows 16-byte aligned) and the register-only one (the same rows one element apart, so not
     * aligned) add the same terms in the same order: bit-identical dx, dgamma and dbeta.
     */
    @ParameterizedTest(name = "{0} {1}x{2}")
    @CsvSource({"BF16, 1000, 2048", "FP32, 77, 4096", "FP16, 4096, 8192"})
    void stagedAndRegisterOnlyBackwardsAgreeBitForBit(DType t, int rows, int cols) {
        double[] x = random((long) rows * cols, t, 2);
        double[] dy = random((long) rows * cols, t, 1);
        double[] gamma = random(cols, t, 1);
        TensorView gv = upload(gamma, alloc(1, cols, t));
        TensorView mean = alloc(1, rows, DType.FP32);
        TensorView rstd = alloc(1, rows, DType.FP32);
        TensorView xv = upload(x, alloc(rows, cols, t));
        kernels.layerNormForward(xv, gv, upload(random(cols, t, 1), alloc(1, cols, t)), 1e-5f, false,
                alloc(rows, cols, t), mean, rstd, stream);
        double[][] outs = new double[2][];
        for (int ld : new int[]{cols, cols + 1}) {
            TensorView xs = upload(x, alloc(rows, cols, ld, t));
            TensorView dys = upload(dy, alloc(rows, cols, ld, t));
            TensorView dx = alloc(rows, cols, ld, t);
            TensorView dgamma = alloc(1, cols, DType.FP32);
            TensorView dbeta = alloc(1, cols, DType.FP32);
            kernels.layerNormBackward(dys, xs, mean, rstd, gv, false, dx, dgamma, dbeta, false,
                    alloc(LayerKernels.layerNormBackwardWorkspaceRows(rows), cols, DType.FP32), stream);
            double[] dxh = download(dx);
            double[] dg = download(dgamma);
            double[] db = download(dbeta);
            double[] all = new double[dxh.length + 2 * cols];
            System.arraycopy(dxh, 0, all, 0, dxh.length);
            System.arraycopy(dg, 0, all, dxh.length, cols);
            System.arraycopy(db, 0, all, dxh.length + cols, cols);
            outs[ld == cols ? 0 : 1] = all;
        }
        assertArrayEquals(outs[1], outs[0], "staged (aligned rows) against register-only (unaligned rows)");
        HostLayerMath.LayerNormBackward b = HostLayerMath.layerNormBackward(dy, x, download(mean), download(rstd),
                gamma, false, rows, cols);
        assertClose(b.dgamma(), java.util.Arrays.copyOfRange(outs[0], rows * cols, rows * cols + cols),
                tolerance(DType.FP32), "dgamma");
    }

    @ParameterizedTest(name = "{0} {1}x{2} ld {3} into {4}")
    @CsvSource({
            "BF16, 4096, 1024, 1024, BF16",
            "BF16, 16384, 4096, 4096, FP32",
            "FP32, 37, 130, 133, FP32",
            "FP16, 1, 8, 8, FP16",
            "BF16, 8192, 1792, 1792, FP32",
            "BF16, 1000, 1003, 1003, FP32",
            "FP16, 33, 4104, 4112, FP16",
    })
    void biasGradAccumulatesColumnSums(DType t, int rows, int cols, int ld, DType out) {
        double[] dy = random((long) rows * cols, t, 1);
        double[] before = random(cols, out, 1);
        TensorView dyv = upload(dy, alloc(rows, cols, ld, t));
        TensorView db = upload(before, alloc(1, cols, out));
        kernels.biasGrad(dyv, db, true, alloc(LayerKernels.biasGradWorkspaceRows(rows), cols, DType.FP32), stream);
        double[] expected = HostLayerMath.columnSums(dy, rows, cols);
        for (int c = 0; c < cols; c++) {
            expected[c] += before[c];
        }
        assertClose(expected, download(db), tolerance(out), "db");
    }

    @ParameterizedTest(name = "{0} {1}x{2} ld {3}")
    @CsvSource({
            "BF16, 128, 4096, 4096",
            "FP16, 7, 77, 80",
            "FP32, 64, 1000, 1000",
            "BF16, 1001, 4104, 4104",
            "BF16, 9, 1003, 1003",
    })
    void geluBiasGeluAndTheirBackwardMatchTheReference(DType t, int rows, int cols, int ld) {
        double[] x = random((long) rows * cols, t, 5);
        double[] dy = random((long) rows * cols, t, 1);
        double[] bias = random(cols, t, 1);
        TensorView xv = upload(x, alloc(rows, cols, ld, t));
        TensorView dyv = upload(dy, alloc(rows, cols, ld, t));
        TensorView bv = upload(bias, alloc(1, cols, t));
        TensorView y = alloc(rows, cols, ld, t);
        kernels.gelu(xv, y, stream);
        assertClose(HostLayerMath.gelu(x), download(y), tolerance(t), "gelu");
        TensorView dx = alloc(rows, cols, ld, t);
        kernels.geluBackward(dyv, xv, dx, stream);
        assertClose(HostLayerMath.geluBackward(dy, x), download(dx), tolerance(t), "gelu backward");
        TensorView by = alloc(rows, cols, ld, t);
        TensorView pre = alloc(rows, cols, ld, t);
        kernels.biasGelu(xv, bv, by, pre, stream);
        HostLayerMath.BiasGelu ref = HostLayerMath.biasGelu(x, bias, rows, cols);
        assertClose(ref.y(), download(by), tolerance(t), "bias gelu");
        assertClose(ref.pre(), download(pre), tolerance(t), "bias gelu pre-activation");
        // Without pre, aligned views take the column-stationary kernel: the same bits, out of place and in place.
        TensorView byNoPre = alloc(rows, cols, ld, t);
        kernels.biasGelu(xv, bv, byNoPre, null, stream);
        assertArrayEquals(download(by), download(byNoPre), "bias gelu without pre");
        TensorView xIn = upload(x, alloc(rows, cols, ld, t));
        kernels.biasGelu(xIn, bv, xIn, null, stream);
        assertArrayEquals(download(by), download(xIn), "bias gelu in place");
        kernels.gelu(xv, xv, stream); // in place
        assertArrayEquals(download(y), download(xv), "in place equals out of place");
    }

    @ParameterizedTest(name = "{0} {1}x2*{2}")
    @CsvSource({
            "BF16, 128, 4096, 8192, 4096",
            "FP16, 64, 1408, 2816, 1408",
            "FP32, 5, 45, 93, 50",
            "BF16, 77, 7168, 14336, 7168",
            "BF16, 3, 1001, 2002, 1001",
            "FP16, 1025, 24, 48, 24",
    })
    void swigluAndItsBackwardMatchTheReference(DType t, int rows, int f, int ldX, int ldY) {
        double[] x = random((long) rows * 2 * f, t, 4);
        double[] dy = random((long) rows * f, t, 1);
        TensorView xv = upload(x, alloc(rows, 2L * f, ldX, t));
        TensorView dyv = upload(dy, alloc(rows, f, ldY, t));
        TensorView y = alloc(rows, f, ldY, t);
        kernels.swiglu(xv, y, stream);
        assertClose(HostLayerMath.swiglu(x, rows, f), download(y), tolerance(t), "swiglu");
        TensorView dx = alloc(rows, 2L * f, ldX, t);
        kernels.swigluBackward(dyv, xv, dx, stream);
        double[] expected = HostLayerMath.swigluBackward(dy, x, rows, f);
        assertClose(expected, download(dx), tolerance(t), "swiglu backward");
        kernels.swigluBackward(dyv, xv, xv, stream); // in place over x
        assertArrayEquals(download(dx), download(xv), "in place equals out of place");
    }
    /**
     * fc1's bias fused into the activation: the forward and the backward give the bits of the bias add followed by
     * the unfused kernels, and the bias gradient (accumulated onto an old value) is the column sums of that dx. The
     * demo's shapes (8B at tp 4: 8192 x 2 x 3584) and odd ones (scalar paths, padded rows).
     */
    @ParameterizedTest(name = "{0} {1} {2}x{3} ld {4}/{5}")
    @CsvSource({
            "true, BF16, 8192, 3584, 7168, 3584",
            "true, BF16, 4096, 7168, 14336, 7168",
            "true, FP16, 77, 45, 93, 50",
            "true, FP32, 1001, 1408, 2816, 1408",
            "false, BF16, 4096, 7168, 7168, 7168",
            "false, BF16, 33, 1003, 1010, 1010",
            "false, FP32, 257, 512, 520, 520",
    })
    void biasedActivationsGiveTheUnfusedBitsAndTheBiasGradient(boolean swiglu, DType t, int rows, int f, int ldX,
                                                               int ldY) {
        int w = swiglu ? 2 * f : f;
        double[] x = random((long) rows * w, t, 4);
        double[] bias = random(w, t, 1);
        double[] dy = random((long) rows * f, t, 1);
        double[] db0 = random(w, DType.FP32, 1);
        TensorView xv = upload(x, alloc(rows, w, ldX, t));
        TensorView bv = upload(bias, alloc(1, w, t));
        TensorView dyv = upload(dy, alloc(rows, f, ldY, t));
        TensorView dbv = upload(db0, alloc(1, w, DType.FP32));
        TensorView ws = alloc(LayerKernels.biasGradWorkspaceRows(rows), w, DType.FP32);
        TensorView y = alloc(rows, f, ldY, t);
        // Unfused: the bias added into a copy of x, then the plain kernels.
        TensorView z = upload(x, alloc(rows, w, ldX, t));
        new dev.ubuf.devicekernels.DeviceKernels(library).addBias(z, bv, stream);
        TensorView yTwo = alloc(rows, f, ldY, t);
        TensorView dxTwo = alloc(rows, w, ldX, t);
        if (swiglu) {
            kernels.biasSwiglu(xv, bv, y, stream);
            kernels.swiglu(z, yTwo, stream);
            kernels.swigluBackward(dyv, z, dxTwo, stream);
        } else {
            kernels.biasGelu(xv, bv, y, null, stream);
            kernels.gelu(z, yTwo, stream);
            kernels.geluBackward(dyv, z, dxTwo, stream);
        }
        assertArrayEquals(download(yTwo), download(y), "forward: the bits of the bias add and the activation");
        double[] zHost = download(z);
        assertClose(swiglu ? HostLayerMath.swiglu(zHost, rows, f) : HostLayerMath.gelu(zHost), download(y),
                tolerance(t), "forward vs float64");
        // In place over x, as the layer runs it.
        if (swiglu) {
            kernels.biasSwigluBackward(dyv, xv, bv, xv, dbv, true, ws, stream);
        } else {
            kernels.biasGeluBackward(dyv, xv, bv, xv, dbv, true, ws, stream);
        }
        double[] dx = download(xv);
        assertArrayEquals(download(dxTwo), dx, "backward: the bits of the unfused backward at x + bias");
        assertClose(swiglu ? HostLayerMath.swigluBackward(dy, zHost, rows, f) : HostLayerMath.geluBackward(dy, zHost),
                dx, tolerance(t), "backward vs float64");
        double[] expected = HostLayerMath.columnSums(dx, rows, w);
        for (int i = 0; i < w; i++) {
            expected[i] += db0[i];
        }
        assertClose(expected, download(dbv), 0x1p-17, "bias gradient: dx's column sums onto the old value");
    }

    @ParameterizedTest(name = "{0} {1}x{2} ld {3}/{4}")
    @CsvSource({
            "BF16, 256, 4096, 4096, 4096",
            "FP16, 7, 77, 80, 79",
            "FP32, 64, 1000, 1000, 1004",
            "BF16, 33, 1003, 1010, 1003",
    })
    void sgdStepUpdatesEveryWeightAndClearsItsGradient(DType t, int rows, int cols, int ldW, int ldG) {
        double[] w = random((long) rows * cols, t, 2);
        double[] g = random((long) rows * cols, DType.FP32, 4);
        TensorView wv = upload(w, alloc(rows, cols, ldW, t));
        TensorView gv = upload(g, alloc(rows, cols, ldG, DType.FP32));
        float lr = 0.375f;
        double[] expected = new double[w.length];
        for (int i = 0; i < w.length; i++) {
            expected[i] = w[i] - lr * g[i];
        }
        kernels.sgdStep(wv, gv, lr, true, stream);
        assertClose(expected, download(wv), tolerance(t), "w");
        assertArrayEquals(new double[g.length], download(gv), "the gradient cleared");
        // Without zeroGrad the gradient stays: a second step applies it again.
        TensorView g2 = upload(g, alloc(rows, cols, ldG, DType.FP32));
        kernels.sgdStep(wv, g2, lr, stream);
        assertArrayEquals(g, download(g2), "the gradient kept");
    }
}
