package dev.ubuf.tests;

import dev.ubuf.testutil.GpuAssumptions;

/**
 * What most tests here need: GPUs and the ubuf kernels. An unmet need skips the test with the reason, or fails it
 * under {@code -Dubuf.requireGpu=true} (see {@link dev.ubuf.testutil.UbufTestExtension}).
 */
final class Gpu {
    private Gpu() {
    }

    static void assumeGpus(int n) {
        GpuAssumptions.assumeGpus(n);
        GpuAssumptions.assumeKernels();
    }
}
