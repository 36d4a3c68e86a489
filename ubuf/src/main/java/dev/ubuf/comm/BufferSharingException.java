package dev.ubuf.comm;

import dev.ubuf.UbufException;

/**
 * Sharing a user buffer between the ranks of a domain failed: the ranks disagree on its size, a file descriptor did
 * not arrive (or arrived from the wrong process) before the deadline, or a peer's memory could not be imported. The
 * message names this rank and the peer involved.
 */
public final class BufferSharingException extends UbufException {
    public BufferSharingException(String message) {
        super(message);
    }

    public BufferSharingException(String message, Throwable cause) {
        super(message, cause);
    }
}
