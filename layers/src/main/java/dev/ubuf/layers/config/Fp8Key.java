package dev.ubuf.layers.config;

import dev.ubuf.fp8.Fp8Recipe;

import java.util.Optional;

/**
 * The top-level FP8 keys of a configuration, with the names Megatron-LM's {@code TransformerConfig} and NeMo give
 * them (TE's {@code DelayedScaling} and {@code Float8CurrentScaling} recipes hold the same settings):
 *
 * <ul>
 *   <li>{@code fp8}: true or false (default false); Megatron's format strings {@code hybrid} and {@code e4m3}
 *       also turn FP8 on and set the format.</li>
 *   <li>{@code fp8_recipe}: {@code delayed} (default, TE's DelayedScaling) or {@code current} (per-tensor
 *       just-in-time scaling, TE's Float8CurrentScaling; Megatron's name {@code tensorwise} is accepted).</li>
 *   <li>{@code fp8_format}: {@code hybrid} (default: E4M3 forward, E5M2 gradients) or {@code e4m3} (both).</li>
 *   <li>{@code fp8_margin}: delayed only, default 0: the scale is divided by 2^margin.</li>
 *   <li>{@code fp8_amax_history_len}: delayed only, default 1024: steps of amax each tensor remembers.</li>
 *   <li>{@code fp8_amax_compute_algo}: delayed only, {@code max} (default) or {@code most_recent}.</li>
 * </ul>
 */
public enum Fp8Key {
    FP8("fp8"),
    FP8_RECIPE("fp8_recipe"),
    FP8_FORMAT("fp8_format"),
    FP8_MARGIN("fp8_margin"),
    FP8_AMAX_HISTORY_LEN("fp8_amax_history_len"),
    FP8_AMAX_COMPUTE_ALGO("fp8_amax_compute_algo");

    /** The scaling recipes {@code fp8_recipe} names. */
    public enum Recipe {
        DELAYED("delayed"), CURRENT("current");

        private final String name;

        Recipe(String name) {
            this.name = name;
        }

        public static Optional<Recipe> parse(String s) {
            return switch (s) {
                case "delayed" -> Optional.of(DELAYED);
                case "current", "tensorwise" -> Optional.of(CURRENT);
                default -> Optional.empty();
            };
        }

        @Override
        public String toString() {
            return name;
        }
    }

    private final String teName;

    Fp8Key(String teName) {
        this.teName = teName;
    }

    public String teName() {
        return teName;
    }

    /** Whether the key applies to delayed scaling only (current scaling keeps no history and has no margin). */
    public boolean delayedOnly() {
        return this == FP8_MARGIN || this == FP8_AMAX_HISTORY_LEN || this == FP8_AMAX_COMPUTE_ALGO;
    }

    public static Optional<Fp8Key> parse(String name) {
        for (Fp8Key k : values()) {
            if (k.teName.equals(name)) {
                return Optional.of(k);
            }
        }
        return Optional.empty();
    }

    static Optional<Fp8Recipe.Formats> parseFormat(String s) {
        return switch (s) {
            case "hybrid" -> Optional.of(Fp8Recipe.Formats.HYBRID);
            case "e4m3" -> Optional.of(Fp8Recipe.Formats.E4M3);
            default -> Optional.empty();
        };
    }

    static Optional<Fp8Recipe.AmaxCompute> parseAmaxCompute(String s) {
        return switch (s) {
            case "max" -> Optional.of(Fp8Recipe.AmaxCompute.MAX);
            case "most_recent" -> Optional.of(Fp8Recipe.AmaxCompute.MOST_RECENT);
            default -> Optional.empty();
        };
    }

    /** One line describing a recipe, in the configuration's terms (for tables and logs). */
    public static String describe(Fp8Recipe recipe) {
        String format = recipe.formats() == Fp8Recipe.Formats.HYBRID ? "hybrid (E4M3 forward, E5M2 gradients)"
                : "e4m3 (E4M3 forward and gradients)";
        return switch (recipe) {
            case Fp8Recipe.DelayedScaling d -> "fp8_recipe=delayed fp8_format=" + format + " fp8_margin=" + d.margin()
                    + " fp8_amax_history_len=" + d.historyLength() + " fp8_amax_compute_algo="
                    + (d.amaxCompute() == Fp8Recipe.AmaxCompute.MAX ? "max" : "most_recent");
            case Fp8Recipe.CurrentScaling c -> "fp8_recipe=current fp8_format=" + format;
        };
    }

    @Override
    public String toString() {
        return teName;
    }
}
