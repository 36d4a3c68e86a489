package dev.ubuf.gemm;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.ubuf.fake.FakeNativeLibrary;
import dev.ubuf.ffi.NativeLibrary;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.List;
import java.util.Optional;

/**
 * The fake libcublasLt (test resource {@code dev/ubuf/fake/fake_cublaslt.c}) compiled with gcc, the binding loaded
 * on it, and its probes: what the last matmul and heuristic saw, and how many of its objects are alive. Built once per
 * test class; a class without gcc is skipped.
 */
final class FakeCublasLt {
    private final FakeNativeLibrary fake;
    private final CublasLt library;
    private final MethodHandle liveObjects;
    private final MethodHandle lastHeuristic;

    private FakeCublasLt(FakeNativeLibrary fake) {
        this.fake = fake;
        this.library = CublasLt.load(List.of(fake.path()));
        NativeLibrary symbols = NativeLibrary.open(List.of(fake.path()));
        this.liveObjects = symbols.bind("fake_live_objects", FunctionDescriptor.of(ValueLayout.JAVA_INT));
        this.lastHeuristic = symbols.bind("fake_last_heuristic", FunctionDescriptor.of(ValueLayout.ADDRESS));
    }

    /** Builds the fake, or skips the calling test class where gcc is missing. */
    static FakeCublasLt buildOrSkip() {
        Optional<FakeNativeLibrary> built = FakeNativeLibrary.build("fake_cublaslt");
        assumeTrue(built.isPresent(), "gcc not available: cannot build the fake libcublasLt");
        return new FakeCublasLt(built.get());
    }

    /** The binding, loaded on the fake. */
    CublasLt library() {
        return library;
    }

    /** What the last cublasLtMatmul received, as the fake formats it. */
    String lastCall() {
        return fake.lastCall();
    }

    /** What the last cublasLtMatmulAlgoGetHeuristic received. */
    String lastHeuristic() {
        try {
            return ((MemorySegment) lastHeuristic.invokeExact()).reinterpret(Long.MAX_VALUE).getString(0);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** Handles, descriptors, layouts and preferences created and not yet destroyed. */
    int liveObjects() {
        try {
            return (int) liveObjects.invokeExact();
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }
}
