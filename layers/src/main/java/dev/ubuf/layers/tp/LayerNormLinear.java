package dev.ubuf.layers.tp;

import dev.ubuf.cuda.CudaStream;
import dev.ubuf.layers.config.GemmName;
import dev.ubuf.tensor.TensorView;

import java.util.ArrayList;
import java.util.List;

/**
 * LayerNorm on this rank's tokens/tp rows, then a {@link ColumnParallelLinear} (TE's LayerNormLinear, e.g. the qkv
 * projection): the normalized rows are what the fprop all-gathers and the wgrad's bulk all-gather gathers again. As
 * TE's does with ln_out, the LayerNorm writes them straight into this rank's chunk of the fprop's user buffer, so the
 * all-gather copies nothing of its own (with FP8 the LayerNorm writes its own buffer, and the quantization of its
 * output writes the chunk).
 */
public final class LayerNormLinear implements TpLayer {
    private final TpContext tc;
    private final Buffers buffers;
    private final SequenceParallelLayerNorm norm;
    private final ColumnParallelLinear linear;

    /** @param layer QKV or FC1; hidden = the linear's input features */
    public LayerNormLinear(TpContext tc, GemmName.Layer layer, long hidden, long outFeatures, boolean bias) {
        this(tc, layer, hidden, outFeatures, bias, false);
    }

    /** @param biasInConsumer see {@link ColumnParallelLinear}'s constructor */
    LayerNormLinear(TpContext tc, GemmName.Layer layer, long hidden, long outFeatures, boolean bias,
                    boolean biasInConsumer) {
        ColumnParallelLinear.checkArguments(tc.tp(), layer, hidden, outFeatures);
        ColumnParallelLinear.checkFp8(tc.fp8(), tc.tp(), layer, hidden, outFeatures);
        this.tc = tc;
        this.buffers = new Buffers(tc.makeCurrent(), layer.teName() + ".ln");
        try {
            this.norm = new SequenceParallelLayerNorm(tc, buffers, layer.teName() + ".ln", hidden);
        } catch (RuntimeException e) {
            buffers.close();
            throw e;
        }
        ColumnParallelLinear l;
        try {
            l = new ColumnParallelLinear(tc, layer, hidden, outFeatures, bias, true, biasInConsumer);
        } catch (RuntimeException e) {
            buffers.close();
            throw e;
        }
        this.linear = l;
    }

    public ColumnParallelLinear linear() {
        return linear;
    }

    /** Makes the ops of the maximum token count now (collective). */
    @Override
    public void prepare() {
        linear.prepare();
    }

    @Override
    public Shape inputShape(long tokens) {
        return linear.inputShape(tokens);
    }

    @Override
    public Shape outputShape(long tokens) {
        return linear.outputShape(tokens);
    }

    @Override
    public void initialize(long seed, CudaStream s) {
        tc.makeCurrent();
        norm.reset(s);
        linear.initialize(seed, s);
    }

    @Override
    public void poisonBuffers(CudaStream s) {
        tc.makeCurrent();
        norm.poisonBuffers(s);
        linear.poisonBuffers(s);
    }

    @Override
    public TensorView forward(TensorView x, CudaStream s) {
        long rows = norm.rows(x, "LayerNormLinear input");
        tc.makeCurrent();
        return linear.forward(norm.forward(x, linear.inputDestination(rows * tc.tp()), s), s);
    }

    @Override
    public TensorView backward(TensorView dy, CudaStream s) {
        TensorView dln = linear.backward(dy, s);
        return norm.backward(dln, s);
    }

    @Override
    public List<Parameter> parameters() {
        List<Parameter> p = new ArrayList<>(norm.parameters());
        p.addAll(linear.parameters());
        return p;
    }

    @Override
    public void zeroGrad(CudaStream s) {
        tc.makeCurrent();
        norm.zeroGrad(s);
        linear.zeroGrad(s);
    }

    @Override
    public void close() {
        try {
            linear.close();
        } finally {
            tc.makeCurrent();
            buffers.close();
        }
    }
}
