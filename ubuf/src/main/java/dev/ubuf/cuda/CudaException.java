package dev.ubuf.cuda;

import dev.ubuf.UbufException;

/**
 * A CUDA driver call failed. Carries the call's name and the driver's error name (e.g. CUDA_ERROR_INVALID_VALUE).
 */
public class CudaException extends UbufException {
    private final String call;
    private final int code;
    private final String errorName;

    public CudaException(String call, int code, String errorName) {
        super(call + " failed: " + errorName + " (" + code + ")");
        this.call = call;
        this.code = code;
        this.errorName = errorName;
    }

    public String call() {
        return call;
    }

    public int code() {
        return code;
    }

    public String errorName() {
        return errorName;
    }
}
