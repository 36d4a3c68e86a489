package dev.ubuf.tests;

import dev.ubuf.bootstrap.Bootstrap;
import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.layers.reference.HostLayerMath;
import dev.ubuf.layers.tp.Activation;
import dev.ubuf.layers.tp.LayerNormMLP;
import dev.ubuf.layers.tp.Parameter;

import java.util.List;

/**
 * A float64 host computation of one sequence-parallel LayerNormMLP step from every rank's shards (inputs, output
 * gradients, weights), checked against what this rank's block computed: its output rows, input gradient rows and
 * every parameter gradient. Per rank q: h_q = LN(X) W1_q^T + b1_q, a_q = act(h_q), Y = sum_q a_q W2_q^T + b2; the
 * backward follows the chain rule with dY gathered over all tokens.
 */
final class MlpReference {
    private final CudaContext ctx;
    private final CudaStream s;
    private final Bootstrap boot;
    private final LayerNormMLP mlp;
    private final int m;
    private final int hidden;
    private final int ffn;

    MlpReference(CudaContext ctx, CudaStream s, Bootstrap boot, LayerNormMLP mlp, int tokens, int hidden, int ffn) {
        this.ctx = ctx;
        this.s = s;
        this.boot = boot;
        this.mlp = mlp;
        this.m = tokens;
        this.hidden = hidden;
        this.ffn = ffn;
    }

    /** Every rank's float array, concatenated in rank order. */
    private double[] gather(float[] mine) {
        byte[][] all = boot.allGather(OverlapScenario.floats(mine));
        double[] out = new double[mine.length * all.length];
        for (int r = 0; r < all.length; r++) {
            float[] f = OverlapScenario.unfloats(all[r]);
            for (int i = 0; i < f.length; i++) {
                out[r * f.length + i] = f[i];
            }
        }
        return out;
    }

    private float[] value(Parameter p) {
        return HostTensors.download(ctx, s, p.value());
    }

    private static double[] slice(double[] a, int part, int size) {
        return java.util.Arrays.copyOfRange(a, part * size, (part + 1) * size);
    }

    private static double[] toDouble(float[] a) {
        double[] d = new double[a.length];
        for (int i = 0; i < a.length; i++) {
            d[i] = a[i];
        }
        return d;
    }

    /** C[m, n] = op(A) op(B), A [m, k] (stored [k, m] when ta), B [k, n] (stored [n, k] when tb). */
    static double[] mm(double[] a, double[] b, int m, int n, int k, boolean ta, boolean tb) {
        double[] c = new double[m * n];
        for (int i = 0; i < m; i++) {
            for (int j = 0; j < n; j++) {
                double acc = 0;
                for (int p = 0; p < k; p++) {
                    acc += (ta ? a[p * m + i] : a[i * k + p]) * (tb ? b[j * k + p] : b[p * n + j]);
                }
                c[i * n + j] = acc;
            }
        }
        return c;
    }

    private static void addRow(double[] mat, double[] row) {
        for (int i = 0; i < mat.length; i++) {
            mat[i] += row[i % row.length];
        }
    }

    void check(float[] xShard, float[] dyShard, float[] yGot, float[] dxGot, String where) {
        int tp = boot.size();
        int rank = boot.rank();
        int rows = m / tp;
        List<Parameter> p = mlp.parameters(); // gamma, beta, fc1.weight, fc1.bias, fc2.weight, fc2.bias
        boolean swiglu = mlp.activation() == Activation.SWIGLU;
        int f = ffn / tp;
        int n1 = swiglu ? 2 * f : f;
        double[] gamma = toDouble(value(p.get(0)));
        double[] beta = toDouble(value(p.get(1)));
        double[] w1 = gather(value(p.get(2)));
        double[] b1 = gather(value(p.get(3)));
        double[] w2 = gather(value(p.get(4)));
        double[] b2 = toDouble(value(p.get(5)));
        double[] x = gather(xShard);
        double[] dy = gather(dyShard);

        var ln = HostLayerMath.layerNormForward(x, m, hidden, gamma, beta, 1e-5, false);
        double[] y = new double[m * hidden];
        double[] dln = new double[m * hidden];
        double[] dw1 = null, db1 = null, dw2 = null;
        for (int q = 0; q < tp; q++) {
            double[] w1q = slice(w1, q, n1 * hidden);
            double[] h = mm(ln.y(), w1q, m, n1, hidden, false, true);
            addRow(h, slice(b1, q, n1));
            double[] a = swiglu ? HostLayerMath.swiglu(h, m, f) : HostLayerMath.gelu(h);
            double[] w2q = slice(w2, q, hidden * f);
            double[] yq = mm(a, w2q, m, hidden, f, false, true);
            double[] da = mm(dy, w2q, m, f, hidden, false, false);
            double[] dh = swiglu ? HostLayerMath.swigluBackward(da, h, m, f) : HostLayerMath.geluBackward(da, h);
            double[] dlnq = mm(dh, w1q, m, hidden, n1, false, false);
            for (int i = 0; i < y.length; i++) {
                y[i] += yq[i];
                dln[i] += dlnq[i];
            }
            if (q == rank) {
                dw2 = mm(dy, a, hidden, f, m, true, false);
                dw1 = mm(dh, ln.y(), n1, hidden, m, true, false);
                db1 = HostLayerMath.columnSums(dh, m, n1);
            }
        }
        addRow(y, b2);
        var lnb = HostLayerMath.layerNormBackward(dln, x, ln.mean(), ln.rstd(), gamma, false, m, hidden);
        near(yGot, slice(y, rank, rows * hidden), "output vs float64, " + where);
        near(dxGot, slice(lnb.dx(), rank, rows * hidden), "input gradient vs float64, " + where);
        near(grad(p.get(0)), lnb.dgamma(), "gamma gradient vs float64, " + where);
        near(grad(p.get(1)), lnb.dbeta(), "beta gradient vs float64, " + where);
        near(grad(p.get(2)), dw1, "fc1 weight gradient vs float64, " + where);
        near(grad(p.get(3)), db1, "fc1 bias gradient vs float64, " + where);
        near(grad(p.get(4)), dw2, "fc2 weight gradient vs float64, " + where);
        near(grad(p.get(5)), HostLayerMath.columnSums(dy, m, hidden), "fc2 bias gradient vs float64, " + where);
    }

    private float[] grad(Parameter p) {
        return HostTensors.download(ctx, s, p.grad());
    }

    /** fp32 against float64: |got - want| <= 1e-4 + 1e-3 |want| everywhere. */
    private static void near(float[] got, double[] want, String what) {
        if (got.length != want.length) {
            throw new AssertionError(what + ": " + got.length + " elements, expected " + want.length);
        }
        for (int i = 0; i < got.length; i++) {
            double d = Math.abs(got[i] - want[i]);
            if (!(d <= 1e-4 + 1e-3 * Math.abs(want[i]))) {
                throw new AssertionError(what + ": element " + i + " is " + got[i] + ", float64 gives " + want[i]);
            }
        }
    }
}
