package dev.ubuf.tests;

import dev.ubuf.tensor.DType;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * On the CPU: the one-GPU test's cases hold no variant that needs NCCL, which refuses two ranks on one GPU (the
 * NCCL methods once slipped in through the two-GPU lists and failed only when the whole suite ran on a GPU), and
 * still hold every other method of those lists.
 */
class SharedGpuCasesTest {
    @Test
    void noSharedGpuCaseNeedsNccl() {
        List<String> variants = SharedGpuOpsGpuTest.overlapCases().map(OverlapScenario::variant).toList();
        List<String> fp8 = SharedGpuOpsGpuTest.fp8Cases().map(c -> c.variant()).toList();
        assertFalse(variants.isEmpty() || fp8.isEmpty());
        for (String v : variants) {
            assertTrue(SharedGpuOpsGpuTest.needsNoNccl(v), v);
        }
        for (String v : fp8) {
            assertTrue(SharedGpuOpsGpuTest.needsNoNccl(v), v);
        }
        long expected = OverlapOpsGpuTest.cases().map(a -> (String) a.get()[1])
                .filter(v -> !v.startsWith("nccl") && !v.equals("auto")).count();
        assertEquals(expected, variants.size(), "every case without NCCL stays");
        List<LayerScenario> layers = SharedGpuOpsGpuTest.layerCases();
        assertFalse(layers.isEmpty());
        for (LayerScenario c : layers) {
            assertEquals(LayerScenario.Reference.FLOAT64, c.reference(), c.toString());
            assertTrue(SharedGpuOpsGpuTest.needsNoNccl(c.overlap()) && !c.overlap().contains("auto"), c.toString());
            assertEquals(c, RankScenario.parse(c.toArgs()), "travels to a rank's JVM as words");
        }
        assertThrows(IllegalArgumentException.class, () -> new LayerScenario(LayerScenario.Block.ROW, "te",
                DType.FP32, 256, 512, 512, LayerScenario.Reference.FLOAT64), "float64 alone only for the MLP");
        assertThrows(IllegalArgumentException.class, () -> new LayerScenario(LayerScenario.Block.MLP_GELU, "te",
                DType.BF16, 256, 512, 512, LayerScenario.Reference.FLOAT64), "and only in fp32");
        assertFalse(SharedGpuOpsGpuTest.needsNoNccl("nccl:splits=2"));
        assertTrue(SharedGpuOpsGpuTest.needsNoNccl("scatter:sub=2,lowp=1"));
    }
}
