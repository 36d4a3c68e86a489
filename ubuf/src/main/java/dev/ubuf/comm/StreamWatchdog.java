package dev.ubuf.comm;

import dev.ubuf.bootstrap.BootstrapException;
import dev.ubuf.bootstrap.Bootstrap;

import dev.ubuf.cuda.CudaFatalException;
import java.time.Duration;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * How a rank waits for a stream of its domain ({@link TpCommunicator#await}): in short slices, so that a peer the
 * bootstrap has seen fail is reported at once; until the UB_TIMEOUT deadline; and never past a dead CUDA context.
 * Each way out aborts the domain before throwing, so the peers stop waiting for this rank. Apart from CUDA, so CPU
 * tests can drive it with a fake poll.
 *
 * @param rank         this rank, named in every report
 * @param timeout      UB_TIMEOUT
 * @param knownFailure the bootstrap's {@link Bootstrap#knownFailure()}
 * @param abort        aborts the domain with a reason ({@link TpCommunicator#abort})
 */
record StreamWatchdog(int rank, Duration timeout, Supplier<Optional<BootstrapException>> knownFailure,
                      Consumer<String> abort) {
    /** How long one poll may block before the bootstrap and the deadline are looked at again. */
    static final Duration SLICE = Duration.ofMillis(50);

    /** One bounded wait: true when the stream finished within {@code slice}. Throws what the driver reported. */
    @FunctionalInterface
    interface Poll {
        boolean finishedWithin(Duration slice);
    }

    /**
     * Returns once {@code poll} reports the stream finished.
     *
     * @param pending what the stream waits for (flags, peers, values), for the reports
     * @throws PeerFailedException  when the bootstrap knows of a failed peer
     * @throws UbufTimeoutException at the deadline
     * @throws CudaFatalException   when the context died; the domain is aborted first, because this rank will
     *                              never signal its peers again
     */
    void await(Poll poll, Supplier<String> pending) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!finished(poll, pending)) {
            var failure = knownFailure.get();
            if (failure.isPresent()) {
                String what = "rank " + rank + " stopped waiting: " + failure.get().getMessage() + "; it was waiting"
                        + " for " + describe(pending);
                abort.accept(what);
                throw new PeerFailedException(what, failure.get());
            }
            if (System.nanoTime() - deadline > 0) {
                String what = "rank " + rank + " timed out after " + timeout.toSeconds() + " s (UB_TIMEOUT): "
                        + describe(pending);
                abort.accept(what);
                throw new UbufTimeoutException(what);
            }
        }
    }

    private boolean finished(Poll poll, Supplier<String> pending) {
        try {
            return poll.finishedWithin(SLICE);
        } catch (CudaFatalException e) {
            abort.accept("rank " + rank + " has a dead CUDA context (" + e.errorName() + " from " + e.call()
                    + ") while it waited for " + describe(pending));
            throw e;
        }
    }

    /** The description of the pending waits, or why there is none: a report must never fail to be made. */
    private static String describe(Supplier<String> pending) {
        try {
            return pending.get();
        } catch (RuntimeException e) {
            return "(the pending waits could not be described: " + e + ")";
        }
    }
}
