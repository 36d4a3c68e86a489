package dev.ubuf.kernels;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The entry-point names in {@code ubuf_kernels.fatbin} (kernels/README.md gives each one's parameters), so no
 * caller spells a kernel name by hand.
 */
public final class KernelNames {
    /** {@code ubuf_copy_bytes(void* dst, const void* src, long long bytes)}. */
    public static final String COPY_BYTES = "ubuf_copy_bytes";
    /** Graph-safe signalling (ubuf_flags.cu): advance the device epoch, signal a flag, wait on a flag. */
    public static final String EPOCH_ADVANCE = "ubuf_epoch_advance";
    public static final String SIGNAL = "ubuf_signal";
    public static final String WAIT = "ubuf_wait";
    /** Up to 8 signals, or waits, of one stream in a row as one kernel (a struct of flags and values by value). */
    public static final String SIGNAL_RUN = "ubuf_signal_run";
    public static final String WAIT_RUN = "ubuf_wait_run";

    private KernelNames() {
    }

    /** {@code ubuf_sum_<t>}: up to 8 sources of type t summed into t. */
    public static String sum(KernelType type) {
        return "ubuf_sum_" + Objects.requireNonNull(type, "type").suffix();
    }

    /** {@link #sum} over contiguous views, a 16-byte word a thread: {@code ubuf_sum_dense_<t>}. */
    public static String sumDense(KernelType type) {
        return "ubuf_sum_dense_" + Objects.requireNonNull(type, "type").suffix();
    }

    /** {@link #sumF32To} over contiguous views: {@code ubuf_sum_dense_f32_to_<t>}, or {@code ubuf_sum_dense_f32}. */
    public static String sumDenseF32To(KernelType type) {
        Objects.requireNonNull(type, "type");
        return type == KernelType.F32 ? sumDense(KernelType.F32) : "ubuf_sum_dense_f32_to_" + type.suffix();
    }

    /** fp32 sources summed into {@code type}: {@code ubuf_sum_f32_to_<t>}, or {@code ubuf_sum_f32} for F32. */
    public static String sumF32To(KernelType type) {
        Objects.requireNonNull(type, "type");
        return type == KernelType.F32 ? sum(KernelType.F32) : "ubuf_sum_f32_to_" + type.suffix();
    }

    /** {@code ubuf_cast_f32_to_<t>} for F16 and BF16 (fp32 to fp32 is a copy, not a cast kernel). */
    public static String castF32To(KernelType type) {
        Objects.requireNonNull(type, "type");
        if (type == KernelType.F32) {
            throw new IllegalArgumentException("there is no fp32 -> fp32 cast kernel: copy instead (" + COPY_BYTES + ")");
        }
        return "ubuf_cast_f32_to_" + type.suffix();
    }

    /** {@code ubuf_add_bias_<t>}. */
    public static String addBias(KernelType type) {
        return "ubuf_add_bias_" + Objects.requireNonNull(type, "type").suffix();
    }

    /** {@code ubuf_fill_random_<t>}. */
    public static String fillRandom(KernelType type) {
        return "ubuf_fill_random_" + Objects.requireNonNull(type, "type").suffix();
    }

    /** {@code ubuf_fill_u8}, {@code ubuf_fill_u16} or {@code ubuf_fill_u32} for elements of 1, 2 or 4 bytes. */
    public static String fill(int elementBytes) {
        return switch (elementBytes) {
            case 1 -> "ubuf_fill_u8";
            case 2 -> "ubuf_fill_u16";
            case 4 -> "ubuf_fill_u32";
            default -> throw new IllegalArgumentException(
                    "fill kernels exist for elements of 1, 2 or 4 bytes, not " + elementBytes);
        };
    }

    /**
     * Every kernel of the fatbin, sorted (the layer kernels of {@link LayerKernelNames} and the FP8 kernels of
     * {@link Fp8KernelNames} included).
     */
    public static List<String> all() {
        List<String> names = new ArrayList<>();
        for (KernelType t : KernelType.values()) {
            names.add(sum(t));
            names.add(sumDense(t));
            names.add(addBias(t));
            names.add(fillRandom(t));
            if (t != KernelType.F32) {
                names.add(sumF32To(t));
                names.add(sumDenseF32To(t));
                names.add(castF32To(t));
            }
        }
        for (int bytes : new int[] {1, 2, 4}) {
            names.add(fill(bytes));
        }
        names.add(COPY_BYTES);
        names.add(EPOCH_ADVANCE);
        names.add(SIGNAL);
        names.add(WAIT);
        names.add(SIGNAL_RUN);
        names.add(WAIT_RUN);
        names.addAll(LayerKernelNames.all());
        names.addAll(Fp8KernelNames.all());
        names.sort(null);
        return List.copyOf(names);
    }
}
