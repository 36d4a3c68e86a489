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
 * <p>Types: A and B share a type (BF16, FP16 or FP32); C and D are {@code cType}, either the same or FP32 (fp32
 * partial sums from bf16/fp16 inputs). alpha and beta are fp32. fp32 inputs multiply in full fp32 unless
 * {@code allowTf32}, which lets cuBLASLt round them to TF32 on tensor cores.
 *
 * <p>FP8 ({@link #isFp8()}): A and B are FP8_E4M3 or FP8_E5M2 (not both E5M2), each dequantized by a per-tensor scale
 * the GEMM is given at run time ({@link Gemm.Fp8Scales}). cuBLASLt runs FP8 on Hopper only in its column-major "TN"
 * form, which is row-major {@code C = A * B^T}: A stored [m, k] (no transA) and B stored [n, k] ({@code transB}), as
 * in {@code y = x * W^T}; other layouts are rejected (quantize the other layout with the transposed quantize kernel).
 * Every matrix's rows must be 16-byte multiples: k, lda and ldb multiples of 16, n and ldc times C's element size
 * multiples of 16 bytes. C is BF16, FP16, FP32, or FP8 (E4M3; E5M2 only when an input is E5M2), the latter scaled
 * into range by the scale_d the GEMM is given. {@code fp8FastAccumulation} lets the tensor cores accumulate without
 * cuBLASLt's periodic promotion to fp32 (faster, less accurate; TE uses it for the forward GEMMs).
 *
 * @param smCountTarget SMs the GEMM should plan for (cuBLASLt SM_COUNT_TARGET), leaving the rest to concurrent
 *                      kernels such as a reduce-scatter; 0 means all SMs of the device
 */
public record GemmSpec(DType aType, DType bType, DType cType, int m, int n, int k, boolean transA, boolean transB,
                       long lda, long ldb, long ldc, int smCountTarget, boolean allowTf32,
                       boolean fp8FastAccumulation) {

    /** cuBLASLt's FP8 kernels read and write every matrix in 16-byte rows. */
    static final int FP8_ROW_BYTES = 16;

    public GemmSpec {
        Objects.requireNonNull(aType, "aType");
        Objects.requireNonNull(bType, "bType");
        Objects.requireNonNull(cType, "cType");
        if (m <= 0 || n <= 0 || k <= 0) {
            throw new IllegalArgumentException("GEMM dimensions must be positive, got m=" + m + ", n=" + n + ", k=" + k);
        }
        if (smCountTarget < 0) {
            throw new IllegalArgumentException("smCountTarget must be >= 0 (0 = all SMs), got " + smCountTarget);
        }
        checkLd("lda", lda, "A", transA ? "[k, m]" : "[m, k]", transA ? k : m, transA ? m : k);
        checkLd("ldb", ldb, "B", transB ? "[n, k]" : "[k, n]", transB ? n : k, transB ? k : n);
        checkLd("ldc", ldc, "C", "[m, n]", m, n);
        if (isFp8(aType) || isFp8(bType)) {
            checkFp8(aType, bType, cType, n, k, transA, transB, lda, ldb, ldc, allowTf32);
        } else {
            checkHighPrecision(aType, bType, cType, allowTf32, fp8FastAccumulation);
        }
        // Extents must be addressable: reject leading dimensions whose byte size overflows a long.
        checkExtent("A", transA ? k : m, transA ? m : k, lda, aType);
        checkExtent("B", transB ? n : k, transB ? k : n, ldb, bType);
        checkExtent("C", m, n, ldc, cType);
    }

    /** A densely packed GEMM (each leading dimension equals its stored column count), all SMs, no TF32. */
    public static GemmSpec of(DType abType, DType cType, int m, int n, int k, boolean transA, boolean transB) {
        return of(abType, abType, cType, m, n, k, transA, transB);
    }

    /** A densely packed GEMM whose operands may differ in type (FP8: E4M3 and E5M2). */
    public static GemmSpec of(DType aType, DType bType, DType cType, int m, int n, int k, boolean transA,
                              boolean transB) {
        return new GemmSpec(aType, bType, cType, m, n, k, transA, transB,
                transA ? m : k, transB ? k : n, n, 0, false, false);
    }

    /** A densely packed FP8 GEMM in the one layout cuBLASLt runs: {@code C[m, n] = A[m, k] * B[n, k]^T}. */
    public static GemmSpec fp8(DType aType, DType bType, DType cType, int m, int n, int k) {
        return of(aType, bType, cType, m, n, k, false, true);
    }

    public GemmSpec withLeadingDimensions(long lda, long ldb, long ldc) {
        return new GemmSpec(aType, bType, cType, m, n, k, transA, transB, lda, ldb, ldc, smCountTarget, allowTf32,
                fp8FastAccumulation);
    }

    public GemmSpec withSmCountTarget(int smCountTarget) {
        return new GemmSpec(aType, bType, cType, m, n, k, transA, transB, lda, ldb, ldc, smCountTarget, allowTf32,
                fp8FastAccumulation);
    }

    public GemmSpec withAllowTf32(boolean allowTf32) {
        return new GemmSpec(aType, bType, cType, m, n, k, transA, transB, lda, ldb, ldc, smCountTarget, allowTf32,
                fp8FastAccumulation);
    }

    public GemmSpec withFp8FastAccumulation(boolean fp8FastAccumulation) {
        return new GemmSpec(aType, bType, cType, m, n, k, transA, transB, lda, ldb, ldc, smCountTarget, allowTf32,
                fp8FastAccumulation);
    }

    /** Whether the inputs are FP8 (then scales for A and B are needed at run time). */
    public boolean isFp8() {
        return isFp8(aType);
    }

    /** Whether the output is FP8 (then it may be scaled by scale_d, and C is not read). */
    public boolean hasFp8Output() {
        return isFp8(cType);
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
        return requiredBytes(aStoredRows(), aStoredCols(), lda, aType);
    }

    /** Bytes B's buffer must hold from its pointer on. */
    public long bBytes() {
        return requiredBytes(bStoredRows(), bStoredCols(), ldb, bType);
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

    static boolean isFp8(DType t) {
        return t == DType.FP8_E4M3 || t == DType.FP8_E5M2;
    }

    private static void checkHighPrecision(DType aType, DType bType, DType cType, boolean allowTf32,
                                           boolean fastAccumulation) {
        if (isFp8(cType)) {
            throw new IllegalArgumentException("an fp8 output (cType " + cType + ") needs fp8 inputs, got " + aType);
        }
        if (aType != bType) {
            throw new IllegalArgumentException("GEMM operands must share a dtype unless both are fp8: A is " + aType
                    + ", B is " + bType);
        }
        if (cType != aType && cType != DType.FP32) {
            throw new IllegalArgumentException("cType " + cType + " with abType " + aType + " is not supported: "
                    + "C/D must be " + aType + " (same as A/B) or FP32");
        }
        if (allowTf32 && aType != DType.FP32) {
            throw new IllegalArgumentException("allowTf32 applies to FP32 inputs only, abType is " + aType);
        }
        if (fastAccumulation) {
            throw new IllegalArgumentException("fp8FastAccumulation applies to fp8 inputs only, abType is " + aType);
        }
    }

    /** cuBLASLt's FP8 requirements on Hopper, in the caller's row-major terms (see the class comment). */
    private static void checkFp8(DType aType, DType bType, DType cType, int n, int k, boolean transA, boolean transB,
                                 long lda, long ldb, long ldc, boolean allowTf32) {
        if (!isFp8(aType) || !isFp8(bType)) {
            throw new IllegalArgumentException("an fp8 GEMM needs both operands in fp8, got A " + aType + " and B "
                    + bType + " (quantize the other one, or dequantize)");
        }
        if (aType == DType.FP8_E5M2 && bType == DType.FP8_E5M2) {
            throw new IllegalArgumentException("cuBLASLt has no E5M2 x E5M2 GEMM: one operand must be E4M3 "
                    + "(gradients in E5M2 multiply E4M3 weights or activations)");
        }
        boolean anyE5m2 = aType == DType.FP8_E5M2 || bType == DType.FP8_E5M2;
        boolean outputOk = switch (cType) {
            case BF16, FP16, FP32, FP8_E4M3 -> true;
            case FP8_E5M2 -> anyE5m2;
        };
        if (!outputOk) {
            throw new IllegalArgumentException("an fp8 GEMM writes bf16, fp16, fp32 or fp8e4m3 (fp8e5m2 only when an "
                    + "input is E5M2), got " + cType.shortName());
        }
        if (transA || !transB) {
            throw new IllegalArgumentException("an fp8 GEMM must be C = A * B^T with A stored [m, k] and B stored "
                    + "[n, k] (transA=false, transB=true; cuBLASLt's FP8 kernels run only column-major TN), got "
                    + "transA=" + transA + ", transB=" + transB + "; quantize the operand in the other layout "
                    + "(Fp8Kernels.quantizeTransposed)");
        }
        if (allowTf32) {
            throw new IllegalArgumentException("allowTf32 applies to FP32 inputs only, the inputs are fp8");
        }
        if (k % FP8_ROW_BYTES != 0) {
            throw new IllegalArgumentException("an fp8 GEMM needs K to be a multiple of 16, got " + k);
        }
        if (lda % FP8_ROW_BYTES != 0 || ldb % FP8_ROW_BYTES != 0) {
            throw new IllegalArgumentException("an fp8 GEMM needs lda and ldb to be multiples of 16, got lda=" + lda
                    + ", ldb=" + ldb);
        }
        int c = cType.bytes();
        if ((long) n * c % FP8_ROW_BYTES != 0) {
            throw new IllegalArgumentException("an fp8 GEMM needs N to be a multiple of " + FP8_ROW_BYTES / c
                    + " for a " + cType.shortName() + " output (16-byte rows), got " + n);
        }
        if (ldc * c % FP8_ROW_BYTES != 0) {
            throw new IllegalArgumentException("an fp8 GEMM needs ldc to be a multiple of " + FP8_ROW_BYTES / c
                    + " for a " + cType.shortName() + " output (16-byte rows), got " + ldc);
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
