package dev.ubuf.bench;

import dev.ubuf.ag.AgShape;
import dev.ubuf.layers.config.GemmName;
import dev.ubuf.layers.config.UbConfig;
import dev.ubuf.layers.tp.Activation;
import dev.ubuf.layers.tp.OverlapChoice;
import dev.ubuf.op.Collective;
import dev.ubuf.op.MethodRegistry;
import dev.ubuf.op.OverlapShape;
import dev.ubuf.plan.BufferRole;
import dev.ubuf.plan.HostPlanExecutor;
import dev.ubuf.plan.HostRankMemory;
import dev.ubuf.plan.Plan;
import dev.ubuf.rs.RsShape;
import dev.ubuf.tensor.DType;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * The communication of one LayerNormMLP step under a configuration, run on the host executor (simulated ranks,
 * random interleavings, race detection): each overlapped GEMM's plans on small-integer data, whose float64 result
 * must equal the unoverlapped computation (gather, or sum over ranks, then one product) exactly.
 */
public final class LayerSimulation {
    /** One GEMM's simulated op: what ran, whether it matched, and rank 0's plan. */
    public record Result(GemmName gemm, String variant, boolean matches, String detail, String timeline) {
    }

    private LayerSimulation() {
    }

    /** The GEMMs with communication in one LayerNormMLP step, and their shapes (fc1 outputs per rank n1). */
    static List<Object[]> steps(UbConfig config, int tp, long m, long hidden, long ffn, Activation act) {
        long n1 = act.fc1Outputs(ffn) / tp;
        long f = ffn / tp;
        DType t = DType.FP32;
        List<Object[]> s = new ArrayList<>();
        s.add(new Object[]{GemmName.FC1_FPROP, new AgShape(tp, m, hidden, n1, t)});
        s.add(new Object[]{GemmName.FC2_FPROP, new RsShape(tp, m, f, hidden, t, false)});
        s.add(new Object[]{GemmName.FC2_DGRAD, new AgShape(tp, m, hidden, f, t)});
        if (config.overlapRsDgrad()) {
            s.add(new Object[]{GemmName.FC1_DGRAD, new RsShape(tp, m, n1, hidden, t, false)});
        } else {
            s.add(new Object[]{GemmName.FC1_DGRAD, new AgShape(tp, m, hidden, n1, t)});
            s.add(new Object[]{GemmName.FC1_WGRAD, new RsShape(tp, m, n1, hidden, t, false)});
        }
        return s;
    }

    public static List<Result> run(UbConfig config, int tp, long m, long hidden, long ffn, Activation act,
                                   long seed) {
        MethodRegistry registry = MethodRegistry.load();
        List<Result> out = new ArrayList<>();
        for (Object[] step : steps(config, tp, m, hidden, ffn, act)) {
            GemmName g = (GemmName) step[0];
            OverlapShape shape = (OverlapShape) step[1];
            OverlapChoice c = OverlapChoice.resolve(config, g);
            if (!c.overlapped()) {
                out.add(new Result(g, "nccl", true, "not overlapped: " + c.why(), ""));
                continue;
            }
            // The planner measures on GPUs; the simulation runs the TE default method for its collective.
            String variant = c.kind() == OverlapChoice.Kind.PLANNER
                    ? (shape.collective() == Collective.ALL_GATHER ? "ring" : "pipeline") : c.variant().orElseThrow();
            List<Plan> plans = registry.schedule(shape, variant).plans();
            String mismatch = check(plans, shape, seed);
            out.add(new Result(g, variant, mismatch == null, mismatch == null ? "matches" : mismatch,
                    plans.getFirst().describe()));
        }
        return out;
    }

    private static double[] ints(Random rnd, long n) {
        return rnd.ints(Math.toIntExact(n), -4, 5).asDoubleStream().toArray();
    }

    /** Two calls with fresh data; null when every rank's result equals the unoverlapped one exactly. */
    static String check(List<Plan> plans, OverlapShape shape, long seed) {
        int tp = shape.tp();
        int m = (int) shape.m(), k = (int) shape.k(), n = (int) shape.n();
        boolean ag = shape.collective() == Collective.ALL_GATHER;
        boolean gemm = plans.getFirst().matrices().containsKey(BufferRole.WEIGHT);
        Random rnd = new Random(seed);
        int calls = 2;
        double[][][] in = new double[calls][tp][];
        double[][][] w = new double[calls][tp][];
        for (int c = 0; c < calls; c++) {
            for (int r = 0; r < tp; r++) {
                in[c][r] = ints(rnd, ag ? (long) m / tp * k : gemm ? (long) m * k : (long) m * n);
                w[c][r] = ints(rnd, (long) k * n);
            }
        }
        String[] failure = new String[1];
        new HostPlanExecutor(plans, HostPlanExecutor.Options.seeded(seed)).runCalls(calls,
                new HostPlanExecutor.CallHooks() {
                    @Override
                    public void beforeCall(int rank, long call, HostRankMemory mem) {
                        mem.set(!ag && !gemm ? BufferRole.UBUF : BufferRole.INPUT, in[(int) call][rank]);
                        if (gemm) {
                            mem.set(BufferRole.WEIGHT, w[(int) call][rank]);
                        }
                    }

                    @Override
                    public void afterCall(int rank, long call, HostRankMemory mem) {
                        if (failure[0] != null) {
                            return;
                        }
                        double[] want = expected(in[(int) call], w[(int) call], rank, shape, gemm);
                        double[] got = mem.get(ag && !gemm ? BufferRole.UBUF : BufferRole.OUTPUT);
                        if (!java.util.Arrays.equals(want, got)) {
                            failure[0] = "rank " + rank + " call " + call + " differs from the unoverlapped result";
                        }
                    }
                });
        return failure[0];
    }

    /** Unoverlapped: AG: gather, then (x W_r); RS: (sum over ranks of x_q W_q, or of the partials) rows of rank. */
    static double[] expected(double[][] in, double[][] w, int rank, OverlapShape s, boolean gemm) {
        int tp = s.tp();
        int m = (int) s.m(), k = (int) s.k(), n = (int) s.n();
        if (s.collective() == Collective.ALL_GATHER) {
            double[] x = new double[m * k];
            for (int r = 0; r < tp; r++) {
                System.arraycopy(in[r], 0, x, r * (m / tp) * k, (m / tp) * k);
            }
            return gemm ? product(x, w[rank], m, k, n) : x;
        }
        double[] sum = new double[m * n];
        for (int q = 0; q < tp; q++) {
            double[] p = gemm ? product(in[q], w[q], m, k, n) : in[q];
            for (int i = 0; i < sum.length; i++) {
                sum[i] += p[i];
            }
        }
        return java.util.Arrays.copyOfRange(sum, rank * (m / tp) * n, (rank + 1) * (m / tp) * n);
    }

    private static double[] product(double[] x, double[] w, int m, int k, int n) {
        double[] c = new double[m * n];
        for (int i = 0; i < m; i++) {
            for (int p = 0; p < k; p++) {
                double a = x[i * k + p];
                for (int j = 0; j < n; j++) {
                    c[i * n + j] += a * w[p * n + j];
                }
            }
        }
        return c;
    }
}
