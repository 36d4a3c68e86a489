package dev.ubuf.atomic;

/** How the GEMM's B operand is stored. */
public enum BLayout {
    /** Row-major [K, N] (N contiguous); its rows must be 16-byte aligned, so N (or ldb) a multiple of 8. */
    KN("bkn"),
    /** Stored transposed, [N, K] (K contiguous): a weight as torch stores it, y = x · Wᵀ. */
    NK("bnk");

    private final String kernelTag;

    BLayout(String kernelTag) {
        this.kernelTag = kernelTag;
    }

    /** The tag in the kernel's name ({@code ubuf_atomic_gemm_<in>_<tag>_<out>}). */
    String kernelTag() {
        return kernelTag;
    }
}
