package dev.ubuf.tests;

import dev.ubuf.bootstrap.LaunchEnvironment;
import dev.ubuf.bootstrap.TcpBootstrap;
import dev.ubuf.config.UbufEnvironment;
import dev.ubuf.cuda.CudaContext;

import java.util.List;

/**
 * One rank of a multi-process test: {@code ProcessRankMain SCENARIO PARAMS...}, started once per GPU by
 * {@code ubuf-launch} (or by {@link ProcessRanks#runUnsupervised}). Reads the launch environment (RANK, LOCAL_RANK,
 * MASTER_ADDR...), connects the TCP bootstrap, retains the primary context of GPU LOCAL_RANK and runs the scenario.
 *
 * <p>ubuf settings come from the environment ({@link UbufEnvironment#fromSystem()}: UB_TIMEOUT, UB_DEBUG), except
 * that multicast is always off, as in the thread-mode tests: these tests run on shared hosts (UB_SKIPMC=1).
 *
 * <p>Exit codes: 0 passed; {@value PeerDeathDetected#EXIT_CODE} the rank detected a dead peer as a kill scenario
 * expects; {@value #EXIT_FAILED} any other failure (stack trace on stderr); {@value #EXIT_USAGE} bad arguments or
 * environment. After a failure nothing is closed and the JVM halts: a stream may be blocked on a flag that will never
 * be written, and freeing memory or releasing the context behind it could wait forever.
 */
public final class ProcessRankMain {
    static final int EXIT_FAILED = 1;
    static final int EXIT_USAGE = 2;

    private ProcessRankMain() {
    }

    public static void main(String[] args) {
        int code = run(args);
        System.out.flush();
        System.err.flush();
        if (code == 0) {
            System.exit(0);
        }
        Runtime.getRuntime().halt(code);
    }

    /** Where UBUF_TEST_GPU puts every rank on one GPU ({@link SharedGpuOpsGpuTest}); else GPU LOCAL_RANK. */
    static final String SHARED_GPU = "UBUF_TEST_GPU";

    private static int gpu(LaunchEnvironment launch) {
        String shared = System.getenv(SHARED_GPU);
        return shared == null || shared.isBlank() ? launch.localRank() : Integer.parseInt(shared.trim());
    }

    private static int run(String[] args) {
        RankScenario scenario;
        LaunchEnvironment launch;
        UbufEnvironment env;
        try {
            scenario = RankScenario.parse(List.of(args));
            launch = LaunchEnvironment.fromEnvironment();
            UbufEnvironment system = UbufEnvironment.fromSystem();
            env = new UbufEnvironment(true, system.timeout(), system.debug());
        } catch (IllegalArgumentException e) {
            System.err.println("ProcessRankMain: " + e.getMessage());
            return EXIT_USAGE;
        }
        TcpBootstrap boot;
        try {
            boot = TcpBootstrap.connectFromEnvironment();
        } catch (RuntimeException e) {
            System.err.println("rank " + launch.rank() + " could not join the job:");
            e.printStackTrace();
            return EXIT_FAILED;
        }
        int rank = boot.rank();
        CudaContext ctx = null;
        try {
            ctx = scenario.needsGpu() ? CudaContext.retainPrimary(gpu(launch)) : null;
            scenario.run(rank, boot, ctx, env);
        } catch (PeerDeathDetected e) {
            System.out.println(PeerDeathDetected.MARKER + " rank " + rank + ": " + e.getMessage());
            return PeerDeathDetected.EXIT_CODE;
        } catch (Exception | Error e) {
            System.err.println("rank " + rank + " FAILED in scenario " + scenario + ":");
            e.printStackTrace();
            try {
                boot.abort("rank " + rank + " failed: " + e); // the peers stop at once, with this reason
            } catch (RuntimeException ignored) {
                // the job is already broken; our own report is what matters
            }
            return EXIT_FAILED;
        }
        if (ctx != null) {
            ctx.close();
        }
        boot.close();
        System.out.println(passedLine(rank, scenario));
        return 0;
    }

    /** What a rank prints when it passed {@code scenario}: a whole job's, or each part of a {@link ScenarioBatch}. */
    static String passedLine(int rank, RankScenario scenario) {
        return "rank " + rank + " passed " + scenario;
    }
}
