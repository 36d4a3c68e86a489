package dev.ubuf.testutil;

import org.opentest4j.TestAbortedException;

/**
 * A GPU test cannot run here: no driver, too few GPUs, no kernels, or a GPU capability or library it needs is missing.
 * It skips the test with the reason, unless the run demands GPUs ({@link UbufTestExtension#REQUIRE_GPU}), where
 * {@link UbufTestExtension} turns it into a failure. Thrown by {@link GpuAssumptions}.
 */
public final class GpuUnavailableException extends TestAbortedException {
    private static final long serialVersionUID = 1L;

    public GpuUnavailableException(String reason) {
        super(reason);
    }
}
