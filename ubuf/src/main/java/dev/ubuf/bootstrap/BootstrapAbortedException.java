package dev.ubuf.bootstrap;

/** Some rank called {@link Bootstrap#abort(String)}: every pending and later operation fails with its reason. */
public final class BootstrapAbortedException extends BootstrapException {
    private final String operation;
    private final int originRank;
    private final String reason;

    public BootstrapAbortedException(int rank, String operation, int originRank, String reason) {
        super(rank, operation + " failed: the job was aborted by rank " + originRank + ": " + reason);
        this.operation = operation;
        this.originRank = originRank;
        this.reason = reason;
    }

    public String operation() {
        return operation;
    }

    /** The world rank that called abort. */
    public int originRank() {
        return originRank;
    }

    public String reason() {
        return reason;
    }
}
