package dev.ubuf.plan;

/**
 * The matrices a plan addresses. INPUT, WEIGHT, OUTPUT and BIAS are the caller's tensors, bound at run time;
 * UBUF is the user buffer registered on every rank of the domain (peers may read and write it);
 * SCRATCH is private to the rank (for example fp32 partial sums).
 */
public enum BufferRole {
    INPUT,
    WEIGHT,
    OUTPUT,
    BIAS,
    UBUF,
    SCRATCH;

    /** Only the user buffer has addresses on every rank. */
    public boolean peerVisible() {
        return this == UBUF;
    }
}
