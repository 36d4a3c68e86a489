package dev.ubuf.comm;

import dev.ubuf.bootstrap.Bootstrap;
import dev.ubuf.bootstrap.BootstrapException;
import dev.ubuf.bootstrap.InMemoryBootstrap;
import dev.ubuf.cuda.CudaContext;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.IntFunction;
import java.util.function.IntUnaryOperator;

/**
 * Runs a body on n ranks of one JVM (a thread each, rank i on GPU i, one in-memory bootstrap). When ranks fail it
 * throws the first rank's failure that is not a consequence of another's (a bootstrap collective that failed because a
 * peer left the protocol, a peer reported dead), with every other rank's failure suppressed in it: a rank whose check
 * fails while its peer waits in a collective then reports the check, not the peer's mismatch. The ranks are a TP
 * domain, or a world the body splits with {@link Bootstrap#subgroup} (e.g. into the TP and DP groups of
 * {@link dev.ubuf.bootstrap.DomainLayout}).
 */
public final class ThreadDomain {
    public interface Body {
        void run(int rank, Bootstrap bootstrap, CudaContext ctx) throws Exception;
    }

    private ThreadDomain() {
    }

    public static void run(int tp, Duration timeout, Body body) throws Exception {
        run(tp, rank -> rank, timeout, body);
    }

    /**
     * As {@link #run(int, Duration, Body)}, rank r on GPU {@code gpuOfRank(r)}. Ranks may share a GPU: user buffers,
     * flags and every plan-backed op work there (a peer's buffer is then on the same device), which lets one GPU
     * check the plans of a multi-rank domain; NCCL does not (it refuses two ranks of one communicator on one GPU,
     * see {@link TpCommunicator#nccl()}), and nothing about speed carries over.
     */
    public static void run(int tp, IntUnaryOperator gpuOfRank, Duration timeout, Body body) throws Exception {
        run(tp, gpuOfRank, timeout, body, CudaContext::retainPrimary);
    }

    /** As {@link #run(int, IntUnaryOperator, Duration, Body)}, each rank's context opened by {@code contexts}. */
    static void run(int tp, IntUnaryOperator gpuOfRank, Duration timeout, Body body, IntFunction<CudaContext> contexts)
            throws Exception {
        int[] gpus = new int[tp];
        for (int r = 0; r < tp; r++) {
            gpus[r] = gpuOfRank.applyAsInt(r);
            if (gpus[r] < 0) {
                throw new IllegalArgumentException("rank " + r + " mapped to GPU " + gpus[r]);
            }
        }
        InMemoryBootstrap.Group group = InMemoryBootstrap.group(tp, timeout);
        ExecutorService pool = Executors.newFixedThreadPool(tp);
        try {
            List<Future<?>> fs = new ArrayList<>();
            for (int r = 0; r < tp; r++) {
                int rank = r;
                fs.add(pool.submit(() -> {
                    try (Bootstrap b = group.rank(rank)) {
                        CudaContext ctx = contexts.apply(gpus[rank]);
                        try {
                            body.run(rank, b, ctx);
                        } catch (Exception | Error e) {
                            b.abort("rank " + rank + " failed: " + e);
                            throw e;
                        } finally {
                            if (ctx != null) {
                                ctx.close();
                            }
                        }
                    }
                    return null;
                }));
            }
            // Every rank's own waits have the timeout; this outer deadline only guards against a stuck thread. Once
            // a rank failed, the others (told through the bootstrap's abort) get one timeout more to end and report.
            long deadline = System.nanoTime() + 3 * timeout.toNanos();
            Throwable[] failures = new Throwable[tp];
            boolean failed = false;
            for (int r = 0; r < tp; r++) {
                try {
                    fs.get(r).get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                } catch (TimeoutException e) {
                    group.close();
                    IllegalStateException stuck = new IllegalStateException("rank " + r + "'s thread did not finish"
                            + " within " + (failed ? "its timeout after another rank failed"
                            : timeout.multipliedBy(3)));
                    if (!failed) {
                        throw stuck;
                    }
                    failures[r] = stuck;
                } catch (ExecutionException e) {
                    failures[r] = e.getCause();
                    if (!failed) {
                        failed = true;
                        deadline = Math.min(deadline, System.nanoTime() + timeout.toNanos());
                    }
                }
            }
            if (failed) {
                throw firstCause(failures);
            }
        } finally {
            pool.shutdownNow();
        }
    }

    /**
     * The failure to report: the first rank's that is not a consequence of another's, else the first; the other
     * ranks' failures are suppressed in it (an Error is wrapped, so the caller sees an Exception).
     */
    static Exception firstCause(Throwable[] failures) {
        int primary = -1;
        for (int r = 0; r < failures.length; r++) {
            if (failures[r] != null
                    && (primary < 0 || isConsequence(failures[primary]) && !isConsequence(failures[r]))) {
                primary = r;
            }
        }
        Exception thrown = failures[primary] instanceof Exception ex ? ex
                : new RuntimeException("rank " + primary + " failed: " + failures[primary], failures[primary]);
        for (int r = 0; r < failures.length; r++) {
            if (r != primary && failures[r] != null) {
                thrown.addSuppressed(new RuntimeException("rank " + r + " also failed: " + failures[r], failures[r]));
            }
        }
        return thrown;
    }

    /** A failure that another rank's causes: a bootstrap collective broken by a peer, or a peer reported failed. */
    private static boolean isConsequence(Throwable t) {
        return t instanceof BootstrapException || t instanceof PeerFailedException;
    }
}
