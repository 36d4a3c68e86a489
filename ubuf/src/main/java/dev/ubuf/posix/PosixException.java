package dev.ubuf.posix;

import dev.ubuf.UbufException;

/** A libc call failed; carries the call (with its argument, e.g. the socket path), errno and libc's text for it. */
public class PosixException extends UbufException {
    private final String call;
    private final int errno;

    public PosixException(String call, int errno, String errorText) {
        super(call + " failed: " + errorText + " (errno " + errno + ")");
        this.call = call;
        this.errno = errno;
    }

    public String call() {
        return call;
    }

    public int errno() {
        return errno;
    }
}
