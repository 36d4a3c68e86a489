package dev.ubuf.bootstrap;

import dev.ubuf.testutil.CapturedLog;
import dev.ubuf.testutil.Loopback;
import dev.ubuf.testutil.RankThreads;
import org.junit.jupiter.api.AfterEach;
import dev.ubuf.testutil.OutputShownOnFailure;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.io.DataInputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The TCP bootstrap with ranks as threads of this JVM, over loopback. */
@ExtendWith(OutputShownOnFailure.class) // refused peers and lost ranks log warnings on purpose
class TcpBootstrapTest {
    static final String TOKEN = "0123456789abcdef0123456789abcdef";
    private static final BootstrapConfig LONG = new BootstrapConfig(Duration.ofSeconds(30));
    /** For a trusted single-user host: no job token needed. */
    private static final BootstrapConfig TRUSTED_HOST = LONG.withAllowNoToken(true);

    /** Rank 0 warns about every peer it refuses and every rank it loses; here that is expected, so kept quiet. */
    private final CapturedLog log = CapturedLog.of("dev.ubuf.bootstrap");

    @AfterEach
    void stopCapturing() {
        log.close();
    }

    static LaunchEnvironment env(int rank, int size, int port, String token) {
        return new LaunchEnvironment(rank, size, rank, "127.0.0.1", port, token);
    }

    @Test
    void collectivesOverLoopback() throws Exception {
        long seed = System.nanoTime();
        System.out.println("TcpBootstrapTest seed " + seed);
        int port = Loopback.freePort();
        RankThreads.run(4, rank -> {
            try (TcpBootstrap b = TcpBootstrap.connect(env(rank, 4, port, TOKEN), LONG)) {
                assertEquals(rank, b.rank());
                assertEquals(4, b.size());
                CollectiveScenario.run(b, seed, 4);
                b.barrier(); // all done before anyone closes
            }
            return null;
        }).forEach(RankThreads.Outcome::get);
    }

    @Test
    void peersWithAWrongOrMissingTokenAreRejectedAndDoNotCount() throws Exception {
        int port = Loopback.freePort();
        CompletableFuture<TcpBootstrap> root = CompletableFuture.supplyAsync(
                () -> TcpBootstrap.connect(env(0, 2, port, TOKEN), LONG));
        BootstrapRejectedException wrong = assertThrows(BootstrapRejectedException.class,
                () -> TcpBootstrap.connect(env(1, 2, port, "ffffffffffffffffffffffffffffffff"), LONG));
        assertTrue(wrong.reason().contains("wrong job token"), wrong.reason());
        BootstrapRejectedException missing = assertThrows(BootstrapRejectedException.class,
                () -> TcpBootstrap.connect(env(1, 2, port, ""), TRUSTED_HOST)); // it may start, but not join
        assertTrue(missing.reason().contains("missing job token"), missing.reason());
        BootstrapRejectedException range = assertThrows(BootstrapRejectedException.class,
                () -> TcpBootstrap.connect(new LaunchEnvironment(1, 3, 1, "127.0.0.1", port, TOKEN), LONG));
        assertTrue(range.reason().contains("world size 3"), range.reason());
        assertTrue(rawHello(port, new Frame.Hello(Wire.PROTOCOL_VERSION, 5, 2, TOKEN)).contains("outside 1..1"));
        assertTrue(rawHello(port, new Frame.Hello(Wire.PROTOCOL_VERSION, 0, 2, TOKEN)).contains("second rank 0"));
        assertTrue(rawHello(port, new Frame.Hello(99, 1, 2, TOKEN)).contains("protocol version 99"));
        try (Socket stranger = new Socket(InetAddress.getLoopbackAddress(), port)) { // e.g. an HTTP probe
            stranger.getOutputStream().write("GET / HTTP/1.1\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            Frame reply = Wire.read(new DataInputStream(stranger.getInputStream()), Wire.MAX_FRAME_BYTES);
            assertTrue(((Frame.Rejected) reply).reason().contains("no valid hello"), reply.toString());
        }
        // The rejected peers did not take rank 1: the real one still joins.
        try (TcpBootstrap rank1 = TcpBootstrap.connect(env(1, 2, port, TOKEN), LONG);
             TcpBootstrap rank0 = root.get(30, TimeUnit.SECONDS)) {
            BootstrapRejectedException duplicate = assertThrows(BootstrapRejectedException.class,
                    () -> TcpBootstrap.connect(env(1, 2, port, TOKEN), LONG));
            assertTrue(duplicate.reason().contains("already connected"), duplicate.reason());
            RankThreads.run(2, rank -> (rank == 0 ? rank0 : rank1).allGather(new byte[]{(byte) rank}))
                    .forEach(o -> assertEquals(2, o.get().length));
        }
        assertEquals(1, log.containing("refused bootstrap peer").stream()
                .filter(m -> m.contains("wrong job token")).count(), log.messages().toString());
    }

    /** Sends one hello on a raw socket and returns the root's rejection reason. */
    private static String rawHello(int port, Frame.Hello hello) throws IOException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (true) { // the root may still be starting
            try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), port)) {
                socket.getOutputStream().write(Wire.encode(hello));
                Frame reply = Wire.read(new DataInputStream(socket.getInputStream()), Wire.MAX_FRAME_BYTES);
                return ((Frame.Rejected) reply).reason();
            } catch (java.net.ConnectException e) {
                if (System.nanoTime() > deadline) {
                    throw e;
                }
                Thread.onSpinWait();
            }
        }
    }

    @Test
    void withoutAJobTokenNoRankStartsUnlessTheHostIsDeclaredTrusted() throws Exception {
        int port = Loopback.freePort();
        for (int rank : new int[]{0, 1}) {
            BootstrapException e = assertThrows(BootstrapException.class,
                    () -> TcpBootstrap.connect(env(rank, 2, port, ""), LONG));
            assertEquals(rank, e.rank());
            assertTrue(e.getMessage().contains("UBUF_JOB_TOKEN is not set")
                    && e.getMessage().contains("UBUF_ALLOW_NO_TOKEN=1"), e.getMessage());
        }
        // Refused before touching the network: rank 0 never listened, so the port is still free.
        try (ServerSocket stillFree = new ServerSocket(port, 1, InetAddress.getByName("127.0.0.1"))) {
            assertEquals(port, stillFree.getLocalPort());
        }
    }

    @Test
    void onATrustedHostARootWithoutTokenAdmitsOnlyPeersWithoutToken() throws Exception {
        int port = Loopback.freePort();
        CompletableFuture<TcpBootstrap> root = CompletableFuture.supplyAsync(
                () -> TcpBootstrap.connect(env(0, 2, port, ""), TRUSTED_HOST));
        BootstrapRejectedException e = assertThrows(BootstrapRejectedException.class,
                () -> TcpBootstrap.connect(env(1, 2, port, TOKEN), LONG));
        assertTrue(e.reason().contains("without a job token"), e.reason());
        try (TcpBootstrap rank1 = TcpBootstrap.connect(env(1, 2, port, ""), TRUSTED_HOST);
             TcpBootstrap rank0 = root.get(30, TimeUnit.SECONDS)) {
            assertEquals(1, rank1.rank());
            assertEquals(port, rank0.listeningPort());
        }
        assertEquals(1, log.containing("running without a job token").size(), log.messages().toString());
    }

    @Test
    void aRankThatNeverJoinsIsNamedByEveryoneAtTheDeadline() throws Exception {
        int port = Loopback.freePort();
        BootstrapConfig short_ = new BootstrapConfig(Duration.ofSeconds(2));
        List<RankThreads.Outcome<Object>> outcomes = RankThreads.run(new int[]{0, 1}, rank ->
                TcpBootstrap.connect(env(rank, 3, port, TOKEN), short_));
        for (RankThreads.Outcome<Object> outcome : outcomes) {
            BootstrapTimeoutException e = outcome.errorOf(BootstrapTimeoutException.class);
            assertEquals(List.of(2), e.missingRanks(), e.getMessage());
            assertEquals(outcome.rank(), e.rank());
            assertTrue(e.getMessage().contains("connect #0 in world"), e.getMessage());
        }
    }

    @Test
    void aMissingRootIsNamedAtTheDeadline() {
        BootstrapTimeoutException e = assertThrows(BootstrapTimeoutException.class,
                () -> TcpBootstrap.connect(env(1, 2, Loopback.freePort(), TOKEN), new BootstrapConfig(Duration.ofMillis(600))));
        assertEquals(List.of(0), e.missingRanks());
        assertTrue(e.getMessage().contains("could not reach rank 0"), e.getMessage());
    }

    @Test
    void aRankThatClosesIsReportedLostPromptlyAndAbortCarriesTheReason() throws Exception {
        int port = Loopback.freePort();
        CountDownLatch joined = new CountDownLatch(3);
        List<RankThreads.Outcome<String>> outcomes = RankThreads.run(3, rank -> {
            try (TcpBootstrap b = TcpBootstrap.connect(env(rank, 3, port, TOKEN), LONG)) {
                b.barrier();
                joined.countDown();
                if (rank == 2) {
                    return "closed"; // leaves while the others wait in the next barrier
                }
                PeerLostException lost = assertThrows(PeerLostException.class, b::barrier);
                assertEquals(2, lost.lostRank());
                // Ops that do not need rank 2 still work; an abort then reaches the other rank.
                try (Bootstrap pair = b.subgroup(new int[]{0, 1})) {
                    pair.barrier();
                    if (rank == 1) {
                        b.abort("rank 1 saw a bad tensor");
                    }
                    BootstrapAbortedException aborted = assertThrows(BootstrapAbortedException.class, pair::barrier);
                    assertEquals(1, aborted.originRank());
                    return aborted.reason();
                }
            }
        });
        assertEquals("closed", outcomes.get(2).get());
        assertEquals("rank 1 saw a bad tensor", outcomes.get(0).get());
        assertEquals("rank 1 saw a bad tensor", outcomes.get(1).get());
    }

    @Test
    void mismatchedCollectivesAreDetectedAcrossTheWire() throws Exception {
        int port = Loopback.freePort();
        List<RankThreads.Outcome<Object>> outcomes = RankThreads.run(2, rank -> {
            try (TcpBootstrap b = TcpBootstrap.connect(env(rank, 2, port, TOKEN), LONG)) {
                if (rank == 0) {
                    b.broadcast(new byte[]{1}, 0);
                } else {
                    b.barrier();
                }
                return null;
            }
        });
        for (RankThreads.Outcome<Object> outcome : outcomes) {
            CollectiveMismatchException e = outcome.errorOf(CollectiveMismatchException.class);
            assertTrue(e.getMessage().contains("broadcast from root 0") && e.getMessage().contains("barrier"),
                    e.getMessage());
        }
    }

    @Test
    void threadsStopOnClose() throws Exception {
        int port = Loopback.freePort();
        RankThreads.run(2, rank -> {
            try (TcpBootstrap b = TcpBootstrap.connect(env(rank, 2, port, TOKEN), LONG)) {
                b.barrier();
            }
            return null;
        }).forEach(RankThreads.Outcome::get);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (bootstrapThreads() > 0 && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertEquals(0, bootstrapThreads(), "ubuf-bootstrap-* threads left after close: " + threadNames());
    }

    private static long bootstrapThreads() {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.getName().startsWith("ubuf-bootstrap-") && !t.getName().contains("in-memory"))
                .filter(Thread::isAlive).count();
    }

    private static List<String> threadNames() {
        return Thread.getAllStackTraces().keySet().stream().map(Thread::getName)
                .filter(n -> n.startsWith("ubuf-bootstrap-")).toList();
    }
}
