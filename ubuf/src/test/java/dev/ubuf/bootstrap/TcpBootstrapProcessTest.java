package dev.ubuf.bootstrap;

import dev.ubuf.testutil.CapturedLog;
import dev.ubuf.testutil.ChildJvm;
import dev.ubuf.testutil.Loopback;
import org.junit.jupiter.api.AfterEach;
import dev.ubuf.testutil.OutputShownOnFailure;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The TCP bootstrap across real processes: this JVM is one rank, child JVMs are the others. */
@ExtendWith(OutputShownOnFailure.class) // refused peers and lost ranks log warnings on purpose
class TcpBootstrapProcessTest {
    private static final Duration GUARD = Duration.ofSeconds(40);

    /** This JVM's rank 0 warns about the ranks it loses; here that is expected, so kept quiet. */
    private final CapturedLog log = CapturedLog.of("dev.ubuf.bootstrap");

    @AfterEach
    void stopCapturing() {
        log.close();
    }

    private static Map<String, String> childEnv(int rank, int size, int port, String timeoutSeconds) {
        Map<String, String> env = new HashMap<>(TcpBootstrapTest.env(rank, size, port, TcpBootstrapTest.TOKEN)
                .toEnvironment());
        env.put(BootstrapConfig.TIMEOUT_VARIABLE, timeoutSeconds);
        return env;
    }

    private static List<ChildJvm> startChildren(int size, int port, int[] ranks, String... scenario) {
        List<ChildJvm> children = new ArrayList<>();
        for (int rank : ranks) {
            children.add(ChildJvm.start("rank" + rank, BootstrapChildMain.class,
                    childEnv(rank, size, port, "30"), scenario));
        }
        return children;
    }

    @Test
    void collectivesAcrossFourProcesses() throws Exception {
        long seed = System.nanoTime();
        System.out.println("TcpBootstrapProcessTest seed " + seed);
        int port = Loopback.freePort();
        List<ChildJvm> children = startChildren(4, port, new int[]{1, 2, 3}, "collectives", Long.toString(seed), "3");
        try (TcpBootstrap root = TcpBootstrap.connect(TcpBootstrapTest.env(0, 4, port, TcpBootstrapTest.TOKEN),
                new BootstrapConfig(Duration.ofSeconds(30)))) {
            CollectiveScenario.run(root, seed, 3);
            for (ChildJvm child : children) {
                assertEquals(0, child.waitFor(GUARD), child.output());
                assertTrue(child.output().contains("OK rank"), child.output());
            }
        } finally {
            children.forEach(ChildJvm::close);
        }
    }

    @Test
    void aKilledRankIsReportedLostOnEveryOtherRank() throws Exception {
        int port = Loopback.freePort();
        try (ChildJvm waiter = ChildJvm.start("rank1", BootstrapChildMain.class, childEnv(1, 3, port, "30"),
                "wait-for-loss", "2");
             ChildJvm victim = ChildJvm.start("rank2", BootstrapChildMain.class, childEnv(2, 3, port, "30"),
                     "sleep");
             TcpBootstrap root = TcpBootstrap.connect(TcpBootstrapTest.env(0, 3, port, TcpBootstrapTest.TOKEN),
                     new BootstrapConfig(Duration.ofSeconds(30)))) {
            root.barrier();
            victim.awaitLine(line -> line.startsWith("READY"), GUARD);
            waiter.awaitLine(line -> line.startsWith("READY"), GUARD);
            CompletableFuture<byte[][]> pending = CompletableFuture.supplyAsync(() -> root.allGather(new byte[1]));
            victim.process().destroyForcibly();
            Throwable failure = assertThrows(java.util.concurrent.ExecutionException.class,
                    () -> pending.get(GUARD.toSeconds(), TimeUnit.SECONDS)).getCause();
            PeerLostException lost = assertInstanceOf(PeerLostException.class, failure);
            assertEquals(2, lost.lostRank());
            assertEquals(0, lost.rank());
            assertEquals(0, waiter.waitFor(GUARD), waiter.output());
            assertTrue(waiter.output().contains("LOST 2 seen by rank 1"), waiter.output());
            assertEquals(1, log.containing("lost rank 2").size(), log.messages().toString());
        }
    }

    @Test
    void aKilledRootIsReportedLostOnEveryOtherRank() throws Exception {
        int port = Loopback.freePort();
        try (ChildJvm root = ChildJvm.start("rank0", BootstrapChildMain.class, childEnv(0, 3, port, "30"), "sleep");
             ChildJvm waiter = ChildJvm.start("rank2", BootstrapChildMain.class, childEnv(2, 3, port, "30"),
                     "wait-for-loss", "0");
             TcpBootstrap rank1 = TcpBootstrap.connect(TcpBootstrapTest.env(1, 3, port, TcpBootstrapTest.TOKEN),
                     new BootstrapConfig(Duration.ofSeconds(30)))) {
            rank1.barrier();
            root.awaitLine(line -> line.startsWith("READY"), GUARD);
            // The waiter must be past its barrier too: killed earlier, the root may take the barrier's result to
            // rank 2 with it, and rank 2 would fail in the barrier instead of in the wait this test is about.
            waiter.awaitLine(line -> line.startsWith("READY"), GUARD);
            root.process().destroyForcibly();
            PeerLostException lost = assertThrows(PeerLostException.class, () -> rank1.allGather(new byte[1]));
            assertEquals(0, lost.lostRank());
            assertEquals(0, waiter.waitFor(GUARD), waiter.output());
            assertTrue(waiter.output().contains("LOST 0 seen by rank 2"), waiter.output());
        }
    }

    @Test
    void aHungRootIsReportedByTheOthersOwnDeadline() throws Exception {
        int port = Loopback.freePort();
        try (ChildJvm root = ChildJvm.start("rank0", BootstrapChildMain.class, childEnv(0, 2, port, "30"), "sleep");
             TcpBootstrap rank1 = TcpBootstrap.connect(TcpBootstrapTest.env(1, 2, port, TcpBootstrapTest.TOKEN),
                     new BootstrapConfig(Duration.ofSeconds(2)))) {
            rank1.barrier();
            root.awaitLine(line -> line.startsWith("READY"), GUARD);
            // SIGSTOP: the root's process lives (no end of stream) but answers nothing, like a hung JVM.
            new ProcessBuilder("kill", "-STOP", Long.toString(root.pid())).start().waitFor();
            BootstrapTimeoutException e = assertThrows(BootstrapTimeoutException.class, rank1::barrier);
            assertEquals(1, e.rank());
            assertTrue(e.getMessage().contains("barrier #2 in world") && e.getMessage().contains("rank 0"),
                    e.getMessage());
        }
    }

    private static <T> T assertInstanceOf(Class<T> type, Throwable t) {
        if (!type.isInstance(t)) {
            throw new AssertionError("expected " + type.getSimpleName() + " but got " + t, t);
        }
        return type.cast(t);
    }
}
