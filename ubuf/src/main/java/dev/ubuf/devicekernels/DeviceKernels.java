package dev.ubuf.devicekernels;

import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.KernelLibrary;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;

import java.util.List;

/**
 * Typed launches of the ubuf kernels (kernels/README.md lists them): validation happens here, before any launch.
 */
public final class DeviceKernels {
    private static final int BLOCK = 256;
    /** Threads a block of the dense sums' one-shot grid (as the dense GELU kernels'). */
    private static final int DENSE_BLOCK = 128;
    /**
     * Sums over contiguous views take the dense kernels; {@code -Dubuf.denseSum=false} keeps them on the row/column
     * kernels, for A/B timing in one process.
     */
    static final boolean DENSE_SUM = !"false".equals(System.getProperty("ubuf.denseSum"));
    private final KernelLibrary library;
    private final int maxBlocks;

    public DeviceKernels(KernelLibrary library) {
        this.library = library;
        this.maxBlocks = library.context().device().smCount() * 8;
    }

    public KernelLibrary library() {
        return library;
    }

    private int grid(long work) {
        long blocks = (work + BLOCK * 8L - 1) / (BLOCK * 8L);
        return (int) Math.max(1, Math.min(blocks, maxBlocks));
    }

    private int grid(long work, int maxCtas) {
        return Math.max(1, Math.min(grid(work), maxCtas));
    }

    static String suffix(DType t) {
        return switch (t) {
            case FP32 -> "f32";
            case FP16 -> "f16";
            case BF16 -> "bf16";
            default -> throw new IllegalArgumentException(t.shortName() + " is not supported by the ubuf kernels yet");
        };
    }

    /**
     * dst = (accumulate ? dst : 0) + sum(sources), accumulated in fp32 and rounded once. Sources (1..8) may be
     * peers' memory; they share one leading dimension and either dst's dtype or fp32.
     */
    public void sum(List<TensorView> sources, TensorView dst, boolean accumulate, CudaStream stream) {
        sum(sources, dst, accumulate, null, stream);
    }

    /**
     * {@link #sum(List, TensorView, boolean, CudaStream)}, then, with {@code bias} (a 1 x cols row of dst's dtype, or
     * null), {@link #addBias} on dst, in one pass: each element is rounded to dst's type, the bias added, and rounded
     * again, bit for bit what the two calls leave.
     */
    public void sum(List<TensorView> sources, TensorView dst, boolean accumulate, TensorView bias,
                    CudaStream stream) {
        if (bias != null) {
            requireBiasRow(bias, dst);
        }
        if (sources.isEmpty() || sources.size() > 8) {
            throw new IllegalArgumentException("sum takes 1..8 sources, got " + sources.size());
        }
        TensorView first = sources.getFirst();
        long[] ptrs = new long[8];
        for (int i = 0; i < sources.size(); i++) {
            TensorView s = sources.get(i);
            s.requireShape(dst.rows(), dst.cols(), "sum source " + i);
            s.requireDType(first.dtype(), "sum source " + i);
            if (s.ld() != first.ld()) {
                throw new IllegalArgumentException("sum sources must share a leading dimension: " + s.ld() + " vs " + first.ld());
            }
            ptrs[i] = s.address();
        }
        String types;
        if (first.dtype() == dst.dtype()) {
            types = suffix(dst.dtype());
        } else if (first.dtype() == DType.FP32) {
            types = "f32_to_" + suffix(dst.dtype());
        } else {
            throw new IllegalArgumentException("sum sources must be " + dst.dtype().shortName() + " or fp32, got "
                    + first.dtype().shortName());
        }
        if (DENSE_SUM && dst.isDense() && first.isDense()) { // the sources share first's ld
            // A thread per 16-byte word of the narrower type, one-shot grid.
            int perWord = 16 / Math.min(first.dtype().bytes(), dst.dtype().bytes());
            long words = (dst.elements() + perWord - 1) / perWord;
            long blocks = Math.max(1, (words + DENSE_BLOCK - 1) / DENSE_BLOCK);
            library.launch("ubuf_sum_dense_" + types, (int) Math.min(blocks, Integer.MAX_VALUE), DENSE_BLOCK, stream,
                    ptrs, sources.size(), dst.elements(), dst.cols(), dst.address(), accumulate ? 1 : 0,
                    bias == null ? 0L : bias.address());
            return;
        }
        library.launch("ubuf_sum_" + types, grid(dst.elements()), BLOCK, stream, ptrs, sources.size(), dst.rows(),
                dst.cols(), first.ld(), dst.address(), dst.ld(), accumulate ? 1 : 0,
                bias == null ? 0L : bias.address());
    }

    /** out[r][c] += bias[c]; bias is a 1 x cols row of out's dtype. */
    public void addBias(TensorView out, TensorView bias, CudaStream stream) {
        requireBiasRow(bias, out);
        library.launch("ubuf_add_bias_" + suffix(out.dtype()), grid(out.elements()), BLOCK, stream,
                out.address(), out.rows(), out.cols(), out.ld(), bias.address());
    }

    /** Fills every element of a contiguous view with a bit pattern. */
    public void fillBits(TensorView t, int bits, CudaStream stream) {
        requireContiguous(t);
        String name = switch (t.dtype().bytes()) {
            case 1 -> "ubuf_fill_u8";
            case 2 -> "ubuf_fill_u16";
            default -> "ubuf_fill_u32";
        };
        library.launch(name, grid(t.elements()), BLOCK, stream, t.address(), t.elements(), bits);
    }

    /** Poisons a contiguous view with quiet NaNs so an unwritten element can never pass a check. */
    public void poison(TensorView t, CudaStream stream) {
        fillBits(t, nanBits(t.dtype()), stream);
    }

    public static int nanBits(DType t) {
        return switch (t) {
            case FP32 -> 0x7fc00000;
            case FP16 -> 0x7e00;
            case BF16 -> 0x7fc0;
            default -> 0x7f;
        };
    }

    /** Uniform values in [-scale, scale) from a counter-based hash of (seed, row, col); see DeviceRandom. */
    public void fillRandom(TensorView t, long seed, float scale, CudaStream stream) {
        library.launch("ubuf_fill_random_" + suffix(t.dtype()), grid(t.elements()), BLOCK, stream,
                t.address(), t.rows(), t.cols(), t.ld(), seed, scale);
    }

    /** SM-driven copy of {@code bytes} (the use_ce=false path), with at most {@code ctas} thread blocks. */
    public void copyBytes(long dst, long src, long bytes, int ctas, CudaStream stream) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("copy size must be positive, got " + bytes);
        }
        library.launch("ubuf_copy_bytes", grid(bytes / 16 + 1, ctas), BLOCK, stream, dst, src, bytes);
    }

    /** Graph-safe signalling: epoch[0] += 1 at the start of a call. */
    public void advanceEpoch(long epochAddress, CudaStream stream) {
        library.launch("ubuf_epoch_advance", 1, 1, stream, epochAddress);
    }

    /** Graph-safe signal: *flag = (epoch - 1) * perCall + k after this stream's earlier work. */
    public void signal(long flagAddress, long epochAddress, int perCall, int k, CudaStream stream) {
        library.launch("ubuf_signal", 1, 1, stream, flagAddress, epochAddress, perCall, k);
    }

    /** Graph-safe wait until *flag reaches (epoch - 1) * perCall + count (wrap-safe); traps after the timeout. */
    public void waitFlag(long flagAddress, long epochAddress, int perCall, int count, java.time.Duration timeout,
                         CudaStream stream) {
        library.launch("ubuf_wait", 1, 1, stream, flagAddress, epochAddress, perCall, count, timeout.toNanos());
    }

    /** The most signals or waits one run kernel takes. */
    public static final int FLAG_RUN = 8;

    /**
     * Graph-safe signals, one kernel for up to {@link #FLAG_RUN}: flag {@code flags[i]} = (epoch - 1) * perCall[i] +
     * k[i], each after this stream's earlier work.
     */
    public void signalRun(long[] flags, int[] perCall, int[] k, long epochAddress, CudaStream stream) {
        library.launch("ubuf_signal_run", 1, 32, stream, flagRun(flags, perCall, k), flags.length, epochAddress);
    }

    /** Graph-safe waits, one kernel for up to {@link #FLAG_RUN}: as {@link #waitFlag} for each flag. */
    public void waitRun(long[] flags, int[] perCall, int[] count, long epochAddress, java.time.Duration timeout,
                        CudaStream stream) {
        library.launch("ubuf_wait_run", 1, 32, stream, flagRun(flags, perCall, count), flags.length, epochAddress,
                timeout.toNanos());
    }

    /** The kernels' UbufFlagRun by value: 8 flag addresses, then 8 (perCall, value) int pairs, one per long. */
    static long[] flagRun(long[] flags, int[] perCall, int[] values) {
        if (flags.length < 1 || flags.length > FLAG_RUN || perCall.length != flags.length
                || values.length != flags.length) {
            throw new IllegalArgumentException("a flag run has 1.." + FLAG_RUN + " flags, each with a perCall and a "
                    + "value; got " + flags.length + ", " + perCall.length + ", " + values.length);
        }
        long[] words = new long[2 * FLAG_RUN];
        for (int i = 0; i < flags.length; i++) {
            words[i] = flags[i];
            words[FLAG_RUN + i] = (perCall[i] & 0xffffffffL) | ((long) values[i] << 32);
        }
        return words;
    }

    /** A bias the kernels add to {@code out}: one row of out's columns, in out's dtype. */
    private static void requireBiasRow(TensorView bias, TensorView out) {
        bias.requireShape(1, out.cols(), "bias");
        bias.requireDType(out.dtype(), "bias");
    }

    private static void requireContiguous(TensorView t) {
        if (!t.isContiguous()) {
            throw new IllegalArgumentException("view must be contiguous (ld == cols), got " + t);
        }
    }
}
