package dev.ubuf.posix;

import java.nio.file.Path;
import java.time.Duration;

/** Child process of {@link UnixSocketFdChannelTest}: opens a file and sends its descriptor. Args: socket file tag. */
public final class FdSenderChildMain {
    private FdSenderChildMain() {
    }

    public static void main(String[] args) {
        Path socketPath = Path.of(args[0]);
        Path file = Path.of(args[1]);
        long tag = Long.parseLong(args[2]);
        try (OwnedFd fd = OwnedFd.openReadOnly(file);
             UnixSocketFdChannel channel = UnixSocketFdChannel.connect(socketPath, Duration.ofSeconds(20))) {
            channel.sendFd(fd, tag);
            // Our copies close here; the receiver's descriptor keeps the open file alive.
            System.out.println("SENT pid=" + ProcessHandle.current().pid() + " peer=" + channel.peer());
        }
    }
}
