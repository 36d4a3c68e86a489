package dev.ubuf.layers.tp;

import dev.ubuf.ag.AgShape;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.exec.DequantScales;
import dev.ubuf.exec.OperandBindings;
import dev.ubuf.fp8.Fp8Role;
import dev.ubuf.layers.config.GemmName;
import dev.ubuf.layers.config.UbFlag;
import dev.ubuf.layers.kernels.LayerKernels;
import dev.ubuf.op.Fp8Operands;
import dev.ubuf.op.OverlapOp;
import dev.ubuf.rs.RsShape;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import dev.ubuf.trace.SpanKind;
import dev.ubuf.trace.Tracer;

import java.util.ArrayList;
import java.util.List;

/**
 * A column-parallel linear layer under sequence parallelism (TE's qkv or fc1): each rank holds tokens/tp rows of
 * the input X and the rows [r N/tp, (r+1) N/tp) of the weight, stored [N/tp, K] like torch's Linear.
 *
 * <pre>
 * forward:  Y[M, N/tp] = AG(X)[M, K] W_r^T (+ b_r)            {layer}_fprop: AG overlapped with the GEMM
 * backward: dX[M/tp, K] = RS(dY W_r)                          {layer}_dgrad / {layer}_wgrad (see below)
 *           dW_r += dY^T AG(X),  db_r += colsum(dY)
 * </pre>
 *
 * Backward, as the configuration says: with {@code ub_overlap_rs_dgrad} the dgrad GEMM runs as a reduce-scatter
 * overlap (X is gathered by NCCL on the side stream meanwhile); otherwise a bulk all-gather of X runs beside the
 * dgrad GEMM ({@code ub_bulk_dgrad}), and a bulk reduce-scatter of its result beside the wgrad GEMM
 * ({@code ub_bulk_wgrad}); what is not overlapped runs through NCCL on the caller's stream.
 *
 * <p>Buffers and ops are made for the context's maximum token count; a call may use any multiple of tp up to it
 * (ops for a new token count are made on first use: collective). The returned tensors are the layer's own and
 * valid until its next call; the input must stay unchanged from forward until backward.
 *
 * <p>FP8 (the context's {@code fp8}): every GEMM runs in FP8 with the recipe's per-tensor scales (slots "input",
 * "weight" and "grad_output" of the layer's {@link Fp8ScaleTable}); outputs and dX keep the layer's dtype, dW and db
 * accumulate in fp32 as without FP8.
 * <pre>
 * forward:  x_q = fp8(x) (E4M3; its amax is the max over the ranks, as the ranks' shards are gathered with one scale),
 *           W_q and W_q^T = fp8(W) (E4M3), Y = AG(x_q) W_q^T              the all-gather moves x_q (fp8_buf)
 * backward: dY_q and dY_q^T = fp8(dY) (E5M2 with hybrid)
 *           dX = RS(dY_q (W_q^T)^T)                                          FP8 GEMM, bf16/fp32 partial sums
 *           dW += dY_q^T (AG(x_q))^T                                         the gathered x_q (the bulk all-gather's
 *                                                                            buffer or NCCL's), transposed
 * </pre>
 * cuBLASLt runs FP8 only as C = A[m, k] B[n, k]^T, so W and dY are quantized in both layouts at once, and the gathered
 * x_q is transposed for the wgrad ({@link Fp8DeviceScales#transpose}, exact). K, N/tp and the tokens must be
 * multiples of 16.
 */
public final class ColumnParallelLinear implements TpLayer {
    private final TpContext tc;
    private final GemmName.Layer layer;
    private final long in;
    private final long outPerRank;
    private final Buffers buffers;
    private final OpTable<OverlapOp> ops;
    private final Parameter weight;
    private final Parameter bias;
    private final TensorView out;
    private final TensorView dx;
    private final TensorView gathered;
    private final TensorView biasWorkspace;
    /** FP8 state and buffers (null without FP8): see the class comment. */
    private final Fp8 fp8;
    private TensorView savedInput;
    private long savedTokens;

    /**
     * @param layer       QKV or FC1: whose GEMM names (and so whose configuration) this layer uses
     * @param inFeatures  K
     * @param outFeatures N over all ranks, divisible by tp
     */
    public ColumnParallelLinear(TpContext tc, GemmName.Layer layer, long inFeatures, long outFeatures, boolean bias) {
        checkArguments(tc.tp(), layer, inFeatures, outFeatures);
        checkFp8(tc.fp8(), tc.tp(), layer, inFeatures, outFeatures);
        this.tc = tc;
        this.layer = layer;
        this.in = inFeatures;
        this.outPerRank = outFeatures / tc.tp();
        long maxM = tc.maxTokens();
        DType t = tc.dtype();
        this.buffers = new Buffers(tc.cuda(), layer.teName());
        this.ops = new OpTable<>(tc.tp(), maxM);
        try {
            this.weight = new Parameter(layer.teName() + ".weight", buffers.matrix(outPerRank, in, t, "weight"),
                    buffers.matrix(outPerRank, in, DType.FP32, "weight.grad"));
            this.bias = bias ? new Parameter(layer.teName() + ".bias", buffers.matrix(1, outPerRank, t, "bias"),
                    buffers.matrix(1, outPerRank, DType.FP32, "bias.grad")) : null;
            this.out = buffers.matrix(maxM, outPerRank, t, "out");
            this.dx = buffers.matrix(maxM / tc.tp(), in, t, "dx");
            // X gathered through NCCL, when no bulk op's buffer holds it.
            this.gathered = gathersWithNccl() && !tc.fp8() ? buffers.matrix(maxM, in, t, "gathered") : null;
            this.biasWorkspace = bias ? buffers.matrix(LayerKernels.biasGradWorkspaceRowsUpTo(maxM), outPerRank,
                    DType.FP32, "bias.workspace") : null;
            this.fp8 = tc.fp8() ? new Fp8(tc, buffers, layer.teName(), maxM, in, outPerRank, gathersWithNccl())
                    : null;
        } catch (RuntimeException e) {
            buffers.close();
            throw e;
        }
    }

    /** What the constructor checks before any GPU work. */
    public static void checkArguments(int tp, GemmName.Layer layer, long inFeatures, long outFeatures) {
        if (!layer.columnParallel()) {
            throw new IllegalArgumentException(layer.teName() + " is row-parallel: a column-parallel layer is qkv"
                    + " or fc1");
        }
        if (inFeatures < 1 || outFeatures < 1) {
            throw new IllegalArgumentException("features must be positive, got in=" + inFeatures + " out="
                    + outFeatures);
        }
        if (outFeatures % tp != 0) {
            throw new IllegalArgumentException("outFeatures = " + outFeatures + " is not divisible by tp = " + tp
                    + ": every rank holds outFeatures/tp weight rows");
        }
    }

    /** With FP8, every GEMM dimension must be a multiple of 16: K and N/tp here. */
    public static void checkFp8(boolean fp8, int tp, GemmName.Layer layer, long inFeatures, long outFeatures) {
        TpContext.checkFp8Dimension(fp8, layer.teName(), "inFeatures (K)", inFeatures);
        TpContext.checkFp8Dimension(fp8, layer.teName(), "outFeatures / tp (this rank's N)", outFeatures / tp);
    }

    /** The FP8 slots and buffers of one column-parallel layer. */
    private static final class Fp8 {
        final Fp8DeviceScales scales;
        final Fp8ScaleTable.Slot input;
        final Fp8ScaleTable.Slot weight;
        final Fp8ScaleTable.Slot grad;
        final TensorView xq;        // [M/tp, K]
        final TensorView wq;        // [N/tp, K]
        final TensorView wqT;       // [K, N/tp]
        final TensorView dyq;       // [M, N/tp]
        final TensorView dyqT;      // [N/tp, M] (a call of m tokens uses it as [N/tp, m])
        final TensorView gathered;  // [M, K]: x_q gathered by NCCL, when no bulk op's buffer holds it
        final TensorView xFullT;    // [K, M]
        final TensorView scratch;   // fp32 [M, K]: the transpose's dequantized copy

        Fp8(TpContext tc, Buffers b, String name, long maxM, long in, long out, boolean gathersWithNccl) {
            scales = tc.fp8Scales();
            name = scales.table().layerName(name);
            input = scales.register(name, Fp8Role.INPUT, true);
            weight = scales.register(name, Fp8Role.WEIGHT, false);
            grad = scales.register(name, Fp8Role.GRAD_OUTPUT, false);
            DType f = input.format().dtype();
            DType g = grad.format().dtype();
            xq = b.matrix(maxM / tc.tp(), in, f, "x.fp8");
            wq = b.matrix(out, in, weight.format().dtype(), "weight.fp8");
            wqT = b.matrix(in, out, weight.format().dtype(), "weight.fp8.T");
            dyq = b.matrix(maxM, out, g, "dy.fp8");
            dyqT = b.matrix(out, maxM, g, "dy.fp8.T");
            gathered = gathersWithNccl ? b.matrix(maxM, in, f, "gathered.fp8") : null;
            xFullT = b.matrix(in, maxM, f, "gathered.fp8.T");
            scratch = b.matrix(maxM, in, DType.FP32, "fp8.transpose.scratch");
        }

        Fp8Operands forward() {
            return new Fp8Operands(input.format().dtype(), weight.format().dtype());
        }

        Fp8Operands dgrad() {
            return new Fp8Operands(grad.format().dtype(), weight.format().dtype());
        }
    }

    /** A dense [rows, cols] view at the start of {@code full}'s memory (a call's part of a [R, maxCols] buffer). */
    static TensorView dense(TensorView full, long rows, long cols) {
        return new TensorView(full.memory(), full.byteOffset(), rows, cols, cols, full.dtype());
    }

    private GemmName gemm(GemmName.Pass pass) {
        return GemmName.of(layer, pass);
    }

    private boolean rsDgrad() {
        return tc.config().effective(UbFlag.UB_OVERLAP_RS_DGRAD);
    }

    private boolean gathersWithNccl() {
        return rsDgrad() || !tc.choice(gemm(GemmName.Pass.DGRAD)).bulk();
    }

    /** Output columns on this rank (N/tp). */
    public long outPerRank() {
        return outPerRank;
    }

    public long inFeatures() {
        return in;
    }

    public Parameter weight() {
        return weight;
    }

    /** The bias, or null when made without one. */
    public Parameter bias() {
        return bias;
    }

    @Override
    public List<Parameter> parameters() {
        List<Parameter> p = new ArrayList<>(List.of(weight));
        if (bias != null) {
            p.add(bias);
        }
        return p;
    }

    /** The ops made so far, by (GEMM, tokens). */
    public List<OpTable.Key> opKeys() {
        return ops.keys();
    }

    /**
     * Makes the ops of the maximum token count now (collective), so the first call does not: TE's
     * {@code initialize_ub}.
     */
    @Override
    public void prepare() {
        long m = tc.maxTokens();
        fpropOp(m);
        dgradOps(m);
    }

    @Override
    public Shape inputShape(long tokens) {
        return new Shape(tokens / tc.tp(), in);
    }

    @Override
    public Shape outputShape(long tokens) {
        return new Shape(tokens, outPerRank);
    }

    private OverlapOp fpropOp(long m) {
        GemmName g = gemm(GemmName.Pass.FPROP);
        return ops.get(g, m, () -> tc.makeOp(g, fp8 == null ? new AgShape(tc.tp(), m, in, outPerRank, tc.dtype())
                : new AgShape(tc.tp(), m, in, outPerRank, tc.dtype()).withFp8(fp8.forward())));
    }

    /** [dgrad-side op or null, wgrad-side op or null] for m tokens, as the configuration says. */
    private OverlapOp[] dgradOps(long m) {
        GemmName dg = gemm(GemmName.Pass.DGRAD);
        GemmName wg = gemm(GemmName.Pass.WGRAD);
        RsShape plain = new RsShape(tc.tp(), m, outPerRank, in, tc.dtype(), false);
        // With FP8 an op that runs the dgrad GEMM multiplies FP8 dY and W^T; the bulk reduce-scatter only moves
        // the layer's own (bf16/fp32) partial sums, so its shape stays plain.
        RsShape rs = fp8 == null ? plain : plain.withFp8(fp8.dgrad());
        if (rsDgrad()) {
            return new OverlapOp[]{ops.get(dg, m, () -> tc.makeOp(dg, rs)), null};
        }
        AgShape gather = new AgShape(tc.tp(), m, in, outPerRank, tc.dtype());
        OverlapOp ag = tc.choice(dg).bulk()
                ? ops.get(dg, m, () -> tc.makeOp(dg, fp8 == null ? gather : gather.withFp8(fp8.forward()))) : null;
        // Not bulk: the NCCL reference (dgrad GEMM, then NCCL reduce-scatter) under the wgrad's name.
        OverlapOp rsOp = ops.get(wg, m, () -> tc.makeOp(wg, tc.choice(wg).bulk() ? plain : rs));
        return new OverlapOp[]{ag, rsOp};
    }

    /** Y[tokens, N/tp] = AG(x) W^T (+ b); x is this rank's [tokens/tp, K]. */
    @Override
    public TensorView forward(TensorView x, CudaStream s) {
        long m = x.rows() * tc.tp();
        OpTable.checkTokens(m, tc.maxTokens(), tc.tp());
        x.requireShape(m / tc.tp(), in, layer.teName() + " input");
        x.requireDType(tc.dtype(), layer.teName() + " input");
        if (!x.isContiguous()) {
            throw new IllegalArgumentException(layer.teName() + " input must be contiguous (it is all-gathered),"
                    + " got " + x);
        }
        if (fp8 != null && m % TpContext.FP8_ALIGNMENT != 0) {
            throw new IllegalArgumentException(layer.teName() + ": tokens = " + m + " must be a multiple of "
                    + TpContext.FP8_ALIGNMENT + " with fp8 (the wgrad GEMM multiplies over the tokens)");
        }
        tc.cuda();
        TensorView y = out.rows(0, m);
        if (fp8 != null) {
            TensorView xq = fp8.xq.rows(0, m / tc.tp());
            fp8.scales.quantize(fp8.input, x, xq, null, s);
            fp8.scales.quantize(fp8.weight, weight.value(), fp8.wq, fp8.wqT, s);
            tc.call(gemm(GemmName.Pass.FPROP), fpropOp(m), new OperandBindings(xq, fp8.wq, true, y, null)
                    .withScales(fp8.scales.dequant(fp8.input, fp8.weight)), s);
        } else {
            tc.call(gemm(GemmName.Pass.FPROP), fpropOp(m), new OperandBindings(x, weight.value(), true, y, null), s);
        }
        if (bias != null) {
            try (Tracer.Scope t = tc.span(layer.teName() + " bias", SpanKind.KERNEL, s)) {
                tc.kernels().addBias(y, bias.value(), s);
            }
        }
        savedInput = x;
        savedTokens = m;
        return y;
    }

    /** dX[tokens/tp, K] for dy[tokens, N/tp]; adds dW and db into the gradients. */
    @Override
    public TensorView backward(TensorView dy, CudaStream s) {
        if (savedInput == null) {
            throw new IllegalStateException(layer.teName() + ": backward before forward");
        }
        long m = savedTokens;
        dy.requireShape(m, outPerRank, layer.teName() + " output gradient");
        dy.requireDType(tc.dtype(), layer.teName() + " output gradient");
        tc.cuda();
        if (fp8 != null) {
            return backwardFp8(dy, s);
        }
        TensorView x = savedInput;
        TensorView dxm = dx.rows(0, m / tc.tp());
        OverlapOp[] o = dgradOps(m);
        GemmName dg = gemm(GemmName.Pass.DGRAD);
        GemmName wg = gemm(GemmName.Pass.WGRAD);
        boolean bulkRs = !rsDgrad() && tc.choice(wg).bulk();
        // 1. X gathered for the wgrad, beside the dgrad where the configuration overlaps it.
        TensorView xFull;
        boolean sideBusy = false;
        if (o[0] != null && !rsDgrad()) {
            tc.call(dg, o[0], new OperandBindings(x, null, false, null, null), tc.fork(s));
            xFull = o[0].userBuffer();
            sideBusy = true;
        } else {
            xFull = gathered.rows(0, m);
            boolean beside = rsDgrad() && tc.choice(dg).overlapped();
            CudaStream g = beside ? tc.fork(s) : s;
            tc.allGather(x, xFull, g);
            sideBusy = beside;
        }
        // 2. dgrad: dX = RS(dy W).
        if (rsDgrad()) {
            tc.call(dg, o[0], new OperandBindings(dy, weight.value(), false, dxm, null), s);
        } else if (bulkRs) {
            tc.multiply(dg, dy, weight.value(), o[1].userBuffer(), 0f,
                    tc.options(false, false, tc.choice(dg).gemmSmMargin()), s);
        } else {
            tc.call(wg, o[1], new OperandBindings(dy, weight.value(), false, dxm, null), s);
        }
        if (sideBusy) {
            tc.join(s);
        }
        // 3. wgrad, beside the bulk reduce-scatter of the dgrad's result.
        if (bulkRs) {
            tc.call(wg, o[1], new OperandBindings(null, null, false, dxm, null), tc.fork(s));
        }
        tc.multiply(wg, dy, xFull, weight.grad(), 1f,
                tc.options(true, false, bulkRs ? tc.choice(wg).gemmSmMargin() : 0), s);
        return finishWeightGradients(dy, dxm, bulkRs, s);
    }

    /**
     * What both backward paths end with: the bias gradient (accumulated, from dy), then, where a bulk reduce-scatter
     * of dX ran beside wgrad, the join of its streams; returns dX.
     */
    private TensorView finishWeightGradients(TensorView dy, TensorView dxm, boolean bulkRs, CudaStream s) {
        if (bias != null) {
            try (Tracer.Scope t = tc.span(layer.teName() + " bias grad", SpanKind.KERNEL, s)) {
                tc.layerKernels().biasGrad(dy, bias.grad(), true, biasWorkspace, s);
            }
        }
        if (bulkRs) {
            tc.join(s);
        }
        return dxm;
    }

    /** {@link #backward} in FP8 (see the class comment): the same ops and streams, FP8 operands. */
    private TensorView backwardFp8(TensorView dy, CudaStream s) {
        long m = savedTokens;
        TensorView dxm = dx.rows(0, m / tc.tp());
        OverlapOp[] o = dgradOps(m);
        GemmName dg = gemm(GemmName.Pass.DGRAD);
        GemmName wg = gemm(GemmName.Pass.WGRAD);
        boolean bulkRs = !rsDgrad() && tc.choice(wg).bulk();
        Fp8DeviceScales sc = fp8.scales;
        TensorView xq = fp8.xq.rows(0, m / tc.tp());
        TensorView dyq = fp8.dyq.rows(0, m);
        TensorView dyqT = dense(fp8.dyqT, outPerRank, m);
        sc.quantize(fp8.grad, dy, dyq, dyqT, s);
        DequantScales dgradScales = sc.dequant(fp8.grad, fp8.weight);
        // 1. x_q gathered for the wgrad, beside the dgrad where the configuration overlaps it.
        TensorView xFull;
        boolean sideBusy;
        if (o[0] != null && !rsDgrad()) {
            tc.call(dg, o[0], new OperandBindings(xq, null, false, null, null), tc.fork(s));
            xFull = o[0].userBuffer();
            sideBusy = true;
        } else {
            xFull = fp8.gathered.rows(0, m);
            boolean beside = rsDgrad() && tc.choice(dg).overlapped();
            tc.allGatherFp8(xq, xFull, beside ? tc.fork(s) : s);
            sideBusy = beside;
        }
        // 2. dgrad: dX = RS(dY_q W_q), W_q^T stored [K, N/tp] as cuBLASLt's FP8 layout wants.
        if (rsDgrad()) {
            tc.call(dg, o[0], new OperandBindings(dyq, fp8.wqT, true, dxm, null).withScales(dgradScales), s);
        } else if (bulkRs) {
            tc.multiplyFp8(dg, dyq, fp8.wqT, o[1].userBuffer(), 0f, tc.choice(dg).gemmSmMargin(),
                    sc.scaleInverse(fp8.grad), sc.scaleInverse(fp8.weight), s);
        } else {
            tc.call(wg, o[1], new OperandBindings(dyq, fp8.wqT, true, dxm, null).withScales(dgradScales), s);
        }
        if (sideBusy) {
            tc.join(s);
        }
        // 3. wgrad, beside the bulk reduce-scatter of the dgrad's result: dW += dY_q^T x_full.
        if (bulkRs) {
            tc.call(wg, o[1], new OperandBindings(null, null, false, dxm, null), tc.fork(s));
        }
        TensorView xFullT = dense(fp8.xFullT, in, m);
        sc.transpose(fp8.input, xFull, fp8.scratch.rows(0, m), xFullT, s);
        tc.multiplyFp8(wg, dyqT, xFullT, weight.grad(), 1f, bulkRs ? tc.choice(wg).gemmSmMargin() : 0,
                sc.scaleInverse(fp8.grad), sc.scaleInverse(fp8.input), s);
        return finishWeightGradients(dy, dxm, bulkRs, s);
    }

    @Override
    public void initialize(long seed, CudaStream s) {
        tc.cuda();
        long shard = TpLayer.shardSeed(seed, tc.rank());
        tc.kernels().fillRandom(weight.value(), shard, (float) (1 / Math.sqrt(in)), s);
        if (bias != null) {
            tc.kernels().fillRandom(bias.value(), shard + 1, 0.1f, s);
        }
    }

    @Override
    public void poisonBuffers(CudaStream s) {
        tc.cuda();
        tc.kernels().poison(out, s);
        tc.kernels().poison(dx, s);
        if (gathered != null) {
            tc.kernels().poison(gathered, s);
        }
    }

    @Override
    public void zeroGrad(CudaStream s) {
        tc.cuda();
        for (Parameter p : parameters()) {
            tc.kernels().fillBits(p.grad(), 0, s);
        }
    }

    /** Collective (the ops): every rank closes its layers in the same order, after its streams drained. */
    @Override
    public void close() {
        tc.cuda();
        try {
            ops.close();
        } finally {
            buffers.close();
        }
    }
}
