import dev.ubuf.op.OverlapMethod;

/**
 * The ubuf core runtime: bootstrap, communicator and user buffers, CUDA, cuBLASLt, NCCL, the op model and the plan
 * executors.
 *
 * <p>Not exported: {@code dev.ubuf.posix} (libc through java.lang.foreign, used by the communicator's buffer
 * sharing only) and {@code dev.ubuf.ffi} (the java.lang.foreign plumbing of every binding), which is exported only
 * to the sibling modules that bind native libraries of their own (the Hopper driver entry points, NVML). The plans
 * ({@code dev.ubuf.plan}) and their executors ({@code dev.ubuf.exec}) are exported only to the modules that build or
 * run them (the method modules and the layers), and {@code exec} also to the benchmarks, since an op's bindings
 * ({@code OperandBindings}) still live there.
 *
 * <p>Overlap methods come from other modules as {@link OverlapMethod} services ({@link dev.ubuf.op.MethodRegistry}).
 * On the module path, native access is granted by module name: {@code --enable-native-access=dev.ubuf.core,jcuda}
 * (this module's java.lang.foreign bindings, JCuda's JNI libraries), plus {@code dev.ubuf.atomic} with the atomic
 * GEMM; on the class path, ALL-UNNAMED. JCuda as a module finds its native library only in its own jar: patch the
 * natives in ({@code --patch-module jcuda=jcuda-natives-*.jar}) or put it on java.library.path.
 */
// JCuda and commons-math3 have no module descriptor (automatic modules named after their jars); commons-math3 stays
// inside (TimingStats computes its percentiles). The qualified export names modules that are compiled after this one.
@SuppressWarnings({"requires-automatic", "module"})
module dev.ubuf.core {
    requires transitive dev.ubuf.kernels;
    requires jcuda;
    requires commons.math3;
    requires java.management;

    exports dev.ubuf;
    exports dev.ubuf.bootstrap;
    exports dev.ubuf.comm;
    exports dev.ubuf.config;
    exports dev.ubuf.cuda;
    exports dev.ubuf.fp8;
    exports dev.ubuf.gemm;
    exports dev.ubuf.nccl;
    exports dev.ubuf.op;
    exports dev.ubuf.devicekernels;
    exports dev.ubuf.resource;
    exports dev.ubuf.tensor;
    exports dev.ubuf.timing;
    exports dev.ubuf.trace;
    // Internal: the plans and their executors are the methods' and the layers' business, not a user's; the FFI
    // plumbing serves the modules that bind native libraries of their own.
    exports dev.ubuf.exec to dev.ubuf.ag, dev.ubuf.rs, dev.ubuf.atomic, dev.ubuf.layers, dev.ubuf.bench;
    exports dev.ubuf.plan to dev.ubuf.ag, dev.ubuf.rs, dev.ubuf.atomic, dev.ubuf.layers;
    exports dev.ubuf.ffi to dev.ubuf.atomic, dev.ubuf.bench;

    uses OverlapMethod;
    uses dev.ubuf.exec.AtomicGemmLauncher.Provider;
}
