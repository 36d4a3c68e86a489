package dev.ubuf.rs;

import dev.ubuf.op.Fp8Operands;
import dev.ubuf.op.MethodRegistry;
import dev.ubuf.fp8.Fp8Format;
import dev.ubuf.plan.BufferRole;
import dev.ubuf.plan.Fp8Scaling;
import dev.ubuf.plan.HostPlanExecutor;
import dev.ubuf.plan.HostRankMemory;
import dev.ubuf.plan.Plan;
import dev.ubuf.plan.PlanStep;
import dev.ubuf.plan.Region;
import dev.ubuf.tensor.DType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * GEMM→ReduceScatter with an FP8 output ({@link RsShape#withFp8Output}) on the host executor: every method sums in
 * its wide type as before, into the staged output, and one last step quantizes the sum (+ bias) into the FP8 OUTPUT
 * with the caller's scale, raising the caller's amax. Every rank's OUTPUT must equal fp8(float64 sum * scale), rounded
 * to nearest even and saturated, and its amax the largest |sum| of its rows, after every call (fresh data, scales and
 * a reset amax each), in every interleaving tried; wide and FP8 GEMMs alike. Stored values are small integers, so
 * every sum is exact in any order.
 */
class RsFp8OutputPlansHostTest {
    private static final int SEEDS = 8;
    private static final int CALLS = 3;

    static Stream<Arguments> domains() {
        List<Arguments> all = new ArrayList<>();
        for (int tp : new int[]{2, 3, 4}) {
            for (String variant : new String[]{"ring:sub=1", "ring:sub=2", "ring:sub=2,lowp=1", "pipeline:splits=2",
                    "oneshot"}) {
                for (boolean fp8Gemms : new boolean[]{false, true}) {
                    all.add(Arguments.of(variant, tp, fp8Gemms, tp == 3 ? DType.FP8_E5M2 : DType.FP8_E4M3));
                }
            }
        }
        return all.stream();
    }

    private static RsShape shape(int tp, boolean fp8Gemms, DType out) {
        RsShape s = new RsShape(tp, 2L * tp, 16, 32, DType.BF16, tp != 3);
        return (fp8Gemms ? s.withFp8(Fp8Operands.E4M3) : s).withFp8Output(out);
    }

    @ParameterizedTest(name = "{0} tp={1} fp8 GEMMs={2} -> {3}")
    @MethodSource("domains")
    void theQuantizedSumIsExactAndTheAmaxIsTheSumsInEveryInterleaving(String variant, int tp, boolean fp8Gemms,
                                                                       DType out) {
        RsShape shape = shape(tp, fp8Gemms, out);
        List<Plan> plans = MethodRegistry.load().schedule(shape, variant).plans();
        for (Plan p : plans) {
            assertQuantizesOnceAtTheEnd(p, out);
        }
        long base = System.nanoTime();
        for (int seed = 0; seed < SEEDS; seed++) {
            String failure = new Check(shape, base + seed).run(plans, HostPlanExecutor.Options.seeded(base + seed));
            assertEquals(null, failure, variant + " seed " + (base + seed));
        }
    }

    /** OUTPUT is the FP8 type and only the last step, a Quantize of the whole staged output on stream 0, writes it. */
    static void assertQuantizesOnceAtTheEnd(Plan p, DType out) {
        assertEquals(out, p.matrix(BufferRole.OUTPUT).dtype(), p::describe);
        assertEquals(DType.BF16, p.matrix(BufferRole.STAGED_OUTPUT).dtype(), p::describe);
        PlanStep last = p.steps().getLast();
        PlanStep.Quantize q = assertInstanceOf(PlanStep.Quantize.class, last, p::describe);
        assertEquals(0, q.stream());
        assertEquals(new Region(BufferRole.STAGED_OUTPUT, p.rank(), 0, p.matrix(BufferRole.OUTPUT).rows(), 0,
                p.matrix(BufferRole.OUTPUT).cols()), q.src());
        assertEquals(BufferRole.OUTPUT, q.dst().buffer());
        assertEquals(1, p.steps().stream().filter(s -> s instanceof PlanStep.Quantize).count(), p::describe);
        for (PlanStep s : p.steps().subList(0, p.steps().size() - 1)) {
            assertTrue(!s.toString().contains("OUTPUT,") || s.toString().contains("STAGED_OUTPUT"), () -> s
                    + " touches OUTPUT before the quantization");
        }
    }

    @Test
    void everyMethodAndTheBulkPullQuantizeOnceAtTheEnd() {
        RsShape s = new RsShape(2, 64, 32, 64, DType.FP32, true).withFp8Output(DType.FP8_E4M3);
        MethodRegistry registry = MethodRegistry.load();
        for (String variant : new String[]{"ring", "pipeline", "oneshot", "bulk"}) {
            for (Plan p : registry.schedule(s, variant).plans()) {
                assertEquals(DType.FP8_E4M3, p.matrix(BufferRole.OUTPUT).dtype(), variant);
                assertEquals(DType.FP32, p.matrix(BufferRole.STAGED_OUTPUT).dtype(), variant);
                assertInstanceOf(PlanStep.Quantize.class, p.steps().getLast(), variant);
            }
        }
        assertTrue(s.key().endsWith(" ->fp8e4m3"), s.key());
        assertEquals(DType.FP8_E4M3, s.outputDtype());
    }

    @Test
    void aWideOutputTypeOrASecondQuantizationIsRefused() {
        RsShape s = new RsShape(2, 8, 32, 32, DType.BF16, false);
        var e = assertThrows(IllegalArgumentException.class, () -> s.withFp8Output(DType.BF16));
        assertTrue(e.getMessage().contains("fp8e4m3 or fp8e5m2"), e.getMessage());
        Plan p = MethodRegistry.load().schedule(s.withFp8Output(DType.FP8_E4M3), "ring").plan(0);
        e = assertThrows(IllegalArgumentException.class, () -> p.withFp8Output(DType.FP8_E5M2));
        assertTrue(e.getMessage().contains("already"), e.getMessage());
    }

    /** Fresh data, scales and output scales per (call, rank), and the float64 reference. */
    static final class Check {
        private final RsShape shape;
        private final boolean fp8Gemms;
        private final Fp8Format format;
        private final int mc;
        private final int m;
        private final int k;
        private final int n;
        private final double[][][] x;
        private final double[][][] w;
        private final double[][] sx;
        private final double[][] sw;
        private final double[][] so;
        private final double[][] bias;

        Check(RsShape shape, long seed) {
            this.shape = shape;
            this.fp8Gemms = shape.fp8().isPresent();
            this.format = Fp8Format.of(shape.fp8Output().orElseThrow());
            mc = Math.toIntExact(shape.rowsPerRank());
            m = Math.toIntExact(shape.m());
            k = Math.toIntExact(shape.k());
            n = Math.toIntExact(shape.n());
            int tp = shape.tp();
            Random rnd = new Random(seed);
            x = new double[CALLS][tp][];
            w = new double[CALLS][tp][];
            sx = new double[CALLS][tp];
            sw = new double[CALLS][tp];
            so = new double[CALLS][tp];
            bias = new double[CALLS][];
            for (int c = 0; c < CALLS; c++) {
                for (int r = 0; r < tp; r++) {
                    x[c][r] = rnd.ints((long) m * k, -8, 9).asDoubleStream().toArray();
                    w[c][r] = rnd.ints((long) k * n, -8, 9).asDoubleStream().toArray();
                    sx[c][r] = fp8Gemms ? Math.scalb(1.0, rnd.nextInt(-4, 3)) : 1;
                    sw[c][r] = fp8Gemms ? Math.scalb(1.0, rnd.nextInt(-4, 3)) : 1;
                    // some calls saturate: scales up to 2^3 push sums of thousands past E4M3's 448
                    so[c][r] = Math.scalb(1.0, rnd.nextInt(-8, 4));
                }
                bias[c] = rnd.ints(n, -20, 21).asDoubleStream().toArray();
            }
        }

        String run(List<Plan> plans, HostPlanExecutor.Options options) {
            HostPlanExecutor ex = new HostPlanExecutor(plans, options);
            String[] failure = new String[1];
            ex.runCalls(CALLS, new HostPlanExecutor.CallHooks() {
                @Override
                public void beforeCall(int rank, long call, HostRankMemory memory) {
                    int c = (int) call;
                    memory.set(BufferRole.INPUT, x[c][rank]);
                    memory.set(BufferRole.WEIGHT, w[c][rank]);
                    if (fp8Gemms) {
                        memory.setScale(Fp8Scaling.Scale.INPUT, sx[c][rank]);
                        memory.setScale(Fp8Scaling.Scale.WEIGHT, sw[c][rank]);
                    }
                    memory.setOutputScale(so[c][rank]);
                    memory.resetOutputAmax();
                    if (memory.has(BufferRole.BIAS)) {
                        memory.set(BufferRole.BIAS, bias[c]);
                    }
                }

                @Override
                public void afterCall(int rank, long call, HostRankMemory memory) {
                    if (failure[0] == null) {
                        failure[0] = compare(rank, (int) call, memory.get(BufferRole.OUTPUT), memory.outputAmax());
                    }
                }
            });
            return failure[0];
        }

        private String compare(int rank, int c, double[] out, double amax) {
            double wantAmax = 0;
            for (int i = 0; i < mc; i++) {
                int row = rank * mc + i;
                for (int j = 0; j < n; j++) {
                    double sum = shape.bias() ? bias[c][j] : 0;
                    for (int p = 0; p < shape.tp(); p++) {
                        for (int q = 0; q < k; q++) {
                            sum += (sx[c][p] * x[c][p][row * k + q]) * (sw[c][p] * w[c][p][q * n + j]);
                        }
                    }
                    wantAmax = Math.max(wantAmax, Math.abs(sum));
                    double want = format.round((float) (sum * so[c][rank]));
                    if (Double.compare(out[i * n + j], want) != 0) {
                        return "rank " + rank + " call " + c + " OUTPUT[" + i + "][" + j + "] = " + out[i * n + j]
                                + ", reference fp8(" + sum + " * " + so[c][rank] + ") = " + want;
                    }
                }
            }
            if (amax != wantAmax) {
                return "rank " + rank + " call " + c + " amax " + amax + ", reference " + wantAmax;
            }
            return null;
        }
    }
}
