package dev.ubuf.tests;

import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.fp8.Fp8Format;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;

/** Moves float matrices between the host and tensor views (through pinned memory), in the view's dtype. */
final class HostTensors {
    private HostTensors() {
    }

    /** Fresh uniform values in [-1, 1) already rounded to {@code t}, so host and device see the same numbers. */
    static float[] random(SplittableRandom rnd, long n, DType t, float scale) {
        float[] a = new float[Math.toIntExact(n)];
        for (int i = 0; i < a.length; i++) {
            a[i] = t.round((float) (rnd.nextDouble(-1, 1) * scale));
        }
        return a;
    }

    /*
     * Staging goes through ordinary (pageable) native memory, not page-locked buffers: freeing page-locked memory
     * (cuMemFreeHost of a portable allocation) synchronises every GPU it is mapped on, so a rank freeing one while a
     * peer's stream waits for this rank's next call hangs both (seen in TpLayersGpuTest, 4x H100, 2026-11-27).
     * Copies from pageable memory by unified addressing are synchronous enough for tests: the stream is synchronised
     * before the staging memory is freed. A contiguous view moves in one copy: a copy per row of a one-column view
     * made 8 million 2-byte calls of a 16 MiB buffer (CollectiveCloseGpuTest's 89 s cases, 2026-11-27).
     */
    static void upload(CudaContext ctx, CudaStream s, float[] rowMajor, TensorView dst) {
        long rowBytes = dst.cols() * dst.dtype().bytes();
        ctx.makeCurrent();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(rowBytes * dst.rows(), 16);
            for (long i = 0; i < dst.rows() * dst.cols(); i++) {
                put(seg, i, dst.dtype(), rowMajor[(int) i]);
            }
            toDevice(s, seg, dst);
        }
    }

    /** Raw fp8 codes, byte for byte (an upload of values would saturate E5M2's infinities to its largest finite). */
    static void uploadCodes(CudaContext ctx, CudaStream s, int[] codes, TensorView dst) {
        if (dst.dtype().bytes() != 1 || !dst.isContiguous() || dst.elements() != codes.length) {
            throw new IllegalArgumentException("codes go into a contiguous 1-byte view of " + codes.length
                    + " elements, got " + dst);
        }
        ctx.makeCurrent();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(codes.length, 16);
            for (int i = 0; i < codes.length; i++) {
                seg.set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) codes[i]);
            }
            toDevice(s, seg, dst);
        }
    }

    /** Raw 1-byte codes of a view, row by row (ld skipped), byte for byte. */
    static int[] downloadCodes(CudaContext ctx, CudaStream s, TensorView src) {
        if (src.dtype().bytes() != 1) {
            throw new IllegalArgumentException("codes come from a 1-byte view, got " + src);
        }
        int[] out = new int[Math.toIntExact(src.rows() * src.cols())];
        ctx.makeCurrent();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(out.length, 16);
            toHost(s, src, seg);
            for (int i = 0; i < out.length; i++) {
                out[i] = seg.get(ValueLayout.JAVA_BYTE, i) & 0xff;
            }
        }
        return out;
    }

    static float[] download(CudaContext ctx, CudaStream s, TensorView src) {
        long rowBytes = src.cols() * src.dtype().bytes();
        float[] out = new float[Math.toIntExact(src.rows() * src.cols())];
        ctx.makeCurrent();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(rowBytes * src.rows(), 16);
            toHost(s, src, seg);
            for (int i = 0; i < out.length; i++) {
                out[i] = get(seg, i, src.dtype());
            }
        }
        return out;
    }

    /** The packed rows of {@code host} into {@code dst} (one copy when dst is contiguous), then waits for them. */
    private static void toDevice(CudaStream s, MemorySegment host, TensorView dst) {
        long rowBytes = dst.cols() * dst.dtype().bytes();
        long base = dst.memory().address() + dst.byteOffset();
        if (dst.isContiguous()) {
            s.copy(base, host.address(), rowBytes * dst.rows());
        } else {
            for (long r = 0; r < dst.rows(); r++) {
                s.copy(base + r * dst.ld() * dst.dtype().bytes(), host.address() + r * rowBytes, rowBytes);
            }
        }
        s.synchronize();
    }

    /** {@code src}'s rows packed into {@code host} (one copy when src is contiguous), waited for. */
    private static void toHost(CudaStream s, TensorView src, MemorySegment host) {
        long rowBytes = src.cols() * src.dtype().bytes();
        long base = src.memory().address() + src.byteOffset();
        if (src.isContiguous()) {
            s.copy(host.address(), base, rowBytes * src.rows());
        } else {
            for (long r = 0; r < src.rows(); r++) {
                s.copy(host.address() + r * rowBytes, base + r * src.ld() * src.dtype().bytes(), rowBytes);
            }
        }
        s.synchronize();
    }

    static void put(MemorySegment seg, long i, DType t, float v) {
        switch (t.bytes()) {
            case 4 -> seg.setAtIndex(ValueLayout.JAVA_FLOAT, i, v);
            case 2 -> seg.setAtIndex(ValueLayout.JAVA_SHORT, i, (short) t.encode(v));
            case 1 -> seg.set(ValueLayout.JAVA_BYTE, i, (byte) Fp8Format.of(t).encode(v));
            default -> throw new IllegalArgumentException(t.toString());
        }
    }

    static float get(MemorySegment seg, long i, DType t) {
        return switch (t.bytes()) {
            case 4 -> seg.getAtIndex(ValueLayout.JAVA_FLOAT, i);
            case 2 -> t.decode(seg.getAtIndex(ValueLayout.JAVA_SHORT, i));
            case 1 -> Fp8Format.of(t).decode(seg.get(ValueLayout.JAVA_BYTE, i));
            default -> throw new IllegalArgumentException(t.toString());
        };
    }

    /** Row-major float64 product of a [m,k] (or stored [k,m] when ta) and b [k,n] (or stored [n,k] when tb). */
    static double[] matmul(float[] a, float[] b, int m, int n, int k, boolean ta, boolean tb) {
        double[] c = new double[m * n];
        double[] bt = new double[n * k];
        for (int kk = 0; kk < k; kk++) {
            for (int j = 0; j < n; j++) {
                bt[j * k + kk] = tb ? b[j * k + kk] : b[kk * n + j];
            }
        }
        double[] arow = new double[k];
        for (int i = 0; i < m; i++) {
            for (int kk = 0; kk < k; kk++) {
                arow[kk] = ta ? a[kk * m + i] : a[i * k + kk];
            }
            for (int j = 0; j < n; j++) {
                double acc = 0;
                int o = j * k;
                for (int kk = 0; kk < k; kk++) {
                    acc += arow[kk] * bt[o + kk];
                }
                c[i * n + j] = acc;
            }
        }
        return c;
    }

    /** ||got - want||_F / ||want||_F; NaN anywhere makes it NaN, which fails every bound. */
    static double relativeError(float[] got, double[] want) {
        double num = 0;
        double den = 0;
        for (int i = 0; i < want.length; i++) {
            double d = got[i] - want[i];
            num += d * d;
            den += want[i] * want[i];
        }
        return Math.sqrt(num / den);
    }

    static void assertAllFinite(float[] got, String what) {
        for (int i = 0; i < got.length; i++) {
            if (!Float.isFinite(got[i])) {
                throw new AssertionError(what + ": element " + i + " is " + got[i] + " (unwritten or corrupt)");
            }
        }
    }
}
