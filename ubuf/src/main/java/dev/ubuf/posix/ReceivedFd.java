package dev.ubuf.posix;

/**
 * A file descriptor that arrived over a Unix socket, with the tag the sender attached. Closing it closes the fd.
 */
public record ReceivedFd(long tag, OwnedFd fd) implements AutoCloseable {
    public ReceivedFd {
        java.util.Objects.requireNonNull(fd, "fd");
    }

    @Override
    public void close() {
        fd.close();
    }
}
