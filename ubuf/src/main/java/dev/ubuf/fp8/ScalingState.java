package dev.ubuf.fp8;

import java.util.Objects;

/**
 * One tensor's FP8 scaling state: its format, its scale and inverse, and the window of its recent amaxes (TE's
 * amax_history row for the tensor). A step records amaxes ({@link #recordAmax}: a tensor quantized several times in
 * a step keeps the largest) into the current slot; {@link #update} then turns the window into the next scale and opens
 * a fresh slot, dropping the oldest. Not thread-safe: one training loop owns it.
 */
public final class ScalingState {
    private final Fp8Format format;
    private final float[] window;
    private int current; // index of the slot the running step fills
    private float scale = 1f;

    public ScalingState(Fp8Format format, int historyLength) {
        this.format = Objects.requireNonNull(format, "format");
        if (historyLength < 1) {
            throw new IllegalArgumentException("the amax history length must be at least 1, got " + historyLength);
        }
        this.window = new float[historyLength];
    }

    /**
     * A fresh state for a tensor of {@code role} under {@code recipe}: the role's format, and the recipe's amax
     * history (one slot under current scaling, which keeps no history; it keeps the bookkeeping uniform).
     */
    public static ScalingState of(Fp8Recipe recipe, Fp8Role role) {
        return new ScalingState(role.format(recipe),
                recipe instanceof Fp8Recipe.DelayedScaling d ? d.historyLength() : 1);
    }

    public Fp8Format format() {
        return format;
    }

    /** The quantization scale: {@code q = fp8(x * scale)}. 1 until an update says otherwise. */
    public float scale() {
        return scale;
    }

    /** 1 / scale: what dequantizes and what the GEMM takes as the operand's scale. */
    public float scaleInverse() {
        return 1f / scale;
    }

    /** Folds an amax measured in the running step into its slot; a NaN stays NaN (as the device's bitwise max does). */
    public void recordAmax(float amax) {
        if (amax < 0) {
            throw new IllegalArgumentException("an amax is a magnitude, got " + amax);
        }
        float held = window[current];
        window[current] = Float.isNaN(held) || Float.isNaN(amax) ? Float.NaN : Math.max(held, amax);
    }

    /** The window, most recent step first (the running step's slot at index 0). */
    public float[] history() {
        float[] h = new float[window.length];
        for (int i = 0; i < window.length; i++) {
            h[i] = window[Math.floorMod(current - i, window.length)];
        }
        return h;
    }

    /**
     * Ends the running step under delayed scaling: computes the amax per {@code recipe.amaxCompute()} over the
     * window (the running step included), sets the scale by {@link Fp8Recipe.DelayedScaling#scale}, then opens a
     * zeroed slot in place of the oldest. Returns the amax it used.
     */
    public float update(Fp8Recipe.DelayedScaling recipe) {
        if (recipe.historyLength() != window.length) {
            throw new IllegalArgumentException("the recipe keeps " + recipe.historyLength() + " steps of history, this "
                    + "state " + window.length);
        }
        float amax = switch (recipe.amaxCompute()) {
            case MOST_RECENT -> window[current];
            case MAX -> windowMax();
        };
        scale = recipe.scale(format, amax, scale);
        current = (current + 1) % window.length;
        window[current] = 0f;
        return amax;
    }

    /** Sets the scale from this tensor's own amax (current scaling); the history is left alone. */
    public float scaleFromCurrentAmax(Fp8Recipe.CurrentScaling recipe, float amax) {
        scale = recipe.scale(format, amax);
        return scale;
    }

    private float windowMax() {
        float max = 0f;
        for (float v : window) {
            if (Float.isNaN(v)) {
                return Float.NaN;
            }
            max = Math.max(max, v);
        }
        return max;
    }
}
