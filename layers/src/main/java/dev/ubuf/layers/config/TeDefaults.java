package dev.ubuf.layers.config;

import dev.ubuf.fp8.Fp8Recipe;

import java.util.EnumSet;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * Transformer Engine's defaults for what a configuration leaves out: each flag's ({@link UbFlag#teDefault()}), the
 * tensor-parallel size (1), every GEMM's settings ({@link GemmOverlapConfig#defaults}) and the FP8 recipe's
 * (HYBRID, delayed scaling with {@link Fp8Recipe.DelayedScaling#TE_DEFAULT}'s history, margin and amax algorithm).
 */
final class TeDefaults {
    /** {@code tensor_model_parallel_size} when not set. */
    static final int TP_SIZE = 1;

    private TeDefaults() {
    }

    /** The value of {@code flag}: as set, else TE's default. */
    static boolean flag(UbFlag flag, Sourced set) {
        return set == null ? flag.teDefault() : set.bool();
    }

    /**
     * The settings of {@code g}: what {@code s} (null when the GEMM has no entry) sets, TE's defaults for the rest.
     *
     * @throws UbConfigException for an atomic_gemm the resolved method cannot run
     */
    static GemmOverlapConfig gemm(GemmName g, GemmSettings s, int tp, boolean fp8, boolean rsDgrad) {
        if (s == null) {
            return GemmOverlapConfig.teDefault(g, tp, fp8, rsDgrad);
        }
        UbMethod method = s.get(GemmKey.METHOD).map(v -> (UbMethod) v.value()).orElse(g.teDefaultMethod());
        // TE moves a qkv/fc1 dgrad configured with a non-bulk method to that method's list, so it takes that
        // method's defaults; every other GEMM takes its default method's defaults, whatever is configured.
        UbMethod basis = g.canReduceScatterDgrad()
                && (method == UbMethod.RING_EXCHANGE || method == UbMethod.PIPELINE)
                ? method : g.teDefaultMethod();
        GemmOverlapConfig d = GemmOverlapConfig.defaults(g, g.teDefaultMethod(), basis, tp,
                GemmOverlapConfig.teFp8Buf(g, fp8, rsDgrad));
        EnumSet<GemmKey> explicit = EnumSet.noneOf(GemmKey.class);
        for (GemmKey k : GemmKey.values()) {
            if (s.has(k)) {
                explicit.add(k);
            }
        }
        // proj/fc2 wgrad have no method: a configured one is reported by the checks, not stored.
        UbMethod stored = g.teDefaultMethod() == UbMethod.NONE ? UbMethod.NONE : method;
        UbConfigChecks.checkAtomicGemm(g, s, stored);
        return new GemmOverlapConfig(g, stored,
                intOr(s, GemmKey.NUM_SM, d.numSm()),
                intOr(s, GemmKey.CGA_SIZE, d.cgaSize()),
                intOr(s, GemmKey.NUM_SPLITS, d.numSplits()),
                boolOr(s, GemmKey.SET_SM_MARGIN, d.setSmMargin()),
                boolOr(s, GemmKey.AGGREGATE, d.aggregate()),
                boolOr(s, GemmKey.USE_CE, d.useCe()),
                boolOr(s, GemmKey.ATOMIC_GEMM, d.atomicGemm()),
                boolOr(s, GemmKey.FP8_BUF, d.fp8Buf()),
                optionalInt(s, GemmKey.COMM_PRIORITY),
                optionalInt(s, GemmKey.GEMM_PRIORITY),
                boolOr(s, GemmKey.PIPELINE_RS_OVERLAP_FIRST_GEMM, d.pipelineRsOverlapFirstGemm()),
                explicit);
    }

    private static int intOr(GemmSettings s, GemmKey k, int fallback) {
        return s.get(k).map(Sourced::integer).orElse(fallback);
    }

    private static boolean boolOr(GemmSettings s, GemmKey k, boolean fallback) {
        return s.get(k).map(Sourced::bool).orElse(fallback);
    }

    private static OptionalInt optionalInt(GemmSettings s, GemmKey k) {
        return s.get(k).map(v -> OptionalInt.of(v.integer())).orElse(OptionalInt.empty());
    }

    /**
     * The recipe the fp8 keys describe, TE's defaults for the keys not set, or empty with FP8 off. The keys must
     * have been checked ({@link UbConfigChecks#fp8Keys}).
     */
    static Optional<Fp8Recipe> fp8Recipe(Map<Fp8Key, Sourced> fp8Keys) {
        Sourced on = fp8Keys.get(Fp8Key.FP8);
        if (on == null || !on.bool()) {
            return Optional.empty();
        }
        Fp8Key.Recipe kind = recipeKind(fp8Keys);
        Fp8Recipe.Formats formats = fp8Keys.containsKey(Fp8Key.FP8_FORMAT)
                ? (Fp8Recipe.Formats) fp8Keys.get(Fp8Key.FP8_FORMAT).value() : Fp8Recipe.Formats.HYBRID;
        if (kind == Fp8Key.Recipe.CURRENT) {
            return Optional.of(new Fp8Recipe.CurrentScaling(formats));
        }
        Fp8Recipe.DelayedScaling d = Fp8Recipe.DelayedScaling.TE_DEFAULT;
        int history = fp8Keys.containsKey(Fp8Key.FP8_AMAX_HISTORY_LEN)
                ? fp8Keys.get(Fp8Key.FP8_AMAX_HISTORY_LEN).integer() : d.historyLength();
        int margin = fp8Keys.containsKey(Fp8Key.FP8_MARGIN) ? fp8Keys.get(Fp8Key.FP8_MARGIN).integer() : d.margin();
        Fp8Recipe.AmaxCompute algo = fp8Keys.containsKey(Fp8Key.FP8_AMAX_COMPUTE_ALGO)
                ? (Fp8Recipe.AmaxCompute) fp8Keys.get(Fp8Key.FP8_AMAX_COMPUTE_ALGO).value() : d.amaxCompute();
        return Optional.of(new Fp8Recipe.DelayedScaling(formats, history, margin, algo));
    }

    /** {@code fp8_recipe} as set, else delayed scaling. */
    static Fp8Key.Recipe recipeKind(Map<Fp8Key, Sourced> fp8Keys) {
        return fp8Keys.containsKey(Fp8Key.FP8_RECIPE)
                ? (Fp8Key.Recipe) fp8Keys.get(Fp8Key.FP8_RECIPE).value() : Fp8Key.Recipe.DELAYED;
    }
}
