package dev.ubuf.tests;

import dev.ubuf.bootstrap.Bootstrap;
import dev.ubuf.bootstrap.TcpBootstrap;

/**
 * The survivor's expected outcome in the kill scenarios: it noticed by itself that a peer died, with an error naming
 * that peer. {@link ProcessRankMain} turns it into {@link #EXIT_CODE}, so the test can tell "detected" from "failed".
 */
final class PeerDeathDetected extends RuntimeException {
    /** Exit code of a survivor that detected the death as expected; distinct from every ordinary failure. */
    static final int EXIT_CODE = 42;
    /** Exit code the dying rank halts with. */
    static final int DYING_RANK_EXIT_CODE = 7;
    /** What the survivor prints (then the error's class and message), the line the tests look for. */
    static final String MARKER = "PEER DEATH DETECTED:";

    PeerDeathDetected(RuntimeException reported) {
        super(reported.getClass().getSimpleName() + ": " + reported.getMessage(), reported);
    }

    /**
     * The kill scenarios halt a JVM, which in thread mode would be the test JVM itself: refuse anything but a TCP
     * bootstrap (one process per rank).
     */
    static void requireOneProcessPerRank(Bootstrap bootstrap, String scenario) {
        if (!(bootstrap instanceof TcpBootstrap)) {
            throw new IllegalStateException("scenario '" + scenario + "' halts a rank's JVM: run it with one process "
                    + "per rank (ProcessRankMain), never with a thread per rank");
        }
        if (bootstrap.size() != 2) {
            throw new IllegalArgumentException("scenario '" + scenario + "' needs exactly 2 ranks, got "
                    + bootstrap.size());
        }
    }

    /** Prints a line before halting: the JVM's own buffers are not flushed by halt. */
    static void haltDyingRank(String line) {
        System.out.println(line);
        System.out.flush();
        System.err.flush();
        Runtime.getRuntime().halt(DYING_RANK_EXIT_CODE);
    }
}
