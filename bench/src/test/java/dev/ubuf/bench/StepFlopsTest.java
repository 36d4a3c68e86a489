package dev.ubuf.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ubuf.layers.tp.Activation;
import org.junit.jupiter.api.Test;

class StepFlopsTest {
    @Test
    void countsFc1AndFc2ForwardAndBackwardPerGpu() {
        // GELU: fc1 h->f, fc2 f->h; forward 2*T*h*f twice; backward twice the forward.
        assertEquals(3 * (2.0 * 8 * 4 * 16 + 2.0 * 8 * 16 * 4) / 2, StepFlops.perGpu(4, 16, Activation.GELU, 1, 8, 2));
        // SwiGLU's fc1 writes 2*ffn outputs; two layers double it.
        assertEquals(2 * 3 * (2.0 * 8 * 4 * 32 + 2.0 * 8 * 16 * 4) / 4,
                StepFlops.perGpu(4, 16, Activation.SWIGLU, 2, 8, 4));
    }

    @Test
    void theLlama8bStepAtTp2IsWhatTheIssueQuotes() {
        // 4096/14336 SwiGLU, 8192 tokens, tp 2: 7.62 ms was quoted at 57% of 989 TFLOP/s.
        double flops = StepFlops.perGpu(4096, 14336, Activation.SWIGLU, 1, 8192, 2);
        double mfu = StepFlops.mfu(flops, 7.62, StepFlops.peakTflops("NVIDIA H100 80GB HBM3").orElseThrow());
        assertEquals(0.57, mfu, 0.01);
    }

    @Test
    void knowsTheHopperPeaksAndNotOthers() {
        assertEquals(989.4, StepFlops.peakTflops("NVIDIA H200").orElseThrow());
        assertEquals(989.4, StepFlops.peakTflops("NVIDIA H100 80GB HBM3").orElseThrow());
        assertTrue(StepFlops.peakTflops("host simulation").isEmpty());
        assertThrows(IllegalArgumentException.class, () -> StepFlops.perGpu(0, 1, Activation.GELU, 1, 1, 1));
    }
}
