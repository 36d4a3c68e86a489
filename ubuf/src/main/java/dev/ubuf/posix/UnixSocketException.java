package dev.ubuf.posix;

import dev.ubuf.UbufException;

/**
 * A Unix-socket exchange broke its contract: no answer before the deadline, the peer closed the connection, a message
 * without (or with a damaged) file descriptor, or a peer that runs as another user.
 */
public class UnixSocketException extends UbufException {
    public UnixSocketException(String message) {
        super(message);
    }
}
