package dev.ubuf.exec;

import dev.ubuf.plan.BufferRole;
import dev.ubuf.plan.PlanStep;
import dev.ubuf.plan.Region;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

/** Which Reduce steps the CUDA executor issues together with the AddBias after them. */
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
                CudaPlanExecutor.biasFusedReduces(steps));
    }
}
