package dev.ubuf.layers.tp;

import dev.ubuf.ag.AgShape;
import dev.ubuf.cuda.CudaStream;
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
 * overlap; otherwise a bulk reduce-scatter of its result runs beside the wgrad GEMM ({@code ub_bulk_wgrad}); what is
 * not overlapped runs through NCCL on the caller's stream. Nothing is gathered in backward: the wgrad reads AG(X) in
 * the fprop op's user buffer, the layer's own, where the forward gathered it. It stays valid until this layer's next
 * forward (a peer writes it only after this rank's credit of that call), so the all-gather TE repeats beside the
 * dgrad under {@code ub_bulk_dgrad}, because its layers share one buffer per name, has nothing to do here.
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
 *           dW += dY_q^T (AG(x_q))^T                                         the gathered x_q (the fprop's user
 *                                                                            buffer), transposed
 * </pre>
 * cuBLASLt runs FP8 only as C = A[m, k] B[n, k]^T, so W and dY are quantized in both layouts at once, and the gathered
 * x_q is transposed for the wgrad ({@link Fp8DeviceScales#transpose}, exact). K, N/tp and the tokens must be
 * multiples of 16. The same forward and backward run either way: each tensor becomes an {@link Operand} through its
 * {@link Quantizer}, and the GEMMs pick FP8 from their operands.
 *
 * <p>The tensor the fprop all-gathers is written straight into this rank's chunk of the fprop op's user buffer by the
 * kernel that produces it, so no copy puts it there: with FP8 the quantization of x, and without FP8 the LayerNorm
 * of a {@link LayerNormLinear} ({@link #inputDestination}). A plain x given by the caller is copied in by the op.
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
    private final TensorView biasWorkspace;
    /** FP8 buffers (null without FP8): see the class comment. */
    private final Fp8 fp8;
    private final Quantizer inputQ;
    private final Quantizer weightQ;
    private final Quantizer gradQ;
    /** Whether the fprop's input is written into its user buffer before the call (see the class comment). */
    private final boolean fpropInputInUserBuffer;
    /**
     * Whether the kernel that consumes the output adds the bias and its backward sums the bias gradient (an MLP's
     * activation), so the forward leaves Y without the bias and the backward leaves the bias gradient alone.
     */
    private final boolean biasInConsumer;
    /** x (in the fprop op's user buffer when it was written there) and W as the last forward used them. */
    private Operand savedInput;
    private Operand savedWeight;
    private long savedTokens;

    /**
     * @param layer       QKV or FC1: whose GEMM names (and so whose configuration) this layer uses
     * @param inFeatures  K
     * @param outFeatures N over all ranks, divisible by tp
     */
    public ColumnParallelLinear(TpContext tc, GemmName.Layer layer, long inFeatures, long outFeatures, boolean bias) {
        this(tc, layer, inFeatures, outFeatures, bias, false, false);
    }

    /**
     * @param inputFromProducer whether the layer's input is written by a kernel of its owner into
     *                          {@link #inputDestination} (a {@link LayerNormLinear}'s LayerNorm)
     * @param biasInConsumer    whether its owner's kernel that reads the output adds the bias, and that kernel's
     *                          backward the bias gradient ({@link #biasGradWorkspace}): an MLP's activation
     */
    ColumnParallelLinear(TpContext tc, GemmName.Layer layer, long inFeatures, long outFeatures, boolean bias,
                         boolean inputFromProducer, boolean biasInConsumer) {
        checkArguments(tc.tp(), layer, inFeatures, outFeatures);
        checkFp8(tc.fp8(), tc.tp(), layer, inFeatures, outFeatures);
        this.tc = tc;
        this.layer = layer;
        this.in = inFeatures;
        this.outPerRank = outFeatures / tc.tp();
        long maxM = tc.maxTokens();
        DType t = tc.dtype();
        this.buffers = new Buffers(tc.makeCurrent(), layer.teName());
        this.ops = tc.opTable(maxM);
        try {
            this.weight = new Parameter(layer.teName() + ".weight", buffers.matrix(outPerRank, in, t, "weight"),
                    buffers.matrix(outPerRank, in, DType.FP32, "weight.grad"));
            this.bias = bias ? new Parameter(layer.teName() + ".bias", buffers.matrix(1, outPerRank, t, "bias"),
                    buffers.matrix(1, outPerRank, DType.FP32, "bias.grad")) : null;
            this.out = buffers.matrix(maxM, outPerRank, t, "out");
            this.dx = buffers.matrix(maxM / tc.tp(), in, t, "dx");
            this.biasWorkspace = bias ? buffers.matrix(LayerKernels.biasGradWorkspaceRowsUpTo(maxM), outPerRank,
                    DType.FP32, "bias.workspace") : null;
            this.fp8 = tc.fp8() ? new Fp8(tc, buffers, layer.teName(), maxM, in, outPerRank) : null;
            this.inputQ = fp8 == null ? Quantizer.NONE : fp8.input;
            this.weightQ = fp8 == null ? Quantizer.NONE : fp8.weight;
            this.gradQ = fp8 == null ? Quantizer.NONE : fp8.grad;
            this.fpropInputInUserBuffer = fp8 != null || inputFromProducer;
            this.biasInConsumer = bias && biasInConsumer;
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

    /** The FP8 quantizers and buffers of one column-parallel layer (x_q is written into the fprop's user buffer). */
    private static final class Fp8 {
        final Quantizer.Fp8 input;
        final Quantizer.Fp8 weight;
        final Quantizer.Fp8 grad;
        final TensorView wq;        // [N/tp, K]
        final TensorView wqT;       // [K, N/tp]
        final TensorView dyq;       // [M, N/tp]
        final TensorView dyqT;      // [N/tp, M] (a call of m tokens uses it as [N/tp, m])
        final TensorView xFullT;    // [K, M]

        Fp8(TpContext tc, Buffers b, String name, long maxM, long in, long out) {
            Fp8DeviceScales scales = tc.fp8Scales();
            name = scales.table().layerName(name);
            input = new Quantizer.Fp8(scales, scales.register(name, Fp8Role.INPUT, true));
            weight = new Quantizer.Fp8(scales, scales.register(name, Fp8Role.WEIGHT, false));
            grad = new Quantizer.Fp8(scales, scales.register(name, Fp8Role.GRAD_OUTPUT, false));
            DType f = input.fp8Type();
            DType g = grad.fp8Type();
            wq = b.matrix(out, in, weight.fp8Type(), "weight.fp8");
            wqT = b.matrix(in, out, weight.fp8Type(), "weight.fp8.T");
            dyq = b.matrix(maxM, out, g, "dy.fp8");
            dyqT = b.matrix(out, maxM, g, "dy.fp8.T");
            xFullT = b.matrix(in, maxM, f, "gathered.fp8.T");
        }

        Fp8Operands forward() {
            return new Fp8Operands(input.fp8Type(), weight.fp8Type());
        }

        Fp8Operands dgrad() {
            return new Fp8Operands(grad.fp8Type(), weight.fp8Type());
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

    /** The fp32 workspace of the bias gradient's partial sums (null without a bias): for a consumer that sums it. */
    TensorView biasGradWorkspace() {
        return biasWorkspace;
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
        backwardOp(m);
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
        AgShape plain = new AgShape(tc.tp(), m, in, outPerRank, tc.dtype());
        AgShape shape = fp8 == null ? plain : plain.withFp8(fp8.forward());
        return ops.get(g, m, () -> tc.makeOp(g, fpropInputInUserBuffer ? shape.withInputInUserBuffer() : shape));
    }

    /**
     * Where the producer of a forward input of {@code tokens} tokens writes it, so that no copy moves it into the
     * fprop's user buffer: this rank's chunk of that buffer when the layer was made for a producer and gathers its
     * input as it is; null with FP8 (the quantization of the input writes the chunk) or for a caller's input.
     */
    TensorView inputDestination(long tokens) {
        OpTable.checkTokens(tokens, tc.maxTokens(), tc.tp());
        return fpropInputInUserBuffer && fp8 == null ? fpropOp(tokens).inputChunk() : null;
    }

    /**
     * The backward's op for m tokens, the reduce-scatter of dX: with {@code ub_overlap_rs_dgrad} the dgrad GEMM's
     * overlap (under the dgrad's name); otherwise, under the wgrad's, the bulk reduce-scatter beside the wgrad or
     * the NCCL reference (the dgrad GEMM, then NCCL's reduce-scatter).
     */
    private OverlapOp backwardOp(long m) {
        GemmName dg = gemm(GemmName.Pass.DGRAD);
        GemmName wg = gemm(GemmName.Pass.WGRAD);
        RsShape plain = new RsShape(tc.tp(), m, outPerRank, in, tc.dtype(), false);
        // With FP8 an op that runs the dgrad GEMM multiplies FP8 dY and W^T; the bulk reduce-scatter only moves
        // the layer's own (bf16/fp32) partial sums, so its shape stays plain.
        RsShape rs = fp8 == null ? plain : plain.withFp8(fp8.dgrad());
        if (rsDgrad()) {
            return ops.get(dg, m, () -> tc.makeOp(dg, rs));
        }
        return ops.get(wg, m, () -> tc.makeOp(wg, tc.choice(wg).bulk() ? plain : rs));
    }

    /** Y[tokens, N/tp] = AG(x) W^T (+ b, unless the consumer adds it); x is this rank's [tokens/tp, K]. */
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
        tc.makeCurrent();
        TensorView y = out.rows(0, m);
        OverlapOp op = fpropOp(m);
        TensorView chunk = fpropInputInUserBuffer ? op.inputChunk() : null;
        if (fp8 == null && chunk != null && x.address() != chunk.address()) {
            throw new IllegalArgumentException(layer.teName() + " takes its input in its user buffer: write it at"
                    + " inputDestination(" + m + "), got " + x);
        }
        Operand xo = inputQ.quantize(x, chunk, null, s);
        Operand w = weightQ.quantize(weight.value(), fp8 == null ? null : fp8.wq, fp8 == null ? null : fp8.wqT, s);
        tc.call(gemm(GemmName.Pass.FPROP), op, Operand.bind(xo, fpropInputInUserBuffer, w, true, y, null), s);
        if (bias != null && !biasInConsumer) {
            try (Tracer.Scope t = tc.span(layer.teName() + " bias", SpanKind.KERNEL, s)) {
                tc.kernels().addBias(y, bias.value(), s);
            }
        }
        savedInput = xo;
        savedWeight = w;
        savedTokens = m;
        return y;
    }

    /** dX[tokens/tp, K] for dy[tokens, N/tp]; adds dW and (unless the consumer sums it) db into the gradients. */
    @Override
    public TensorView backward(TensorView dy, CudaStream s) {
        if (savedInput == null) {
            throw new IllegalStateException(layer.teName() + ": backward before forward");
        }
        long m = savedTokens;
        dy.requireShape(m, outPerRank, layer.teName() + " output gradient");
        dy.requireDType(tc.dtype(), layer.teName() + " output gradient");
        tc.makeCurrent();
        TensorView dxm = dx.rows(0, m / tc.tp());
        OverlapOp back = backwardOp(m);
        GemmName dg = gemm(GemmName.Pass.DGRAD);
        GemmName wg = gemm(GemmName.Pass.WGRAD);
        boolean bulkRs = !rsDgrad() && tc.choice(wg).bulk();
        // dY in both layouts with FP8: the dgrad reads it [m, N/tp], the wgrad [N/tp, m].
        Operand dyo = gradQ.quantize(dy, fp8 == null ? null : fp8.dyq.rows(0, m),
                fp8 == null ? null : dense(fp8.dyqT, outPerRank, m), s);
        // 1. dgrad: dX = RS(dY W) (with FP8, W_q^T stored [K, N/tp] as cuBLASLt's FP8 layout wants).
        if (rsDgrad()) {
            tc.call(dg, back, Operand.bind(dyo, false, savedWeight, false, dxm, null), s);
        } else if (bulkRs) {
            tc.multiply(dg, dyo, false, savedWeight, false, back.userBuffer(), 0f, 0, s);
        } else {
            // The op is configured under the wgrad (TE's ub_bulk_wgrad owns the dgrad's reduce-scatter), but its GEMM
            // is the dgrad: traced under that name, as the overlap step's dgrad GEMM is, so steps compare span by span.
            tc.call(dg, back, Operand.bind(dyo, false, savedWeight, false, dxm, null), s);
        }
        // 2. wgrad, beside the bulk reduce-scatter of the dgrad's result: dW += dY^T AG(X), AG(X) as the forward
        //    gathered it (see the class comment).
        if (bulkRs) {
            tc.call(wg, back, OperandBindings.outputOnly(dxm), tc.fork(s));
        }
        TensorView xFull = fpropOp(m).userBuffer();
        Operand xo = inputQ.withTransposed(inputQ.stored(xFull), fp8 == null ? null : dense(fp8.xFullT, in, m), s);
        tc.multiply(wg, dyo, true, xo, false, weight.grad(), 1f, bulkRs ? tc.choice(wg).gemmSmMargin() : 0, s);
        if (bias != null && !biasInConsumer) {
            try (Tracer.Scope t = tc.span(layer.teName() + " bias grad", SpanKind.KERNEL, s)) {
                tc.layerKernels().biasGrad(dy, bias.grad(), true, biasWorkspace, s);
            }
        }
        if (bulkRs) {
            tc.join(s);
        }
        return dxm;
    }

    @Override
    public void initialize(long seed, CudaStream s) {
        tc.makeCurrent();
        long shard = TpLayer.shardSeed(seed, tc.rank());
        tc.kernels().fillRandom(weight.value(), shard, (float) (1 / Math.sqrt(in)), s);
        if (bias != null) {
            tc.kernels().fillRandom(bias.value(), shard + 1, 0.1f, s);
        }
    }

    @Override
    public void poisonBuffers(CudaStream s) {
        tc.makeCurrent();
        tc.kernels().poison(out, s);
        tc.kernels().poison(dx, s);
    }

    @Override
    public void zeroGrad(CudaStream s) {
        tc.makeCurrent();
        for (Parameter p : parameters()) {
            tc.kernels().fillBits(p.grad(), 0, s);
        }
    }

    /** Collective (the ops): every rank closes its layers in the same order, after its streams drained. */
    @Override
    public void close() {
        tc.makeCurrent();
        try {
            ops.close();
        } finally {
            buffers.close();
        }
    }
}
