package dev.ubuf.cuda;

import dev.ubuf.UbufException;

/**
 * A CUDA driver call failed. Carries the call's name, the raw {@code CUresult} ({@link #code()}), the driver's error
 * name (e.g. CUDA_ERROR_INVALID_VALUE) and the code as a {@link CudaError}.
 *
 * <p>{@link #of} picks the subclass a caller can act on: {@link CudaFatalException} for a sticky error (the context
 * is dead), {@link DeviceOutOfMemoryException} for CUDA_ERROR_OUT_OF_MEMORY.
 */
public class CudaException extends UbufException {
    /** {@link #code()} of a failure that has no {@code CUresult}, such as a driver library that cannot be loaded. */
    public static final int NO_RESULT = -1;

    private final String call;
    private final int code;
    private final String errorName;

    public CudaException(String call, int code, String errorName) {
        this(call, code, errorName, call + " failed: " + errorName + " (" + code + ")");
    }

    /** For subclasses that add to the standard message. */
    protected CudaException(String call, int code, String errorName, String message) {
        super(message);
        this.call = call;
        this.code = code;
        this.errorName = errorName;
    }

    /** The exception for {@code call} returning {@code code}: fatal for a sticky error, out-of-memory, or plain. */
    public static CudaException of(String call, int code, String errorName) {
        CudaError error = CudaError.of(code);
        if (error.isSticky()) {
            return new CudaFatalException(call, code, errorName);
        }
        if (error == CudaError.OUT_OF_MEMORY) {
            return new DeviceOutOfMemoryException(call, code, errorName);
        }
        return new CudaException(call, code, errorName);
    }

    public String call() {
        return call;
    }

    /** The raw {@code CUresult}, also for codes {@link CudaError} does not know; {@link #NO_RESULT} when none. */
    public int code() {
        return code;
    }

    public String errorName() {
        return errorName;
    }

    /** The code as an enum: {@link CudaError#UNKNOWN} for a code it does not list (and for {@link #NO_RESULT}). */
    public CudaError error() {
        return CudaError.of(code);
    }
}
