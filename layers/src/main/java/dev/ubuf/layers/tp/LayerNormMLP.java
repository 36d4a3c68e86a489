package dev.ubuf.layers.tp;

import dev.ubuf.cuda.CudaStream;
import dev.ubuf.layers.config.GemmName;
import dev.ubuf.tensor.TensorView;
import dev.ubuf.trace.SpanKind;
import dev.ubuf.trace.Tracer;

import java.util.ArrayList;
import java.util.List;

/**
 * TE's LayerNormMLP under sequence parallelism: LayerNorm on this rank's tokens/tp rows, fc1 (column-parallel,
 * all-gathering the normalized rows), GELU or SwiGLU on this rank's ffn/tp units, fc2 (row-parallel,
 * reduce-scattering the output back to tokens/tp rows). Input and output are [tokens/tp, hidden]. fc1 and fc2
 * overlap their communication as the context's configuration says for the fc1_* and fc2_* GEMMs.
 */
public final class LayerNormMLP implements TpLayer {
    private final TpContext tc;
    private final Activation activation;
    private final LayerNormLinear fc1;
    private final RowParallelLinear fc2;
    private final Buffers buffers;
    private final TensorView act;
    private TensorView pre;

    public LayerNormMLP(TpContext tc, long hidden, long ffn, Activation activation, boolean bias) {
        checkArguments(tc.tp(), hidden, ffn, activation);
        checkFp8(tc.fp8(), tc.tp(), hidden, ffn, activation);
        this.tc = tc;
        this.activation = activation;
        this.buffers = new Buffers(tc.makeCurrent(), "mlp");
        LayerNormLinear a = null;
        RowParallelLinear b = null;
        try {
            this.act = buffers.matrix(tc.maxTokens(), ffn / tc.tp(), tc.dtype(), "act");
            a = new LayerNormLinear(tc, GemmName.Layer.FC1, hidden, activation.fc1Outputs(ffn), bias, true);
            b = new RowParallelLinear(tc, GemmName.Layer.FC2, ffn, hidden, bias);
        } catch (RuntimeException e) {
            if (a != null) {
                a.close();
            }
            buffers.close();
            throw e;
        }
        this.fc1 = a;
        this.fc2 = b;
    }

    /** What the constructor checks before any GPU work. */
    public static void checkArguments(int tp, long hidden, long ffn, Activation activation) {
        if (activation == null) {
            throw new IllegalArgumentException("activation is required (GELU or SWIGLU)");
        }
        if (hidden < 1 || ffn < 1) {
            throw new IllegalArgumentException("hidden and ffn must be positive, got hidden=" + hidden + " ffn=" + ffn);
        }
        if (ffn % tp != 0) {
            throw new IllegalArgumentException("ffn = " + ffn + " is not divisible by tp = " + tp
                    + ": every rank holds ffn/tp units");
        }
    }

    /** With FP8: hidden, the fc1 outputs per rank and ffn/tp must be multiples of 16 (checked before GPU work). */
    public static void checkFp8(boolean fp8, int tp, long hidden, long ffn, Activation activation) {
        ColumnParallelLinear.checkFp8(fp8, tp, GemmName.Layer.FC1, hidden, activation.fc1Outputs(ffn));
        RowParallelLinear.checkFp8(fp8, tp, GemmName.Layer.FC2, ffn, hidden);
    }

    public LayerNormLinear fc1() {
        return fc1;
    }

    public RowParallelLinear fc2() {
        return fc2;
    }

    public Activation activation() {
        return activation;
    }

    /** Makes the ops of the maximum token count now (collective): TE's {@code initialize_ub}. */
    @Override
    public void prepare() {
        fc1.prepare();
        fc2.prepare();
    }

    @Override
    public Shape inputShape(long tokens) {
        return fc1.inputShape(tokens);
    }

    @Override
    public Shape outputShape(long tokens) {
        return fc2.outputShape(tokens);
    }

    @Override
    public void initialize(long seed, CudaStream s) {
        fc1.initialize(seed, s);
        fc2.initialize(seed + 2, s);
    }

    @Override
    public void poisonBuffers(CudaStream s) {
        fc1.poisonBuffers(s);
        fc2.poisonBuffers(s);
        tc.makeCurrent();
        tc.kernels().poison(act, s);
    }

    @Override
    public TensorView forward(TensorView x, CudaStream s) {
        TensorView h = fc1.forward(x, s);
        TensorView a = act.rows(0, h.rows());
        tc.makeCurrent();
        try (Tracer.Scope t = tc.span(activation.name().toLowerCase(java.util.Locale.ROOT), SpanKind.KERNEL,
                s)) {
            // fc1's bias is added here, on the fly, rather than by a pass of its own over h.
            Parameter b1 = fc1.linear().bias();
            if (activation == Activation.GELU) {
                if (b1 == null) {
                    tc.layerKernels().gelu(h, a, s);
                } else {
                    tc.layerKernels().biasGelu(h, b1.value(), a, null, s);
                }
            } else if (b1 == null) {
                tc.layerKernels().swiglu(h, a, s);
            } else {
                tc.layerKernels().biasSwiglu(h, b1.value(), a, s);
            }
        }
        pre = h;
        return fc2.forward(a, s);
    }

    @Override
    public TensorView backward(TensorView dy, CudaStream s) {
        if (pre == null) {
            throw new IllegalStateException("mlp: backward before forward");
        }
        TensorView da = fc2.backward(dy, s);
        tc.makeCurrent();
        // In place: fc1's output (the pre-activation) is not needed after this.
        try (Tracer.Scope t = tc.span(activation.name().toLowerCase(java.util.Locale.ROOT) + " backward",
                SpanKind.KERNEL, s)) {
            // With a bias: at fc1's output plus the bias, as the forward computed it, and fc1's bias gradient
            // from the same pass.
            Parameter b1 = fc1.linear().bias();
            if (b1 == null) {
                if (activation == Activation.GELU) {
                    tc.layerKernels().geluBackward(da, pre, pre, s);
                } else {
                    tc.layerKernels().swigluBackward(da, pre, pre, s);
                }
            } else {
                TensorView ws = fc1.linear().biasGradWorkspace();
                if (activation == Activation.GELU) {
                    tc.layerKernels().biasGeluBackward(da, pre, b1.value(), pre, b1.grad(), true, ws, s);
                } else {
                    tc.layerKernels().biasSwigluBackward(da, pre, b1.value(), pre, b1.grad(), true, ws, s);
                }
            }
        }
        return fc1.backward(pre, s);
    }

    @Override
    public List<Parameter> parameters() {
        List<Parameter> p = new ArrayList<>(fc1.parameters());
        p.addAll(fc2.parameters());
        return p;
    }

    @Override
    public void zeroGrad(CudaStream s) {
        fc1.zeroGrad(s);
        fc2.zeroGrad(s);
    }

    /** Collective: closes fc2's ops, then fc1's, on every rank in that order. */
    @Override
    public void close() {
        try {
            fc2.close();
        } finally {
            try {
                fc1.close();
            } finally {
                tc.makeCurrent();
                buffers.close();
            }
        }
    }
}
