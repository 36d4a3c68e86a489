package dev.ubuf.bootstrap;

import dev.ubuf.UbufException;

/**
 * A bootstrap operation failed. The subclasses say why (deadline, lost peer, abort, mismatched collectives, rejected
 * connection); this class itself covers the rest (use after an earlier failure, interruption, oversized payloads).
 * {@link #rank()} is the world rank that raised it.
 */
public sealed class BootstrapException extends UbufException
        permits BootstrapTimeoutException, PeerLostException, BootstrapAbortedException, CollectiveMismatchException,
        BootstrapRejectedException {
    private final int rank;

    public BootstrapException(int rank, String message) {
        super("rank " + rank + ": " + message);
        this.rank = rank;
    }

    public BootstrapException(int rank, String message, Throwable cause) {
        super("rank " + rank + ": " + message, cause);
        this.rank = rank;
    }

    /** The world rank on which the operation failed. */
    public int rank() {
        return rank;
    }
}
