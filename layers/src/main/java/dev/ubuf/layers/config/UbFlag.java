package dev.ubuf.layers.config;

import java.util.Optional;

/**
 * The boolean switches of Transformer Engine's {@code TransformerLayer}, with its defaults. A flag takes effect
 * only when {@link #UB_TP_COMM_OVERLAP} (the master switch) is on, as in TE, where each one is and-ed with it;
 * with the master switch on, the defaults overlap every GEMM TE overlaps, and each flag can turn its part off
 * (or, for {@link #UB_OVERLAP_RS_DGRAD}, on).
 */
public enum UbFlag {
    /** The master switch. */
    UB_TP_COMM_OVERLAP("ub_tp_comm_overlap", false, "tp_comm_overlap"),
    /** All-gather overlaps: qkv/fc1 fprop (the input X) and proj/fc2 dgrad (dY). */
    UB_OVERLAP_AG("ub_overlap_ag", true, "tp_comm_overlap_ag"),
    /** Reduce-scatter overlaps of proj/fc2 fprop. */
    UB_OVERLAP_RS("ub_overlap_rs", true, "tp_comm_overlap_rs"),
    /**
     * The qkv/fc1 dgrad reduce-scatters dX while it runs, replacing both bulk overlaps of those layers (the bulk
     * all-gather beside the dgrad and the bulk reduce-scatter beside the wgrad).
     */
    UB_OVERLAP_RS_DGRAD("ub_overlap_rs_dgrad", false, "tp_comm_overlap_rs_dgrad"),
    /** Bulk reduce-scatter of dX beside the qkv/fc1 wgrad. */
    UB_BULK_WGRAD("ub_bulk_wgrad", true, "tp_comm_bulk_wgrad"),
    /** Bulk all-gather of the qkv/fc1 input (needed by the wgrad) beside the dgrad. */
    UB_BULK_DGRAD("ub_bulk_dgrad", true, "tp_comm_bulk_dgrad");

    private final String teName;
    private final boolean teDefault;
    private final String megatronName;

    UbFlag(String teName, boolean teDefault, String megatronName) {
        this.teName = teName;
        this.teDefault = teDefault;
        this.megatronName = megatronName;
    }

    public String teName() {
        return teName;
    }

    /** The value TE's TransformerLayer gives the flag when the caller does not. */
    public boolean teDefault() {
        return teDefault;
    }

    /** Megatron-LM's name for the same switch (only used to suggest the TE name in errors). */
    public String megatronName() {
        return megatronName;
    }

    public static Optional<UbFlag> parse(String name) {
        for (UbFlag f : values()) {
            if (f.teName.equals(name)) {
                return Optional.of(f);
            }
        }
        return Optional.empty();
    }

    @Override
    public String toString() {
        return teName;
    }
}
