package dev.ubuf.posix;

import dev.ubuf.testutil.ChildJvm;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class UnixSocketFdChannelTest {
    private static final Duration GUARD = Duration.ofSeconds(20);

    @TempDir(cleanup = org.junit.jupiter.api.io.CleanupMode.ALWAYS)
    Path dir;

    private static byte[] randomContent(String what) {
        long seed = System.nanoTime();
        System.out.println(what + ": content seed " + seed);
        byte[] content = new byte[1 + new Random(seed).nextInt(4096)];
        new Random(seed).nextBytes(content);
        return content;
    }

    /** Reads everything through fd from the current offset. */
    private static byte[] readAll(OwnedFd fd, int expectedLength) {
        byte[] all = new byte[expectedLength + 1];
        int total = 0;
        int n;
        byte[] buffer = new byte[777];
        while ((n = fd.read(buffer)) > 0) {
            assertTrue(total + n <= all.length, "read more bytes than the file holds");
            System.arraycopy(buffer, 0, all, total, n);
            total += n;
        }
        return Arrays.copyOf(all, total);
    }

    @Test
    void passesAFileDescriptorBetweenThreads() throws Exception {
        byte[] content = randomContent("threads");
        Path file = Files.write(dir.resolve("data.bin"), content);
        Path socketPath = dir.resolve("fd.sock");
        long tag = 0x0123_4567_89AB_CDEFL;
        try (UnixSocketListener listener = UnixSocketListener.bind(socketPath)) {
            CompletableFuture<PeerCredentials> sender = CompletableFuture.supplyAsync(() -> {
                try (OwnedFd fd = OwnedFd.openReadOnly(file);
                     UnixSocketFdChannel channel = UnixSocketFdChannel.connect(socketPath, GUARD)) {
                    channel.sendFd(fd, tag);
                    return channel.peer();
                }
            });
            try (UnixSocketFdChannel channel = listener.accept(GUARD);
                 ReceivedFd received = channel.receiveFd(GUARD)) {
                assertEquals(tag, received.tag());
                // The received descriptor is a new number for the same open file.
                Files.delete(file); // the content must now come through the descriptor only
                assertArrayEquals(content, readAll(received.fd(), content.length));
                assertArrayEquals(content, Files.readAllBytes(Path.of("/proc/self/fd/" + received.fd().value())));

                PeerCredentials self = PeerCredentials.currentProcess();
                assertEquals(new PeerCredentials(self.pid(), self.uid(), self.gid()), channel.peer());
                assertEquals(ProcessHandle.current().pid(), channel.peer().pid());
                assertEquals(channel.peer(), sender.get(20, TimeUnit.SECONDS));
            }
        }
        assertFalse(Files.exists(socketPath), "closing the listener removes its socket file");
    }

    @Test
    void passesAFileDescriptorFromAnotherProcess() throws Exception {
        byte[] content = randomContent("process");
        Path file = Files.write(dir.resolve("data.bin"), content);
        Path socketPath = dir.resolve("fd.sock");
        long tag = new Random().nextLong();
        try (UnixSocketListener listener = UnixSocketListener.bind(socketPath);
             ChildJvm child = ChildJvm.start("fd-sender", FdSenderChildMain.class, Map.of(),
                     socketPath.toString(), file.toString(), Long.toString(tag));
             UnixSocketFdChannel channel = listener.accept(GUARD);
             ReceivedFd received = channel.receiveFd(GUARD)) {
            assertEquals(tag, received.tag());
            assertEquals(child.pid(), channel.peer().pid(), "SO_PEERCRED names the sending process");
            assertEquals(PeerCredentials.currentProcess().uid(), channel.peer().uid());
            assertEquals(0, child.waitFor(GUARD), child.output());
            // The sender has exited and the path is gone: only our descriptor keeps the file.
            Files.delete(file);
            assertArrayEquals(content, readAll(received.fd(), content.length));
        }
    }

    @Test
    void sendsSeveralDescriptorsInOrderAndDuplicates() throws IOException {
        Path a = Files.writeString(dir.resolve("a.txt"), "alpha");
        Path b = Files.writeString(dir.resolve("b.txt"), "bravo");
        Path socketPath = dir.resolve("s.sock");
        try (UnixSocketListener listener = UnixSocketListener.bind(socketPath);
             UnixSocketFdChannel client = UnixSocketFdChannel.connect(socketPath, GUARD);
             UnixSocketFdChannel server = listener.accept(GUARD);
             OwnedFd fa = OwnedFd.openReadOnly(a);
             OwnedFd fb = OwnedFd.openReadOnly(b)) {
            client.sendFd(fa, 1);
            client.sendFd(fb.value(), 2);
            try (ReceivedFd first = server.receiveFd(GUARD);
                 ReceivedFd second = server.receiveFd(GUARD);
                 OwnedFd copy = second.fd().duplicate()) {
                assertEquals(1, first.tag());
                assertEquals(2, second.tag());
                assertEquals("alpha", new String(readAll(first.fd(), 5)));
                assertTrue(copy.value() != second.fd().value());
                assertEquals("bravo", new String(readAll(copy, 5)), "a duplicate shares the open file");
            }
        }
    }

    @Test
    void receiveTimesOutWhenNothingIsSent() {
        Path socketPath = dir.resolve("t.sock");
        try (UnixSocketListener listener = UnixSocketListener.bind(socketPath);
             UnixSocketFdChannel client = UnixSocketFdChannel.connect(socketPath, GUARD);
             UnixSocketFdChannel server = listener.accept(GUARD)) {
            assertEquals(server.peer(), client.peer(), "both ends are this process");
            UnixSocketException e = assertThrows(UnixSocketException.class,
                    () -> server.receiveFd(Duration.ofMillis(200)));
            assertTrue(e.getMessage().contains("no file descriptor arrived"), e.getMessage());
        }
    }

    @Test
    void receiveReportsAPeerThatClosed() {
        Path socketPath = dir.resolve("c.sock");
        try (UnixSocketListener listener = UnixSocketListener.bind(socketPath);
             UnixSocketFdChannel server = acceptAfterClientCloses(listener, socketPath)) {
            UnixSocketException e = assertThrows(UnixSocketException.class, () -> server.receiveFd(GUARD));
            assertTrue(e.getMessage().contains("closed the connection"), e.getMessage());
        }
    }

    private static UnixSocketFdChannel acceptAfterClientCloses(UnixSocketListener listener, Path socketPath) {
        UnixSocketFdChannel.connect(socketPath, GUARD).close();
        return listener.accept(GUARD);
    }

    @Test
    void acceptTimesOutAndConnectGivesUpWithoutListener() {
        Path socketPath = dir.resolve("n.sock");
        try (UnixSocketListener listener = UnixSocketListener.bind(socketPath)) {
            assertThrows(UnixSocketException.class, () -> listener.accept(Duration.ofMillis(100)));
        }
        UnixSocketException e = assertThrows(UnixSocketException.class,
                () -> UnixSocketFdChannel.connect(dir.resolve("missing.sock"), Duration.ofMillis(100)));
        assertTrue(e.getMessage().contains("missing.sock"), e.getMessage());
    }

    @Test
    void tryAcceptAndTryConnectReturnEmptyOnTimeoutAndAConnectionOtherwise() throws IOException {
        Path socketPath = dir.resolve("t.sock");
        assertTrue(UnixSocketFdChannel.tryConnect(socketPath, Duration.ofMillis(60)).isEmpty(), "nobody listens yet");
        try (UnixSocketListener listener = UnixSocketListener.bind(socketPath)) {
            assertTrue(listener.tryAccept(Duration.ofMillis(60)).isEmpty(), "nobody connected yet");
            byte[] content = randomContent("try");
            Path file = Files.write(dir.resolve("t.bin"), content);
            try (UnixSocketFdChannel client = UnixSocketFdChannel.tryConnect(socketPath, GUARD).orElseThrow();
                 UnixSocketFdChannel server = listener.tryAccept(GUARD).orElseThrow();
                 OwnedFd fd = OwnedFd.openReadOnly(file)) {
                client.sendFd(fd, 9);
                try (ReceivedFd received = server.receiveFd(GUARD)) {
                    assertEquals(9, received.tag());
                    assertArrayEquals(content, Files.readAllBytes(Path.of("/proc/self/fd/" + received.fd().value())));
                }
            }
        }
        assertFalse(Files.exists(socketPath));
    }

    @Test
    void bindRefusesAnExistingPathAndOverlongPaths() throws IOException {
        Path taken = Files.createFile(dir.resolve("taken.sock"));
        PosixException e = assertThrows(PosixException.class, () -> UnixSocketListener.bind(taken));
        assertEquals(Libc.EADDRINUSE, e.errno());
        assertTrue(e.getMessage().contains("Address already in use"), e.getMessage());
        Path overlong = dir.resolve("x".repeat(120));
        assertThrows(IllegalArgumentException.class, () -> UnixSocketListener.bind(overlong));
        assertThrows(IllegalArgumentException.class, () -> UnixSocketFdChannel.connect(overlong, GUARD));
    }

    @Test
    void credentialsOfAnotherUserAreRejected() {
        PeerCredentials other = new PeerCredentials(1234, 4321, 4321);
        UnixSocketException e = assertThrows(UnixSocketException.class, () -> other.requireUid(1000));
        assertTrue(e.getMessage().contains("uid 4321") && e.getMessage().contains("uid 1000"), e.getMessage());
        assertEquals(other, other.requireUid(4321));
    }

    @Test
    void descriptorsCloseExactlyOnce() throws IOException {
        Path file = Files.writeString(dir.resolve("f.txt"), "x");
        OwnedFd fd = OwnedFd.openReadOnly(file);
        int number = fd.value();
        assertTrue(Files.exists(Path.of("/proc/self/fd/" + number)));
        fd.close();
        fd.close(); // second close: no-op, never closes a reused number
        assertFalse(fd.isOpen());
        assertThrows(IllegalStateException.class, fd::value);
        PosixException missing = assertThrows(PosixException.class, () -> OwnedFd.openReadOnly(dir.resolve("nope")));
        assertEquals(Libc.ENOENT, missing.errno());

        OwnedFd released = OwnedFd.openReadOnly(file);
        int raw = released.release();
        released.close(); // does nothing: the caller owns raw now
        assertTrue(Files.exists(Path.of("/proc/self/fd/" + raw)));
        OwnedFd.adopt(raw, "re-adopted").close();
    }
}
