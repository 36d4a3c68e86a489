package dev.ubuf.tensor;

/**
 * Element types ubuf moves and multiplies. FP8 types are reserved for the overlap methods and reductions, which
 * reject them before GPU work; cuBLASLt GEMMs take them ({@link dev.ubuf.gemm.GemmSpec}), and their host conversions
 * are {@code dev.ubuf.fp8.Fp8Format}.
 */
public enum DType {
    FP32(4, "fp32"),
    FP16(2, "fp16"),
    BF16(2, "bf16"),
    FP8_E4M3(1, "fp8e4m3"),
    FP8_E5M2(1, "fp8e5m2");

    private final int bytes;
    private final String shortName;

    DType(int bytes, String shortName) {
        this.bytes = bytes;
        this.shortName = shortName;
    }

    public int bytes() {
        return bytes;
    }

    /** The name used in results files and on command lines ("bf16", "fp16", "fp32"). */
    public String shortName() {
        return shortName;
    }

    public boolean isReserved() {
        return this == FP8_E4M3 || this == FP8_E5M2;
    }

    public static DType parse(String s) {
        for (DType d : values()) {
            if (d.shortName.equalsIgnoreCase(s) || d.name().equalsIgnoreCase(s)) {
                return d;
            }
        }
        throw new IllegalArgumentException("unknown dtype '" + s + "' (expected fp32, fp16 or bf16)");
    }

    /** Rounds a float to this type's precision and back (what the device would store). */
    public float round(float v) {
        return switch (this) {
            case FP32 -> v;
            case FP16 -> Float.float16ToFloat(Float.floatToFloat16(v));
            case BF16 -> bf16BitsToFloat(floatToBf16Bits(v));
            default -> throw new UnsupportedOperationException(this + " is reserved: no host conversion yet");
        };
    }

    /** Encodes v into this type's bit pattern (low bytes of the int). */
    public int encode(float v) {
        return switch (this) {
            case FP32 -> Float.floatToRawIntBits(v);
            case FP16 -> Float.floatToFloat16(v) & 0xffff;
            case BF16 -> floatToBf16Bits(v) & 0xffff;
            default -> throw new UnsupportedOperationException(this + " is reserved: no host conversion yet");
        };
    }

    /** Decodes this type's bit pattern (low bytes of bits) to a float. */
    public float decode(int bits) {
        return switch (this) {
            case FP32 -> Float.intBitsToFloat(bits);
            case FP16 -> Float.float16ToFloat((short) bits);
            case BF16 -> bf16BitsToFloat((short) bits);
            default -> throw new UnsupportedOperationException(this + " is reserved: no host conversion yet");
        };
    }

    /** Round-to-nearest-even float to bfloat16, NaN kept quiet. */
    public static short floatToBf16Bits(float v) {
        int x = Float.floatToRawIntBits(v);
        if ((x & 0x7fffffff) > 0x7f800000) {
            return (short) ((x >>> 16) | 0x40);
        }
        int rounding = 0x7fff + ((x >>> 16) & 1);
        return (short) ((x + rounding) >>> 16);
    }

    public static float bf16BitsToFloat(short bits) {
        return Float.intBitsToFloat((bits & 0xffff) << 16);
    }
}
