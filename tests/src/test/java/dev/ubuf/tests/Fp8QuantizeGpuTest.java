package dev.ubuf.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.cuda.KernelLibrary;
import dev.ubuf.cuda.StreamPriority;
import dev.ubuf.fp8.Fp8Format;
import dev.ubuf.fp8.Fp8Recipe;
import dev.ubuf.fp8.ScalingState;
import dev.ubuf.devicekernels.DeviceKernels;
import dev.ubuf.devicekernels.Fp8Kernels;
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
 * The FP8 kernels against the host codec {@link Fp8Format}, bit for bit: quantization of x * scale (one fp32 multiply,
 * round to nearest even, saturating), the amax of the input, the inverse scale, the transposed quantization, the
 * dequantization of all 256 codes, current scaling's scale, and delayed scaling's end of a step on the device against
 * {@link ScalingState} step by step. Inputs are fresh random values over many binades,
 * with values beyond the format's range and exact ties mixed in; outputs are poisoned first.
 */
class Fp8QuantizeGpuTest {
    static CudaContext ctx;
    static CudaStream stream;
    static KernelLibrary lib;
    static DeviceKernels kernels;
    static Fp8Kernels fp8;

    @BeforeAll
    static void open() {
        Gpu.assumeGpus(1);
        ctx = CudaContext.retainPrimary(0);
        stream = ctx.createStream(StreamPriority.NORMAL);
        lib = KernelLibrary.load(ctx);
        kernels = new DeviceKernels(lib);
        fp8 = new Fp8Kernels(lib);
    }

    @AfterAll
    static void close() {
        if (ctx != null) {
            lib.close();
            stream.close();
            assertEquals(List.of(), ctx.ledger().openResources(), "everything the tests opened is closed");
            ctx.close();
        }
    }

    /** Values over many binades (as stored in t), some far beyond the format's range once scaled. */
    static float[] inputs(SplittableRandom rnd, int n, DType t, Fp8Format f, float scale) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            double x = (rnd.nextDouble() * 2 - 1) * Math.scalb(1.0, rnd.nextInt(-12, 4));
            if (i % 97 == 5) {
                x = f.maxFinite() / scale * (1 + rnd.nextDouble()); // saturates
            } else if (i % 89 == 7) {
                int code = rnd.nextInt(0, 0x7b);
                x = (f.decode(code) + f.decode(code + 1)) / 2 / scale; // a tie, if exact after scaling
            }
            v[i] = t.round((float) x);
        }
        return v;
    }

    static TensorView scalar(DeviceBuffer buffer, long byteOffset, float value) {
        TensorView v = new TensorView(buffer, byteOffset, 1, 1, 1, DType.FP32);
        HostTensors.upload(ctx, stream, new float[] {value}, v);
        return v;
    }

    static float maxAbs(float[] v) {
        float m = 0;
        for (float x : v) {
            m = Math.max(m, Math.abs(x));
        }
        return m;
    }

    // Scalar path (cols not a multiple of 16), and the 16-element vector path, with a padded ld and with rows that
    // do not fill the grid's last step.
    @ParameterizedTest(name = "{0} -> {1}, {2}x{3} ld {4}")
    @CsvSource({"BF16, FP8_E4M3, 77, 200, 232", "FP32, FP8_E4M3, 77, 200, 232", "FP16, FP8_E4M3, 77, 200, 232",
            "BF16, FP8_E5M2, 77, 200, 232", "FP32, FP8_E5M2, 77, 200, 232", "FP16, FP8_E5M2, 77, 200, 232",
            "BF16, FP8_E4M3, 1000, 4096, 4096", "BF16, FP8_E5M2, 33, 1024, 1040", "FP32, FP8_E4M3, 7, 4112, 4112",
            "FP16, FP8_E4M3, 3001, 16, 24"})
    void quantizeMatchesTheHostEncoderBitForBitWithTheExactAmaxAndInverse(DType in, DType out, int rows, int cols,
                                                                          int ldX) {
        Fp8Format f = Fp8Format.of(out);
        float scale = 37.3f;
        float[] x = inputs(new SplittableRandom(), rows * cols, in, f, scale);
        try (DeviceBuffer dx = ctx.allocate((long) rows * ldX * in.bytes());
             DeviceBuffer dy = ctx.allocate((long) rows * cols);
             DeviceBuffer s = ctx.allocate(256)) {
            TensorView xv = new TensorView(dx, 0, rows, cols, ldX, in);
            TensorView yv = TensorView.of(dy, rows, cols, out);
            HostTensors.upload(ctx, stream, x, xv);
            kernels.poison(yv, stream);
            TensorView sc = scalar(s, 0, scale);
            TensorView amax = scalar(s, 64, 0f);
            TensorView inv = scalar(s, 128, Float.NaN);
            fp8.quantize(xv, sc, yv, amax, inv, stream);
            float[] y = HostTensors.download(ctx, stream, yv);
            for (int i = 0; i < x.length; i++) {
                float expected = f.round(x[i] * scale);
                assertEquals(expected, y[i], "element " + i + ": " + x[i] + " * " + scale);
            }
            assertEquals(maxAbs(x), HostTensors.download(ctx, stream, amax)[0], "amax of the input");
            assertEquals(1f / scale, HostTensors.download(ctx, stream, inv)[0], "scale inverse");
        }
    }

    // Scalar tiles (rows not a multiple of 16 or cols not of 8) and the 64 x 64 vector tiles, whole and partial.
    @ParameterizedTest(name = "{0} -> {1}, {2}x{3}")
    @CsvSource({"BF16, FP8_E4M3, 100, 70", "FP32, FP8_E5M2, 64, 128", "FP16, FP8_E4M3, 33, 1",
            "BF16, FP8_E4M3, 2048, 1024", "BF16, FP8_E5M2, 2000, 1000", "FP16, FP8_E4M3, 48, 24",
            "FP32, FP8_E4M3, 160, 8", "BF16, FP8_E4M3, 16, 4104", "BF16, FP8_E5M2, 1008, 7"})
    void theTransposedQuantizeWritesTheTransposeOfTheSameCodes(DType in, DType out, int rows, int cols) {
        Fp8Format f = Fp8Format.of(out);
        float scale = 0.75f;
        float[] x = inputs(new SplittableRandom(), rows * cols, in, f, scale);
        try (DeviceBuffer dx = ctx.allocate((long) rows * cols * in.bytes());
             DeviceBuffer dy = ctx.allocate((long) rows * cols);
             DeviceBuffer dyt = ctx.allocate((long) (cols + 3) * rows);
             DeviceBuffer s = ctx.allocate(256)) {
            TensorView xv = TensorView.of(dx, rows, cols, in);
            TensorView yv = TensorView.of(dy, rows, cols, out);
            TensorView ytv = new TensorView(dyt, 0, cols, rows, rows, out);
            HostTensors.upload(ctx, stream, x, xv);
            kernels.poison(yv, stream);
            kernels.poison(TensorView.of(dyt, cols + 3, rows, out), stream);
            TensorView amax = scalar(s, 64, 0f);
            fp8.quantizeTransposed(xv, scalar(s, 0, scale), yv, ytv, amax, null, stream);
            float[] y = HostTensors.download(ctx, stream, yv);
            float[] yt = HostTensors.download(ctx, stream, ytv);
            for (int r = 0; r < rows; r++) {
                for (int c = 0; c < cols; c++) {
                    float expected = f.round(x[r * cols + c] * scale);
                    assertEquals(expected, y[r * cols + c], "y (" + r + ", " + c + ")");
                    assertEquals(expected, yt[c * rows + r], "yT (" + c + ", " + r + ")");
                }
            }
            float[] tail = HostTensors.download(ctx, stream, new TensorView(dyt, (long) cols * rows, 3, rows, rows, out));
            for (float v : tail) {
                assertTrue(Float.isNaN(v), "nothing written past yT");
            }
            assertEquals(maxAbs(x), HostTensors.download(ctx, stream, amax)[0], "amax of the input");
        }
    }

    /**
     * The code transpose, byte for byte (every code value, NaNs and both zeros included): the 64 x 64 vector tiles
     * (rows and cols multiples of 16, rows 16-byte aligned), whole and partial, and the byte-by-byte tiles (an odd
     * shape, a misaligned ld, a misaligned base, more tiles than blocks); x read through an ld wider than its columns.
     * yT sits {@code yOffset} bytes into a buffer with 64 guard bytes before and after it: nothing is written beside
     * its rows nor outside it, and x is left as it was.
     */
    @ParameterizedTest(name = "{0}, {1}x{2}, ld {3} -> ld {4}, yT at +{5}")
    @CsvSource({"FP8_E4M3, 8192, 4096, 4096, 8192, 64", "FP8_E5M2, 2000, 1008, 1024, 2016, 64",
            "FP8_E4M3, 80, 144, 160, 96, 64", "FP8_E5M2, 37, 53, 61, 40, 64", "FP8_E4M3, 64, 64, 72, 64, 64",
            "FP8_E4M3, 1, 4104, 4104, 1, 64", "FP8_E4M3, 4095, 4096, 4096, 4096, 64", "FP8_E5M2, 256, 512, 512, 256, 65"})
    void theCodeTransposeMovesEveryByte(DType t, int rows, int cols, int ldX, int ldY, int yOffset) {
        SplittableRandom rnd = new SplittableRandom();
        int[] codes = new int[rows * ldX];
        for (int i = 0; i < codes.length; i++) {
            codes[i] = rnd.nextInt(256);
        }
        long ySpan = (long) cols * ldY;
        int guard = 64;
        try (DeviceBuffer dx = ctx.allocate(codes.length);
             DeviceBuffer dy = ctx.allocate(yOffset + ySpan + guard)) {
            TensorView xAll = TensorView.of(dx, rows, ldX, t);
            HostTensors.uploadCodes(ctx, stream, codes, xAll);
            TensorView whole = TensorView.of(dy, 1, yOffset + ySpan + guard, t);
            kernels.fillBits(whole, 0xA5, stream);
            fp8.transpose(new TensorView(dx, 0, rows, cols, ldX, t), new TensorView(dy, yOffset, cols, rows, ldY, t),
                    stream);
            int[] y = HostTensors.downloadCodes(ctx, stream, whole);
            for (int i = 0; i < y.length; i++) {
                long at = i - (long) yOffset;
                boolean inView = at >= 0 && at < ySpan && at % ldY < rows;
                int expected = inView ? codes[(int) (at % ldY) * ldX + (int) (at / ldY)] : 0xA5;
                if (y[i] != expected) {
                    throw new AssertionError(inView
                            ? "yT (" + at / ldY + ", " + at % ldY + "): expected " + expected + ", got " + y[i]
                            : "byte " + i + " of the buffer, outside yT's rows, was written: " + y[i]);
                }
            }
            int[] after = HostTensors.downloadCodes(ctx, stream, xAll);
            for (int i = 0; i < codes.length; i++) {
                if (after[i] != codes[i]) {
                    throw new AssertionError("x changed at byte " + i + ": " + codes[i] + " -> " + after[i]);
                }
            }
        }
    }

    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource({"FP8_E4M3, BF16", "FP8_E4M3, FP32", "FP8_E5M2, FP16", "FP8_E5M2, FP32"})
    void dequantizeTurnsEveryCodeIntoItsValueTimesTheInverseScale(DType in, DType out) {
        Fp8Format f = Fp8Format.of(in);
        float inv = 0.375f;
        float[] codesAsValues = new float[256];
        int[] codes = new int[256];
        for (int c = 0; c < 256; c++) {
            codesAsValues[c] = f.decode(c);
            codes[c] = c;
        }
        try (DeviceBuffer dx = ctx.allocate(256);
             DeviceBuffer dy = ctx.allocate(256L * out.bytes());
             DeviceBuffer s = ctx.allocate(256)) {
            TensorView xv = TensorView.of(dx, 16, 16, in);
            TensorView yv = TensorView.of(dy, 16, 16, out);
            HostTensors.uploadCodes(ctx, stream, codes, xv);
            kernels.poison(yv, stream);
            fp8.dequantize(xv, scalar(s, 0, inv), yv, stream);
            float[] y = HostTensors.download(ctx, stream, yv);
            for (int c = 0; c < 256; c++) {
                if (Float.isNaN(codesAsValues[c])) {
                    assertTrue(Float.isNaN(y[c]), "code " + c + " is NaN");
                } else {
                    assertEquals(out.round(codesAsValues[c] * inv), y[c], "code 0x" + Integer.toHexString(c));
                }
            }
        }
    }

    @Test
    void nanInputsQuantizeToNanAndMakeTheAmaxNan() {
        try (DeviceBuffer dx = ctx.allocate(64 * 4); DeviceBuffer dy = ctx.allocate(64); DeviceBuffer s = ctx.allocate(256)) {
            float[] x = new float[64];
            x[17] = Float.NaN;
            x[3] = 5f;
            TensorView xv = TensorView.of(dx, 1, 64, DType.FP32);
            TensorView yv = TensorView.of(dy, 1, 64, DType.FP8_E4M3);
            HostTensors.upload(ctx, stream, x, xv);
            TensorView amax = scalar(s, 64, 0f);
            fp8.quantize(xv, scalar(s, 0, 1f), yv, amax, null, stream);
            float[] y = HostTensors.download(ctx, stream, yv);
            assertTrue(Float.isNaN(y[17]));
            assertEquals(5f, y[3]);
            assertTrue(Float.isNaN(HostTensors.download(ctx, stream, amax)[0]), "a NaN amax, as delayed scaling expects");
        }
    }

    @Test
    void amaxAndCurrentScalingOnTheDeviceGiveTheRecipesScale() {
        SplittableRandom rnd = new SplittableRandom();
        float[] x = new float[300 * 40];
        for (int i = 0; i < x.length; i++) {
            x[i] = DType.BF16.round((float) rnd.nextGaussian() * 3);
        }
        Fp8Recipe.CurrentScaling recipe = new Fp8Recipe.CurrentScaling(Fp8Recipe.Formats.HYBRID);
        try (DeviceBuffer dx = ctx.allocate(x.length * 2L); DeviceBuffer s = ctx.allocate(256)) {
            TensorView xv = TensorView.of(dx, 300, 40, DType.BF16);
            HostTensors.upload(ctx, stream, x, xv);
            TensorView amax = scalar(s, 0, 0f);
            TensorView scale = scalar(s, 64, Float.NaN);
            TensorView inv = scalar(s, 128, Float.NaN);
            fp8.amax(xv, amax, stream);
            fp8.scaleFromAmax(amax, Fp8Format.E5M2, scale, inv, stream);
            assertEquals(maxAbs(x), HostTensors.download(ctx, stream, amax)[0]);
            float expected = recipe.scale(Fp8Format.E5M2, maxAbs(x));
            assertEquals(expected, HostTensors.download(ctx, stream, scale)[0]);
            assertEquals(1f / expected, HostTensors.download(ctx, stream, inv)[0]);
            for (float a : new float[] {0f, Float.POSITIVE_INFINITY, 1e-42f}) {
                HostTensors.upload(ctx, stream, new float[] {a}, amax);
                fp8.scaleFromAmax(amax, Fp8Format.E4M3, scale, null, stream);
                assertEquals(recipe.scale(Fp8Format.E4M3, a), HostTensors.download(ctx, stream, scale)[0], "amax " + a);
            }
        }
    }

    /**
     * Delayed scaling's update on the device, step after step, against {@link ScalingState#update} on the host: the
     * same scales, inverses and amax windows bit for bit, with both amax rules and a margin, over more steps than the
     * window holds (so columns are reused), with amaxes of 0, infinity, NaN, tiny (the scale overflows) and huge mixed
     * into random ones, and E4M3 and E5M2 slots. The table's amax cells must read 0 after every update. With
     * {@code deviceCount} the column comes from a step count on the device (a graph-capturable context's way), which
     * starts at a value past 2^32 so that the modulo is taken on all 64 bits, and must end advanced by the steps.
     */
    @ParameterizedTest(name = "{0} margin {1} device count {2}")
    @CsvSource({"MAX, 0, false", "MAX, 2, false", "MOST_RECENT, 0, false", "MOST_RECENT, 3, false", "MAX, 2, true",
            "MOST_RECENT, 0, true"})
    void delayedScalingsUpdateOnTheDeviceMatchesTheHostsStepByStep(Fp8Recipe.AmaxCompute rule, int margin,
                                                                   boolean deviceCount) {
        int n = 5;
        int stride = 4;
        int history = 4;
        int steps = 11;
        var recipe = new Fp8Recipe.DelayedScaling(Fp8Recipe.Formats.HYBRID, history, margin, rule);
        Fp8Format[] formats = {Fp8Format.E4M3, Fp8Format.E5M2, Fp8Format.E4M3, Fp8Format.E5M2, Fp8Format.E4M3};
        ScalingState[] host = new ScalingState[n];
        for (int i = 0; i < n; i++) {
            host[i] = new ScalingState(formats[i], history);
        }
        SplittableRandom rnd = new SplittableRandom();
        long firstCount = (1L << 32) + 3 * history; // a multiple of the history: column 0 first, as on the host
        try (DeviceBuffer tb = ctx.allocate(3L * n * stride * Float.BYTES);
             DeviceBuffer sb = ctx.allocate((long) n * (1 + history) * Float.BYTES);
             DeviceBuffer cb = ctx.allocate(Long.BYTES)) {
            TensorView count = new TensorView(cb, 0, 1, 2, 2, DType.FP32); // the u64 as two fp32 words
            HostTensors.upload(ctx, stream, new float[]{Float.intBitsToFloat((int) firstCount),
                    Float.intBitsToFloat((int) (firstCount >>> 32))}, count);
            TensorView table = new TensorView(tb, 0, 1, 3L * n * stride, 3L * n * stride, DType.FP32);
            TensorView fp8Max = new TensorView(sb, 0, 1, n, n, DType.FP32);
            TensorView window = new TensorView(sb, (long) n * Float.BYTES, n, history, history, DType.FP32);
            float[] image = new float[3 * n * stride];
            for (int i = 0; i < n; i++) {
                image[i * stride] = 1f;
                image[(n + i) * stride] = 1f;
                for (int j = 1; j < stride; j++) { // padding poisoned: the kernel must not read or write it
                    image[i * stride + j] = Float.NaN;
                    image[(n + i) * stride + j] = Float.NaN;
                    image[(2 * n + i) * stride + j] = Float.NaN;
                }
            }
            float[] maxima = new float[n];
            for (int i = 0; i < n; i++) {
                maxima[i] = formats[i].maxFinite();
            }
            HostTensors.upload(ctx, stream, maxima, fp8Max);
            HostTensors.upload(ctx, stream, new float[n * history], window);
            for (int step = 0; step < steps; step++) {
                float[] amax = new float[n];
                for (int i = 0; i < n; i++) {
                    int kind = rnd.nextInt(12);
                    amax[i] = switch (kind) {
                        case 0 -> 0f;
                        case 1 -> Float.POSITIVE_INFINITY;
                        case 2 -> step == 7 ? Float.NaN : 1f;
                        case 3 -> 1e-42f; // fp8Max / amax overflows
                        case 4 -> 3e38f;
                        default -> (float) Math.scalb(rnd.nextDouble(0.5, 1), rnd.nextInt(-20, 20));
                    };
                    image[(2 * n + i) * stride] = amax[i];
                    host[i].recordAmax(amax[i]);
                    host[i].update(recipe);
                }
                // The step's amaxes into the table's amax cells (the scales stay as the device left them).
                float[] now = HostTensors.download(ctx, stream, table);
                for (int i = 0; i < n; i++) {
                    now[(2 * n + i) * stride] = amax[i];
                    for (int j = 1; j < stride; j++) {
                        now[(2 * n + i) * stride + j] = Float.NaN;
                    }
                }
                if (step == 0) {
                    now = image.clone();
                }
                HostTensors.upload(ctx, stream, now, table);
                if (deviceCount) {
                    fp8.delayedUpdate(table, n, stride, window, cb.address(), recipe, fp8Max, stream);
                    fp8.countStep(cb.address(), stream);
                } else {
                    fp8.delayedUpdate(table, n, stride, window, step % history, recipe, fp8Max, stream);
                }
                float[] got = HostTensors.download(ctx, stream, table);
                float[] win = HostTensors.download(ctx, stream, window);
                int next = (step + 1) % history;
                for (int i = 0; i < n; i++) {
                    String where = "step " + step + " slot " + i + " (" + formats[i] + ") amax " + amax[i];
                    assertEquals(Float.floatToRawIntBits(host[i].scale()), Float.floatToRawIntBits(got[i * stride]),
                            "scale, " + where);
                    assertEquals(Float.floatToRawIntBits(host[i].scaleInverse()),
                            Float.floatToRawIntBits(got[(n + i) * stride]), "inverse, " + where);
                    assertEquals(0f, got[(2 * n + i) * stride], "amax zeroed, " + where);
                    for (int j = 1; j < stride; j++) {
                        assertTrue(Float.isNaN(got[i * stride + j]) && Float.isNaN(got[(n + i) * stride + j])
                                && Float.isNaN(got[(2 * n + i) * stride + j]), "padding untouched, " + where);
                    }
                    float[] h = host[i].history(); // most recent first, the fresh zero column at 0
                    for (int j = 0; j < history; j++) {
                        assertEquals(h[j], win[i * history + Math.floorMod(next - j, history)],
                                "window column " + j + " back, " + where);
                    }
                }
            }
            if (deviceCount) {
                float[] words = HostTensors.download(ctx, stream, count);
                long end = (Float.floatToRawIntBits(words[0]) & 0xFFFFFFFFL)
                        | ((long) Float.floatToRawIntBits(words[1]) << 32);
                assertEquals(firstCount + steps, end, "the device's step count after " + steps + " steps");
            }
        }
    }
}
