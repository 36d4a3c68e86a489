package dev.ubuf.plan;

import dev.ubuf.fp8.Fp8Format;
import dev.ubuf.op.Fp8Operands;
import dev.ubuf.tensor.DType;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** FP8 GEMM steps: what plans accept, and how the host executor applies the dequantization scales. */
class Fp8PlanTest {
    private static final int M = 2;
    private static final int K = 3;
    private static final int N = 2;

    private static Plan plan(DType a, DType b, DType c, Fp8Scaling scaling) {
        PlanBuilder p = new PlanBuilder("test", "fp8", 0, 1);
        int s = p.stream(StreamRole.COMPUTE);
        p.matrix(BufferRole.INPUT, a, M, K).matrix(BufferRole.WEIGHT, b, K, N).matrix(BufferRole.OUTPUT, c, M, N);
        p.add(new PlanStep.Gemm(s, Region.rows(BufferRole.INPUT, 0, 0, M, K), Region.rows(BufferRole.WEIGHT, 0, 0, K, N),
                Region.rows(BufferRole.OUTPUT, 0, 0, M, N), false, scaling));
        return p.build();
    }

    private static double[] run(Plan plan, double[] x, double[] w, double sx, double sw) {
        HostPlanExecutor ex = new HostPlanExecutor(List.of(plan), 1);
        double[][] out = new double[1][];
        ex.runCalls(1, new HostPlanExecutor.CallHooks() {
            @Override
            public void beforeCall(int rank, long call, HostRankMemory memory) {
                memory.set(BufferRole.INPUT, x);
                memory.set(BufferRole.WEIGHT, w);
                memory.setScale(Fp8Scaling.Scale.INPUT, sx);
                memory.setScale(Fp8Scaling.Scale.WEIGHT, sw);
            }

            @Override
            public void afterCall(int rank, long call, HostRankMemory memory) {
                out[0] = memory.get(BufferRole.OUTPUT);
            }
        });
        return out[0];
    }

    @Test
    void anFp8GemmMultipliesTheDequantizedOperands() {
        Plan p = plan(DType.FP8_E4M3, DType.FP8_E5M2, DType.BF16, Fp8Scaling.INPUT_X_WEIGHT);
        double[] x = {1, -0.5, 448, 0.125, 3, -2};
        double[] w = {1, 2, -4, 0.25, 57344, -1};
        double sx = 0.25;
        double sw = 1.0 / 1024;
        double[] want = new double[M * N];
        for (int i = 0; i < M; i++) {
            for (int j = 0; j < N; j++) {
                for (int k = 0; k < K; k++) {
                    want[i * N + j] += (sx * x[i * K + k]) * (sw * w[k * N + j]);
                }
            }
        }
        assertArrayEquals(want, run(p, x, w, sx, sw));
    }

    @Test
    void aValueThatIsNotFp8IsCaught() {
        Plan p = plan(DType.FP8_E4M3, DType.FP8_E4M3, DType.FP32, Fp8Scaling.INPUT_X_WEIGHT);
        double[] x = {1, 2, 3, 4, 5, 17}; // 17 is not an E4M3 value (16 and 18 are)
        double[] w = {1, 1, 1, 1, 1, 1};
        var e = assertThrows(IllegalStateException.class, () -> run(p, x, w, 1, 1));
        assertTrue(e.getMessage().contains("not a fp8e4m3 value"), e.getMessage());
        assertEquals(16f, Fp8Format.E4M3.round(17f)); // why 17 is not representable
    }

    @Test
    void anUnsetScaleIsAnError() {
        Plan p = plan(DType.FP8_E4M3, DType.FP8_E4M3, DType.FP32, Fp8Scaling.INPUT_X_WEIGHT);
        HostPlanExecutor ex = new HostPlanExecutor(List.of(p), 1);
        var e = assertThrows(IllegalStateException.class, () -> ex.runCalls(1, new HostPlanExecutor.CallHooks() {
            @Override
            public void beforeCall(int rank, long call, HostRankMemory memory) {
                memory.set(BufferRole.INPUT, new double[M * K]);
                memory.set(BufferRole.WEIGHT, new double[K * N]);
                memory.setScale(Fp8Scaling.Scale.WEIGHT, 1);
            }
        }));
        assertTrue(e.getMessage().contains("INPUT scale was never set"), e.getMessage());
    }

    @Test
    void plansRejectFp8MatricesInGemmsWithoutScalingAndFp8Outputs() {
        var e = assertThrows(IllegalArgumentException.class,
                () -> plan(DType.FP8_E4M3, DType.FP8_E4M3, DType.BF16, null));
        assertTrue(e.getMessage().contains("no fp8 scaling"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> plan(DType.BF16, DType.BF16, DType.BF16, Fp8Scaling.INPUT_X_WEIGHT));
        assertTrue(e.getMessage().contains("needs fp8 A and B"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> plan(DType.FP8_E4M3, DType.FP8_E4M3, DType.FP8_E4M3, Fp8Scaling.INPUT_X_WEIGHT));
        assertTrue(e.getMessage().contains("never fp8"), e.getMessage());
    }

    @Test
    void theGemmsOnlyPlanKeepsTheScaling() {
        Plan p = plan(DType.FP8_E4M3, DType.FP8_E4M3, DType.BF16, Fp8Scaling.INPUT_X_WEIGHT);
        PlanStep.Gemm g = (PlanStep.Gemm) p.gemmsOnly().steps().getFirst();
        assertEquals(Fp8Scaling.INPUT_X_WEIGHT, g.fp8());
    }

    @Test
    void fp8OperandsAreValidatedBeforeAnyGpuWork() {
        assertThrows(IllegalArgumentException.class, () -> new Fp8Operands(DType.FP8_E5M2, DType.FP8_E5M2));
        assertThrows(IllegalArgumentException.class, () -> new Fp8Operands(DType.BF16, DType.FP8_E4M3));
        var e = assertThrows(IllegalArgumentException.class, () -> Fp8Operands.E4M3.validate("x", 24, 32, DType.BF16));
        assertTrue(e.getMessage().contains("k to be a multiple of 16"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> Fp8Operands.E4M3.validate("x", 32, 8, DType.BF16));
        assertTrue(e.getMessage().contains("n to be a multiple of 16"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> Fp8Operands.E4M3.validate("x", 32, 32, DType.FP8_E4M3));
        assertTrue(e.getMessage().contains("never fp8"), e.getMessage());
        Fp8Operands.E4M3.validate("x", 32, 48, DType.FP32);
    }
}
