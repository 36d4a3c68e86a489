package dev.ubuf.cuda;

/** No CUDA driver or no GPU on this machine. */
public final class CudaUnavailableException extends RuntimeException {
    public CudaUnavailableException(String message) {
        super(message);
    }
}
