package dev.ubuf.layers.config;

import java.util.Collection;
import java.util.Collections;
import java.util.EnumSet;
import java.util.Objects;
import java.util.OptionalInt;
import java.util.Set;

/**
 * One GEMM's overlap settings, every key filled in: the configured value where one was given
 * ({@link #explicitKeys()}), Transformer Engine's default otherwise.
 *
 * <p>TE's defaults ({@code initialize_ub}'s {@code get_default_config}) follow the GEMM's default method, not the
 * configured one: ring_exchange GEMMs get {@code num_sm=1, cga_size=1, set_sm_margin=false, num_splits=tp}, all
 * others {@code num_sm=16, cga_size=2, set_sm_margin=true, num_splits=4}; everywhere {@code aggregate=false,
 * use_ce=true, atomic_gemm=false}, comm streams at the device's greatest priority and GEMM streams at its least.
 * qkv/fc1 dgrad configured with ring_exchange or pipeline take that method's defaults, as TE moves them to that
 * method's list. TE's {@code fp8_buf} default (true for the all-gather GEMMs) applies only to FP8 runs: with
 * {@code fp8: true} it is true for every GEMM whose communication is an all-gather (qkv/fc1 fprop, proj/fc2 dgrad, and
 * qkv/fc1 dgrad's bulk all-gather unless {@code ub_overlap_rs_dgrad} makes those reduce-scatters), false otherwise.
 *
 * @param method             {@link UbMethod#NONE} only for proj/fc2 wgrad, which have no communication
 * @param numSm              SMs the communication kernels may use (TE's {@code num_sm}); also the GEMM's SM
 *                           margin when {@code setSmMargin}
 * @param cgaSize            thread-block cluster size of the communication kernels: 1, 2, 4 or 8
 * @param numSplits          pipeline splits (ring_exchange always runs tp steps, so it is tp there)
 * @param setSmMargin        the GEMM leaves {@code numSm} SMs free for the communication kernels
 * @param aggregate          ring_exchange all-gather moves two chunks per step (after a pair swap; even tp)
 * @param useCe              copies go on the copy engines (false: SM copy kernels)
 * @param atomicGemm         one GEMM kernel that waits and signals per chunk: ring_exchange and pipeline GEMMs run
 *                           ubuf's "atomic" method (sm_90a GPUs only; creating the op fails elsewhere)
 * @param fp8Buf             FP8 user buffer: the all-gather moves the FP8-quantized shard (half of bf16's bytes);
 *                           only with {@code fp8: true} and only on all-gather GEMMs (the configuration checks)
 * @param commPriority       stream priority of the communication streams; empty: the device's greatest
 * @param gemmPriority       stream priority of the GEMM streams; empty: the device's least
 * @param pipelineRsOverlapFirstGemm TE's launch order variant of the pipelined reduce-scatter; not supported
 *                           yet, always false
 * @param explicitKeys       the keys that were configured rather than defaulted
 */
public record GemmOverlapConfig(
        GemmName gemm,
        UbMethod method,
        int numSm,
        int cgaSize,
        int numSplits,
        boolean setSmMargin,
        boolean aggregate,
        boolean useCe,
        boolean atomicGemm,
        boolean fp8Buf,
        OptionalInt commPriority,
        OptionalInt gemmPriority,
        boolean pipelineRsOverlapFirstGemm,
        Set<GemmKey> explicitKeys) {

    /** TE's default SMs for the communication kernels of the non-ring methods. */
    public static final int TE_DEFAULT_NUM_SM = 16;
    /** TE's default cluster size of the non-ring methods. */
    public static final int TE_DEFAULT_CGA_SIZE = 2;
    /** TE's default pipeline splits. */
    public static final int TE_DEFAULT_NUM_SPLITS = 4;

    public GemmOverlapConfig {
        Objects.requireNonNull(gemm, "gemm");
        Objects.requireNonNull(method, "method");
        Objects.requireNonNull(commPriority, "commPriority");
        Objects.requireNonNull(gemmPriority, "gemmPriority");
        Objects.requireNonNull(explicitKeys, "explicitKeys");
        String key = gemm.teName() + ".";
        if ((method == UbMethod.NONE) != (gemm.teDefaultMethod() == UbMethod.NONE)) {
            throw new IllegalArgumentException(key + "method: " + method + " is not possible for " + gemm
                    + " (none is the method of proj_wgrad and fc2_wgrad only, which have no communication)");
        }
        String problem = numSmProblem(numSm);
        if (problem == null) {
            problem = cgaSizeProblem(cgaSize);
        }
        if (problem == null) {
            problem = numSplitsProblem(numSplits);
        }
        if (problem != null) {
            throw new IllegalArgumentException(key + problem);
        }
        if (atomicGemm && method != UbMethod.RING_EXCHANGE && method != UbMethod.PIPELINE) {
            throw new IllegalArgumentException(key + GemmKey.ATOMIC_GEMM + ": true applies to ring_exchange and "
                    + "pipeline GEMMs (it runs ubuf's \"atomic\" method on the sm_90a atomic GEMM), not to " + method
                    + (method == UbMethod.AUTO ? " (the planner already measures the atomic method where the GPU"
                    + " can run it)" : ""));
        }
        if (pipelineRsOverlapFirstGemm) {
            throw new IllegalArgumentException(key + GemmKey.PIPELINE_RS_OVERLAP_FIRST_GEMM + ": "
                    + notSupportedYet(GemmKey.PIPELINE_RS_OVERLAP_FIRST_GEMM));
        }
        explicitKeys = unmodifiableEnumSet(explicitKeys);
    }

    /**
     * TE's defaults for {@code gemm} when its entry is absent, for {@code tp} ranks. The method is the GEMM's TE
     * default ({@link GemmName#teDefaultMethod()}).
     */
    public static GemmOverlapConfig teDefault(GemmName gemm, int tp) {
        return teDefault(gemm, tp, false, false);
    }

    /** TE's defaults with FP8 on or off ({@code fp8_buf} follows; see the class comment). */
    public static GemmOverlapConfig teDefault(GemmName gemm, int tp, boolean fp8, boolean overlapRsDgrad) {
        return defaults(gemm, gemm.teDefaultMethod(), gemm.teDefaultMethod(), tp, teFp8Buf(gemm, fp8, overlapRsDgrad));
    }

    /** TE's fp8_buf default: FP8 on and the GEMM's communication an all-gather. */
    static boolean teFp8Buf(GemmName gemm, boolean fp8, boolean overlapRsDgrad) {
        return fp8 && allGatherRole(gemm, overlapRsDgrad);
    }

    /** Whether the GEMM's communication is an all-gather (overlapped or bulk): TE's layers_all_gather_overlap. */
    static boolean allGatherRole(GemmName gemm, boolean overlapRsDgrad) {
        GemmName.Role role = gemm.role(overlapRsDgrad);
        return role == GemmName.Role.ALL_GATHER || role == GemmName.Role.BULK_ALL_GATHER;
    }

    /** Defaults of the method {@code basis} (see the class comment), for a GEMM that runs {@code method}. */
    static GemmOverlapConfig defaults(GemmName gemm, UbMethod method, UbMethod basis, int tp,
                                      boolean fp8Buf) {
        boolean ring = basis == UbMethod.RING_EXCHANGE;
        return new GemmOverlapConfig(gemm, method,
                ring ? 1 : TE_DEFAULT_NUM_SM,
                ring ? 1 : TE_DEFAULT_CGA_SIZE,
                ring ? tp : TE_DEFAULT_NUM_SPLITS,
                !ring,
                false, true, false, fp8Buf,
                OptionalInt.empty(), OptionalInt.empty(), false, Set.of());
    }

    /**
     * SMs the layer's own GEMM beside this bulk reduce-scatter (a qkv/fc1 wgrad's) leaves free: {@code num_sm} with
     * {@code set_sm_margin}, but none on the copy engines unless {@code set_sm_margin} was configured. TE's default
     * margin is for its SM-driven bulk kernels; on the copy engines the peers' rows are pulled by copies and SMs are
     * needed only for a short local sum, and the margin slowed the GEMM for its whole length (a bulk collective beside
     * the dgrad GEMM at 8B, tp 2 on H100s: 1.31 ms instead of 1.05 alone). With {@code use_ce: false} the
     * collective's kernels need the SMs and the margin stays. (The qkv/fc1 dgrad, TE's bulk all-gather, gathers
     * nothing here: its wgrad reads X where the fprop gathered it.)
     */
    public int bulkGemmSmMargin() {
        if (useCe() && !isExplicit(GemmKey.SET_SM_MARGIN)) {
            return 0;
        }
        return setSmMargin() ? numSm() : 0;
    }

    /** Whether {@code key} was configured rather than defaulted. */
    public boolean isExplicit(GemmKey key) {
        return explicitKeys.contains(key);
    }

    /** The settings that matter for {@link #method()}, as {@code key=value} pairs for tables and logs. */
    public String options() {
        StringBuilder s = new StringBuilder();
        switch (method) {
            case RING_EXCHANGE -> {
                add(s, GemmKey.AGGREGATE, aggregate);
                add(s, GemmKey.USE_CE, useCe);
                add(s, GemmKey.NUM_SM, numSm);
                add(s, GemmKey.CGA_SIZE, cgaSize);
                add(s, GemmKey.SET_SM_MARGIN, setSmMargin);
            }
            case PIPELINE -> {
                add(s, GemmKey.NUM_SPLITS, numSplits);
                add(s, GemmKey.NUM_SM, numSm);
                add(s, GemmKey.CGA_SIZE, cgaSize);
                add(s, GemmKey.SET_SM_MARGIN, setSmMargin);
            }
            case BULK -> {
                add(s, GemmKey.NUM_SM, numSm);
                add(s, GemmKey.CGA_SIZE, cgaSize);
                add(s, GemmKey.SET_SM_MARGIN, setSmMargin);
            }
            case AUTO -> {
                add(s, GemmKey.NUM_SPLITS, numSplits);
                add(s, GemmKey.AGGREGATE, aggregate);
                add(s, GemmKey.USE_CE, useCe);
                add(s, GemmKey.NUM_SM, numSm);
                add(s, GemmKey.CGA_SIZE, cgaSize);
                add(s, GemmKey.SET_SM_MARGIN, setSmMargin);
            }
            case NONE -> {
            }
        }
        if (fp8Buf) {
            add(s, GemmKey.FP8_BUF, true);
        }
        commPriority.ifPresent(p -> add(s, GemmKey.COMM_PRIORITY, p));
        gemmPriority.ifPresent(p -> add(s, GemmKey.GEMM_PRIORITY, p));
        return s.toString();
    }

    private static void add(StringBuilder s, GemmKey key, Object value) {
        s.append(s.isEmpty() ? "" : " ").append(key.teName()).append('=').append(value);
    }

    static String numSmProblem(int numSm) {
        return numSm < 0 ? "num_sm must be >= 0, got " + numSm : null;
    }

    // Thread-block clusters of the communication kernels: 8 is the portable maximum on Hopper.
    static String cgaSizeProblem(int cgaSize) {
        return cgaSize == 1 || cgaSize == 2 || cgaSize == 4 || cgaSize == 8 ? null
                : "cga_size must be 1, 2, 4 or 8 (a thread-block cluster size; 8 is the portable maximum), got "
                + cgaSize;
    }

    static String numSplitsProblem(int numSplits) {
        return numSplits < 1 ? "num_splits must be >= 1, got " + numSplits : null;
    }

    /** Why a {@code true} value of an unsupported key is rejected. */
    static String notSupportedYet(GemmKey key) {
        return switch (key) {
            case PIPELINE_RS_OVERLAP_FIRST_GEMM -> "true is not supported yet: ubuf's pipeline issues each split's"
                    + " reduce-scatter right after that split's GEMM; false is accepted";
            default -> throw new IllegalArgumentException(key + " is supported");
        };
    }

    private static Set<GemmKey> unmodifiableEnumSet(Collection<GemmKey> keys) {
        EnumSet<GemmKey> copy = EnumSet.noneOf(GemmKey.class);
        for (GemmKey k : keys) {
            copy.add(Objects.requireNonNull(k, "explicit key"));
        }
        return Collections.unmodifiableSet(copy);
    }
}
