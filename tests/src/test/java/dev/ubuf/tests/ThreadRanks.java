package dev.ubuf.tests;

import dev.ubuf.comm.Bootstrap;
import dev.ubuf.comm.InMemoryBootstrap;
import dev.ubuf.cuda.CudaContext;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/** One JVM, one thread per rank (GPU r), an in-memory bootstrap: runs a body on every rank and rethrows failures. */
final class ThreadRanks {
    interface Body {
        void run(int rank, Bootstrap bootstrap, CudaContext ctx) throws Exception;
    }

    private ThreadRanks() {
    }

    static void run(int tp, Duration timeout, Body body) throws Exception {
        InMemoryBootstrap.Group group = InMemoryBootstrap.group(tp, timeout);
        ExecutorService pool = Executors.newFixedThreadPool(tp);
        try {
            List<Future<?>> fs = new ArrayList<>();
            for (int r = 0; r < tp; r++) {
                int rank = r;
                fs.add(pool.submit(() -> {
                    try (Bootstrap b = group.rank(rank)) {
                        CudaContext ctx = CudaContext.retainPrimary(rank);
                        try {
                            body.run(rank, b, ctx);
                        } finally {
                            ctx.close();
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : fs) {
                try {
                    f.get(timeout.toMillis() * 3, TimeUnit.MILLISECONDS);
                } catch (java.util.concurrent.ExecutionException e) {
                    if (e.getCause() instanceof Exception ex) {
                        throw ex;
                    }
                    throw new AssertionError(e.getCause());
                }
            }
        } finally {
            pool.shutdownNow();
        }
    }
}
