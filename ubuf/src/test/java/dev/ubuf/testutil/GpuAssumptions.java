package dev.ubuf.testutil;

import dev.ubuf.cuda.Cuda;
import dev.ubuf.cuda.KernelLibrary;

/**
 * The one way a GPU test says what it needs. Each unmet need throws {@link GpuUnavailableException}: a skip with the
 * reason, or, with {@code -Dubuf.requireGpu=true}, a failure with it ({@link UbufTestExtension}). Call these in the
 * test, in {@code @BeforeEach} or in {@code @BeforeAll}; in {@code @BeforeAll} every test of the class is then
 * reported skipped (or failed) one by one.
 */
public final class GpuAssumptions {
    private GpuAssumptions() {
    }

    /** At least {@code n} GPUs behind a usable CUDA driver. */
    public static void assumeGpus(int n) {
        Cuda.unavailableReason(n).ifPresent(reason -> {
            throw new GpuUnavailableException(reason);
        });
    }

    /** The ubuf kernels were compiled into this build (nvcc was present). */
    public static void assumeKernels() {
        assumeGpu(KernelLibrary.available(), "built without nvcc (no ubuf kernels)");
    }

    /** A GPU capability or GPU library the test needs: {@code reason} says what is missing when it is not there. */
    public static void assumeGpu(boolean available, String reason) {
        if (!available) {
            throw new GpuUnavailableException(reason);
        }
    }
}
