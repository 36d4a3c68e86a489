package dev.ubuf.fp8;

import java.util.Objects;

/**
 * How FP8 scaling factors are chosen, as Transformer Engine's users know the recipes. Every recipe picks the formats
 * ({@link Formats}) and says where each tensor's scale comes from:
 *
 * <ul>
 *   <li>{@link DelayedScaling}: from the amaxes of earlier steps. Each tensor keeps a window of its last
 *       {@code historyLength} amaxes; after a step, {@code amax} is the window's maximum (or the most recent) and
 *       {@code scale = fp8Max / amax / 2^margin}. A step's own amax only affects later steps, so quantizing needs no
 *       reduction first.</li>
 *   <li>{@link CurrentScaling}: from the tensor itself, just in time: {@code scale = fp8Max / amax(x)}, which costs an
 *       amax reduction before each quantization.</li>
 * </ul>
 *
 * A scale multiplies a real value into the FP8 range ({@code q = fp8(x * scale)}); its inverse dequantizes and is
 * what a GEMM takes ({@code x ~ q * scaleInverse}).
 */
public sealed interface Fp8Recipe {

    /** Formats of forward tensors (activations, weights) and backward tensors (gradients). */
    Formats formats();

    /** TE's Format: HYBRID is E4M3 forward and E5M2 gradients (TE's default), E4M3 uses E4M3 for both. */
    enum Formats {
        E4M3(Fp8Format.E4M3, Fp8Format.E4M3),
        HYBRID(Fp8Format.E4M3, Fp8Format.E5M2);

        private final Fp8Format forward;
        private final Fp8Format backward;

        Formats(Fp8Format forward, Fp8Format backward) {
            this.forward = forward;
            this.backward = backward;
        }

        public Fp8Format forward() {
            return forward;
        }

        public Fp8Format backward() {
            return backward;
        }
    }

    /** Which amax of the history a delayed-scaling update uses (TE's amax_compute_algo). */
    enum AmaxCompute {
        /** The largest amax of the window ("max", TE's default). */
        MAX,
        /** The amax of the step just finished ("most_recent"). */
        MOST_RECENT
    }

    /**
     * Delayed scaling. TE's defaults are {@link #TE_DEFAULT}: HYBRID formats, a history of 1024 steps, margin 0,
     * amax over the whole history.
     *
     * @param historyLength steps of amax each tensor remembers, at least 1
     * @param margin        the scale is divided by 2^margin (headroom for growth between updates), at least 0
     */
    record DelayedScaling(Formats formats, int historyLength, int margin, AmaxCompute amaxCompute)
            implements Fp8Recipe {
        public static final DelayedScaling TE_DEFAULT = new DelayedScaling(Formats.HYBRID, 1024, 0, AmaxCompute.MAX);

        public DelayedScaling {
            Objects.requireNonNull(formats, "formats");
            Objects.requireNonNull(amaxCompute, "amaxCompute");
            if (historyLength < 1) {
                throw new IllegalArgumentException("the amax history length must be at least 1, got " + historyLength);
            }
            if (margin < 0) {
                throw new IllegalArgumentException("the margin must be >= 0, got " + margin);
            }
        }

        /**
         * The scale after a step whose (windowed) amax is {@code amax}: {@code fp8Max / amax / 2^margin}, or
         * Float.MAX_VALUE where that overflows (a tiny amax). An amax of 0 (nothing seen yet, or an all-zero tensor),
         * infinity or NaN says nothing usable, so the previous scale stays.
         */
        public float scale(Fp8Format format, float amax, float previousScale) {
            if (!(amax > 0) || Float.isInfinite(amax)) {
                return previousScale;
            }
            return finiteOrMax(Math.scalb(format.maxFinite() / amax, -margin));
        }
    }

    /**
     * Current (per-tensor, just-in-time) scaling: {@code scale = fp8Max / amax(x)} of the very tensor being quantized,
     * Float.MAX_VALUE where that overflows. An amax of 0, infinity or NaN gives scale 1 (TE returns 1 for 0 and
     * infinity; ubuf treats NaN the same rather than spreading it into the scale).
     */
    record CurrentScaling(Formats formats) implements Fp8Recipe {
        public CurrentScaling {
            Objects.requireNonNull(formats, "formats");
        }

        public float scale(Fp8Format format, float amax) {
            if (!(amax > 0) || Float.isInfinite(amax)) {
                return 1f;
            }
            return finiteOrMax(format.maxFinite() / amax);
        }
    }

    private static float finiteOrMax(float scale) {
        return Float.isInfinite(scale) ? Float.MAX_VALUE : scale;
    }
}
