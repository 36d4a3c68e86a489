package dev.ubuf.plan;

/**
 * The matrices a plan addresses. INPUT, WEIGHT, OUTPUT and BIAS are the caller's tensors, bound at run time;
 * UBUF is the user buffer registered on every rank of the domain (peers may read and write it);
 * SCRATCH is private to the rank (for example fp32 partial sums); STAGED_OUTPUT is private too: the output in its
 * wide type before a final {@link PlanStep.Quantize} writes the caller's FP8 OUTPUT ({@link Plan#withFp8Output}).
 */
public enum BufferRole {
    INPUT,
    WEIGHT,
    OUTPUT,
    BIAS,
    UBUF,
    SCRATCH,
    STAGED_OUTPUT;

    /** Only the user buffer has addresses on every rank. */
    public boolean peerVisible() {
        return this == UBUF;
    }
}
