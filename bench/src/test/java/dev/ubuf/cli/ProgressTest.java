package dev.ubuf.cli;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The demo's and the sweep's progress: a bar only on a terminal. */
class ProgressTest {
    private static String steps(boolean terminal) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (PrintStream to = new PrintStream(bytes, true, StandardCharsets.UTF_8);
             Progress p = Progress.of("demo", 3, terminal, to)) {
            for (int i = 0; i < 3; i++) {
                p.step();
            }
        }
        return bytes.toString(StandardCharsets.UTF_8);
    }

    @Test
    void withoutATerminalNothingIsWritten() {
        assertEquals("", steps(false));
    }

    @Test
    void onATerminalTheBarRedrawsItsLine() {
        // What the case above keeps out of logs and pipes.
        String bar = steps(true);
        assertTrue(bar.contains("\r") && bar.contains("demo"), bar);
    }

    @Test
    void testsRunWithoutATerminal() {
        // Surefire pipes the test JVM's output, as a CI log or `ubuf demo > log` does.
        assertFalse(Progress.interactive(), "System.console() is an interactive terminal in a test JVM");
    }
}
