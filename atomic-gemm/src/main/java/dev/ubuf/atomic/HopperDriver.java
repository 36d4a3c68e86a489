package dev.ubuf.atomic;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.ubuf.cuda.CudaException;
import dev.ubuf.ffi.NativeLibrary;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.List;

/**
 * The driver calls the atomic GEMM needs and JCuda 12.6.0 lacks or hides (cuTensorMapEncodeTiled; a launch with
 * dynamic shared memory on a stream known by its raw handle), bound with java.lang.foreign on libcuda.so.1, the same
 * library JCuda uses: the CUDA context current on the calling thread applies. Every call is checked and raises
 * {@code CudaException.of(call, code, cuGetErrorName)}. Enum values are those of cuda.h (CUDA 13.0).
 */
@SuppressWarnings("restricted") // reads the driver's C strings; opening and binding are NativeLibrary's
final class HopperDriver {
    static final int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;
    static final int TENSOR_MAP_BYTES = 128;

    private final MethodHandle cuModuleLoadData;
    private final MethodHandle cuModuleGetFunction;
    private final MethodHandle cuModuleUnload;
    private final MethodHandle cuFuncSetAttribute;
    private final MethodHandle cuLaunchKernel;
    private final MethodHandle cuTensorMapEncodeTiled;
    private final MethodHandle cuGetErrorName;
    private final MethodHandle cuOccupancyMaxActiveClusters;

    HopperDriver() {
        NativeLibrary cuda = NativeLibrary.open(List.of("libcuda.so.1"));
        cuModuleLoadData = cuda.bind("cuModuleLoadData", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        cuModuleGetFunction = cuda.bind("cuModuleGetFunction",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS));
        cuModuleUnload = cuda.bind("cuModuleUnload", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
        cuFuncSetAttribute = cuda.bind("cuFuncSetAttribute",
                FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_INT));
        cuLaunchKernel = cuda.bind("cuLaunchKernel", FunctionDescriptor.of(JAVA_INT, JAVA_LONG,
                JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG, ADDRESS, ADDRESS));
        cuTensorMapEncodeTiled = cuda.bind("cuTensorMapEncodeTiled", FunctionDescriptor.of(JAVA_INT,
                ADDRESS, JAVA_INT, JAVA_INT, JAVA_LONG, ADDRESS, ADDRESS, ADDRESS, ADDRESS,
                JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT));
        cuGetErrorName = cuda.bind("cuGetErrorName", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS));
        cuOccupancyMaxActiveClusters = cuda.bind("cuOccupancyMaxActiveClusters",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS));
    }

    /** Loads an image into the current context; returns the CUmodule. */
    long loadModule(byte[] image, String what) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment bytes = arena.allocate(image.length, 16);
            MemorySegment.copy(image, 0, bytes, java.lang.foreign.ValueLayout.JAVA_BYTE, 0, image.length);
            MemorySegment out = arena.allocate(JAVA_LONG);
            check((int) cuModuleLoadData.invokeExact(out, bytes), "cuModuleLoadData(" + what + ")");
            return out.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    long function(long module, String name) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_LONG);
            check((int) cuModuleGetFunction.invokeExact(out, module, arena.allocateFrom(name)),
                    "cuModuleGetFunction(" + name + ")");
            return out.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    void unloadModule(long module) {
        try {
            check((int) cuModuleUnload.invokeExact(module), "cuModuleUnload");
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    void setMaxDynamicSharedMemory(long function, int bytes, String name) {
        try {
            check((int) cuFuncSetAttribute.invokeExact(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    bytes), "cuFuncSetAttribute(" + name + ", MAX_DYNAMIC_SHARED_SIZE_BYTES, " + bytes + ")");
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    /** Bytes of CUlaunchConfig (cuda.h): 7 uints, the stream at 32, the attribute pointer at 40, their count at 48. */
    static final int LAUNCH_CONFIG_BYTES = 56;

    /**
     * How many clusters of {@code function} (whose cluster size is compiled in) can be resident at once with
     * {@code block} threads and {@code sharedBytes} of dynamic shared memory a CTA: cuOccupancyMaxActiveClusters.
     */
    int maxActiveClusters(long function, String name, int clusterSize, int block, int sharedBytes) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment config = arena.allocate(LAUNCH_CONFIG_BYTES, 8); // zeroed: no stream, no attributes
            config.set(JAVA_INT, 0, clusterSize); // gridDimX: one cluster
            config.set(JAVA_INT, 4, 1);
            config.set(JAVA_INT, 8, 1);
            config.set(JAVA_INT, 12, block);
            config.set(JAVA_INT, 16, 1);
            config.set(JAVA_INT, 20, 1);
            config.set(JAVA_INT, 24, sharedBytes);
            MemorySegment out = arena.allocate(JAVA_INT);
            check((int) cuOccupancyMaxActiveClusters.invokeExact(out, function, config),
                    "cuOccupancyMaxActiveClusters(" + name + ")");
            return out.get(JAVA_INT, 0);
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    /** The 128 bytes of a CUtensorMap for {@code spec}, as 16 little-endian words (a by-value kernel argument). */
    long[] encodeTiled(TensorMapSpec spec) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment map = arena.allocate(TENSOR_MAP_BYTES, 64);
            MemorySegment dims = arena.allocateFrom(JAVA_LONG, spec.dims());
            MemorySegment strides = arena.allocateFrom(JAVA_LONG, spec.outerStride());
            MemorySegment box = arena.allocateFrom(JAVA_INT, spec.box());
            MemorySegment elementStrides = arena.allocateFrom(JAVA_INT, 1, 1);
            int rc = (int) cuTensorMapEncodeTiled.invokeExact(map, spec.dataType(), 2, spec.address(), dims,
                    strides, box, elementStrides, TensorMapSpec.CU_TENSOR_MAP_INTERLEAVE_NONE,
                    TensorMapSpec.CU_TENSOR_MAP_SWIZZLE_128B, TensorMapSpec.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                    TensorMapSpec.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
            check(rc, "cuTensorMapEncodeTiled(dims " + spec.dims()[0] + "x" + spec.dims()[1] + ", stride "
                    + spec.outerStride() + " B, box " + spec.box()[0] + "x" + spec.box()[1] + ")");
            return map.toArray(JAVA_LONG);
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    /**
     * Launches {@code function} on a 1-D grid. Each argument is a Long (8 bytes), Integer (4), Float (4) or a long[]
     * (its words by value, e.g. a CUtensorMap).
     */
    void launch(long function, String name, int grid, int block, int sharedBytes, long stream, Object... args) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment params = arena.allocate(ADDRESS, args.length);
            for (int i = 0; i < args.length; i++) {
                MemorySegment value = switch (args[i]) {
                    case Long v -> arena.allocateFrom(JAVA_LONG, v);
                    case Integer v -> arena.allocateFrom(JAVA_INT, v);
                    case Float v -> arena.allocateFrom(java.lang.foreign.ValueLayout.JAVA_FLOAT, v);
                    case long[] words -> arena.allocate(8L * words.length, 64).copyFrom(MemorySegment.ofArray(words));
                    default -> throw new IllegalArgumentException("unsupported kernel argument " + args[i]);
                };
                params.setAtIndex(ADDRESS, i, value);
            }
            check((int) cuLaunchKernel.invokeExact(function, grid, 1, 1, block, 1, 1, sharedBytes, stream, params,
                    MemorySegment.NULL), "cuLaunchKernel(" + name + ")");
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    private void check(int rc, String call) {
        if (rc != 0) {
            throw CudaException.of(call, rc, errorName(rc));
        }
    }

    private String errorName(int rc) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            int r = (int) cuGetErrorName.invokeExact(rc, out);
            MemorySegment s = out.get(ADDRESS, 0);
            return r == 0 && !s.equals(MemorySegment.NULL) ? s.reinterpret(256).getString(0) : "CUresult " + rc;
        } catch (Throwable t) {
            return "CUresult " + rc;
        }
    }
}
