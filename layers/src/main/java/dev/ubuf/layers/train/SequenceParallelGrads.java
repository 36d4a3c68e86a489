package dev.ubuf.layers.train;

/**
 * When a {@link Trainer}'s step sums its sequence-parallel gradients over the TP group: the LayerNorms' gamma and
 * beta (each rank holds tokens/tp rows, so each has a partial sum) and, under FP8, a row-parallel layer's bias.
 */
public enum SequenceParallelGrads {
    /** Each layer's backward all-reduces its own where it computes them, on the step's stream. */
    IN_BACKWARD,
    /**
     * After the backward, all of them as one NCCL group on the side stream, beside the update of every other
     * parameter; their own parameters are updated after it (Megatron-LM reduces them after the backward too). The
     * default; {@code -Dubuf.spGradsBeside=false} gives {@link #IN_BACKWARD} to trainers made without a choice.
     */
    BESIDE_UPDATE;

    /** The default: {@link #BESIDE_UPDATE} unless the system property {@code ubuf.spGradsBeside} is "false". */
    static SequenceParallelGrads fromProperty() {
        return "false".equals(System.getProperty("ubuf.spGradsBeside")) ? IN_BACKWARD : BESIDE_UPDATE;
    }
}
