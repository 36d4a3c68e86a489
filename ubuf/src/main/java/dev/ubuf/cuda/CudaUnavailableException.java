package dev.ubuf.cuda;

import dev.ubuf.UbufException;

/** No CUDA driver or no GPU on this machine. */
public final class CudaUnavailableException extends UbufException {
    public CudaUnavailableException(String message) {
        super(message);
    }
}
