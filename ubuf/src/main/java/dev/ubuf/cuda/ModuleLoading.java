package dev.ubuf.cuda;

import jcuda.driver.CUmoduleLoadingMode;
import jcuda.driver.JCudaDriver;

/**
 * CUDA's module loading mode, chosen before the driver starts: EAGER unless the user set CUDA_MODULE_LOADING.
 *
 * <p>With lazy loading (the driver's default since CUDA 12.2) a kernel is loaded at its first launch, and CUDA's
 * programming guide warns that loading may synchronise the context. Inside an overlapped step that is a deadlock:
 * a kernel launched for the first time (a cuBLASLt kernel the initialisation did not run, e.g. for a token count it
 * did not see) waits for the context while another of its streams waits on a peer's flag, which the peer raises only
 * after this host thread issues its next copy. Two H100s hung so on 2026-11-27 (rank 1 inside cublasLtMatmul for an
 * FP8 GEMM first launched in a step, rank 0 blocked in cuMemcpyAsync). Eager loading loads every kernel when the
 * context starts: a slower start and more GPU memory (cuBLASLt's kernels), and no loading inside a step.
 */
public final class ModuleLoading {
    /** The variable the driver reads at cuInit. */
    public static final String VARIABLE = "CUDA_MODULE_LOADING";

    private static final DriverDefault EAGER = new DriverDefault(VARIABLE, "EAGER",
            "kernels load lazily, which may deadlock an overlapped step that launches a kernel for the first time");

    private ModuleLoading() {
    }

    /**
     * Sets CUDA_MODULE_LOADING=EAGER in this process's C environment unless it is set; once per process, before
     * the first cuInit (later calls do nothing). Never throws: without the setting the driver keeps its default.
     */
    static void eagerUnlessChosen() {
        EAGER.applyOnce();
    }

    /** The mode the driver runs in (cuModuleGetLoadingMode), initialising the driver if needed. */
    public static String inEffect() {
        Cuda.deviceCount();
        int[] mode = new int[1];
        Cuda.check(JCudaDriver.cuModuleGetLoadingMode(mode), "cuModuleGetLoadingMode");
        return mode[0] == CUmoduleLoadingMode.CU_MODULE_EAGER_LOADING ? "EAGER"
                : mode[0] == CUmoduleLoadingMode.CU_MODULE_LAZY_LOADING ? "LAZY" : "mode " + mode[0];
    }
}
