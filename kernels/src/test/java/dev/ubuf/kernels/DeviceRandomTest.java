package dev.ubuf.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class DeviceRandomTest {

    @Test
    void splitmix64MatchesThePublishedReferenceOutputsForSeedZero() {
        assertEquals(0xE220A8397B1DCDAFL, DeviceRandom.splitmix64(0, 1));
        assertEquals(0x6E789E6AA1B965F4L, DeviceRandom.splitmix64(0, 2));
        assertEquals(0x06C45D188009454FL, DeviceRandom.splitmix64(0, 3));
    }

    // Expected values computed independently (Python integers, struct 'f'/'e' rounding) from the recipe in
    // DeviceRandom's documentation.
    @ParameterizedTest
    @CsvSource({
        // seed,               row,          col,       scale, hash,               f32 bits,   f16 bits, bf16 bits
        "0,                    0,            0,         1.0,   0xa706dd2f4d197e6f, 0x3e9c1b74, 0x34e1,   0x3e9c",
        "42,                   3,            7,         0.5,   0x7cb0357504762aef, 0xbc53f2c0, 0xa2a0,   0xbc54",
        "0xdeadbeefcafef00d,   123456789012, 987654321, 3.0,   0x23efac94f2fbdfff, 0xc00a187e, 0xc051,   0xc00a",
        "0xffffffffffffffff,   1,            0,         0.001, 0x7f46a57c92dbee5f, 0xb6bdcdd4, 0x805f,   0xb6be",
    })
    void elementsMatchHandComputedValues(String seed, long row, long col, float scale, String hash, String f32,
                                         String f16, String bf16) {
        long s = Long.parseUnsignedLong(strip(seed), radix(seed));
        assertEquals(Long.parseUnsignedLong(strip(hash), 16), DeviceRandom.hash(s, row, col));
        assertEquals(Integer.parseUnsignedInt(strip(f32), 16), DeviceRandom.bits(s, row, col, scale, KernelType.F32));
        assertEquals(Integer.parseInt(strip(f16), 16), DeviceRandom.bits(s, row, col, scale, KernelType.F16));
        assertEquals(Integer.parseInt(strip(bf16), 16), DeviceRandom.bits(s, row, col, scale, KernelType.BF16));
    }

    @Test
    void valuesLieInTheHalfOpenRangeAndRoundedValuesWithinScale() {
        long seed = System.nanoTime();
        SplittableRandom rnd = new SplittableRandom(seed);
        for (int i = 0; i < 20_000; i++) {
            long row = rnd.nextLong(1L << 40);
            long col = rnd.nextLong(1L << 40);
            float scale = (float) rnd.nextDouble(1e-6, 1e4);
            float v = DeviceRandom.uniform(seed, row, col, scale);
            String where = "seed " + seed + ", row " + row + ", col " + col + ", scale " + scale;
            assertTrue(v >= -scale && v < scale, () -> "fp32 value " + v + " outside [-scale, scale) at " + where);
            for (KernelType t : new KernelType[] {KernelType.F16, KernelType.BF16}) {
                float r = DeviceRandom.value(seed, row, col, scale, t);
                float bound = t.round(scale);
                assertTrue(r >= -bound && r <= bound, () -> t + " value " + r + " outside +-" + bound + " at " + where);
            }
        }
    }

    @Test
    void valuesAreSpreadOverTheRangeWithMeanNearZero() {
        long seed = System.nanoTime();
        int n = 100 * 100;
        double sum = 0;
        float min = Float.MAX_VALUE;
        float max = -Float.MAX_VALUE;
        for (int r = 0; r < 100; r++) {
            for (int c = 0; c < 100; c++) {
                float v = DeviceRandom.uniform(seed, r, c, 1f);
                sum += v;
                min = Math.min(min, v);
                max = Math.max(max, v);
            }
        }
        // Uniform on [-1, 1): standard deviation of the mean 0.0058, so 0.05 is more than 8 sigma.
        assertEquals(0.0, sum / n, 0.05, "mean of " + n + " values, seed " + seed);
        assertTrue(min < -0.99 && max > 0.99, "min " + min + ", max " + max + ", seed " + seed);
    }

    @Test
    void neighbouringElementsAndSeedsDiffer() {
        assertNotEquals(DeviceRandom.hash(7, 0, 1), DeviceRandom.hash(7, 1, 0));
        assertNotEquals(DeviceRandom.hash(7, 5, 5), DeviceRandom.hash(8, 5, 5));
        assertNotEquals(DeviceRandom.hash(7, 5, 5), DeviceRandom.hash(7, 5, 6));
    }

    @Test
    void scaleOnlyScalesTheUnitValue() {
        // unit * 2^k is exact, so power-of-two scales scale exactly.
        float unit = DeviceRandom.uniform(99, 4, 2, 1f);
        assertEquals(unit * 8f, DeviceRandom.uniform(99, 4, 2, 8f));
        assertEquals(-unit, DeviceRandom.uniform(99, 4, 2, -1f));
    }

    @Test
    void negativeIndexesAreRejected() {
        assertThrows(IllegalArgumentException.class, () -> DeviceRandom.hash(1, -1, 0));
        assertThrows(IllegalArgumentException.class, () -> DeviceRandom.uniform(1, 0, -3, 1f));
    }

    private static String strip(String hexOrDecimal) {
        return hexOrDecimal.startsWith("0x") ? hexOrDecimal.substring(2) : hexOrDecimal;
    }

    private static int radix(String s) {
        return s.startsWith("0x") ? 16 : 10;
    }
}
