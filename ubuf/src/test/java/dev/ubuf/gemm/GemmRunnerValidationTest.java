package dev.ubuf.gemm;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ubuf.tensor.DType;
import org.junit.jupiter.api.Test;

/** The checks GemmRunner makes before any cuBLASLt call, and the alignment classes its plans are keyed by. */
class GemmRunnerValidationTest {
    private static final GemmSpec BF16_TO_FP32 = GemmSpec.of(DType.BF16, DType.FP32, 8, 8, 8, false, false);

    @Test
    void alignmentIsTheLargestPowerOfTwoDividingTheAddressUpTo256() {
        assertEquals(256, GemmRunner.alignmentOf(0x7f0000000000L));
        assertEquals(256, GemmRunner.alignmentOf(0x7f0000000100L));
        assertEquals(128, GemmRunner.alignmentOf(0x7f0000000080L));
        assertEquals(16, GemmRunner.alignmentOf(0x7f0000000010L));
        assertEquals(2, GemmRunner.alignmentOf(0x7f0000000002L));
        assertEquals(2, GemmRunner.alignmentOf(0x7f0000000106L));
        assertEquals(1, GemmRunner.alignmentOf(0x7f0000000001L));
    }

    @Test
    void chunkViewsAtDifferentOffsetsGetDifferentPlanKeys() {
        long base = 0x7f0000000000L;
        var aligned = new MatmulPlan.Key(BF16_TO_FP32, GemmRunner.alignmentOf(base), 256, 256);
        var offset = new MatmulPlan.Key(BF16_TO_FP32, GemmRunner.alignmentOf(base + 2 * 3), 256, 256);
        assertTrue(!aligned.equals(offset));
        assertEquals(aligned, new MatmulPlan.Key(BF16_TO_FP32, 256, 256, 256));
    }

    @Test
    void operandsMustBeNonNullAndElementAligned() {
        long p = 0x7f0000000000L;
        assertDoesNotThrow(() -> GemmRunner.checkOperands(BF16_TO_FP32, p + 2, p + 6, p + 4));
        var a = assertThrows(IllegalArgumentException.class, () -> GemmRunner.checkOperands(BF16_TO_FP32, 0, p, p));
        assertEquals("A is a null device pointer", a.getMessage());
        var b = assertThrows(IllegalArgumentException.class,
                () -> GemmRunner.checkOperands(BF16_TO_FP32, p, p + 1, p));
        assertEquals("B at 0x7f0000000001 is not aligned to its BF16 element size of 2 bytes", b.getMessage());
        var c = assertThrows(IllegalArgumentException.class,
                () -> GemmRunner.checkOperands(BF16_TO_FP32, p, p, p + 2));
        assertEquals("C at 0x7f0000000002 is not aligned to its FP32 element size of 4 bytes", c.getMessage());
        assertThrows(NullPointerException.class, () -> GemmRunner.checkOperands(null, p, p, p));
    }

    @Test
    void workspaceMustBe256ByteAlignedAndPresentWhenSized() {
        assertDoesNotThrow(() -> GemmRunner.checkWorkspace(0x7f0000000000L, GemmRunner.RECOMMENDED_WORKSPACE_BYTES));
        assertDoesNotThrow(() -> GemmRunner.checkWorkspace(0, 0));
        var nullWorkspace = assertThrows(IllegalArgumentException.class, () -> GemmRunner.checkWorkspace(0, 1024));
        assertTrue(nullWorkspace.getMessage().contains("workspace address is 0"), nullWorkspace.getMessage());
        var misaligned = assertThrows(IllegalArgumentException.class,
                () -> GemmRunner.checkWorkspace(0x7f0000000010L, 1024));
        assertEquals("workspace 0x7f0000000010 is not 256-byte aligned", misaligned.getMessage());
        assertThrows(IllegalArgumentException.class, () -> GemmRunner.checkWorkspace(0x7f0000000000L, -1));
    }

    @Test
    void recommendedWorkspaceIs32MiB() {
        assertEquals(32L * 1024 * 1024, GemmRunner.RECOMMENDED_WORKSPACE_BYTES);
    }
}
