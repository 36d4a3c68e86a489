package dev.ubuf.layers.config;

import java.util.Optional;

/**
 * The {@code method} of a GEMM in a {@code ub_*} configuration: how its tensor-parallel communication runs, as a
 * configuration names it (the registered {@link dev.ubuf.op.OverlapMethod} that runs it is chosen from this). The
 * first three are Transformer Engine's {@code method} values;
 * {@link #AUTO} lets ubuf's planner choose; {@link #NONE} is what a resolved table reports for a GEMM that runs
 * unoverlapped (NCCL, or no communication at all) and is never a configured value.
 */
public enum UbMethod {
    /** Point-to-point ring: every step's chunk moves to the next rank while the GEMM works on the previous one. */
    RING_EXCHANGE("ring_exchange"),
    /** The GEMM in column splits; each split's reduce-scatter runs while the next split computes. */
    PIPELINE("pipeline"),
    /** A whole collective beside an independent GEMM (dgrad/wgrad of qkv and fc1). */
    BULK("bulk"),
    /** ubuf's planner chooses among the methods valid for the GEMM, the NCCL reference included. */
    AUTO("auto"),
    /** Not overlapped. */
    NONE("none");

    private final String configName;

    UbMethod(String configName) {
        this.configName = configName;
    }

    /** The value as written in a configuration ({@code ring_exchange}, ...). */
    public String configName() {
        return configName;
    }

    /** The methods a configuration may name, as a readable list. */
    static String configurable() {
        return "ring_exchange, pipeline, bulk or auto";
    }

    /** The configurable method called {@code name} (exact, lower case), if any. */
    static Optional<UbMethod> parse(String name) {
        for (UbMethod m : values()) {
            if (m != NONE && m.configName.equals(name)) {
                return Optional.of(m);
            }
        }
        return Optional.empty();
    }

    @Override
    public String toString() {
        return configName;
    }
}
