package dev.ubuf.exec;

import dev.ubuf.plan.BufferRole;
import dev.ubuf.plan.PlanStep;
import dev.ubuf.plan.Region;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

/** Which signals and waits the CUDA executor gives the signalling strategy as runs. */
class FlagRunsTest {
    private static final Region A = Region.rows(BufferRole.SCRATCH, 0, 0, 4, 8);
    private static final Region B = Region.rows(BufferRole.UBUF, 1, 0, 4, 8);

    @Test
    void onlySignalsOrWaitsNextToEachOtherOnOneStreamMakeARun() {
        List<PlanStep> steps = List.of(
                new PlanStep.WaitSignal(1, 0, 1),      // a run of three waits on stream 1
                new PlanStep.WaitSignal(1, 2, 1),
                new PlanStep.WaitSignal(1, 3, 0),
                new PlanStep.Signal(1, 2, 4),          // a signal after them: another kind, another run
                new PlanStep.Signal(1, 3, 4),
                new PlanStep.Signal(2, 0, 4),          // another stream
                new PlanStep.Copy(2, A, B),
                new PlanStep.WaitSignal(2, 1, 1),      // alone between a copy and a signal
                new PlanStep.Signal(2, 1, 0),
                new PlanStep.WaitSignal(3, 1, 1),      // one per stream, interleaved: no run
                new PlanStep.WaitSignal(4, 1, 2),
                new PlanStep.WaitSignal(3, 2, 1));
        assertArrayEquals(new int[]{3, -1, -1, 2, -1, 0, 0, 0, 0, 0, 0, 0}, CudaPlanExecutor.flagRuns(steps));
    }

    @Test
    void aRunNeverSignalsOneFlagOfOnePeerTwice() {
        List<PlanStep> steps = List.of(
                new PlanStep.Signal(1, 2, 0),
                new PlanStep.Signal(1, 3, 0),
                new PlanStep.Signal(1, 2, 0),          // (2, 0) again: a new run starts here
                new PlanStep.Signal(1, 2, 1),
                new PlanStep.WaitSignal(1, 0, 1),      // waits may repeat a flag: the larger count wins either way
                new PlanStep.WaitSignal(1, 0, 2));
        assertArrayEquals(new int[]{2, -1, 2, -1, 2, -1}, CudaPlanExecutor.flagRuns(steps));
    }
}
