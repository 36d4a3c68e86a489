package dev.ubuf.kernels;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Entry-point names of the FP8 kernels (ubuf_fp8.cu; kernels/README.md gives each one's parameters). The FP8 format
 * is named by its suffix, {@code "e4m3"} or {@code "e5m2"}.
 */
public final class Fp8KernelNames {
    /** The FP8 format suffixes. */
    public static final List<String> FORMATS = List.of("e4m3", "e5m2");
    /** Current scaling on the device: scale and inverse from an amax. */
    public static final String SCALE_FROM_AMAX = "ubuf_fp8_scale_from_amax";
    /** Delayed scaling's end of a step on the device: amax windows, scales and inverses of a whole scale table. */
    public static final String DELAYED_UPDATE = "ubuf_fp8_delayed_update";
    /** One more step ended on the device: the count {@link #DELAYED_UPDATE} takes its window column from. */
    public static final String COUNT_STEP = "ubuf_fp8_count_step";
    /** The transpose of FP8 codes of either format, as bytes (ubuf_transpose.cu). */
    public static final String TRANSPOSE = "ubuf_fp8_transpose";

    private Fp8KernelNames() {
    }

    /** {@code type} to FP8 with a scale, folding the input's amax. */
    public static String quantize(KernelType type, String fp8) {
        return "ubuf_fp8_quantize_" + type.suffix() + "_to_" + format(fp8);
    }

    /** As {@link #quantize}, also (or only) writing the transpose. */
    public static String quantizeTranspose(KernelType type, String fp8) {
        return "ubuf_fp8_quantize_transpose_" + type.suffix() + "_to_" + format(fp8);
    }

    /** FP8 back to {@code type}, times the inverse scale. */
    public static String dequantize(String fp8, KernelType type) {
        return "ubuf_fp8_dequantize_" + format(fp8) + "_to_" + type.suffix();
    }

    /** The amax of a matrix of {@code type}, folded into an fp32. */
    public static String amax(KernelType type) {
        return "ubuf_fp8_amax_" + type.suffix();
    }

    /** Every FP8 kernel, sorted. */
    public static List<String> all() {
        List<String> names = new ArrayList<>();
        for (KernelType t : KernelType.values()) {
            for (String f : FORMATS) {
                names.add(quantize(t, f));
                names.add(quantizeTranspose(t, f));
                names.add(dequantize(f, t));
            }
            names.add(amax(t));
        }
        names.add(SCALE_FROM_AMAX);
        names.add(DELAYED_UPDATE);
        names.add(COUNT_STEP);
        names.add(TRANSPOSE);
        names.sort(null);
        return List.copyOf(names);
    }

    private static String format(String fp8) {
        if (!FORMATS.contains(Objects.requireNonNull(fp8, "fp8"))) {
            throw new IllegalArgumentException("fp8 kernels exist for " + FORMATS + ", not '" + fp8 + "'");
        }
        return fp8;
    }
}
