package dev.ubuf.layers.reference;

import dev.ubuf.layers.config.GemmName;
import dev.ubuf.layers.config.UbConfig;
import dev.ubuf.layers.tp.Activation;
import dev.ubuf.layers.tp.OverlapChoice;
import dev.ubuf.op.MethodRegistry;
import dev.ubuf.plan.BufferRole;
import dev.ubuf.plan.Plan;
import dev.ubuf.plan.PlanStep;
import dev.ubuf.plan.Region;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The tensors the layers' all-gathers move are written into this rank's chunk of the user buffer by the kernel that
 * makes them (fc1's input by the LayerNorm, or by its quantization with FP8; dY_q of fc2's dgrad by its quantization),
 * so those plans copy nothing into the own chunk, and the simulated step still equals the unoverlapped computation.
 */
class LayerSimulationTest {
    private static final long HIDDEN = 16;

    @ParameterizedTest(name = "tp {0}, fp8 {1}, rs dgrad {2}")
    @CsvSource({"2, false, false", "4, false, true", "2, true, false", "4, true, true"})
    void producersWriteTheUserBufferSoNoPlanCopiesTheOwnChunk(int tp, boolean fp8, boolean rsDgrad) {
        UbConfig cfg = UbConfig.builder().tensorModelParallelSize(tp).sequenceParallel(true).tpCommOverlap(true)
                .overlapRsDgrad(rsDgrad).fp8(fp8).build();
        long m = 16L * tp;
        long ffn = 16L * tp;
        MethodRegistry registry = MethodRegistry.load();
        List<LayerSimulation.Step> steps = LayerSimulation.steps(cfg, tp, m, HIDDEN, ffn, Activation.GELU);
        for (LayerSimulation.Step step : steps) {
            boolean written = step.gemm() == GemmName.FC1_FPROP || (fp8 && step.gemm() == GemmName.FC2_DGRAD);
            assertEquals(written, step.shape().inputInUserBuffer(), step.gemm().teName());
            if (step.gemm() != GemmName.FC1_FPROP && step.gemm() != GemmName.FC2_DGRAD) {
                continue;
            }
            String variant = LayerSimulation.hostVariant(OverlapChoice.resolve(cfg, step.gemm()), step.shape());
            List<Plan> plans = registry.schedule(step.shape(), variant).plans();
            for (int r = 0; r < tp; r++) {
                Plan p = plans.get(r);
                long rows = m / tp;
                Region own = Region.rows(BufferRole.UBUF, r, r * rows, rows, step.shape().k());
                long ownCopies = p.steps().stream()
                        .filter(s -> s instanceof PlanStep.Copy c && c.dst().equals(own)).count();
                // A plain dY is the caller's tensor: its op copies it in (as TE does), so that copy stays.
                assertEquals(written ? 0 : 1, ownCopies, step.gemm().teName() + "/" + variant + " rank " + r);
                assertEquals(!written, p.matrices().containsKey(BufferRole.INPUT), step.gemm().teName());
            }
        }
        List<LayerSimulation.Result> results = LayerSimulation.run(cfg, tp, m, HIDDEN, ffn, Activation.GELU, 11);
        assertFalse(results.isEmpty());
        for (LayerSimulation.Result r : results) {
            assertTrue(r.matches(), r.gemm().teName() + "/" + r.variant() + ": " + r.detail());
        }
        assertTrue(results.stream().anyMatch(r -> r.gemm() == GemmName.FC1_FPROP && r.detail().startsWith("matches")
                && !r.variant().equals("nccl")), "fc1's fprop ran on its plans");
    }
}
