package dev.ubuf.tests;

import dev.ubuf.bootstrap.LaunchEnvironment;
import dev.ubuf.bootstrap.TcpBootstrap;
import dev.ubuf.config.BufferSharing;
import dev.ubuf.config.UbufEnvironment;
import dev.ubuf.cuda.CudaContext;

/**
 * A rank in its own JVM for {@link VmmUserBufferProcessGpuTest}: joins over the TCP bootstrap (RANK, WORLD_SIZE,
 * LOCAL_RANK, MASTER_ADDR, MASTER_PORT, UBUF_JOB_TOKEN, UB_TIMEOUT), uses GPU LOCAL_RANK, runs the peer-copy check with
 * automatic sharing and prints {@code OK rank R sharing S}. Exits 1 on any failure.
 */
public final class VmmRankMain {
    private VmmRankMain() {
    }

    public static void main(String[] args) {
        try (TcpBootstrap boot = TcpBootstrap.connectFromEnvironment()) {
            CudaContext ctx = CudaContext.retainPrimary(LaunchEnvironment.fromEnvironment().localRank());
            try {
                BufferSharing used = P2pScenario.copyToPeerAndCheck(boot, ctx, UbufEnvironment.fromSystem(),
                        null, 3);
                System.out.println("OK rank " + boot.rank() + " sharing " + used);
            } finally {
                ctx.close();
            }
        } catch (Throwable t) {
            t.printStackTrace(System.out);
            System.out.flush();
            System.exit(1);
        }
        System.exit(0);
    }
}
