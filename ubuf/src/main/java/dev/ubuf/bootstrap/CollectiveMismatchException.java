package dev.ubuf.bootstrap;

/**
 * Ranks called different collectives (or the same with different roots or members) as the same operation of a group:
 * a program bug that would otherwise hang or mix up data.
 */
public final class CollectiveMismatchException extends BootstrapException {
    private final String operation;

    public CollectiveMismatchException(int rank, String operation, String detail) {
        super(rank, operation + " failed: mismatched collectives: " + detail);
        this.operation = operation;
    }

    public String operation() {
        return operation;
    }
}
