package dev.ubuf.bootstrap;

import dev.ubuf.testutil.CapturedLog;
import dev.ubuf.testutil.Loopback;
import dev.ubuf.testutil.RankThreads;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Rank 0 of a TCP bootstrap under connections that are not ranks of its job: without the token, with a wrong one,
 * idle, slow, or sending garbage. Each is refused with a reason, and the job's ranks still meet.
 */
class TcpBootstrapStrangersTest {
    private static final String TOKEN = TcpBootstrapTest.TOKEN;
    /** Hang guard, not a timing assertion. */
    private static final Duration GUARD = Duration.ofSeconds(30);
    /** A short handshake deadline, so the test does not wait long for idle strangers to be dropped. */
    private static final BootstrapConfig CONFIG =
            new BootstrapConfig(GUARD).withHandshakeTimeout(Duration.ofSeconds(1));

    private final CapturedLog log = CapturedLog.of("dev.ubuf.bootstrap");

    @AfterEach
    void stopCapturing() {
        log.close();
    }

    private static LaunchEnvironment env(int rank, int port) {
        return TcpBootstrapTest.env(rank, 3, port, TOKEN);
    }

    @Test
    void idleStrangersCannotKeepTheRanksOut() throws Exception {
        int port = Loopback.freePort();
        int strangers = TcpBootstrap.HANDSHAKE_THREADS + TcpBootstrap.HANDSHAKE_QUEUE + 20;
        // Long enough that the strangers are all in before the first ones are dropped, even on a loaded machine.
        BootstrapConfig config = CONFIG.withHandshakeTimeout(Duration.ofSeconds(3));
        CompletableFuture<TcpBootstrap> root = CompletableFuture.supplyAsync(
                () -> TcpBootstrap.connect(env(0, port), config));
        List<Socket> idle = new ArrayList<>();
        AtomicInteger busy = new AtomicInteger();
        try {
            for (int i = 0; i < strangers; i++) {
                idle.add(connect(port)); // and send nothing
            }
            // The ranks arrive while every handshake thread and place in line is taken by an idle stranger.
            ranksMeetAround(port, config, root, () -> {
                for (Socket stranger : idle) {
                    switch (replyTo(stranger)) {
                        case Frame.Busy b -> busy.incrementAndGet();
                        case Frame.Rejected r -> assertTrue(r.reason().contains("no hello within 3 s"), r.reason());
                        case Frame other -> fail("a stranger got " + other);
                    }
                    assertEquals(-1, stranger.getInputStream().read(), "rank 0 closes a refused connection");
                }
            });
        } finally {
            for (Socket s : idle) {
                s.close();
            }
        }
        assertTrue(busy.get() > 0, "strangers beyond the handshake threads and the line are turned away at once");
        assertTrue(log.containing("refused").size() < strangers / 2,
                "strangers cannot flood the log: " + log.messages().size() + " lines");
    }

    @Test
    void aStrangerThatTalksSlowlyIsDroppedAtTheHandshakeDeadline() throws Exception {
        int port = Loopback.freePort();
        CompletableFuture<TcpBootstrap> root = CompletableFuture.supplyAsync(
                () -> TcpBootstrap.connect(env(0, port), CONFIG));
        try (Socket slow = connect(port)) {
            // Announces a 4000-byte hello, then sends a byte every 100 ms: 400 s to finish, while no single read
            // waits long. Only a deadline for the whole handshake ends it within the guard.
            Thread dribbler = Thread.ofPlatform().daemon().name("test-dribbler").start(() -> {
                try {
                    OutputStream out = slow.getOutputStream();
                    out.write(new byte[]{0, 0, 0x0f, (byte) 0xa0});
                    for (int i = 0; i < 4000; i++) {
                        out.write(1);
                        Thread.sleep(100);
                    }
                } catch (IOException | InterruptedException e) {
                    // rank 0 closed the connection: what the test waits for
                }
            });
            ranksMeetAround(port, CONFIG, root, () -> {
                Frame.Rejected rejected = assertInstanceOf(Frame.Rejected.class, replyTo(slow));
                assertTrue(rejected.reason().contains("no hello within 1 s"), rejected.reason());
            });
            dribbler.join(GUARD.toMillis());
            assertFalse(dribbler.isAlive(), "the slow stranger's connection is closed");
        }
    }

    /** Bytes a stranger sends first, and what rank 0's refusal must say. */
    private record Knock(byte[] bytes, String expectedReason) {
    }

    @Test
    void garbledForeignOrUnauthenticatedFirstFramesAreRefused() throws Exception {
        int port = Loopback.freePort();
        List<Knock> knocks = List.of(
                new Knock(lengthOnly(Integer.MAX_VALUE), "frame length 2147483647 outside 1..4096"),
                new Knock(lengthOnly(Wire.MAX_HELLO_BYTES + 1), "frame length 4097 outside 1..4096"),
                new Knock(lengthOnly(-1), "frame length -1 outside 1..4096"),
                new Knock(frame(new byte[]{0x7f, 1, 2, 3, 4, 5, 6, 7}), "unknown frame type 127"),
                new Knock(helloWithMagic(0x48545450), "not a ubuf bootstrap hello"),
                new Knock(Wire.encode(new Frame.Abort("stop this job")), "expected a hello, got Abort"),
                new Knock(Wire.encode(new Frame.Contribute(Frame.WORLD, new int[]{0, 1, 2}, 1, OpKind.ALL_GATHER, -1,
                        1000, new byte[]{9})), "expected a hello, got Contribute"),
                new Knock(Wire.encode(new Frame.Hello(Wire.PROTOCOL_VERSION, 2, 3, "")), "missing job token"),
                new Knock(Wire.encode(new Frame.Hello(Wire.PROTOCOL_VERSION, 2, 3, "f".repeat(32))),
                        "wrong job token"),
                new Knock(Wire.encode(new Frame.Hello(Wire.PROTOCOL_VERSION, 1, 3, TOKEN + "0")), "wrong job token"));
        CompletableFuture<TcpBootstrap> root = CompletableFuture.supplyAsync(
                () -> TcpBootstrap.connect(env(0, port), CONFIG));
        ranksMeetAround(port, CONFIG, root, () -> {
            for (Knock knock : knocks) {
                try (Socket stranger = connect(port)) {
                    stranger.getOutputStream().write(knock.bytes());
                    Frame.Rejected rejected = assertInstanceOf(Frame.Rejected.class, replyTo(stranger));
                    assertTrue(rejected.reason().contains(knock.expectedReason()),
                            knock.expectedReason() + " -> " + rejected.reason());
                }
            }
        });
        assertEquals(knocks.size(), log.containing("refused bootstrap peer").size(), log.messages().toString());
    }

    /** What rank 0 checks while the job runs. */
    private interface Check {
        void run() throws Exception;
    }

    /**
     * Ranks 1 and 2 join the job whose rank 0 is {@code root}, and all three pass a barrier; then rank 0 runs
     * {@code check} while the others already wait in an allGather, which must then give every rank all three
     * contributions.
     */
    private static void ranksMeetAround(int port, BootstrapConfig config, CompletableFuture<TcpBootstrap> root,
                                        Check check) throws InterruptedException {
        List<RankThreads.Outcome<byte[][]>> outcomes = RankThreads.run(3, rank -> {
            try (TcpBootstrap b = rank == 0 ? root.get(GUARD.toSeconds(), TimeUnit.SECONDS)
                    : TcpBootstrap.connect(env(rank, port), config)) {
                b.barrier();
                if (rank == 0) {
                    check.run();
                }
                byte[][] all = b.allGather(new byte[]{(byte) rank});
                b.barrier(); // nobody leaves while another still waits for the allGather
                return all;
            }
        });
        for (RankThreads.Outcome<byte[][]> outcome : outcomes) {
            assertArrayEquals(new byte[][]{{0}, {1}, {2}}, outcome.get());
        }
    }

    /** Connects to rank 0, retrying while it is not listening yet. */
    private static Socket connect(int port) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + GUARD.toNanos();
        while (true) {
            try {
                return new Socket(InetAddress.getLoopbackAddress(), port);
            } catch (ConnectException e) {
                if (System.nanoTime() > deadline) {
                    throw e;
                }
                Thread.sleep(10);
            }
        }
    }

    /** The one frame rank 0 answers a refused connection with. */
    private static Frame replyTo(Socket socket) throws IOException {
        socket.setSoTimeout((int) GUARD.toMillis());
        return Wire.read(new DataInputStream(socket.getInputStream()), Wire.MAX_FRAME_BYTES);
    }

    private static byte[] lengthOnly(int length) {
        return new byte[]{(byte) (length >>> 24), (byte) (length >>> 16), (byte) (length >>> 8), (byte) length};
    }

    private static byte[] frame(byte[] body) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        DataOutputStream out = new DataOutputStream(bytes);
        out.writeInt(body.length);
        out.write(body);
        return bytes.toByteArray();
    }

    /** A hello frame whose magic number is {@code magic} instead of ubuf's. */
    private static byte[] helloWithMagic(int magic) {
        byte[] hello = Wire.encode(new Frame.Hello(Wire.PROTOCOL_VERSION, 2, 3, TOKEN));
        hello[5] = (byte) (magic >>> 24);
        hello[6] = (byte) (magic >>> 16);
        hello[7] = (byte) (magic >>> 8);
        hello[8] = (byte) magic;
        return hello;
    }
}
