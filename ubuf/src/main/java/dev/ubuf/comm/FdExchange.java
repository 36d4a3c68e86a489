package dev.ubuf.comm;

import dev.ubuf.bootstrap.Bootstrap;
import dev.ubuf.posix.OwnedFd;
import dev.ubuf.posix.PeerCredentials;
import dev.ubuf.posix.ReceivedFd;
import dev.ubuf.posix.UnixSocketFdChannel;
import dev.ubuf.posix.UnixSocketListener;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.IntStream;

/**
 * Gives every rank of a group one file descriptor from each other rank, over Unix domain sockets with SCM_RIGHTS:
 * the descriptors of VMM allocations that {@link VmmSharedMemory} exports, but any descriptor works (the CPU tests use
 * plain files). Collective over the bootstrap's ranks, which must run on one machine as one user.
 *
 * <p>Each rank binds a listener at a fresh path, allGathers (pid, path), then sends its descriptor, tagged with its
 * rank, to every peer, while a helper thread accepts tp-1 connections and takes one descriptor from each. A
 * descriptor is taken only if its tag is a peer rank not seen before and the sending process (SO_PEERCRED) runs as
 * this user and is the process that announced that rank. Everything has one deadline; a failure on either side
 * stops the other at once. The socket files are gone when this returns, on failure too.
 */
final class FdExchange {
    /** Socket paths stay below this many bytes: sun_path holds 108 with its NUL, less on some systems. */
    static final int MAX_SOCKET_PATH_BYTES = 100;
    /** How often the waits look at the other side's failure and at the bootstrap's health. */
    private static final Duration SLICE = Duration.ofMillis(50);
    /** How long to wait for the helper thread beyond the deadline it honours itself. */
    private static final Duration JOIN_GRACE = Duration.ofSeconds(5);

    private FdExchange() {
    }

    /** What a rank tells the others: its process and where it listens. */
    record Announcement(long pid, Path socket) {
        Announcement {
            Objects.requireNonNull(socket, "socket");
        }

        byte[] encode() {
            byte[] path = socket.toString().getBytes(StandardCharsets.UTF_8);
            return ByteBuffer.allocate(Long.BYTES + path.length).putLong(pid).put(path).array();
        }

        static Announcement decode(byte[] bytes, int rank) {
            if (bytes.length <= Long.BYTES) {
                throw new BufferSharingException("rank " + rank + "'s socket announcement is malformed ("
                        + bytes.length + " bytes)");
            }
            ByteBuffer b = ByteBuffer.wrap(bytes);
            long pid = b.getLong();
            return new Announcement(pid, Path.of(new String(bytes, Long.BYTES, bytes.length - Long.BYTES,
                    StandardCharsets.UTF_8)));
        }
    }

    /** {@link #exchange(Bootstrap, int, Path, Duration)} with the socket files in java.io.tmpdir (or /tmp). */
    static Map<Integer, OwnedFd> exchange(Bootstrap bootstrap, int myFd, Duration timeout) {
        return exchange(bootstrap, myFd, defaultSocketDirectory(), timeout);
    }

    /**
     * Sends {@code myFd} (which stays the caller's) to every other rank and returns the descriptor each peer sent,
     * keyed by peer rank: the caller owns them and closes each once. Empty for a group of one.
     *
     * @param socketDirectory where this rank's socket file lives while the exchange runs
     * @param timeout         deadline of the whole exchange (the bootstrap's own deadline covers its allGather)
     * @throws BufferSharingException naming this rank and the peer on a timeout or a refused descriptor
     * @throws PeerFailedException    when the bootstrap reports a lost peer or an abort while this waits
     */
    static Map<Integer, OwnedFd> exchange(Bootstrap bootstrap, int myFd, Path socketDirectory, Duration timeout) {
        Objects.requireNonNull(bootstrap, "bootstrap");
        Objects.requireNonNull(socketDirectory, "socketDirectory");
        Objects.requireNonNull(timeout, "timeout");
        if (myFd < 0) {
            throw new IllegalArgumentException("not a file descriptor: " + myFd);
        }
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("exchange timeout must be positive, got " + timeout);
        }
        if (bootstrap.size() == 1) {
            return Map.of();
        }
        long deadline = System.nanoTime() + timeout.toNanos();
        Path path = socketPath(socketDirectory, bootstrap.rank());
        UnixSocketListener listener = UnixSocketListener.bind(path);
        Announcement[] peers;
        try {
            byte[][] all = bootstrap.allGather(new Announcement(ProcessHandle.current().pid(), path).encode());
            peers = new Announcement[all.length];
            for (int r = 0; r < all.length; r++) {
                peers[r] = Announcement.decode(all[r], r);
            }
        } catch (RuntimeException e) {
            listener.close();
            throw e;
        }

        Run run = new Run(bootstrap, peers, deadline, timeout);
        Receiver receiver = new Receiver(run, listener);
        Thread thread;
        try {
            thread = Thread.ofPlatform().daemon().name("ubuf-fd-exchange-rank-" + run.me).start(receiver);
        } catch (RuntimeException | Error e) {
            listener.close();
            throw e;
        }
        RuntimeException sendFailure = null;
        try {
            sendToEveryPeer(run, myFd);
        } catch (RuntimeException e) {
            sendFailure = e;
            run.fail(e);
        } catch (Error e) {
            run.fail(new BufferSharingException(run.who() + ": sending failed: " + e));
            join(thread, run);
            receiver.closeReceived();
            throw e;
        }
        join(thread, run);
        if (run.failure.get() == null) {
            return Collections.unmodifiableMap(new TreeMap<>(receiver.received));
        }
        RuntimeException first = run.failure.get();
        // The receiver closes what it took when it fails itself; this covers a failure of the sending side.
        suppress(first, receiver.closeReceived());
        for (RuntimeException other : new RuntimeException[]{sendFailure, receiver.failure}) {
            if (other != null && other != first && !(other instanceof Stopped)) {
                first.addSuppressed(other);
            }
        }
        throw first;
    }

    /** java.io.tmpdir, or /tmp where tmpdir would make socket paths too long. */
    static Path defaultSocketDirectory() {
        Path tmp = Path.of(System.getProperty("java.io.tmpdir", "/tmp")).toAbsolutePath();
        // "/ubuf-<pid>-r<rank>-<8 hex>.sock" takes at most 1+5+19+2+10+1+8+5 = 51 bytes
        return tmp.toString().getBytes(StandardCharsets.UTF_8).length + 51 < MAX_SOCKET_PATH_BYTES ? tmp : Path.of("/tmp");
    }

    /** A fresh path per rank and call: the pid, the rank and a random suffix keep concurrent jobs apart. */
    static Path socketPath(Path directory, int rank) {
        String name = "ubuf-" + ProcessHandle.current().pid() + "-r" + rank + "-"
                + HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextInt()) + ".sock";
        Path path = directory.toAbsolutePath().resolve(name);
        int length = path.toString().getBytes(StandardCharsets.UTF_8).length;
        if (length >= MAX_SOCKET_PATH_BYTES) {
            throw new IllegalArgumentException("Unix socket path " + path + " is " + length + " bytes; keep it below "
                    + MAX_SOCKET_PATH_BYTES + " (choose a shorter directory)");
        }
        return path;
    }

    private static void sendToEveryPeer(Run run, int myFd) {
        for (int i = 1; i < run.tp; i++) {
            int peer = (run.me + i) % run.tp; // everyone starts with a different peer: no rank is hit by all at once
            Path path = run.peers[peer].socket();
            UnixSocketFdChannel channel = connect(run, peer, path);
            try (channel) {
                PeerCredentials listening = channel.peer();
                if (listening.pid() != run.peers[peer].pid()) {
                    throw new BufferSharingException(run.who() + ": the socket " + path + " of rank " + peer
                            + " is held by pid " + listening.pid() + ", but rank " + peer + " announced pid "
                            + run.peers[peer].pid() + "; not sending it a descriptor");
                }
                channel.sendFd(myFd, run.me);
            } catch (BufferSharingException | Stopped | PeerFailedException e) {
                throw e;
            } catch (RuntimeException e) {
                throw new BufferSharingException(run.who() + ": could not send its file descriptor to rank " + peer
                        + " over " + path + ": " + e.getMessage(), e);
            }
        }
    }

    private static UnixSocketFdChannel connect(Run run, int peer, Path path) {
        while (true) {
            run.checkHealthy();
            long remaining = run.deadline - System.nanoTime();
            if (remaining <= 0) {
                throw new BufferSharingException(run.who() + ": could not connect to rank " + peer + "'s socket "
                        + path + " within " + run.timeout + " (is rank " + peer + " still running?)");
            }
            try {
                var channel = UnixSocketFdChannel.tryConnect(path, slice(remaining));
                if (channel.isPresent()) {
                    return channel.get();
                }
            } catch (RuntimeException e) {
                throw new BufferSharingException(run.who() + ": could not connect to rank " + peer + "'s socket "
                        + path + ": " + e.getMessage(), e);
            }
        }
    }

    /** Waits for the helper thread, which honours the deadline itself; never returns while it still runs. */
    private static void join(Thread thread, Run run) {
        boolean interrupted = false;
        boolean told = false;
        long limit = run.deadline + JOIN_GRACE.toNanos();
        while (thread.isAlive()) {
            long left = limit - System.nanoTime();
            if (left <= 0) {
                if (told) {
                    throw new IllegalStateException(run.who() + ": the descriptor-receiving thread did not stop "
                            + "after the deadline; the descriptors it holds stay open");
                }
                // It stops at its next slice once it sees a failure.
                run.fail(new BufferSharingException(run.who() + ": the descriptor-receiving thread overran the "
                        + "deadline"));
                told = true;
                limit = System.nanoTime() + JOIN_GRACE.toNanos();
                continue;
            }
            try {
                thread.join(Duration.ofNanos(left));
            } catch (InterruptedException e) {
                interrupted = true; // finish the wait (it is bounded) so that nothing stays open behind our back
                run.fail(new BufferSharingException(run.who() + ": interrupted during the file-descriptor exchange"));
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    private static void suppress(RuntimeException into, RuntimeException other) {
        if (other != null && other != into) {
            into.addSuppressed(other);
        }
    }

    private static Duration slice(long remainingNanos) {
        return Duration.ofNanos(Math.min(SLICE.toNanos(), remainingNanos));
    }

    /** The state both sides of one rank's exchange share. */
    private static final class Run {
        final Bootstrap bootstrap;
        final int me;
        final int tp;
        final Announcement[] peers;
        final long deadline;
        final Duration timeout;
        /** The first failure of either side; the other side stops when it sees one. */
        final AtomicReference<RuntimeException> failure = new AtomicReference<>();

        Run(Bootstrap bootstrap, Announcement[] peers, long deadline, Duration timeout) {
            this.bootstrap = bootstrap;
            this.me = bootstrap.rank();
            this.tp = bootstrap.size();
            this.peers = peers;
            this.deadline = deadline;
            this.timeout = timeout;
        }

        String who() {
            return "rank " + me + " of " + tp;
        }

        void fail(RuntimeException e) {
            if (!(e instanceof Stopped)) {
                failure.compareAndSet(null, e);
            }
        }

        /** Throws if the other side failed or the bootstrap knows of a lost peer or an abort. */
        void checkHealthy() {
            if (failure.get() != null) {
                throw new Stopped();
            }
            var known = bootstrap.knownFailure();
            if (known.isPresent()) {
                throw new PeerFailedException(who() + " stopped the file-descriptor exchange: "
                        + known.get().getMessage(), known.get());
            }
        }
    }

    /** This side stopped because the other side failed; the other side's failure is the one reported. */
    private static final class Stopped extends RuntimeException {
        Stopped() {
            super("stopped: the other side of the exchange failed", null, false, false);
        }
    }

    /** Accepts tp-1 connections and takes one descriptor from each; owns the listener and closes it. */
    private static final class Receiver implements Runnable {
        private final Run run;
        private final UnixSocketListener listener;
        /** In arrival order, so that a failure closes them newest first. Read by the caller after join. */
        final Map<Integer, OwnedFd> received = new LinkedHashMap<>();
        RuntimeException failure;

        Receiver(Run run, UnixSocketListener listener) {
            this.run = run;
            this.listener = listener;
        }

        @Override
        public void run() {
            try {
                while (received.size() < run.tp - 1) {
                    run.checkHealthy();
                    long remaining = run.deadline - System.nanoTime();
                    if (remaining <= 0) {
                        throw new BufferSharingException(run.who() + ": no file descriptor arrived from "
                                + missing() + " within " + run.timeout + " (listening on " + listener.path() + ")");
                    }
                    var accepted = listener.tryAccept(slice(remaining));
                    if (accepted.isPresent()) {
                        try (UnixSocketFdChannel channel = accepted.get()) {
                            takeOne(channel, remaining);
                        }
                    }
                }
            } catch (RuntimeException e) {
                failure = e;
                run.fail(e);
                suppress(e, closeReceived());
            } finally {
                try {
                    listener.close(); // removes the socket file
                } catch (RuntimeException e) {
                    if (failure == null) {
                        failure = new BufferSharingException(run.who() + ": could not close its socket "
                                + listener.path() + ": " + e.getMessage(), e);
                        run.fail(failure);
                        suppress(failure, closeReceived());
                    } else {
                        suppress(failure, e);
                    }
                }
            }
        }

        private void takeOne(UnixSocketFdChannel channel, long remaining) {
            PeerCredentials sender = channel.peer();
            ReceivedFd got;
            try {
                got = channel.receiveFd(Duration.ofNanos(remaining));
            } catch (RuntimeException e) {
                throw new BufferSharingException(run.who() + ": pid " + sender.pid() + " connected to "
                        + listener.path() + " but sent no file descriptor (still missing " + missing() + "): "
                        + e.getMessage(), e);
            }
            String refusal = refusal(got.tag(), sender);
            if (refusal != null) {
                got.close();
                throw new BufferSharingException(run.who() + ": refused the file descriptor that pid " + sender.pid()
                        + " sent to " + listener.path() + ": " + refusal);
            }
            received.put((int) got.tag(), got.fd());
        }

        /** Why a descriptor tagged {@code tag} from {@code sender} is not taken, or null. */
        private String refusal(long tag, PeerCredentials sender) {
            if (tag < 0 || tag >= run.tp || tag == run.me) {
                return "its tag " + tag + " is not a peer rank (peers are " + IntStream.range(0, run.tp)
                        .filter(r -> r != run.me).boxed().toList() + ")";
            }
            int peer = (int) tag;
            if (received.containsKey(peer)) {
                return "rank " + peer + " already sent one";
            }
            if (sender.pid() != run.peers[peer].pid()) {
                return "it claims to be rank " + peer + ", which announced pid " + run.peers[peer].pid();
            }
            // UnixSocketFdChannel already refuses other users; checked again here because this is the security line.
            int uid = PeerCredentials.currentProcess().uid();
            if (sender.uid() != uid) {
                return "it runs as uid " + sender.uid() + ", this process as uid " + uid;
            }
            return null;
        }

        /** "rank 2" or "ranks 0, 2": the peers not heard from yet. */
        private String missing() {
            List<String> missing = new ArrayList<>();
            for (int r = 0; r < run.tp; r++) {
                if (r != run.me && !received.containsKey(r)) {
                    missing.add(Integer.toString(r));
                }
            }
            return (missing.size() == 1 ? "rank " : "ranks ") + String.join(", ", missing);
        }

        /** Closes every received descriptor, newest first, once; returns the first failure (others suppressed). */
        RuntimeException closeReceived() {
            List<OwnedFd> fds = new ArrayList<>(received.values());
            received.clear();
            RuntimeException first = null;
            for (int i = fds.size() - 1; i >= 0; i--) {
                try {
                    fds.get(i).close();
                } catch (RuntimeException e) {
                    if (first == null) {
                        first = e;
                    } else {
                        first.addSuppressed(e);
                    }
                }
            }
            return first;
        }
    }
}
