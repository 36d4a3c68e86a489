package dev.ubuf.layers.tp;

import dev.ubuf.ag.AgShape;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.fp8.Fp8Role;
import dev.ubuf.layers.config.GemmName;
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
 * A row-parallel linear layer under sequence parallelism (TE's proj or fc2): each rank holds all tokens of the
 * input's columns [r K/tp, (r+1) K/tp) and the weight's matching columns, stored [N, K/tp]; the output is
 * reduce-scattered over the tokens.
 *
 * <pre>
 * forward:  Y[M/tp, N] = RS(X[M, K/tp] W_r^T) + b             {layer}_fprop: GEMM overlapped with the RS
 * backward: dY_full[M, N] = AG(dY[M/tp, N])                   {layer}_dgrad: AG overlapped with the dgrad GEMM
 *           dX[M, K/tp] = dY_full W_r
 *           dW_r += dY_full^T X,  db += colsum(dY_full)       {layer}_wgrad: no communication of its own
 * </pre>
 *
 * The bias is the same on every rank and added once, after the reduction; its gradient sums dY over all tokens,
 * which the gathered dY_full holds on every rank, so no extra collective is needed. Buffers and ops follow the
 * context's maximum token count as in {@link ColumnParallelLinear}.
 *
 * <p>FP8 (the context's {@code fp8}): every GEMM runs in FP8 with the recipe's per-tensor scales (slots "input",
 * "weight", "grad_output"); the reduce-scatter's partial sums and Y keep the layer's dtype (never FP8).
 * <pre>
 * forward:  X_q and X_q^T = fp8(X) (E4M3), W_q and W_q^T = fp8(W), Y = RS(X_q W_q^T) + b
 * backward: dY_q = fp8(dY) (E5M2 with hybrid; amax the max over the ranks: the shards are gathered with one scale)
 *           dX = AG(dY_q) W_q                       the all-gather moves dY_q (fp8_buf); B = (W_q^T) stored [K/tp, N]
 *           dW += (AG(dY_q))^T X_q                  the gathered dY_q transposed (exact), X_q^T from the forward
 *           db += colsum(dY) over every rank         from the bf16/fp32 dY shard: fp32 column sums, summed over the
 *                                                    ranks by NCCL (not from the FP8 copy, which would round it)
 * </pre>
 * K/tp, N and the tokens must be multiples of 16. The same forward and backward run either way: each tensor becomes an
 * {@link Operand} through its {@link Quantizer}, and the GEMMs pick FP8 from their operands. dY_q is written straight
 * into this rank's chunk of the dgrad's user buffer by its quantization; a plain dY, which the caller made, is copied
 * in by the op (TE copies it too).
 */
public final class RowParallelLinear implements TpLayer {
    private final TpContext tc;
    private final GemmName.Layer layer;
    private final long inPerRank;
    private final long out;
    private final Buffers buffers;
    private final OpTable<OverlapOp> ops;
    private final Parameter weight;
    private final Parameter bias;
    private final TensorView y;
    private final TensorView dx;
    private final TensorView biasWorkspace;
    /** FP8 buffers (null without FP8): see the class comment. */
    private final Fp8 fp8;
    private final Quantizer inputQ;
    private final Quantizer weightQ;
    private final Quantizer gradQ;
    /** X (with its transposed copy under FP8) and W as the last forward used them. */
    private Operand savedInput;
    private Operand savedWeight;
    private long savedTokens;

    /**
     * @param layer       PROJ or FC2
     * @param inFeatures  K over all ranks, divisible by tp
     * @param outFeatures N
     */
    public RowParallelLinear(TpContext tc, GemmName.Layer layer, long inFeatures, long outFeatures, boolean bias) {
        checkArguments(tc.tp(), layer, inFeatures, outFeatures);
        checkFp8(tc.fp8(), tc.tp(), layer, inFeatures, outFeatures);
        this.tc = tc;
        this.layer = layer;
        this.inPerRank = inFeatures / tc.tp();
        this.out = outFeatures;
        long maxM = tc.maxTokens();
        DType t = tc.dtype();
        this.buffers = new Buffers(tc.makeCurrent(), layer.teName());
        this.ops = tc.opTable(maxM);
        try {
            this.weight = new Parameter(layer.teName() + ".weight", buffers.matrix(out, inPerRank, t, "weight"),
                    buffers.matrix(out, inPerRank, DType.FP32, "weight.grad"));
            this.bias = bias ? new Parameter(layer.teName() + ".bias", buffers.matrix(1, out, t, "bias"),
                    buffers.matrix(1, out, DType.FP32, "bias.grad")) : null;
            this.y = buffers.matrix(maxM / tc.tp(), out, t, "out");
            this.dx = buffers.matrix(maxM, inPerRank, t, "dx");
            this.biasWorkspace = bias ? buffers.matrix(LayerKernels.biasGradWorkspaceRowsUpTo(maxM), out,
                    DType.FP32, "bias.workspace") : null;
            this.fp8 = tc.fp8() ? new Fp8(tc, buffers, layer.teName(), maxM, inPerRank, out, bias) : null;
            this.inputQ = fp8 == null ? Quantizer.NONE : fp8.input;
            this.weightQ = fp8 == null ? Quantizer.NONE : fp8.weight;
            this.gradQ = fp8 == null ? Quantizer.NONE : fp8.grad;
        } catch (RuntimeException e) {
            buffers.close();
            throw e;
        }
    }

    /** What the constructor checks before any GPU work. */
    public static void checkArguments(int tp, GemmName.Layer layer, long inFeatures, long outFeatures) {
        if (layer.columnParallel()) {
            throw new IllegalArgumentException(layer.teName() + " is column-parallel: a row-parallel layer is proj"
                    + " or fc2");
        }
        if (inFeatures < 1 || outFeatures < 1) {
            throw new IllegalArgumentException("features must be positive, got in=" + inFeatures + " out="
                    + outFeatures);
        }
        if (inFeatures % tp != 0) {
            throw new IllegalArgumentException("inFeatures = " + inFeatures + " is not divisible by tp = " + tp
                    + ": every rank holds inFeatures/tp weight columns");
        }
    }

    /** With FP8, every GEMM dimension must be a multiple of 16: K/tp and N here. */
    public static void checkFp8(boolean fp8, int tp, GemmName.Layer layer, long inFeatures, long outFeatures) {
        TpContext.checkFp8Dimension(fp8, layer.teName(), "inFeatures / tp (this rank's K)", inFeatures / tp);
        TpContext.checkFp8Dimension(fp8, layer.teName(), "outFeatures (N)", outFeatures);
    }

    /** The FP8 quantizers and buffers of one row-parallel layer (dY_q is written into the dgrad's user buffer). */
    private static final class Fp8 {
        final Quantizer.Fp8 input;
        final Quantizer.Fp8 weight;
        final Quantizer.Fp8 grad;
        final TensorView xq;        // [M, K/tp]
        final TensorView xqT;       // [K/tp, M]
        final TensorView wq;        // [N, K/tp]
        final TensorView wqT;       // [K/tp, N]
        final TensorView dyFullT;   // [N, M]
        final TensorView biasPartial; // fp32 [1, N]: this rank's column sums of dY, before the sum over ranks

        Fp8(TpContext tc, Buffers b, String name, long maxM, long in, long out, boolean bias) {
            Fp8DeviceScales scales = tc.fp8Scales();
            name = scales.table().layerName(name);
            input = new Quantizer.Fp8(scales, scales.register(name, Fp8Role.INPUT, false));
            weight = new Quantizer.Fp8(scales, scales.register(name, Fp8Role.WEIGHT, false));
            grad = new Quantizer.Fp8(scales, scales.register(name, Fp8Role.GRAD_OUTPUT, true));
            DType f = input.fp8Type();
            DType w = weight.fp8Type();
            DType g = grad.fp8Type();
            xq = b.matrix(maxM, in, f, "x.fp8");
            xqT = b.matrix(in, maxM, f, "x.fp8.T");
            wq = b.matrix(out, in, w, "weight.fp8");
            wqT = b.matrix(in, out, w, "weight.fp8.T");
            dyFullT = b.matrix(out, maxM, g, "dy.gathered.fp8.T");
            biasPartial = bias ? b.matrix(1, out, DType.FP32, "bias.grad.partial") : null;
        }
    }

    private GemmName gemm(GemmName.Pass pass) {
        return GemmName.of(layer, pass);
    }

    /** Input columns on this rank (K/tp). */
    public long inPerRank() {
        return inPerRank;
    }

    public long outFeatures() {
        return out;
    }

    public Parameter weight() {
        return weight;
    }

    /** The bias (the same on every rank), or null when made without one. */
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

    public List<OpTable.Key> opKeys() {
        return ops.keys();
    }

    /** Makes the ops of the maximum token count now (collective). */
    @Override
    public void prepare() {
        fpropOp(tc.maxTokens());
        dgradOp(tc.maxTokens());
    }

    @Override
    public Shape inputShape(long tokens) {
        return new Shape(tokens, inPerRank);
    }

    @Override
    public Shape outputShape(long tokens) {
        return new Shape(tokens / tc.tp(), out);
    }

    private OverlapOp fpropOp(long m) {
        GemmName g = gemm(GemmName.Pass.FPROP);
        RsShape shape = new RsShape(tc.tp(), m, inPerRank, out, tc.dtype(), bias != null);
        return ops.get(g, m, () -> tc.makeOp(g, fp8 == null ? shape : shape.withFp8(new Fp8Operands(
                fp8.input.fp8Type(), fp8.weight.fp8Type()))));
    }

    private OverlapOp dgradOp(long m) {
        GemmName g = gemm(GemmName.Pass.DGRAD);
        AgShape shape = new AgShape(tc.tp(), m, out, inPerRank, tc.dtype());
        return ops.get(g, m, () -> tc.makeOp(g, fp8 == null ? shape : shape.withFp8(new Fp8Operands(
                fp8.grad.fp8Type(), fp8.weight.fp8Type())).withInputInUserBuffer()));
    }

    /** Y[tokens/tp, N] = RS(x W^T) + b; x is [tokens, K/tp]. */
    @Override
    public TensorView forward(TensorView x, CudaStream s) {
        long m = x.rows();
        OpTable.checkTokens(m, tc.maxTokens(), tc.tp());
        x.requireShape(m, inPerRank, layer.teName() + " input");
        x.requireDType(tc.dtype(), layer.teName() + " input");
        if (fp8 != null && m % TpContext.FP8_ALIGNMENT != 0) {
            throw new IllegalArgumentException(layer.teName() + ": tokens = " + m + " must be a multiple of "
                    + TpContext.FP8_ALIGNMENT + " with fp8 (the wgrad GEMM multiplies over the tokens)");
        }
        tc.makeCurrent();
        TensorView ym = y.rows(0, m / tc.tp());
        TensorView b = bias == null ? null : bias.value();
        // With FP8 the wgrad reads X_q transposed: both layouts at once.
        Operand xo = inputQ.quantize(x, fp8 == null ? null : fp8.xq.rows(0, m),
                fp8 == null ? null : ColumnParallelLinear.dense(fp8.xqT, inPerRank, m), s);
        Operand w = weightQ.quantize(weight.value(), fp8 == null ? null : fp8.wq, fp8 == null ? null : fp8.wqT, s);
        tc.call(gemm(GemmName.Pass.FPROP), fpropOp(m), Operand.bind(xo, false, w, true, ym, b), s);
        savedInput = xo;
        savedWeight = w;
        savedTokens = m;
        return ym;
    }

    /** dX[tokens, K/tp] for dy[tokens/tp, N]; adds dW and db into the gradients. */
    @Override
    public TensorView backward(TensorView dy, CudaStream s) {
        if (savedInput == null) {
            throw new IllegalStateException(layer.teName() + ": backward before forward");
        }
        long m = savedTokens;
        dy.requireShape(m / tc.tp(), out, layer.teName() + " output gradient");
        dy.requireDType(tc.dtype(), layer.teName() + " output gradient");
        if (!dy.isContiguous()) {
            throw new IllegalArgumentException(layer.teName() + " output gradient must be contiguous, got " + dy);
        }
        tc.makeCurrent();
        TensorView dxm = dx.rows(0, m);
        OverlapOp op = dgradOp(m);
        // dY_q is quantized straight into this rank's chunk of the op's user buffer; a plain dY is the caller's
        // tensor (the next layer's backward or the loss made it), which the op copies in.
        boolean inUserBuffer = fp8 != null;
        Operand dyo = gradQ.quantize(dy, inUserBuffer ? op.inputChunk() : null, null, s);
        tc.call(gemm(GemmName.Pass.DGRAD), op, Operand.bind(dyo, inUserBuffer, savedWeight, false, dxm, null), s);
        // The op's buffer holds the gathered dY (dY_q) until its next call; with FP8 the wgrad reads it [N, tokens].
        Operand dyFull = gradQ.withTransposed(gradQ.stored(op.userBuffer()),
                fp8 == null ? null : ColumnParallelLinear.dense(fp8.dyFullT, out, m), s);
        tc.multiply(gemm(GemmName.Pass.WGRAD), dyFull, true, savedInput, false, weight.grad(), 1f, 0, s);
        if (bias != null) {
            try (Tracer.Scope t = tc.span(layer.teName() + " bias grad", SpanKind.KERNEL, s)) {
                if (fp8 == null) {
                    tc.layerKernels().biasGrad(dyFull.data(), bias.grad(), true, biasWorkspace, s);
                } else {
                    // From the wide dY shard, summed over the ranks: the gathered copy is FP8, which would round it.
                    tc.layerKernels().biasGrad(dy, fp8.biasPartial, false, biasWorkspace, s);
                }
            }
            if (fp8 != null) {
                tc.reduceIntoGradients(layer.teName() + " bias", fp8.biasPartial, bias.grad(), List.of(bias), s);
            }
        }
        return dxm;
    }

    @Override
    public void initialize(long seed, CudaStream s) {
        tc.makeCurrent();
        tc.kernels().fillRandom(weight.value(), TpLayer.shardSeed(seed, tc.rank()),
                (float) (1 / Math.sqrt(inPerRank * tc.tp())), s);
        if (bias != null) {
            tc.kernels().fillRandom(bias.value(), seed + 1, 0.1f, s); // the same on every rank
        }
    }

    @Override
    public void poisonBuffers(CudaStream s) {
        tc.makeCurrent();
        tc.kernels().poison(y, s);
        tc.kernels().poison(dx, s);
    }

    @Override
    public void zeroGrad(CudaStream s) {
        tc.makeCurrent();
        for (Parameter p : parameters()) {
            tc.kernels().fillBits(p.grad(), 0, s);
        }
    }

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
