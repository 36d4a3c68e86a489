package dev.ubuf.posix;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A file descriptor this object owns: it is closed exactly once, by {@link #close()}, unless ownership is handed on
 * with {@link #release()}. Received descriptors are close-on-exec, so launched child processes do not inherit them.
 */
public final class OwnedFd implements AutoCloseable {
    private static final int CLOSED = -1;

    private final AtomicInteger fd;
    private final String description;

    private OwnedFd(int fd, String description) {
        if (fd < 0) {
            throw new IllegalArgumentException("not a file descriptor: " + fd + " (" + description + ")");
        }
        this.fd = new AtomicInteger(fd);
        this.description = description;
    }

    /** Takes ownership of a raw descriptor (e.g. one cuMemExportToShareableHandle returned). */
    public static OwnedFd adopt(int fd, String description) {
        return new OwnedFd(fd, description);
    }

    /** open(path, O_RDONLY | O_CLOEXEC). */
    public static OwnedFd openReadOnly(Path path) {
        Libc libc = Libc.get();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment capture = Libc.errnoSegment(arena);
            MemorySegment cPath = arena.allocateFrom(path.toString(), StandardCharsets.UTF_8);
            while (true) {
                int result = libc.open(capture, cPath, Libc.O_RDONLY | Libc.O_CLOEXEC, 0);
                if (result >= 0) {
                    return new OwnedFd(result, "file " + path);
                }
                int errno = Libc.errno(capture);
                if (errno != Libc.EINTR) {
                    throw libc.failure("open(" + path + ")", errno);
                }
            }
        }
    }

    /** The raw descriptor number; stays owned by this object. */
    public int value() {
        int value = fd.get();
        if (value == CLOSED) {
            throw new IllegalStateException("file descriptor of " + description + " is already closed or released");
        }
        return value;
    }

    public boolean isOpen() {
        return fd.get() != CLOSED;
    }

    /** A second descriptor for the same open file (fcntl F_DUPFD_CLOEXEC), owned by the caller. */
    public OwnedFd duplicate() {
        int source = value();
        Libc libc = Libc.get();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment capture = Libc.errnoSegment(arena);
            int copy = libc.fcntl(capture, source, Libc.F_DUPFD_CLOEXEC, 0);
            if (copy < 0) {
                throw libc.failure("fcntl(F_DUPFD_CLOEXEC, " + description + " fd " + source + ")", Libc.errno(capture));
            }
            return new OwnedFd(copy, description + " (duplicate)");
        }
    }

    /**
     * read(2) into {@code buffer}: returns the number of bytes read, 0 at end of file. Reads at the open file's
     * offset, which every process holding a descriptor of that open file shares.
     */
    public int read(byte[] buffer) {
        int source = value();
        if (buffer.length == 0) {
            return 0;
        }
        Libc libc = Libc.get();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment capture = Libc.errnoSegment(arena);
            MemorySegment native_ = arena.allocate(buffer.length);
            while (true) {
                long n = libc.read(capture, source, native_, buffer.length);
                if (n >= 0) {
                    MemorySegment.copy(native_, ValueLayout.JAVA_BYTE, 0, buffer, 0, (int) n);
                    return (int) n;
                }
                int errno = Libc.errno(capture);
                if (errno != Libc.EINTR) {
                    throw libc.failure("read(" + description + " fd " + source + ")", errno);
                }
            }
        }
    }

    /**
     * Hands the descriptor to the caller, who must close it; this object no longer does.
     *
     * @return the raw descriptor
     */
    public int release() {
        int value = fd.getAndSet(CLOSED);
        if (value == CLOSED) {
            throw new IllegalStateException("file descriptor of " + description + " is already closed or released");
        }
        return value;
    }

    /** Closes the descriptor; a second call does nothing. */
    @Override
    public void close() {
        int value = fd.getAndSet(CLOSED);
        if (value != CLOSED) {
            Libc.get().closeOrThrow(value, description);
        }
    }

    @Override
    public String toString() {
        int value = fd.get();
        return "OwnedFd[" + (value == CLOSED ? "closed" : value) + ", " + description + "]";
    }
}
