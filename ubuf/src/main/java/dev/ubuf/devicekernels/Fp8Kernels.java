package dev.ubuf.devicekernels;

import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.KernelLibrary;
import dev.ubuf.fp8.Fp8Format;
import dev.ubuf.fp8.Fp8Recipe;
import dev.ubuf.kernels.Fp8KernelNames;
import dev.ubuf.kernels.KernelType;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import java.util.Objects;

/**
 * Typed launches of the FP8 kernels (kernels/README.md, "FP8 kernels"): quantize fp32/fp16/bf16 to E4M3 or E5M2 with
 * a per-tensor scale (optionally writing the transpose, the layout the backward GEMMs need), dequantize, amax, and the
 * current-scaling scale from an amax. Scales and amaxes are 1 x 1 fp32 views in device memory, so they can be produced
 * and consumed by kernels and GEMMs on the stream without the host. Every argument is checked here, before any launch.
 *
 * <p>Results match {@link Fp8Format#encode} of {@code x * scale} (one fp32 multiply) bit for bit. An amax is folded
 * into what its view holds (a maximum, NaN sticking): zero it first for the amax of one tensor, or leave it to collect
 * the maximum of several (a delayed-scaling step's history slot).
 */
public final class Fp8Kernels {
    /** Threads per block: a multiple of 32 (warp reductions of the amax), at most 512. */
    static final int BLOCK = 256;
    static final int TILE = 32;

    /** Launches one kernel: the {@link KernelLibrary} on a GPU, a recorder in CPU tests. */
    @FunctionalInterface
    interface Launcher {
        void launch(String name, int grid, int block, CudaStream stream, Object... args);
    }

    private final Launcher launcher;
    private final int maxBlocks;

    public Fp8Kernels(KernelLibrary library) {
        this((name, grid, block, stream, args) -> library.launch(name, grid, block,
                Objects.requireNonNull(stream, "stream"), args), library.context().device().smCount());
    }

    Fp8Kernels(Launcher launcher, int smCount) {
        this.launcher = Objects.requireNonNull(launcher, "launcher");
        if (smCount < 1) {
            throw new IllegalArgumentException("smCount must be >= 1, got " + smCount);
        }
        this.maxBlocks = smCount * 8; // 8 blocks of 256 threads fill an SM
    }

    /**
     * {@code y = fp8(x * scale)}, rounded to nearest even and saturated to the format's largest finite value.
     *
     * @param x        fp32, fp16 or bf16
     * @param scale    1 x 1 fp32: the quantization scale
     * @param y        x's shape, FP8_E4M3 or FP8_E5M2
     * @param amax     1 x 1 fp32 receiving max(amax, max |x|), or null
     * @param scaleInv 1 x 1 fp32 receiving 1 / scale (what the GEMM takes), or null
     */
    public void quantize(TensorView x, TensorView scale, TensorView y, TensorView amax, TensorView scaleInv,
                         CudaStream stream) {
        KernelType t = highPrecision(x, "x");
        String f = fp8(y, "y");
        y.requireShape(x.rows(), x.cols(), "y");
        checkScalars(scale, amax, scaleInv);
        checkDisjoint(x, y, "x", "y");
        launcher.launch(Fp8KernelNames.quantize(t, f), grid(x.elements()), BLOCK, stream, x.rows(), x.cols(),
                x.address(), x.ld(), scale.address(), y.address(), y.ld(), address(amax), address(scaleInv));
    }

    /**
     * As {@link #quantize}, writing {@code yT = y^T} ([cols, rows]), and y itself only when given: the layout an FP8
     * GEMM needs for the operand the backward pass multiplies the other way round.
     *
     * @param y  x's shape in fp8, or null
     * @param yT [x.cols, x.rows] in fp8 (y's type when y is given)
     */
    public void quantizeTransposed(TensorView x, TensorView scale, TensorView y, TensorView yT, TensorView amax,
                                   TensorView scaleInv, CudaStream stream) {
        KernelType t = highPrecision(x, "x");
        String f = fp8(yT, "yT");
        yT.requireShape(x.cols(), x.rows(), "yT (the transpose)");
        if (y != null) {
            y.requireShape(x.rows(), x.cols(), "y");
            y.requireDType(yT.dtype(), "y");
            checkDisjoint(x, y, "x", "y");
            checkDisjoint(y, yT, "y", "yT");
        }
        checkScalars(scale, amax, scaleInv);
        checkDisjoint(x, yT, "x", "yT");
        launcher.launch(Fp8KernelNames.quantizeTranspose(t, f), tileGrid(x, TILE), BLOCK, stream,
                x.rows(), x.cols(), x.address(), x.ld(), scale.address(), address(y), y == null ? 0L : y.ld(),
                yT.address(), yT.ld(), address(amax), address(scaleInv));
    }

    /**
     * {@code yT = x^T} for FP8 codes, byte for byte: the other layout of a tensor already quantized (e.g. gathered from
     * quantized shards), for a GEMM that reads it the other way round. No scale is involved, so it is exact.
     *
     * @param x  FP8_E4M3 or FP8_E5M2
     * @param yT [x.cols, x.rows], x's type; must not overlap x
     */
    public void transpose(TensorView x, TensorView yT, CudaStream stream) {
        fp8(x, "x");
        Objects.requireNonNull(yT, "yT");
        yT.requireDType(x.dtype(), "yT");
        yT.requireShape(x.cols(), x.rows(), "yT (the transpose)");
        checkDisjoint(x, yT, "x", "yT");
        // The kernel's own choice of tile: 64 x 64 where every row of both is 16-byte aligned and the shape is
        // whole 16-byte words, else 32 x 32.
        boolean vector = x.rows() % 16 == 0 && x.cols() % 16 == 0 && x.address() % 16 == 0 && x.ld() % 16 == 0
                && yT.address() % 16 == 0 && yT.ld() % 16 == 0;
        launcher.launch(Fp8KernelNames.TRANSPOSE, tileGrid(x, vector ? 2 * TILE : TILE), BLOCK, stream, x.rows(),
                x.cols(), x.address(), x.ld(), yT.address(), yT.ld());
    }

    /** {@code y = round(decode(x) * scaleInv)} into fp32, fp16 or bf16 (for tests and debugging). */
    public void dequantize(TensorView x, TensorView scaleInv, TensorView y, CudaStream stream) {
        String f = fp8(x, "x");
        KernelType t = highPrecision(y, "y");
        y.requireShape(x.rows(), x.cols(), "y");
        requireScalar(scaleInv, "scaleInv");
        checkDisjoint(x, y, "x", "y");
        launcher.launch(Fp8KernelNames.dequantize(f, t), grid(x.elements()), BLOCK, stream, x.rows(), x.cols(),
                x.address(), x.ld(), scaleInv.address(), y.address(), y.ld());
    }

    /** {@code amax = max(amax, max |x|)}: current scaling's reduction before it quantizes x. */
    public void amax(TensorView x, TensorView amax, CudaStream stream) {
        KernelType t = highPrecision(x, "x");
        requireScalar(amax, "amax");
        checkDisjoint(x, amax, "x", "amax");
        launcher.launch(Fp8KernelNames.amax(t), grid(x.elements()), BLOCK, stream, x.rows(), x.cols(), x.address(),
                x.ld(), amax.address());
    }

    /**
     * Current scaling on the device: {@code scale = format.maxFinite() / amax} (Float.MAX_VALUE where that overflows,
     * 1 for an amax of 0, infinity or NaN, as {@link dev.ubuf.fp8.Fp8Recipe.CurrentScaling#scale}), and
     * {@code scaleInv = 1 / scale} when given.
     */
    public void scaleFromAmax(TensorView amax, Fp8Format format, TensorView scale, TensorView scaleInv,
                              CudaStream stream) {
        Objects.requireNonNull(format, "format");
        requireScalar(amax, "amax");
        requireScalar(scale, "scale");
        if (scaleInv != null) {
            requireScalar(scaleInv, "scaleInv");
            checkDisjoint(scale, scaleInv, "scale", "scaleInv");
        }
        checkDisjoint(amax, scale, "amax", "scale");
        launcher.launch(Fp8KernelNames.SCALE_FROM_AMAX, 1, 32, stream, amax.address(), format.maxFinite(),
                scale.address(), address(scaleInv));
    }

    /**
     * Delayed scaling's end of a step for a whole scale table, on the device: for every slot what
     * {@link dev.ubuf.fp8.ScalingState#update} does on the host, bit for bit. The step's amax (the table's amax cell,
     * already reduced over the TP group) goes into the window's running column {@code current}; the scale becomes
     * {@link Fp8Recipe.DelayedScaling#scale} of the column or of the window's maximum, as the recipe says, and its
     * inverse is written beside it; then the next column and the amax cell are zeroed for the next step.
     *
     * @param table   fp32, one row: n scale cells, then n inverse cells, then n amax cells, {@code stride} floats apart
     * @param n       slots
     * @param window  fp32, n rows of {@code recipe.historyLength()} columns, contiguous: each slot's amax window
     * @param current the running step's column, 0 until the next update
     * @param fp8Max  fp32, at least n elements: each slot's format's largest finite value
     */
    public void delayedUpdate(TensorView table, int n, int stride, TensorView window, int current,
                              Fp8Recipe.DelayedScaling recipe, TensorView fp8Max, CudaStream stream) {
        Objects.requireNonNull(recipe, "recipe");
        if (current < 0 || current >= recipe.historyLength()) {
            throw new IllegalArgumentException("current column " + current + " outside the window of "
                    + recipe.historyLength());
        }
        update(table, n, stride, window, current, 0L, recipe, fp8Max, stream);
    }

    /**
     * As {@link #delayedUpdate(TensorView, int, int, TensorView, int, Fp8Recipe.DelayedScaling, TensorView,
     * CudaStream)}, the running column read on the device: {@code *steps % historyLength}, where {@code steps} is the
     * address of an unsigned 64-bit count of the steps ended so far (8-byte aligned, outside the table, window and
     * maxima), which {@link #countStep} advances after the update. A step replayed from a CUDA graph cannot carry a
     * column chosen on the host when it was captured.
     */
    public void delayedUpdate(TensorView table, int n, int stride, TensorView window, long steps,
                              Fp8Recipe.DelayedScaling recipe, TensorView fp8Max, CudaStream stream) {
        Objects.requireNonNull(recipe, "recipe");
        checkCounter(steps);
        for (TensorView v : new TensorView[]{table, window, fp8Max}) {
            if (v != null && steps < v.address() + v.spanBytes() && v.address() < steps + Long.BYTES) {
                throw new IllegalArgumentException("the step count at 0x" + Long.toHexString(steps) + " overlaps "
                        + v);
            }
        }
        update(table, n, stride, window, 0, steps, recipe, fp8Max, stream);
    }

    /** {@code *steps += 1} on {@code stream} (one thread): the count {@link #delayedUpdate} reads its column from. */
    public void countStep(long steps, CudaStream stream) {
        checkCounter(steps);
        launcher.launch(Fp8KernelNames.COUNT_STEP, 1, 32, stream, steps);
    }

    private static void checkCounter(long steps) {
        if (steps == 0 || steps % Long.BYTES != 0) {
            throw new IllegalArgumentException("the step count needs an 8-byte aligned device address, got 0x"
                    + Long.toHexString(steps));
        }
    }

    private void update(TensorView table, int n, int stride, TensorView window, int current, long steps,
                        Fp8Recipe.DelayedScaling recipe, TensorView fp8Max, CudaStream stream) {
        Objects.requireNonNull(table, "table");
        Objects.requireNonNull(window, "window");
        Objects.requireNonNull(fp8Max, "fp8Max");
        if (n < 1 || stride < 1) {
            throw new IllegalArgumentException("a scale table needs n >= 1 slots and a stride >= 1, got n=" + n
                    + " stride=" + stride);
        }
        table.requireDType(DType.FP32, "table");
        window.requireDType(DType.FP32, "window");
        fp8Max.requireDType(DType.FP32, "fp8Max");
        if (!table.isContiguous() || !fp8Max.isContiguous()) {
            throw new IllegalArgumentException("table and fp8Max are read as flat arrays: they must be contiguous, got "
                    + table + " and " + fp8Max);
        }
        if (table.elements() < 3L * n * stride) {
            throw new IllegalArgumentException("table holds " + table.elements() + " floats, " + n + " slots need "
                    + 3L * n * stride);
        }
        int history = recipe.historyLength();
        window.requireShape(n, history, "window");
        if (window.ld() != history) {
            throw new IllegalArgumentException("window rows must be contiguous (ld " + history + "), got " + window);
        }
        if (fp8Max.elements() < n) {
            throw new IllegalArgumentException("fp8Max holds " + fp8Max.elements() + " floats, need " + n);
        }
        checkDisjoint(table, window, "table", "window");
        checkDisjoint(table, fp8Max, "table", "fp8Max");
        checkDisjoint(window, fp8Max, "window", "fp8Max");
        int mostRecent = recipe.amaxCompute() == Fp8Recipe.AmaxCompute.MOST_RECENT ? 1 : 0;
        launcher.launch(Fp8KernelNames.DELAYED_UPDATE, n, BLOCK, stream, table.address(), n, stride,
                window.address(), history, current, mostRecent, recipe.margin(), fp8Max.address(), steps);
    }

    /** A block per {@code tile} x {@code tile} tile of x, at most 8 an SM (the kernels loop over the rest). */
    private int tileGrid(TensorView x, int tile) {
        return (int) Math.min(ceilDiv(x.rows(), tile) * ceilDiv(x.cols(), tile), maxBlocks);
    }

    private int grid(long elements) {
        long blocks = ceilDiv(elements, BLOCK * 4L); // a few elements per thread amortise the amax reduction
        return (int) Math.max(1, Math.min(blocks, maxBlocks));
    }

    private static long ceilDiv(long a, long b) {
        return (a + b - 1) / b;
    }

    private static KernelType highPrecision(TensorView v, String what) {
        Objects.requireNonNull(v, what);
        return switch (v.dtype()) {
            case FP32 -> KernelType.F32;
            case FP16 -> KernelType.F16;
            case BF16 -> KernelType.BF16;
            default -> throw new IllegalArgumentException(what + " must be fp32, fp16 or bf16, got "
                    + v.dtype().shortName());
        };
    }

    private static String fp8(TensorView v, String what) {
        Objects.requireNonNull(v, what);
        return switch (v.dtype()) {
            case FP8_E4M3 -> "e4m3";
            case FP8_E5M2 -> "e5m2";
            default -> throw new IllegalArgumentException(what + " must be fp8e4m3 or fp8e5m2, got "
                    + v.dtype().shortName());
        };
    }

    /** The scale, and the optional amax and inverse: fp32 scalars, none overlapping another. */
    private static void checkScalars(TensorView scale, TensorView amax, TensorView scaleInv) {
        requireScalar(scale, "scale");
        if (amax != null) {
            requireScalar(amax, "amax");
            checkDisjoint(scale, amax, "scale", "amax");
        }
        if (scaleInv != null) {
            requireScalar(scaleInv, "scaleInv");
            // Block 0 writes the inverse while other blocks may still read the scale.
            checkDisjoint(scale, scaleInv, "scale", "scaleInv");
            if (amax != null) {
                checkDisjoint(amax, scaleInv, "amax", "scaleInv");
            }
        }
    }

    private static void requireScalar(TensorView v, String what) {
        Objects.requireNonNull(v, what);
        v.requireShape(1, 1, what);
        v.requireDType(DType.FP32, what);
    }

    private static void checkDisjoint(TensorView a, TensorView b, String aName, String bName) {
        long a0 = a.address();
        long b0 = b.address();
        if (a0 < b0 + b.spanBytes() && b0 < a0 + a.spanBytes()) {
            throw new IllegalArgumentException(aName + " and " + bName + " overlap: " + a + " and " + b);
        }
    }

    private static long address(TensorView v) {
        return v == null ? 0L : v.address();
    }
}
