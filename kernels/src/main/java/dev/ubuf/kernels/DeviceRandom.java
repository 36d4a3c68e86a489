package dev.ubuf.kernels;

import java.util.Objects;

/**
 * The values {@code ubuf_fill_random_<t>} writes, computed on the host bit for bit, so a test can check a few
 * elements of a device-made matrix without copying it back whole.
 *
 * <p>Element (row, col) of the matrix made from {@code seed} and {@code scale}:
 * <ol>
 *   <li>{@code rowKey = splitmix64(seed, row + 1)} and {@code h = splitmix64(rowKey, col + 1)}, where
 *       {@code splitmix64(s, i) = mix(s + i·0x9E3779B97F4A7C15)} is output number i of the splitmix64 generator
 *       seeded with s, and {@code mix(z)}: {@code z = (z ^ z>>>30)·0xBF58476D1CE4E5B9;
 *       z = (z ^ z>>>27)·0x94D049BB133111EB; z ^ z>>>31} (unsigned 64-bit arithmetic, wrapping);</li>
 *   <li>{@code m = (h >>> 40) - 2^23}, the top 24 bits centred; {@code unit = m · 2^-23} is exact, in [-1, 1);</li>
 *   <li>{@code v = unit · scale} as one fp32 multiply (round to nearest even): in [-|scale|, |scale|);</li>
 *   <li>stored as the element type, rounded to nearest even. After that rounding an F16 or BF16 value can
 *       equal ±scale exactly, and F16 overflows to infinity for scale above 65504.</li>
 * </ol>
 * The value depends on (seed, row, col) only: not on the leading dimension, the launch geometry or the type
 * (beyond the final rounding).
 */
public final class DeviceRandom {
    static final long GAMMA = 0x9E3779B97F4A7C15L;

    private DeviceRandom() {
    }

    /** The splitmix64 output function. */
    static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    /** Output number {@code index} (1 for the first) of splitmix64 seeded with {@code state}. */
    static long splitmix64(long state, long index) {
        return mix(state + index * GAMMA);
    }

    /** The 64-bit hash of element (row, col). */
    public static long hash(long seed, long row, long col) {
        checkIndex(row, col);
        return splitmix64(splitmix64(seed, row + 1), col + 1);
    }

    /** The fp32 value of element (row, col) before its rounding to the element type, in [-|scale|, |scale|). */
    public static float uniform(long seed, long row, long col, float scale) {
        int m = (int) (hash(seed, row, col) >>> 40) - (1 << 23);
        float unit = m * 0x1p-23f; // exact: |m| <= 2^23
        return unit * scale;
    }

    /** The value the kernel for {@code type} stores at (row, col), read back as fp32. */
    public static float value(long seed, long row, long col, float scale, KernelType type) {
        return Objects.requireNonNull(type, "type").round(uniform(seed, row, col, scale));
    }

    /** The bit pattern the kernel for {@code type} stores at (row, col) (low 16 bits for F16 and BF16). */
    public static int bits(long seed, long row, long col, float scale, KernelType type) {
        return Objects.requireNonNull(type, "type").encode(uniform(seed, row, col, scale));
    }

    private static void checkIndex(long row, long col) {
        if (row < 0 || col < 0) {
            throw new IllegalArgumentException("row and col must be >= 0, got (" + row + ", " + col + ")");
        }
    }
}
