package dev.ubuf.cuda;

import dev.ubuf.UbufException;

/** The build had no nvcc, so the kernels jar carries no fatbin. */
public final class KernelsUnavailableException extends UbufException {
    public KernelsUnavailableException(String message) {
        super(message);
    }
}
