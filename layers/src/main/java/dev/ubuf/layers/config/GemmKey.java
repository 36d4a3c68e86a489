package dev.ubuf.layers.config;

import java.util.Optional;

/**
 * The keys of one GEMM's entry in the table, with Transformer Engine's names ({@code initialize_ub}'s
 * {@code ub_cfgs}; Megatron-LM and NeMo YAML files use the same).
 */
public enum GemmKey {
    METHOD("method", Kind.METHOD),
    /** TE accepts it as a user key; ubuf checks that it agrees with the GEMM's role. */
    IS_REDUCE_SCATTER("is_reduce_scatter", Kind.BOOLEAN),
    NUM_SM("num_sm", Kind.INTEGER),
    CGA_SIZE("cga_size", Kind.INTEGER),
    NUM_SPLITS("num_splits", Kind.INTEGER),
    SET_SM_MARGIN("set_sm_margin", Kind.BOOLEAN),
    AGGREGATE("aggregate", Kind.BOOLEAN),
    USE_CE("use_ce", Kind.BOOLEAN),
    ATOMIC_GEMM("atomic_gemm", Kind.BOOLEAN),
    FP8_BUF("fp8_buf", Kind.BOOLEAN),
    COMM_PRIORITY("comm_priority", Kind.INTEGER),
    GEMM_PRIORITY("gemm_priority", Kind.INTEGER),
    PIPELINE_RS_OVERLAP_FIRST_GEMM("pipeline_rs_overlap_first_gemm", Kind.BOOLEAN);

    /** The type of a key's value. */
    public enum Kind { METHOD, BOOLEAN, INTEGER }

    private final String teName;
    private final Kind kind;

    GemmKey(String teName, Kind kind) {
        this.teName = teName;
        this.kind = kind;
    }

    public String teName() {
        return teName;
    }

    public Kind kind() {
        return kind;
    }

    public static Optional<GemmKey> parse(String name) {
        for (GemmKey k : values()) {
            if (k.teName.equals(name)) {
                return Optional.of(k);
            }
        }
        return Optional.empty();
    }

    static String known() {
        StringBuilder s = new StringBuilder();
        for (GemmKey k : values()) {
            s.append(s.isEmpty() ? "" : ", ").append(k.teName);
        }
        return s.toString();
    }

    @Override
    public String toString() {
        return teName;
    }
}
