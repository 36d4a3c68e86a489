package dev.ubuf.cli;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** `ubuf demo` without a GPU: a labelled simulation whose overlapped and unoverlapped paths match. */
class DemoCommandTest {
    @Test
    void theDemoSimulatesTheLayerStepAndBothPathsMatch() {
        for (String[] args : new String[][]{{"demo"}, {"demo", "--swiglu", "--tp", "4", "--tokens", "16"}}) {
            Ubuf r = Ubuf.run(args);
            assertEquals(0, r.exitCode(), r::toString);
            assertTrue(r.out().contains("SIMULATION"), r::toString);
            assertTrue(r.out().contains("overlapped and unoverlapped paths match"), r::toString);
            assertTrue(r.out().contains("FC1_FPROP") || r.out().contains("fc1_fprop"), r::toString);
        }
    }

    @Test
    void badInputIsOneSentenceNamingTheOptionWithExitTwo() {
        Ubuf fp8 = Ubuf.run("demo", "--fp8");
        assertEquals(2, fp8.exitCode(), fp8::toString);
        assertTrue(fp8.err().contains("--fp8"), fp8::toString);
        Ubuf tokens = Ubuf.run("demo", "--tokens", "33");
        assertEquals(2, tokens.exitCode(), tokens::toString);
        assertTrue(tokens.err().contains("--tokens"), tokens::toString);
    }
}
