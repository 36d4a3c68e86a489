package dev.ubuf.ffi;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ubuf.UbufException;
import dev.ubuf.testutil.ChildJvm;
import java.io.IOException;
import java.lang.foreign.FunctionDescriptor;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The binding helper: opening from candidates, binding symbols, unchecked downcall failures, native access. */
class NativeLibraryTest {
    static final FunctionDescriptor INT_OF_NOTHING = FunctionDescriptor.of(JAVA_INT);

    @Test
    void aMissingLibraryIsReportedWithEveryCandidateInOrder() {
        List<String> candidates = List.of("libubuf-missing-a.so.13", "/nonexistent/dir/libubuf-missing-b.so.12");
        var e = assertThrows(NativeLibraryException.NotFound.class, () -> NativeLibrary.open(candidates));
        assertEquals("none of [libubuf-missing-a.so.13, /nonexistent/dir/libubuf-missing-b.so.12] could be loaded",
                e.getMessage());
        assertEquals(candidates, e.candidates());
        assertInstanceOf(IllegalArgumentException.class, e.getCause(), "the loader's error of the first candidate");
        assertEquals(1, e.getSuppressed().length, "the loader's error of the second candidate");
    }

    @Test
    void aSingleMissingCandidateIsNamedAlone() {
        var e = assertThrows(NativeLibraryException.NotFound.class,
                () -> NativeLibrary.open(List.of("libubuf-missing.so.2")));
        assertEquals("libubuf-missing.so.2 could not be loaded", e.getMessage());
    }

    @Test
    void theFirstCandidateThatLoadsIsTheOneOpened() {
        NativeLibrary libc = NativeLibrary.open(List.of("libubuf-missing.so.1", "libc.so.6"));
        assertEquals("libc.so.6", libc.name());
    }

    @Test
    void aBoundSymbolCanBeCalled() throws Throwable {
        MethodHandle getpid = NativeLibrary.open(List.of("libc.so.6")).bind("getpid", INT_OF_NOTHING);
        assertEquals(ProcessHandle.current().pid(), (int) getpid.invokeExact());
    }

    @Test
    void aMissingSymbolIsNamedWithItsLibrary() {
        NativeLibrary libc = NativeLibrary.open(List.of("libc.so.6"));
        var e = assertThrows(NativeLibraryException.MissingSymbol.class,
                () -> libc.bind("ubuf_no_such_function", INT_OF_NOTHING));
        assertEquals("libc.so.6 has no symbol ubuf_no_such_function", e.getMessage());
        assertEquals("libc.so.6", e.library());
        assertEquals(List.of("ubuf_no_such_function"), e.symbols());
    }

    @Test
    void versionedNamesFallBackInOrderAndAllAreNamedWhenNoneExists() throws Throwable {
        NativeLibrary libc = NativeLibrary.open(List.of("libc.so.6"));
        MethodHandle getpid = libc.bindFirst(List.of("getpid_ubuf_v2", "getpid"), INT_OF_NOTHING);
        assertEquals(ProcessHandle.current().pid(), (int) getpid.invokeExact());
        var e = assertThrows(NativeLibraryException.MissingSymbol.class,
                () -> libc.bindFirst(List.of("ubuf_f_v2", "ubuf_f"), INT_OF_NOTHING));
        assertEquals("libc.so.6 has no symbol of [ubuf_f_v2, ubuf_f]", e.getMessage());
    }

    @Test
    void anOptionalSymbolIsEmptyWhenAbsent() {
        NativeLibrary libc = NativeLibrary.open(List.of("libc.so.6"));
        assertFalse(libc.bindOptional("ubuf_no_such_function", INT_OF_NOTHING).isPresent());
        assertTrue(libc.bindOptional("getpid", INT_OF_NOTHING).isPresent());
    }

    @Test
    void theStandardLibrariesHoldLibc() throws Throwable {
        MethodHandle getpid = NativeLibrary.standardLibraries().bind("getpid", INT_OF_NOTHING);
        assertEquals(ProcessHandle.current().pid(), (int) getpid.invokeExact());
    }

    @Test
    void downcallFailuresBecomeUncheckedWithoutLosingAnything() {
        IllegalStateException runtime = new IllegalStateException("as is");
        assertSame(runtime, NativeLibrary.unchecked(runtime));
        StackOverflowError error = new StackOverflowError();
        assertSame(error, assertThrows(StackOverflowError.class, () -> NativeLibrary.unchecked(error)));
        IOException checked = new IOException("impossible");
        RuntimeException wrapped = NativeLibrary.unchecked(checked);
        assertInstanceOf(UbufException.class, wrapped);
        assertSame(checked, wrapped.getCause());
    }

    @Test
    void theNativeAccessFlagNamesAllUnnamedOnTheClassPathAndTheModuleOnTheModulePath() {
        assertEquals("--enable-native-access=ALL-UNNAMED", NativeLibrary.nativeAccessFlag(getClass().getModule()));
        assertEquals("--enable-native-access=java.base", NativeLibrary.nativeAccessFlag(Object.class.getModule()));
    }

    @Test
    void whenTheJvmDeniesNativeAccessTheErrorNamesTheFlagToAdd() throws Exception {
        Process child = new ProcessBuilder(ChildJvm.javaBinary(), "--illegal-native-access=deny",
                "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", System.getProperty("java.class.path"),
                NativeAccessDeniedMain.class.getName()).redirectErrorStream(true).start();
        String output = new String(child.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(child.waitFor(60, TimeUnit.SECONDS), "child did not exit; output:\n" + output);
        assertTrue(output.contains("DENIED native access is not enabled, so ubuf cannot load libc.so.6: run java with "
                + "--enable-native-access=ALL-UNNAMED"), output);
        assertTrue(output.contains("FLAG --enable-native-access=ALL-UNNAMED"), output);
    }
}
