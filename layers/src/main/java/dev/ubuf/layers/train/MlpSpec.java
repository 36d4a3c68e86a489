package dev.ubuf.layers.train;

import dev.ubuf.layers.tp.Activation;
import dev.ubuf.layers.tp.LayerNormMLP;

import java.util.Objects;

/**
 * The model a {@link LayerStack} (GPUs) or a {@link SimulatedTraining} (host) trains: {@code layers} LayerNormMLP
 * blocks of {@code hidden} features and {@code ffn} MLP units, each with biases.
 */
public record MlpSpec(long hidden, long ffn, Activation activation, int layers) {
    public MlpSpec {
        Objects.requireNonNull(activation, "activation");
        if (hidden < 1 || ffn < 1) {
            throw new IllegalArgumentException("hidden and ffn must be positive, got hidden=" + hidden + " ffn=" + ffn);
        }
        if (layers < 1) {
            throw new IllegalArgumentException("a stack has at least one layer, got " + layers);
        }
    }

    /** What a stack of this spec over {@code tp} ranks checks before any GPU work. */
    public void checkFor(int tp, boolean fp8) {
        LayerNormMLP.checkArguments(tp, hidden, ffn, activation);
        LayerNormMLP.checkFp8(fp8, tp, hidden, ffn, activation);
    }

    /**
     * The seed of block {@code layer}'s parameters in a stack seeded {@code seed}: the same in every stack and every
     * replica, so stacks built from one seed start with the same weights.
     */
    public static long layerSeed(long seed, int layer) {
        return seed + 1000L * layer;
    }
}
