package dev.ubuf.layers.train;

import dev.ubuf.cuda.CudaStream;
import dev.ubuf.layers.tp.LayerNormMLP;
import dev.ubuf.layers.tp.Parameter;
import dev.ubuf.layers.tp.TpContext;
import dev.ubuf.resource.Closer;
import dev.ubuf.tensor.TensorView;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * One rank's stack of LayerNormMLP blocks on one {@link TpContext}, which the stack owns: closed (collectively) last
 * block first, then the context. Not thread-safe: one rank's thread drives it.
 */
public final class LayerStack implements AutoCloseable {
    private final TpContext context;
    private final MlpSpec spec;
    private final List<LayerNormMLP> blocks;
    /** The context, then the blocks in order: closed last block first, the context last. */
    private final Closer closer;

    private LayerStack(TpContext context, MlpSpec spec, List<LayerNormMLP> blocks, Closer closer) {
        this.context = context;
        this.spec = spec;
        this.blocks = blocks;
        this.closer = closer;
    }

    /**
     * Makes the blocks of {@code spec} on {@code context} and takes the context over (closing it when the stack
     * closes, or now if a block cannot be made). Collective only through {@link #initialize}.
     */
    public static LayerStack create(TpContext context, MlpSpec spec) {
        Objects.requireNonNull(context, "context");
        Objects.requireNonNull(spec, "spec");
        List<LayerNormMLP> blocks = new ArrayList<>();
        Closer closer = new Closer("the layer stack");
        closer.register("context", context);
        try {
            spec.checkFor(context.tp(), context.fp8());
            for (int l = 0; l < spec.layers(); l++) {
                blocks.add(closer.register("block " + l,
                        new LayerNormMLP(context, spec.hidden(), spec.ffn(), spec.activation(), true)));
            }
        } catch (RuntimeException e) {
            throw closer.closeAfter(e);
        }
        return new LayerStack(context, spec, List.copyOf(blocks), closer);
    }

    /**
     * Initialise, then run (collective, once, before the first step, on the stream the steps will use): sets the
     * parameters from {@code seed} ({@link MlpSpec#layerSeed}: the same weights in every stack and replica made from
     * the same seed) and makes every op and tunes every GEMM ({@link TpContext#initialize}), whose check of the
     * planner's choices then multiplies these weights. With FP8 the parameters are set after, as the context's
     * initialisation on zeros expects.
     */
    public void initialize(long seed, CudaStream stream) {
        if (!context.fp8()) {
            setParameters(seed, stream);
        }
        context.initialize(blocks, stream);
        if (context.fp8()) {
            setParameters(seed, stream);
        }
    }

    private void setParameters(long seed, CudaStream stream) {
        for (int l = 0; l < blocks.size(); l++) {
            blocks.get(l).initialize(MlpSpec.layerSeed(seed, l), stream);
        }
    }

    public TpContext context() {
        return context;
    }

    public MlpSpec spec() {
        return spec;
    }

    public List<LayerNormMLP> blocks() {
        return blocks;
    }

    /** Every block's parameters, in order (the order every rank all-reduces and hashes them in). */
    public List<Parameter> parameters() {
        List<Parameter> all = new ArrayList<>();
        for (LayerNormMLP b : blocks) {
            all.addAll(b.parameters());
        }
        return all;
    }

    /** The stack's output for {@code x} ([tokens/tp, hidden]), saving what backward needs. */
    public TensorView forward(TensorView x, CudaStream stream) {
        TensorView h = x;
        for (LayerNormMLP b : blocks) {
            h = b.forward(h, stream);
        }
        return h;
    }

    /** The input gradient for {@code gradOutput}; adds every parameter's gradient. */
    public TensorView backward(TensorView gradOutput, CudaStream stream) {
        TensorView g = gradOutput;
        for (int l = blocks.size() - 1; l >= 0; l--) {
            g = blocks.get(l).backward(g, stream);
        }
        return g;
    }

    public void zeroGrad(CudaStream stream) {
        for (LayerNormMLP b : blocks) {
            b.zeroGrad(stream);
        }
    }

    /** Collective: every rank closes its blocks in the same order, then the context. */
    @Override
    public void close() {
        closer.close();
    }
}
