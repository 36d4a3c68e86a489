package dev.ubuf.atomic;

import dev.ubuf.UbufException;

/**
 * The atomic GEMM's wait for a chunk's arrival counter expired: the chunk's rows never arrived (a peer that did not
 * send, or sent late). The kernel stopped storing tiles and ended; the context is still usable.
 */
public final class ArrivalTimeoutException extends UbufException {
    private final int chunk;
    private final int expected;
    private final int observed;

    ArrivalTimeoutException(String message, int chunk, int expected, int observed) {
        super(message);
        this.chunk = chunk;
        this.expected = expected;
        this.observed = observed;
    }

    public int chunk() {
        return chunk;
    }

    /** The value the wait needed (arrivalValue). */
    public int expected() {
        return expected;
    }

    /** The counter's value when the wait expired. */
    public int observed() {
        return observed;
    }
}
