package dev.ubuf.gemm;

import dev.ubuf.UbufException;

/**
 * A cuBLASLt call failed, no algorithm fits a GEMM, or libcublasLt could not be loaded. Unchecked: callers cannot
 * recover locally, and the message names the function and cuBLASLt's own status name and text.
 */
public class GemmException extends UbufException {
    /** {@link #status()} when the failure is not a cuBLASLt status (library missing, no algorithm). */
    public static final int NO_STATUS = -1;

    private final String function;
    private final int status;
    private final String statusName;

    /** A failure that has no cuBLASLt status, such as a missing library. */
    public GemmException(String message) {
        this(message, (Throwable) null);
    }

    public GemmException(String message, Throwable cause) {
        super(message, cause);
        this.function = null;
        this.status = NO_STATUS;
        this.statusName = null;
    }

    /** {@code function} returned {@code status}; the name and text are cuBLASLt's (cublasLtGetStatusName/String). */
    public GemmException(String function, int status, String statusName, String statusString) {
        super(function + " failed: " + statusName + " (" + status + ")"
                + (statusString == null || statusString.isEmpty() ? "" : ": " + statusString));
        this.function = function;
        this.status = status;
        this.statusName = statusName;
    }

    /** The cuBLASLt function that failed, or null when the failure is not a status. */
    public String function() {
        return function;
    }

    /** The cublasStatus_t value, or {@link #NO_STATUS}. */
    public int status() {
        return status;
    }

    /** The status's name, e.g. CUBLAS_STATUS_NOT_SUPPORTED, or null. */
    public String statusName() {
        return statusName;
    }
}
