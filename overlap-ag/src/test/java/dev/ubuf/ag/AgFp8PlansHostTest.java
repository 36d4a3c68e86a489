package dev.ubuf.ag;

import dev.ubuf.fp8.Fp8Format;
import dev.ubuf.op.Candidate;
import dev.ubuf.op.Fp8Operands;
import dev.ubuf.op.MethodRegistry;
import dev.ubuf.op.Planner;
import dev.ubuf.op.PlannerSettings;
import dev.ubuf.op.Schedule;
import dev.ubuf.plan.BufferRole;
import dev.ubuf.plan.Fp8Scaling;
import dev.ubuf.plan.HostPlanExecutor;
import dev.ubuf.plan.HostRankMemory;
import dev.ubuf.plan.Plan;
import dev.ubuf.plan.PlanStep;
import dev.ubuf.tensor.DType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Named;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * AG with FP8 operands on the host executor: every rank quantizes its shard with the domain's input scale (host
 * {@link Fp8Format}, as the quantize kernel does), the plans move the FP8 values and multiply them with the FP8
 * weight, dequantized by the scales; OUTPUT must equal a float64 product of the dequantized operands exactly, and the
 * gathered UBUF must hold every rank's FP8 shard, after every call, in every interleaving tried.
 */
class AgFp8PlansHostTest {
    private static final int SEEDS = 12;
    private static final int CALLS = 3;

    static Stream<Arguments> domains() {
        List<Arguments> all = new ArrayList<>();
        for (AgOverlapMethod method : AgPlansTest.registered()) {
            for (int tp : new int[]{2, 3, 4}) {
                if (method instanceof AggregateAllGatherGemm && tp % 2 != 0) {
                    continue;
                }
                // one-row shards: every method but bidir, which cuts a shard in two halves (it gets two rows)
                all.add(Arguments.of(Named.of(method.name(), method), tp,
                        method instanceof BidirectionalRingAllGatherGemm ? 2 : 1, Fp8Operands.E4M3));
                all.add(Arguments.of(Named.of(method.name(), method), tp, 3,
                        new Fp8Operands(DType.FP8_E5M2, DType.FP8_E4M3)));
            }
        }
        return all.stream();
    }

    @ParameterizedTest(name = "{0} tp={1} chunk rows {2} {3}")
    @MethodSource("domains")
    void exactAgainstTheDequantizedProductInEveryInterleaving(AgOverlapMethod method, int tp, int rows, Fp8Operands fp8) {
        AgShape shape = new AgShape(tp, (long) rows * tp, 32, 16, DType.BF16).withFp8(fp8);
        long base = System.nanoTime();
        for (int seed = 0; seed < SEEDS; seed++) {
            AgOptions options = new AgOptions(1 + seed % 3, 1 + (seed / 3) % 3, (seed / 6) % 2 == 1);
            List<Plan> plans = AgPlans.domain(method, shape, options);
            assertEquals(fp8.input(), plans.getFirst().matrix(BufferRole.UBUF).dtype(), "the ring moves fp8");
            assertEquals(shape.m() * shape.k(), plans.getFirst().matrix(BufferRole.UBUF).bytes());
            String failure = new Check(shape, method.hasGemm(), options.inputInUbuf(), base + seed)
                    .run(plans, HostPlanExecutor.Options.seeded(base + seed));
            assertEquals(null, failure, "seed " + (base + seed) + ", " + options);
        }
    }

    @Test
    void everyFp8GemmOfThePlansIsScaledByTheInputAndWeightScales() {
        AgShape shape = new AgShape(4, 8, 32, 16, DType.FP32).withFp8(Fp8Operands.E4M3);
        for (AgOverlapMethod method : List.of(new RingAllGatherGemm(), new AggregateAllGatherGemm(),
                new OneShotAllGatherGemm())) {
            for (Plan p : AgPlans.domain(method, shape, AgOptions.defaults())) {
                long gemms = p.steps().stream().filter(s -> s instanceof PlanStep.Gemm).count();
                long fp8 = p.steps().stream().filter(s -> s instanceof PlanStep.Gemm g
                        && Fp8Scaling.INPUT_X_WEIGHT.equals(g.fp8())).count();
                assertTrue(gemms > 0);
                assertEquals(gemms, fp8, method.name() + ": " + p.describe());
                assertEquals(DType.FP32, p.matrix(BufferRole.OUTPUT).dtype());
                assertEquals(DType.FP8_E4M3, p.matrix(BufferRole.WEIGHT).dtype());
            }
        }
    }

    @Test
    void shapesTheFp8GemmsCannotRunAreRejectedWithTheReason() {
        var e = assertThrows(IllegalArgumentException.class,
                () -> new AgShape(2, 8, 40, 16, DType.BF16).withFp8(Fp8Operands.E4M3));
        assertTrue(e.getMessage().contains("k to be a multiple of 16"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> new AgShape(2, 8, 32, 24, DType.BF16).withFp8(Fp8Operands.E4M3));
        assertTrue(e.getMessage().contains("n to be a multiple of 16"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> new AgShape(2, 8, 32, 16, DType.FP8_E4M3));
        assertTrue(e.getMessage().contains("Fp8Operands"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> new AgShape(2, 8, 32, 16, DType.BF16).withFp8(new Fp8Operands(DType.FP8_E5M2, DType.FP8_E5M2)));
        assertTrue(e.getMessage().contains("e5m2"), e.getMessage());
    }

    @Test
    void thePlannerConsidersTheFp8NcclReferenceAndEveryFp8Method() {
        AgShape shape = new AgShape(2, 256, 64, 64, DType.BF16).withFp8(Fp8Operands.E4M3);
        Planner planner = new Planner(MethodRegistry.load(), PlannerSettings.inMemory());
        List<Candidate> c = planner.candidates(shape);
        assertTrue(c.getFirst().isNccl(), "the FP8 NCCL reference is a candidate");
        List<String> methods = c.stream().skip(1).map(x -> x.schedule().orElseThrow().method().name()).toList();
        assertTrue(methods.containsAll(List.of("ring", "aggregate", "oneshot")), methods.toString());
        for (Candidate x : c.subList(1, c.size())) {
            Schedule s = x.schedule().orElseThrow();
            assertEquals(DType.FP8_E4M3, s.plan(0).matrix(BufferRole.UBUF).dtype(), x.label());
        }
        assertTrue(shape.key().endsWith("fp8e4m3xfp8e4m3"), shape.key());
        assertTrue(!shape.key().equals(new AgShape(2, 256, 64, 64, DType.BF16).key()), "fp8 plans cache apart");
    }

    /** Host data of the check: real values quantized on the host, with power-of-two scales. */
    static final class Check {
        private final AgShape shape;
        private final boolean gemm;
        private final boolean inputInUbuf;
        private final double[][][] shards;  // [call][rank] stored fp8 values
        private final double[][][] weights; // [call][rank] stored fp8 values, [k, n]
        private final double[] inputScale;     // [call] dequantization scale of the input, the same on every rank
        private final double[][] weightScale;  // [call][rank]

        Check(AgShape shape, boolean gemm, boolean inputInUbuf, long seed) {
            this.shape = shape;
            this.gemm = gemm;
            this.inputInUbuf = inputInUbuf;
            Random rnd = new Random(seed);
            int tp = shape.tp();
            shards = new double[CALLS][tp][];
            weights = new double[CALLS][tp][];
            inputScale = new double[CALLS];
            weightScale = new double[CALLS][tp];
            Fp8Format fx = Fp8Format.of(shape.fp8().orElseThrow().input());
            Fp8Format fw = Fp8Format.of(shape.fp8().orElseThrow().weight());
            for (int c = 0; c < CALLS; c++) {
                inputScale[c] = Math.scalb(1.0, rnd.nextInt(-6, 3));
                for (int r = 0; r < tp; r++) {
                    weightScale[c][r] = Math.scalb(1.0, rnd.nextInt(-10, 0));
                    shards[c][r] = quantize(rnd, fx, shape.chunkRows() * shape.k(), inputScale[c]);
                    weights[c][r] = quantize(rnd, fw, shape.k() * shape.n(), weightScale[c][r]);
                }
            }
        }

        /** fp8(real / scaleInv) of gaussian reals: what Fp8Kernels.quantize stores with scale = 1 / scaleInv. */
        private static double[] quantize(Random rnd, Fp8Format f, long n, double scaleInv) {
            double[] v = new double[Math.toIntExact(n)];
            for (int i = 0; i < v.length; i++) {
                v[i] = f.round((float) (rnd.nextGaussian() * 3 / scaleInv));
            }
            return v;
        }

        String run(List<Plan> plans, HostPlanExecutor.Options options) {
            HostPlanExecutor ex = new HostPlanExecutor(plans, options);
            String[] failure = new String[1];
            ex.runCalls(CALLS, new HostPlanExecutor.CallHooks() {
                @Override
                public void beforeCall(int rank, long call, HostRankMemory memory) {
                    int c = (int) call;
                    if (inputInUbuf) {
                        memory.setRows(BufferRole.UBUF, rank * shape.chunkRows(), shards[c][rank]);
                    } else {
                        memory.set(BufferRole.INPUT, shards[c][rank]);
                    }
                    if (gemm) {
                        memory.set(BufferRole.WEIGHT, weights[c][rank]);
                    }
                    memory.setScale(Fp8Scaling.Scale.INPUT, inputScale[c]);
                    memory.setScale(Fp8Scaling.Scale.WEIGHT, weightScale[c][rank]);
                }

                @Override
                public void afterCall(int rank, long call, HostRankMemory memory) {
                    if (failure[0] != null) {
                        return;
                    }
                    int c = (int) call;
                    double[] gathered = AgReferenceCheck.gathered(shape, shards[c]);
                    if (!Arrays.equals(gathered, memory.get(BufferRole.UBUF))) {
                        failure[0] = "rank " + rank + " call " + call + ": gathered fp8 UBUF differs";
                    } else if (gemm) {
                        double[] want = AgReferenceCheck.product(shape, gathered, inputScale[c],
                                weights[c][rank], weightScale[c][rank]);
                        double[] got = memory.get(BufferRole.OUTPUT);
                        if (!Arrays.equals(want, got)) {
                            failure[0] = "rank " + rank + " call " + call + ": OUTPUT " + Arrays.toString(got)
                                    + ", expected " + Arrays.toString(want);
                        }
                    }
                }
            });
            return failure[0];
        }
    }
}
