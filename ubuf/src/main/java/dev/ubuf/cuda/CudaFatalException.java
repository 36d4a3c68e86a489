package dev.ubuf.cuda;

/**
 * A sticky CUDA error ({@link CudaError#isSticky()}): the context is dead, every later CUDA call in this process fails
 * the same way, and only a new process can use the GPU again. A rank that sees one must abort its domain, so that its
 * peers stop waiting for it, and must not try to free or reuse its GPU objects.
 */
public final class CudaFatalException extends CudaException {
    CudaFatalException(String call, int code, String errorName) {
        super(call, code, errorName, call + " failed: " + errorName + " (" + code + "); this error is sticky: the CUDA "
                + "context is unusable and every later CUDA call in this process fails, so the process must restart");
    }
}
