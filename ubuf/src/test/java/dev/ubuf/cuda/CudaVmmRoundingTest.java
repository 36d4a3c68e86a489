package dev.ubuf.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import org.junit.jupiter.api.Test;

class CudaVmmRoundingTest {
    private static final long TWO_MIB = 2L << 20;

    @Test
    void roundsUpToTheNextMultiple() {
        assertEquals(TWO_MIB, CudaVmm.roundUpToGranularity(1, TWO_MIB));
        assertEquals(TWO_MIB, CudaVmm.roundUpToGranularity(TWO_MIB, TWO_MIB));
        assertEquals(2 * TWO_MIB, CudaVmm.roundUpToGranularity(TWO_MIB + 1, TWO_MIB));
        assertEquals(9, CudaVmm.roundUpToGranularity(7, 3), "any positive granularity, not only powers of two");
    }

    @Test
    void randomSizesLandOnTheSmallestMultipleAtOrAbove() {
        long seed = System.nanoTime();
        Random rnd = new Random(seed);
        for (int i = 0; i < 10_000; i++) {
            long g = 1L << rnd.nextInt(31);
            long size = 1 + (rnd.nextLong() >>> 20);
            long r = CudaVmm.roundUpToGranularity(size, g);
            String ctx = "size " + size + " granularity " + g + " (seed " + seed + ")";
            assertEquals(0, r % g, ctx);
            assertTrue(r >= size && r - size < g, ctx);
        }
    }

    @Test
    void rejectsNonPositiveAndOverflow() {
        assertThrows(IllegalArgumentException.class, () -> CudaVmm.roundUpToGranularity(0, TWO_MIB));
        assertThrows(IllegalArgumentException.class, () -> CudaVmm.roundUpToGranularity(-1, TWO_MIB));
        assertThrows(IllegalArgumentException.class, () -> CudaVmm.roundUpToGranularity(10, 0));
        var e = assertThrows(IllegalArgumentException.class,
                () -> CudaVmm.roundUpToGranularity(Long.MAX_VALUE - 5, TWO_MIB));
        assertTrue(e.getMessage().contains("overflow"), e.getMessage());
    }
}
