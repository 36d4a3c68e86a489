package dev.ubuf.layers.tp;

import dev.ubuf.cuda.CudaStream;
import dev.ubuf.tensor.TensorView;

import java.util.List;

/**
 * A tensor-parallel building block on one rank. Calls are issued on the caller's stream and return without waiting;
 * every rank makes the same calls in the same order (some of them are collective). A returned tensor belongs to the
 * layer and is valid until its next call of the same kind; an input must stay unchanged until the backward that
 * follows its forward.
 */
public interface TpLayer extends AutoCloseable {
    /** A matrix's rows and columns. */
    record Shape(long rows, long cols) {
        public Shape {
            if (rows < 1 || cols < 1) {
                throw new IllegalArgumentException("a shape is at least 1 x 1, got " + rows + " x " + cols);
            }
        }
    }

    /**
     * Makes the layer's ops for the context's maximum token count now (collective: every rank, same order), so no
     * call does: part of {@link TpContext#initialize}, TE's {@code initialize_ub}.
     */
    void prepare();

    /** This rank's input (rows, features) for a call of {@code tokens} tokens. */
    Shape inputShape(long tokens);

    /** This rank's output, and so its output gradient, for a call of {@code tokens} tokens. */
    Shape outputShape(long tokens);

    /** The layer's output for {@code x}, saving what the backward needs. */
    TensorView forward(TensorView x, CudaStream stream);

    /** The gradient of the last forward's input for {@code gradOutput}; adds the parameters' gradients. */
    TensorView backward(TensorView gradOutput, CudaStream stream);

    /** The trainable tensors of this rank, with their fp32 gradients. */
    List<Parameter> parameters();

    /** Sets every gradient to zero. */
    void zeroGrad(CudaStream stream);

    /**
     * Random parameters from {@code seed}: weights uniform in +-1/sqrt(fan-in), biases in +-0.1, LayerNorm gamma 1
     * and beta 0. Tensors every rank holds whole (a row-parallel bias, LayerNorm's gamma and beta) get the same
     * values on every rank; shards differ by rank.
     */
    void initialize(long seed, CudaStream stream);

    /**
     * Fills the layer's own outputs, input gradients and activations with NaN, so an element a later call fails to
     * write can never pass a check (for tests).
     */
    void poisonBuffers(CudaStream stream);

    /** A seed for this rank's shard of a tensor seeded {@code seed}. */
    static long shardSeed(long seed, int rank) {
        return seed * 0x9E3779B97F4A7C15L + rank + 1;
    }

    /** Collective when the layer made overlap ops: every rank closes its layers in the same order. */
    @Override
    void close();
}
