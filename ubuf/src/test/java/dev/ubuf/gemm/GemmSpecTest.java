package dev.ubuf.gemm;

import static dev.ubuf.tensor.DType.BF16;
import static dev.ubuf.tensor.DType.FP16;
import static dev.ubuf.tensor.DType.FP32;
import static dev.ubuf.tensor.DType.FP8_E4M3;
import static dev.ubuf.tensor.DType.FP8_E5M2;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ubuf.tensor.DType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class GemmSpecTest {

    private static IllegalArgumentException rejected(org.junit.jupiter.api.function.Executable e) {
        return assertThrows(IllegalArgumentException.class, e);
    }

    @ParameterizedTest(name = "transA={0} transB={1}")
    @CsvSource({"false,false,30,50", "true,false,20,50", "false,true,30,30", "true,true,20,30"})
    void packedSpecHasLeadingDimensionsEqualToStoredColumns(boolean transA, boolean transB, long lda, long ldb) {
        GemmSpec s = GemmSpec.of(BF16, BF16, 20, 50, 30, transA, transB);
        assertEquals(lda, s.lda());
        assertEquals(ldb, s.ldb());
        assertEquals(50, s.ldc());
        assertEquals(lda, s.aStoredCols());
        assertEquals(ldb, s.bStoredCols());
        assertEquals(transA ? 30 : 20, s.aStoredRows());
        assertEquals(transB ? 50 : 30, s.bStoredRows());
        assertEquals(0, s.smCountTarget());
        assertEquals(false, s.allowTf32());
    }

    @ParameterizedTest(name = "m={0} n={1} k={2}")
    @CsvSource({"0,8,8", "8,0,8", "8,8,0", "-1,8,8", "8,-4,8", "8,8,-16"})
    void nonPositiveDimensionsAreRejected(int m, int n, int k) {
        var e = rejected(() -> GemmSpec.of(BF16, BF16, m, n, k, false, false));
        assertTrue(e.getMessage().contains("m=" + m + ", n=" + n + ", k=" + k), e.getMessage());
    }

    @Test
    void leadingDimensionSmallerThanStoredColumnsIsRejectedNamingTheMatrix() {
        GemmSpec base = GemmSpec.of(FP16, FP16, 16, 24, 40, false, false);
        var a = rejected(() -> base.withLeadingDimensions(39, 24, 24));
        assertTrue(a.getMessage().startsWith("lda=39 is smaller than the 40 columns of A"), a.getMessage());
        var b = rejected(() -> base.withLeadingDimensions(40, 23, 24));
        assertTrue(b.getMessage().startsWith("ldb=23 is smaller than the 24 columns of B"), b.getMessage());
        var c = rejected(() -> base.withLeadingDimensions(40, 24, 23));
        assertTrue(c.getMessage().startsWith("ldc=23 is smaller than the 24 columns of C"), c.getMessage());
    }

    @Test
    void transposedOperandsAreCheckedAgainstTheirStoredShape() {
        // transA: A stored [k, m] = [40, 16], so lda >= 16 suffices although k = 40.
        assertDoesNotThrow(() -> new GemmSpec(BF16, BF16, BF16, 16, 24, 40, true, true, 16, 40, 24, 0, false, false));
        var a = rejected(() -> new GemmSpec(BF16, BF16, BF16, 16, 24, 40, true, false, 15, 24, 24, 0, false, false));
        assertTrue(a.getMessage().contains("stored [k, m] = [40, 16]"), a.getMessage());
        // transB: B stored [n, k] = [24, 40], so ldb must be >= 40.
        var b = rejected(() -> new GemmSpec(BF16, BF16, BF16, 16, 24, 40, false, true, 40, 24, 24, 0, false, false));
        assertTrue(b.getMessage().contains("stored [n, k] = [24, 40]"), b.getMessage());
    }

    @Test
    void subViewLeadingDimensionsAreAccepted() {
        GemmSpec s = GemmSpec.of(BF16, FP32, 16, 24, 40, false, false).withLeadingDimensions(4096, 1024, 24 * 8);
        assertEquals(4096, s.lda());
        assertEquals(((16 - 1) * 4096L + 40) * 2, s.aBytes());
        assertEquals(((40 - 1) * 1024L + 24) * 2, s.bBytes());
        assertEquals(((16 - 1) * 192L + 24) * 4, s.cBytes());
    }

    @ParameterizedTest
    @CsvSource({"BF16,FP8_E4M3", "FP32,FP8_E5M2"})
    void anFp8OutputNeedsFp8Inputs(DType ab, DType c) {
        var e = rejected(() -> GemmSpec.of(ab, c, 16, 16, 16, false, true));
        assertTrue(e.getMessage().contains("needs fp8 inputs"), e.getMessage());
    }

    @ParameterizedTest
    @CsvSource({"BF16,BF16", "BF16,FP32", "FP16,FP16", "FP16,FP32", "FP32,FP32"})
    void supportedTypeCombinationsAreAccepted(DType ab, DType c) {
        GemmSpec s = GemmSpec.of(ab, c, 8, 8, 8, false, false);
        assertEquals(ab, s.aType());
        assertEquals(c, s.cType());
    }

    @ParameterizedTest
    @CsvSource({"BF16,FP16", "FP16,BF16", "FP32,BF16", "FP32,FP16"})
    void otherTypeCombinationsAreRejected(DType ab, DType c) {
        var e = rejected(() -> GemmSpec.of(ab, c, 8, 8, 8, false, false));
        assertEquals("cType " + c + " with abType " + ab + " is not supported: C/D must be " + ab
                + " (same as A/B) or FP32", e.getMessage());
    }

    @Test
    void tf32IsAnOptionForFp32InputsOnly() {
        assertTrue(GemmSpec.of(FP32, FP32, 8, 8, 8, false, false).withAllowTf32(true).allowTf32());
        var e = rejected(() -> GemmSpec.of(BF16, FP32, 8, 8, 8, false, false).withAllowTf32(true));
        assertTrue(e.getMessage().contains("allowTf32 applies to FP32 inputs only"), e.getMessage());
    }

    @Test
    void smCountTargetMustNotBeNegative() {
        assertEquals(66, GemmSpec.of(BF16, BF16, 8, 8, 8, false, false).withSmCountTarget(66).smCountTarget());
        var e = rejected(() -> GemmSpec.of(BF16, BF16, 8, 8, 8, false, false).withSmCountTarget(-1));
        assertTrue(e.getMessage().contains("smCountTarget must be >= 0"), e.getMessage());
    }

    @Test
    void nullTypesAreRejected() {
        assertThrows(NullPointerException.class, () -> GemmSpec.of(null, FP32, 8, 8, 8, false, false));
        assertThrows(NullPointerException.class, () -> GemmSpec.of(FP32, null, 8, 8, 8, false, false));
    }

    @Test
    void leadingDimensionsWhoseExtentOverflowsAreRejected() {
        var e = rejected(() -> GemmSpec.of(FP32, FP32, 8, 8, 8, false, false)
                .withLeadingDimensions(Long.MAX_VALUE / 4, 8, 8));
        assertTrue(e.getMessage().startsWith("A: "), e.getMessage());
        assertTrue(e.getMessage().contains("spans more than"), e.getMessage());
    }

    @Test
    void requiredBytesCoversRowsUpToTheLastElementOnly() {
        assertEquals(6L * 2, GemmSpec.requiredBytes(1, 6, 100, BF16));
        assertEquals((2L * 10 + 3) * 4, GemmSpec.requiredBytes(3, 3, 10, FP32));
        assertEquals(64L * 64 * 2, GemmSpec.requiredBytes(64, 64, 64, FP16));
        assertEquals(5L, GemmSpec.requiredBytes(1, 5, 5, FP8_E4M3));
        rejected(() -> GemmSpec.requiredBytes(0, 4, 4, FP32));
        rejected(() -> GemmSpec.requiredBytes(4, 0, 4, FP32));
        var e = rejected(() -> GemmSpec.requiredBytes(4, 5, 4, FP32));
        assertEquals("ld=4 is smaller than cols=5", e.getMessage());
        rejected(() -> GemmSpec.requiredBytes(Long.MAX_VALUE, 2, 2, FP32));
    }

    @Test
    void flopsCountsOneMultiplyAndOneAddPerTerm() {
        assertEquals(2.0 * 3 * 4 * 5, GemmSpec.of(FP32, FP32, 3, 4, 5, false, false).flops());
    }
}
