package dev.ubuf.gemm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ubuf.tensor.DType;
import java.lang.foreign.MemoryLayout;
import java.util.List;
import org.junit.jupiter.api.Test;

/** What can be checked about the binding without libcublasLt: loading errors, struct layouts, enum mapping. */
class CublasLtBindingTest {

    @Test
    void missingLibraryNamesEverySonameTriedAndTheJCublasLimit() {
        GemmException e = assertThrows(GemmException.class, () -> CublasLt.load(
                List.of("libubuf-no-such-cublasLt.so.13", "/nonexistent/dir/libcublasLt.so.12")));
        String message = e.getMessage();
        assertTrue(message.startsWith("cuBLASLt is not available"), message);
        assertTrue(message.contains("libubuf-no-such-cublasLt.so.13"), message);
        assertTrue(message.contains("/nonexistent/dir/libcublasLt.so.12"), message);
        assertTrue(message.contains("JCublas 12.6.0"), message);
        assertTrue(message.contains("CUDA 13"), message);
        assertEquals(GemmException.NO_STATUS, e.status());
    }

    @Test
    void cuda13IsTriedBeforeCuda12() {
        assertEquals(List.of("libcublasLt.so.13", "libcublasLt.so.12"), CublasLt.DEFAULT_LIBRARIES.subList(0, 2));
    }

    @Test
    void defaultLibraryEitherLoadsOrFailsWithGemmExceptionEveryTime() {
        if (CublasLt.isAvailable()) {
            assertSame(CublasLt.library(), CublasLt.library());
        } else {
            GemmException first = assertThrows(GemmException.class, CublasLt::library);
            GemmException second = assertThrows(GemmException.class, CublasLt::library);
            assertEquals(first.getMessage(), second.getMessage());
            assertTrue(first.getMessage().contains("libcublasLt.so.13"), first.getMessage());
        }
    }

    @Test
    void matmulAlgoIsEightUint64() {
        assertEquals(64, CublasLt.MATMUL_ALGO.byteSize());
        assertEquals(CublasLt.MATMUL_ALGO_BYTES, CublasLt.MATMUL_ALGO.byteSize());
        assertEquals(8, CublasLt.MATMUL_ALGO.byteAlignment());
    }

    @Test
    void heuristicResultMatchesTheCStructLayout() {
        // { cublasLtMatmulAlgo_t algo; size_t workspaceSize; cublasStatus_t state; float wavesCount; int reserved[4]; }
        assertEquals(96, CublasLt.HEURISTIC_RESULT.byteSize());
        assertEquals(CublasLt.HEURISTIC_RESULT_BYTES, CublasLt.HEURISTIC_RESULT.byteSize());
        assertEquals(8, CublasLt.HEURISTIC_RESULT.byteAlignment());
        assertEquals(64, CublasLt.HEURISTIC_WORKSPACE_SIZE_OFFSET);
        assertEquals(72, CublasLt.HEURISTIC_STATE_OFFSET);
        assertEquals(76, CublasLt.HEURISTIC_WAVES_COUNT_OFFSET);
        assertEquals(80, CublasLt.HEURISTIC_RESULT.byteOffset(MemoryLayout.PathElement.groupElement("reserved")));
    }

    @Test
    void dataTypesAreCudaDataTypeValues() {
        assertEquals(0, CublasLt.dataType(DType.FP32));   // CUDA_R_32F
        assertEquals(2, CublasLt.dataType(DType.FP16));   // CUDA_R_16F
        assertEquals(14, CublasLt.dataType(DType.BF16));  // CUDA_R_16BF
        assertEquals(28, CublasLt.dataType(DType.FP8_E4M3)); // CUDA_R_8F_E4M3
        assertEquals(29, CublasLt.dataType(DType.FP8_E5M2)); // CUDA_R_8F_E5M2
    }

    @Test
    void computeTypeIsFp32UnlessTf32IsAllowed() {
        GemmSpec fp32 = GemmSpec.of(DType.FP32, DType.FP32, 8, 8, 8, false, false);
        assertEquals(68, CublasLt.computeType(fp32));                       // CUBLAS_COMPUTE_32F
        assertEquals(77, CublasLt.computeType(fp32.withAllowTf32(true)));   // CUBLAS_COMPUTE_32F_FAST_TF32
        assertEquals(68, CublasLt.computeType(GemmSpec.of(DType.BF16, DType.FP32, 8, 8, 8, false, false)));
    }

    @Test
    void enumValuesMatchTheHeaders() {
        assertEquals(0, CublasLt.CUBLAS_OP_N);
        assertEquals(1, CublasLt.CUBLAS_OP_T);
        assertEquals(3, CublasLt.CUBLASLT_MATMUL_DESC_TRANSA);
        assertEquals(4, CublasLt.CUBLASLT_MATMUL_DESC_TRANSB);
        assertEquals(15, CublasLt.CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET);
        assertEquals(1, CublasLt.CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES);
        assertEquals(List.of(5, 6, 7, 8), List.of(CublasLt.CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                CublasLt.CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, CublasLt.CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                CublasLt.CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES));
        assertEquals(List.of(1, 2, 3, 4), List.of(CublasLt.CUBLASLT_MATRIX_LAYOUT_ORDER,
                CublasLt.CUBLASLT_MATRIX_LAYOUT_ROWS, CublasLt.CUBLASLT_MATRIX_LAYOUT_COLS,
                CublasLt.CUBLASLT_MATRIX_LAYOUT_LD));
    }

    @Test
    void statusExceptionCarriesNameAndText() {
        GemmException e = new GemmException("cublasLtMatmul", 15, "CUBLAS_STATUS_NOT_SUPPORTED",
                "the requested functionality is not supported");
        assertEquals("cublasLtMatmul failed: CUBLAS_STATUS_NOT_SUPPORTED (15): the requested functionality is not "
                + "supported", e.getMessage());
        assertEquals("cublasLtMatmul", e.function());
        assertEquals(15, e.status());
        assertEquals("CUBLAS_STATUS_NOT_SUPPORTED", e.statusName());
    }
}
