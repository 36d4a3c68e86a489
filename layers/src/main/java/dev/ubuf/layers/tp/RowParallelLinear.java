package dev.ubuf.layers.tp;

import dev.ubuf.ag.AgShape;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.exec.OperandBindings;
import dev.ubuf.layers.config.GemmName;
import dev.ubuf.layers.kernels.LayerKernels;
import dev.ubuf.op.OverlapOp;
import dev.ubuf.rs.RsShape;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import dev.ubuf.trace.SpanKind;
import dev.ubuf.trace.StepTracer;

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
    private TensorView savedInput;

    /**
     * @param layer       PROJ or FC2
     * @param inFeatures  K over all ranks, divisible by tp
     * @param outFeatures N
     */
    public RowParallelLinear(TpContext tc, GemmName.Layer layer, long inFeatures, long outFeatures, boolean bias) {
        checkArguments(tc.tp(), layer, inFeatures, outFeatures);
        this.tc = tc;
        this.layer = layer;
        this.inPerRank = inFeatures / tc.tp();
        this.out = outFeatures;
        long maxM = tc.maxTokens();
        DType t = tc.dtype();
        this.buffers = new Buffers(tc.cuda(), layer.teName());
        this.ops = new OpTable<>(tc.tp(), maxM);
        try {
            this.weight = new Parameter(layer.teName() + ".weight", buffers.matrix(out, inPerRank, t, "weight"),
                    buffers.matrix(out, inPerRank, DType.FP32, "weight.grad"));
            this.bias = bias ? new Parameter(layer.teName() + ".bias", buffers.matrix(1, out, t, "bias"),
                    buffers.matrix(1, out, DType.FP32, "bias.grad")) : null;
            this.y = buffers.matrix(maxM / tc.tp(), out, t, "out");
            this.dx = buffers.matrix(maxM, inPerRank, t, "dx");
            this.biasWorkspace = bias ? buffers.matrix(LayerKernels.biasGradWorkspaceRowsUpTo(maxM), out,
                    DType.FP32, "bias.workspace") : null;
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
    public void prepare() {
        fpropOp(tc.maxTokens());
        dgradOp(tc.maxTokens());
    }

    private OverlapOp fpropOp(long m) {
        GemmName g = gemm(GemmName.Pass.FPROP);
        return ops.get(g, m, () -> tc.makeOp(g, new RsShape(tc.tp(), m, inPerRank, out, tc.dtype(), bias != null)));
    }

    private OverlapOp dgradOp(long m) {
        GemmName g = gemm(GemmName.Pass.DGRAD);
        return ops.get(g, m, () -> tc.makeOp(g, new AgShape(tc.tp(), m, out, inPerRank, tc.dtype())));
    }

    /** Y[tokens/tp, N] = RS(x W^T) + b; x is [tokens, K/tp]. */
    @Override
    public TensorView forward(TensorView x, CudaStream s) {
        long m = x.rows();
        OpTable.checkTokens(m, tc.maxTokens(), tc.tp());
        x.requireShape(m, inPerRank, layer.teName() + " input");
        x.requireDType(tc.dtype(), layer.teName() + " input");
        tc.cuda();
        TensorView ym = y.rows(0, m / tc.tp());
        tc.call(gemm(GemmName.Pass.FPROP), fpropOp(m), new OperandBindings(x, weight.value(), true, ym, bias == null ? null : bias.value()), s);
        savedInput = x;
        return ym;
    }

    /** dX[tokens, K/tp] for dy[tokens/tp, N]; adds dW and db into the gradients. */
    @Override
    public TensorView backward(TensorView dy, CudaStream s) {
        if (savedInput == null) {
            throw new IllegalStateException(layer.teName() + ": backward before forward");
        }
        long m = savedInput.rows();
        dy.requireShape(m / tc.tp(), out, layer.teName() + " output gradient");
        dy.requireDType(tc.dtype(), layer.teName() + " output gradient");
        if (!dy.isContiguous()) {
            throw new IllegalArgumentException(layer.teName() + " output gradient must be contiguous, got " + dy);
        }
        tc.cuda();
        TensorView dxm = dx.rows(0, m);
        OverlapOp op = dgradOp(m);
        tc.call(gemm(GemmName.Pass.DGRAD), op, new OperandBindings(dy, weight.value(), false, dxm, null), s);
        // The op's buffer holds the gathered dY until its next call.
        TensorView dyFull = op.userBuffer();
        tc.multiply(gemm(GemmName.Pass.WGRAD), dyFull, savedInput, weight.grad(), 1f, tc.options(true, false, 0), s);
        if (bias != null) {
            try (StepTracer.Scope t = tc.span(layer.teName() + " bias grad", SpanKind.KERNEL, s)) {
                tc.layerKernels().biasGrad(dyFull, bias.grad(), true, biasWorkspace, s);
            }
        }
        return dxm;
    }

    @Override
    public void initialize(long seed, CudaStream s) {
        tc.cuda();
        tc.kernels().fillRandom(weight.value(), TpLayer.shardSeed(seed, tc.rank()),
                (float) (1 / Math.sqrt(inPerRank * tc.tp())), s);
        if (bias != null) {
            tc.kernels().fillRandom(bias.value(), seed + 1, 0.1f, s); // the same on every rank
        }
    }

    @Override
    public void poisonBuffers(CudaStream s) {
        tc.cuda();
        tc.kernels().poison(y, s);
        tc.kernels().poison(dx, s);
    }

    @Override
    public void zeroGrad(CudaStream s) {
        tc.cuda();
        for (Parameter p : parameters()) {
            tc.kernels().fillBits(p.grad(), 0, s);
        }
    }

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
