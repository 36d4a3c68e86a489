package dev.ubuf.tests;

import dev.ubuf.cuda.Cuda;
import dev.ubuf.cuda.KernelLibrary;
import org.junit.jupiter.api.Assumptions;

/** Skips a GPU test, saying why, when this machine cannot run it. */
final class Gpu {
    private Gpu() {
    }

    static void assumeGpus(int n) {
        var reason = Cuda.unavailableReason(n);
        if (reason.isPresent()) {
            System.out.println("SKIPPED (GPU test): " + reason.get());
        }
        Assumptions.assumeTrue(reason.isEmpty(), () -> "GPU test skipped: " + reason.orElse(""));
        Assumptions.assumeTrue(KernelLibrary.available(), "GPU test skipped: built without nvcc (no kernels)");
    }
}
