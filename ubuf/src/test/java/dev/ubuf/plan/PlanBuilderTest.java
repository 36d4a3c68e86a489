package dev.ubuf.plan;

import dev.ubuf.tensor.DType;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

class PlanBuilderTest {
    private static PlanStep.Gemm gemm(int stream, int row) {
        return new PlanStep.Gemm(stream, Region.rows(BufferRole.INPUT, 0, row, 4, 8),
                Region.rows(BufferRole.WEIGHT, 0, 0, 8, 8), Region.rows(BufferRole.OUTPUT, 0, row, 4, 8), false, null);
    }

    private static PlanBuilder builder() {
        PlanBuilder b = new PlanBuilder("test", "waits", 0, 2);
        b.matrix(BufferRole.INPUT, DType.FP32, 8, 8).matrix(BufferRole.WEIGHT, DType.FP32, 8, 8)
                .matrix(BufferRole.OUTPUT, DType.FP32, 8, 8);
        b.flag(2);
        return b;
    }

    @Test
    void aWaitBeforeAStreamsFirstGemmStaysOnTheStream() {
        PlanBuilder b = builder();
        int compute = b.stream(StreamRole.COMPUTE);
        b.awaitBefore(compute, 0, 1);
        b.add(gemm(compute, 0));
        Plan p = b.build();
        assertEquals(List.of(StreamRole.COMPUTE), p.streams());
        assertEquals(List.of(new PlanStep.WaitSignal(compute, 0, 1), gemm(compute, 0)), p.steps());
    }

    @Test
    void aWaitBehindAQueuedGemmRunsOnACommStreamOfItsOwnThatTheStreamWaitsFor() {
        PlanBuilder b = builder();
        int compute = b.stream(StreamRole.COMPUTE);
        b.add(gemm(compute, 0));
        b.awaitBefore(compute, 0, 1);
        b.add(gemm(compute, 4));
        b.awaitBefore(compute, 0, 2);
        Plan p = b.build();
        // One waiter stream for the compute stream, made at its first use and used again.
        assertEquals(List.of(StreamRole.COMPUTE, StreamRole.COMM), p.streams());
        int waiter = 1;
        assertEquals(List.of(gemm(compute, 0),
                new PlanStep.WaitSignal(waiter, 0, 1), new PlanStep.RecordEvent(waiter, 0),
                new PlanStep.WaitEvent(compute, 0), gemm(compute, 4),
                new PlanStep.WaitSignal(waiter, 0, 2), new PlanStep.RecordEvent(waiter, 1),
                new PlanStep.WaitEvent(compute, 1)), p.steps());
    }
}
