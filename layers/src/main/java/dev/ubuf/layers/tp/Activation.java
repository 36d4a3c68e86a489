package dev.ubuf.layers.tp;

/** The MLP's activation between fc1 and fc2. */
public enum Activation {
    /** GELU, tanh approximation: fc1 has ffn outputs. */
    GELU,
    /** silu(a) * b: fc1 has 2 x ffn outputs, each rank's slice holding its a columns, then its b columns. */
    SWIGLU;

    /** fc1's output features for an MLP of {@code ffn} hidden units. */
    public long fc1Outputs(long ffn) {
        return this == SWIGLU ? 2 * ffn : ffn;
    }
}
