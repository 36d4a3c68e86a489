package dev.ubuf.cli;

import dev.ubuf.op.Fp8Operands;
import dev.ubuf.tensor.DType;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** `ubuf plan` checks its FP8 options and the FP8 shape before any GPU work. */
class PlanCommandTest {
    @Test
    void fp8InputFormatsAreTheLayersOperands() {
        assertEquals(Fp8Operands.E4M3, PlanCommand.fp8Operands("e4m3"));
        assertEquals(new Fp8Operands(DType.FP8_E5M2, DType.FP8_E4M3), PlanCommand.fp8Operands("e5m2"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> PlanCommand.fp8Operands("e3m4")).getMessage()
                .contains("--fp8-input"));
    }

    @Test
    void badFp8OptionsAndShapesAreOneSentenceWithExitTwo() {
        String[][] bad = {
                {"--fp8", "--shape", "64,40,32"},        // K not a multiple of 16
                {"--fp8", "--shape", "64,32,24"},        // N not a multiple of 16
                {"--fp8", "--fp8-input", "e3m4", "--shape", "64,32,32"},
                {"--fp8-input", "e5m2", "--shape", "64,32,32"}};
        String[] named = {"multiple of 16", "multiple of 16", "--fp8-input", "--fp8-input needs --fp8"};
        for (int i = 0; i < bad.length; i++) {
            String[] args = new String[bad[i].length + 3];
            args[0] = "plan";
            args[1] = "--op";
            args[2] = "ag";
            System.arraycopy(bad[i], 0, args, 3, bad[i].length);
            Ubuf r = Ubuf.run(args);
            String want = named[i];
            assertEquals(2, r.exitCode(), r::toString);
            assertTrue(r.err().contains(want), () -> want + ": " + r);
            assertTrue(!r.err().contains("Exception"), r::toString);
        }
    }

    @Test
    void badRoundOptionsAreOneSentenceWithExitTwo() {
        String[][] bad = {{"--iters", "0"}, {"--budget-ms", "-1"}, {"--budget-ms", "NaN"}};
        String[] named = {"--iters", "--budget-ms", "--budget-ms"};
        for (int i = 0; i < bad.length; i++) {
            Ubuf r = Ubuf.run("plan", "--op", "rs", "--shape", "64,32,32", bad[i][0], bad[i][1]);
            String want = named[i];
            assertEquals(2, r.exitCode(), r::toString);
            assertTrue(r.err().contains(want), () -> want + ": " + r);
            assertTrue(!r.err().contains("Exception"), r::toString);
        }
    }

    @Test
    void theHelpSaysHowCudaGraphChangesTheTiming() {
        String help = Ubuf.run("plan", "--help").out().replaceAll("\\s+", " ");
        assertTrue(help.contains("--cuda-graph") && help.contains("timed as the replay of a CUDA graph"), help);
    }
}
