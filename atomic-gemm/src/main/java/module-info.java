/**
 * The sm_90a atomic GEMM: tiles that wait on per-chunk arrival counters (AG) or raise per-chunk done counters (RS).
 * Its fatbin is a resource of {@code dev.ubuf.kernels}, which opens that package for it. Registers the "atomic"
 * overlap method of both families and the executor's launcher of atomic GEMM plan steps.
 */
module dev.ubuf.atomic {
    requires transitive dev.ubuf.core;
    requires transitive dev.ubuf.kernels;
    requires dev.ubuf.ag;
    requires dev.ubuf.rs;

    exports dev.ubuf.atomic;

    provides dev.ubuf.op.OverlapMethod with
            dev.ubuf.atomic.AtomicAllGatherGemm,
            dev.ubuf.atomic.AtomicGemmReduceScatter;
    provides dev.ubuf.exec.AtomicGemmLauncher.Provider with
            dev.ubuf.atomic.AtomicLauncherProvider;
}
