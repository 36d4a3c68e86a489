package dev.ubuf.tests;

import dev.ubuf.ag.AgShape;
import dev.ubuf.bootstrap.Bootstrap;
import dev.ubuf.comm.ThreadDomain;
import dev.ubuf.comm.TpCommunicator;
import dev.ubuf.config.UbufEnvironment;
import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.cuda.KernelLibrary;
import dev.ubuf.cuda.StreamPriority;
import dev.ubuf.exec.DequantScales;
import dev.ubuf.exec.ExecutionSettings;
import dev.ubuf.exec.OperandBindings;
import dev.ubuf.exec.OutputScaling;
import dev.ubuf.fp8.Fp8Format;
import dev.ubuf.op.Collective;
import dev.ubuf.op.Fp8Operands;
import dev.ubuf.op.Candidate;
import dev.ubuf.op.MethodRegistry;
import dev.ubuf.op.OverlapOp;
import dev.ubuf.op.OverlapShape;
import dev.ubuf.op.PlanOp;
import dev.ubuf.op.Planner;
import dev.ubuf.op.PlannerSettings;
import dev.ubuf.devicekernels.DeviceKernels;
import dev.ubuf.plan.Plan;
import dev.ubuf.plan.PlanStep;
import dev.ubuf.rs.RsShape;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Stream;

import static dev.ubuf.op.Collective.ALL_GATHER;
import static dev.ubuf.op.Collective.REDUCE_SCATTER;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * AG overlap with FP8 user buffers and RS overlap with FP8 GEMMs on two GPUs (a thread per rank): every FP8 method,
 * and the planner's choice, against the FP8 NCCL reference (NCCL all-gather of the FP8 bytes + one FP8 GEMM; one FP8
 * GEMM + NCCL reduce-scatter), on fresh random inputs with poisoned outputs over three calls from alternating caller
 * streams, every element checked.
 *
 * <p>Exact by construction (the trick of {@link Fp8GemmGpuTest}): x holds integers in [-1, 1] and W integers in
 * [-2, 2] (exact in E4M3 and E5M2), k is at most 128, so each rank's product is an integer of magnitude at most 256:
 * exact in bf16 and in any accumulator; the dequantization scales are powers of two (AG: one input scale for every
 * rank, as the gathered input has one; RS: each rank its own). So each rank's partial is exact in the output type,
 * every method's output is the exact sum rounded once (then the bias added and rounded once, as the reference does),
 * and must equal the NCCL reference and the float64 reference bit for bit (where a GEMM's epilogue adds the bias, the
 * bias may meet the sum in another order, {@link BiasOrder}); the gathered FP8 input must equal NCCL's.
 */
class Fp8OverlapGpuTest {
    static final UbufEnvironment ENV = new UbufEnvironment(true, Duration.ofSeconds(60), false);
    static final Fp8Operands E4M3 = Fp8Operands.E4M3;
    static final Fp8Operands E5M2_X = new Fp8Operands(DType.FP8_E5M2, DType.FP8_E4M3);

    /** One FP8 case; a {@link RankScenario}, so it also runs with a JVM per rank ({@link SharedGpuOpsGpuTest}). */
    /**
     * One FP8 case; a {@link RankScenario}, so it also runs with a JVM per rank ({@link SharedGpuOpsGpuTest}).
     *
     * @param out       the GEMMs' output type (RS: of the partials and of the sum)
     * @param quantized RS only: the sum (+ bias) quantized into this FP8 type with {@link #OUTPUT_SCALE}; null for an
     *                  output in {@code out}
     */
    record Case(Collective collective, String variant, DType out, Fp8Operands fp8, int m, int k, int n,
                boolean copyEngine, boolean bias, DType quantized) implements RankScenario {
        static final String NAME = "fp8overlap";
        private static final List<String> PARAMS = List.of("collective", "variant", "out", "fp8Input", "fp8Weight",
                "m", "k", "n", "copyEngine", "bias", "quantized");

        Case(Collective collective, String variant, DType out, Fp8Operands fp8, int m, int k, int n,
             boolean copyEngine, boolean bias) {
            this(collective, variant, out, fp8, m, k, n, copyEngine, bias, null);
        }

        static Case parse(List<String> params) {
            ScenarioArgs a = ScenarioArgs.of(NAME, PARAMS, params);
            return new Case(a.constant(0, Collective.class), a.text(1), a.constant(2, DType.class),
                    new Fp8Operands(a.constant(3, DType.class), a.constant(4, DType.class)), a.positiveInt(5),
                    a.positiveInt(6), a.positiveInt(7), a.bool(8), a.bool(9),
                    a.text(10).equals("none") ? null : a.constant(10, DType.class));
        }

        @Override
        public List<String> toArgs() {
            return List.of(NAME, collective.name(), variant, out.name(), fp8.input().name(), fp8.weight().name(),
                    Integer.toString(m), Integer.toString(k), Integer.toString(n), Boolean.toString(copyEngine),
                    Boolean.toString(bias), quantized == null ? "none" : quantized.name());
        }

        @Override
        public void run(int rank, Bootstrap bootstrap, CudaContext ctx, UbufEnvironment env) {
            Fp8OverlapGpuTest.run(this, rank, bootstrap, ctx, env);
        }

        @Override
        public String toString() {
            return collective.resultName() + " " + variant + " " + fp8.describe() + "->" + out.shortName()
                    + (quantized == null ? "" : "->" + quantized.shortName()) + " M=" + m + " K=" + k + " N=" + n
                    + " ce=" + copyEngine + " bias=" + bias;
        }
    }

    static Stream<Arguments> cases() {
        List<Case> c = new ArrayList<>();
        for (String v : new String[]{"ring", "bidir", "aggregate", "oneshot"}) {
            for (DType t : new DType[]{DType.BF16, DType.FP32}) {
                c.add(new Case(ALL_GATHER, v, t, E4M3, 1024, 128, 256, true, false));
            }
            c.add(new Case(ALL_GATHER, v, DType.BF16, E5M2_X, 512, 64, 384, true, false));
            c.add(new Case(ALL_GATHER, v, DType.BF16, E4M3, 1024, 128, 256, false, false)); // SM copies
            c.add(new Case(ALL_GATHER, v, DType.BF16, E4M3, 6, 64, 128, true, false));      // tiny M
        }
        c.add(new Case(ALL_GATHER, "ring:cs=1", DType.BF16, E4M3, 1024, 128, 256, true, false));
        for (String v : new String[]{"ring", "ring:sub=1", "ring:lowp=1", "ring:bidir=1,lowp=1", "pipeline",
                "pipeline:splits=2", "oneshot", "scatter:sub=2", "scatter:lowp=1", "scatter:sub=1,tail=2,lowp=1"}) {
            for (DType t : new DType[]{DType.BF16, DType.FP32}) {
                c.add(new Case(REDUCE_SCATTER, v, t, E4M3, 1024, 128, 256, true, t == DType.BF16));
            }
            c.add(new Case(REDUCE_SCATTER, v, DType.BF16, E5M2_X, 512, 64, 384, false, false));
        }
        c.add(new Case(REDUCE_SCATTER, "nccl:splits=2", DType.BF16, E4M3, 1024, 128, 256, true, true));
        c.add(new Case(REDUCE_SCATTER, "nccl:splits=4,margin=16", DType.FP32, E5M2_X, 512, 64, 384, true, false));
        c.add(new Case(REDUCE_SCATTER, "ring", DType.BF16, E4M3, 6, 64, 128, true, true));
        // the FP8 own GEMM adding the first partial to arrive (in the output's type) as its C operand
        c.add(new Case(REDUCE_SCATTER, "scatter:sub=2,tail=3,lowp=1,fuse=1", DType.BF16, E4M3, 1024, 128, 256, true,
                true));
        c.add(new Case(REDUCE_SCATTER, "oneshot", DType.BF16, E4M3, 6, 64, 128, true, true));
        // The sum quantized into an FP8 output: every RS method, both FP8 types, a wide sum in bf16 or fp32.
        for (String v : new String[]{"ring", "ring:sub=1,lowp=1", "pipeline", "pipeline:splits=2", "oneshot",
                "scatter:sub=2", "scatter:lowp=1"}) {
            c.add(new Case(REDUCE_SCATTER, v, DType.BF16, E4M3, 1024, 128, 256, true, true, DType.FP8_E4M3));
            c.add(new Case(REDUCE_SCATTER, v, DType.FP32, E4M3, 512, 64, 384, true, false, DType.FP8_E5M2));
        }
        c.add(new Case(REDUCE_SCATTER, "ring", DType.BF16, E4M3, 6, 64, 128, true, true, DType.FP8_E4M3));
        c.add(new Case(ALL_GATHER, "auto", DType.BF16, E4M3, 2048, 128, 1024, true, false));
        c.add(new Case(REDUCE_SCATTER, "auto", DType.BF16, E4M3, 2048, 128, 1024, true, true));
        c.add(new Case(REDUCE_SCATTER, "auto", DType.BF16, E4M3, 2048, 128, 1024, true, true, DType.FP8_E4M3));
        return c.stream().map(Arguments::of);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void fp8OverlapEqualsTheFp8NcclReferenceElementForElement(Case c) throws Exception {
        Gpu.assumeGpus(2);
        ThreadDomain.run(2, Duration.ofSeconds(180), (rank, boot, ctx) -> run(c, rank, boot, ctx));
    }

    static OverlapShape shape(Case c, int tp) {
        if (c.collective() == ALL_GATHER) {
            return new AgShape(tp, c.m(), c.k(), c.n(), c.out()).withFp8(c.fp8());
        }
        RsShape rs = new RsShape(tp, c.m(), c.k(), c.n(), c.out(), c.bias()).withFp8(c.fp8());
        return c.quantized() == null ? rs : rs.withFp8Output(c.quantized());
    }

    /** The quantization scale of an FP8 output: a power of two, so value * scale is exact before the rounding. */
    static final float OUTPUT_SCALE = 0.25f;

    static float inputScale(Case c, int rank) {
        return c.collective() == ALL_GATHER ? 0.5f : 0.5f / (1 << rank);
    }

    static float weightScale(int rank) {
        return 4f / (1 << rank);
    }

    static void run(Case c, int rank, Bootstrap boot, CudaContext ctx) {
        run(c, rank, boot, ctx, ENV);
    }

    static void run(Case c, int rank, Bootstrap boot, CudaContext ctx, UbufEnvironment env) {
        int tp = boot.size();
        OverlapShape shape = shape(c, tp);
        DType t = c.out();
        DType ot = shape.outputDtype();
        int k = c.k();
        int n = c.n();
        DType xt = c.fp8().input();
        DType wt = c.fp8().weight();
        ExecutionSettings exec = ExecutionSettings.DEFAULT.withCopyEngine(c.copyEngine());
        try (TpCommunicator comm = TpCommunicator.create(boot, ctx, env, null);
             KernelLibrary lib = KernelLibrary.load(ctx);
             CudaStream s = ctx.createStream(StreamPriority.NORMAL);
             CudaStream other = ctx.createStream(StreamPriority.NORMAL);
             DeviceBuffer xb = ctx.allocate(shape.inputRows() * k);
             DeviceBuffer wb = ctx.allocate((long) n * k);
             DeviceBuffer bb = ctx.allocate((long) n * t.bytes());
             DeviceBuffer ob = ctx.allocate(shape.outputRows() * n * t.bytes());
             DeviceBuffer rb = ctx.allocate(shape.outputRows() * n * t.bytes());
             DeviceBuffer sb = ctx.allocate(256)) {
            DeviceKernels kernels = new DeviceKernels(lib);
            MethodRegistry registry = MethodRegistry.load();
            boolean nccl = comm.sharedDevice().isEmpty(); // ranks sharing a GPU: the exact check alone
            try (OverlapOp op = c.variant().equals("auto")
                    ? new Planner(registry, PlannerSettings.inMemory()).planned(comm, shape, kernels, exec)
                    : Candidate.named(registry, shape, c.variant()).create(comm, shape, kernels, exec);
                 OverlapOp reference = nccl ? OverlapOp.ncclReference(comm, shape, kernels) : null) {
                TensorView x = TensorView.of(xb, shape.inputRows(), k, xt);
                TensorView w = TensorView.of(wb, n, k, wt); // [n, k]: the NT layout of FP8 GEMMs
                TensorView bv = c.bias() ? TensorView.of(bb, 1, n, t) : null;
                TensorView out = TensorView.of(ob, shape.outputRows(), n, ot);
                TensorView ref = TensorView.of(rb, shape.outputRows(), n, ot);
                TensorView sx = new TensorView(sb, 0, 1, 1, 1, DType.FP32);
                TensorView sw = new TensorView(sb, 64, 1, 1, 1, DType.FP32);
                HostTensors.upload(ctx, s, new float[]{inputScale(c, rank)}, sx);
                HostTensors.upload(ctx, s, new float[]{weightScale(rank)}, sw);
                DequantScales scales = new DequantScales(sx, sw);
                // An fp8 output: its scale, and an amax and scale_inv for the op and for the reference each.
                TensorView so = new TensorView(sb, 128, 1, 1, 1, DType.FP32);
                TensorView[] amax = {new TensorView(sb, 144, 1, 1, 1, DType.FP32),
                        new TensorView(sb, 176, 1, 1, 1, DType.FP32)};
                TensorView[] scaleInv = {new TensorView(sb, 160, 1, 1, 1, DType.FP32),
                        new TensorView(sb, 192, 1, 1, 1, DType.FP32)};
                HostTensors.upload(ctx, s, new float[]{OUTPUT_SCALE}, so);
                OperandBindings bindings = OperandBindings.of(x, w).withWeightTransposed().withOutput(out).withBias(bv)
                        .withScales(scales);
                OperandBindings refBindings = OperandBindings.of(x, w).withWeightTransposed().withOutput(ref).withBias(bv)
                        .withScales(scales);
                if (c.quantized() != null) {
                    var plain = bindings;
                    var refused = assertThrows(IllegalArgumentException.class, () -> op.forward(plain, s));
                    assertTrue(refused.getMessage().contains("fp8 output"), refused.getMessage());
                    bindings = bindings.withOutputScaling(new OutputScaling(so, amax[0], scaleInv[0]));
                    refBindings = refBindings.withOutputScaling(new OutputScaling(so, amax[1], scaleInv[1]));
                }

                // Refused before any GPU work: no scales, the weight not in the NT layout (and above, an fp8 output
                // without its scaling).
                var e = assertThrows(IllegalArgumentException.class,
                        () -> op.forward(OperandBindings.of(x, w).withWeightTransposed().withOutput(out).withBias(bv), s));
                assertTrue(e.getMessage().contains("scales"), e.getMessage());
                e = assertThrows(IllegalArgumentException.class, () -> op.forward(
                        OperandBindings.of(x, TensorView.of(wb, k, n, wt)).withOutput(out).withBias(bv).withScales(scales), s));
                assertTrue(e.getMessage().contains("[n, k]"), e.getMessage());

                for (int call = 0; call < 3; call++) {
                    CudaStream caller = call % 2 == 0 ? s : other;
                    long seed = System.nanoTime() + 7919L * rank;
                    SplittableRandom rnd = new SplittableRandom(seed);
                    float[] xs = ints(rnd, shape.inputRows() * k, 1);
                    float[] ws = ints(rnd, (long) n * k, 2);
                    // The bias is the layer's, the same on every rank: rank 0's seed.
                    SplittableRandom brnd = new SplittableRandom(ByteBuffer.wrap(
                            boot.broadcast(ByteBuffer.allocate(8).putLong(seed).array(), 0)).getLong());
                    float[] bs = ints(brnd, n, 8);
                    HostTensors.upload(ctx, s, xs, x);
                    HostTensors.upload(ctx, s, ws, w);
                    if (bv != null) {
                        HostTensors.upload(ctx, s, bs, bv);
                    }
                    if (call == 0) {
                        // Initialisation: every GEMM tuned and its kernel loaded before a call waits on a peer.
                        op.tuneGemms(bindings, caller);
                        if (nccl) {
                            reference.tuneGemms(refBindings, s);
                        }
                    }
                    kernels.poison(out, s);
                    kernels.poison(ref, s);
                    for (int i = 0; i < 2; i++) {
                        HostTensors.upload(ctx, s, new float[]{0f}, amax[i]);
                        kernels.poison(scaleInv[i], s);
                    }
                    if (nccl) {
                        kernels.poison(reference.userBuffer(), s);
                    } else if (c.collective() == ALL_GATHER) {
                        kernels.poison(op.userBuffer(), s); // no reference gathers into it: the op must
                    }
                    s.synchronize();
                    boot.barrier();
                    op.forward(bindings, caller);
                    op.await(caller);
                    String where = op.label() + " " + c + " rank " + rank + " call " + call + " (seed " + seed + ")";
                    float[] got = HostTensors.download(ctx, s, out);
                    byte[][] xsAll = boot.allGather(OverlapScenario.floats(xs));
                    byte[][] wsAll = boot.allGather(OverlapScenario.floats(ws));
                    float[] exact = expected(c, shape, rank, tp, xsAll, wsAll, bs);
                    // A bias in a GEMM's epilogue: the other orders (each element must match one of them).
                    List<float[]> orders = new ArrayList<>();
                    if (c.bias() && biasInGemmEpilogue(op)) {
                        orders.add(expected(c, shape, rank, tp, xsAll, wsAll, bs, BiasOrder.OWN_AND_BIAS_THEN_SUM));
                        orders.add(expected(c, shape, rank, tp, xsAll, wsAll, bs, BiasOrder.ONE_ROUNDING));
                    }
                    float wantAmax = 0;
                    // The amax of the wide sums in each order the bias may meet them (one kernel adds it one way).
                    float[] orderAmax = new float[orders.size()];
                    if (c.quantized() != null) {
                        // The sum as before, in its wide type, then fp8(sum * scale): nearest even, saturated.
                        Fp8Format f = Fp8Format.of(c.quantized());
                        for (int i = 0; i < exact.length; i++) {
                            wantAmax = Math.max(wantAmax, Math.abs(exact[i]));
                            exact[i] = f.round(exact[i] * OUTPUT_SCALE);
                            for (int o = 0; o < orders.size(); o++) {
                                orderAmax[o] = Math.max(orderAmax[o], Math.abs(orders.get(o)[i]));
                                orders.get(o)[i] = f.round(orders.get(o)[i] * OUTPUT_SCALE);
                            }
                        }
                    }
                    if (nccl) {
                        reference.forward(refBindings, s);
                        reference.await(s);
                        float[] want = HostTensors.download(ctx, s, ref);
                        for (int i = 0; i < want.length; i++) {
                            int ei = i;
                            assertEquals(exact[i], want[i], () -> "NCCL reference element (" + ei / n + ", "
                                    + ei % n + "), " + where);
                        }
                    }
                    for (int i = 0; i < got.length; i++) {
                        int ei = i;
                        float g = got[i];
                        if (orders.stream().anyMatch(o -> Float.compare(o[ei], g) == 0)) {
                            continue; // the bias added in another order, as a GEMM's epilogue may
                        }
                        assertEquals(exact[i], got[i], () -> "element (" + ei / n + ", " + ei % n + ") against the "
                                + "exact sum" + (nccl ? " and the FP8 NCCL reference" : "") + ", " + where);
                    }
                    for (int i = 0; c.quantized() != null && i < (nccl ? 2 : 1); i++) {
                        String who = (i == 0 ? "op" : "NCCL reference") + ", " + where;
                        float gotAmax = HostTensors.download(ctx, s, amax[i])[0];
                        boolean otherOrder = false;
                        for (float a : orderAmax) {
                            otherOrder |= i == 0 && Float.compare(a, gotAmax) == 0;
                        }
                        if (!otherOrder) {
                            assertEquals(wantAmax, gotAmax, "amax of the " + who);
                        }
                        assertEquals(1f / OUTPUT_SCALE, HostTensors.download(ctx, s, scaleInv[i])[0],
                                "scale_inv of the " + who);
                    }
                    if (c.collective() == ALL_GATHER) {
                        TensorView gathered = op.userBuffer();
                        assertEquals(xt, gathered.dtype(), "the gathered input stays fp8");
                        assertArrayEquals(nccl ? HostTensors.download(ctx, s, reference.userBuffer())
                                        : OverlapScenario.concat(xsAll),
                                HostTensors.download(ctx, s, gathered), "gathered fp8 input, " + where);
                    }
                    boot.barrier();
                }
            }
        }
    }

    /** Integers in [-max, max]: exact in E4M3, E5M2 and bf16. */
    static float[] ints(SplittableRandom rnd, long count, int max) {
        float[] v = new float[Math.toIntExact(count)];
        for (int i = 0; i < v.length; i++) {
            v[i] = rnd.nextInt(-max, max + 1);
        }
        return v;
    }

    /**
     * Where the bias of an RS meets the sum. A reduction kernel (and the NCCL reference) rounds the sum, adds the bias
     * and rounds again ({@link #SUM_THEN_BIAS}). A GEMM that adds the received sum as its C operand and the bias in
     * its epilogue (the ring's fused tail, {@code Plan.biasInEpilogue}) adds them inside cuBLASLt, which may round
     * once in between: on 2 H200s (cuBLASLt 13.1, 2026-11-28) an element came out of one such GEMM as neither the
     * reference's bits nor the exact value rounded once. Every association with one rounding in between is accepted
     * there, each checked bit for bit.
     */
    enum BiasOrder {
        SUM_THEN_BIAS, OWN_AND_BIAS_THEN_SUM, ONE_ROUNDING
    }

    /** Whether the op adds its bias in a GEMM's epilogue (a GEMM followed on its stream by the bias of its result). */
    static boolean biasInGemmEpilogue(OverlapOp op) {
        if (!(op instanceof PlanOp p)) {
            return false;
        }
        List<PlanStep> steps = p.plan().steps();
        for (int i = 0; i < steps.size(); i++) {
            if (Plan.biasInEpilogue(steps, i, role -> p.plan().matrix(role).dtype())) {
                return true;
            }
        }
        return false;
    }

    static float[] expected(Case c, OverlapShape shape, int rank, int tp, byte[][] xsAll, byte[][] wsAll,
                            float[] bias) {
        return expected(c, shape, rank, tp, xsAll, wsAll, bias, BiasOrder.SUM_THEN_BIAS);
    }

    /**
     * This rank's output from every rank's stored values: the exact product (AG) or the exact sum of the ranks'
     * partials (RS), rounded once to the output type, then (RS with bias) the bias added as {@code order} says.
     */
    static float[] expected(Case c, OverlapShape shape, int rank, int tp, byte[][] xsAll, byte[][] wsAll,
                            float[] bias, BiasOrder order) {
        int m = c.m();
        int k = c.k();
        int n = c.n();
        int rows = m / tp;
        DType t = c.out();
        float[] out = new float[(int) shape.outputRows() * n];
        if (c.collective() == ALL_GATHER) {
            float[] wr = OverlapScenario.unfloats(wsAll[rank]);
            double scale = (double) inputScale(c, rank) * weightScale(rank);
            for (int r = 0; r < tp; r++) {
                float[] xr = OverlapScenario.unfloats(xsAll[r]);
                for (int i = 0; i < rows; i++) {
                    for (int j = 0; j < n; j++) {
                        double sum = 0;
                        for (int p = 0; p < k; p++) {
                            sum += (double) xr[i * k + p] * wr[j * k + p];
                        }
                        out[(r * rows + i) * n + j] = t.round((float) (sum * scale));
                    }
                }
            }
            return out;
        }
        float[][] xs = new float[tp][];
        float[][] ws = new float[tp][];
        for (int r = 0; r < tp; r++) {
            xs[r] = OverlapScenario.unfloats(xsAll[r]);
            ws[r] = OverlapScenario.unfloats(wsAll[r]);
        }
        for (int i = 0; i < rows; i++) {
            for (int j = 0; j < n; j++) {
                double sum = 0;
                double own = 0;
                for (int r = 0; r < tp; r++) {
                    float[] xr = xs[r];
                    float[] wr = ws[r];
                    double part = 0;
                    for (int p = 0; p < k; p++) {
                        part += (double) xr[(rank * rows + i) * k + p] * wr[j * k + p];
                    }
                    sum += part * inputScale(c, r) * weightScale(r);
                    own += r == rank ? part * inputScale(c, r) * weightScale(r) : 0;
                }
                float v = t.round((float) sum);
                if (!c.bias()) {
                    out[i * n + j] = v;
                } else {
                    // Every term is exact in a float, and so is each sum of them (|sum| <= 512 * tp, bias integers).
                    out[i * n + j] = switch (order) {
                        case SUM_THEN_BIAS -> t.round(v + bias[j]);
                        case OWN_AND_BIAS_THEN_SUM -> t.round(t.round((float) (own + bias[j])) + (float) (sum - own));
                        case ONE_ROUNDING -> t.round((float) (sum + bias[j]));
                    };
                }
            }
        }
        return out;
    }
}
