package dev.ubuf.plan;

import dev.ubuf.tensor.DType;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.function.Predicate;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class HostPlanExecutorTest {
    private static final int ROWS = 3;
    private static final int COLS = 2;
    private static final int DATA = 0;
    private static final int CREDIT = 1;
    private static final int SEEDS = 50;
    private static final int CALLS = 4;

    /**
     * Two ranks gather their INPUT rows into OUTPUT [2*ROWS, COLS]: each pushes its INPUT into the peer's UBUF
     * (after the peer's credit for this call) and signals; the compute stream waits for the peer's rows and copies
     * them out of its own UBUF. {@code skip} drops steps to break the plan on purpose.
     */
    private static List<Plan> exchange(Predicate<PlanStep> skip) {
        List<Plan> plans = new ArrayList<>();
        for (int r = 0; r < 2; r++) {
            int p = 1 - r;
            PlanBuilder b = new PlanBuilder("test", "exchange", r, 2);
            int comm = b.stream(StreamRole.COMM);
            int compute = b.stream(StreamRole.COMPUTE);
            b.matrix(BufferRole.INPUT, DType.FP32, ROWS, COLS)
                    .matrix(BufferRole.UBUF, DType.FP32, 2 * ROWS, COLS)
                    .matrix(BufferRole.OUTPUT, DType.FP32, 2 * ROWS, COLS);
            b.flag(1);
            b.flag(1);
            List<PlanStep> steps = List.of(
                    new PlanStep.Signal(comm, p, CREDIT),
                    new PlanStep.Copy(comm, rows(BufferRole.INPUT, r, 0), rows(BufferRole.OUTPUT, r, r * ROWS)),
                    new PlanStep.WaitSignal(comm, CREDIT, 1),
                    new PlanStep.Copy(comm, rows(BufferRole.INPUT, r, 0), rows(BufferRole.UBUF, p, r * ROWS)),
                    new PlanStep.Signal(comm, p, DATA),
                    new PlanStep.WaitSignal(compute, DATA, 1),
                    new PlanStep.Copy(compute, rows(BufferRole.UBUF, r, p * ROWS), rows(BufferRole.OUTPUT, r, p * ROWS)));
            for (PlanStep s : steps) {
                if (!skip.test(s)) {
                    b.add(s);
                }
            }
            plans.add(b.build());
        }
        return plans;
    }

    private static Region rows(BufferRole role, int rank, int row) {
        return Region.rows(role, rank, row, ROWS, COLS);
    }

    /** Runs CALLS calls with fresh inputs per (rank, call); returns null when every output was exact, else why not. */
    private static String runExchange(HostPlanExecutor ex, long dataSeed) {
        Random rnd = new Random(dataSeed);
        double[][][] inputs = new double[2][CALLS][];
        for (int r = 0; r < 2; r++) {
            for (int c = 0; c < CALLS; c++) {
                inputs[r][c] = rnd.ints(ROWS * COLS, -50, 50).asDoubleStream().toArray();
            }
        }
        String[] failure = new String[1];
        ex.runCalls(CALLS, new HostPlanExecutor.CallHooks() {
            @Override
            public void beforeCall(int rank, long call, HostRankMemory memory) {
                memory.set(BufferRole.INPUT, inputs[rank][(int) call]);
            }

            @Override
            public void afterCall(int rank, long call, HostRankMemory memory) {
                double[] expected = new double[2 * ROWS * COLS];
                System.arraycopy(inputs[0][(int) call], 0, expected, 0, ROWS * COLS);
                System.arraycopy(inputs[1][(int) call], 0, expected, ROWS * COLS, ROWS * COLS);
                double[] got = memory.get(BufferRole.OUTPUT);
                if (!Arrays.equals(expected, got) && failure[0] == null) {
                    failure[0] = "rank " + rank + " call " + call + ": expected " + Arrays.toString(expected)
                            + " got " + Arrays.toString(got);
                }
            }
        });
        return failure[0];
    }

    @Test
    void correctPlanIsExactInEveryInterleaving() {
        long base = System.nanoTime();
        for (int seed = 0; seed < SEEDS; seed++) {
            HostPlanExecutor ex = new HostPlanExecutor(exchange(s -> false), base + seed);
            assertEquals(null, runExchange(ex, base + seed), "seed " + (base + seed));
            assertEquals(CALLS, ex.callsDone(0));
            assertEquals(CALLS, ex.flagValue(1, DATA), "one signal per call, absolute values");
        }
    }

    @Test
    void removedDataWaitGivesWrongValuesInSomeInterleaving() {
        List<Plan> broken = exchange(s -> s instanceof PlanStep.WaitSignal w && w.flag() == DATA);
        assertTrue(failingSeeds(broken) > 0, "no interleaving exposed the missing wait");
    }

    @Test
    void removedCreditWaitGivesWrongValuesInSomeInterleaving() {
        List<Plan> broken = exchange(s -> s instanceof PlanStep.WaitSignal w && w.flag() == CREDIT);
        assertTrue(failingSeeds(broken) > 0, "no interleaving exposed the missing credit");
    }

    private static int failingSeeds(List<Plan> plans) {
        long base = System.nanoTime();
        int failing = 0;
        for (int seed = 0; seed < SEEDS; seed++) {
            HostPlanExecutor ex = new HostPlanExecutor(plans,
                    HostPlanExecutor.Options.seeded(base + seed).withoutRaceDetection());
            if (runExchange(ex, base + seed) != null) {
                failing++;
            }
        }
        return failing;
    }

    @Test
    void raceDetectorReportsARemovedWaitInEveryInterleaving() {
        for (int flag : new int[] {DATA, CREDIT}) {
            List<Plan> broken = exchange(s -> s instanceof PlanStep.WaitSignal w && w.flag() == flag);
            for (int seed = 0; seed < SEEDS; seed++) {
                HostPlanExecutor ex = new HostPlanExecutor(broken, seed);
                IllegalStateException e = assertThrows(IllegalStateException.class, () -> runExchange(ex, 1),
                        "flag " + flag + " seed " + seed);
                assertTrue(e.getMessage().startsWith("data race on UBUF"), e.getMessage());
            }
        }
    }

    @Test
    void ranksRunAheadOfEachOtherInSomeInterleavings() {
        boolean[] skewSeen = new boolean[1];
        for (int seed = 0; seed < SEEDS && !skewSeen[0]; seed++) {
            HostPlanExecutor ex = new HostPlanExecutor(exchange(s -> false), seed);
            ex.runCalls(CALLS, new HostPlanExecutor.CallHooks() {
                @Override
                public void beforeCall(int rank, long call, HostRankMemory memory) {
                    memory.set(BufferRole.INPUT, new double[ROWS * COLS]);
                    if (ex.callsDone(1 - rank) < call) {
                        skewSeen[0] = true;
                    }
                }
            });
        }
        assertTrue(skewSeen[0], "a rank never started a call before its peer finished the previous one");
    }

    @Test
    void flagsWrapAroundThe32BitRange() {
        for (long first : new long[] {Integer.MAX_VALUE - 1L, (1L << 32) - 2}) {
            for (int seed = 0; seed < 10; seed++) {
                HostPlanExecutor ex = new HostPlanExecutor(exchange(s -> false),
                        HostPlanExecutor.Options.seeded(seed), first);
                assertEquals(null, runExchange(ex, seed), "first call " + first + ", seed " + seed);
                assertEquals((int) (first + CALLS), ex.flagValue(0, DATA));
            }
        }
        assertTrue((int) (Integer.MAX_VALUE - 1L + CALLS) < 0, "the test crosses the signed boundary");
    }

    @Test
    void deadlockNamesEveryBlockedHead() {
        List<Plan> plans = new ArrayList<>();
        for (int r = 0; r < 2; r++) {
            PlanBuilder b = new PlanBuilder("test", "deadlock", r, 2);
            int s = b.stream(StreamRole.COMM);
            b.flag(1);
            b.add(new PlanStep.WaitSignal(s, 0, 1)).add(new PlanStep.Signal(s, 1 - r, 0));
            plans.add(b.build());
        }
        HostPlanExecutor ex = new HostPlanExecutor(plans, 1);
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> ex.runCalls(1));
        assertTrue(e.getMessage().contains("rank 0 call 0 stream 0 (COMM) blocked at step #0"), e.getMessage());
        assertTrue(e.getMessage().contains("rank 1 call 0 stream 0 (COMM) blocked at step #0"), e.getMessage());
        assertTrue(e.getMessage().contains("flag 0 = 0, needs 1"), e.getMessage());
    }

    /** One rank: copy INPUT to SCRATCH on stream 0, then on stream 1 GEMM, reduce and bias; {@code ordered} adds the event. */
    private static Plan arithmetic(boolean ordered) {
        PlanBuilder b = new PlanBuilder("test", "math", 0, 1);
        int s0 = b.stream(StreamRole.COMM);
        int s1 = b.stream(StreamRole.COMPUTE);
        b.matrix(BufferRole.INPUT, DType.FP32, 2, 3).matrix(BufferRole.WEIGHT, DType.FP32, 3, 2)
                .matrix(BufferRole.SCRATCH, DType.FP32, 2, 3).matrix(BufferRole.OUTPUT, DType.FP32, 2, 2)
                .matrix(BufferRole.BIAS, DType.FP32, 1, 2);
        Region in = Region.rows(BufferRole.INPUT, 0, 0, 2, 3);
        Region scratch = Region.rows(BufferRole.SCRATCH, 0, 0, 2, 3);
        Region w = Region.rows(BufferRole.WEIGHT, 0, 0, 3, 2);
        Region out = Region.rows(BufferRole.OUTPUT, 0, 0, 2, 2);
        b.add(new PlanStep.Copy(s0, in, scratch));
        if (ordered) {
            b.order(s0, s1);
        }
        b.add(new PlanStep.Gemm(s1, scratch, w, out, false));
        b.add(new PlanStep.Gemm(s1, scratch, w, out, true));
        b.add(new PlanStep.Reduce(s1, List.of(new Region(BufferRole.OUTPUT, 0, 0, 1, 0, 2)),
                new Region(BufferRole.OUTPUT, 0, 1, 1, 0, 2), true));
        b.add(new PlanStep.AddBias(s1, out));
        return b.build();
    }

    @Test
    void stepsComputeGemmReduceAndBiasExactly() {
        HostPlanExecutor ex = new HostPlanExecutor(List.of(arithmetic(true)), 7);
        ex.memory(0).set(BufferRole.INPUT, new double[] {1, 2, 3, 4, 5, 6});
        ex.memory(0).set(BufferRole.WEIGHT, new double[] {1, 0, 0, 1, 1, 1});
        ex.memory(0).set(BufferRole.BIAS, new double[] {10, 20});
        ex.runCalls(1);
        // x*w = [[4, 5], [10, 11]]; twice = [[8, 10], [20, 22]]; row1 += row0 -> [28, 32]; + bias.
        assertArrayEquals(new double[] {18, 30, 38, 52}, ex.memory(0).get(BufferRole.OUTPUT));
    }

    @Test
    void missingEventBetweenStreamsIsARace() {
        HostPlanExecutor ex = new HostPlanExecutor(List.of(arithmetic(false)), 7);
        ex.memory(0).set(BufferRole.INPUT, new double[] {1, 2, 3, 4, 5, 6});
        ex.memory(0).set(BufferRole.WEIGHT, new double[] {1, 0, 0, 1, 1, 1});
        ex.memory(0).set(BufferRole.BIAS, new double[] {10, 20});
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> ex.runCalls(1));
        assertTrue(e.getMessage().contains("SCRATCH of rank 0"), e.getMessage());
    }

    @Test
    void unwrittenDataReadsAsNaN() {
        HostPlanExecutor ex = new HostPlanExecutor(List.of(arithmetic(true)),
                HostPlanExecutor.Options.seeded(3).withoutRaceDetection());
        ex.memory(0).set(BufferRole.WEIGHT, new double[] {1, 0, 0, 1, 1, 1});
        ex.memory(0).set(BufferRole.BIAS, new double[] {10, 20});
        ex.runCalls(1); // INPUT never set
        assertTrue(Double.isNaN(ex.memory(0).get(BufferRole.OUTPUT)[0]));
    }

    @Test
    void signalsToOneFlagOnTwoStreamsAreRejected() {
        List<Plan> plans = new ArrayList<>();
        for (int r = 0; r < 2; r++) {
            PlanBuilder b = new PlanBuilder("test", "two-streams", r, 2);
            int s0 = b.stream(StreamRole.COMM);
            int s1 = b.stream(StreamRole.COMM);
            b.flag(2);
            b.add(new PlanStep.Signal(s0, 1 - r, 0)).add(new PlanStep.Signal(s1, 1 - r, 0));
            plans.add(b.build());
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new HostPlanExecutor(plans, 1));
        assertTrue(e.getMessage().contains("on one stream"), e.getMessage());
    }

    @Test
    void waitBeyondTheSignalsOfOneCallIsRejected() {
        List<Plan> plans = new ArrayList<>();
        for (int r = 0; r < 2; r++) {
            PlanBuilder b = new PlanBuilder("test", "overwait", r, 2);
            int s = b.stream(StreamRole.COMM);
            b.flag(1);
            b.add(new PlanStep.Signal(s, 1 - r, 0)).add(new PlanStep.WaitSignal(s, 0, 2));
            plans.add(b.build());
        }
        assertThrows(IllegalArgumentException.class, () -> new HostPlanExecutor(plans, 1));
    }

    @Test
    void hooksMayTouchOnlyTheirOwnRank() {
        HostPlanExecutor ex = new HostPlanExecutor(exchange(s -> false), 1);
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> ex.runCalls(1,
                new HostPlanExecutor.CallHooks() {
                    @Override
                    public void beforeCall(int rank, long call, HostRankMemory memory) {
                        ex.memory(1 - rank).get(BufferRole.OUTPUT);
                    }
                }));
        assertTrue(e.getMessage().contains("own hooks"), e.getMessage());
    }
}
