package dev.ubuf.fake;

import static java.lang.foreign.ValueLayout.ADDRESS;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * A C stand-in for a native library (test resource dev/ubuf/fake/NAME.c), compiled with the machine's gcc into a
 * temporary .so. Lets CPU tests drive the real java.lang.foreign downcalls and check what crosses the boundary
 * (struct bytes, by-value structs, size_t and pointer arguments). Empty where gcc is missing.
 */
@SuppressWarnings("restricted")
public final class FakeNativeLibrary {
    private final Path path;
    private final MethodHandle lastCall;

    private FakeNativeLibrary(Path path) {
        this.path = path;
        MemorySegment symbol = SymbolLookup.libraryLookup(path, Arena.global()).find("fake_last_call").orElseThrow();
        this.lastCall = Linker.nativeLinker().downcallHandle(symbol, FunctionDescriptor.of(ADDRESS));
    }

    /** Compiles dev/ubuf/fake/{name}.c, or empty when gcc is unavailable. */
    public static Optional<FakeNativeLibrary> build(String name) {
        try {
            Path dir = Files.createTempDirectory("ubuf-fake-");
            Path source = dir.resolve(name + ".c");
            try (InputStream in = FakeNativeLibrary.class.getResourceAsStream(name + ".c")) {
                if (in == null) {
                    throw new IllegalStateException("missing test resource dev/ubuf/fake/" + name + ".c");
                }
                Files.copy(in, source);
            }
            Path lib = dir.resolve("lib" + name + ".so");
            Process gcc = new ProcessBuilder("gcc", "-shared", "-fPIC", "-O1", "-o", lib.toString(), source.toString())
                    .redirectErrorStream(true).start();
            String out = new String(gcc.getInputStream().readAllBytes());
            if (!gcc.waitFor(60, TimeUnit.SECONDS) || gcc.exitValue() != 0) {
                throw new IllegalStateException("gcc failed on " + name + ".c:\n" + out);
            }
            return Optional.of(new FakeNativeLibrary(lib));
        } catch (IOException e) {
            return Optional.empty(); // no gcc on this machine
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Optional.empty();
        }
    }

    /** The absolute path, usable as a soname for dlopen. */
    public String path() {
        return path.toString();
    }

    /** What the last call of the fake received, as the fake formatted it. */
    public String lastCall() {
        try {
            return ((MemorySegment) lastCall.invokeExact()).reinterpret(Long.MAX_VALUE).getString(0);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }
}
