package dev.ubuf.cuda;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.ubuf.ffi.NativeLibrary;
import dev.ubuf.ffi.NativeLibraryException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;
import java.util.List;
import java.util.Optional;

/**
 * {@code cuLaunchKernelEx} with programmatic stream serialization (Hopper's programmatic dependent launch), bound with
 * java.lang.foreign on libcuda.so.1: JCuda 12.6 has no {@code cuLaunchKernelEx}. A kernel launched so may start while
 * the kernel ahead of it in the stream is still running, once that kernel's blocks have run
 * {@code griddepcontrol.launch_dependents} (or ended); it must run {@code griddepcontrol.wait} before it reads what
 * that kernel wrote. Struct layouts are those of /usr/local/cuda/include/cuda.h, CUDA 13.0, sizes and offsets verified
 * with gcc: {@code CUlaunchConfig} 56 bytes (sharedMemBytes at 24, hStream 32, attrs 40, numAttrs 48),
 * {@code CUlaunchAttribute} 72 bytes (id at 0, the 64-byte value union at 8).
 */
final class ProgrammaticLaunch {
    static final int CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6;

    static final StructLayout CU_LAUNCH_CONFIG = MemoryLayout.structLayout(
            JAVA_INT.withName("gridDimX"),
            JAVA_INT.withName("gridDimY"),
            JAVA_INT.withName("gridDimZ"),
            JAVA_INT.withName("blockDimX"),
            JAVA_INT.withName("blockDimY"),
            JAVA_INT.withName("blockDimZ"),
            JAVA_INT.withName("sharedMemBytes"),
            MemoryLayout.paddingLayout(4),
            ADDRESS.withName("hStream"),
            ADDRESS.withName("attrs"),
            JAVA_INT.withName("numAttrs"),
            MemoryLayout.paddingLayout(4)).withName("CUlaunchConfig");

    static final StructLayout CU_LAUNCH_ATTRIBUTE = MemoryLayout.structLayout(
            JAVA_INT.withName("id"),
            MemoryLayout.paddingLayout(4),
            MemoryLayout.sequenceLayout(64, java.lang.foreign.ValueLayout.JAVA_BYTE).withName("value"))
            .withName("CUlaunchAttribute");

    private static final long GRID_X = CU_LAUNCH_CONFIG.byteOffset(MemoryLayout.PathElement.groupElement("gridDimX"));
    private static final long SHARED = CU_LAUNCH_CONFIG.byteOffset(
            MemoryLayout.PathElement.groupElement("sharedMemBytes"));
    private static final long STREAM = CU_LAUNCH_CONFIG.byteOffset(MemoryLayout.PathElement.groupElement("hStream"));
    private static final long ATTRS = CU_LAUNCH_CONFIG.byteOffset(MemoryLayout.PathElement.groupElement("attrs"));
    private static final long NUM_ATTRS = CU_LAUNCH_CONFIG.byteOffset(
            MemoryLayout.PathElement.groupElement("numAttrs"));
    private static final long ATTR_VALUE = CU_LAUNCH_ATTRIBUTE.byteOffset(
            MemoryLayout.PathElement.groupElement("value"));

    private ProgrammaticLaunch() {
    }

    /** cuLaunchKernelEx of this process's libcuda.so.1, or empty where the library or the symbol is not there. */
    static Optional<MethodHandle> bound() {
        return Binding.HANDLE;
    }

    private static final class Binding {
        static final Optional<MethodHandle> HANDLE = bind();

        private static Optional<MethodHandle> bind() {
            try {
                return NativeLibrary.open(List.of(CudaVmm.SONAME)).bindOptional("cuLaunchKernelEx",
                        FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, ADDRESS));
            } catch (NativeLibraryException e) {
                return Optional.empty();
            }
        }
    }

    /**
     * Writes the launch's config and its one attribute (programmatic stream serialization allowed) into
     * {@code arena}: a 1-D grid of {@code gridX} blocks of {@code blockX} threads on {@code stream} (a raw
     * CUstream).
     */
    static MemorySegment config(Arena arena, int gridX, int blockX, int sharedBytes, long stream) {
        MemorySegment attr = arena.allocate(CU_LAUNCH_ATTRIBUTE);
        attr.set(JAVA_INT, 0, CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION);
        attr.set(JAVA_INT, ATTR_VALUE, 1); // value.programmaticStreamSerializationAllowed
        MemorySegment config = arena.allocate(CU_LAUNCH_CONFIG);
        int[] dims = {gridX, 1, 1, blockX, 1, 1};
        for (int i = 0; i < dims.length; i++) {
            config.set(JAVA_INT, GRID_X + 4L * i, dims[i]);
        }
        config.set(JAVA_INT, SHARED, sharedBytes);
        config.set(JAVA_LONG, STREAM, stream);
        config.set(ADDRESS, ATTRS, attr);
        config.set(JAVA_INT, NUM_ATTRS, 1);
        return config;
    }

    /** The kernel's parameters as cuLaunchKernelEx takes them: an array of pointers, one to each value. */
    static MemorySegment parameters(Arena arena, Object... args) {
        MemorySegment array = arena.allocate(ADDRESS, Math.max(1, args.length));
        for (int i = 0; i < args.length; i++) {
            MemorySegment value = switch (args[i]) {
                case Long v -> arena.allocateFrom(JAVA_LONG, v);
                case Integer v -> arena.allocateFrom(JAVA_INT, v);
                case Float v -> arena.allocateFrom(JAVA_FLOAT, v);
                case long[] words -> arena.allocateFrom(JAVA_LONG, words);
                default -> throw new IllegalArgumentException("unsupported kernel argument " + args[i]);
            };
            array.setAtIndex(ADDRESS, i, value);
        }
        return array;
    }

    /** Launches {@code function} (a raw CUfunction) so; the driver's result code. */
    static int launch(MethodHandle cuLaunchKernelEx, long function, int gridX, int blockX, int sharedBytes,
                      long stream, Object... args) {
        try (Arena arena = Arena.ofConfined()) {
            return (int) cuLaunchKernelEx.invokeExact(config(arena, gridX, blockX, sharedBytes, stream),
                    MemorySegment.ofAddress(function), parameters(arena, args), MemorySegment.NULL);
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }
}
