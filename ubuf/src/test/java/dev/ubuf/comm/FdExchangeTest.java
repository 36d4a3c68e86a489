package dev.ubuf.comm;

import dev.ubuf.bootstrap.Bootstrap;
import dev.ubuf.config.BufferSharing;
import dev.ubuf.bootstrap.BootstrapConfig;
import dev.ubuf.bootstrap.InMemoryBootstrap;
import dev.ubuf.bootstrap.LaunchEnvironment;
import dev.ubuf.bootstrap.TcpBootstrap;
import dev.ubuf.posix.OwnedFd;
import dev.ubuf.posix.UnixSocketFdChannel;
import dev.ubuf.posix.UnixSocketListener;
import dev.ubuf.testutil.Loopback;
import dev.ubuf.testutil.RankThreads;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The file-descriptor exchange behind VMM user-buffer sharing, with plain files instead of GPU memory: ranks are
 * threads over an in-memory bootstrap; each shares a file of its own and reads every peer's through what it received.
 */
class FdExchangeTest {
    private static final Duration LONG = Duration.ofSeconds(20);
    private static final Duration SHORT = Duration.ofSeconds(1);
    private static final String TOKEN = "0123456789abcdef0123456789abcdef";

    @TempDir(cleanup = CleanupMode.ALWAYS)
    Path dir;

    private Path sockets() throws IOException {
        return Files.createDirectories(dir.resolve("s"));
    }

    /** Every file of ours this process still has open (descriptors whose link points into the temp dir). */
    private List<String> openFilesUnder(Path root) throws IOException {
        List<String> open = new ArrayList<>();
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            for (Path fd : fds.toList()) {
                try {
                    String target = Files.readSymbolicLink(fd).toString();
                    if (target.startsWith(root.toString())) {
                        open.add(fd.getFileName() + " -> " + target);
                    }
                } catch (IOException gone) {
                    // the descriptor of the listing itself, closed by now
                }
            }
        }
        return open;
    }

    private long openSockets() throws IOException {
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            return fds.filter(fd -> {
                try {
                    return Files.readSymbolicLink(fd).toString().startsWith("socket:");
                } catch (IOException gone) {
                    return false;
                }
            }).count();
        }
    }

    private byte[][] writeRankFiles(int n, long seed) throws IOException {
        byte[][] contents = new byte[n][];
        for (int r = 0; r < n; r++) {
            Random random = new Random(seed + r);
            contents[r] = new byte[1 + random.nextInt(3000)];
            random.nextBytes(contents[r]);
            Files.write(dir.resolve("rank" + r + ".bin"), contents[r]);
        }
        return contents;
    }

    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {2, 3, 4})
    void everyRankReadsEveryPeersFileThroughTheDescriptorItReceived(int n) throws Exception {
        long seed = System.nanoTime();
        System.out.println("FdExchangeTest " + n + " ranks, content seed " + seed);
        byte[][] contents = writeRankFiles(n, seed);
        Path sockets = sockets();
        long socketsBefore = openSockets();
        try (InMemoryBootstrap.Group group = InMemoryBootstrap.group(n, LONG)) {
            List<RankThreads.Outcome<Set<Integer>>> outcomes = RankThreads.run(n, rank -> {
                Bootstrap b = group.rank(rank);
                Path mine = dir.resolve("rank" + rank + ".bin");
                Map<Integer, OwnedFd> received;
                try (OwnedFd fd = OwnedFd.openReadOnly(mine)) {
                    received = FdExchange.exchange(b, fd.value(), sockets, LONG);
                }
                try {
                    b.barrier(); // every rank has all it needs: delete the files, so only descriptors reach them
                    Files.delete(mine);
                    b.barrier();
                    for (var entry : received.entrySet()) {
                        byte[] got = Files.readAllBytes(Path.of("/proc/self/fd/" + entry.getValue().value()));
                        assertArrayEquals(contents[entry.getKey()], got, "rank " + rank + " reading rank "
                                + entry.getKey() + "'s file");
                    }
                    return received.keySet();
                } finally {
                    for (OwnedFd fd : received.values()) {
                        fd.close(); // throws (EBADF) if anything had closed it already
                        assertFalse(fd.isOpen());
                    }
                }
            });
            for (var outcome : outcomes) {
                Set<Integer> peers = IntStream.range(0, n).filter(r -> r != outcome.rank()).boxed()
                        .collect(Collectors.toSet());
                assertEquals(peers, outcome.get(), "rank " + outcome.rank() + " heard from every peer exactly once");
            }
        }
        assertEquals(List.of(), openFilesUnder(dir), "every descriptor of the shared files is closed");
        try (Stream<Path> left = Files.list(sockets)) {
            assertEquals(List.of(), left.toList(), "no socket file is left behind");
        }
        assertTrue(openSockets() <= socketsBefore, "every Unix socket is closed");
    }

    /**
     * One rank's part in a cross-process exchange: shares dir/rank&lt;r&gt;.bin, checks each peer's file against what
     * arrives through its descriptor (read through /proc/self/fd), closes everything.
     */
    static void exchangeAndCheckFiles(Bootstrap b, Path dir) throws IOException {
        Map<Integer, OwnedFd> received;
        try (OwnedFd fd = OwnedFd.openReadOnly(dir.resolve("rank" + b.rank() + ".bin"))) {
            received = FdExchange.exchange(b, fd.value(), dir.resolve("s"), LONG);
        }
        try {
            if (received.size() != b.size() - 1) {
                throw new AssertionError("rank " + b.rank() + " received " + received.keySet());
            }
            for (var entry : received.entrySet()) {
                byte[] got = Files.readAllBytes(Path.of("/proc/self/fd/" + entry.getValue().value()));
                byte[] want = Files.readAllBytes(dir.resolve("rank" + entry.getKey() + ".bin"));
                if (!java.util.Arrays.equals(want, got)) {
                    throw new AssertionError("rank " + b.rank() + ": rank " + entry.getKey() + "'s descriptor does not"
                            + " read as its file");
                }
            }
        } finally {
            received.values().forEach(OwnedFd::close);
        }
        b.barrier(); // nobody closes its bootstrap while a peer still needs it
    }

    /** Rank {@code rank} of a 3-rank job on loopback with rank 0 at {@code port}. */
    private static LaunchEnvironment rankEnvironment(int rank, int port) {
        return new LaunchEnvironment(rank, 3, rank, "127.0.0.1", port, TOKEN);
    }

    @Test
    void descriptorsCrossProcessBoundaries() throws Exception {
        long seed = System.nanoTime();
        System.out.println("FdExchangeTest across processes, content seed " + seed);
        writeRankFiles(3, seed);
        Path sockets = sockets();
        int port = Loopback.freePort();
        List<dev.ubuf.testutil.ChildJvm> children = new ArrayList<>();
        try {
            for (int rank = 1; rank < 3; rank++) {
                Map<String, String> env = new java.util.HashMap<>(rankEnvironment(rank, port).toEnvironment());
                env.put(BootstrapConfig.TIMEOUT_VARIABLE, "30");
                children.add(dev.ubuf.testutil.ChildJvm.start("rank" + rank, FdExchangeChildMain.class, env,
                        dir.toString()));
            }
            try (TcpBootstrap root = TcpBootstrap.connect(rankEnvironment(0, port),
                    new BootstrapConfig(Duration.ofSeconds(30)))) {
                exchangeAndCheckFiles(root, dir);
            }
            for (var child : children) {
                assertEquals(0, child.waitFor(Duration.ofSeconds(40)), child.output());
                assertTrue(child.output().contains("OK fd-exchange rank"), child.output());
            }
        } finally {
            children.forEach(dev.ubuf.testutil.ChildJvm::close);
        }
        assertEquals(List.of(), openFilesUnder(dir));
        try (Stream<Path> left = Files.list(sockets)) {
            assertEquals(List.of(), left.toList(), "no socket file is left behind");
        }
    }

    @Test
    @SuppressWarnings("try") // the silent listener is only held open, for rank 0 to connect to and wait on
    void aRankThatNeverSendsIsNamedAtTheDeadlineAndNothingStaysOpen() throws Exception {
        writeRankFiles(3, System.nanoTime());
        Path sockets = sockets();
        long socketsBefore = openSockets();
        Path silentPath = FdExchange.socketPath(sockets, 2);
        List<RankThreads.Outcome<Map<Integer, OwnedFd>>> outcomes;
        try (InMemoryBootstrap.Group group = InMemoryBootstrap.group(3, LONG);
             UnixSocketListener silent = UnixSocketListener.bind(silentPath)) {
            outcomes = RankThreads.run(3, rank -> {
                Bootstrap b = group.rank(rank);
                if (rank == 2) { // announces a socket like everyone, then neither accepts nor sends
                    b.allGather(new FdExchange.Announcement(ProcessHandle.current().pid(), silentPath).encode());
                    return null;
                }
                try (OwnedFd fd = OwnedFd.openReadOnly(dir.resolve("rank" + rank + ".bin"))) {
                    return FdExchange.exchange(b, fd.value(), sockets, SHORT);
                }
            });
        }
        for (int rank = 0; rank < 2; rank++) {
            String message = outcomes.get(rank).errorOf(BufferSharingException.class).getMessage();
            assertTrue(message.startsWith("rank " + rank + " of 3: no file descriptor arrived from rank 2 within"),
                    message);
        }
        assertNull(outcomes.get(2).get());
        assertEquals(List.of(), openFilesUnder(dir), "descriptors received before the failure are closed");
        try (Stream<Path> left = Files.list(sockets)) {
            assertEquals(List.of(), left.toList(), "no socket file is left behind");
        }
        assertTrue(openSockets() <= socketsBefore, "every Unix socket is closed");
    }

    @Test
    void aRankThatNeverListensIsNamedByTheRanksThatCannotReachIt() throws Exception {
        writeRankFiles(2, System.nanoTime());
        Path sockets = sockets();
        Path nobody = sockets.resolve("nobody.sock");
        try (InMemoryBootstrap.Group group = InMemoryBootstrap.group(2, LONG)) {
            var outcomes = RankThreads.run(2, rank -> {
                Bootstrap b = group.rank(rank);
                if (rank == 1) {
                    b.allGather(new FdExchange.Announcement(ProcessHandle.current().pid(), nobody).encode());
                    return null;
                }
                try (OwnedFd fd = OwnedFd.openReadOnly(dir.resolve("rank0.bin"))) {
                    return FdExchange.exchange(b, fd.value(), sockets, SHORT);
                }
            });
            String message = outcomes.get(0).errorOf(BufferSharingException.class).getMessage();
            assertTrue(message.startsWith("rank 0 of 2: ") && message.contains("rank 1"), message);
        }
        assertEquals(List.of(), openFilesUnder(dir));
    }

    @Test
    @SuppressWarnings("try") // the impostor listener is only bound, so that the socket rank 2 announces exists
    void aDescriptorWithAWrongTagIsRefusedAndClosed() throws Exception {
        writeRankFiles(3, System.nanoTime());
        Path sockets = sockets();
        Path impostorPath = FdExchange.socketPath(sockets, 2);
        List<RankThreads.Outcome<Map<Integer, OwnedFd>>> outcomes;
        try (InMemoryBootstrap.Group group = InMemoryBootstrap.group(3, LONG);
             UnixSocketListener impostor = UnixSocketListener.bind(impostorPath)) {
            outcomes = RankThreads.run(3, rank -> {
                Bootstrap b = group.rank(rank);
                if (rank == 2) { // sends rank 0 a descriptor that claims to come from rank 0 itself
                    byte[][] all = b.allGather(
                            new FdExchange.Announcement(ProcessHandle.current().pid(), impostorPath).encode());
                    Path rank0 = FdExchange.Announcement.decode(all[0], 0).socket();
                    try (OwnedFd fd = OwnedFd.openReadOnly(dir.resolve("rank2.bin"));
                         UnixSocketFdChannel channel = UnixSocketFdChannel.connect(rank0, LONG)) {
                        channel.sendFd(fd, 0);
                    }
                    return null;
                }
                try (OwnedFd fd = OwnedFd.openReadOnly(dir.resolve("rank" + rank + ".bin"))) {
                    return FdExchange.exchange(b, fd.value(), sockets, SHORT);
                }
            });
        }
        String refused = outcomes.get(0).errorOf(BufferSharingException.class).getMessage();
        assertTrue(refused.startsWith("rank 0 of 3: refused the file descriptor") && refused.contains("tag 0"),
                refused);
        // Rank 1 never hears from rank 2 (and maybe not from rank 0, which gave up): it fails by the deadline.
        String timedOut = outcomes.get(1).errorOf(BufferSharingException.class).getMessage();
        assertTrue(timedOut.startsWith("rank 1 of 3: ") && timedOut.contains("2"), timedOut);
        assertEquals(List.of(), openFilesUnder(dir), "the refused descriptor is closed too");
    }

    @Test
    void aPeerThatLeavesTheBootstrapIsReportedWithoutWaitingForTheDeadline() throws Exception {
        writeRankFiles(3, System.nanoTime());
        Path sockets = sockets();
        Path gonePath = FdExchange.socketPath(sockets, 2);
        try (InMemoryBootstrap.Group group = InMemoryBootstrap.group(3, Duration.ofSeconds(30))) {
            var outcomes = RankThreads.run(3, rank -> {
                Bootstrap b = group.rank(rank);
                if (rank == 2) {
                    b.allGather(new FdExchange.Announcement(ProcessHandle.current().pid(), gonePath).encode());
                    b.close(); // the peers see it lost
                    return null;
                }
                try (OwnedFd fd = OwnedFd.openReadOnly(dir.resolve("rank" + rank + ".bin"))) {
                    // A deadline far beyond RankThreads' 60 s guard: only the health check can end this in time.
                    return FdExchange.exchange(b, fd.value(), sockets, Duration.ofSeconds(300));
                }
            });
            for (int rank = 0; rank < 2; rank++) {
                PeerFailedException e = outcomes.get(rank).errorOf(PeerFailedException.class);
                assertTrue(e.getMessage().startsWith("rank " + rank + " of 3 stopped the file-descriptor exchange"),
                        e.getMessage());
            }
        }
        assertEquals(List.of(), openFilesUnder(dir));
        try (Stream<Path> left = Files.list(sockets)) {
            assertEquals(List.of(), left.toList());
        }
    }

    @Test
    void aGroupOfOneExchangesNothing() throws Exception {
        Path file = Files.writeString(dir.resolve("solo"), "x");
        try (InMemoryBootstrap.Group group = InMemoryBootstrap.group(1, LONG);
             OwnedFd fd = OwnedFd.openReadOnly(file)) {
            assertEquals(Map.of(), FdExchange.exchange(group.rank(0), fd.value(), sockets(), LONG));
            assertTrue(fd.isOpen(), "the caller's descriptor stays the caller's");
        }
    }

    @Test
    void badArgumentsAreRefusedBeforeAnySocketExists() throws Exception {
        Path sockets = sockets();
        try (InMemoryBootstrap.Group group = InMemoryBootstrap.group(2, LONG)) {
            Bootstrap b = group.rank(0);
            assertThrows(IllegalArgumentException.class, () -> FdExchange.exchange(b, -1, sockets, LONG));
            assertThrows(IllegalArgumentException.class, () -> FdExchange.exchange(b, 0, sockets, Duration.ZERO));
            Path deep = sockets.resolve("d".repeat(90));
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> FdExchange.exchange(b, 0, deep, LONG));
            assertTrue(e.getMessage().contains("shorter directory"), e.getMessage());
        }
        try (Stream<Path> left = Files.list(sockets)) {
            assertEquals(List.of(), left.toList());
        }
    }

    @Test
    void socketPathsAreShortDistinctAndNameTheRank() {
        Path directory = FdExchange.defaultSocketDirectory();
        Path a = FdExchange.socketPath(directory, 3);
        Path b = FdExchange.socketPath(directory, 3);
        assertFalse(a.equals(b), "a random suffix keeps two exchanges of one rank apart");
        assertTrue(a.getFileName().toString().startsWith("ubuf-" + ProcessHandle.current().pid() + "-r3-"),
                a.toString());
        assertTrue(a.toString().length() < FdExchange.MAX_SOCKET_PATH_BYTES, a.toString());
    }

    @Test
    void announcementsRoundTripAndMalformedOnesAreRefused() {
        var a = new FdExchange.Announcement(4242, Path.of("/tmp/ubuf-x.sock"));
        assertEquals(a, FdExchange.Announcement.decode(a.encode(), 1));
        BufferSharingException e = assertThrows(BufferSharingException.class,
                () -> FdExchange.Announcement.decode(new byte[8], 5));
        assertTrue(e.getMessage().contains("rank 5"), e.getMessage());
    }

    @Test
    void automaticSharingPrefersVmmWhereEveryDeviceSupportsIt() {
        // one JVM, a GPU per rank: VMM where it can, peer access only where it cannot
        assertEquals(BufferSharing.VMM_POSIX_FD, TpCommunicator.choose(true, true, true));
        assertEquals(BufferSharing.IN_PROCESS, TpCommunicator.choose(true, false, true));
        // one JVM, ranks sharing a GPU: in-process as before
        assertEquals(BufferSharing.IN_PROCESS, TpCommunicator.choose(true, true, false));
        assertEquals(BufferSharing.IN_PROCESS, TpCommunicator.choose(true, false, false));
        // processes: VMM where it can, else legacy IPC, whatever the GPUs
        assertEquals(BufferSharing.VMM_POSIX_FD, TpCommunicator.choose(false, true, true));
        assertEquals(BufferSharing.VMM_POSIX_FD, TpCommunicator.choose(false, true, false));
        assertEquals(BufferSharing.LEGACY_IPC, TpCommunicator.choose(false, false, true));
    }
}
