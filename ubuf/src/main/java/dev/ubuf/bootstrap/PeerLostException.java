package dev.ubuf.bootstrap;

/**
 * A peer that an operation needs is gone: its process died or disconnected (seen as end of stream by the root, or by
 * the other ranks when the root is the one lost), or it closed its bootstrap while others still wait for it.
 */
public final class PeerLostException extends BootstrapException {
    private final String operation;
    private final int lostRank;

    public PeerLostException(int rank, String operation, int lostRank, String detail) {
        super(rank, operation + " failed: peer rank " + lostRank + " is lost: " + detail);
        this.operation = operation;
        this.lostRank = lostRank;
    }

    public String operation() {
        return operation;
    }

    /** The world rank that is gone. */
    public int lostRank() {
        return lostRank;
    }
}
