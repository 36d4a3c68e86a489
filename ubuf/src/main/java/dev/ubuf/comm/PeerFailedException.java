package dev.ubuf.comm;

import dev.ubuf.bootstrap.BootstrapException;
import dev.ubuf.UbufException;

/** A peer of the domain died or aborted while this rank waited for it; the message names both and the wait. */
public final class PeerFailedException extends UbufException {
    public PeerFailedException(String message, BootstrapException cause) {
        super(message, cause);
    }
}
