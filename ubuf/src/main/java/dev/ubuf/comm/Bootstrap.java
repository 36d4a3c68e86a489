package dev.ubuf.comm;

import java.time.Duration;

/**
 * The CPU-side rendezvous of a job's ranks: small collectives over byte arrays to exchange setup data (buffer
 * handles, device ids, unique ids), and the place where a broken job is noticed.
 *
 * <p>Every operation is a collective: every rank of the group calls it, in the same order. Each has a deadline
 * ({@link #timeout()}, fixed at construction). Failures:
 * <ul>
 *   <li>{@link BootstrapTimeoutException}: the deadline passed; names this rank, the operation and the ranks that had
 *       not arrived.</li>
 *   <li>{@link PeerLostException}: a needed peer died, disconnected or closed its bootstrap; raised on every other rank
 *       as soon as the loss is seen, not only at the deadline.</li>
 *   <li>{@link BootstrapAbortedException}: some rank called {@link #abort(String)}.</li>
 *   <li>{@link CollectiveMismatchException}: ranks called different collectives as the same operation.</li>
 * </ul>
 * After any failure this bootstrap is unusable (later operations fail at once); a job that fails should abort and
 * close.
 *
 * <p>Ranks in exceptions are world ranks (those of the bootstrap the job started with).
 *
 * <p>Thread-safety: operations on one bootstrap are serialized (call them from one thread per rank); {@link #abort}
 * and {@link #close} may be called from any thread.
 */
public interface Bootstrap extends AutoCloseable {

    /** This rank, 0 &lt;= rank &lt; size. */
    int rank();

    /** Number of ranks in this group. */
    int size();

    /** The deadline of every operation. */
    Duration timeout();

    /**
     * Every rank contributes {@code mine} (any length, may differ between ranks); every rank receives all
     * contributions, indexed by rank. The arrays returned are this rank's own copies.
     */
    byte[][] allGather(byte[] mine);

    /**
     * Rank {@code root} sends {@code dataOrNull} (must not be null there); every rank receives a copy of it. Other
     * ranks pass null (a non-null value there is ignored).
     */
    byte[] broadcast(byte[] dataOrNull, int root);

    /** Returns once every rank of the group has called it. */
    void barrier();

    /**
     * A bootstrap over a subset of this group, ranked by position in {@code ranks} (ranks of this group; for the
     * world bootstrap, world ranks). Every listed rank must call it with the same array, in the same order relative
     * to its other operations; ranks not listed must not call it. It is itself a collective of the listed ranks (so a
     * member that never arrives is reported by the deadline). Closing the subgroup does not close this bootstrap;
     * closing this bootstrap makes the subgroup unusable.
     */
    Bootstrap subgroup(int[] ranks);

    /**
     * Tells every rank of the job (all groups) that the job is broken: their pending and later operations fail with
     * {@link BootstrapAbortedException} carrying {@code reason}. Does not wait; does not close.
     */
    void abort(String reason);

    /**
     * A failure this rank already knows of (a lost peer, an abort), without waiting or communicating; empty while the
     * job looks healthy. Long device waits poll it so that a dead peer is reported promptly instead of at a deadline.
     */
    default java.util.Optional<BootstrapException> knownFailure() {
        return java.util.Optional.empty();
    }

    /**
     * Leaves the group. Ranks still waiting for this one get {@link PeerLostException}. Idempotent; later operations
     * on this bootstrap throw {@link IllegalStateException}.
     */
    @Override
    void close();
}
