package dev.ubuf.kernels;

/**
 * Element types the kernels are instantiated for. The suffix ends each kernel's name ({@code ubuf_sum_bf16});
 * {@link #round} and {@link #encode} are what a kernel's store does to an fp32 value (round to nearest even).
 */
public enum KernelType {
    /** fp32, C {@code float}. */
    F32("f32", 4),
    /** IEEE binary16, C {@code __half}. */
    F16("f16", 2),
    /** bfloat16, C {@code __nv_bfloat16}. */
    BF16("bf16", 2);

    private final String suffix;
    private final int bytes;

    KernelType(String suffix, int bytes) {
        this.suffix = suffix;
        this.bytes = bytes;
    }

    /** The name suffix: "f32", "f16" or "bf16". */
    public String suffix() {
        return suffix;
    }

    /** Bytes per element. */
    public int bytes() {
        return bytes;
    }

    /** Elements in one 16-byte vector: the kernels' vector width for this type. */
    public int elementsPer16Bytes() {
        return 16 / bytes;
    }

    /** The bit pattern a kernel stores for {@code v} (low 16 bits for the 16-bit types). */
    public int encode(float v) {
        return switch (this) {
            case F32 -> Float.floatToRawIntBits(v);
            case F16 -> Float.floatToFloat16(v) & 0xffff;
            case BF16 -> floatToBf16Bits(v);
        };
    }

    /** The value of a bit pattern of this type. */
    public float decode(int bits) {
        return switch (this) {
            case F32 -> Float.intBitsToFloat(bits);
            case F16 -> Float.float16ToFloat((short) bits);
            case BF16 -> Float.intBitsToFloat((bits & 0xffff) << 16);
        };
    }

    /** {@code v} rounded to this type and back: what a kernel writes, read as fp32. */
    public float round(float v) {
        return decode(encode(v));
    }

    // Same as __float2bfloat16_rn: round to nearest even; a NaN stays a (quiet) NaN.
    private static int floatToBf16Bits(float v) {
        int x = Float.floatToRawIntBits(v);
        if ((x & 0x7fffffff) > 0x7f800000) {
            return ((x >>> 16) | 0x40) & 0xffff;
        }
        return ((x + 0x7fff + ((x >>> 16) & 1)) >>> 16) & 0xffff;
    }
}
