package dev.ubuf.bootstrap;

import java.time.Duration;
import java.util.List;

/**
 * A bootstrap operation did not complete within its deadline. Names the operation and the world ranks that had not
 * arrived when the deadline passed (empty when that is unknown, e.g. the root itself did not answer).
 */
public final class BootstrapTimeoutException extends BootstrapException {
    private final String operation;
    private final List<Integer> missingRanks;
    private final Duration timeout;

    public BootstrapTimeoutException(int rank, String operation, List<Integer> missingRanks, Duration timeout,
                                     String detail) {
        super(rank, operation + " timed out after " + Durations.format(timeout) + ": " + detail);
        this.operation = operation;
        this.missingRanks = List.copyOf(missingRanks);
        this.timeout = timeout;
    }

    /** E.g. "allGather #3 in world". */
    public String operation() {
        return operation;
    }

    /** World ranks that had not arrived at the deadline. */
    public List<Integer> missingRanks() {
        return missingRanks;
    }

    public Duration timeout() {
        return timeout;
    }
}
