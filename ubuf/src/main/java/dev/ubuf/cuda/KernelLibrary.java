package dev.ubuf.cuda;

import jcuda.Pointer;
import jcuda.driver.CUfunction;
import jcuda.driver.CUfunction_attribute;
import jcuda.driver.CUmodule;
import jcuda.driver.JCudaDriver;

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The ubuf kernels (the fatbin resource of the ubuf-kernels jar) loaded into one context. Launches take typed
 * arguments: Long/Integer/Float boxed scalars, or a long[] passed by value as a struct of 64-bit words.
 */
public final class KernelLibrary implements AutoCloseable {
    private final CudaContext context;
    private final CUmodule module = new CUmodule();
    private final Map<String, CUfunction> functions = new HashMap<>();
    private final Map<String, Integer> sharedAllowed = new HashMap<>();
    private final Map<String, Integer> residentBlocks = new HashMap<>();
    private final ResourceLedger.Entry entry;
    private final AtomicBoolean closed = new AtomicBoolean();

    private KernelLibrary(CudaContext context, dev.ubuf.kernels.KernelImage image) {
        this.context = context;
        context.makeCurrent();
        Cuda.check(JCudaDriver.cuModuleLoadData(module, image.fatbin()), "cuModuleLoadData(ubuf_kernels.fatbin)");
        this.entry = context.ledger().track(this, "kernel library", "ubuf_kernels.fatbin", 0);
        try {
            // Every kernel now, not at its first launch. ubuf starts CUDA with eager loading (ModuleLoading), but
            // where the user chose CUDA_MODULE_LOADING=LAZY, cuModuleGetFunction loads a kernel and loading may wait
            // for the context's running kernels: a first launch issued while a wait kernel spins for a peer whose
            // host is stuck the same way would deadlock the GPUs (the CUDA guide's lazy-loading hazard).
            for (String name : new java.util.TreeSet<>(image.kernels())) {
                function(name);
            }
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    /** Loads the kernels into {@code context}, each one now; fails clearly when the build had no nvcc. */
    public static KernelLibrary load(CudaContext context) {
        dev.ubuf.kernels.KernelImage image;
        try {
            image = dev.ubuf.kernels.KernelImage.load();
        } catch (IllegalStateException | java.io.UncheckedIOException e) {
            throw new KernelsUnavailableException(e.getMessage());
        }
        return new KernelLibrary(context, image);
    }

    /** Whether the kernels were compiled into this build (nvcc was present). */
    public static boolean available() {
        return dev.ubuf.kernels.KernelImage.isAvailable();
    }

    private synchronized CUfunction function(String name) {
        if (closed.get()) {
            throw new IllegalStateException("kernel library is closed");
        }
        return functions.computeIfAbsent(name, n -> {
            CUfunction f = new CUfunction();
            Cuda.check(JCudaDriver.cuModuleGetFunction(f, module, n), "cuModuleGetFunction(" + n + ")");
            return f;
        });
    }

    /** Launches {@code name} on a 1-D grid. */
    public void launch(String name, int gridX, int blockX, CudaStream stream, Object... args) {
        launch(name, gridX, blockX, 0, stream, args);
    }

    /**
     * Launches {@code name} on a 1-D grid with {@code sharedBytes} of dynamic shared memory; the function's limit is
     * raised to it first (once per function and size), as static and dynamic shared memory share the default 48 KiB.
     */
    public void launch(String name, int gridX, int blockX, int sharedBytes, CudaStream stream, Object... args) {
        if (sharedBytes < 0) {
            throw new IllegalArgumentException("sharedBytes must be >= 0, got " + sharedBytes);
        }
        CUfunction f = function(name);
        if (sharedBytes > 0) {
            // A kernel's static shared memory counts against the same default 48 KiB, so any dynamic size is
            // allowed explicitly (once per function and size).
            allowShared(name, f, sharedBytes);
        }
        Pointer[] params = new Pointer[args.length];
        for (int i = 0; i < args.length; i++) {
            params[i] = switch (args[i]) {
                case Long v -> Pointer.to(new long[]{v});
                case Integer v -> Pointer.to(new int[]{v});
                case Float v -> Pointer.to(new float[]{v});
                case long[] words -> Pointer.to(words);
                default -> throw new IllegalArgumentException("unsupported kernel argument " + args[i]);
            };
        }
        Cuda.check(JCudaDriver.cuLaunchKernel(f, gridX, 1, 1, blockX, 1, 1, sharedBytes, stream.handle(),
                Pointer.to(params), null), "cuLaunchKernel(" + name + ")");
    }

    /**
     * Blocks of {@code blockX} threads (without dynamic shared memory) of {@code name} that one SM holds at once, as
     * the driver computes it from the kernel's registers, shared memory and launch bounds
     * (cuOccupancyMaxActiveBlocksPerMultiprocessor): a host computation, no GPU work; cached per kernel and size.
     */
    public synchronized int residentBlocksPerSm(String name, int blockX) {
        if (blockX < 1) {
            throw new IllegalArgumentException("blockX must be >= 1, got " + blockX);
        }
        CUfunction f = function(name);
        return residentBlocks.computeIfAbsent(name + "/" + blockX, key -> {
            int[] blocks = new int[1];
            Cuda.check(JCudaDriver.cuOccupancyMaxActiveBlocksPerMultiprocessor(blocks, f, blockX, 0),
                    "cuOccupancyMaxActiveBlocksPerMultiprocessor(" + name + ", " + blockX + ")");
            return blocks[0];
        });
    }

    private synchronized void allowShared(String name, CUfunction f, int sharedBytes) {
        Integer allowed = sharedAllowed.get(name);
        if (allowed == null || allowed < sharedBytes) {
            Cuda.check(JCudaDriver.cuFuncSetAttribute(f,
                    CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, sharedBytes),
                    "cuFuncSetAttribute(" + name + ", max dynamic shared " + sharedBytes + ")");
            sharedAllowed.put(name, sharedBytes);
        }
    }

    public CudaContext context() {
        return context;
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            try {
                Cuda.check(JCudaDriver.cuModuleUnload(module), "cuModuleUnload");
            } finally {
                entry.close();
            }
        }
    }
}
