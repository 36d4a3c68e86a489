package dev.ubuf.comm;

/** A wait passed its UB_TIMEOUT deadline; the message names the rank, peer, flag and values involved. */
public final class UbufTimeoutException extends RuntimeException {
    public UbufTimeoutException(String message) {
        super(message);
    }
}
