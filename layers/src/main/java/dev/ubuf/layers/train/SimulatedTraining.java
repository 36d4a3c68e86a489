package dev.ubuf.layers.train;

import dev.ubuf.ag.AgShape;
import dev.ubuf.layers.config.GemmName;
import dev.ubuf.layers.config.UbConfig;
import dev.ubuf.layers.reference.HostLayerMath;
import dev.ubuf.layers.reference.LayerSimulation;
import dev.ubuf.layers.tp.Activation;
import dev.ubuf.layers.tp.OverlapChoice;
import dev.ubuf.op.MethodRegistry;
import dev.ubuf.op.OverlapShape;
import dev.ubuf.plan.BufferRole;
import dev.ubuf.plan.HostPlanExecutor;
import dev.ubuf.plan.HostRankMemory;
import dev.ubuf.plan.Plan;
import dev.ubuf.rs.RsShape;
import dev.ubuf.tensor.DType;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.SplittableRandom;

/**
 * The training of a stack of LayerNormMLP blocks without a GPU: {@code tp} simulated ranks on the host, each holding
 * its shards as the GPU layers do (sequence-parallel rows, column-parallel fc1, row-parallel fc2), in float64. Every
 * GEMM with communication runs as the configuration says: an overlapped one through its method's plans on the host
 * executor (random interleavings, race detection), whose chunking and synchronisation are those the GPUs run; a
 * planner-chosen one through the TE default method of its collective ({@link LayerSimulation#hostVariant}); an
 * unoverlapped one as a gather or a sum over the ranks and one product. The step is the GPU {@link Trainer}'s:
 * forward, MSE gradient, backward, SGD (one replica: no data-parallel average; no FP8, whose host check is
 * {@link LayerSimulation}). Parameters start as {@link dev.ubuf.layers.tp.TpLayer#initialize} describes (weights
 * uniform in +-1/sqrt(fan-in), biases in +-0.1, gamma 1, beta 0), drawn on the host.
 */
public final class SimulatedTraining {
    /** LayerNorm's epsilon, as in the GPU layers. */
    static final double EPS = 1e-5;

    /** A replica's batch: its tokens' inputs and targets, [tokens, hidden] row-major each. */
    public record Batch(double[] x, double[] target) {
        public Batch {
            Objects.requireNonNull(x, "x");
            Objects.requireNonNull(target, "target");
        }
    }

    /** One block's parameters on one rank: [out, in] weights like the GPU layers'; gamma, beta and b2 are whole. */
    private static final class Block {
        final double[] gamma;
        final double[] beta;
        final double[][] w1; // per rank [n1, hidden]
        final double[][] b1; // per rank [n1]
        final double[][] w2; // per rank [hidden, f]
        final double[] b2;
        // The forward's saved values, per rank.
        double[][] lnIn;
        HostLayerMath.LayerNormForward[] ln;
        double[][] lnAll;
        double[][] pre;
        double[][] act;

        Block(int tp, long hidden, long n1, long f) {
            gamma = new double[(int) hidden];
            beta = new double[(int) hidden];
            w1 = new double[tp][(int) (n1 * hidden)];
            b1 = new double[tp][(int) n1];
            w2 = new double[tp][(int) (hidden * f)];
            b2 = new double[(int) hidden];
        }
    }

    private final UbConfig config;
    private final MlpSpec spec;
    private final int tp;
    private final int m;
    private final int h;
    private final int f;
    private final int n1;
    private final float lr;
    private final long seed;
    private final MethodRegistry registry = MethodRegistry.load();
    private final List<Block> blocks = new ArrayList<>();
    private long calls;

    private SimulatedTraining(UbConfig config, MlpSpec spec, long tokens, float lr, long seed) {
        this.config = config;
        this.spec = spec;
        this.tp = config.tensorModelParallelSize();
        this.m = Math.toIntExact(tokens);
        this.h = Math.toIntExact(spec.hidden());
        this.f = Math.toIntExact(spec.ffn() / tp);
        this.n1 = Math.toIntExact(spec.activation().fc1Outputs(spec.ffn()) / tp);
        this.lr = lr;
        this.seed = seed;
        for (int l = 0; l < spec.layers(); l++) {
            Block b = new Block(tp, h, n1, f);
            SplittableRandom rnd = new SplittableRandom(MlpSpec.layerSeed(seed, l));
            java.util.Arrays.fill(b.gamma, 1);
            for (int r = 0; r < tp; r++) {
                fill(rnd, b.w1[r], 1 / Math.sqrt(h));
                fill(rnd, b.b1[r], 0.1);
                fill(rnd, b.w2[r], 1 / Math.sqrt(spec.ffn()));
            }
            fill(rnd, b.b2, 0.1);
            blocks.add(b);
        }
    }

    /**
     * A stack of {@code spec} over the configuration's {@code tensor_model_parallel_size} simulated ranks, trained on
     * {@code tokens} tokens per step with learning rate {@code lr}, its parameters drawn from {@code seed}.
     */
    public static SimulatedTraining create(UbConfig config, MlpSpec spec, long tokens, float lr, long seed) {
        Objects.requireNonNull(config, "config");
        Objects.requireNonNull(spec, "spec");
        int tp = config.tensorModelParallelSize();
        if (tp < 2) {
            throw new IllegalArgumentException("tensor-parallel layers need tp >= 2, the configuration has " + tp);
        }
        if (config.fp8Enabled()) {
            throw new IllegalArgumentException("the host training simulation runs in float64 without FP8 (the FP8"
                    + " plans are checked by LayerSimulation): take fp8 out of the configuration");
        }
        spec.checkFor(tp, false);
        if (tokens < tp || tokens % tp != 0) {
            throw new IllegalArgumentException("tokens = " + tokens + " must be a positive multiple of tp = " + tp);
        }
        if (!(lr > 0) || !Float.isFinite(lr)) {
            throw new IllegalArgumentException("lr must be finite and > 0, got " + lr);
        }
        return new SimulatedTraining(config, spec, tokens, lr, seed);
    }

    public int tp() {
        return tp;
    }

    public long tokens() {
        return m;
    }

    public MlpSpec spec() {
        return spec;
    }

    /** A batch of inputs and targets uniform in [-1, 1) from {@code batchSeed}. */
    public Batch batch(long batchSeed) {
        SplittableRandom rnd = new SplittableRandom(batchSeed);
        double[] x = new double[m * h];
        double[] t = new double[m * h];
        fill(rnd, x, 1);
        fill(rnd, t, 1);
        return new Batch(x, t);
    }

    /**
     * One training step on {@code batch} (rank r takes rows r·tokens/tp ..): forward, the MSE gradient, backward, SGD.
     * Returns the step's loss, the mean squared error over the batch before the update.
     */
    public double step(Batch batch) {
        if (batch.x().length != m * h || batch.target().length != m * h) {
            throw new IllegalArgumentException("a batch holds tokens x hidden = " + m + " x " + h + " values");
        }
        int rows = m / tp;
        double[][] hs = new double[tp][];
        for (int r = 0; r < tp; r++) {
            hs[r] = java.util.Arrays.copyOfRange(batch.x(), r * rows * h, (r + 1) * rows * h);
        }
        for (Block b : blocks) {
            hs = forward(b, hs);
        }
        double scale = 2.0 / ((double) m * h);
        double sq = 0;
        double[][] dy = new double[tp][];
        for (int r = 0; r < tp; r++) {
            double[] t = java.util.Arrays.copyOfRange(batch.target(), r * rows * h, (r + 1) * rows * h);
            HostLayerMath.MseGrad g = HostLayerMath.mseGrad(hs[r], t, rows, h, scale);
            dy[r] = g.dy();
            for (double v : g.rowSquares()) {
                sq += v;
            }
        }
        for (int l = blocks.size() - 1; l >= 0; l--) {
            dy = backward(blocks.get(l), dy);
        }
        return sq / ((double) m * h);
    }

    /**
     * The whole model's parameters as one unsharded model holds them, by name ("0.fc1.weight" [fc1 outputs,
     * hidden] with SwiGLU's activated units first, then the gate's; "0.fc2.weight" [hidden, ffn]; "0.ln.gamma", ...).
     */
    public Map<String, double[]> parameters() {
        Map<String, double[]> p = new LinkedHashMap<>();
        for (int l = 0; l < blocks.size(); l++) {
            Block b = blocks.get(l);
            p.put(l + ".ln.gamma", b.gamma.clone());
            p.put(l + ".ln.beta", b.beta.clone());
            p.put(l + ".fc1.weight", fc1Rows(b.w1, h));
            p.put(l + ".fc1.bias", fc1Rows(b.b1, 1));
            double[] w2 = new double[h * f * tp];
            for (int r = 0; r < tp; r++) {
                for (int i = 0; i < h; i++) {
                    System.arraycopy(b.w2[r], i * f, w2, i * f * tp + r * f, f);
                }
            }
            p.put(l + ".fc2.weight", w2);
            p.put(l + ".fc2.bias", b.b2.clone());
        }
        return p;
    }

    /** The ranks' fc1 rows in the unsharded order: GELU rank by rank; SwiGLU every rank's a rows, then the b rows. */
    private double[] fc1Rows(double[][] shards, int cols) {
        double[] all = new double[tp * n1 * cols];
        int parts = spec.activation() == Activation.SWIGLU ? 2 : 1;
        int per = n1 / parts;
        for (int p = 0; p < parts; p++) {
            for (int r = 0; r < tp; r++) {
                System.arraycopy(shards[r], p * per * cols, all, (p * tp * per + r * per) * cols, per * cols);
            }
        }
        return all;
    }

    private double[][] forward(Block b, double[][] x) {
        int rows = m / tp;
        b.lnIn = x;
        b.ln = new HostLayerMath.LayerNormForward[tp];
        double[][] ln = new double[tp][];
        double[][] w1t = new double[tp][];
        double[][] w2t = new double[tp][];
        for (int r = 0; r < tp; r++) {
            b.ln[r] = HostLayerMath.layerNormForward(x[r], rows, h, b.gamma, b.beta, EPS, false);
            ln[r] = b.ln[r].y();
            w1t[r] = transpose(b.w1[r], n1, h);
            w2t[r] = transpose(b.w2[r], h, f);
        }
        // The LayerNorm writes its rows straight into fc1's user buffer (LayerNormLinear): no own-chunk copy.
        // The wgrad reads the gathered rows where the forward left them (each rank's UBUF after the call).
        b.lnAll = new double[tp][];
        b.pre = allGatherGemm(GemmName.FC1_FPROP, ln, w1t, h, n1, true, b.lnAll);
        b.act = new double[tp][];
        for (int r = 0; r < tp; r++) {
            addBias(b.pre[r], b.b1[r]);
            b.act[r] = spec.activation() == Activation.GELU ? HostLayerMath.gelu(b.pre[r])
                    : HostLayerMath.swiglu(b.pre[r], m, f);
        }
        double[][] y = gemmReduceScatter(GemmName.FC2_FPROP, b.act, w2t, f, h);
        for (double[] yr : y) {
            addBias(yr, b.b2);
        }
        return y;
    }

    private double[][] backward(Block b, double[][] dy) {
        int rows = m / tp;
        // fc2: dA = AG(dY) W2 (W2 [hidden, f] is the [k, n] operand as stored); dW2 = AG(dY)^T A; db2 over all rows.
        double[][] da = allGatherGemm(GemmName.FC2_DGRAD, dy, b.w2, h, f, false, new double[tp][]);
        double[] dyAll = gather(dy);
        double[] db2 = HostLayerMath.columnSums(dyAll, m, h);
        double[][] dpre = new double[tp][];
        double[][] dw2 = new double[tp][];
        for (int r = 0; r < tp; r++) {
            dw2[r] = product(transpose(dyAll, m, h), b.act[r], h, m, f);
            dpre[r] = spec.activation() == Activation.GELU ? HostLayerMath.geluBackward(da[r], b.pre[r])
                    : HostLayerMath.swigluBackward(da[r], b.pre[r], m, f);
        }
        // fc1: dLN = RS(dPre W1) (W1 [n1, hidden] is the [k, n] operand), overlapped as the configuration says, or
        // a bulk reduce-scatter of its partials; the wgrad reads the normalized rows fc1's forward gathered.
        double[][] lnAll = b.lnAll;
        double[][] dln;
        if (config.overlapRsDgrad()) {
            dln = gemmReduceScatter(GemmName.FC1_DGRAD, dpre, b.w1, n1, h);
        } else {
            double[][] partial = new double[tp][];
            for (int r = 0; r < tp; r++) {
                partial[r] = product(dpre[r], b.w1[r], m, n1, h);
            }
            dln = bulkReduceScatter(partial);
        }
        double[][] dx = new double[tp][];
        double[] dgamma = new double[h];
        double[] dbeta = new double[h];
        for (int r = 0; r < tp; r++) {
            double[] dw1 = product(transpose(dpre[r], m, n1), lnAll[r], n1, m, h);
            double[] db1 = HostLayerMath.columnSums(dpre[r], m, n1);
            HostLayerMath.LayerNormBackward lb = HostLayerMath.layerNormBackward(dln[r], b.lnIn[r], b.ln[r].mean(),
                    b.ln[r].rstd(), b.gamma, false, rows, h);
            dx[r] = lb.dx();
            // gamma and beta are whole on every rank: their gradient is the sum over the ranks' rows.
            add(dgamma, lb.dgamma());
            add(dbeta, lb.dbeta());
            sgd(b.w1[r], dw1);
            sgd(b.b1[r], db1);
            sgd(b.w2[r], dw2[r]);
        }
        sgd(b.b2, db2);
        sgd(b.gamma, dgamma);
        sgd(b.beta, dbeta);
        return dx;
    }

    /**
     * out_r [m, n] = AG(in) w_r, for in_r [m/tp, k] and w_r [k, n]; with {@code inUserBuffer} each rank's in_r is
     * written into its chunk of the op's user buffer, as the layer's producer does.
     */
    private double[][] allGatherGemm(GemmName gemm, double[][] in, double[][] w, int k, int n,
                                     boolean inUserBuffer, double[][] gathered) {
        AgShape plain = new AgShape(tp, m, k, n, DType.FP32);
        OverlapShape shape = inUserBuffer ? plain.withInputInUserBuffer() : plain;
        OverlapChoice c = OverlapChoice.resolve(config, gemm);
        if (!c.overlapped()) {
            double[] all = gather(in);
            double[][] out = new double[tp][];
            for (int r = 0; r < tp; r++) {
                out[r] = product(all, w[r], m, k, n);
                gathered[r] = all;
            }
            return out;
        }
        return runPlans(gemm, shape, in, w, BufferRole.INPUT, BufferRole.OUTPUT, gathered);
    }

    /** out_r [m/tp, n] = rows r of the sum over ranks of in_q w_q, for in_q [m, k] and w_q [k, n]. */
    private double[][] gemmReduceScatter(GemmName gemm, double[][] in, double[][] w, int k, int n) {
        OverlapShape shape = new RsShape(tp, m, k, n, DType.FP32, false);
        OverlapChoice c = OverlapChoice.resolve(config, gemm);
        if (!c.overlapped()) {
            double[][] partial = new double[tp][];
            for (int r = 0; r < tp; r++) {
                partial[r] = product(in[r], w[r], m, k, n);
            }
            return reduceScatter(partial, n);
        }
        return runPlans(gemm, shape, in, w, BufferRole.INPUT, BufferRole.OUTPUT, null);
    }

    /** The dgrad's bulk reduce-scatter of its [m, hidden] partials (fc1_wgrad's), run on its plans. */
    private double[][] bulkReduceScatter(double[][] partial) {
        OverlapChoice c = OverlapChoice.resolve(config, GemmName.FC1_WGRAD);
        if (!c.overlapped()) {
            return reduceScatter(partial, h);
        }
        return runPlans(GemmName.FC1_WGRAD, new RsShape(tp, m, n1, h, DType.FP32, false), partial, null,
                BufferRole.UBUF, BufferRole.OUTPUT, null);
    }

    /**
     * One call of {@code gemm}'s plans on the host executor: each rank's input (and weight), then its result; with
     * {@code userBuffers}, each rank's UBUF after the call too.
     */
    private double[][] runPlans(GemmName gemm, OverlapShape shape, double[][] in, double[][] w, BufferRole input,
                                BufferRole result, double[][] userBuffers) {
        String variant = LayerSimulation.hostVariant(OverlapChoice.resolve(config, gemm), shape);
        List<Plan> plans = registry.schedule(shape, variant).plans();
        double[][] out = new double[tp][];
        // A fresh interleaving per call, reproducible from the stack's seed.
        new HostPlanExecutor(plans, HostPlanExecutor.Options.seeded(seed * 31 + calls++)).runCalls(1,
                new HostPlanExecutor.CallHooks() {
                    @Override
                    public void beforeCall(int rank, long call, HostRankMemory mem) {
                        if (input == BufferRole.INPUT && shape.inputInUserBuffer()) {
                            mem.setRows(BufferRole.UBUF, (long) rank * m / tp, in[rank]);
                        } else {
                            mem.set(input, in[rank]);
                        }
                        if (w != null) {
                            mem.set(BufferRole.WEIGHT, w[rank]);
                        }
                    }

                    @Override
                    public void afterCall(int rank, long call, HostRankMemory mem) {
                        out[rank] = mem.get(result);
                        if (userBuffers != null) {
                            userBuffers[rank] = mem.get(BufferRole.UBUF);
                        }
                    }
                });
        return out;
    }

    private double[] gather(double[][] shards) {
        int len = shards[0].length;
        double[] all = new double[len * tp];
        for (int r = 0; r < tp; r++) {
            System.arraycopy(shards[r], 0, all, r * len, len);
        }
        return all;
    }

    private double[][] reduceScatter(double[][] partial, int cols) {
        int rows = m / tp;
        double[][] out = new double[tp][rows * cols];
        for (double[] p : partial) {
            for (int r = 0; r < tp; r++) {
                for (int i = 0; i < rows * cols; i++) {
                    out[r][i] += p[r * rows * cols + i];
                }
            }
        }
        return out;
    }

    private void sgd(double[] w, double[] g) {
        double[] next = HostLayerMath.sgdStep(w, g, lr);
        System.arraycopy(next, 0, w, 0, w.length);
    }

    private static void add(double[] into, double[] v) {
        for (int i = 0; i < into.length; i++) {
            into[i] += v[i];
        }
    }

    private static void addBias(double[] x, double[] bias) {
        for (int i = 0; i < x.length; i++) {
            x[i] += bias[i % bias.length];
        }
    }

    private static void fill(SplittableRandom rnd, double[] a, double bound) {
        for (int i = 0; i < a.length; i++) {
            a[i] = rnd.nextDouble(-bound, bound);
        }
    }

    static double[] transpose(double[] a, int rows, int cols) {
        double[] t = new double[a.length];
        for (int i = 0; i < rows; i++) {
            for (int j = 0; j < cols; j++) {
                t[j * rows + i] = a[i * cols + j];
            }
        }
        return t;
    }

    /** c [m, n] = a [m, k] b [k, n]. */
    static double[] product(double[] a, double[] b, int m, int k, int n) {
        double[] c = new double[m * n];
        for (int i = 0; i < m; i++) {
            for (int p = 0; p < k; p++) {
                double x = a[i * k + p];
                for (int j = 0; j < n; j++) {
                    c[i * n + j] += x * b[p * n + j];
                }
            }
        }
        return c;
    }
}
