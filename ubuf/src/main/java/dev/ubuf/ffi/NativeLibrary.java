package dev.ubuf.ffi;

import dev.ubuf.UbufException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * A native library opened through java.lang.foreign, and the one place where ubuf's bindings (cuBLASLt, NCCL, the
 * CUDA VMM calls, libc, NVML) open libraries, bind functions and turn what a downcall throws into an unchecked
 * exception. Failures are {@link NativeLibraryException}s that name the candidates tried, the missing symbol, or the
 * exact {@code --enable-native-access} flag to add.
 */
@SuppressWarnings("restricted") // library lookup and downcall handles are this class's whole job
public final class NativeLibrary {
    private final String name;
    private final SymbolLookup lookup;

    private NativeLibrary(String name, SymbolLookup lookup) {
        this.name = name;
        this.lookup = lookup;
    }

    /** {@link #open(List, Arena)} for the life of the process, as libraries with global state (CUDA, NCCL) expect. */
    public static NativeLibrary open(List<String> candidates) {
        return open(candidates, Arena.global());
    }

    /**
     * Opens the first of {@code candidates} that loads, e.g. {@code libcublasLt.so.13} then {@code libcublasLt.so.12}.
     * A name with a '/' is opened as a path; any other goes through the dynamic loader's search (LD_LIBRARY_PATH,
     * the ld.so cache). The library stays loaded until {@code arena} closes.
     *
     * @throws NativeLibraryException.NotFound     naming every candidate when none loads
     * @throws NativeLibraryException.AccessDenied naming the flag when native access is denied
     */
    public static NativeLibrary open(List<String> candidates, Arena arena) {
        Objects.requireNonNull(arena, "arena");
        if (candidates.isEmpty()) {
            throw new IllegalArgumentException("no library names to try");
        }
        List<IllegalArgumentException> loaderErrors = new ArrayList<>();
        for (String candidate : candidates) {
            try {
                SymbolLookup lookup = candidate.contains("/")
                        ? SymbolLookup.libraryLookup(Path.of(candidate), arena)
                        : SymbolLookup.libraryLookup(candidate, arena);
                return new NativeLibrary(candidate, lookup);
            } catch (IllegalArgumentException e) {
                loaderErrors.add(e);
            } catch (IllegalCallerException e) {
                throw accessDenied("load " + candidate, e);
            }
        }
        throw new NativeLibraryException.NotFound(candidates, loaderErrors);
    }

    /** The libraries the JVM itself links (the C library on Linux), through the linker's default lookup. */
    public static NativeLibrary standardLibraries() {
        return new NativeLibrary("the C library", Linker.nativeLinker().defaultLookup());
    }

    /** The candidate that was opened (a soname or a path). */
    public String name() {
        return name;
    }

    /**
     * A downcall handle of {@code symbol}.
     *
     * @throws NativeLibraryException.MissingSymbol naming the library and the symbol when it is not there
     */
    public MethodHandle bind(String symbol, FunctionDescriptor descriptor, Linker.Option... options) {
        return bindFirst(List.of(symbol), descriptor, options);
    }

    /**
     * A downcall handle of the first of {@code symbols} the library has: versioned names before the plain one
     * (e.g. {@code nvmlInit_v2}, then {@code nvmlInit} in older libraries).
     *
     * @throws NativeLibraryException.MissingSymbol naming the library and every name tried
     */
    public MethodHandle bindFirst(List<String> symbols, FunctionDescriptor descriptor, Linker.Option... options) {
        for (String symbol : symbols) {
            Optional<MemorySegment> address = lookup.find(symbol);
            if (address.isPresent()) {
                return downcall(symbol, address.get(), descriptor, options);
            }
        }
        throw new NativeLibraryException.MissingSymbol(name, symbols);
    }

    /** A downcall handle of {@code symbol}, or empty where the library's version does not have it. */
    public Optional<MethodHandle> bindOptional(String symbol, FunctionDescriptor descriptor, Linker.Option... options) {
        return lookup.find(symbol).map(address -> downcall(symbol, address, descriptor, options));
    }

    private MethodHandle downcall(String symbol, MemorySegment address, FunctionDescriptor descriptor,
                                  Linker.Option... options) {
        try {
            return Linker.nativeLinker().downcallHandle(address, descriptor, options);
        } catch (IllegalCallerException e) {
            throw accessDenied("call " + symbol + " of " + name, e);
        }
    }

    /**
     * What a binding throws when {@code invokeExact} on a downcall handle threw {@code t}: unchecked exceptions and
     * errors unchanged (use as {@code throw NativeLibrary.unchecked(t)}). Downcalls throw nothing checked, so
     * anything else is a bug and is wrapped, never swallowed.
     */
    public static RuntimeException unchecked(Throwable t) {
        if (t instanceof RuntimeException r) {
            return r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        return new UbufException("unexpected checked exception from a native downcall", t);
    }

    /**
     * The flag that enables native access for {@code module}: {@code --enable-native-access=ALL-UNNAMED} on the
     * class path, the module's name on the module path.
     */
    public static String nativeAccessFlag(Module module) {
        return "--enable-native-access=" + (module.isNamed() ? module.getName() : "ALL-UNNAMED");
    }

    /** Names this class's module: it is the one making the restricted calls, so the one the JVM checks. */
    static NativeLibraryException.AccessDenied accessDenied(String action, IllegalCallerException cause) {
        String flag = nativeAccessFlag(NativeLibrary.class.getModule());
        return new NativeLibraryException.AccessDenied(action, flag, cause);
    }

    @Override
    public String toString() {
        return "NativeLibrary[" + name + "]";
    }
}
