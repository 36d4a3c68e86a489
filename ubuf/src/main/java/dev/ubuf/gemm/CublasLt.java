package dev.ubuf.gemm;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.ubuf.ffi.NativeLibrary;
import dev.ubuf.ffi.NativeLibraryException;
import dev.ubuf.tensor.DType;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;
import java.util.List;

/**
 * The java.lang.foreign binding of libcublasLt: the library is opened on first use ({@link #library()}), never when
 * an unrelated class loads, and stays loaded for the life of the process. cuBLASLt is bound directly because JCublas
 * 12.6.0 needs libcublas.so.12 and cannot load on CUDA 13.
 *
 * <p>Enum values and struct sizes come from cuBLAS 13.1.1.3's cublasLt.h and cublas_api.h (CUBLAS_VER 13.1.1 build 3)
 * and CUDA 13.0's library_types.h. Every value used here is the same in cuBLAS 12.x: cublas_api.h of cuBLAS 12.3.4
 * has the same statuses, operations and compute types, and cublasLt.h has had SM_COUNT_TARGET = 15 and the heuristic
 * result {algo (8 x uint64), size_t, status, float, int[4]} = 96 bytes since 11.x. The raw calls take handles
 * and device addresses as {@code long} and are package-private: {@link GemmRunner} is the public way to multiply.
 */
public final class CublasLt {

    /** Tried in order; absolute paths cover a toolkit whose lib64 is not in the loader's path. */
    static final List<String> DEFAULT_LIBRARIES = List.of(
            "libcublasLt.so.13", "libcublasLt.so.12",
            "/usr/local/cuda/lib64/libcublasLt.so.13", "/usr/local/cuda/lib64/libcublasLt.so.12");

    // cublasStatus_t (cublas_api.h)
    static final int CUBLAS_STATUS_SUCCESS = 0;
    static final int CUBLAS_STATUS_NOT_INITIALIZED = 1;
    static final int CUBLAS_STATUS_INVALID_VALUE = 7;
    static final int CUBLAS_STATUS_NOT_SUPPORTED = 15;

    // cudaDataType_t (library_types.h)
    static final int CUDA_R_32F = 0;
    static final int CUDA_R_16F = 2;
    static final int CUDA_R_16BF = 14;
    static final int CUDA_R_8F_E4M3 = 28;
    static final int CUDA_R_8F_E5M2 = 29;

    // cublasComputeType_t (cublas_api.h)
    static final int CUBLAS_COMPUTE_32F = 68;
    static final int CUBLAS_COMPUTE_32F_FAST_TF32 = 77;

    // cublasOperation_t (cublas_api.h)
    static final int CUBLAS_OP_N = 0;
    static final int CUBLAS_OP_T = 1;

    // cublasLtMatmulDescAttributes_t; all int32_t-valued
    static final int CUBLASLT_MATMUL_DESC_COMPUTE_TYPE = 0;
    static final int CUBLASLT_MATMUL_DESC_SCALE_TYPE = 1;
    static final int CUBLASLT_MATMUL_DESC_POINTER_MODE = 2;
    static final int CUBLASLT_MATMUL_DESC_TRANSA = 3;
    static final int CUBLASLT_MATMUL_DESC_TRANSB = 4;
    static final int CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET = 15;
    // The epilogue (uint32_t cublasLtEpilogue_t), the bias vector's device pointer and its type (int32_t cudaDataType)
    static final int CUBLASLT_MATMUL_DESC_EPILOGUE = 7;
    static final int CUBLASLT_MATMUL_DESC_BIAS_POINTER = 8;
    static final int CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE = 26;
    // cublasLtEpilogue_t: BIAS adds a vector with one element per row of cuBLASLt's column-major D, which is one per
    // column of the caller's row-major C
    static final int CUBLASLT_EPILOGUE_BIAS = 4;
    // FP8 (cuBLAS 12.0 on): device pointers to fp32 scalars (const void* / void*), and an int8_t flag
    static final int CUBLASLT_MATMUL_DESC_A_SCALE_POINTER = 17;
    static final int CUBLASLT_MATMUL_DESC_B_SCALE_POINTER = 18;
    static final int CUBLASLT_MATMUL_DESC_D_SCALE_POINTER = 20;
    static final int CUBLASLT_MATMUL_DESC_AMAX_D_POINTER = 21;
    static final int CUBLASLT_MATMUL_DESC_FAST_ACCUM = 25;

    // cublasLtMatrixLayoutAttribute_t: TYPE uint32_t, ORDER int32_t, ROWS/COLS uint64_t, LD int64_t
    static final int CUBLASLT_MATRIX_LAYOUT_TYPE = 0;
    static final int CUBLASLT_MATRIX_LAYOUT_ORDER = 1;
    static final int CUBLASLT_MATRIX_LAYOUT_ROWS = 2;
    static final int CUBLASLT_MATRIX_LAYOUT_COLS = 3;
    static final int CUBLASLT_MATRIX_LAYOUT_LD = 4;

    // cublasLtOrder_t
    static final int CUBLASLT_ORDER_COL = 0;
    static final int CUBLASLT_ORDER_ROW = 1;

    // cublasLtMatmulPreferenceAttributes_t: MAX_WORKSPACE_BYTES uint64_t, MIN_ALIGNMENT_* uint32_t
    static final int CUBLASLT_MATMUL_PREF_SEARCH_MODE = 0;
    static final int CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1;
    static final int CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES = 5;
    static final int CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES = 6;
    static final int CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES = 7;
    static final int CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES = 8;

    /** cublasLtMatmulAlgo_t: {@code struct { uint64_t data[8]; }}. */
    static final MemoryLayout MATMUL_ALGO = MemoryLayout.sequenceLayout(8, JAVA_LONG);
    static final long MATMUL_ALGO_BYTES = 64;

    /** cublasLtMatmulHeuristicResult_t: algo, size_t workspaceSize, cublasStatus_t state, float wavesCount, int[4]. */
    static final StructLayout HEURISTIC_RESULT = MemoryLayout.structLayout(
            MATMUL_ALGO.withName("algo"),
            JAVA_LONG.withName("workspaceSize"),
            JAVA_INT.withName("state"),
            JAVA_FLOAT.withName("wavesCount"),
            MemoryLayout.sequenceLayout(4, JAVA_INT).withName("reserved"));
    static final long HEURISTIC_RESULT_BYTES = 96;
    static final long HEURISTIC_WORKSPACE_SIZE_OFFSET = offsetOf("workspaceSize");
    static final long HEURISTIC_STATE_OFFSET = offsetOf("state");
    static final long HEURISTIC_WAVES_COUNT_OFFSET = offsetOf("wavesCount");

    private final String libraryName;
    private final MethodHandle create;
    private final MethodHandle destroy;
    private final MethodHandle getVersion;
    private final MethodHandle getStatusName;
    private final MethodHandle getStatusString;
    private final MethodHandle matmulDescCreate;
    private final MethodHandle matmulDescDestroy;
    private final MethodHandle matmulDescSetAttribute;
    private final MethodHandle matrixLayoutCreate;
    private final MethodHandle matrixLayoutDestroy;
    private final MethodHandle matrixLayoutSetAttribute;
    private final MethodHandle preferenceCreate;
    private final MethodHandle preferenceDestroy;
    private final MethodHandle preferenceSetAttribute;
    private final MethodHandle algoGetHeuristic;
    private final MethodHandle algoCheck;
    private final MethodHandle matmul;

    private CublasLt(NativeLibrary b) {
        this.libraryName = b.name();
        create = b.bind("cublasLtCreate", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        destroy = b.bind("cublasLtDestroy", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        getVersion = b.bind("cublasLtGetVersion", FunctionDescriptor.of(JAVA_LONG));
        getStatusName = b.bind("cublasLtGetStatusName", FunctionDescriptor.of(ADDRESS, JAVA_INT));
        getStatusString = b.bind("cublasLtGetStatusString", FunctionDescriptor.of(ADDRESS, JAVA_INT));
        // (cublasLtMatmulDesc_t*, cublasComputeType_t, cudaDataType_t scaleType)
        matmulDescCreate = b.bind("cublasLtMatmulDescCreate", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT));
        matmulDescDestroy = b.bind("cublasLtMatmulDescDestroy", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        matmulDescSetAttribute = b.bind("cublasLtMatmulDescSetAttribute",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, JAVA_LONG));
        // (cublasLtMatrixLayout_t*, cudaDataType, uint64_t rows, uint64_t cols, int64_t ld)
        matrixLayoutCreate = b.bind("cublasLtMatrixLayoutCreate",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG));
        matrixLayoutDestroy = b.bind("cublasLtMatrixLayoutDestroy", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        matrixLayoutSetAttribute = b.bind("cublasLtMatrixLayoutSetAttribute",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, JAVA_LONG));
        preferenceCreate = b.bind("cublasLtMatmulPreferenceCreate", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        preferenceDestroy = b.bind("cublasLtMatmulPreferenceDestroy", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        preferenceSetAttribute = b.bind("cublasLtMatmulPreferenceSetAttribute",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, JAVA_LONG));
        // (handle, desc, Adesc, Bdesc, Cdesc, Ddesc, pref, int requested, result[], int* returned)
        algoGetHeuristic = b.bind("cublasLtMatmulAlgoGetHeuristic", FunctionDescriptor.of(JAVA_INT,
                ADDRESS, ADDRESS, ADDRESS, ADDRESS, ADDRESS, ADDRESS, ADDRESS, JAVA_INT, ADDRESS, ADDRESS));
        // (handle, desc, Adesc, Bdesc, Cdesc, Ddesc, const algo*, result*)
        algoCheck = b.bind("cublasLtMatmulAlgoCheck", FunctionDescriptor.of(JAVA_INT,
                ADDRESS, ADDRESS, ADDRESS, ADDRESS, ADDRESS, ADDRESS, ADDRESS, ADDRESS));
        // (handle, desc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo*, workspace, size_t, stream)
        matmul = b.bind("cublasLtMatmul", FunctionDescriptor.of(JAVA_INT,
                ADDRESS, ADDRESS, ADDRESS, ADDRESS, ADDRESS, ADDRESS, ADDRESS, ADDRESS,
                ADDRESS, ADDRESS, ADDRESS, ADDRESS, ADDRESS, ADDRESS, JAVA_LONG, ADDRESS));
    }

    /** Opened once, on the first call of {@link #library()}; a failure is remembered and reported on every call. */
    private static final class Default {
        static final CublasLt LIBRARY;
        static final GemmException FAILURE;

        static {
            CublasLt library = null;
            GemmException failure = null;
            try {
                library = load(DEFAULT_LIBRARIES);
            } catch (GemmException e) {
                failure = e;
            }
            LIBRARY = library;
            FAILURE = failure;
        }
    }

    /**
     * The process-wide binding, opening libcublasLt.so.13 (else .so.12) on the first call.
     *
     * @throws GemmException naming the libraries tried when none can be opened
     */
    public static CublasLt library() {
        CublasLt library = Default.LIBRARY;
        if (library == null) {
            throw new GemmException(Default.FAILURE.getMessage(), Default.FAILURE);
        }
        return library;
    }

    /** Whether {@link #library()} succeeds (opens the library if not done yet). */
    public static boolean isAvailable() {
        return Default.LIBRARY != null;
    }

    /**
     * Opens the first of {@code candidates} that loads (sonames through the dynamic loader, paths as they are) for the
     * life of the process, as cuBLASLt's own state expects.
     */
    static CublasLt load(List<String> candidates) {
        try {
            return new CublasLt(NativeLibrary.open(candidates));
        } catch (NativeLibraryException.NotFound e) {
            throw new GemmException("cuBLASLt is not available: " + e.getMessage() + ". Install "
                    + "cuBLAS (libcublasLt.so.13 for CUDA 13, libcublasLt.so.12 for CUDA 12) or put its directory on "
                    + "LD_LIBRARY_PATH. JCublas 12.6.0 is no substitute: it needs libcublas.so.12 and cannot be used "
                    + "on CUDA 13.", e);
        } catch (NativeLibraryException.MissingSymbol e) {
            throw new GemmException(e.getMessage() + ": cuBLASLt 12.x or 13.x is required", e);
        } catch (NativeLibraryException.AccessDenied e) {
            throw new GemmException(e.getMessage(), e);
        }
    }

    /** The soname or path that was opened. */
    public String libraryName() {
        return libraryName;
    }

    /** cublasLtGetVersion(): major * 10000 + minor * 100 + patch, e.g. 130101 for 13.1.1. */
    public long version() {
        try {
            return (long) getVersion.invokeExact();
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    /** cublasLtGetStatusName, e.g. "CUBLAS_STATUS_NOT_SUPPORTED". */
    public String statusName(int status) {
        try {
            return string((MemorySegment) getStatusName.invokeExact(status));
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    /** cublasLtGetStatusString: cuBLASLt's description of the status. */
    public String statusString(int status) {
        try {
            return string((MemorySegment) getStatusString.invokeExact(status));
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    /** Throws a {@link GemmException} with cuBLASLt's name and text for a status other than success. */
    void check(int status, String function) {
        if (status != CUBLAS_STATUS_SUCCESS) {
            throw new GemmException(function, status, statusName(status), statusString(status));
        }
    }

    // ---- handle ----

    long create() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            int status = (int) create.invokeExact(out);
            if (status == CUBLAS_STATUS_NOT_INITIALIZED) {
                throw new GemmException("cublasLtCreate", status, statusName(status), statusString(status)
                        + " (is a CUDA driver and device present, with the device's context current?)");
            }
            check(status, "cublasLtCreate");
            return out.get(ADDRESS, 0).address();
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    void destroy(long handle) {
        try {
            check((int) destroy.invokeExact(MemorySegment.ofAddress(handle)), "cublasLtDestroy");
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    // ---- matmul descriptor ----

    long matmulDescCreate(int computeType, int scaleType) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            check((int) matmulDescCreate.invokeExact(out, computeType, scaleType), "cublasLtMatmulDescCreate");
            return out.get(ADDRESS, 0).address();
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    void matmulDescDestroy(long desc) {
        try {
            check((int) matmulDescDestroy.invokeExact(MemorySegment.ofAddress(desc)), "cublasLtMatmulDescDestroy");
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    /** Sets an int32_t-valued matmul descriptor attribute. */
    void matmulDescSetInt32(long desc, int attribute, int value) {
        try (Arena arena = Arena.ofConfined()) {
            matmulDescSet(desc, attribute, arena.allocateFrom(JAVA_INT, value));
        }
    }

    /** Sets an int8_t-valued matmul descriptor attribute (FAST_ACCUM). */
    void matmulDescSetInt8(long desc, int attribute, byte value) {
        try (Arena arena = Arena.ofConfined()) {
            matmulDescSet(desc, attribute, arena.allocateFrom(JAVA_BYTE, value));
        }
    }

    /** Sets a pointer-valued matmul descriptor attribute (the FP8 scale and amax pointers); 0 is NULL. */
    void matmulDescSetPointer(long desc, int attribute, long address) {
        try (Arena arena = Arena.ofConfined()) {
            matmulDescSet(desc, attribute, arena.allocateFrom(JAVA_LONG, address));
        }
    }

    private void matmulDescSet(long desc, int attribute, MemorySegment value) {
        try {
            check((int) matmulDescSetAttribute.invokeExact(MemorySegment.ofAddress(desc), attribute, value,
                    value.byteSize()), "cublasLtMatmulDescSetAttribute(" + attribute + ")");
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    // ---- matrix layout ----

    long matrixLayoutCreate(int dataType, long rows, long cols, long ld) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            check((int) matrixLayoutCreate.invokeExact(out, dataType, rows, cols, ld), "cublasLtMatrixLayoutCreate");
            return out.get(ADDRESS, 0).address();
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    void matrixLayoutDestroy(long layout) {
        try {
            check((int) matrixLayoutDestroy.invokeExact(MemorySegment.ofAddress(layout)), "cublasLtMatrixLayoutDestroy");
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    /** Sets a 32-bit matrix layout attribute (TYPE, ORDER). */
    void matrixLayoutSetInt32(long layout, int attribute, int value) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocateFrom(JAVA_INT, value);
            check((int) matrixLayoutSetAttribute.invokeExact(MemorySegment.ofAddress(layout), attribute, buf, buf.byteSize()),
                    "cublasLtMatrixLayoutSetAttribute(" + attribute + ")");
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    /** Sets a 64-bit matrix layout attribute (ROWS, COLS, LD). */
    void matrixLayoutSetInt64(long layout, int attribute, long value) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocateFrom(JAVA_LONG, value);
            check((int) matrixLayoutSetAttribute.invokeExact(MemorySegment.ofAddress(layout), attribute, buf, buf.byteSize()),
                    "cublasLtMatrixLayoutSetAttribute(" + attribute + ")");
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    // ---- heuristic preference ----

    long preferenceCreate() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            check((int) preferenceCreate.invokeExact(out), "cublasLtMatmulPreferenceCreate");
            return out.get(ADDRESS, 0).address();
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    void preferenceDestroy(long preference) {
        try {
            check((int) preferenceDestroy.invokeExact(MemorySegment.ofAddress(preference)),
                    "cublasLtMatmulPreferenceDestroy");
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    /** Sets a uint32_t-valued preference attribute (MIN_ALIGNMENT_*). */
    void preferenceSetUInt32(long preference, int attribute, int value) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocateFrom(JAVA_INT, value);
            check((int) preferenceSetAttribute.invokeExact(MemorySegment.ofAddress(preference), attribute, buf, buf.byteSize()),
                    "cublasLtMatmulPreferenceSetAttribute(" + attribute + ")");
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    /** Sets a uint64_t-valued preference attribute (MAX_WORKSPACE_BYTES). */
    void preferenceSetUInt64(long preference, int attribute, long value) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocateFrom(JAVA_LONG, value);
            check((int) preferenceSetAttribute.invokeExact(MemorySegment.ofAddress(preference), attribute, buf, buf.byteSize()),
                    "cublasLtMatmulPreferenceSetAttribute(" + attribute + ")");
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    // ---- algorithm choice and the product ----

    /**
     * cublasLtMatmulAlgoGetHeuristic into {@code results} (an array of {@link #HEURISTIC_RESULT}); returns how many
     * were written. A status of NOT_SUPPORTED (no algorithm at all) is returned as 0 so the caller can say why.
     */
    int algoGetHeuristic(long handle, long desc, long aDesc, long bDesc, long cDesc, long dDesc, long preference,
                         MemorySegment results, int requested) {
        if (results.byteSize() < requested * HEURISTIC_RESULT_BYTES) {
            throw new IllegalArgumentException("heuristic result array holds fewer than " + requested + " results");
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment returned = arena.allocate(JAVA_INT);
            int status = (int) algoGetHeuristic.invokeExact(MemorySegment.ofAddress(handle), MemorySegment.ofAddress(desc),
                    MemorySegment.ofAddress(aDesc), MemorySegment.ofAddress(bDesc), MemorySegment.ofAddress(cDesc),
                    MemorySegment.ofAddress(dDesc), MemorySegment.ofAddress(preference), requested, results, returned);
            if (status == CUBLAS_STATUS_NOT_SUPPORTED) {
                return 0;
            }
            check(status, "cublasLtMatmulAlgoGetHeuristic");
            return returned.get(JAVA_INT, 0);
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    /**
     * cublasLtMatmulAlgoCheck: the workspace {@code algo} needs for this GEMM, or -1 when cuBLASLt refuses it here
     * (any status but success, or a result whose state is not success).
     */
    long algoCheck(long handle, long desc, long aDesc, long bDesc, long cDesc, long dDesc, MemorySegment algo) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment result = arena.allocate(HEURISTIC_RESULT);
            MemorySegment nativeAlgo = arena.allocate(MATMUL_ALGO).copyFrom(algo.asSlice(0, MATMUL_ALGO_BYTES));
            int status = (int) algoCheck.invokeExact(MemorySegment.ofAddress(handle), MemorySegment.ofAddress(desc),
                    MemorySegment.ofAddress(aDesc), MemorySegment.ofAddress(bDesc), MemorySegment.ofAddress(cDesc),
                    MemorySegment.ofAddress(dDesc), nativeAlgo, result);
            if (status != CUBLAS_STATUS_SUCCESS || result.get(JAVA_INT, HEURISTIC_STATE_OFFSET) != CUBLAS_STATUS_SUCCESS) {
                return -1;
            }
            return result.get(JAVA_LONG, HEURISTIC_WORKSPACE_SIZE_OFFSET);
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    /** cublasLtMatmul with host-memory fp32 alpha and beta (read before the call returns). */
    void matmul(long handle, long desc, MemorySegment alpha, long a, long aDesc, long b, long bDesc,
                MemorySegment beta, long c, long cDesc, long d, long dDesc, MemorySegment algo,
                long workspace, long workspaceBytes, long stream) {
        try {
            check((int) matmul.invokeExact(MemorySegment.ofAddress(handle), MemorySegment.ofAddress(desc), alpha,
                    MemorySegment.ofAddress(a), MemorySegment.ofAddress(aDesc),
                    MemorySegment.ofAddress(b), MemorySegment.ofAddress(bDesc), beta,
                    MemorySegment.ofAddress(c), MemorySegment.ofAddress(cDesc),
                    MemorySegment.ofAddress(d), MemorySegment.ofAddress(dDesc), algo,
                    MemorySegment.ofAddress(workspace), workspaceBytes, MemorySegment.ofAddress(stream)),
                    "cublasLtMatmul");
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    // ---- type mapping ----

    /** The cudaDataType_t of a supported element type. */
    static int dataType(DType type) {
        return switch (type) {
            case FP32 -> CUDA_R_32F;
            case FP16 -> CUDA_R_16F;
            case BF16 -> CUDA_R_16BF;
            case FP8_E4M3 -> CUDA_R_8F_E4M3;
            case FP8_E5M2 -> CUDA_R_8F_E5M2;
        };
    }

    /** fp32 accumulation always (FP8 requires CUBLAS_COMPUTE_32F); fp32 inputs may opt in to TF32 tensor cores. */
    static int computeType(GemmSpec spec) {
        return spec.allowTf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    }

    // ---- helpers ----

    private static long offsetOf(String field) {
        return HEURISTIC_RESULT.byteOffset(MemoryLayout.PathElement.groupElement(field));
    }

    private static String string(MemorySegment cString) {
        if (cString.equals(MemorySegment.NULL)) {
            return null;
        }
        return cString.reinterpret(Integer.MAX_VALUE).getString(0);
    }

}
