package dev.ubuf.layers.reference;

import dev.ubuf.ag.AgShape;
import dev.ubuf.fp8.Fp8Format;
import dev.ubuf.fp8.Fp8Role;
import dev.ubuf.fp8.Fp8Recipe;
import dev.ubuf.layers.tp.Fp8ScaleTable;
import dev.ubuf.op.Fp8Operands;
import dev.ubuf.plan.Fp8Scaling;
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
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.Random;

/**
 * The communication of one LayerNormMLP step under a configuration, run on the host executor (simulated ranks,
 * random interleavings, race detection): each overlapped GEMM's plans on small-integer data, whose float64 result
 * must equal the unoverlapped computation (gather, or sum over ranks, then one product) exactly.
 *
 * <p>With FP8 ({@code fp8: true}) every GEMM op is the layers' FP8 op (E4M3 forward operands, the recipe's gradient
 * format for dY, the all-gathers moving FP8 shards; the bulk reduce-scatter moves the wgrad's bf16/fp32 partials, as
 * on GPUs), and its data goes through the recipe over {@value #FP8_STEPS} steps: each step draws real values, takes
 * the scales the recipe gives ({@link Fp8ScaleTable}: delayed from the amax history, with the step's amaxes reduced
 * over the ranks; current from the tensor's own amax), quantizes with the host conversion the quantize kernel is
 * checked against ({@link Fp8Format#encode} of x * scale), and checks the plans' result against the float64
 * unoverlapped product of the dequantized values. Each drawn tensor's amax is the format's largest value times a power
 * of two, so every scale the recipe computes is a power of two and the check stays exact in any summation order.
 */
public final class LayerSimulation {
    /** One GEMM's simulated op: what ran, whether it matched, and rank 0's plan. */
    public record Result(GemmName gemm, String variant, boolean matches, String detail, String timeline) {
    }

    private LayerSimulation() {
    }

    /**
     * The method the host runs for a GEMM chosen as {@code c}: a planner-chosen GEMM (the planner measures on GPUs)
     * runs the TE default method of its collective.
     */
    public static String hostVariant(OverlapChoice c, OverlapShape shape) {
        return c.kind() == OverlapChoice.Kind.PLANNER
                ? (shape.collective() == Collective.ALL_GATHER ? "ring" : "pipeline") : c.variant().orElseThrow();
    }

    /** Steps of an FP8 check: the recipe's scales change between them. */
    public static final int FP8_STEPS = 3;

    /**
     * One GEMM's op in the step: its shape (FP8 operands with fp8 on) and, for an FP8 op, the role of its input
     * (INPUT forward, GRAD_OUTPUT for the dgrads), which decides the input's format.
     */
    record Step(GemmName gemm, OverlapShape shape, Fp8Role inputRole) {
    }

    /** The GEMMs with communication in one LayerNormMLP step, and their shapes (fc1 outputs per rank n1). */
    static List<Step> steps(UbConfig config, int tp, long m, long hidden, long ffn, Activation act) {
        long n1 = act.fc1Outputs(ffn) / tp;
        long f = ffn / tp;
        DType t = DType.FP32;
        Optional<Fp8Recipe> fp8 = config.fp8();
        Fp8Operands fwd = fp8.map(r -> new Fp8Operands(r.formats().forward().dtype(), r.formats().forward().dtype()))
                .orElse(null);
        Fp8Operands bwd = fp8.map(r -> new Fp8Operands(r.formats().backward().dtype(), r.formats().forward().dtype()))
                .orElse(null);
        List<Step> s = new ArrayList<>();
        // fc1's input is written into its user buffer by the LayerNorm (by its quantization with FP8), and dY_q of
        // fc2's dgrad by its quantization; a plain dY is the caller's, which the op copies in (as the layers do).
        s.add(ag(GemmName.FC1_FPROP, new AgShape(tp, m, hidden, n1, t).withInputInUserBuffer(), fwd,
                Fp8Role.INPUT));
        s.add(rs(GemmName.FC2_FPROP, new RsShape(tp, m, f, hidden, t, false), fwd, Fp8Role.INPUT));
        // fc2's dgrad: dX = AG(dY) W, B = W^T stored [ffn/tp, hidden] as the FP8 layout wants: n = ffn/tp, k = hidden.
        AgShape fc2Dgrad = new AgShape(tp, m, hidden, f, t);
        s.add(ag(GemmName.FC2_DGRAD, fp8.isPresent() ? fc2Dgrad.withInputInUserBuffer() : fc2Dgrad, bwd,
                Fp8Role.GRAD_OUTPUT));
        if (config.overlapRsDgrad()) {
            s.add(rs(GemmName.FC1_DGRAD, new RsShape(tp, m, n1, hidden, t, false), bwd, Fp8Role.GRAD_OUTPUT));
        } else {
            // The bulk reduce-scatter moves the dgrad's partial sums, never FP8; the wgrad reads fc1's input as its
            // fprop gathered it, so nothing is gathered again.
            s.add(new Step(GemmName.FC1_WGRAD, new RsShape(tp, m, n1, hidden, t, false), null));
        }
        return s;
    }

    private static Step ag(GemmName g, AgShape shape, Fp8Operands fp8, Fp8Role role) {
        return fp8 == null ? new Step(g, shape, null) : new Step(g, shape.withFp8(fp8), role);
    }

    private static Step rs(GemmName g, RsShape shape, Fp8Operands fp8, Fp8Role role) {
        return fp8 == null ? new Step(g, shape, null) : new Step(g, shape.withFp8(fp8), role);
    }

    public static List<Result> run(UbConfig config, int tp, long m, long hidden, long ffn, Activation act,
                                   long seed) {
        MethodRegistry registry = MethodRegistry.load();
        List<Result> out = new ArrayList<>();
        for (Step step : steps(config, tp, m, hidden, ffn, act)) {
            GemmName g = step.gemm();
            OverlapShape shape = step.shape();
            OverlapChoice c = OverlapChoice.resolve(config, g);
            if (!c.overlapped()) {
                out.add(new Result(g, "nccl", true, "not overlapped: " + c.why(), ""));
                continue;
            }
            String variant = hostVariant(c, shape);
            List<Plan> plans = registry.schedule(shape, variant).plans();
            String mismatch = shape.fp8().isPresent()
                    ? checkFp8(plans, shape, step.inputRole(), config.fp8().orElseThrow(), seed)
                    : check(plans, shape, seed);
            String matched = shape.fp8().isPresent() ? "matches over " + FP8_STEPS + " steps of the recipe ("
                    + shape.fp8().get().describe() + ")" : "matches";
            out.add(new Result(g, variant, mismatch == null, mismatch == null ? matched : mismatch,
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
                        if (!ag && !gemm) {
                            mem.set(BufferRole.UBUF, in[(int) call][rank]);
                        } else {
                            setInput(mem, shape, rank, in[(int) call][rank]);
                        }
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

    /**
     * This rank's input where its producer puts it: the INPUT the op copies from, or, for an all-gather whose input
     * is written into the user buffer, this rank's chunk of it.
     */
    private static void setInput(HostRankMemory mem, OverlapShape shape, int rank, double[] values) {
        if (shape.inputInUserBuffer()) {
            mem.setRows(BufferRole.UBUF, rank * shape.m() / shape.tp(), values);
        } else {
            mem.set(BufferRole.INPUT, values);
        }
    }

    /** One FP8 step's data on every rank: stored FP8 values and their dequantization scales. */
    private record Fp8Call(double[][] input, double[] inputInverse, double[][] weight, double[] weightInverse) {
        double[][] dequantized(double[][] v, double[] inverse) {
            double[][] d = new double[v.length][];
            for (int r = 0; r < v.length; r++) {
                d[r] = new double[v[r].length];
                for (int i = 0; i < v[r].length; i++) {
                    d[r][i] = v[r][i] * inverse[r];
                }
            }
            return d;
        }
    }

    /**
     * The FP8 check (see the class comment): {@link #FP8_STEPS} calls, the recipe's scales per step; null when every
     * rank's result equals the float64 unoverlapped product of the dequantized operands (the gathered FP8 shards
     * for a bulk all-gather) exactly.
     */
    static String checkFp8(List<Plan> plans, OverlapShape shape, Fp8Role inputRole, Fp8Recipe recipe,
                           long seed) {
        int tp = shape.tp();
        boolean ag = shape.collective() == Collective.ALL_GATHER;
        boolean gemm = plans.getFirst().matrices().containsKey(BufferRole.WEIGHT);
        Fp8ScaleTable table = new Fp8ScaleTable(recipe);
        Fp8ScaleTable.Slot xs = table.register("sim", inputRole, true);
        Fp8ScaleTable.Slot ws = table.register("sim", Fp8Role.WEIGHT, false);
        Fp8Operands ops = shape.fp8().orElseThrow();
        if (xs.format().dtype() != ops.input() || ws.format().dtype() != ops.weight()) {
            return "the recipe quantizes " + xs.describe() + " as " + xs.format() + " and the weight as "
                    + ws.format() + ", but the op multiplies " + ops.describe();
        }
        Random rnd = new Random(seed);
        long inputCount = ag ? shape.m() / tp * shape.k() : shape.m() * shape.k();
        Fp8Call[] calls = new Fp8Call[FP8_STEPS];
        for (int c = 0; c < FP8_STEPS; c++) {
            double[][] xr = new double[tp][];
            double[][] wr = new double[tp][];
            float ax = 0;
            float[] aw = new float[tp];
            for (int r = 0; r < tp; r++) {
                xr[r] = real(rnd, inputCount, xs.format());
                wr[r] = real(rnd, shape.k() * shape.n(), ws.format());
                ax = Math.max(ax, amax(xr[r]));
                aw[r] = amax(wr[r]);
            }
            float awMax = 0;
            for (float a : aw) {
                awMax = Math.max(awMax, a);
            }
            double[] sx = new double[tp];
            double[] sw = new double[tp];
            for (int r = 0; r < tp; r++) {
                if (recipe instanceof Fp8Recipe.CurrentScaling cur) {
                    // The input's amax is the max over the ranks (its shards share one scale); a weight's its own.
                    sx[r] = table.currentScale(xs, ax);
                    sw[r] = cur.scale(ws.format(), aw[r]);
                } else {
                    sx[r] = table.scale(xs);
                    sw[r] = table.scale(ws);
                }
            }
            double[][] xq = new double[tp][];
            double[][] wq = new double[tp][];
            double[] xi = new double[tp];
            double[] wi = new double[tp];
            for (int r = 0; r < tp; r++) {
                xq[r] = quantize(xr[r], (float) sx[r], xs.format());
                wq[r] = quantize(wr[r], (float) sw[r], ws.format());
                xi[r] = 1.0 / sx[r];
                wi[r] = 1.0 / sw[r];
            }
            calls[c] = new Fp8Call(xq, xi, wq, wi);
            if (table.delayed()) {
                // As on GPUs: the step's amaxes, reduced (max) over the ranks, set the next step's scales.
                table.endStep(new float[]{ax, awMax});
            }
        }
        String[] failure = new String[1];
        new HostPlanExecutor(plans, HostPlanExecutor.Options.seeded(seed)).runCalls(FP8_STEPS,
                new HostPlanExecutor.CallHooks() {
                    @Override
                    public void beforeCall(int rank, long call, HostRankMemory mem) {
                        Fp8Call c = calls[(int) call];
                        setInput(mem, shape, rank, c.input()[rank]);
                        if (gemm) {
                            mem.set(BufferRole.WEIGHT, c.weight()[rank]);
                        }
                        mem.setScale(Fp8Scaling.Scale.INPUT, c.inputInverse()[rank]);
                        mem.setScale(Fp8Scaling.Scale.WEIGHT, c.weightInverse()[rank]);
                    }

                    @Override
                    public void afterCall(int rank, long call, HostRankMemory mem) {
                        if (failure[0] != null) {
                            return;
                        }
                        Fp8Call c = calls[(int) call];
                        double[] want = gemm
                                ? expected(c.dequantized(c.input(), c.inputInverse()),
                                        c.dequantized(c.weight(), c.weightInverse()), rank, shape, true)
                                : expected(c.input(), c.weight(), rank, shape, false);
                        double[] got = mem.get(gemm ? BufferRole.OUTPUT : BufferRole.UBUF);
                        if (!Arrays.equals(want, got)) {
                            failure[0] = "rank " + rank + " step " + call + " differs from the unoverlapped FP8"
                                    + " result (" + shape.fp8().get().describe() + ")";
                        }
                    }
                });
        return failure[0];
    }

    /**
     * Real values in [-A, A] with A = the format's largest value times 2^-j (j in 1..8), one element exactly +-A (so
     * the amax is A and every scale the recipe derives is a power of two); magnitudes below A/256 are zero, which
     * keeps every float64 sum of products exact.
     */
    private static double[] real(Random rnd, long count, Fp8Format format) {
        double a = Math.scalb((double) format.maxFinite(), -rnd.nextInt(1, 9));
        double[] v = new double[Math.toIntExact(count)];
        for (int i = 0; i < v.length; i++) {
            double x = (float) (a * (rnd.nextDouble() * 2 - 1));
            v[i] = Math.abs(x) < a / 256 ? 0 : x;
        }
        v[rnd.nextInt(v.length)] = rnd.nextBoolean() ? a : -a;
        return v;
    }

    private static float amax(double[] v) {
        double m = 0;
        for (double x : v) {
            m = Math.max(m, Math.abs(x));
        }
        return (float) m;
    }

    /** What the quantize kernel stores: fp8(x * scale), one fp32 multiply, as its stored (unscaled) value. */
    private static double[] quantize(double[] x, float scale, Fp8Format format) {
        double[] q = new double[x.length];
        for (int i = 0; i < x.length; i++) {
            q[i] = format.round((float) x[i] * scale);
        }
        return q;
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
