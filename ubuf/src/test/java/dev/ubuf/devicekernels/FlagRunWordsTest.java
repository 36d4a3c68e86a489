package dev.ubuf.devicekernels;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** The run kernels' struct, {@code {int* flag[8]; int2 pc[8];}}, as the 16 little-endian words passed by value. */
class FlagRunWordsTest {
    @Test
    void addressesThenPerCallAndValuePairs() {
        long[] w = DeviceKernels.flagRun(new long[]{0x7f00_0000_1000L, 0x7f00_0000_2004L}, new int[]{3, 1},
                new int[]{2, -1});
        long[] expected = new long[16];
        expected[0] = 0x7f00_0000_1000L;
        expected[1] = 0x7f00_0000_2004L;
        expected[8] = 3L | (2L << 32);
        expected[9] = 1L | (0xffff_ffffL << 32);
        assertArrayEquals(expected, w);
    }

    @Test
    void oneToEightFlagsWithAValueEach() {
        assertThrows(IllegalArgumentException.class, () -> DeviceKernels.flagRun(new long[0], new int[0], new int[0]));
        assertThrows(IllegalArgumentException.class,
                () -> DeviceKernels.flagRun(new long[9], new int[9], new int[9]));
        assertThrows(IllegalArgumentException.class,
                () -> DeviceKernels.flagRun(new long[2], new int[2], new int[1]));
    }
}
