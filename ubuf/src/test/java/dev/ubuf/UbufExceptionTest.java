package dev.ubuf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * One root: whatever the library throws for a failure can be caught as a {@link UbufException}; bad input is an
 * {@link IllegalArgumentException} (or a refinement of it), as everywhere in Java.
 */
class UbufExceptionTest {

    @Test
    void everyExceptionClassOfTheLibraryIsAUbufException() throws Exception {
        List<Class<?>> exceptions = topLevelThrowablesOfTheLibrary();
        assertTrue(exceptions.size() >= 15, "the scan should find the library's exceptions, found " + exceptions);
        // Bad input keeps Java's own contract (IllegalArgumentException and its refinements); failures are ours.
        List<String> strays = exceptions.stream()
                .filter(c -> !UbufException.class.isAssignableFrom(c) && !IllegalArgumentException.class.isAssignableFrom(c))
                .map(Class::getName)
                .toList();
        assertEquals(List.of(), strays, "exceptions outside the UbufException hierarchy");
    }

    @Test
    void theRootIsUncheckedAndKeepsMessageAndCause() {
        IllegalStateException cause = new IllegalStateException("inner");
        UbufException e = new UbufException("outer", cause);
        assertTrue(RuntimeException.class.isAssignableFrom(UbufException.class));
        assertEquals("outer", e.getMessage());
        assertEquals(cause, e.getCause());
    }

    /** The top-level Throwable classes compiled from this module's main sources. */
    private static List<Class<?>> topLevelThrowablesOfTheLibrary() throws IOException, URISyntaxException {
        Path classes = Path.of(UbufException.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        try (Stream<Path> files = Files.walk(classes)) {
            return files.map(p -> classes.relativize(p).toString())
                    .filter(name -> name.endsWith(".class") && !name.contains("$") && !name.endsWith("-info.class"))
                    .map(name -> name.substring(0, name.length() - ".class".length()).replace('/', '.'))
                    .<Class<?>>map(UbufExceptionTest::load)
                    .filter(Throwable.class::isAssignableFrom)
                    .toList();
        }
    }

    private static Class<?> load(String name) {
        try {
            // Not initialized: loading must not open native libraries.
            return Class.forName(name, false, UbufExceptionTest.class.getClassLoader());
        } catch (ClassNotFoundException e) {
            throw new AssertionError(name, e);
        }
    }
}
