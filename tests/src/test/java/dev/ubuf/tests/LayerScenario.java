package dev.ubuf.tests;

import dev.ubuf.bootstrap.Bootstrap;
import dev.ubuf.comm.TpCommunicator;
import dev.ubuf.config.UbufEnvironment;
import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.cuda.StreamPriority;
import dev.ubuf.layers.config.GemmName;
import dev.ubuf.layers.config.UbMethod;
import dev.ubuf.layers.config.UbConfig;
import dev.ubuf.layers.reference.HostLayerMath;
import dev.ubuf.layers.tp.Activation;
import dev.ubuf.layers.tp.ColumnParallelLinear;
import dev.ubuf.layers.tp.LayerNormLinear;
import dev.ubuf.layers.tp.LayerNormMLP;
import dev.ubuf.layers.tp.OpTable;
import dev.ubuf.layers.tp.Parameter;
import dev.ubuf.layers.tp.RowParallelLinear;
import dev.ubuf.layers.tp.TpContext;
import dev.ubuf.layers.tp.TpLayer;
import dev.ubuf.op.PlannerSettings;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * One tensor-parallel building block made twice on every rank from the same seed, once with the overlap a
 * configuration selects and once with every overlap off (NCCL), and run on the same fresh random inputs and output
 * gradients, layer buffers poisoned first: the output, the input gradient and every parameter gradient must agree
 * element by element (TE's bf16/fp16 tolerances, much tighter for fp32). Two rounds: the maximum token count, then
 * half of it (ops made per token count on first use). For LayerNormMLP in fp32 the overlapped block is also checked
 * against a float64 host computation of the whole sequence-parallel block from every rank's shards.
 *
 * <p>FP8 (an overlap name ending in {@code +fp8}, delayed scaling, or {@code +fp8current}): both blocks run every
 * GEMM in FP8 with the recipe; after each round both contexts end the step ({@link TpContext#fp8EndStep}), so the
 * second round runs on the scales the first round's amaxes set (checked: every delayed scale moved off 1, and the two
 * contexts agree on it where their FP8 operands are identical). Tolerance: in a single linear block (COLUMN, ROW,
 * LN_LINEAR) both paths quantize the same inputs with the same scales, so their FP8 operands are bit-identical and
 * only the fp32 summation order differs (chunked GEMMs, partial sums): bf16's tolerances hold as they are. In
 * LayerNormMLP, fc2's input is fc1's bf16 output, which the two paths round differently in the last place; where such
 * a difference crosses an FP8 rounding midpoint that element moves by one FP8 step (1/8 of it for E4M3, 1/4 for
 * E5M2), so the MLP blocks add an absolute tolerance of 2% of the tensor's largest magnitude to bf16's.
 *
 * @param overlap "te" (TE's default methods), "rs_dgrad" (ub_overlap_rs_dgrad), "ring" (ring-exchange
 *                reduce-scatters, aggregate all-gathers), "sm" (SM copies instead of copy engines), "auto" (the
 *                planner chooses every non-bulk GEMM); optionally with "+fp8" or "+fp8current"
 */
record LayerScenario(Block block, String overlap, DType dtype, int hidden, int ffn, int maxTokens,
                     Reference reference) implements RankScenario {
    static final String NAME = "layer";
    private static final List<String> PARAMS = List.of("block", "overlap", "dtype", "hidden", "ffn", "maxTokens",
            "reference");

    enum Block { COLUMN, ROW, LN_LINEAR, MLP_GELU, MLP_SWIGLU }

    /**
     * What the overlapped block is checked against: the same block with every overlap off (NCCL; float64 as well
     * for an fp32 LayerNormMLP), or float64 alone, for ranks that share one GPU, where NCCL refuses to run: only an
     * fp32 LayerNormMLP, its own collectives through the host ({@link HostCollectives}), both rounds checked.
     */
    enum Reference { NCCL, FLOAT64 }

    LayerScenario {
        if (reference == Reference.FLOAT64 && (dtype != DType.FP32 || !fp8Suffix(overlap).isEmpty()
                || (block != Block.MLP_GELU && block != Block.MLP_SWIGLU))) {
            throw new IllegalArgumentException("a float64-only check takes an fp32 LayerNormMLP without FP8, got "
                    + block + " " + overlap + " " + dtype);
        }
    }

    LayerScenario(Block block, String overlap, DType dtype, int hidden, int ffn, int maxTokens) {
        this(block, overlap, dtype, hidden, ffn, maxTokens, Reference.NCCL);
    }

    static LayerScenario parse(List<String> params) {
        ScenarioArgs a = ScenarioArgs.of(NAME, PARAMS, params);
        return new LayerScenario(a.constant(0, Block.class), a.text(1), a.constant(2, DType.class),
                a.positiveInt(3), a.positiveInt(4), a.positiveInt(5), a.constant(6, Reference.class));
    }

    @Override
    public List<String> toArgs() {
        return List.of(NAME, block.name(), overlap, dtype.name(), Integer.toString(hidden), Integer.toString(ffn),
                Integer.toString(maxTokens), reference.name());
    }

    /** The FP8 suffix of an overlap name ("+fp8", "+fp8current"), or "". */
    static String fp8Suffix(String overlap) {
        int plus = overlap.indexOf('+');
        return plus < 0 ? "" : overlap.substring(plus);
    }

    static UbConfig config(String overlap, int tp) {
        String fp8 = fp8Suffix(overlap);
        overlap = overlap.substring(0, overlap.length() - fp8.length());
        UbConfig.Builder b = UbConfig.builder().tensorModelParallelSize(tp).sequenceParallel(true)
                .tpCommOverlap(!overlap.equals("none"));
        switch (fp8) {
            case "" -> { }
            case "+fp8" -> b.fp8(true);
            case "+fp8current" -> b.fp8(true).fp8Recipe(dev.ubuf.layers.config.Fp8Key.Recipe.CURRENT);
            default -> throw new IllegalArgumentException("unknown fp8 suffix '" + fp8 + "'");
        }
        switch (overlap) {
            case "none", "te" -> { }
            case "rs_dgrad" -> b.overlapRsDgrad(true);
            case "ring" -> {
                for (GemmName g : new GemmName[]{GemmName.FC2_FPROP, GemmName.PROJ_FPROP}) {
                    b.gemm(g, s -> s.method(UbMethod.RING_EXCHANGE).numSplits(tp));
                }
                for (GemmName g : new GemmName[]{GemmName.FC1_FPROP, GemmName.QKV_FPROP, GemmName.FC2_DGRAD}) {
                    b.gemm(g, s -> s.aggregate(true));
                }
            }
            case "sm" -> {
                for (GemmName g : GemmName.values()) {
                    if (g.teDefaultMethod() != UbMethod.NONE) {
                        b.gemm(g, s -> s.useCe(false));
                    }
                }
            }
            case "auto" -> {
                for (GemmName g : new GemmName[]{GemmName.FC1_FPROP, GemmName.FC2_FPROP, GemmName.FC2_DGRAD,
                        GemmName.QKV_FPROP, GemmName.PROJ_FPROP, GemmName.PROJ_DGRAD}) {
                    b.gemm(g, s -> s.method(UbMethod.AUTO));
                }
            }
            default -> throw new IllegalArgumentException("unknown overlap '" + overlap + "'");
        }
        return b.build();
    }

    private TpLayer make(TpContext c) {
        return switch (block) {
            case COLUMN -> new ColumnParallelLinear(c, GemmName.Layer.FC1, hidden, ffn, true);
            case ROW -> new RowParallelLinear(c, GemmName.Layer.FC2, ffn, hidden, true);
            case LN_LINEAR -> new LayerNormLinear(c, GemmName.Layer.QKV, hidden, ffn, true);
            case MLP_GELU -> new LayerNormMLP(c, hidden, ffn, Activation.GELU, true);
            case MLP_SWIGLU -> new LayerNormMLP(c, hidden, ffn, Activation.SWIGLU, true);
        };
    }

    /** The GEMMs whose communication the block carries in fprop: they must be overlapped in the "on" context. */
    private GemmName fprop() {
        return block == Block.ROW ? GemmName.FC2_FPROP : block == Block.LN_LINEAR ? GemmName.QKV_FPROP
                : GemmName.FC1_FPROP;
    }

    @Override
    public void run(int rank, Bootstrap boot, CudaContext ctx, UbufEnvironment env) {
        if (reference == Reference.FLOAT64) {
            runAgainstFloat64(rank, boot, ctx, env);
            return;
        }
        int tp = boot.size();
        long seed = sharedSeed(boot);
        int inRowsMax = block == Block.ROW ? maxTokens : maxTokens / tp;
        int inCols = block == Block.ROW ? ffn / tp : hidden;
        try (TpCommunicator comm = TpCommunicator.create(boot, ctx, env, null);
             CudaStream s = ctx.createStream(StreamPriority.NORMAL);
             DeviceBuffer xb = ctx.allocate((long) inRowsMax * inCols * dtype.bytes());
             DeviceBuffer dyb = ctx.allocate((long) maxTokens * Math.max(hidden, 2 * ffn) * dtype.bytes());
             TpContext on = TpContext.create(comm, config(overlap, tp), dtype, maxTokens, PlannerSettings.inMemory());
             TpContext off = TpContext.create(comm, config("none" + fp8Suffix(overlap), tp), dtype, maxTokens,
                     PlannerSettings.inMemory());
             TpLayer a = make(on);
             TpLayer b = make(off)) {
            assertTrue(on.choice(fprop()).overlapped(), fprop() + " must be overlapped under '" + overlap + "'");
            assertTrue(!off.choice(fprop()).overlapped(), fprop() + " must run NCCL with overlap off");
            // Initialisation: every op made and every GEMM of a step at the maximum token count tuned, collectively.
            on.initialize(List.of(a), s);
            off.initialize(List.of(b), s);
            int untunedAfterInit = comm.gemmTuner().untunedCount();
            a.initialize(seed, s);
            b.initialize(seed, s);
            List<Parameter> pa = a.parameters();
            List<Parameter> pb = b.parameters();
            randomLayerNormParameters(ctx, s, seed, pa, pb);
            for (int round = 0; round < 2; round++) {
                int tokens = round == 0 ? maxTokens : maxTokens / 2;
                SplittableRandom rnd = new SplittableRandom(seed * 31 + rank * 7919L + round);
                int inRows = block == Block.ROW ? tokens : tokens / tp;
                TensorView x = new TensorView(xb, 0, inRows, inCols, inCols, dtype);
                float[] xs = HostTensors.random(rnd, (long) inRows * inCols, dtype, 1f);
                HostTensors.upload(ctx, s, xs, x);
                a.poisonBuffers(s);
                b.poisonBuffers(s);
                a.zeroGrad(s);
                b.zeroGrad(s);
                String where = block + " " + overlap + " " + dtype.shortName() + " tokens " + tokens + " rank " + rank
                        + " (seed " + seed + ")";
                TensorView ya = a.forward(x, s);
                TensorView yb = b.forward(x, s);
                float[] ysa = HostTensors.download(ctx, s, ya);
                assertClose(ysa, HostTensors.download(ctx, s, yb), "output, " + where);
                TensorView dy = new TensorView(dyb, 0, ya.rows(), ya.cols(), ya.cols(), dtype);
                float[] dys = HostTensors.random(rnd, dy.elements(), dtype, 1f);
                HostTensors.upload(ctx, s, dys, dy);
                TensorView dxa = a.backward(dy, s);
                TensorView dxb = b.backward(dy, s);
                float[] dxsa = HostTensors.download(ctx, s, dxa);
                assertClose(dxsa, HostTensors.download(ctx, s, dxb), "input gradient, " + where);
                for (int i = 0; i < pa.size(); i++) {
                    assertClose(HostTensors.download(ctx, s, pa.get(i).grad()),
                            HostTensors.download(ctx, s, pb.get(i).grad()), pa.get(i).name() + " gradient, " + where);
                }
                if (on.fp8()) {
                    checkFp8Step(on, off, s, where);
                }
                if (round == 0) {
                    assertEquals(untunedAfterInit, comm.gemmTuner().untunedCount(), () -> "a step at the maximum "
                            + "token count ran a GEMM the initialisation did not tune, " + where + "; untuned so far: "
                            + comm.gemmTuner().untunedKinds());
                }
                if (round == 0 && dtype == DType.FP32 && !on.fp8() && a instanceof LayerNormMLP mlp) {
                    new MlpReference(ctx, s, boot, mlp, tokens, hidden, ffn).check(xs, dys, ysa, dxsa, where);
                }
                boot.barrier();
            }
            if (a instanceof ColumnParallelLinear c) {
                assertEquals(List.of(new OpTable.Key(GemmName.FC1_FPROP, maxTokens),
                                new OpTable.Key(GemmName.FC1_FPROP, maxTokens / 2)),
                        c.opKeys().stream().filter(k -> k.gemm() == GemmName.FC1_FPROP).toList(),
                        "one fprop op per token count, made on first use and reused");
            }
            s.synchronize();
        }
    }

    /** One seed for every rank: rank 0's clock, broadcast. */
    private static long sharedSeed(Bootstrap boot) {
        return ByteBuffer.wrap(boot.broadcast(ByteBuffer.allocate(8).putLong(System.nanoTime()).array(), 0))
                .getLong();
    }

    /**
     * The LayerNorm parameters (gamma, beta) random, the same on every rank and in every stack (parameter i of each
     * is the same parameter), so their use is checked too.
     */
    @SafeVarargs
    private void randomLayerNormParameters(CudaContext ctx, CudaStream s, long seed, List<Parameter>... stacks) {
        SplittableRandom shared = new SplittableRandom(seed);
        List<Parameter> first = stacks[0];
        for (int i = 0; i < first.size(); i++) {
            if (first.get(i).name().endsWith("gamma") || first.get(i).name().endsWith("beta")) {
                float[] v = HostTensors.random(shared, first.get(i).value().elements(), dtype, 1f);
                for (List<Parameter> stack : stacks) {
                    HostTensors.upload(ctx, s, v, stack.get(i).value());
                }
            }
        }
    }

    /**
     * The overlapped LayerNormMLP alone, its collectives through the host, against float64 in both rounds: output,
     * input gradient and every parameter gradient ({@link MlpReference}).
     */
    private void runAgainstFloat64(int rank, Bootstrap boot, CudaContext ctx, UbufEnvironment env) {
        int tp = boot.size();
        long seed = sharedSeed(boot);
        try (TpCommunicator comm = TpCommunicator.create(boot, ctx, env, null);
             CudaStream s = ctx.createStream(StreamPriority.NORMAL);
             DeviceBuffer xb = ctx.allocate((long) maxTokens / tp * hidden * dtype.bytes());
             DeviceBuffer dyb = ctx.allocate((long) maxTokens / tp * hidden * dtype.bytes());
             TpContext on = TpContext.create(comm, config(overlap, tp), dtype, maxTokens, PlannerSettings.inMemory(),
                     new HostCollectives(boot, ctx));
             TpLayer a = make(on)) {
            assertTrue(on.choice(fprop()).overlapped(), fprop() + " must be overlapped under '" + overlap + "'");
            on.initialize(List.of(a), s);
            a.initialize(seed, s);
            randomLayerNormParameters(ctx, s, seed, a.parameters());
            for (int round = 0; round < 2; round++) {
                int tokens = round == 0 ? maxTokens : maxTokens / 2;
                SplittableRandom rnd = new SplittableRandom(seed * 31 + rank * 7919L + round);
                TensorView x = new TensorView(xb, 0, tokens / tp, hidden, hidden, dtype);
                float[] xs = HostTensors.random(rnd, x.elements(), dtype, 1f);
                HostTensors.upload(ctx, s, xs, x);
                a.poisonBuffers(s);
                a.zeroGrad(s);
                String where = block + " " + overlap + " " + dtype.shortName() + " tokens " + tokens + " rank " + rank
                        + " against float64 alone (seed " + seed + ")";
                TensorView y = a.forward(x, s);
                float[] ys = HostTensors.download(ctx, s, y);
                TensorView dy = new TensorView(dyb, 0, y.rows(), y.cols(), y.cols(), dtype);
                float[] dys = HostTensors.random(rnd, dy.elements(), dtype, 1f);
                HostTensors.upload(ctx, s, dys, dy);
                float[] dxs = HostTensors.download(ctx, s, a.backward(dy, s));
                new MlpReference(ctx, s, boot, (LayerNormMLP) a, tokens, hidden, ffn).check(xs, dys, ys, dxs, where);
                boot.barrier();
            }
            s.synchronize();
        }
    }

    /**
     * Ends the step on both contexts (FP8 delayed scaling: the next round runs on the scales this one's amaxes set),
     * and checks the bookkeeping: both contexts hold the same slots; under delayed scaling every scale moved off its
     * initial 1, and where the block's FP8 operands are the same on both paths (a single linear block) the two
     * contexts derived the same scales.
     */
    private void checkFp8Step(TpContext on, TpContext off, CudaStream s, String where) {
        on.fp8EndStep(s);
        off.fp8EndStep(s);
        s.synchronize();
        var ta = on.fp8Table().orElseThrow();
        var tb = off.fp8Table().orElseThrow();
        assertEquals(ta.size(), tb.size(), "FP8 slots, " + where);
        boolean single = block != Block.MLP_GELU && block != Block.MLP_SWIGLU;
        for (int i = 0; i < ta.size(); i++) {
            var slot = ta.slots().get(i);
            if (ta.delayed()) {
                assertTrue(ta.scale(slot) != 1f && Float.isFinite(ta.scale(slot)), slot.describe()
                        + " scale after a step: " + ta.scale(slot) + ", " + where);
                if (single) {
                    assertEquals(tb.scale(tb.slots().get(i)), ta.scale(slot), slot.describe() + ", " + where);
                }
            }
        }
    }

    /**
     * |got - want| <= atol + rtol |want| everywhere: TE's bf16/fp16 tolerances, much tighter for fp32; with FP8 in a
     * LayerNormMLP, plus 2% of the tensor's largest magnitude (see the class comment).
     */
    void assertClose(float[] got, float[] want, String what) {
        double rtol = dtype == DType.FP32 ? 1e-4 : 0.025;
        double atol = dtype == DType.FP32 ? 1e-4 : 0.00125;
        assertEquals(want.length, got.length, what + ": element count");
        HostTensors.assertAllFinite(want, what + " (not overlapped)");
        HostTensors.assertAllFinite(got, what + " (overlapped)");
        if (!fp8Suffix(overlap).isEmpty() && (block == Block.MLP_GELU || block == Block.MLP_SWIGLU)) {
            double max = 0;
            for (float v : want) {
                max = Math.max(max, Math.abs(v));
            }
            atol += 0.02 * max;
        }
        for (int i = 0; i < got.length; i++) {
            double d = Math.abs((double) got[i] - want[i]);
            if (!(d <= atol + rtol * Math.abs(want[i]))) {
                throw new AssertionError(what + ": element " + i + " is " + got[i] + " overlapped, " + want[i]
                        + " not overlapped (|diff| " + d + " > " + atol + " + " + rtol + " |want|)");
            }
        }
    }
}
