package dev.ubuf.fp8;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The host FP8 codec against the formats' definitions, over all 256 codes of each: decoding follows the bit layout,
 * encoding a decoded value gives its code back, every midpoint between neighbours rounds to the even code, and
 * everything beyond the largest finite value saturates.
 */
class Fp8FormatTest {

    /** The value of a code straight from the definition: (-1)^s * 2^(e - bias) * 1.m, subnormal at e = 0. */
    static double definition(Fp8Format f, int code) {
        int mBits = f == Fp8Format.E4M3 ? 3 : 2;
        int bias = f == Fp8Format.E4M3 ? 7 : 15;
        int e = (code & 0x7f) >> mBits;
        int m = code & ((1 << mBits) - 1);
        double sign = (code & 0x80) != 0 ? -1 : 1;
        if (e == 0) {
            return sign * m * Math.pow(2, 1 - bias - mBits);
        }
        return sign * (1 + m / Math.pow(2, mBits)) * Math.pow(2, e - bias);
    }

    static boolean isSpecial(Fp8Format f, int code) {
        int low = code & 0x7f;
        return f == Fp8Format.E4M3 ? low == 0x7f : low >= 0x7c;
    }

    @ParameterizedTest
    @EnumSource(Fp8Format.class)
    void everyFiniteCodeDecodesToItsDefinitionAndEncodesBackToItself(Fp8Format f) {
        for (int code = 0; code < 256; code++) {
            if (isSpecial(f, code)) {
                continue;
            }
            double v = definition(f, code);
            assertEquals(v, f.decode(code), 0.0, "code 0x" + Integer.toHexString(code));
            assertEquals(code, f.encode(f.decode(code)), "round trip of 0x" + Integer.toHexString(code));
        }
    }

    @Test
    void specialCodesAreNanOrInfinityAsEachFormatDefines() {
        assertTrue(Float.isNaN(Fp8Format.E4M3.decode(0x7f)));
        assertTrue(Float.isNaN(Fp8Format.E4M3.decode(0xff)));
        assertEquals(448f, Fp8Format.E4M3.decode(0x7e));
        assertEquals(-448f, Fp8Format.E4M3.decode(0xfe));
        assertEquals(Float.POSITIVE_INFINITY, Fp8Format.E5M2.decode(0x7c));
        assertEquals(Float.NEGATIVE_INFINITY, Fp8Format.E5M2.decode(0xfc));
        for (int code : new int[] {0x7d, 0x7e, 0x7f, 0xfd, 0xfe, 0xff}) {
            assertTrue(Float.isNaN(Fp8Format.E5M2.decode(code)), Integer.toHexString(code));
        }
        assertEquals(57344f, Fp8Format.E5M2.decode(0x7b));
        assertEquals(448f, Fp8Format.E4M3.maxFinite());
        assertEquals(57344f, Fp8Format.E5M2.maxFinite());
        assertEquals(0x1p-9f, Fp8Format.E4M3.minSubnormal());
        assertEquals(0x1p-16f, Fp8Format.E5M2.minSubnormal());
    }

    @ParameterizedTest
    @EnumSource(Fp8Format.class)
    void midpointsRoundToTheEvenCodeAndAnythingOffTheMidpointToTheNearer(Fp8Format f) {
        List<Integer> ladder = new ArrayList<>();
        for (int code = 0; code < 0x80; code++) {
            if (!isSpecial(f, code)) {
                ladder.add(code);
            }
        }
        for (int i = 0; i + 1 < ladder.size(); i++) {
            int lo = ladder.get(i);
            int hi = ladder.get(i + 1);
            float mid = (float) ((definition(f, lo) + definition(f, hi)) / 2); // exact: a few bits more than fp8
            int even = (lo & 1) == 0 ? lo : hi;
            assertEquals(even, f.encode(mid), "midpoint " + mid);
            assertEquals(even | 0x80, f.encode(-mid), "midpoint " + -mid);
            assertEquals(lo, f.encode(Math.nextDown(mid)), "just below " + mid);
            assertEquals(hi, f.encode(Math.nextUp(mid)), "just above " + mid);
        }
    }

    @ParameterizedTest
    @EnumSource(Fp8Format.class)
    void beyondTheLargestFiniteValueEverythingSaturatesAndNanStaysNan(Fp8Format f) {
        int max = f.encode(f.maxFinite());
        float halfUlpAbove = f.maxFinite() + (f.maxFinite() - f.decode(max - 1)) / 2;
        assertEquals(max, f.encode(halfUlpAbove), "the tie above the largest value saturates");
        assertEquals(max, f.encode(Math.nextUp(halfUlpAbove)));
        assertEquals(max, f.encode(1e30f));
        assertEquals(max, f.encode(Float.POSITIVE_INFINITY));
        assertEquals(max | 0x80, f.encode(Float.NEGATIVE_INFINITY));
        assertEquals(max | 0x80, f.encode(-Float.MAX_VALUE));
        assertTrue(f.isNan(f.encode(Float.NaN)));
        assertEquals(f == Fp8Format.E4M3 ? 0x7f : 0x7e, f.encode(Float.NaN));
    }

    @ParameterizedTest
    @EnumSource(Fp8Format.class)
    void tinyValuesRoundToZeroKeepingTheirSign(Fp8Format f) {
        float halfMin = f.minSubnormal() / 2;
        assertEquals(0x00, f.encode(halfMin), "half the smallest subnormal ties to the even zero");
        assertEquals(0x80, f.encode(-halfMin));
        assertEquals(0x01, f.encode(Math.nextUp(halfMin)));
        assertEquals(0x00, f.encode(0f));
        assertEquals(0x80, f.encode(-0f));
        assertEquals(0x00, f.encode(Float.MIN_VALUE));
    }

    @ParameterizedTest
    @EnumSource(Fp8Format.class)
    void randomFloatsGoToTheNearestCode(Fp8Format f) {
        Random random = new Random();
        for (int i = 0; i < 20_000; i++) {
            float x = (float) (random.nextGaussian() * Math.scalb(1.0, random.nextInt(-20, 20)));
            float r = f.round(x);
            double err = Math.abs((double) r - x);
            for (int code = 0; code < 256; code++) {
                if (!isSpecial(f, code)) {
                    double other = definition(f, code);
                    assertTrue(err <= Math.abs(other - x) || Math.abs(x) > f.maxFinite(),
                            () -> x + " rounded to " + r + " but " + other + " is nearer");
                }
            }
        }
    }
}
