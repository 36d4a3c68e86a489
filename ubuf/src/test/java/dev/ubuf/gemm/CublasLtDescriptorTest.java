package dev.ubuf.gemm;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.ubuf.tensor.DType;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The binding against the real libcublasLt, without a GPU: descriptors and preferences are host objects, and cuBLASLt
 * rejects an attribute whose byte size differs from its own, so setting every attribute checks the value widths.
 * Skipped where libcublasLt.so.13/.12 cannot be loaded (CI); run with LD_LIBRARY_PATH pointing at a cuBLAS.
 */
class CublasLtDescriptorTest {
    private CublasLt lt;

    @BeforeEach
    void library() {
        assumeTrue(CublasLt.isAvailable(), "libcublasLt.so.13/.12 not loadable here: descriptor checks skipped");
        lt = CublasLt.library();
    }

    @Test
    void versionAndStatusTextsComeFromTheLibrary() {
        assertTrue(lt.version() >= 120000, "cuBLASLt 12 or newer, got " + lt.version());
        assertEquals("CUBLAS_STATUS_SUCCESS", lt.statusName(CublasLt.CUBLAS_STATUS_SUCCESS));
        assertEquals("CUBLAS_STATUS_NOT_SUPPORTED", lt.statusName(CublasLt.CUBLAS_STATUS_NOT_SUPPORTED));
        assertEquals("CUBLAS_STATUS_INVALID_VALUE", lt.statusName(CublasLt.CUBLAS_STATUS_INVALID_VALUE));
        assertFalse(lt.statusString(CublasLt.CUBLAS_STATUS_NOT_SUPPORTED).isBlank());
        GemmException e = assertThrows(GemmException.class, () -> lt.check(15, "cublasLtSomething"));
        assertTrue(e.getMessage().startsWith("cublasLtSomething failed: CUBLAS_STATUS_NOT_SUPPORTED (15): "),
                e.getMessage());
    }

    @ParameterizedTest(name = "{0}->{1} transA={2} transB={3} sm={4} tf32={5}")
    @CsvSource({
            "BF16,BF16,false,false,0,false", "BF16,FP32,true,false,66,false", "FP16,FP16,false,true,0,false",
            "FP16,FP32,true,true,8,false", "FP32,FP32,false,false,0,false", "FP32,FP32,true,true,132,true"})
    void descriptorsOfEverySupportedSpecAreAcceptedAndDestroyedOnce(DType ab, DType c, boolean transA, boolean transB,
                                                                     int sm, boolean tf32) {
        GemmSpec spec = GemmSpec.of(ab, c, 48, 80, 64, transA, transB).withSmCountTarget(sm).withAllowTf32(tf32);
        MatmulDescriptors d = MatmulDescriptors.create(lt, spec);
        assertTrue(d.matmulDesc() != 0 && d.aLayout() != 0 && d.bLayout() != 0 && d.cLayout() != 0);
        d.close();
        assertEquals(0, d.matmulDesc());
        assertDoesNotThrow(d::close, "a second close frees nothing");
    }

    @Test
    void attributeWidthsAreCheckedByTheLibrary() {
        long layout = lt.matrixLayoutCreate(CublasLt.CUDA_R_16BF, 4, 4, 4);
        try {
            lt.matrixLayoutSetInt64(layout, CublasLt.CUBLASLT_MATRIX_LAYOUT_LD, 8);
            lt.matrixLayoutSetInt32(layout, CublasLt.CUBLASLT_MATRIX_LAYOUT_ORDER, CublasLt.CUBLASLT_ORDER_COL);
            GemmException e = assertThrows(GemmException.class,
                    () -> lt.matrixLayoutSetInt32(layout, CublasLt.CUBLASLT_MATRIX_LAYOUT_ROWS, 4));
            assertEquals(CublasLt.CUBLAS_STATUS_INVALID_VALUE, e.status());
        } finally {
            lt.matrixLayoutDestroy(layout);
        }
        long preference = lt.preferenceCreate();
        try {
            lt.preferenceSetUInt64(preference, CublasLt.CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                    GemmRunner.RECOMMENDED_WORKSPACE_BYTES);
            lt.preferenceSetUInt32(preference, CublasLt.CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, 16);
            lt.preferenceSetUInt32(preference, CublasLt.CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, 2);
            GemmException e = assertThrows(GemmException.class, () -> lt.preferenceSetUInt32(preference,
                    CublasLt.CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, 1024));
            assertEquals(CublasLt.CUBLAS_STATUS_INVALID_VALUE, e.status());
        } finally {
            lt.preferenceDestroy(preference);
        }
        long desc = lt.matmulDescCreate(CublasLt.CUBLAS_COMPUTE_32F, CublasLt.CUDA_R_32F);
        try {
            lt.matmulDescSetInt32(desc, CublasLt.CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, 100);
            lt.matmulDescSetInt32(desc, CublasLt.CUBLASLT_MATMUL_DESC_TRANSA, CublasLt.CUBLAS_OP_T);
        } finally {
            lt.matmulDescDestroy(desc);
        }
    }
}
