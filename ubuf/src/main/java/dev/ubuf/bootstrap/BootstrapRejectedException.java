package dev.ubuf.bootstrap;

/**
 * Rank 0 refused this process: wrong or missing job token, a rank already taken or out of range, or a different world
 * size. The reason is the root's own words.
 */
public final class BootstrapRejectedException extends BootstrapException {
    private final String reason;

    public BootstrapRejectedException(int rank, String reason) {
        super(rank, "rejected by the bootstrap root (rank 0): " + reason);
        this.reason = reason;
    }

    public String reason() {
        return reason;
    }
}
