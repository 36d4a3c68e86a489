package dev.ubuf.posix;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A listening AF_UNIX stream socket bound to a filesystem path. {@link #accept} hands out one
 * {@link UnixSocketFdChannel} per connecting process, after checking that the process runs as the same user.
 * {@link #close()} closes the socket and removes the path.
 *
 * <p>Not thread-safe: one thread accepts and closes.
 */
public final class UnixSocketListener implements AutoCloseable {
    private static final int BACKLOG = 64;

    private final Path path;
    private final OwnedFd socket;
    private final AtomicBoolean closed = new AtomicBoolean();

    private UnixSocketListener(Path path, OwnedFd socket) {
        this.path = path;
        this.socket = socket;
    }

    /**
     * socket(AF_UNIX, SOCK_STREAM), bind(path), listen. The path must not exist yet (bind does not replace a file).
     */
    public static UnixSocketListener bind(Path path) {
        Objects.requireNonNull(path, "path");
        byte[] pathBytes = Libc.socketPathBytes(path);
        Libc libc = Libc.get();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment capture = Libc.errnoSegment(arena);
            // Non-blocking so that accept after poll never blocks when a client gave up in between.
            int fd = libc.socket(capture, Libc.AF_UNIX, Libc.SOCK_STREAM | Libc.SOCK_CLOEXEC | Libc.SOCK_NONBLOCK, 0);
            if (fd < 0) {
                throw libc.failure("socket(AF_UNIX, SOCK_STREAM)", Libc.errno(capture));
            }
            OwnedFd socket = OwnedFd.adopt(fd, "Unix socket listening on " + path);
            try {
                MemorySegment address = Libc.sockaddrUn(arena, pathBytes);
                if (libc.bind(capture, fd, address, (int) Libc.SOCKADDR_UN.byteSize()) != 0) {
                    int errno = Libc.errno(capture);
                    String hint = errno == Libc.EADDRINUSE ? " (the path exists: remove a stale socket file)" : "";
                    throw new PosixException("bind(" + path + ")" + hint, errno, libc.strerror(errno));
                }
                if (libc.listen(capture, fd, BACKLOG) != 0) {
                    int errno = Libc.errno(capture);
                    unlinkQuietly(path);
                    throw libc.failure("listen(" + path + ")", errno);
                }
                return new UnixSocketListener(path, socket);
            } catch (RuntimeException e) {
                socket.close();
                throw e;
            }
        }
    }

    public Path path() {
        return path;
    }

    /**
     * Waits at most {@code timeout} for a process to connect and returns the connection. Rejects (closes, then throws
     * {@link UnixSocketException}) a peer whose uid differs from this process's.
     */
    public UnixSocketFdChannel accept(Duration timeout) {
        return tryAccept(timeout).orElseThrow(
                () -> new UnixSocketException("no process connected to " + path + " within " + timeout));
    }

    /**
     * Like {@link #accept}, but an empty result when nobody connected within {@code timeout}, so that a caller can
     * wait in short slices and check between them whether it should stop.
     */
    public Optional<UnixSocketFdChannel> tryAccept(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        if (closed.get()) {
            throw new IllegalStateException("Unix socket listener on " + path + " is closed");
        }
        Libc libc = Libc.get();
        long deadline = System.nanoTime() + timeout.toNanos();
        int listening = socket.value();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment capture = Libc.errnoSegment(arena);
            while (true) {
                if (!libc.awaitReadable(listening, deadline - System.nanoTime(), "accept on " + path)) {
                    return Optional.empty();
                }
                int fd = libc.accept4(capture, listening, Libc.SOCK_CLOEXEC);
                if (fd >= 0) {
                    return Optional.of(UnixSocketFdChannel.established(
                            OwnedFd.adopt(fd, "Unix socket accepted on " + path), "accepted on " + path));
                }
                int errno = Libc.errno(capture);
                if (errno != Libc.EINTR && errno != Libc.EAGAIN) {
                    throw libc.failure("accept4(" + path + ")", errno);
                }
            }
        }
    }

    /** Closes the listening socket and removes its path; a second call does nothing. */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            try {
                socket.close();
            } finally {
                unlinkQuietly(path);
            }
        }
    }

    private static void unlinkQuietly(Path path) {
        Libc libc = Libc.get();
        try (Arena arena = Arena.ofConfined()) {
            // A missing path (someone removed it already) is fine; the socket file is ours to remove.
            libc.unlink(Libc.errnoSegment(arena), arena.allocateFrom(path.toString()));
        }
    }

    @Override
    public String toString() {
        return "UnixSocketListener[" + path + (closed.get() ? ", closed]" : "]");
    }
}
