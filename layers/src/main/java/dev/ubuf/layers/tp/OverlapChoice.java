package dev.ubuf.layers.tp;

import dev.ubuf.exec.ExecutionSettings;
import dev.ubuf.layers.config.GemmName;
import dev.ubuf.layers.config.GemmOverlapConfig;
import dev.ubuf.layers.config.MethodTable;
import dev.ubuf.layers.config.UbMethod;
import dev.ubuf.layers.config.UbConfig;

import java.util.Objects;
import java.util.Optional;

/**
 * What carries one GEMM's communication, read from a {@link UbConfig}'s method table: a registered method variant
 * ({@code "ring"}, {@code "aggregate"}, {@code "pipeline:splits=4,margin=16"}, {@code "bulk"}), ubuf's planner
 * ({@code auto}), or the NCCL path when the GEMM is not overlapped.
 *
 * @param kind         which of the three
 * @param variant      the method variant for {@link Kind#METHOD}, else empty
 * @param settings     how the op executes: copy engines or SM copies ({@code use_ce})
 * @param gemmSmMargin SMs the layer's own GEMM beside a bulk reduce-scatter leaves free
 *                     ({@link GemmOverlapConfig#bulkGemmSmMargin}), 0 otherwise
 * @param why          the method table's reason, for logs
 */
public record OverlapChoice(Kind kind, Optional<String> variant, ExecutionSettings settings, int gemmSmMargin,
                            String why) {

    public enum Kind {
        /** A registered overlap method with options. */
        METHOD,
        /** The planner measures the candidates (the NCCL reference included) and runs the fastest. */
        PLANNER,
        /** Not overlapped: NCCL collectives and separate GEMMs, all on the caller's stream. */
        NCCL
    }

    public OverlapChoice {
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(variant, "variant");
        Objects.requireNonNull(settings, "settings");
        Objects.requireNonNull(why, "why");
        if ((kind == Kind.METHOD) != variant.isPresent()) {
            throw new IllegalArgumentException("a variant is given exactly for METHOD, got " + kind + " " + variant);
        }
        if (gemmSmMargin < 0) {
            throw new IllegalArgumentException("gemmSmMargin must be >= 0, got " + gemmSmMargin);
        }
    }

    public boolean overlapped() {
        return kind != Kind.NCCL;
    }

    /** Whether this is the bulk method (a collective beside an unrelated GEMM of the layer). */
    public boolean bulk() {
        return variant.filter(v -> v.equals("bulk") || v.startsWith("bulk:")).isPresent();
    }

    /** "ring", "pipeline:splits=4,margin=16", "auto" or "nccl". */
    public String label() {
        return switch (kind) {
            case METHOD -> variant.orElseThrow();
            case PLANNER -> "auto";
            case NCCL -> "nccl";
        };
    }

    /**
     * The choice for {@code gemm}: RING_EXCHANGE runs "ring" ("aggregate" with {@code aggregate}; "scatter:lowp=1" on
     * a reduce-scatter, TE's peer-to-peer schedule), PIPELINE runs
     * "pipeline" with the configured splits and, with {@code set_sm_margin}, {@code num_sm} SMs left to the
     * reduction; BULK runs "bulk" (a reduce-scatter with {@code use_ce} "bulk:stage=1"); AUTO runs the planner (the
     * planner measures GEMM methods only, so AUTO on a bulk collective runs bulk); a GEMM the table does not overlap,
     * or that {@code ub_name} leaves out, runs NCCL.
     * {@code use_ce} selects copy engines or SM copies. With {@code atomic_gemm}, RING_EXCHANGE and PIPELINE run
     * "atomic" (the atomic-gemm module's method; sm_90a only).
     */
    public static OverlapChoice resolve(UbConfig config, GemmName gemm) {
        Optional<MethodTable.Entry> entry = config.methodTable().entry(gemm);
        if (entry.isEmpty()) {
            return nccl("ub_name is " + config.ubName().map(GemmName.Layer::teName).orElse("?")
                    + ": only that layer's GEMMs are overlapped");
        }
        MethodTable.Entry e = entry.get();
        if (!e.overlapped()) {
            return nccl(e.reason());
        }
        GemmOverlapConfig c = e.options().orElseThrow();
        ExecutionSettings exec = ExecutionSettings.DEFAULT.withCopyEngine(c.useCe());
        GemmName.Role role = gemm.role(config.overlapRsDgrad());
        int margin = c.setSmMargin() ? c.numSm() : 0;
        UbMethod m = e.method();
        if (role == GemmName.Role.BULK_REDUCE_SCATTER) {
            // Only bulk can run a collective beside a GEMM it does not feed; AUTO there means bulk too. On the copy
            // engines it pulls the peers' rows by copies and sums locally (stage=1). (TE's other bulk collective, the
            // qkv/fc1 dgrad's all-gather, is never overlapped: the method table says the wgrad reads X in place.)
            String bulk = c.useCe() ? "bulk:stage=1" : "bulk";
            return new OverlapChoice(Kind.METHOD, Optional.of(bulk), exec, c.bulkGemmSmMargin(), e.reason());
        }
        if (c.atomicGemm() && (m == UbMethod.RING_EXCHANGE || m == UbMethod.PIPELINE)) {
            // The atomic GEMM module registers "atomic" in both families; on a GPU without sm_90a making the op
            // fails with the kernel's own message (KernelsUnavailableException).
            return new OverlapChoice(Kind.METHOD, Optional.of("atomic"), exec, 0, e.reason());
        }
        return switch (m) {
            case RING_EXCHANGE -> new OverlapChoice(Kind.METHOD, Optional.of(ringVariant(role, c)), exec, 0,
                    e.reason());
            case PIPELINE -> new OverlapChoice(Kind.METHOD, Optional.of("pipeline:splits=" + c.numSplits()
                    + ",margin=" + margin), exec, 0, e.reason());
            case AUTO -> new OverlapChoice(Kind.PLANNER, Optional.empty(), exec, 0, e.reason());
            case BULK, NONE -> throw new IllegalStateException(gemm + ": method " + m + " for a "
                    + role + " GEMM (the configuration checks should have rejected it)");
        };
    }

    /**
     * TE's ring_exchange on a reduce-scatter is its peer-to-peer schedule, ubuf's "scatter": every chunk's partial
     * goes to its owner, which sums them. Partials travel in the activation type, as TE's user buffers hold them:
     * each rank's partial is rounded once and their sum once more, in fp32, so at tp = 2 the layer computes what the
     * unoverlapped path (GEMM, then NCCL's reduce-scatter) computes; it also halves the bytes on the link. ubuf's
     * "ring" (running sums) would round once a hop, and on 4 H100s was the slower of the two on most shapes.
     */
    private static String ringVariant(GemmName.Role role, GemmOverlapConfig c) {
        if (role == GemmName.Role.REDUCE_SCATTER) {
            return "scatter:lowp=1";
        }
        return c.aggregate() ? "aggregate" : "ring";
    }

    private static OverlapChoice nccl(String why) {
        return new OverlapChoice(Kind.NCCL, Optional.empty(), ExecutionSettings.DEFAULT, 0, why);
    }
}
