package dev.ubuf.comm;

import dev.ubuf.bootstrap.Bootstrap;
import dev.ubuf.bootstrap.InMemoryBootstrap;
import dev.ubuf.cuda.CudaContext;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.IntUnaryOperator;

/**
 * Runs a body on n ranks of one JVM (a thread each, rank i on GPU i, one in-memory bootstrap); rethrows the first
 * failure. The ranks are a TP domain, or a world the body splits with {@link Bootstrap#subgroup} (e.g. into the TP
 * and DP groups of {@link dev.ubuf.bootstrap.DomainLayout}).
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
                        CudaContext ctx = CudaContext.retainPrimary(gpus[rank]);
                        try {
                            body.run(rank, b, ctx);
                        } catch (Exception | Error e) {
                            b.abort("rank " + rank + " failed: " + e);
                            throw e;
                        } finally {
                            ctx.close();
                        }
                    }
                    return null;
                }));
            }
            // Every rank's own waits have the timeout; this outer deadline only guards against a stuck thread.
            long deadline = System.nanoTime() + 3 * timeout.toNanos();
            for (Future<?> f : fs) {
                try {
                    f.get(Math.max(1, deadline - System.nanoTime()), java.util.concurrent.TimeUnit.NANOSECONDS);
                } catch (java.util.concurrent.TimeoutException e) {
                    group.close();
                    throw new IllegalStateException("a rank thread did not finish within " + timeout.multipliedBy(3));
                } catch (ExecutionException e) {
                    if (e.getCause() instanceof Exception ex) {
                        throw ex;
                    }
                    throw new RuntimeException(e.getCause());
                }
            }
        } finally {
            pool.shutdownNow();
        }
    }
}
