package dev.ubuf.gemm;

import dev.ubuf.tensor.DType;
import java.util.Objects;

/**
 * One row-major GEMM shape: {@code C[m, n] = alpha * op(A) * op(B) + beta * C}, accumulated in fp32.
 *
 * <p>A is stored [m, k] row-major, or [k, m] when {@code transA}; B is stored [k, n], or [n, k] when {@code transB};
 * C is stored [m, n]. Leading dimensions are row strides in elements, at least the stored matrix's column count, so
 * a sub-view of a wider matrix (a chunk of rows, a block of columns) is described by a pointer offset and its parent's
 * leading dimension.
 *
 * <p>Types: A and B share {@code abType} (BF16, FP16 or FP32); C and D are {@code cType}, either the same as
 * {@code abType} or FP32 (fp32 partial sums from bf16/fp16 inputs). alpha and beta are fp32. fp32 inputs multiply in
 * full fp32 unless {@code allowTf32}, which lets cuBLASLt round them to TF32 on tensor cores.
 *
 * @param smCountTarget SMs the GEMM should plan for (cuBLASLt SM_COUNT_TARGET), leaving the rest to concurrent
 *                      kernels such as a reduce-scatter; 0 means all SMs of the device
 */
public record GemmSpec(DType abType, DType cType, int m, int n, int k, boolean transA, boolean transB,
                       long lda, long ldb, long ldc, int smCountTarget, boolean allowTf32) {

    public GemmSpec {
        Objects.requireNonNull(abType, "abType");
        Objects.requireNonNull(cType, "cType");
        if (abType.isReserved()) {
            throw new IllegalArgumentException("abType " + abType + " is reserved: ubuf has no GEMM for it yet");
        }
        if (cType.isReserved()) {
            throw new IllegalArgumentException("cType " + cType + " is reserved: ubuf has no GEMM for it yet");
        }
        if (cType != abType && cType != DType.FP32) {
            throw new IllegalArgumentException("cType " + cType + " with abType " + abType + " is not supported: "
                    + "C/D must be " + abType + " (same as A/B) or FP32");
        }
        if (allowTf32 && abType != DType.FP32) {
            throw new IllegalArgumentException("allowTf32 applies to FP32 inputs only, abType is " + abType);
        }
        if (m <= 0 || n <= 0 || k <= 0) {
            throw new IllegalArgumentException("GEMM dimensions must be positive, got m=" + m + ", n=" + n + ", k=" + k);
        }
        if (smCountTarget < 0) {
            throw new IllegalArgumentException("smCountTarget must be >= 0 (0 = all SMs), got " + smCountTarget);
        }
        checkLd("lda", lda, "A", transA ? "[k, m]" : "[m, k]", transA ? k : m, transA ? m : k);
        checkLd("ldb", ldb, "B", transB ? "[n, k]" : "[k, n]", transB ? n : k, transB ? k : n);
        checkLd("ldc", ldc, "C", "[m, n]", m, n);
        // Extents must be addressable: reject leading dimensions whose byte size overflows a long.
        checkExtent("A", transA ? k : m, transA ? m : k, lda, abType);
        checkExtent("B", transB ? n : k, transB ? k : n, ldb, abType);
        checkExtent("C", m, n, ldc, cType);
    }

    /** A densely packed GEMM (each leading dimension equals its stored column count), all SMs, no TF32. */
    public static GemmSpec of(DType abType, DType cType, int m, int n, int k, boolean transA, boolean transB) {
        return new GemmSpec(abType, cType, m, n, k, transA, transB,
                transA ? m : k, transB ? k : n, n, 0, false);
    }

    public GemmSpec withLeadingDimensions(long lda, long ldb, long ldc) {
        return new GemmSpec(abType, cType, m, n, k, transA, transB, lda, ldb, ldc, smCountTarget, allowTf32);
    }

    public GemmSpec withSmCountTarget(int smCountTarget) {
        return new GemmSpec(abType, cType, m, n, k, transA, transB, lda, ldb, ldc, smCountTarget, allowTf32);
    }

    public GemmSpec withAllowTf32(boolean allowTf32) {
        return new GemmSpec(abType, cType, m, n, k, transA, transB, lda, ldb, ldc, smCountTarget, allowTf32);
    }

    /** Rows of A as stored (k when transA, else m). */
    public int aStoredRows() {
        return transA ? k : m;
    }

    /** Columns of A as stored (m when transA, else k). */
    public int aStoredCols() {
        return transA ? m : k;
    }

    /** Rows of B as stored (n when transB, else k). */
    public int bStoredRows() {
        return transB ? n : k;
    }

    /** Columns of B as stored (k when transB, else n). */
    public int bStoredCols() {
        return transB ? k : n;
    }

    /** Bytes from A's first element to one past its last: what A's buffer must hold from its pointer on. */
    public long aBytes() {
        return requiredBytes(aStoredRows(), aStoredCols(), lda, abType);
    }

    /** Bytes B's buffer must hold from its pointer on. */
    public long bBytes() {
        return requiredBytes(bStoredRows(), bStoredCols(), ldb, abType);
    }

    /** Bytes C's (= D's) buffer must hold from its pointer on. */
    public long cBytes() {
        return requiredBytes(m, n, ldc, cType);
    }

    /** Floating-point operations of one run (2 m n k). */
    public double flops() {
        return 2.0 * m * n * k;
    }

    /**
     * Bytes a row-major [rows, cols] matrix with row stride {@code ld} spans: {@code ((rows - 1) * ld + cols) * size}.
     * The last row need not be padded to ld, so a sub-view's buffer may end right after its last element.
     */
    public static long requiredBytes(long rows, long cols, long ld, DType type) {
        Objects.requireNonNull(type, "type");
        if (rows <= 0 || cols <= 0) {
            throw new IllegalArgumentException("rows and cols must be positive, got " + rows + " x " + cols);
        }
        if (ld < cols) {
            throw new IllegalArgumentException("ld=" + ld + " is smaller than cols=" + cols);
        }
        try {
            return Math.multiplyExact(Math.addExact(Math.multiplyExact(rows - 1, ld), cols), (long) type.bytes());
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException("a [" + rows + ", " + cols + "] " + type + " matrix with ld=" + ld
                    + " spans more than " + Long.MAX_VALUE + " bytes");
        }
    }

    private static void checkLd(String name, long ld, String matrix, String shape, long rows, long cols) {
        if (ld < cols) {
            throw new IllegalArgumentException(name + "=" + ld + " is smaller than the " + cols + " columns of "
                    + matrix + ", stored " + shape + " = [" + rows + ", " + cols + "] row-major");
        }
    }

    private static void checkExtent(String matrix, long rows, long cols, long ld, DType type) {
        try {
            requiredBytes(rows, cols, ld, type);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(matrix + ": " + e.getMessage(), e);
        }
    }
}
