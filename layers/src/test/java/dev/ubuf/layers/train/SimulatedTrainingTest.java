package dev.ubuf.layers.train;

import dev.ubuf.layers.config.UbConfig;
import dev.ubuf.layers.reference.HostLayerMath;
import dev.ubuf.layers.tp.Activation;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

import java.util.LinkedHashMap;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The layers train on the host without a GPU (and without the CLI): a stack of LayerNormMLP blocks sharded over
 * simulated TP ranks, its communication run on the overlap methods' plans, trains two steps, and every loss and
 * every parameter element must equal an unsharded float64 model trained alongside from the same weights, written
 * here from the reference formulas ({@link HostLayerMath}) alone.
 */
class SimulatedTrainingTest {
    private static final float LR = 0.05f;

    @ParameterizedTest(name = "tp {0}, {1}, overlap {2}, rs dgrad {3}")
    @CsvSource({
            "2, GELU, true, false",
            "2, SWIGLU, true, true",
            "4, GELU, true, true",
            "2, GELU, false, false",
            "4, SWIGLU, true, false"})
    void twoStepsOfTheShardedStackMatchTheUnshardedReferenceElementByElement(int tp, Activation act,
                                                                              boolean overlap, boolean rsDgrad) {
        UbConfig cfg = UbConfig.builder().tensorModelParallelSize(tp).sequenceParallel(true).tpCommOverlap(overlap)
                .overlapRsDgrad(rsDgrad).build();
        MlpSpec spec = new MlpSpec(8, 16, act, 2);
        long tokens = 4L * tp;
        SimulatedTraining sim = SimulatedTraining.create(cfg, spec, tokens, LR, 7);
        Reference ref = new Reference(sim.parameters(), spec, (int) tokens);
        Map<String, double[]> start = sim.parameters();
        for (int step = 0; step < 2; step++) {
            SimulatedTraining.Batch batch = sim.batch(100 + step);
            double loss = sim.step(batch);
            double want = ref.step(batch.x(), batch.target());
            assertClose(want, loss, "loss of step " + step);
            Map<String, double[]> got = sim.parameters();
            for (Map.Entry<String, double[]> e : ref.params.entrySet()) {
                double[] g = got.get(e.getKey());
                assertEquals(e.getValue().length, g.length, e.getKey());
                for (int i = 0; i < g.length; i++) {
                    assertClose(e.getValue()[i], g[i], e.getKey() + "[" + i + "] after step " + step);
                }
            }
        }
        // The steps trained: every tensor moved (an SGD that did nothing would match a reference that did nothing).
        Map<String, double[]> end = sim.parameters();
        for (String name : start.keySet()) {
            assertTrue(maxAbsDiff(start.get(name), end.get(name)) > 1e-6, name + " did not change");
        }
    }

    @Test
    void fp8AndBadShapesAreRefusedBeforeAnyWork() {
        UbConfig fp8 = UbConfig.builder().tensorModelParallelSize(2).sequenceParallel(true).fp8(true).build();
        MlpSpec spec = new MlpSpec(16, 32, Activation.GELU, 1);
        assertTrue(assertThrows(IllegalArgumentException.class, () -> SimulatedTraining.create(fp8, spec, 16, LR, 1))
                .getMessage().contains("FP8"));
        UbConfig cfg = UbConfig.builder().tensorModelParallelSize(2).sequenceParallel(true).build();
        assertThrows(IllegalArgumentException.class, () -> SimulatedTraining.create(cfg, spec, 15, LR, 1));
        assertThrows(IllegalArgumentException.class,
                () -> SimulatedTraining.create(cfg, new MlpSpec(16, 33, Activation.GELU, 1), 16, LR, 1));
    }

    private static double maxAbsDiff(double[] a, double[] b) {
        double d = 0;
        for (int i = 0; i < a.length; i++) {
            d = Math.max(d, Math.abs(a[i] - b[i]));
        }
        return d;
    }

    private static void assertClose(double want, double got, String what) {
        // float64 throughout; only the summation order differs (chunked, reduced over ranks).
        assertTrue(Math.abs(want - got) <= 1e-10 * Math.max(1, Math.abs(want)),
                () -> what + ": expected " + want + ", got " + got);
    }

    /** One unsharded model: LayerNorm, fc1, activation, fc2 per block; MSE; backward; SGD. */
    private static final class Reference {
        final Map<String, double[]> params = new LinkedHashMap<>();
        final MlpSpec spec;
        final int m;
        final int h;
        final int ffn;
        final int n1;

        Reference(Map<String, double[]> start, MlpSpec spec, int tokens) {
            start.forEach((k, v) -> params.put(k, v.clone()));
            this.spec = spec;
            this.m = tokens;
            this.h = (int) spec.hidden();
            this.ffn = (int) spec.ffn();
            this.n1 = (int) spec.activation().fc1Outputs(spec.ffn());
        }

        double step(double[] x, double[] target) {
            int layers = spec.layers();
            double[][] in = new double[layers][];
            HostLayerMath.LayerNormForward[] ln = new HostLayerMath.LayerNormForward[layers];
            double[][] pre = new double[layers][];
            double[][] act = new double[layers][];
            double[] hcur = x;
            for (int l = 0; l < layers; l++) {
                in[l] = hcur;
                ln[l] = HostLayerMath.layerNormForward(hcur, m, h, p(l, "ln.gamma"), p(l, "ln.beta"),
                        SimulatedTraining.EPS, false);
                pre[l] = linear(ln[l].y(), p(l, "fc1.weight"), p(l, "fc1.bias"), h, n1);
                act[l] = spec.activation() == Activation.GELU ? HostLayerMath.gelu(pre[l])
                        : HostLayerMath.swiglu(pre[l], m, ffn);
                hcur = linear(act[l], p(l, "fc2.weight"), p(l, "fc2.bias"), ffn, h);
            }
            HostLayerMath.MseGrad g = HostLayerMath.mseGrad(hcur, target, m, h, 2.0 / ((double) m * h));
            double sq = 0;
            for (double v : g.rowSquares()) {
                sq += v;
            }
            double[] dy = g.dy();
            Map<String, double[]> grads = new LinkedHashMap<>();
            for (int l = layers - 1; l >= 0; l--) {
                // y = a W2^T + b2: dA = dY W2, dW2 = dY^T a, db2 = column sums of dY.
                double[] da = SimulatedTraining.product(dy, p(l, "fc2.weight"), m, h, ffn);
                grads.put(l + ".fc2.weight", SimulatedTraining.product(SimulatedTraining.transpose(dy, m, h), act[l],
                        h, m, ffn));
                grads.put(l + ".fc2.bias", HostLayerMath.columnSums(dy, m, h));
                double[] dpre = spec.activation() == Activation.GELU ? HostLayerMath.geluBackward(da, pre[l])
                        : HostLayerMath.swigluBackward(da, pre[l], m, ffn);
                double[] dln = SimulatedTraining.product(dpre, p(l, "fc1.weight"), m, n1, h);
                grads.put(l + ".fc1.weight", SimulatedTraining.product(SimulatedTraining.transpose(dpre, m, n1),
                        ln[l].y(), n1, m, h));
                grads.put(l + ".fc1.bias", HostLayerMath.columnSums(dpre, m, n1));
                HostLayerMath.LayerNormBackward lb = HostLayerMath.layerNormBackward(dln, in[l], ln[l].mean(),
                        ln[l].rstd(), p(l, "ln.gamma"), false, m, h);
                grads.put(l + ".ln.gamma", lb.dgamma());
                grads.put(l + ".ln.beta", lb.dbeta());
                dy = lb.dx();
            }
            grads.forEach((k, gr) -> params.put(k, HostLayerMath.sgdStep(params.get(k), gr, LR)));
            return sq / ((double) m * h);
        }

        private double[] p(int layer, String name) {
            return params.get(layer + "." + name);
        }

        /** x [m, in] W^T + b, W [out, in]. */
        private double[] linear(double[] x, double[] w, double[] b, int in, int out) {
            double[] y = SimulatedTraining.product(x, SimulatedTraining.transpose(w, out, in), m, in, out);
            for (int i = 0; i < y.length; i++) {
                y[i] += b[i % out];
            }
            return y;
        }
    }
}
