package dev.ubuf.layers.config;

import dev.ubuf.fp8.Fp8Recipe;

import java.io.IOException;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * The tensor-parallel overlap configuration, with Transformer Engine's names and semantics: the
 * {@code TransformerLayer} flags ({@link UbFlag}), {@code ub_name}, {@code sequence_parallel},
 * {@code tensor_model_parallel_size}, and one {@link GemmOverlapConfig} for each of the twelve {@link GemmName}s
 * (TE's defaults where none was configured).
 *
 * <p>The flags hold the values asked for; what runs follows from them only with sequence parallelism, tp > 1 and
 * the master switch {@code ub_tp_comm_overlap} on (TE and-s every flag with it). {@link #methodTable()} says, for
 * every GEMM, what runs and why; {@link #explain()} prints why nothing is overlapped when that is so.
 *
 * <p>The record holds the resolved values; {@link Builder} collects settings, {@link UbConfigReader} reads files
 * and maps into it, {@link TeDefaults} fills in what is left out and {@link UbConfigChecks} checks the result.
 *
 * <p>FP8 ({@link Fp8Key}: {@code fp8}, {@code fp8_recipe}, {@code fp8_format}, {@code fp8_margin},
 * {@code fp8_amax_history_len}, {@code fp8_amax_compute_algo}): {@link #fp8()} holds the recipe when FP8 is on.
 * Each GEMM's {@code fp8_buf} then defaults to TE's value: true for the all-gather GEMMs (their rings move the FP8
 * shard), false elsewhere; it cannot be set without {@code fp8: true}, nor to true on a GEMM that reduce-scatters.
 *
 * <pre>{@code
 * UbConfig config = UbConfig.builder()
 *         .tensorModelParallelSize(4).sequenceParallel(true).tpCommOverlap(true)
 *         .load(Path.of("tp_overlap.yaml"))           // a Megatron-LM --tp-comm-overlap-cfg file, unchanged
 *         .gemm(GemmName.PROJ_FPROP, g -> g.numSplits(8))
 *         .build();
 * System.out.println(config.methodTable().describe());
 * }</pre>
 */
public record UbConfig(
        boolean tpCommOverlap,
        boolean overlapAg,
        boolean overlapRs,
        boolean overlapRsDgrad,
        boolean bulkWgrad,
        boolean bulkDgrad,
        Optional<GemmName.Layer> ubName,
        boolean sequenceParallel,
        int tensorModelParallelSize,
        Map<GemmName, GemmOverlapConfig> gemms,
        Optional<Fp8Recipe> fp8) {

    static final String UB_NAME = "ub_name";
    static final String SEQUENCE_PARALLEL = "sequence_parallel";
    static final String TP_SIZE = "tensor_model_parallel_size";

    public UbConfig {
        Objects.requireNonNull(ubName, "ubName");
        Objects.requireNonNull(gemms, "gemms");
        Objects.requireNonNull(fp8, "fp8 (Optional.empty() for none)");
        if (tensorModelParallelSize < 1) {
            throw new IllegalArgumentException(TP_SIZE + " must be >= 1, got " + tensorModelParallelSize);
        }
        EnumMap<GemmName, GemmOverlapConfig> copy = new EnumMap<>(GemmName.class);
        for (GemmName g : GemmName.values()) {
            GemmOverlapConfig c = gemms.get(g);
            if (c == null) {
                throw new IllegalArgumentException("gemms must hold all twelve GEMMs; " + g + " is missing");
            }
            if (c.gemm() != g) {
                throw new IllegalArgumentException("gemms maps " + g + " to the settings of " + c.gemm());
            }
            copy.put(g, c);
        }
        if (gemms.size() != copy.size()) {
            throw new IllegalArgumentException("gemms holds a null key");
        }
        // A record built directly gets the same checks as one from the builder, without positions.
        UbConfigChecks.run(overlapRsDgrad, tensorModelParallelSize, fp8.isPresent(), copy,
                g -> !copy.get(g).explicitKeys().isEmpty(), path -> ConfigOrigin.BUILDER);
        gemms = Collections.unmodifiableMap(copy);
    }

    /** A configuration without FP8. */
    public UbConfig(boolean tpCommOverlap, boolean overlapAg, boolean overlapRs, boolean overlapRsDgrad,
                    boolean bulkWgrad, boolean bulkDgrad, Optional<GemmName.Layer> ubName, boolean sequenceParallel,
                    int tensorModelParallelSize, Map<GemmName, GemmOverlapConfig> gemms) {
        this(tpCommOverlap, overlapAg, overlapRs, overlapRsDgrad, bulkWgrad, bulkDgrad, ubName, sequenceParallel,
                tensorModelParallelSize, gemms, Optional.empty());
    }

    /** Whether the layers' GEMMs run in FP8 ({@code fp8: true}). */
    public boolean fp8Enabled() {
        return fp8.isPresent();
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Reads a whole configuration from a YAML or JSON file (by extension). */
    public static UbConfig fromFile(Path file) {
        return builder().load(file).build();
    }

    /** Reads a whole configuration from a map with the keys a file has (nested maps for the GEMM entries). */
    public static UbConfig fromMap(Map<String, ?> map) {
        return builder().apply(map).build();
    }

    /** The settings of {@code gemm}. */
    public GemmOverlapConfig gemm(GemmName gemm) {
        return gemms.get(Objects.requireNonNull(gemm, "gemm"));
    }

    /** The value asked for (TE's default when not set); see {@link #effective(UbFlag)} for what applies. */
    public boolean flag(UbFlag flag) {
        return switch (flag) {
            case UB_TP_COMM_OVERLAP -> tpCommOverlap;
            case UB_OVERLAP_AG -> overlapAg;
            case UB_OVERLAP_RS -> overlapRs;
            case UB_OVERLAP_RS_DGRAD -> overlapRsDgrad;
            case UB_BULK_WGRAD -> bulkWgrad;
            case UB_BULK_DGRAD -> bulkDgrad;
        };
    }

    /**
     * Whether the flag applies: it is on, userbuffers overlap can run at all ({@link #overlapPossible()}), and
     * for the bulk flags, {@code ub_overlap_rs_dgrad} does not replace them.
     */
    public boolean effective(UbFlag flag) {
        if (!overlapPossible() || !flag(flag)) {
            return false;
        }
        return switch (flag) {
            case UB_BULK_WGRAD, UB_BULK_DGRAD -> !overlapRsDgrad;
            default -> true;
        };
    }

    /** Sequence parallelism, tp > 1 and the master switch: without all three, every GEMM runs unoverlapped. */
    public boolean overlapPossible() {
        return whyNoOverlap().isEmpty();
    }

    /** Why no GEMM can be overlapped (tp, sequence parallelism, master switch), or empty when some can. */
    public Optional<String> whyNoOverlap() {
        if (tensorModelParallelSize == 1) {
            return Optional.of(TP_SIZE + " is 1: there is no tensor-parallel communication to overlap");
        }
        if (!sequenceParallel) {
            return Optional.of(SEQUENCE_PARALLEL + " is false: without sequence parallelism tensor parallelism"
                    + " all-reduces through NCCL, and userbuffers overlap only all-gathers and reduce-scatters"
                    + " (TE and Megatron-LM require sequence parallelism for it)");
        }
        if (!tpCommOverlap) {
            return Optional.of(UbFlag.UB_TP_COMM_OVERLAP + " is false (the master switch): every ub_* flag is"
                    + " off, as in TE's TransformerLayer");
        }
        return Optional.empty();
    }

    /** For every GEMM (of {@code ub_name}'s layer only, when set): the method that runs, or why none does. */
    public MethodTable methodTable() {
        List<MethodTable.Entry> entries = new ArrayList<>();
        for (GemmName g : GemmName.values()) {
            if (ubName.isEmpty() || ubName.get() == g.layer()) {
                entries.add(resolve(g));
            }
        }
        return new MethodTable(this, entries);
    }

    /**
     * Why the configuration overlaps what it does: the overall reason when nothing can be overlapped, flags
     * that were set but have no effect, and each GEMM's line of the method table.
     */
    public String explain() {
        StringBuilder s = new StringBuilder();
        s.append(fp8.map(r -> "FP8: " + Fp8Key.describe(r) + ".\n").orElse(""));
        whyNoOverlap().ifPresent(r -> s.append("No GEMM is overlapped: ").append(r).append(".\n"));
        // Flags that default to true cannot be told from set ones here; name those whose effect is replaced.
        if (overlapRsDgrad && !overlapPossible()) {
            s.append(UbFlag.UB_OVERLAP_RS_DGRAD).append(" is true but has no effect: ")
                    .append(whyNoOverlap().orElseThrow()).append(".\n");
        }
        for (UbFlag f : new UbFlag[] {UbFlag.UB_BULK_DGRAD, UbFlag.UB_BULK_WGRAD}) {
            if (overlapPossible() && overlapRsDgrad && flag(f)) {
                s.append(f).append(" is true but has no effect: ").append(UbFlag.UB_OVERLAP_RS_DGRAD)
                        .append(" replaces it.\n");
            }
        }
        for (MethodTable.Entry e : methodTable().entries()) {
            s.append(e.gemm()).append(": ").append(e.method()).append(" - ").append(e.reason()).append('\n');
        }
        return s.toString();
    }

    /** Why {@code gemm} runs as it does (the reason column of the method table). */
    public String explain(GemmName gemm) {
        return resolve(gemm).reason();
    }

    private MethodTable.Entry resolve(GemmName g) {
        GemmOverlapConfig cfg = gemms.get(g);
        GemmName.Role role = g.role(overlapRsDgrad);
        String communication = communication(g, role);
        Optional<String> none = whyNoOverlap();
        if (none.isPresent()) {
            // Without tp > 1 or sequence parallelism the reason says it all; with only the master switch off,
            // the GEMM's communication still runs, through NCCL.
            String why = tpCommOverlap || tensorModelParallelSize == 1 || !sequenceParallel
                    ? none.get() : none.get() + "; " + ncclPath(g, role);
            return MethodTable.Entry.unoverlapped(g, communication, why);
        }
        if (role == GemmName.Role.BULK_ALL_GATHER) {
            return MethodTable.Entry.unoverlapped(g, communication, keptInput(g)
                    + (flag(UbFlag.UB_BULK_DGRAD) ? " (" + UbFlag.UB_BULK_DGRAD + " has nothing to overlap)" : ""));
        }
        UbFlag flag = switch (role) {
            case ALL_GATHER -> UbFlag.UB_OVERLAP_AG;
            case REDUCE_SCATTER -> g.pass() == GemmName.Pass.FPROP ? UbFlag.UB_OVERLAP_RS : UbFlag.UB_OVERLAP_RS_DGRAD;
            case BULK_REDUCE_SCATTER -> UbFlag.UB_BULK_WGRAD;
            case BULK_ALL_GATHER, NONE -> null;
        };
        if (flag == null) {
            String why = g.layer().columnParallel()
                    ? "no communication of its own: " + UbFlag.UB_OVERLAP_RS_DGRAD + " reduce-scatters dX during "
                    + g.withPass(GemmName.Pass.DGRAD)
                    : "no communication of its own: it uses dY as all-gathered for " + g.withPass(GemmName.Pass.DGRAD);
            return MethodTable.Entry.unoverlapped(g, communication, why);
        }
        if (!flag(flag)) {
            return MethodTable.Entry.unoverlapped(g, communication, flag + " is false; " + ncclPath(g, role));
        }
        UbMethod method = cfg.method();
        String why = "by " + flag + (cfg.isExplicit(GemmKey.METHOD) ? ", method configured" : ", TE's default method");
        if (role == GemmName.Role.REDUCE_SCATTER && method == UbMethod.BULK) {
            // TE keeps a bulk entry's communicator and runs its pipelined reduce-scatter (split_overlap_rs).
            method = UbMethod.PIPELINE;
            why += " (bulk entry run as a pipelined reduce-scatter, as TE does under " + UbFlag.UB_OVERLAP_RS_DGRAD + ")";
        }
        if (role == GemmName.Role.BULK_REDUCE_SCATTER && cfg.useCe()) {
            why += "; the peers' rows are copied on the copy engines and summed locally (use_ce: false for TE's"
                    + " pull-reduce kernel)" + (cfg.bulkGemmSmMargin() == 0 && cfg.setSmMargin()
                    ? "; the GEMM beside it keeps every SM (configure set_sm_margin to leave num_sm)" : "");
        }
        return new MethodTable.Entry(g, method, Optional.of(cfg), communication, why);
    }

    private static String communication(GemmName g, GemmName.Role role) {
        return switch (role) {
            case ALL_GATHER -> g.pass() == GemmName.Pass.FPROP ? "all-gather of the input X" : "all-gather of dY";
            case REDUCE_SCATTER -> g.pass() == GemmName.Pass.FPROP ? "reduce-scatter of the output" : "reduce-scatter of dX";
            case BULK_ALL_GATHER -> "none (X for " + g.withPass(GemmName.Pass.WGRAD) + " is gathered by "
                    + g.withPass(GemmName.Pass.FPROP) + ")";
            case BULK_REDUCE_SCATTER -> "reduce-scatter of dX from " + g.withPass(GemmName.Pass.DGRAD) + " (bulk)";
            case NONE -> "none";
        };
    }

    /**
     * Why a qkv/fc1 dgrad gathers nothing without {@code ub_overlap_rs_dgrad}: every layer has its own fprop user
     * buffer, which holds X as the forward gathered it until the layer's next forward (peers wait for its credit
     * before writing it again), so the wgrad reads it there. TE shares one buffer per name between layers and so
     * gathers X again beside the dgrad under {@code ub_bulk_dgrad}; the unoverlapped path reads NCCL's gathered copy.
     */
    private static String keptInput(GemmName g) {
        return "no all-gather: " + g.withPass(GemmName.Pass.WGRAD) + " reads X where " + g.withPass(GemmName.Pass.FPROP)
                + " gathered it";
    }

    private static String ncclPath(GemmName g, GemmName.Role role) {
        return switch (role) {
            case ALL_GATHER -> "NCCL all-gather, then one GEMM";
            case REDUCE_SCATTER -> "one GEMM, then NCCL reduce-scatter";
            case BULK_ALL_GATHER -> keptInput(g);
            case BULK_REDUCE_SCATTER -> "NCCL reduce-scatter of dX beside the GEMM";
            case NONE -> "no communication of its own";
        };
    }

    /** Collects settings from typed calls, maps and files (later settings replace earlier ones, key by key). */
    public static final class Builder {
        // Read and written by UbConfigReader too.
        final EnumMap<UbFlag, Sourced> flags = new EnumMap<>(UbFlag.class);
        Sourced ubName;
        Sourced sequenceParallel;
        Sourced tpSize;
        final EnumMap<Fp8Key, Sourced> fp8Keys = new EnumMap<>(Fp8Key.class);
        private final EnumMap<GemmName, GemmSettings> gemms = new EnumMap<>(GemmName.class);

        private Builder() {
        }

        public Builder flag(UbFlag flag, boolean value) {
            flags.put(Objects.requireNonNull(flag, "flag"), new Sourced(value, ConfigOrigin.BUILDER));
            return this;
        }

        /** {@code ub_tp_comm_overlap}: the master switch. */
        public Builder tpCommOverlap(boolean value) {
            return flag(UbFlag.UB_TP_COMM_OVERLAP, value);
        }

        public Builder overlapAg(boolean value) {
            return flag(UbFlag.UB_OVERLAP_AG, value);
        }

        public Builder overlapRs(boolean value) {
            return flag(UbFlag.UB_OVERLAP_RS, value);
        }

        public Builder overlapRsDgrad(boolean value) {
            return flag(UbFlag.UB_OVERLAP_RS_DGRAD, value);
        }

        public Builder bulkWgrad(boolean value) {
            return flag(UbFlag.UB_BULK_WGRAD, value);
        }

        public Builder bulkDgrad(boolean value) {
            return flag(UbFlag.UB_BULK_DGRAD, value);
        }

        /** {@code ub_name}: the configuration is for one TE module (its three GEMMs) rather than a whole layer. */
        public Builder ubName(GemmName.Layer layer) {
            ubName = new Sourced(Objects.requireNonNull(layer, "layer"), ConfigOrigin.BUILDER);
            return this;
        }

        public Builder sequenceParallel(boolean value) {
            sequenceParallel = new Sourced(value, ConfigOrigin.BUILDER);
            return this;
        }

        public Builder tensorModelParallelSize(int tp) {
            return tensorModelParallelSize(tp, ConfigOrigin.BUILDER);
        }

        Builder tensorModelParallelSize(int tp, ConfigOrigin origin) {
            if (tp < 1) {
                throw new UbConfigException(TP_SIZE, origin, "must be >= 1, got " + tp);
            }
            tpSize = new Sourced(tp, origin);
            return this;
        }

        /** {@code fp8}: the layers' GEMMs in FP8 with the recipe the other fp8 keys describe. */
        public Builder fp8(boolean on) {
            fp8Keys.put(Fp8Key.FP8, new Sourced(on, ConfigOrigin.BUILDER));
            return this;
        }

        /** {@code fp8_recipe}: delayed or current scaling. */
        public Builder fp8Recipe(Fp8Key.Recipe recipe) {
            fp8Keys.put(Fp8Key.FP8_RECIPE, new Sourced(Objects.requireNonNull(recipe, "recipe"), ConfigOrigin.BUILDER));
            return this;
        }

        /** {@code fp8_format}: HYBRID (E4M3 forward, E5M2 gradients) or E4M3. */
        public Builder fp8Format(Fp8Recipe.Formats formats) {
            fp8Keys.put(Fp8Key.FP8_FORMAT, new Sourced(Objects.requireNonNull(formats, "formats"),
                    ConfigOrigin.BUILDER));
            return this;
        }

        /** {@code fp8_margin} (delayed scaling), at least 0. */
        public Builder fp8Margin(int margin) {
            return fp8Integer(Fp8Key.FP8_MARGIN, margin, ConfigOrigin.BUILDER);
        }

        /** {@code fp8_amax_history_len} (delayed scaling), at least 1. */
        public Builder fp8AmaxHistoryLen(int steps) {
            return fp8Integer(Fp8Key.FP8_AMAX_HISTORY_LEN, steps, ConfigOrigin.BUILDER);
        }

        /** {@code fp8_amax_compute_algo} (delayed scaling). */
        public Builder fp8AmaxComputeAlgo(Fp8Recipe.AmaxCompute algo) {
            fp8Keys.put(Fp8Key.FP8_AMAX_COMPUTE_ALGO, new Sourced(Objects.requireNonNull(algo, "algo"),
                    ConfigOrigin.BUILDER));
            return this;
        }

        /**
         * Turns FP8 off and forgets every fp8 key and fp8_buf set so far: the same configuration for a run without
         * FP8 (e.g. to compare an FP8 run with it).
         */
        public Builder withoutFp8() {
            fp8Keys.clear();
            for (GemmSettings g : gemms.values()) {
                g.clear(GemmKey.FP8_BUF);
            }
            return this;
        }

        Builder fp8Integer(Fp8Key key, int value, ConfigOrigin origin) {
            int least = key == Fp8Key.FP8_MARGIN ? 0 : 1;
            if (value < least) {
                throw new UbConfigException(key.teName(), origin, "must be >= " + least + ", got " + value);
            }
            fp8Keys.put(key, new Sourced(value, origin));
            return this;
        }

        /** Edits {@code gemm}'s entry (creating it): {@code .gemm(PROJ_FPROP, g -> g.numSm(24).numSplits(4))}. */
        public Builder gemm(GemmName gemm, Consumer<GemmSettings> edit) {
            edit.accept(entry(gemm, ConfigOrigin.BUILDER));
            return this;
        }

        /** Applies a YAML or JSON file (format by extension). */
        public Builder load(Path file) {
            ConfigFormat format = ConfigFormat.forFile(file);
            try (Reader r = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
                return load(r, file.toString(), format);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read " + file, e);
            }
        }

        /** Applies a YAML or JSON document; {@code sourceName} names it in error messages. */
        public Builder load(Reader text, String sourceName, ConfigFormat format) {
            return apply(ConfigTree.parse(text, sourceName, format));
        }

        /** Applies a YAML or JSON document given as text. */
        public Builder load(String text, String sourceName, ConfigFormat format) {
            return apply(ConfigTree.parse(text, sourceName, format));
        }

        /** Applies a map with a file's keys; errors name the source "map". */
        public Builder apply(Map<String, ?> map) {
            return apply(map, "map");
        }

        public Builder apply(Map<String, ?> map, String sourceName) {
            return apply(ConfigTree.fromMap(Objects.requireNonNull(map, "map"), sourceName));
        }

        private Builder apply(ConfigTree.Node root) {
            UbConfigReader.apply(this, root);
            return this;
        }

        GemmSettings entry(GemmName gemm, ConfigOrigin origin) {
            GemmSettings s = gemms.get(Objects.requireNonNull(gemm, "gemm"));
            if (s == null) {
                s = new GemmSettings(gemm, origin);
                gemms.put(gemm, s);
            } else {
                s.declaredAt(origin);
            }
            return s;
        }

        /**
         * Fills in TE's defaults and checks the settings against each other.
         *
         * @throws UbConfigException naming the offending key and where it was set
         */
        public UbConfig build() {
            int tp = tpSize == null ? TeDefaults.TP_SIZE : tpSize.integer();
            boolean rsDgrad = flagValue(UbFlag.UB_OVERLAP_RS_DGRAD);
            UbConfigChecks.fp8Keys(fp8Keys, this::origin);
            Optional<Fp8Recipe> fp8 = TeDefaults.fp8Recipe(fp8Keys);
            for (GemmSettings s : gemms.values()) {
                UbConfigChecks.checkAlone(s, rsDgrad);
            }
            EnumMap<GemmName, GemmOverlapConfig> resolved = new EnumMap<>(GemmName.class);
            for (GemmName g : GemmName.values()) {
                resolved.put(g, TeDefaults.gemm(g, gemms.get(g), tp, fp8.isPresent(), rsDgrad));
            }
            UbConfigChecks.run(rsDgrad, tp, fp8.isPresent(), resolved, gemms::containsKey, this::origin);
            return new UbConfig(
                    flagValue(UbFlag.UB_TP_COMM_OVERLAP),
                    flagValue(UbFlag.UB_OVERLAP_AG),
                    flagValue(UbFlag.UB_OVERLAP_RS),
                    rsDgrad,
                    flagValue(UbFlag.UB_BULK_WGRAD),
                    flagValue(UbFlag.UB_BULK_DGRAD),
                    ubName == null ? Optional.empty() : Optional.of((GemmName.Layer) ubName.value()),
                    sequenceParallel != null && sequenceParallel.bool(),
                    tp,
                    resolved,
                    fp8);
        }

        private boolean flagValue(UbFlag f) {
            return TeDefaults.flag(f, flags.get(f));
        }

        /** Where the value at a dotted path was set ({@code qkv_fprop.method}, {@code qkv_wgrad}, a top key). */
        private ConfigOrigin origin(String path) {
            int dot = path.indexOf('.');
            if (dot >= 0) {
                GemmName g = GemmName.parse(path.substring(0, dot)).orElseThrow();
                GemmKey k = GemmKey.parse(path.substring(dot + 1)).orElseThrow();
                GemmSettings s = gemms.get(g);
                return s == null ? ConfigOrigin.DEFAULT : s.origin(k);
            }
            Optional<GemmName> g = GemmName.parse(path);
            if (g.isPresent()) {
                GemmSettings s = gemms.get(g.get());
                return s == null ? ConfigOrigin.DEFAULT : s.declaredAt();
            }
            Optional<UbFlag> f = UbFlag.parse(path);
            Optional<Fp8Key> k = Fp8Key.parse(path);
            if (k.isPresent()) {
                Sourced s = fp8Keys.get(k.get());
                return s == null ? ConfigOrigin.DEFAULT : s.origin();
            }
            Sourced s = f.isPresent() ? flags.get(f.get()) : switch (path) {
                case TP_SIZE -> tpSize;
                case SEQUENCE_PARALLEL -> sequenceParallel;
                case UB_NAME -> ubName;
                default -> throw new IllegalArgumentException("no such key " + path);
            };
            return s == null ? ConfigOrigin.DEFAULT : s.origin();
        }
    }
}
