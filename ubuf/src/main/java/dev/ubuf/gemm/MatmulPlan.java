package dev.ubuf.gemm;

import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A GEMM ready to issue: its descriptors and the algorithm cuBLASLt's heuristic ranked first for them, the operands'
 * alignments and the workspace budget. Owned by a {@link GemmRunner}'s cache and closed by it.
 */
final class MatmulPlan implements AutoCloseable {

    /**
     * What a plan depends on: the spec, the alignment in bytes (a power of two, at most 256) of the caller's A, B and
     * C pointers, and whether C is accumulated into (beta != 0, which makes the GEMM read C). Chunk views at odd
     * offsets get their own plan instead of a kernel that assumes 16-byte loads.
     */
    record Key(GemmSpec spec, int alignA, int alignB, int alignC, boolean accumulate) {
        /** A key for a GEMM that overwrites C (beta = 0). */
        Key(GemmSpec spec, int alignA, int alignB, int alignC) {
            this(spec, alignA, alignB, alignC, false);
        }
    }

    /** Heuristic candidates asked for; the best one that fits is taken. */
    static final int REQUESTED_ALGORITHMS = 8;

    private final Key key;
    private final MatmulDescriptors descriptors;
    private final MemorySegment algo;
    private final long algoWorkspaceBytes;
    private final float wavesCount;

    private MatmulPlan(Key key, MatmulDescriptors descriptors, MemorySegment algo, long algoWorkspaceBytes,
                       float wavesCount) {
        this.key = key;
        this.descriptors = descriptors;
        this.algo = algo;
        this.algoWorkspaceBytes = algoWorkspaceBytes;
        this.wavesCount = wavesCount;
    }

    /**
     * Creates the descriptors and asks cuBLASLt for the best algorithm within {@code maxWorkspaceBytes}. The algorithm
     * is copied into {@code arena}, which must outlive the plan.
     */
    static MatmulPlan choose(CublasLt library, long handle, Key key, long maxWorkspaceBytes, Arena arena) {
        MatmulDescriptors d = MatmulDescriptors.create(library, key.spec());
        try {
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
                        d.cLayout(), d.cLayout(), preference, results, REQUESTED_ALGORITHMS);
                for (int i = 0; i < returned; i++) {
                    MemorySegment r = results.asSlice(i * CublasLt.HEURISTIC_RESULT_BYTES, CublasLt.HEURISTIC_RESULT_BYTES);
                    long workspace = r.get(JAVA_LONG, CublasLt.HEURISTIC_WORKSPACE_SIZE_OFFSET);
                    int state = r.get(JAVA_INT, CublasLt.HEURISTIC_STATE_OFFSET);
                    if (state == CublasLt.CUBLAS_STATUS_SUCCESS && workspace <= maxWorkspaceBytes) {
                        MemorySegment algo = arena.allocate(CublasLt.MATMUL_ALGO);
                        algo.copyFrom(r.asSlice(0, CublasLt.MATMUL_ALGO_BYTES));
                        float waves = r.get(JAVA_FLOAT,
                                CublasLt.HEURISTIC_WAVES_COUNT_OFFSET);
                        return new MatmulPlan(key, d, algo, workspace, waves);
                    }
                }
                throw new GemmException("cuBLASLt has no algorithm for " + key.spec() + " with pointer alignments A="
                        + key.alignA() + ", B=" + key.alignB() + ", C=" + key.alignC() + " bytes and a workspace of "
                        + maxWorkspaceBytes + " bytes (" + returned + " candidates returned)");
            }
        } catch (RuntimeException e) {
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

    /** The chosen cublasLtMatmulAlgo_t (64 bytes, in the runner's arena). */
    MemorySegment algo() {
        return algo;
    }

    /** Workspace the chosen algorithm needs (at most the runner's). */
    long algoWorkspaceBytes() {
        return algoWorkspaceBytes;
    }

    /** cuBLASLt's predicted device utilization (1.0 = one full wave). */
    float wavesCount() {
        return wavesCount;
    }

    @Override
    public void close() {
        descriptors.close();
    }
}
