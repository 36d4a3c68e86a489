package dev.ubuf.rs;

import dev.ubuf.op.Candidate;
import dev.ubuf.fp8.Fp8Format;
import dev.ubuf.op.Fp8Operands;
import dev.ubuf.op.MethodRegistry;
import dev.ubuf.op.Planner;
import dev.ubuf.op.PlannerSettings;
import dev.ubuf.plan.BufferRole;
import dev.ubuf.plan.Fp8Scaling;
import dev.ubuf.plan.HostPlanExecutor;
import dev.ubuf.plan.HostRankMemory;
import dev.ubuf.plan.MatrixSpec;
import dev.ubuf.plan.Plan;
import dev.ubuf.plan.PlanStep;
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
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * GEMM→ReduceScatter with FP8 operands on the host executor: every rank's X [m, k] and W hold FP8 values with its
 * own power-of-two dequantization scales; the plans' FP8 GEMMs write fp32 or output-typed partials (never FP8), which
 * are reduced; every rank's OUTPUT must equal the float64 sum over ranks of the dequantized products (+ bias) exactly,
 * after every call, in every interleaving tried. Stored values are small integers, so every sum is exact in any order.
 */
class RsFp8PlansHostTest {
    private static final int SEEDS = 10;
    private static final int CALLS = 3;

    static Stream<Arguments> domains() {
        List<Arguments> all = new ArrayList<>();
        for (int tp : new int[]{2, 3, 4}) {
            for (String variant : new String[]{"ring:sub=1", "ring:sub=2", "ring:sub=2,lowp=1", "ring:sub=2,lowp=1,fuse=1", "ring:sub=1,lowp=1,direct=1", "ring:sub=2,lowp=1,cs=2,direct=1", "ring:sub=1,slots=3",
                    "pipeline:splits=2", "oneshot", "scatter:sub=2", "scatter:sub=1,lowp=1", "scatter:sub=1,lowp=1,fuse=1",
                    "scatter:sub=2,tail=1,lowp=1,fuse=1"}) {
                all.add(Arguments.of(variant, tp, tp % 2 == 0));
            }
        }
        return all.stream();
    }

    private static RsShape shape(int tp, boolean bias) {
        return new RsShape(tp, 2L * tp, 16, 32, DType.BF16, bias).withFp8(new Fp8Operands(DType.FP8_E4M3,
                tp == 3 ? DType.FP8_E5M2 : DType.FP8_E4M3));
    }

    @ParameterizedTest(name = "{0} tp={1} bias={2}")
    @MethodSource("domains")
    void exactAgainstTheDequantizedProductsInEveryInterleaving(String variant, int tp, boolean bias) {
        RsShape shape = shape(tp, bias);
        MethodRegistry registry = MethodRegistry.load();
        List<Plan> plans = registry.schedule(shape, variant).plans();
        for (Plan p : plans) {
            for (MatrixSpec m : p.matrices().values()) {
                boolean operand = m.role() == BufferRole.INPUT || m.role() == BufferRole.WEIGHT;
                assertEquals(operand, m.dtype().isReserved(), variant + ": " + m + " (partials are never fp8)");
            }
            assertTrue(p.steps().stream().filter(s -> s instanceof PlanStep.Gemm)
                    .allMatch(s -> Fp8Scaling.INPUT_X_WEIGHT.equals(((PlanStep.Gemm) s).fp8())), p::describe);
        }
        long base = System.nanoTime();
        for (int seed = 0; seed < SEEDS; seed++) {
            String failure = new Check(shape, base + seed).run(plans, HostPlanExecutor.Options.seeded(base + seed));
            assertEquals(null, failure, variant + " seed " + (base + seed));
        }
    }

    @Test
    void fp8ShapesRejectWhatTheFp8GemmsCannotRun() {
        RsShape s = new RsShape(2, 8, 32, 32, DType.BF16, false).withFp8(Fp8Operands.E4M3);
        MethodRegistry registry = MethodRegistry.load();
        var e = assertThrows(IllegalArgumentException.class, () -> registry.schedule(s, "pipeline:splits=8"));
        assertTrue(e.getMessage().contains("16-byte rows"), e.getMessage()); // 4 bf16 columns a block: 8 bytes
        registry.schedule(s, "pipeline:splits=4"); // 8 bf16 columns: 16 bytes
        e = assertThrows(IllegalArgumentException.class, () -> registry.schedule(s, "bulk"));
        assertTrue(e.getMessage().contains("no GEMM"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> new RsShape(2, 8, 20, 32, DType.BF16, false).withFp8(Fp8Operands.E4M3));
        assertTrue(e.getMessage().contains("k to be a multiple of 16"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> new RsShape(2, 8, 32, 32, DType.FP8_E4M3, false));
        assertTrue(e.getMessage().contains("Fp8Operands"), e.getMessage());
    }

    @Test
    void thePlannerConsidersTheFp8NcclReferenceAndOnlyRunnableVariants() {
        RsShape s = new RsShape(2, 256, 64, 32, DType.BF16, true).withFp8(Fp8Operands.E4M3);
        List<Candidate> c = new Planner(MethodRegistry.load(), PlannerSettings.inMemory()).candidates(s);
        assertTrue(c.getFirst().isNccl());
        List<String> labels = c.stream().map(Candidate::label).toList();
        assertTrue(labels.contains("pipeline:splits=2"), labels.toString());
        assertTrue(labels.contains("pipeline:splits=4"), labels.toString());
        assertFalse(labels.contains("pipeline:splits=8"), labels.toString()); // 4 bf16 columns: not 16-byte rows
        assertTrue(labels.stream().anyMatch(l -> l.startsWith("ring")), labels.toString());
        assertTrue(labels.contains("oneshot"), labels.toString());
        assertTrue(labels.contains("scatter:sub=1,lowp=1"), labels.toString());
        assertFalse(labels.contains("bulk"), labels.toString());
        assertTrue(s.key().contains("fp8e4m3xfp8e4m3"), s.key());
    }

    /**
     * Fresh data and scales per (call, rank), and the float64 reference: FP8 values with power-of-two dequantization
     * scales for an FP8 shape (integers, scales 1, otherwise); for a shape with an FP8 output also an output scale per
     * (call, rank) and a reset amax, the OUTPUT then being fp8(sum * scale) and the amax the largest |sum|.
     */
    static final class Check {
        private final RsShape shape;
        private final boolean fp8Gemms;
        private final Fp8Format quantized; // null: the output is the sum itself
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
            fp8Gemms = shape.fp8().isPresent();
            quantized = shape.fp8Output().map(Fp8Format::of).orElse(null);
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
                    // integers of magnitude <= 8: exact in E4M3 and E5M2
                    x[c][r] = rnd.ints((long) m * k, -8, 9).asDoubleStream().toArray();
                    w[c][r] = rnd.ints((long) k * n, -8, 9).asDoubleStream().toArray();
                    sx[c][r] = fp8Gemms ? Math.scalb(1.0, rnd.nextInt(-4, 3)) : 1;
                    sw[c][r] = fp8Gemms ? Math.scalb(1.0, rnd.nextInt(-4, 3)) : 1;
                    // up to 2^3: sums of thousands then pass E4M3's 448, so saturation is checked too
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
                    if (memory.has(BufferRole.INPUT)) {
                        memory.set(BufferRole.INPUT, x[c][rank]);
                        memory.set(BufferRole.WEIGHT, w[c][rank]);
                    } else {
                        // bulk (wide only): the caller wrote its partial X·W into the user buffer before the call
                        memory.set(BufferRole.UBUF, product(x[c][rank], w[c][rank]));
                    }
                    if (fp8Gemms) {
                        memory.setScale(Fp8Scaling.Scale.INPUT, sx[c][rank]);
                        memory.setScale(Fp8Scaling.Scale.WEIGHT, sw[c][rank]);
                    }
                    if (quantized != null) {
                        memory.setOutputScale(so[c][rank]);
                        memory.resetOutputAmax();
                    }
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

        private double[] product(double[] a, double[] b) {
            double[] out = new double[m * n];
            for (int i = 0; i < m; i++) {
                for (int q = 0; q < k; q++) {
                    for (int j = 0; j < n; j++) {
                        out[i * n + j] += a[i * k + q] * b[q * n + j];
                    }
                }
            }
            return out;
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
                    double want = quantized == null ? sum : quantized.round((float) (sum * so[c][rank]));
                    if (Double.compare(out[i * n + j], want) != 0) {
                        return "rank " + rank + " call " + c + " OUTPUT[" + i + "][" + j + "] = " + out[i * n + j]
                                + ", reference " + want + (quantized == null ? ""
                                : " = fp8(" + sum + " * " + so[c][rank] + ")");
                    }
                }
            }
            if (quantized != null && amax != wantAmax) {
                return "rank " + rank + " call " + c + " amax " + amax + ", reference " + wantAmax;
            }
            return null;
        }
    }
}
