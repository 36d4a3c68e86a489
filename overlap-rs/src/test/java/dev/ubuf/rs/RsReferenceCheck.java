package dev.ubuf.rs;

import dev.ubuf.plan.BufferRole;
import dev.ubuf.plan.HostPlanExecutor;
import dev.ubuf.plan.HostRankMemory;
import dev.ubuf.plan.Plan;

import java.util.List;
import java.util.Random;

/**
 * Runs a domain's RS plans on the host executor for several consecutive calls, with fresh small-integer inputs
 * per (rank, call), and compares every rank's OUTPUT exactly with the float64 reference
 * out_r = sum over ranks p of (X_p · W_p)[rows of r] + bias. Small integers keep every sum exact in double,
 * whatever order the plan adds them in.
 */
final class RsReferenceCheck {
    static final int CALLS = 3;

    private final RsShape shape;
    private final int mc;
    private final int m;
    private final int k;
    private final int n;
    private final double[][][] x;       // [call][rank] X [m, k]
    private final double[][][] w;       // [call][rank] W [k, n]
    private final double[][][] partial; // [call][rank] X·W [m, n]
    private final double[][] bias;      // [call] [n], replicated on every rank like a row-parallel layer's bias

    RsReferenceCheck(RsShape shape, long dataSeed) {
        this.shape = shape;
        this.mc = Math.toIntExact(shape.rowsPerRank());
        this.m = Math.toIntExact(shape.m());
        this.k = Math.toIntExact(shape.k());
        this.n = Math.toIntExact(shape.n());
        int tp = shape.tp();
        Random rnd = new Random(dataSeed);
        x = new double[CALLS][tp][];
        w = new double[CALLS][tp][];
        partial = new double[CALLS][tp][];
        bias = new double[CALLS][];
        for (int c = 0; c < CALLS; c++) {
            for (int r = 0; r < tp; r++) {
                x[c][r] = rnd.ints((long) m * k, -4, 5).asDoubleStream().toArray();
                w[c][r] = rnd.ints((long) k * n, -4, 5).asDoubleStream().toArray();
                partial[c][r] = multiply(x[c][r], w[c][r]);
            }
            bias[c] = rnd.ints(n, -20, 21).asDoubleStream().toArray();
        }
    }

    /**
     * Runs CALLS calls; returns null when every rank's every output was exact, else the first difference.
     * Executor failures (race, deadlock, flag misuse) propagate as IllegalStateException.
     */
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
                    // BULK: the caller wrote its partial into the user buffer before the call
                    memory.set(BufferRole.UBUF, partial[c][rank]);
                }
                if (memory.has(BufferRole.BIAS)) {
                    memory.set(BufferRole.BIAS, bias[c]);
                }
            }

            @Override
            public void afterCall(int rank, long call, HostRankMemory memory) {
                if (failure[0] == null) {
                    failure[0] = compare(rank, (int) call, memory.get(BufferRole.OUTPUT));
                }
            }
        });
        return failure[0];
    }

    private String compare(int rank, int call, double[] out) {
        for (int i = 0; i < mc; i++) {
            for (int j = 0; j < n; j++) {
                double want = shape.bias() ? bias[call][j] : 0;
                for (double[] p : partial[call]) {
                    want += p[(rank * mc + i) * n + j];
                }
                double got = out[i * n + j];
                if (Double.compare(got, want) != 0) {
                    return "rank " + rank + " call " + call + " OUTPUT[" + i + "][" + j + "] = " + got
                            + ", reference " + want;
                }
            }
        }
        return null;
    }

    private double[] multiply(double[] a, double[] b) {
        double[] c = new double[m * n];
        for (int i = 0; i < m; i++) {
            for (int kk = 0; kk < k; kk++) {
                double av = a[i * k + kk];
                for (int j = 0; j < n; j++) {
                    c[i * n + j] += av * b[kk * n + j];
                }
            }
        }
        return c;
    }
}
