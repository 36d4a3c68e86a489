/**
 * The sm_90a atomic GEMM: tiles that wait on per-chunk arrival counters (AG) or raise per-chunk done counters (RS).
 * Its fatbin is a resource of {@code dev.ubuf.kernels}, which opens that package for it.
 */
module dev.ubuf.atomic {
    requires transitive dev.ubuf.core;
    requires transitive dev.ubuf.kernels;

    exports dev.ubuf.atomic;
}
