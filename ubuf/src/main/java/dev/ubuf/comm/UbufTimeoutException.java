package dev.ubuf.comm;

import dev.ubuf.UbufException;

/** A wait passed its UB_TIMEOUT deadline; the message names the rank, peer, flag and values involved. */
public final class UbufTimeoutException extends UbufException {
    public UbufTimeoutException(String message) {
        super(message);
    }
}
