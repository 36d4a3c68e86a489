package dev.ubuf.exec;

import dev.ubuf.plan.BufferRole;
import dev.ubuf.plan.PlanStep;
import dev.ubuf.plan.Region;
import dev.ubuf.tensor.DType;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

/** Which Reduce and GEMM steps the CUDA executor issues together with the AddBias after them. */
class BiasFusionTest {
    private static final Region OUT = Region.rows(BufferRole.OUTPUT, 0, 0, 4, 8);
    private static final Region SLOT = Region.rows(BufferRole.UBUF, 0, 0, 4, 8);

    @Test
    void onlyAReduceDirectlyFollowedOnItsStreamByTheBiasOfItsDestinationCarriesIt() {
        List<PlanStep> steps = List.of(
                new PlanStep.Reduce(0, List.of(SLOT), OUT, true),
                new PlanStep.AddBias(0, OUT),                               // fused into the Reduce before it
                new PlanStep.Reduce(0, List.of(SLOT), OUT, true),
                new PlanStep.AddBias(1, OUT),                               // another stream: may run later
                new PlanStep.Reduce(0, List.of(SLOT), OUT, true),
                new PlanStep.RecordEvent(0, 0),
                new PlanStep.AddBias(0, OUT),                               // not directly after
                new PlanStep.Reduce(0, List.of(SLOT), OUT, true),
                new PlanStep.AddBias(0, Region.rows(BufferRole.OUTPUT, 0, 0, 2, 8))); // other rows
        assertArrayEquals(new boolean[]{true, false, false, false, false, false, false, false, false},
                CudaPlanExecutor.biasFusedSteps(steps, role -> DType.BF16));
    }

    private static final Region X = Region.rows(BufferRole.INPUT, 0, 0, 4, 16);
    private static final Region W = Region.rows(BufferRole.WEIGHT, 0, 0, 16, 8);

    @Test
    void aGemmIntoABf16OrFp16ResultDirectlyFollowedByTheBiasOfItsResultCarriesItInItsEpilogue() {
        List<PlanStep> steps = List.of(
                new PlanStep.Gemm(0, X, W, OUT, false, null, SLOT),
                new PlanStep.AddBias(0, OUT),                               // fused: the GEMM adding the sum
                new PlanStep.Gemm(1, X, W, OUT, false),
                new PlanStep.AddBias(1, OUT),                               // fused: a plain GEMM on stream 1
                new PlanStep.Gemm(0, X, W, OUT, false),
                new PlanStep.AddBias(1, OUT),                               // another stream
                new PlanStep.Gemm(0, X, W, SLOT, false),
                new PlanStep.AddBias(0, OUT));                              // another destination
        boolean[] expected = {true, false, true, false, false, false, false, false};
        assertArrayEquals(expected, CudaPlanExecutor.biasFusedSteps(steps, role -> DType.BF16));
        assertArrayEquals(expected, CudaPlanExecutor.biasFusedSteps(steps, role -> DType.FP16));
        // fp32 results (and biases) have no bias epilogue here; nor does a bias of another type than the result
        assertArrayEquals(new boolean[8], CudaPlanExecutor.biasFusedSteps(steps, role -> DType.FP32));
        assertArrayEquals(new boolean[8], CudaPlanExecutor.biasFusedSteps(steps,
                role -> Map.of(BufferRole.BIAS, DType.FP16).getOrDefault(role, DType.BF16)));
    }
}
