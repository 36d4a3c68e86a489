package dev.ubuf.atomic;

import dev.ubuf.ag.AgShape;
import dev.ubuf.fp8.Fp8Format;
import dev.ubuf.plan.BufferRole;
import dev.ubuf.plan.HostPlanExecutor;
import dev.ubuf.plan.HostRankMemory;
import dev.ubuf.plan.Plan;
import dev.ubuf.plan.PlanStep;
import dev.ubuf.rs.RsShape;
import dev.ubuf.tensor.DType;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.function.Predicate;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The atomic AG and RS plans on the host executor against a float64 reference, exactly, over many random
 * interleavings with race detection on (the atomic GEMM's chunks run as concurrent pieces that wait on their arrival
 * flags and raise their done flags), at tp 2, 3, 4 and 8; and removed dependencies are caught.
 */
class AtomicPlansHostTest {
    private static final int SEEDS = 50;
    private static final int CALLS = 3;
    /** (chunk rows, k, n). */
    private static final long[][] SHAPES = {{1, 2, 3}, {3, 4, 2}, {2, 3, 5}};

    static Stream<Arguments> agShapes() {
        List<Arguments> all = new ArrayList<>();
        for (int tp : new int[] {2, 3, 4, 8}) {
            for (long[] s : SHAPES) {
                all.add(Arguments.of(new AgShape(tp, s[0] * tp, s[1], s[2], DType.BF16)));
                // the shard written into the user buffer by its producer: no INPUT, no own-chunk copy
                all.add(Arguments.of(new AgShape(tp, s[0] * tp, s[1], s[2], DType.BF16).withInputInUserBuffer()));
            }
        }
        return all.stream();
    }

    static Stream<Arguments> rsShapes() {
        List<Arguments> all = new ArrayList<>();
        for (int tp : new int[] {2, 3, 4, 8}) {
            for (long[] s : SHAPES) {
                for (boolean bias : new boolean[] {false, true}) {
                    all.add(Arguments.of(new RsShape(tp, s[0] * tp, s[1], s[2], DType.BF16, bias)));
                }
                // the sum quantized into an FP8 output (RsShape.withFp8Output), as every RS method can
                all.add(Arguments.of(new RsShape(tp, s[0] * tp, s[1], s[2], DType.BF16, true)
                        .withFp8Output(tp == 3 ? DType.FP8_E5M2 : DType.FP8_E4M3)));
            }
        }
        return all.stream();
    }

    static List<Plan> agPlans(AgShape shape) {
        List<Plan> plans = new ArrayList<>();
        for (int r = 0; r < shape.tp(); r++) {
            plans.add(AtomicAllGatherGemm.plan(shape, r));
        }
        Plan.validateDomain(plans);
        return plans;
    }

    static List<Plan> rsPlans(RsShape shape) {
        List<Plan> plans = new ArrayList<>();
        for (int r = 0; r < shape.tp(); r++) {
            plans.add(AtomicGemmReduceScatter.plan(shape, r));
        }
        Plan.validateDomain(plans);
        return plans;
    }

    @ParameterizedTest(name = "ag/atomic {0}")
    @MethodSource("agShapes")
    void agExactInEveryInterleaving(AgShape shape) {
        List<Plan> plans = agPlans(shape);
        long base = System.nanoTime();
        for (int seed = 0; seed < SEEDS; seed++) {
            assertEquals(null, checkAg(shape, plans, HostPlanExecutor.Options.seeded(base + seed), base + seed),
                    "seed " + (base + seed));
        }
    }

    @ParameterizedTest(name = "rs/atomic {0}")
    @MethodSource("rsShapes")
    void rsExactInEveryInterleaving(RsShape shape) {
        List<Plan> plans = rsPlans(shape);
        long base = System.nanoTime();
        for (int seed = 0; seed < SEEDS; seed++) {
            assertEquals(null, checkRs(shape, plans, HostPlanExecutor.Options.seeded(base + seed), base + seed),
                    "seed " + (base + seed));
        }
    }

    // ---- removed dependencies are races ----

    private static final AgShape AG = new AgShape(3, 6, 4, 3, DType.BF16);
    private static final RsShape RS = new RsShape(3, 6, 4, 3, DType.BF16, false);

    private static List<Plan> without(List<Plan> domain, int rank, Predicate<PlanStep> drop) {
        List<Plan> plans = new ArrayList<>(domain);
        Plan p = plans.get(rank);
        List<PlanStep> steps = new ArrayList<>(p.steps());
        int at = -1;
        for (int i = 0; i < steps.size() && at < 0; i++) {
            if (drop.test(steps.get(i))) {
                at = i;
            }
        }
        assertTrue(at >= 0, "no such step in\n" + p.describe());
        steps.remove(at);
        plans.set(rank, new Plan(p.op(), p.method(), p.rank(), p.tp(), p.streams(), p.matrices(),
                p.flagsReceivedPerCall(), p.eventCount(), steps));
        return plans;
    }

    private static List<Plan> replaced(List<Plan> domain, int rank, Predicate<PlanStep> which, PlanStep by) {
        List<Plan> plans = new ArrayList<>(domain);
        Plan p = plans.get(rank);
        List<PlanStep> steps = p.steps().stream().map(s -> which.test(s) ? by : s).toList();
        plans.set(rank, new Plan(p.op(), p.method(), p.rank(), p.tp(), p.streams(), p.matrices(),
                p.flagsReceivedPerCall(), p.eventCount(), steps));
        return plans;
    }

    static Stream<Arguments> brokenPlans() {
        int tp = 3;
        int credit = tp;
        return Stream.of(
                Arguments.of("ag: the credit wait", without(agPlans(AG), 1,
                        s -> s instanceof PlanStep.WaitSignal w && w.flag() == credit), "UBUF"),
                Arguments.of("ag: the kernel's arrival wait", replaced(agPlans(AG), 1,
                        s -> s instanceof PlanStep.AtomicGemm, ((PlanStep.AtomicGemm) agPlans(AG).get(1).steps()
                                .stream().filter(s -> s instanceof PlanStep.AtomicGemm).findFirst().orElseThrow())
                                .withoutFlags(1)), "UBUF"),
                Arguments.of("rs: a done wait before a push", without(rsPlans(RS), 1,
                        s -> s instanceof PlanStep.WaitSignal w && w.flag() == AtomicGemmReduceScatter.done(2)),
                        "UBUF"),
                Arguments.of("rs: the credit wait", without(rsPlans(RS), 1,
                        s -> s instanceof PlanStep.WaitSignal w && w.flag() == AtomicGemmReduceScatter.credit(tp, 1)),
                        "UBUF"),
                Arguments.of("rs: the own chunk's done wait", without(rsPlans(RS), 1,
                        s -> s instanceof PlanStep.WaitSignal w && w.flag() == AtomicGemmReduceScatter.done(1)
                                && w.stream() == 2), "UBUF"));
    }

    @ParameterizedTest(name = "without {0}")
    @MethodSource("brokenPlans")
    void aRemovedDependencyIsReportedAsARace(String what, List<Plan> broken, String buffer) {
        for (int seed = 0; seed < SEEDS; seed++) {
            long s = seed;
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> {
                if (broken.getFirst().op().equals("ag")) {
                    checkAg(AG, broken, HostPlanExecutor.Options.seeded(s), s);
                } else {
                    checkRs(RS, broken, HostPlanExecutor.Options.seeded(s), s);
                }
            }, "seed " + seed);
            assertTrue(e.getMessage().startsWith("data race on " + buffer), e.getMessage());
        }
    }

    /**
     * The kernel's chunks are not ordered among themselves: a push of chunk c that waits only for the done flag of
     * the chunk visited after c is a race, though the chunks' visit order would make it look safe.
     */
    @ParameterizedTest(name = "seed group {0}")
    @MethodSource("seedGroups")
    void chunksOfOneLaunchAreNotOrdered(int group) {
        // rank 1 pushes chunk 2 (visited first) after waiting for chunk 0's done flag (visited second).
        List<Plan> broken = replaced(rsPlans(RS), 1,
                s -> s instanceof PlanStep.WaitSignal w && w.flag() == AtomicGemmReduceScatter.done(2),
                new PlanStep.WaitSignal(0, AtomicGemmReduceScatter.done(0), 1));
        for (int seed = group * SEEDS; seed < (group + 1) * SEEDS; seed++) {
            long s = seed;
            IllegalStateException e = assertThrows(IllegalStateException.class,
                    () -> checkRs(RS, broken, HostPlanExecutor.Options.seeded(s), s), "seed " + seed);
            assertTrue(e.getMessage().startsWith("data race on UBUF of rank 1"), e.getMessage());
        }
    }

    static Stream<Integer> seedGroups() {
        return Stream.of(0, 1);
    }

    // ---- float64 references ----

    private static double[] ints(Random rnd, long n) {
        return rnd.ints(Math.toIntExact(n), -8, 9).asDoubleStream().toArray();
    }

    private static double[] product(double[] x, double[] w, int m, int k, int n) {
        double[] out = new double[m * n];
        for (int i = 0; i < m; i++) {
            for (int j = 0; j < n; j++) {
                double s = 0;
                for (int p = 0; p < k; p++) {
                    s += x[i * k + p] * w[p * n + j];
                }
                out[i * n + j] = s;
            }
        }
        return out;
    }

    /** Null when every call's OUTPUT and gathered UBUF were exact on every rank, else the first mismatch. */
    static String checkAg(AgShape shape, List<Plan> plans, HostPlanExecutor.Options options, long dataSeed) {
        int tp = shape.tp();
        Random rnd = new Random(dataSeed);
        double[][][] shards = new double[CALLS][tp][];
        double[][][] weights = new double[CALLS][tp][];
        for (int c = 0; c < CALLS; c++) {
            for (int r = 0; r < tp; r++) {
                shards[c][r] = ints(rnd, shape.chunkRows() * shape.k());
                weights[c][r] = ints(rnd, shape.k() * shape.n());
            }
        }
        String[] failure = new String[1];
        new HostPlanExecutor(plans, options).runCalls(CALLS, new HostPlanExecutor.CallHooks() {
            @Override
            public void beforeCall(int rank, long call, HostRankMemory memory) {
                if (shape.inputInUserBuffer()) {
                    memory.setRows(BufferRole.UBUF, rank * shape.chunkRows(), shards[(int) call][rank]);
                } else {
                    memory.set(BufferRole.INPUT, shards[(int) call][rank]);
                }
                memory.set(BufferRole.WEIGHT, weights[(int) call][rank]);
            }

            @Override
            public void afterCall(int rank, long call, HostRankMemory memory) {
                if (failure[0] != null) {
                    return;
                }
                int shard = Math.toIntExact(shape.chunkRows() * shape.k());
                double[] gathered = new double[shard * tp];
                for (int r = 0; r < tp; r++) {
                    System.arraycopy(shards[(int) call][r], 0, gathered, r * shard, shard);
                }
                double[] expected = product(gathered, weights[(int) call][rank], (int) shape.m(), (int) shape.k(),
                        (int) shape.n());
                if (!Arrays.equals(gathered, memory.get(BufferRole.UBUF))) {
                    failure[0] = "rank " + rank + " call " + call + ": UBUF " + Arrays.toString(
                            memory.get(BufferRole.UBUF)) + ", expected " + Arrays.toString(gathered);
                } else if (!Arrays.equals(expected, memory.get(BufferRole.OUTPUT))) {
                    failure[0] = "rank " + rank + " call " + call + ": OUTPUT " + Arrays.toString(
                            memory.get(BufferRole.OUTPUT)) + ", expected " + Arrays.toString(expected);
                }
            }
        });
        return failure[0];
    }

    /** Null when every call's OUTPUT was exact on every rank, else the first mismatch. */
    /** The scale of an FP8 output: a power of two, so value * scale is exact before the rounding. */
    private static final double OUTPUT_SCALE = 0.25;

    static String checkRs(RsShape shape, List<Plan> plans, HostPlanExecutor.Options options, long dataSeed) {
        int tp = shape.tp();
        int m = (int) shape.m();
        int k = (int) shape.k();
        int n = (int) shape.n();
        int rows = (int) shape.rowsPerRank();
        Fp8Format quantized = shape.fp8Output().map(Fp8Format::of).orElse(null); // null: the output is the sum
        Random rnd = new Random(dataSeed);
        double[][][] inputs = new double[CALLS][tp][];
        double[][][] weights = new double[CALLS][tp][];
        double[][][] biases = new double[CALLS][tp][];
        for (int c = 0; c < CALLS; c++) {
            for (int r = 0; r < tp; r++) {
                inputs[c][r] = ints(rnd, (long) m * k);
                weights[c][r] = ints(rnd, (long) k * n);
                biases[c][r] = ints(rnd, n);
            }
        }
        String[] failure = new String[1];
        new HostPlanExecutor(plans, options).runCalls(CALLS, new HostPlanExecutor.CallHooks() {
            @Override
            public void beforeCall(int rank, long call, HostRankMemory memory) {
                memory.set(BufferRole.INPUT, inputs[(int) call][rank]);
                memory.set(BufferRole.WEIGHT, weights[(int) call][rank]);
                if (shape.bias()) {
                    memory.set(BufferRole.BIAS, biases[(int) call][rank]);
                }
                if (quantized != null) {
                    memory.setOutputScale(OUTPUT_SCALE);
                }
            }

            @Override
            public void afterCall(int rank, long call, HostRankMemory memory) {
                if (failure[0] != null) {
                    return;
                }
                double[] expected = new double[rows * n];
                for (int s = 0; s < tp; s++) {
                    double[] p = product(inputs[(int) call][s], weights[(int) call][s], m, k, n);
                    for (int i = 0; i < rows * n; i++) {
                        expected[i] += p[rank * rows * n + i];
                    }
                }
                if (shape.bias()) {
                    for (int i = 0; i < rows * n; i++) {
                        expected[i] += biases[(int) call][rank][i % n];
                    }
                }
                if (quantized != null) {
                    for (int i = 0; i < expected.length; i++) {
                        expected[i] = quantized.round((float) (expected[i] * OUTPUT_SCALE));
                    }
                }
                if (!Arrays.equals(expected, memory.get(BufferRole.OUTPUT))) {
                    failure[0] = "rank " + rank + " call " + call + ": OUTPUT " + Arrays.toString(
                            memory.get(BufferRole.OUTPUT)) + ", expected " + Arrays.toString(expected);
                }
            }
        });
        return failure[0];
    }
}
