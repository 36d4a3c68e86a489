package dev.ubuf.layers.config;

import dev.ubuf.fp8.Fp8Recipe;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import static dev.ubuf.layers.config.UbConfig.SEQUENCE_PARALLEL;
import static dev.ubuf.layers.config.UbConfig.TP_SIZE;
import static dev.ubuf.layers.config.UbConfig.UB_NAME;

/**
 * Reads a parsed YAML or JSON document (or a map, as a {@link ConfigTree}) into a {@link UbConfig.Builder}: TE's,
 * Megatron-LM's and NeMo's keys and value spellings, each value checked for its type and kept with where it was set.
 * What the keys mean together is checked when the builder builds ({@link UbConfigChecks}).
 */
final class UbConfigReader {
    private UbConfigReader() {
    }

    /** Applies every key of {@code root}, a mapping, to {@code b}. */
    static void apply(UbConfig.Builder b, ConfigTree.Node root) {
        if (!(root instanceof ConfigTree.Mapping mapping)) {
            throw new UbConfigException("", root.origin(), "a configuration is a mapping of keys, got "
                    + ConfigTree.describe(root));
        }
        for (ConfigTree.Field f : mapping.fields().values()) {
            applyTop(b, f);
        }
    }

    private static void applyTop(UbConfig.Builder b, ConfigTree.Field f) {
        String key = f.key();
        Optional<UbFlag> flag = UbFlag.parse(key);
        if (flag.isPresent()) {
            b.flags.put(flag.get(), new Sourced(bool(key, f.value()), f.value().origin()));
            return;
        }
        Optional<Fp8Key> fp8Key = Fp8Key.parse(key);
        if (fp8Key.isPresent()) {
            applyFp8(b, fp8Key.get(), f.value());
            return;
        }
        switch (key) {
            case SEQUENCE_PARALLEL -> b.sequenceParallel = new Sourced(bool(key, f.value()), f.value().origin());
            case TP_SIZE -> b.tensorModelParallelSize(integer(key, f.value()), f.value().origin());
            case UB_NAME -> {
                String name = string(key, f.value());
                GemmName.Layer layer = GemmName.Layer.parse(name).orElseThrow(() -> new UbConfigException(key,
                        f.value().origin(), "must be qkv, proj, fc1 or fc2 (a TE module's userbuffers name), got \""
                        + name + "\""));
                b.ubName = new Sourced(layer, f.value().origin());
            }
            default -> {
                GemmName gemm = GemmName.parse(key).orElseThrow(() -> unknownTopKey(f));
                if (!(f.value() instanceof ConfigTree.Mapping entry)) {
                    throw new UbConfigException(key, f.value().origin(), "must be a mapping of settings ("
                            + GemmKey.known() + "), got " + ConfigTree.describe(f.value()));
                }
                GemmSettings settings = b.entry(gemm, f.keyOrigin());
                for (ConfigTree.Field k : entry.fields().values()) {
                    applyGemmKey(settings, k);
                }
            }
        }
    }

    private static void applyFp8(UbConfig.Builder b, Fp8Key key, ConfigTree.Node n) {
        String path = key.teName();
        ConfigOrigin at = n.origin();
        switch (key) {
            case FP8 -> {
                // Megatron-LM's TransformerConfig.fp8 is the format ("hybrid", "e4m3"); TE's and NeMo's a switch.
                if (n instanceof ConfigTree.Scalar s && s.value() instanceof String str) {
                    Fp8Recipe.Formats f = Fp8Key.parseFormat(str).orElseThrow(() -> new UbConfigException(path, at,
                            "must be true or false, or a format (hybrid or e4m3), got \"" + str + "\""));
                    b.fp8Keys.put(Fp8Key.FP8, new Sourced(true, at));
                    Sourced earlier = b.fp8Keys.get(Fp8Key.FP8_FORMAT);
                    // In one document the two must agree; a later document may change the format.
                    if (earlier != null && earlier.value() != f && earlier.origin().source().equals(at.source())) {
                        throw new UbConfigException(path, at, "\"" + str + "\" contradicts "
                                + Fp8Key.FP8_FORMAT + " (" + earlier.origin() + ")");
                    }
                    b.fp8Keys.put(Fp8Key.FP8_FORMAT, new Sourced(f, at));
                } else {
                    b.fp8Keys.put(Fp8Key.FP8, new Sourced(bool(path, n), at));
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
                b.fp8Keys.put(key, new Sourced(r, at));
            }
            case FP8_FORMAT -> {
                String name = string(path, n);
                Fp8Recipe.Formats f = Fp8Key.parseFormat(name).orElseThrow(() -> new UbConfigException(path, at,
                        "must be hybrid (E4M3 forward, E5M2 gradients) or e4m3, got \"" + name + "\""));
                Sourced earlier = b.fp8Keys.get(Fp8Key.FP8_FORMAT);
                if (earlier != null && earlier.value() != f && earlier.origin().source().equals(at.source())) {
                    throw new UbConfigException(path, at, "\"" + name + "\" contradicts the format set at "
                            + earlier.origin());
                }
                b.fp8Keys.put(key, new Sourced(f, at));
            }
            case FP8_MARGIN, FP8_AMAX_HISTORY_LEN -> b.fp8Integer(key, integer(path, n), at);
            case FP8_AMAX_COMPUTE_ALGO -> {
                String name = string(path, n);
                Fp8Recipe.AmaxCompute a = Fp8Key.parseAmaxCompute(name).orElseThrow(() -> new UbConfigException(
                        path, at, "must be max or most_recent, got \"" + name + "\""));
                b.fp8Keys.put(key, new Sourced(a, at));
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
}
