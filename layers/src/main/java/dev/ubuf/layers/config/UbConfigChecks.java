package dev.ubuf.layers.config;

import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * The checks of a configuration's settings against each other and against what ubuf can run, each failure a
 * {@link UbConfigException} naming the key and where it was set. The builder runs them all, with the settings'
 * origins; a record built directly gets the checks between settings ({@link #run}), without positions.
 */
final class UbConfigChecks {
    private UbConfigChecks() {
    }

    /**
     * The fp8 keys: recipe keys without {@code fp8: true}, and delayed-scaling keys under current scaling, are
     * errors, since they would do nothing.
     */
    static void fp8Keys(Map<Fp8Key, Sourced> fp8Keys, Function<String, ConfigOrigin> origins) {
        Sourced on = fp8Keys.get(Fp8Key.FP8);
        boolean enabled = on != null && on.bool();
        Fp8Key.Recipe kind = TeDefaults.recipeKind(fp8Keys);
        for (Map.Entry<Fp8Key, Sourced> e : fp8Keys.entrySet()) {
            Fp8Key k = e.getKey();
            if (k == Fp8Key.FP8) {
                continue;
            }
            if (!enabled) {
                throw new UbConfigException(k.teName(), e.getValue().origin(), "has no effect: "
                        + Fp8Key.FP8 + " is " + (on == null ? "not set (false)" : "false (" + on.origin() + ")")
                        + "; set fp8: true to train in FP8, or remove the key");
            }
            if (k.delayedOnly() && kind == Fp8Key.Recipe.CURRENT) {
                throw new UbConfigException(k.teName(), e.getValue().origin(), "applies to delayed scaling only,"
                        + " but " + Fp8Key.FP8_RECIPE + " is current (" + origins.apply(Fp8Key.FP8_RECIPE.teName())
                        + "): current scaling takes each tensor's scale from its own amax, with no history or"
                        + " margin");
            }
        }
    }

    /** Checks of settings the resolved record does not keep. */
    static void checkAlone(GemmSettings s, boolean rsDgrad) {
        GemmName g = s.gemm();
        Optional<Sourced> method = s.get(GemmKey.METHOD);
        if (method.isPresent() && g.teDefaultMethod() == UbMethod.NONE) {
            throw new UbConfigException(s.path(GemmKey.METHOD), method.get().origin(), method.get().value()
                    + ": " + g + " has no communication of its own to overlap (it uses dY as all-gathered for "
                    + g.withPass(GemmName.Pass.DGRAD) + ")");
        }
        Optional<Sourced> rs = s.get(GemmKey.IS_REDUCE_SCATTER);
        if (rs.isPresent() && rs.get().bool() != g.teIsReduceScatter(rsDgrad)) {
            throw new UbConfigException(s.path(GemmKey.IS_REDUCE_SCATTER), rs.get().origin(), rs.get().value()
                    + " contradicts the GEMM: " + g + " " + (g.teIsReduceScatter(rsDgrad)
                    ? "carries a reduce-scatter" : "carries no reduce-scatter") + " (with "
                    + UbFlag.UB_OVERLAP_RS_DGRAD + " " + rsDgrad + "); TE derives it from the name, so leave it out");
        }
    }

    /** {@code atomic_gemm: true} runs the atomic method, which replaces a ring exchange or a pipeline only. */
    static void checkAtomicGemm(GemmName g, GemmSettings s, UbMethod stored) {
        var atomic = s.get(GemmKey.ATOMIC_GEMM);
        if (atomic.isPresent() && atomic.get().bool() && stored != UbMethod.RING_EXCHANGE
                && stored != UbMethod.PIPELINE) {
            throw new UbConfigException(g.teName() + "." + GemmKey.ATOMIC_GEMM.teName(), atomic.get().origin(),
                    "true applies to ring_exchange and pipeline GEMMs (it runs ubuf's \"atomic\" method on the"
                    + " sm_90a atomic GEMM), not to " + stored + (stored == UbMethod.AUTO ? " (the planner "
                    + "already measures the atomic method where the GPU can run it)" : ""));
        }
    }

    /** Checks between settings; shared by the builder (with origins) and the canonical constructor. */
    static void run(boolean rsDgrad, int tp, boolean fp8, Map<GemmName, GemmOverlapConfig> gemms,
                    Predicate<GemmName> declared, Function<String, ConfigOrigin> origins) {
        for (GemmName g : GemmName.values()) {
            GemmOverlapConfig c = gemms.get(g);
            checkMethod(g, c, rsDgrad, origins);
            checkAggregate(g, c, tp, origins);
            checkSplits(g, c, tp, origins);
            checkFp8Buf(g, c, rsDgrad, fp8, origins);
        }
        for (GemmName dgrad : new GemmName[] {GemmName.QKV_DGRAD, GemmName.FC1_DGRAD}) {
            GemmOverlapConfig c = gemms.get(dgrad);
            GemmName wgrad = dgrad.withPass(GemmName.Pass.WGRAD);
            if (c.isExplicit(GemmKey.METHOD) && c.method() != UbMethod.BULK && c.method() != UbMethod.AUTO
                    && declared.test(wgrad)) {
                throw new UbConfigException(wgrad.teName(), origins.apply(wgrad.teName()),
                        "cannot be configured while " + dgrad + ".method is " + c.method() + " ("
                        + origins.apply(dgrad + ".method") + "): the dgrad reduce-scatters dX itself, so "
                        + wgrad + " has no bulk overlap (TE rejects this too)");
            }
        }
    }

    private static void checkMethod(GemmName g, GemmOverlapConfig c, boolean rsDgrad,
                                    Function<String, ConfigOrigin> origins) {
        if (!c.isExplicit(GemmKey.METHOD)) {
            return; // TE's defaults fit every role
        }
        UbMethod m = c.method();
        String path = g + ".method";
        String problem = switch (g.role(rsDgrad)) {
            case ALL_GATHER -> switch (m) {
                case RING_EXCHANGE, AUTO -> null;
                case PIPELINE -> "pipeline overlaps a reduce-scatter, but " + g + " consumes an all-gather"
                        + " (TE rejects it too); use ring_exchange or auto";
                default -> bulkOnly(g) + "; use ring_exchange or auto";
            };
            case REDUCE_SCATTER -> switch (m) {
                case RING_EXCHANGE, PIPELINE, AUTO -> null;
                // TE runs a bulk dgrad entry as a pipelined reduce-scatter under ub_overlap_rs_dgrad.
                case BULK -> g.canReduceScatterDgrad() ? null
                        : bulkOnly(g) + "; use pipeline, ring_exchange or auto";
                default -> "unexpected method " + m;
            };
            case BULK_ALL_GATHER -> switch (m) {
                case BULK, AUTO -> null;
                default -> m + " makes " + g + " reduce-scatter dX, which needs " + UbFlag.UB_OVERLAP_RS_DGRAD
                        + ": true (it is false, " + origins.apply(UbFlag.UB_OVERLAP_RS_DGRAD.teName()) + "); with it"
                        + " off, " + g + " runs the bulk all-gather of " + UbFlag.UB_BULK_DGRAD + ", whose method"
                        + " is bulk (or auto)";
            };
            case BULK_REDUCE_SCATTER -> wgradBulkOnly(g, m);
            case NONE -> g.layer().columnParallel() ? wgradBulkOnly(g, m)
                    : g + " has no communication of its own to overlap (it uses dY as all-gathered for "
                    + g.withPass(GemmName.Pass.DGRAD) + ")";
        };
        if (problem != null) {
            throw new UbConfigException(path, origins.apply(path), m + ": " + problem);
        }
    }

    private static String bulkOnly(GemmName g) {
        return "bulk overlaps only the dgrad and wgrad of qkv and fc1, not " + g;
    }

    private static String wgradBulkOnly(GemmName g, UbMethod m) {
        return m == UbMethod.BULK || m == UbMethod.AUTO ? null
                : g + " overlaps the bulk reduce-scatter of dX from " + g.withPass(GemmName.Pass.DGRAD)
                + "; only bulk (or auto) applies";
    }

    private static void checkAggregate(GemmName g, GemmOverlapConfig c, int tp,
                                       Function<String, ConfigOrigin> origins) {
        if (!c.aggregate()) {
            return;
        }
        String path = g + ".aggregate";
        boolean ringAllGather = g.isAllGather()
                && (c.method() == UbMethod.RING_EXCHANGE || c.method() == UbMethod.AUTO);
        if (!ringAllGather) {
            throw new UbConfigException(path, origins.apply(path), "true applies only to ring_exchange"
                    + " all-gather overlaps (qkv/fc1 fprop, proj/fc2 dgrad), not to " + g + " with method "
                    + c.method());
        }
        if (tp > 1 && tp % 2 != 0) {
            throw new UbConfigException(path, origins.apply(path), "true needs an even tensor-parallel size"
                    + " (it swaps chunks between rank pairs), but " + UbConfig.TP_SIZE + " is " + tp + " ("
                    + origins.apply(UbConfig.TP_SIZE) + ")");
        }
    }

    /**
     * fp8_buf: true needs fp8 and an all-gather GEMM (ubuf's reduce-scatters keep their partial sums in bf16 or
     * fp32, never in FP8); false on an all-gather GEMM under fp8 is refused, as the FP8 all-gather overlaps move
     * the FP8 shard (TE, too, turns fp8_buf on for every all-gather GEMM whatever the file says).
     */
    private static void checkFp8Buf(GemmName g, GemmOverlapConfig c, boolean rsDgrad, boolean fp8,
                                    Function<String, ConfigOrigin> origins) {
        String path = g + "." + GemmKey.FP8_BUF;
        boolean allGather = GemmOverlapConfig.allGatherRole(g, rsDgrad);
        if (c.fp8Buf() && !fp8) {
            throw new UbConfigException(path, origins.apply(path), "true needs " + Fp8Key.FP8 + ": true (an FP8"
                    + " user buffer holds FP8 data), but fp8 is off (" + origins.apply(Fp8Key.FP8.teName()) + ")");
        }
        if (c.fp8Buf() && !allGather) {
            throw new UbConfigException(path, origins.apply(path), "true applies to all-gather GEMMs (qkv/fc1"
                    + " fprop, proj/fc2 dgrad, and qkv/fc1 dgrad's bulk all-gather), not to " + g + ", whose"
                    + " communication is a " + (g.role(rsDgrad) == GemmName.Role.NONE ? "none of its own"
                    : "reduce-scatter") + ": ubuf's reduce-scatters keep their partial sums in bf16 or fp32,"
                    + " never in FP8");
        }
        if (!c.fp8Buf() && fp8 && allGather && c.isExplicit(GemmKey.FP8_BUF)) {
            throw new UbConfigException(path, origins.apply(path), "false is not possible with " + Fp8Key.FP8
                    + ": true: ubuf's FP8 all-gather overlaps gather the FP8 shard (TE, too, turns fp8_buf on for"
                    + " every all-gather GEMM); remove the key");
        }
    }

    private static void checkSplits(GemmName g, GemmOverlapConfig c, int tp,
                                    Function<String, ConfigOrigin> origins) {
        if (c.isExplicit(GemmKey.NUM_SPLITS) && c.method() == UbMethod.RING_EXCHANGE && tp > 1
                && c.numSplits() != tp) {
            String path = g + ".num_splits";
            throw new UbConfigException(path, origins.apply(path), c.numSplits() + " contradicts ring_exchange,"
                    + " which always runs " + UbConfig.TP_SIZE + " = " + tp + " steps (" + origins.apply(UbConfig.TP_SIZE)
                    + "); TE ignores it there: remove it, or set it to " + tp);
        }
    }
}
