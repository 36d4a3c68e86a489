package dev.ubuf.layers.config;

import java.util.Optional;

/**
 * The GEMMs of a tensor-parallel transformer layer, named as Transformer Engine names them:
 * {@code qkv|proj|fc1|fc2} x {@code fprop|dgrad|wgrad}. qkv and fc1 are column-parallel (their input is
 * all-gathered), proj and fc2 row-parallel (their output is reduce-scattered), under sequence parallelism.
 */
public enum GemmName {
    QKV_FPROP(Layer.QKV, Pass.FPROP),
    QKV_DGRAD(Layer.QKV, Pass.DGRAD),
    QKV_WGRAD(Layer.QKV, Pass.WGRAD),
    PROJ_FPROP(Layer.PROJ, Pass.FPROP),
    PROJ_DGRAD(Layer.PROJ, Pass.DGRAD),
    PROJ_WGRAD(Layer.PROJ, Pass.WGRAD),
    FC1_FPROP(Layer.FC1, Pass.FPROP),
    FC1_DGRAD(Layer.FC1, Pass.DGRAD),
    FC1_WGRAD(Layer.FC1, Pass.WGRAD),
    FC2_FPROP(Layer.FC2, Pass.FPROP),
    FC2_DGRAD(Layer.FC2, Pass.DGRAD),
    FC2_WGRAD(Layer.FC2, Pass.WGRAD);

    /** A linear layer of the transformer block; its TE name is the {@code ub_name} of the TE module. */
    public enum Layer {
        QKV("qkv", true), PROJ("proj", false), FC1("fc1", true), FC2("fc2", false);

        private final String teName;
        private final boolean columnParallel;

        Layer(String teName, boolean columnParallel) {
            this.teName = teName;
            this.columnParallel = columnParallel;
        }

        public String teName() {
            return teName;
        }

        /** qkv and fc1 split their weight's output columns over the ranks; proj and fc2 its input rows. */
        public boolean columnParallel() {
            return columnParallel;
        }

        /** The layer whose TE name is {@code name} (exact, lower case). */
        public static Optional<Layer> parse(String name) {
            for (Layer l : values()) {
                if (l.teName.equals(name)) {
                    return Optional.of(l);
                }
            }
            return Optional.empty();
        }
    }

    /** Forward product, gradient of the input (dgrad) and gradient of the weight (wgrad). */
    public enum Pass {
        FPROP("fprop"), DGRAD("dgrad"), WGRAD("wgrad");

        private final String teName;

        Pass(String teName) {
            this.teName = teName;
        }

        public String teName() {
            return teName;
        }
    }

    /** The communication a GEMM carries under sequence parallelism. */
    public enum Role {
        /** Its input rows are all-gathered first (qkv/fc1 fprop: X; proj/fc2 dgrad: dY). */
        ALL_GATHER,
        /** Its output rows are reduce-scattered (proj/fc2 fprop; qkv/fc1 dgrad under ub_overlap_rs_dgrad). */
        REDUCE_SCATTER,
        /** An all-gather beside it that it does not consume (qkv/fc1 dgrad: the input the wgrad needs). */
        BULK_ALL_GATHER,
        /** A reduce-scatter beside it of data it does not produce (qkv/fc1 wgrad: dX from the dgrad). */
        BULK_REDUCE_SCATTER,
        /** No communication of its own. */
        NONE
    }

    private final Layer layer;
    private final Pass pass;
    private final String teName;

    GemmName(Layer layer, Pass pass) {
        this.layer = layer;
        this.pass = pass;
        this.teName = layer.teName() + "_" + pass.teName();
    }

    public Layer layer() {
        return layer;
    }

    public Pass pass() {
        return pass;
    }

    /** The configuration key: {@code qkv_fprop}, {@code fc2_dgrad}, ... */
    public String teName() {
        return teName;
    }

    /** The GEMM called {@code name} (exact, lower case), if any. */
    public static Optional<GemmName> parse(String name) {
        for (GemmName g : values()) {
            if (g.teName.equals(name)) {
                return Optional.of(g);
            }
        }
        return Optional.empty();
    }

    public static GemmName of(Layer layer, Pass pass) {
        return valueOf(layer.name() + "_" + pass.name());
    }

    /** Its role with {@code ub_overlap_rs_dgrad} off (TE's default). */
    public Role role() {
        return role(false);
    }

    /**
     * Its role. {@code ub_overlap_rs_dgrad} turns the qkv/fc1 dgrad into a reduce-scatter overlap (dX is
     * reduce-scattered while the dgrad runs), which leaves their wgrad with no communication of its own.
     */
    public Role role(boolean overlapRsDgrad) {
        return switch (pass) {
            case FPROP -> layer.columnParallel() ? Role.ALL_GATHER : Role.REDUCE_SCATTER;
            case DGRAD -> !layer.columnParallel() ? Role.ALL_GATHER
                    : overlapRsDgrad ? Role.REDUCE_SCATTER : Role.BULK_ALL_GATHER;
            case WGRAD -> !layer.columnParallel() || overlapRsDgrad ? Role.NONE : Role.BULK_REDUCE_SCATTER;
        };
    }

    /** qkv/fc1 fprop and proj/fc2 dgrad: GEMMs that consume an all-gather (TE's AG overlaps). */
    public boolean isAllGather() {
        return role() == Role.ALL_GATHER;
    }

    /** proj/fc2 fprop: GEMMs whose output is reduce-scattered (and qkv/fc1 dgrad under ub_overlap_rs_dgrad). */
    public boolean isReduceScatter() {
        return role() == Role.REDUCE_SCATTER;
    }

    /** qkv/fc1 dgrad and wgrad: the GEMMs TE overlaps in bulk by default. */
    public boolean isBulk() {
        return role() == Role.BULK_ALL_GATHER || role() == Role.BULK_REDUCE_SCATTER;
    }

    /** qkv_dgrad and fc1_dgrad: the GEMMs {@code ub_overlap_rs_dgrad} turns into reduce-scatter overlaps. */
    public boolean canReduceScatterDgrad() {
        return pass == Pass.DGRAD && layer.columnParallel();
    }

    /**
     * TE's {@code is_reduce_scatter} for this GEMM: true for proj/fc2 fprop and qkv/fc1 wgrad (whose bulk
     * reduce-scatters dX), and for qkv/fc1 dgrad when they carry the reduce-scatter instead.
     */
    public boolean teIsReduceScatter(boolean overlapRsDgrad) {
        Role r = role(overlapRsDgrad);
        return r == Role.REDUCE_SCATTER || r == Role.BULK_REDUCE_SCATTER;
    }

    /**
     * TE's default method ({@code initialize_ub}): ring_exchange for the all-gather GEMMs, pipeline for proj/fc2
     * fprop, bulk for qkv/fc1 dgrad and wgrad; {@link UbMethod#NONE} for proj/fc2 wgrad, which have no
     * communication of their own (recent TE's {@code external} method there serves MXFP8 only).
     */
    public UbMethod teDefaultMethod() {
        return switch (role()) {
            case ALL_GATHER -> UbMethod.RING_EXCHANGE;
            case REDUCE_SCATTER -> UbMethod.PIPELINE;
            case BULK_ALL_GATHER, BULK_REDUCE_SCATTER -> UbMethod.BULK;
            case NONE -> UbMethod.NONE;
        };
    }

    /** The same layer's GEMM of another pass. */
    public GemmName withPass(Pass other) {
        return of(layer, other);
    }

    @Override
    public String toString() {
        return teName;
    }
}
