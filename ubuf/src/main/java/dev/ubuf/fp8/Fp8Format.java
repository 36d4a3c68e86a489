package dev.ubuf.fp8;

import dev.ubuf.tensor.DType;
import java.util.Arrays;

/**
 * The two OCP FP8 formats as the GPU stores them, with the host conversions the kernels' results are checked against.
 *
 * <ul>
 *   <li>E4M3: sign, 4 exponent bits (bias 7), 3 mantissa bits; no infinities, NaN only at S.1111.111; largest finite
 *       448, smallest subnormal 2^-9.</li>
 *   <li>E5M2: sign, 5 exponent bits (bias 15), 2 mantissa bits, IEEE-like: infinities at S.11111.00, NaN at
 *       S.11111.{01,10,11}; largest finite 57344, smallest subnormal 2^-16.</li>
 * </ul>
 *
 * <p>{@link #encode} is the conversion the quantize kernels use ({@code __nv_cvt_float_to_fp8(x, __NV_SATFINITE, ...)}):
 * round to nearest even on the exact value, then saturate: magnitudes beyond the largest finite value, infinities
 * included, become ±largest finite; NaN stays NaN (0x7F for E4M3, 0x7E for E5M2, with the sign); the sign of zero is
 * kept.
 */
public enum Fp8Format {
    E4M3(DType.FP8_E4M3, 4, 3, 7, false),
    E5M2(DType.FP8_E5M2, 5, 2, 15, true);

    private final DType dtype;
    private final int exponentBits;
    private final int mantissaBits;
    private final int bias;
    private final boolean hasInfinity;
    private final float[] values = new float[256];
    /** The non-negative finite values in increasing order, and their codes: encode's search table. */
    private final float[] ladder;
    private final int[] ladderCodes;

    Fp8Format(DType dtype, int exponentBits, int mantissaBits, int bias, boolean hasInfinity) {
        this.dtype = dtype;
        this.exponentBits = exponentBits;
        this.mantissaBits = mantissaBits;
        this.bias = bias;
        this.hasInfinity = hasInfinity;
        int finite = 0;
        for (int code = 0; code < 256; code++) {
            values[code] = computeValue(code);
            if (code < 0x80 && Float.isFinite(values[code])) {
                finite++;
            }
        }
        ladder = new float[finite];
        ladderCodes = new int[finite];
        // Codes 0x00..0x7F of finite values are already in increasing order of value.
        for (int code = 0, i = 0; code < 0x80; code++) {
            if (Float.isFinite(values[code])) {
                ladder[i] = values[code];
                ladderCodes[i++] = code;
            }
        }
    }

    /** The format of an FP8 dtype. */
    public static Fp8Format of(DType dtype) {
        return switch (dtype) {
            case FP8_E4M3 -> E4M3;
            case FP8_E5M2 -> E5M2;
            default -> throw new IllegalArgumentException(dtype.shortName() + " is not an fp8 type");
        };
    }

    public DType dtype() {
        return dtype;
    }

    /** The largest finite value: 448 (E4M3) or 57344 (E5M2). */
    public float maxFinite() {
        return ladder[ladder.length - 1];
    }

    /** The smallest positive (subnormal) value: 2^-9 (E4M3) or 2^-16 (E5M2). */
    public float minSubnormal() {
        return ladder[1];
    }

    /** The NaN code the conversion produces for a NaN of the given sign. */
    public int nanCode(boolean negative) {
        return (negative ? 0x80 : 0) | (this == E4M3 ? 0x7F : 0x7E);
    }

    /** The value of a code (its low 8 bits). */
    public float decode(int code) {
        return values[code & 0xff];
    }

    public boolean isNan(int code) {
        return Float.isNaN(decode(code));
    }

    /** Round to nearest even, saturating to ±{@link #maxFinite()}; NaN to {@link #nanCode}. */
    public int encode(float x) {
        int sign = Float.floatToRawIntBits(x) < 0 ? 0x80 : 0;
        if (Float.isNaN(x)) {
            return nanCode(sign != 0);
        }
        double a = Math.abs((double) x);
        if (a >= maxFinite()) {
            return sign | ladderCodes[ladderCodes.length - 1];
        }
        // The neighbours lo <= a < hi on the ladder; ties go to the even code (the one with mantissa bit 0 clear).
        int hiIndex = upperIndex(a);
        int loIndex = hiIndex - 1;
        double lo = ladder[loIndex];
        double hi = ladder[hiIndex];
        int index;
        if (a - lo < hi - a) {
            index = loIndex;
        } else if (a - lo > hi - a) {
            index = hiIndex;
        } else {
            index = (ladderCodes[loIndex] & 1) == 0 ? loIndex : hiIndex;
        }
        return sign | ladderCodes[index];
    }

    /** What a float becomes when stored in this format and read back. */
    public float round(float x) {
        return decode(encode(x));
    }

    private int upperIndex(double a) {
        int i = Arrays.binarySearch(ladder, (float) a);
        // a is a float, so an exact hit is a ladder value: its upper neighbour is the next one.
        return i >= 0 ? i + 1 : -i - 1;
    }

    private float computeValue(int code) {
        int mantissaMask = (1 << mantissaBits) - 1;
        int exponentMask = (1 << exponentBits) - 1;
        int mantissa = code & mantissaMask;
        int exponent = (code >>> mantissaBits) & exponentMask;
        float sign = (code & 0x80) != 0 ? -1f : 1f;
        if (exponent == exponentMask) {
            if (hasInfinity) {
                return mantissa == 0 ? sign * Float.POSITIVE_INFINITY : Float.NaN;
            }
            if (mantissa == mantissaMask) {
                return Float.NaN;
            }
        }
        if (exponent == 0) {
            return sign * Math.scalb((float) mantissa, 1 - bias - mantissaBits);
        }
        return sign * Math.scalb((float) ((1 << mantissaBits) | mantissa), exponent - bias - mantissaBits);
    }
}
