package dev.ubuf.bootstrap;

import java.time.Duration;
import java.util.Arrays;

/**
 * Why an operation failed, as data: it travels from the hub to the ranks and becomes a public exception in the
 * calling thread (so the stack trace is the caller's).
 */
sealed interface Failure {

    /** The public exception for this failure, raised by {@code rank} in {@code operation}. */
    BootstrapException toException(int rank, String operation);

    /** The deadline passed with {@code missingRanks} (world ranks) not arrived. */
    record TimedOut(int[] missingRanks, long timeoutMillis) implements Failure {
        @Override
        public BootstrapException toException(int rank, String operation) {
            return new BootstrapTimeoutException(rank, operation, Arrays.stream(missingRanks).boxed().toList(),
                    Duration.ofMillis(timeoutMillis),
                    (missingRanks.length == 1 ? "rank " + missingRanks[0] : "ranks " + Arrays.toString(missingRanks))
                            + " had not arrived by the deadline");
        }
    }

    /** Ranks called different operations (or roots, or member lists) as the same operation. */
    record Mismatch(String detail) implements Failure {
        @Override
        public BootstrapException toException(int rank, String operation) {
            return new CollectiveMismatchException(rank, operation, detail);
        }
    }

    /** A request the hub cannot serve (e.g. a result larger than a frame). */
    record Invalid(String detail) implements Failure {
        @Override
        public BootstrapException toException(int rank, String operation) {
            return new BootstrapException(rank, operation + " failed: " + detail);
        }
    }

    /** World rank {@code lostRank} is gone: closed its bootstrap ({@code closed}) or died/disconnected. */
    record Lost(int lostRank, boolean closed, String detail) implements Failure {
        @Override
        public BootstrapException toException(int rank, String operation) {
            return new PeerLostException(rank, operation, lostRank, detail);
        }
    }

    /** World rank {@code originRank} aborted the job. */
    record Aborted(int originRank, String reason) implements Failure {
        @Override
        public BootstrapException toException(int rank, String operation) {
            return new BootstrapAbortedException(rank, operation, originRank, reason);
        }
    }
}
