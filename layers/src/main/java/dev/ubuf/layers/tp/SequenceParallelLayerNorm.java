package dev.ubuf.layers.tp;

import dev.ubuf.cuda.CudaStream;
import dev.ubuf.layers.kernels.LayerKernels;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import dev.ubuf.trace.SpanKind;
import dev.ubuf.trace.Tracer;

import java.util.List;

/**
 * LayerNorm over this rank's tokens/tp rows (sequence parallelism): gamma and beta are the same on every rank, so
 * their gradients sum over all tokens, which takes an all-reduce of each rank's partial sums (fp32, 2 x hidden).
 */
final class SequenceParallelLayerNorm {
    static final float EPS = 1e-5f;

    private final TpContext tc;
    private final String name;
    private final long hidden;
    private final Parameter gamma;
    private final Parameter beta;
    private final TensorView y;
    private final TensorView mean;
    private final TensorView rstd;
    private final TensorView dx;
    private final TensorView paramGrads;
    private final TensorView partial;
    private final TensorView workspace;
    private TensorView savedInput;

    SequenceParallelLayerNorm(TpContext tc, Buffers buffers, String name, long hidden) {
        this.tc = tc;
        this.name = name;
        this.hidden = hidden;
        long rows = tc.maxTokens() / tc.tp();
        DType t = tc.dtype();
        // gamma and beta grads side by side, so one all-reduce and one add serve both.
        this.paramGrads = buffers.matrix(2, hidden, DType.FP32, name + ".grads");
        this.gamma = new Parameter(name + ".gamma", buffers.matrix(1, hidden, t, "gamma"), paramGrads.rows(0, 1));
        this.beta = new Parameter(name + ".beta", buffers.matrix(1, hidden, t, "beta"), paramGrads.rows(1, 1));
        this.partial = buffers.matrix(2, hidden, DType.FP32, name + ".partial");
        this.y = buffers.matrix(rows, hidden, t, name + ".out");
        this.mean = buffers.matrix(1, rows, DType.FP32, name + ".mean");
        this.rstd = buffers.matrix(1, rows, DType.FP32, name + ".rstd");
        this.dx = buffers.matrix(rows, hidden, t, name + ".dx");
        this.workspace = buffers.matrix(LayerKernels.layerNormBackwardWorkspaceRowsUpTo(rows), hidden, DType.FP32,
                name + ".workspace");
    }

    List<Parameter> parameters() {
        return List.of(gamma, beta);
    }

    /** Rows of x this rank holds, checked: tokens/tp of at most maxTokens, hidden columns, the layer dtype. */
    long rows(TensorView x, String what) {
        OpTable.checkTokens(x.rows() * tc.tp(), tc.maxTokens(), tc.tp());
        x.requireShape(x.rows(), hidden, what);
        x.requireDType(tc.dtype(), what);
        return x.rows();
    }

    /**
     * The normalized rows of x, written into {@code into} (this rank's chunk of the next GEMM's user buffer, so the
     * all-gather copies nothing) or, when null, into the norm's own buffer.
     */
    TensorView forward(TensorView x, TensorView into, CudaStream s) {
        long r = rows(x, "LayerNorm input");
        TensorView out = into != null ? into : y.rows(0, r);
        out.requireShape(r, hidden, "LayerNorm output");
        try (Tracer.Scope t = tc.span(name + " forward", SpanKind.KERNEL, s)) {
            tc.layerKernels().layerNormForward(x, gamma.value(), beta.value(), EPS, false, out, mean.cols(0, r),
                    rstd.cols(0, r), s);
        }
        savedInput = x;
        return out;
    }

    TensorView backward(TensorView dy, CudaStream s) {
        long r = savedInput.rows();
        dy.requireShape(r, hidden, "LayerNorm output gradient");
        TensorView d = dx.rows(0, r);
        try (Tracer.Scope t = tc.span(name + " backward", SpanKind.KERNEL, s)) {
            tc.layerKernels().layerNormBackward(dy, savedInput, mean.cols(0, r), rstd.cols(0, r), gamma.value(),
                    false, d, partial.rows(0, 1), partial.rows(1, 1), false, workspace, s);
        }
        tc.reduceIntoGradients(name, partial, paramGrads, parameters(), s);
        return d;
    }

    void poisonBuffers(CudaStream s) {
        tc.kernels().poison(y, s);
        tc.kernels().poison(dx, s);
    }

    void zeroGrad(CudaStream s) {
        tc.kernels().fillBits(paramGrads, 0, s);
    }

    /** gamma = 1, beta = 0 (the identity of the normalized rows). */
    void reset(CudaStream s) {
        tc.kernels().fillBits(gamma.value(), tc.dtype().encode(1f), s);
        tc.kernels().fillBits(beta.value(), 0, s);
    }
}
