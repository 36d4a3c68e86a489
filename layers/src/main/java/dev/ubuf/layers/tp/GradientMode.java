package dev.ubuf.layers.tp;

/**
 * How a backward stores the parameters' gradients.
 */
public enum GradientMode {
    /**
     * Added to what the gradients hold: gradient accumulation over micro-batches (the caller zeroes them before the
     * first, {@link TpLayer#zeroGrad}).
     */
    ACCUMULATE,
    /**
     * Written over what they hold: a step's only (or first) micro-batch. Nothing has to zero them first, and the
     * weight-gradient GEMMs do not read the old fp32 gradients (beta 0).
     */
    OVERWRITE;

    /** The GEMM's beta: 1 to add to the old gradient, 0 to write over it. */
    public float beta() {
        return this == ACCUMULATE ? 1f : 0f;
    }

    public boolean accumulates() {
        return this == ACCUMULATE;
    }
}
