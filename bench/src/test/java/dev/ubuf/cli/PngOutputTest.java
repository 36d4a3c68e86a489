package dev.ubuf.cli;

import org.junit.jupiter.api.Test;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A PNG beside written data (the demo's trace timeline, the sweep's --chart): failing to draw it is a warning. */
class PngOutputTest {
    @Test
    void aFailureToDrawIsOneWarningNamingTheFileAndTheCause() {
        Throwable[] failures = {
                new RuntimeException("Fontconfig head is null, check your fonts or fonts configuration"),
                new UnsatisfiedLinkError("no awt in java.library.path"),
                new java.io.IOException("wrapped", new IllegalStateException("no PNG writer"))};
        for (Throwable t : failures) {
            StringWriter err = new StringWriter();
            boolean drawn = PngOutput.write("ubuf demo", Path.of("t/step.png"), new PrintWriter(err), () -> {
                if (t instanceof Error e) {
                    throw e;
                }
                throw (Exception) t;
            });
            assertFalse(drawn);
            String w = err.toString();
            assertTrue(w.startsWith("ubuf demo: warning: could not draw t/step.png: "), w);
            Throwable root = t.getCause() != null ? t.getCause() : t;
            assertTrue(w.contains(root.getMessage()), w);
            assertEquals(1, w.lines().count(), w);
        }
    }

    @Test
    void aDrawnPngSaysNothingAndOutOfMemoryIsNoWarning() {
        StringWriter err = new StringWriter();
        assertTrue(PngOutput.write("ubuf demo", Path.of("a.png"), new PrintWriter(err), () -> { }));
        assertEquals("", err.toString());
        assertThrows(OutOfMemoryError.class, () -> PngOutput.write("ubuf demo", Path.of("a.png"),
                new PrintWriter(err), () -> {
                    throw new OutOfMemoryError("Java heap space");
                }));
    }
}
