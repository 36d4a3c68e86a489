package dev.ubuf.cuda;

/** The build had no nvcc, so the kernels jar carries no fatbin. */
public final class KernelsUnavailableException extends RuntimeException {
    public KernelsUnavailableException(String message) {
        super(message);
    }
}
