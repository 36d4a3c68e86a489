package dev.ubuf.posix;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import dev.ubuf.ffi.NativeLibrary;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.util.Optional;

/**
 * The C environment of this process, which native libraries read with {@code getenv} (the CUDA driver reads its
 * settings at {@code cuInit}). {@link System#getenv} is a copy taken at JVM start: a variable set here is seen by
 * native code, not by it, and not by child processes started through {@link ProcessBuilder}.
 */
public final class NativeEnvironment {
    private NativeEnvironment() {
    }

    /** The variable's value in the C environment, if set. */
    public static synchronized Optional<String> get(String name) {
        check(name);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment value = (MemorySegment) Bound.GETENV.invokeExact(arena.allocateFrom(name));
            return value.equals(MemorySegment.NULL) ? Optional.empty()
                    : Optional.of(value.reinterpret(Long.MAX_VALUE).getString(0, StandardCharsets.UTF_8));
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    /**
     * Sets the variable unless it is already set (a user's choice wins); true when this call set it. Call it before
     * the native library that reads it starts: setenv is not safe against a concurrent getenv in another thread.
     */
    public static synchronized boolean setIfAbsent(String name, String value) {
        check(name);
        if (value.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("an environment value cannot hold a NUL character");
        }
        if (get(name).isPresent()) {
            return false;
        }
        try (Arena arena = Arena.ofConfined()) {
            int rc = (int) Bound.SETENV.invokeExact(arena.allocateFrom(name), arena.allocateFrom(value), 0);
            if (rc != 0) {
                throw new IllegalStateException("setenv(" + name + ") failed");
            }
            return true;
        } catch (RuntimeException e) {
            throw e;
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    private static void check(String name) {
        if (name.isEmpty() || name.indexOf('=') >= 0 || name.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("not an environment variable name: '" + name + "'");
        }
    }

    private static final class Bound {
        static final MethodHandle GETENV = NativeLibrary.standardLibraries().bind("getenv",
                FunctionDescriptor.of(ADDRESS, ADDRESS));
        static final MethodHandle SETENV = NativeLibrary.standardLibraries().bind("setenv",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT));
    }
}
