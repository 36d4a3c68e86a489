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
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.function.Consumer;
import java.util.function.Function;

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
        Checks.run(overlapRsDgrad, tensorModelParallelSize, fp8.isPresent(), copy,
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
        UbFlag flag = switch (role) {
            case ALL_GATHER -> UbFlag.UB_OVERLAP_AG;
            case REDUCE_SCATTER -> g.pass() == GemmName.Pass.FPROP ? UbFlag.UB_OVERLAP_RS : UbFlag.UB_OVERLAP_RS_DGRAD;
            case BULK_ALL_GATHER -> UbFlag.UB_BULK_DGRAD;
            case BULK_REDUCE_SCATTER -> UbFlag.UB_BULK_WGRAD;
            case NONE -> null;
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
        return new MethodTable.Entry(g, method, Optional.of(cfg), communication, why);
    }

    private static String communication(GemmName g, GemmName.Role role) {
        return switch (role) {
            case ALL_GATHER -> g.pass() == GemmName.Pass.FPROP ? "all-gather of the input X" : "all-gather of dY";
            case REDUCE_SCATTER -> g.pass() == GemmName.Pass.FPROP ? "reduce-scatter of the output" : "reduce-scatter of dX";
            case BULK_ALL_GATHER -> "all-gather of X for " + g.withPass(GemmName.Pass.WGRAD) + " (bulk)";
            case BULK_REDUCE_SCATTER -> "reduce-scatter of dX from " + g.withPass(GemmName.Pass.DGRAD) + " (bulk)";
            case NONE -> "none";
        };
    }

    private static String ncclPath(GemmName g, GemmName.Role role) {
        return switch (role) {
            case ALL_GATHER -> "NCCL all-gather, then one GEMM";
            case REDUCE_SCATTER -> "one GEMM, then NCCL reduce-scatter";
            case BULK_ALL_GATHER -> "NCCL all-gather of X beside the GEMM";
            case BULK_REDUCE_SCATTER -> "NCCL reduce-scatter of dX beside the GEMM";
            case NONE -> "no communication of its own";
        };
    }

    /** Collects settings from typed calls, maps and files (later settings replace earlier ones, key by key). */
    public static final class Builder {
        private final EnumMap<UbFlag, Sourced> flags = new EnumMap<>(UbFlag.class);
        private Sourced ubName;
        private Sourced sequenceParallel;
        private Sourced tpSize;
        private final EnumMap<Fp8Key, Sourced> fp8Keys = new EnumMap<>(Fp8Key.class);
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

        private Builder tensorModelParallelSize(int tp, ConfigOrigin origin) {
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

        private Builder fp8Integer(Fp8Key key, int value, ConfigOrigin origin) {
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
            if (!(root instanceof ConfigTree.Mapping mapping)) {
                throw new UbConfigException("", root.origin(), "a configuration is a mapping of keys, got "
                        + ConfigTree.describe(root));
            }
            for (ConfigTree.Field f : mapping.fields().values()) {
                applyTop(f);
            }
            return this;
        }

        private void applyTop(ConfigTree.Field f) {
            String key = f.key();
            Optional<UbFlag> flag = UbFlag.parse(key);
            if (flag.isPresent()) {
                flags.put(flag.get(), new Sourced(bool(key, f.value()), f.value().origin()));
                return;
            }
            Optional<Fp8Key> fp8Key = Fp8Key.parse(key);
            if (fp8Key.isPresent()) {
                applyFp8(fp8Key.get(), f.value());
                return;
            }
            switch (key) {
                case SEQUENCE_PARALLEL -> sequenceParallel = new Sourced(bool(key, f.value()), f.value().origin());
                case TP_SIZE -> tensorModelParallelSize(integer(key, f.value()), f.value().origin());
                case UB_NAME -> {
                    String name = string(key, f.value());
                    GemmName.Layer layer = GemmName.Layer.parse(name).orElseThrow(() -> new UbConfigException(key,
                            f.value().origin(), "must be qkv, proj, fc1 or fc2 (a TE module's userbuffers name), got \""
                            + name + "\""));
                    ubName = new Sourced(layer, f.value().origin());
                }
                default -> {
                    GemmName gemm = GemmName.parse(key).orElseThrow(() -> unknownTopKey(f));
                    if (!(f.value() instanceof ConfigTree.Mapping entry)) {
                        throw new UbConfigException(key, f.value().origin(), "must be a mapping of settings ("
                                + GemmKey.known() + "), got " + ConfigTree.describe(f.value()));
                    }
                    GemmSettings settings = entry(gemm, f.keyOrigin());
                    for (ConfigTree.Field k : entry.fields().values()) {
                        applyGemmKey(settings, k);
                    }
                }
            }
        }

        private void applyFp8(Fp8Key key, ConfigTree.Node n) {
            String path = key.teName();
            ConfigOrigin at = n.origin();
            switch (key) {
                case FP8 -> {
                    // Megatron-LM's TransformerConfig.fp8 is the format ("hybrid", "e4m3"); TE's and NeMo's a switch.
                    if (n instanceof ConfigTree.Scalar s && s.value() instanceof String str) {
                        Fp8Recipe.Formats f = Fp8Key.parseFormat(str).orElseThrow(() -> new UbConfigException(path, at,
                                "must be true or false, or a format (hybrid or e4m3), got \"" + str + "\""));
                        fp8Keys.put(Fp8Key.FP8, new Sourced(true, at));
                        Sourced earlier = fp8Keys.get(Fp8Key.FP8_FORMAT);
                        // In one document the two must agree; a later document may change the format.
                        if (earlier != null && earlier.value() != f && earlier.origin().source().equals(at.source())) {
                            throw new UbConfigException(path, at, "\"" + str + "\" contradicts "
                                    + Fp8Key.FP8_FORMAT + " (" + earlier.origin() + ")");
                        }
                        fp8Keys.put(Fp8Key.FP8_FORMAT, new Sourced(f, at));
                    } else {
                        fp8Keys.put(Fp8Key.FP8, new Sourced(bool(path, n), at));
                    }
                }
                case FP8_RECIPE -> {
                    String name = string(path, n);
                    if (name.equals("mxfp8") || name.equals("blockwise")) {
                        throw new UbConfigException(path, at, "\"" + name + "\" is not supported: ubuf scales each"
                                + " tensor as a whole (delayed or current); block scaling needs other kernels");
                    }
                    Fp8Key.Recipe r = Fp8Key.Recipe.parse(name).orElseThrow(() -> new UbConfigException(path, at,
                            "must be delayed or current (tensorwise, Megatron-LM's name, is current), got \"" + name
                            + "\""));
                    fp8Keys.put(key, new Sourced(r, at));
                }
                case FP8_FORMAT -> {
                    String name = string(path, n);
                    Fp8Recipe.Formats f = Fp8Key.parseFormat(name).orElseThrow(() -> new UbConfigException(path, at,
                            "must be hybrid (E4M3 forward, E5M2 gradients) or e4m3, got \"" + name + "\""));
                    Sourced earlier = fp8Keys.get(Fp8Key.FP8_FORMAT);
                    if (earlier != null && earlier.value() != f && earlier.origin().source().equals(at.source())) {
                        throw new UbConfigException(path, at, "\"" + name + "\" contradicts the format set at "
                                + earlier.origin());
                    }
                    fp8Keys.put(key, new Sourced(f, at));
                }
                case FP8_MARGIN, FP8_AMAX_HISTORY_LEN -> fp8Integer(key, integer(path, n), at);
                case FP8_AMAX_COMPUTE_ALGO -> {
                    String name = string(path, n);
                    Fp8Recipe.AmaxCompute a = Fp8Key.parseAmaxCompute(name).orElseThrow(() -> new UbConfigException(
                            path, at, "must be max or most_recent, got \"" + name + "\""));
                    fp8Keys.put(key, new Sourced(a, at));
                }
            }
        }

        private static void applyGemmKey(GemmSettings settings, ConfigTree.Field f) {
            String path = settings.gemm().teName() + "." + f.key();
            GemmKey key = GemmKey.parse(f.key()).orElseThrow(() -> new UbConfigException(path, f.keyOrigin(),
                    "unknown key (known: " + GemmKey.known() + ")"));
            Object value = switch (key.kind()) {
                case METHOD -> method(path, f.value());
                case BOOLEAN -> bool(path, f.value());
                case INTEGER -> integer(path, f.value());
            };
            settings.set(key, value, f.value().origin());
        }

        private GemmSettings entry(GemmName gemm, ConfigOrigin origin) {
            GemmSettings s = gemms.get(Objects.requireNonNull(gemm, "gemm"));
            if (s == null) {
                s = new GemmSettings(gemm, origin);
                gemms.put(gemm, s);
            } else {
                s.declaredAt(origin);
            }
            return s;
        }

        private static UbConfigException unknownTopKey(ConfigTree.Field f) {
            String key = f.key();
            String hint = "";
            for (UbFlag flag : UbFlag.values()) {
                if (flag.megatronName().equals(key)) {
                    hint = " (Megatron-LM's name; TE's and ubuf's is " + flag + ")";
                }
            }
            if (key.equals("ub_cfgs") || key.equals("tp_comm_overlap_cfg") || key.equals("ub_tp_comm_overlap_cfg")) {
                hint = " (write the GEMM entries such as qkv_fprop at the top level, as Megatron-LM's"
                        + " --tp-comm-overlap-cfg files do)";
            }
            if (key.equals("tensor_parallel_size") || key.equals("tp_size") || key.equals("tp")) {
                hint = " (the tensor-parallel size is " + TP_SIZE + ")";
            }
            return new UbConfigException(key, f.keyOrigin(), "unknown key" + hint + "; known: "
                    + String.join(", ", topKeys()) + ", or a GEMM name (qkv_fprop, qkv_dgrad, qkv_wgrad, proj_fprop,"
                    + " ..., fc2_wgrad)");
        }

        private static List<String> topKeys() {
            List<String> keys = new ArrayList<>();
            for (UbFlag f : UbFlag.values()) {
                keys.add(f.teName());
            }
            keys.add(UB_NAME);
            keys.add(SEQUENCE_PARALLEL);
            keys.add(TP_SIZE);
            for (Fp8Key k : Fp8Key.values()) {
                keys.add(k.teName());
            }
            return keys;
        }

        // Megatron-LM and NeMo files write booleans as 0/1 (set_sm_margin: 0, aggregate: 1); TE casts them.
        private static boolean bool(String path, ConfigTree.Node n) {
            if (n instanceof ConfigTree.Scalar s) {
                if (s.value() instanceof Boolean b) {
                    return b;
                }
                if (s.value() instanceof Long l && (l == 0 || l == 1)) {
                    return l == 1;
                }
            }
            throw new UbConfigException(path, n.origin(), "must be true or false (or 0 or 1), got "
                    + ConfigTree.describe(n));
        }

        private static int integer(String path, ConfigTree.Node n) {
            if (n instanceof ConfigTree.Scalar s && s.value() instanceof Long l) {
                if (l >= Integer.MIN_VALUE && l <= Integer.MAX_VALUE) {
                    return (int) (long) l;
                }
            }
            throw new UbConfigException(path, n.origin(), "must be an integer (32-bit), got " + ConfigTree.describe(n));
        }

        private static String string(String path, ConfigTree.Node n) {
            if (n instanceof ConfigTree.Scalar s && s.value() instanceof String str) {
                return str;
            }
            throw new UbConfigException(path, n.origin(), "must be a string, got " + ConfigTree.describe(n));
        }

        private static UbMethod method(String path, ConfigTree.Node n) {
            String name = string(path, n);
            if (name.equals("external")) {
                throw new UbConfigException(path, n.origin(), "\"external\" is not supported: TE uses it to"
                        + " overlap the MXFP8 wgrad all-gather with the dgrad's ring exchange, and ubuf's FP8 scales"
                        + " whole tensors (no MXFP8)");
            }
            return UbMethod.parse(name).orElseThrow(() -> new UbConfigException(path, n.origin(),
                    "unknown method \"" + name + "\" (expected " + UbMethod.configurable() + ")"));
        }

        /**
         * Fills in TE's defaults and checks the settings against each other.
         *
         * @throws UbConfigException naming the offending key and where it was set
         */
        public UbConfig build() {
            int tp = tpSize == null ? 1 : tpSize.integer();
            boolean rsDgrad = flagValue(UbFlag.UB_OVERLAP_RS_DGRAD);
            Optional<Fp8Recipe> fp8 = fp8Recipe();
            for (GemmSettings s : gemms.values()) {
                checkAlone(s, rsDgrad);
            }
            EnumMap<GemmName, GemmOverlapConfig> resolved = new EnumMap<>(GemmName.class);
            for (GemmName g : GemmName.values()) {
                resolved.put(g, resolve(g, gemms.get(g), tp, fp8.isPresent(), rsDgrad));
            }
            Checks.run(rsDgrad, tp, fp8.isPresent(), resolved, gemms::containsKey, this::origin);
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

        /**
         * The recipe the fp8 keys describe (TE's defaults for the rest), or empty with FP8 off. Recipe keys without
         * {@code fp8: true}, and delayed-scaling keys under current scaling, are errors: they would do nothing.
         */
        private Optional<Fp8Recipe> fp8Recipe() {
            Sourced on = fp8Keys.get(Fp8Key.FP8);
            boolean enabled = on != null && on.bool();
            Fp8Key.Recipe kind = fp8Keys.containsKey(Fp8Key.FP8_RECIPE)
                    ? (Fp8Key.Recipe) fp8Keys.get(Fp8Key.FP8_RECIPE).value() : Fp8Key.Recipe.DELAYED;
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
                            + " but " + Fp8Key.FP8_RECIPE + " is current (" + origin(Fp8Key.FP8_RECIPE.teName())
                            + "): current scaling takes each tensor's scale from its own amax, with no history or"
                            + " margin");
                }
            }
            if (!enabled) {
                return Optional.empty();
            }
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

        private boolean flagValue(UbFlag f) {
            Sourced s = flags.get(f);
            return s == null ? f.teDefault() : s.bool();
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

        private static GemmOverlapConfig resolve(GemmName g, GemmSettings s, int tp, boolean fp8, boolean rsDgrad) {
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
            var atomic = s.get(GemmKey.ATOMIC_GEMM);
            if (atomic.isPresent() && atomic.get().bool() && stored != UbMethod.RING_EXCHANGE
                    && stored != UbMethod.PIPELINE) {
                throw new UbConfigException(g.teName() + "." + GemmKey.ATOMIC_GEMM.teName(), atomic.get().origin(),
                        "true applies to ring_exchange and pipeline GEMMs (it runs ubuf's \"atomic\" method on the"
                        + " sm_90a atomic GEMM), not to " + stored + (stored == UbMethod.AUTO ? " (the planner "
                        + "already measures the atomic method where the GPU can run it)" : ""));
            }
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

        /** Checks of settings the resolved record does not keep. */
        private void checkAlone(GemmSettings s, boolean rsDgrad) {
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
    }

    /** Checks between settings; shared by the builder (with origins) and the canonical constructor. */
    static final class Checks {
        private Checks() {
        }

        static void run(boolean rsDgrad, int tp, boolean fp8, Map<GemmName, GemmOverlapConfig> gemms,
                        java.util.function.Predicate<GemmName> declared, Function<String, ConfigOrigin> origins) {
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
                        + " (it swaps chunks between rank pairs), but " + TP_SIZE + " is " + tp + " ("
                        + origins.apply(TP_SIZE) + ")");
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
                        + " which always runs " + TP_SIZE + " = " + tp + " steps (" + origins.apply(TP_SIZE)
                        + "); TE ignores it there: remove it, or set it to " + tp);
            }
        }
    }
}
