package dev.ubuf.posix;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * One connected AF_UNIX stream socket that carries file descriptors: each message is an 8-byte tag plus exactly one
 * descriptor in an SCM_RIGHTS control message. Both ends check at connection time (SO_PEERCRED) that the peer runs as
 * the same user as this process.
 *
 * <p>The sender keeps ownership of the descriptor it sends (the kernel installs a new descriptor in the receiver);
 * the receiver owns what {@link #receiveFd} returns. Received descriptors are close-on-exec.
 *
 * <p>Not thread-safe: one thread sends, receives and closes (a sender and a receiver thread may share it only if
 * neither closes it while the other is inside a call).
 */
public final class UnixSocketFdChannel implements AutoCloseable {
    private static final long TAG_BYTES = JAVA_LONG.byteSize();
    private static final long FD_BYTES = JAVA_INT.byteSize();

    private final OwnedFd socket;
    private final PeerCredentials peer;
    private final String description;

    private UnixSocketFdChannel(OwnedFd socket, PeerCredentials peer, String description) {
        this.socket = socket;
        this.peer = peer;
        this.description = description;
    }

    /** Wraps a fresh connection: reads and checks the peer's credentials, closing the socket if they do not pass. */
    static UnixSocketFdChannel established(OwnedFd socket, String description) {
        try {
            Libc libc = Libc.get();
            PeerCredentials peer = peerCredentials(libc, socket.value(), description);
            peer.requireUid(libc.getuid());
            return new UnixSocketFdChannel(socket, peer, description + " (peer pid " + peer.pid() + ")");
        } catch (RuntimeException e) {
            socket.close();
            throw e;
        }
    }

    /**
     * Connects to a {@link UnixSocketListener} at {@code path}, retrying while the path does not exist yet or nobody
     * listens on it, until {@code timeout} has passed.
     */
    public static UnixSocketFdChannel connect(Path path, Duration timeout) {
        return connect(path, timeout, true);
    }

    /**
     * Like {@link #connect}, but an empty result when nobody listened on {@code path} within {@code timeout}, so that
     * a caller can try in short slices and check between them whether it should stop. Other failures still throw.
     */
    public static Optional<UnixSocketFdChannel> tryConnect(Path path, Duration timeout) {
        return Optional.ofNullable(connect(path, timeout, false));
    }

    private static UnixSocketFdChannel connect(Path path, Duration timeout, boolean throwOnTimeout) {
        Objects.requireNonNull(path, "path");
        Objects.requireNonNull(timeout, "timeout");
        byte[] pathBytes = Libc.socketPathBytes(path);
        Libc libc = Libc.get();
        long deadline = System.nanoTime() + timeout.toNanos();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment capture = Libc.errnoSegment(arena);
            MemorySegment address = Libc.sockaddrUn(arena, pathBytes);
            while (true) {
                int fd = libc.socket(capture, Libc.AF_UNIX, Libc.SOCK_STREAM | Libc.SOCK_CLOEXEC, 0);
                if (fd < 0) {
                    throw libc.failure("socket(AF_UNIX, SOCK_STREAM)", Libc.errno(capture));
                }
                OwnedFd socket = OwnedFd.adopt(fd, "Unix socket connected to " + path);
                if (libc.connect(capture, fd, address, (int) Libc.SOCKADDR_UN.byteSize()) == 0) {
                    return established(socket, "connected to " + path);
                }
                int errno = Libc.errno(capture);
                socket.close();
                boolean notYetListening = errno == Libc.ENOENT || errno == Libc.ECONNREFUSED;
                if (!notYetListening && errno != Libc.EINTR && errno != Libc.EAGAIN) {
                    throw libc.failure("connect(" + path + ")", errno);
                }
                if (System.nanoTime() - deadline >= 0) {
                    if (!throwOnTimeout) {
                        return null;
                    }
                    throw new UnixSocketException("could not connect to " + path + " within " + timeout + ": "
                            + libc.strerror(errno) + " (errno " + errno + ")");
                }
                sleepBriefly();
            }
        }
    }

    /** The process at the other end, as the kernel recorded it at connect time. */
    public PeerCredentials peer() {
        return peer;
    }

    /**
     * Sends {@code fd} (which stays owned by the caller) with {@code tag}. The kernel duplicates the descriptor into
     * the receiver when it receives the message; closing ours afterwards is safe.
     */
    public void sendFd(int fd, long tag) {
        if (fd < 0) {
            throw new IllegalArgumentException("not a file descriptor: " + fd);
        }
        int sock = socket.value();
        Libc libc = Libc.get();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment capture = Libc.errnoSegment(arena);
            MemorySegment payload = arena.allocate(JAVA_LONG);
            payload.set(JAVA_LONG, 0, tag); // native order: both ends are on this machine
            MemorySegment control = arena.allocate(Libc.cmsgSpace(FD_BYTES), 8);
            control.set(Libc.SIZE_T, Libc.CMSG_LEN_OFFSET, Libc.cmsgLen(FD_BYTES));
            control.set(JAVA_INT, Libc.CMSG_LEVEL, Libc.SOL_SOCKET);
            control.set(JAVA_INT, Libc.CMSG_TYPE, Libc.SCM_RIGHTS);
            control.set(JAVA_INT, Libc.cmsgDataOffset(), fd);
            MemorySegment iov = arena.allocate(Libc.IOVEC);
            MemorySegment msg = arena.allocate(Libc.MSGHDR);
            msg.set(Libc.POINTER, Libc.MSG_IOV, iov);
            msg.set(Libc.SIZE_T, Libc.MSG_IOVLEN, 1L);
            long sent = 0;
            while (sent < TAG_BYTES) {
                iov.set(Libc.POINTER, Libc.IOV_BASE, payload.asSlice(sent));
                iov.set(Libc.SIZE_T, Libc.IOV_LEN, TAG_BYTES - sent);
                // The descriptor travels with the first byte; a (rare) short write sends the rest without it.
                boolean first = sent == 0;
                msg.set(Libc.POINTER, Libc.MSG_CONTROL, first ? control : MemorySegment.NULL);
                msg.set(Libc.SIZE_T, Libc.MSG_CONTROLLEN, first ? control.byteSize() : 0L);
                long n = libc.sendmsg(capture, sock, msg, Libc.MSG_NOSIGNAL);
                if (n < 0) {
                    int errno = Libc.errno(capture);
                    if (errno == Libc.EINTR) {
                        continue;
                    }
                    throw libc.failure("sendmsg(SCM_RIGHTS fd " + fd + ", " + description + ")", errno);
                }
                sent += n;
            }
        }
    }

    /** Sends the descriptor {@code fd} owns; {@code fd} stays open and owned by the caller. */
    public void sendFd(OwnedFd fd, long tag) {
        sendFd(fd.value(), tag);
    }

    /**
     * Waits at most {@code timeout} for one message and returns its descriptor (owned by the caller) and tag.
     *
     * @throws UnixSocketException on timeout, when the peer closed the connection, or when the message carried no
     *         descriptor or a truncated control message (any descriptor that did arrive is closed first)
     */
    public ReceivedFd receiveFd(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        int sock = socket.value();
        Libc libc = Libc.get();
        long deadline = System.nanoTime() + timeout.toNanos();
        OwnedFd received = null;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment capture = Libc.errnoSegment(arena);
            MemorySegment payload = arena.allocate(JAVA_LONG);
            MemorySegment control = arena.allocate(Libc.cmsgSpace(FD_BYTES), 8);
            MemorySegment iov = arena.allocate(Libc.IOVEC);
            MemorySegment msg = arena.allocate(Libc.MSGHDR);
            long got = 0;
            while (got < TAG_BYTES) {
                if (!libc.awaitReadable(sock, deadline - System.nanoTime(), description)) {
                    throw new UnixSocketException("no file descriptor arrived within " + timeout + " (" + description
                            + ")");
                }
                iov.set(Libc.POINTER, Libc.IOV_BASE, payload.asSlice(got));
                iov.set(Libc.SIZE_T, Libc.IOV_LEN, TAG_BYTES - got);
                control.fill((byte) 0);
                msg.fill((byte) 0);
                msg.set(Libc.POINTER, Libc.MSG_IOV, iov);
                msg.set(Libc.SIZE_T, Libc.MSG_IOVLEN, 1L);
                msg.set(Libc.POINTER, Libc.MSG_CONTROL, control);
                msg.set(Libc.SIZE_T, Libc.MSG_CONTROLLEN, control.byteSize());
                long n = libc.recvmsg(capture, sock, msg, Libc.MSG_CMSG_CLOEXEC);
                if (n < 0) {
                    int errno = Libc.errno(capture);
                    if (errno == Libc.EINTR || errno == Libc.EAGAIN) {
                        continue;
                    }
                    throw libc.failure("recvmsg(" + description + ")", errno);
                }
                OwnedFd arrived = takeDescriptor(msg, control);
                if (arrived != null) {
                    if (received != null) {
                        arrived.close();
                        throw new UnixSocketException("a message carried more than one file descriptor ("
                                + description + ")");
                    }
                    received = arrived;
                }
                if ((msg.get(JAVA_INT, Libc.MSG_FLAGS) & Libc.MSG_CTRUNC) != 0) {
                    throw new UnixSocketException("control message truncated (MSG_CTRUNC): the peer sent more than "
                            + "one file descriptor (" + description + ")");
                }
                if (n == 0) {
                    throw new UnixSocketException("the peer closed the connection" + (got > 0 ? " in the middle of a "
                            + "message" : "") + " (" + description + ")");
                }
                got += n;
            }
            long tag = payload.get(JAVA_LONG, 0);
            if (received == null) {
                throw new UnixSocketException("message with tag " + tag + " carried no file descriptor ("
                        + description + ")");
            }
            ReceivedFd result = new ReceivedFd(tag, received);
            received = null;
            return result;
        } finally {
            if (received != null) {
                received.close();
            }
        }
    }

    /** The SCM_RIGHTS descriptor in the control buffer recvmsg filled, or null if none arrived. */
    private static OwnedFd takeDescriptor(MemorySegment msg, MemorySegment control) {
        long controlLength = msg.get(Libc.SIZE_T, Libc.MSG_CONTROLLEN);
        if (controlLength < Libc.CMSGHDR.byteSize()) {
            return null;
        }
        long cmsgLen = control.get(Libc.SIZE_T, Libc.CMSG_LEN_OFFSET);
        int level = control.get(JAVA_INT, Libc.CMSG_LEVEL);
        int type = control.get(JAVA_INT, Libc.CMSG_TYPE);
        if (level != Libc.SOL_SOCKET || type != Libc.SCM_RIGHTS || cmsgLen < Libc.cmsgLen(FD_BYTES)) {
            return null;
        }
        int fd = control.get(JAVA_INT, Libc.cmsgDataOffset());
        return OwnedFd.adopt(fd, "file descriptor received over a Unix socket");
    }

    private static PeerCredentials peerCredentials(Libc libc, int fd, String description) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment capture = Libc.errnoSegment(arena);
            MemorySegment ucred = arena.allocate(Libc.UCRED);
            MemorySegment length = arena.allocate(JAVA_INT);
            length.set(JAVA_INT, 0, (int) Libc.UCRED.byteSize());
            if (libc.getsockopt(capture, fd, Libc.SOL_SOCKET, Libc.SO_PEERCRED, ucred, length) != 0) {
                throw libc.failure("getsockopt(SO_PEERCRED, " + description + ")", Libc.errno(capture));
            }
            return new PeerCredentials(ucred.get(JAVA_INT, Libc.UCRED_PID), ucred.get(JAVA_INT, Libc.UCRED_UID),
                    ucred.get(JAVA_INT, Libc.UCRED_GID));
        }
    }

    private static void sleepBriefly() {
        try {
            Thread.sleep(20);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new UnixSocketException("interrupted while waiting for a Unix socket listener");
        }
    }

    /** Closes the socket; a second call does nothing. */
    @Override
    public void close() {
        socket.close();
    }

    @Override
    public String toString() {
        return "UnixSocketFdChannel[" + description + (socket.isOpen() ? "]" : ", closed]");
    }
}
