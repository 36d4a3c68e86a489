package dev.ubuf.cuda;

/**
 * CUDA_ERROR_OUT_OF_MEMORY: the device (or the driver's host-side bookkeeping) has no room for the request. Unlike a
 * {@link CudaFatalException} the context is intact: freeing memory and retrying can succeed.
 */
public final class DeviceOutOfMemoryException extends CudaException {
    DeviceOutOfMemoryException(String call, int code, String errorName) {
        super(call, code, errorName);
    }
}
