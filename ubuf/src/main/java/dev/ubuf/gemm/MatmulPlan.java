package dev.ubuf.gemm;

import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * A GEMM ready to issue: its descriptors and the algorithm chosen among cuBLASLt's heuristic candidates for them (the
 * first, or the fastest when tuning), the operands' alignments and the workspace budget. Owned by a
 * {@link GemmRunner}'s cache and closed by it, or, when {@link #isProvisional()}, used for one call and closed.
 */
final class MatmulPlan implements AutoCloseable {

    /**
     * What a plan depends on: the spec, the alignment in bytes (a power of two, at most 256) of the caller's A, B and
     * C pointers, whether C is accumulated into (beta != 0, which makes the GEMM read C), and for FP8 GEMMs whether
     * the output is scaled (scale_d) and its amax computed (amax_d): those change which kernels cuBLASLt may choose.
     * Chunk views at odd offsets get their own plan instead of a kernel that assumes 16-byte loads. {@code alignBias}
     * is the bias vector's alignment when the epilogue adds one ({@link GemmRunner#checkBias}), 0 without a bias: the
     * epilogue is part of the matmul descriptor, so a GEMM with a bias is another kind than one without.
     */
    record Key(GemmSpec spec, int alignA, int alignB, int alignC, boolean accumulate, boolean fp8ScaleD,
               boolean fp8AmaxD, int alignBias) {
        Key {
            if ((fp8ScaleD || fp8AmaxD) && !spec.isFp8()) {
                throw new IllegalArgumentException("scale_d and amax_d belong to fp8 GEMMs, not to " + spec);
            }
            if (alignBias < 0) {
                throw new IllegalArgumentException("alignBias must be >= 0 (0: no bias), got " + alignBias);
            }
        }

        /** A key for a GEMM without a bias epilogue. */
        Key(GemmSpec spec, int alignA, int alignB, int alignC, boolean accumulate, boolean fp8ScaleD,
            boolean fp8AmaxD) {
            this(spec, alignA, alignB, alignC, accumulate, fp8ScaleD, fp8AmaxD, 0);
        }

        /** Whether the epilogue adds a bias vector. */
        boolean bias() {
            return alignBias > 0;
        }

        /** A key for a GEMM that is not FP8. */
        Key(GemmSpec spec, int alignA, int alignB, int alignC, boolean accumulate) {
            this(spec, alignA, alignB, alignC, accumulate, false, false);
        }

        /** A key for a GEMM that overwrites C (beta = 0) and is not FP8. */
        Key(GemmSpec spec, int alignA, int alignB, int alignC) {
            this(spec, alignA, alignB, alignC, false);
        }
    }

    /** One algorithm the heuristic proposed and that fits: its rank in the heuristic's list and its needs. */
    record Candidate(int heuristicRank, MemorySegment algo, long workspaceBytes, float wavesCount) {}

    /** Picks one of the candidates (in heuristic order, never empty). */
    @FunctionalInterface
    interface Chooser {
        GemmTuner.Choice choose(MatmulDescriptors descriptors, List<Candidate> candidates);
    }

    /**
     * Heuristic candidates asked for; the chooser picks among those that fit. Tuning times every one once per GEMM
     * kind, so a longer list costs only the first call (the choice is cached on disk).
     */
    static final int REQUESTED_ALGORITHMS = 24;

    private final Key key;
    private final MatmulDescriptors descriptors;
    private final Arena arena;
    private final MemorySegment algo;
    private final Candidate chosen;
    private final boolean provisional;

    private MatmulPlan(Key key, MatmulDescriptors descriptors, Arena arena, MemorySegment algo, Candidate chosen,
                       boolean provisional) {
        this.key = key;
        this.descriptors = descriptors;
        this.arena = arena;
        this.algo = algo;
        this.chosen = chosen;
        this.provisional = provisional;
    }

    /**
     * Creates the descriptors, asks cuBLASLt for up to {@value #REQUESTED_ALGORITHMS} algorithms within
     * {@code maxWorkspaceBytes}, and keeps the one {@code chooser} picks.
     *
     * @throws GemmException when no algorithm fits
     */
    static MatmulPlan choose(CublasLt library, long handle, Key key, long maxWorkspaceBytes, Chooser chooser) {
        return choose(library, handle, key, null, maxWorkspaceBytes, chooser);
    }

    /**
     * {@link #choose(CublasLt, long, Key, long, Chooser)} for an FP8 GEMM: the heuristic sees the scale and amax
     * pointers of {@code scales} (null for a GEMM that is not FP8), as cuBLASLt's kernel choice may depend on them.
     */
    static MatmulPlan choose(CublasLt library, long handle, Key key, Gemm.Fp8Scales scales, long maxWorkspaceBytes,
                             Chooser chooser) {
        return choose(library, handle, key, scales, 0, maxWorkspaceBytes, chooser);
    }

    /**
     * As {@link #choose(CublasLt, long, Key, Gemm.Fp8Scales, long, Chooser)}, with the epilogue adding the bias vector
     * at {@code bias} when the key has one (bound while the candidates are chosen and timed).
     */
    static MatmulPlan choose(CublasLt library, long handle, Key key, Gemm.Fp8Scales scales, long bias,
                             long maxWorkspaceBytes, Chooser chooser) {
        if (key.bias() != (bias != 0)) {
            throw new IllegalArgumentException("the key " + (key.bias() ? "has" : "has no") + " bias, the call "
                    + (bias != 0 ? "gives one" : "gives none"));
        }
        MatmulDescriptors d = MatmulDescriptors.create(library, key.spec(), key.bias());
        Arena arena = Arena.ofShared(); // the chosen algorithm lives as long as the plan
        try {
            if (scales != null) {
                d.bindFp8(scales);
            }
            if (key.bias()) {
                d.bindBias(bias);
            }
            ColumnMajorCall call = d.call();
            try (Preference p = new Preference(library, library.preferenceCreate());
                 Arena scratch = Arena.ofConfined()) {
                long preference = p.handle();
                library.preferenceSetUInt64(preference, CublasLt.CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                        maxWorkspaceBytes);
                // cuBLASLt's A/B are the caller's operands in swapped order: give each its own pointer's alignment.
                int firstAlign = call.first() == ColumnMajorCall.Operand.A ? key.alignA() : key.alignB();
                int secondAlign = call.second() == ColumnMajorCall.Operand.A ? key.alignA() : key.alignB();
                library.preferenceSetUInt32(preference, CublasLt.CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, firstAlign);
                library.preferenceSetUInt32(preference, CublasLt.CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, secondAlign);
                library.preferenceSetUInt32(preference, CublasLt.CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key.alignC());
                library.preferenceSetUInt32(preference, CublasLt.CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key.alignC());

                MemorySegment results = scratch.allocate(CublasLt.HEURISTIC_RESULT, REQUESTED_ALGORITHMS);
                int returned = library.algoGetHeuristic(handle, d.matmulDesc(), d.aLayout(), d.bLayout(),
                        d.cLayout(), d.dLayout(), preference, results, REQUESTED_ALGORITHMS);
                List<Candidate> candidates = new ArrayList<>(returned);
                for (int i = 0; i < returned; i++) {
                    MemorySegment r = results.asSlice(i * CublasLt.HEURISTIC_RESULT_BYTES, CublasLt.HEURISTIC_RESULT_BYTES);
                    long workspace = r.get(JAVA_LONG, CublasLt.HEURISTIC_WORKSPACE_SIZE_OFFSET);
                    int state = r.get(JAVA_INT, CublasLt.HEURISTIC_STATE_OFFSET);
                    if (state == CublasLt.CUBLAS_STATUS_SUCCESS && workspace <= maxWorkspaceBytes) {
                        candidates.add(new Candidate(i, r.asSlice(0, CublasLt.MATMUL_ALGO_BYTES), workspace,
                                r.get(JAVA_FLOAT, CublasLt.HEURISTIC_WAVES_COUNT_OFFSET)));
                    }
                }
                if (candidates.isEmpty()) {
                    throw new GemmException("cuBLASLt has no algorithm for " + key.spec() + " with pointer "
                            + "alignments A=" + key.alignA() + ", B=" + key.alignB() + ", C=" + key.alignC()
                            + " bytes" + (key.bias() ? ", a bias epilogue (bias aligned to " + key.alignBias()
                            + " bytes)" : "") + " and a workspace of " + maxWorkspaceBytes + " bytes (" + returned
                            + " candidates returned)");
                }
                GemmTuner.Choice choice = chooser.choose(d, List.copyOf(candidates));
                Candidate chosen;
                if (choice.outside() != null) {
                    chosen = choice.outside();
                } else if (choice.index() < 0 || choice.index() >= candidates.size()) {
                    throw new IllegalStateException("chose candidate " + choice.index() + " of " + candidates.size());
                } else {
                    chosen = candidates.get(choice.index());
                }
                MemorySegment algo = arena.allocate(CublasLt.MATMUL_ALGO);
                algo.copyFrom(chosen.algo());
                return new MatmulPlan(key, d, arena, algo,
                        new Candidate(chosen.heuristicRank(), algo, chosen.workspaceBytes(), chosen.wavesCount()),
                        !choice.settled());
            }
        } catch (RuntimeException e) {
            arena.close();
            try {
                d.close();
            } catch (RuntimeException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
    }

    /** The heuristic preference lives only while the algorithm is chosen; try-with-resources keeps both errors. */
    private record Preference(CublasLt library, long handle) implements AutoCloseable {
        @Override
        public void close() {
            library.preferenceDestroy(handle);
        }
    }

    Key key() {
        return key;
    }

    MatmulDescriptors descriptors() {
        return descriptors;
    }

    /** The chosen cublasLtMatmulAlgo_t (64 bytes, owned by this plan). */
    MemorySegment algo() {
        return algo;
    }

    /** Where the chosen algorithm stood in the heuristic's list (0 = its first choice). */
    int heuristicRank() {
        return chosen.heuristicRank();
    }

    /** Workspace the chosen algorithm needs (at most the runner's). */
    long algoWorkspaceBytes() {
        return chosen.workspaceBytes();
    }

    /** cuBLASLt's predicted device utilization (1.0 = one full wave). */
    float wavesCount() {
        return chosen.wavesCount();
    }

    /**
     * Whether the choice is only for now: tuning was on but could not time (the caller's stream was capturing a
     * graph), so the runner uses this plan once and chooses again on the next call.
     */
    boolean isProvisional() {
        return provisional;
    }

    @Override
    public void close() {
        try {
            descriptors.close();
        } finally {
            arena.close();
        }
    }
}
