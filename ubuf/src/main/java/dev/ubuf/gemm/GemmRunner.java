package dev.ubuf.gemm;

import static java.lang.foreign.ValueLayout.JAVA_FLOAT;

import dev.ubuf.tensor.DType;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Issues row-major GEMMs ({@link GemmSpec}) through cuBLASLt onto a caller's stream, with one workspace.
 *
 * <p>Plans (descriptors plus the chosen algorithm) are cached per spec, per alignment of the A, B and C pointers (each
 * the largest power of two dividing the address, capped at 256) and per accumulation (beta != 0), so the first run of
 * a shape pays for the heuristic, and for timing the candidates when a {@link GemmTuner} tunes, and later runs only
 * enqueue. Pointers must be aligned to their element size; any further alignment is used, not required: 16-byte
 * aligned pointers and leading dimensions (ld * element size a multiple of 16) get the fast vectorized kernels,
 * anything less gets slower ones. Device buffers from cuMemAlloc are 256-byte aligned.
 *
 * <p>Workspace: {@link #RECOMMENDED_WORKSPACE_BYTES} (32 MiB), which Hopper's fastest kernels want; less works with
 * fewer algorithms, 0 with none that need one. The runner's workspace is used by every GEMM it issues, so GEMMs that
 * may run at the same time on different streams need different runners (runners may share a handle). The caller owns
 * the workspace and frees it after closing the runner and after the GPU finished the GEMMs.
 *
 * <p>Not thread-safe; use it, like its handle, from one thread at a time with the handle's CUDA context current.
 * Close before the handle. {@link #close()} destroys the cached plans, last created first; a second close does nothing.
 */
public final class GemmRunner implements AutoCloseable {
    /** The workspace cuBLASLt wants on Hopper for its best kernels: 32 MiB. */
    public static final long RECOMMENDED_WORKSPACE_BYTES = 32L << 20;
    /** Required alignment of the workspace's address. */
    public static final int WORKSPACE_ALIGNMENT = 256;
    /** The largest alignment a plan distinguishes (cuBLASLt's default minimum-alignment preference). */
    static final int MAX_TRACKED_ALIGNMENT = 256;

    private final CublasLtHandle handle;
    private final long workspace;
    private final long workspaceBytes;
    private final GemmTuner tuner;
    private final TuningDevice device; // what the tuner files choices under; null when it never tunes
    private final Map<MatmulPlan.Key, MatmulPlan> plans = new LinkedHashMap<>();
    private boolean closed;

    /**
     * A runner whose GEMMs use the heuristic's first algorithm (no tuning).
     *
     * @param handle         the cuBLASLt handle of the device the GEMMs run on; it must stay open while this runner is
     * @param workspace      device address of the workspace, 256-byte aligned (0 only when workspaceBytes is 0)
     * @param workspaceBytes size of the workspace; see {@link #RECOMMENDED_WORKSPACE_BYTES}
     */
    public GemmRunner(CublasLtHandle handle, long workspace, long workspaceBytes) {
        this(handle, workspace, workspaceBytes, GemmTuner.disabled(), null);
    }

    /** A runner that lets {@code tuner} choose each GEMM's algorithm, filed under {@code device}. */
    GemmRunner(CublasLtHandle handle, long workspace, long workspaceBytes, GemmTuner tuner, TuningDevice device) {
        Objects.requireNonNull(handle, "handle");
        Objects.requireNonNull(tuner, "tuner");
        if (tuner.settings().enabled()) {
            Objects.requireNonNull(device, "device");
        }
        handle.assertOpen();
        checkWorkspace(workspace, workspaceBytes);
        this.handle = handle;
        this.workspace = workspace;
        this.workspaceBytes = workspaceBytes;
        this.tuner = tuner;
        this.device = device;
    }

    /**
     * Enqueues {@code C = alpha * op(A) * op(B) + beta * C} on {@code stream} (D is C: the result overwrites C in place).
     * With beta = 0, C's old contents are not read (NaNs in it do not propagate). Returns once the GEMM is enqueued;
     * the buffers must stay valid until the stream has run it.
     *
     * @param a      device address of A's first element ({@code spec.aBytes()} bytes from there)
     * @param b      device address of B's first element ({@code spec.bBytes()} bytes from there)
     * @param c      device address of C's first element ({@code spec.cBytes()} bytes from there)
     * @param stream a CUstream (cudaStream_t), 0 for the legacy default stream
     * @throws IllegalArgumentException for a null or misaligned pointer, before any cuBLASLt call
     * @throws IllegalStateException    if this runner or its handle is closed
     * @throws GemmException            if cuBLASLt has no algorithm for the GEMM or a call fails
     */
    public void run(GemmSpec spec, long a, long b, long c, float alpha, float beta, long stream) {
        run(spec, a, b, c, alpha, beta, null, stream, CandidateBench.NONE);
    }

    /**
     * An FP8 GEMM ({@link GemmSpec#isFp8()}): {@code D = scaleD * (alpha * scaleA * scaleB * op(A) * op(B) + beta * C)},
     * with {@code amaxD} (when given) set to the largest |value| before the scaleD multiplication. The scales are
     * read on the device when the GEMM runs, so they may be written by kernels earlier on the stream.
     *
     * @param scales device pointers of the fp32 scales and amax; scaleD and amaxD only with an FP8 output
     * @throws IllegalArgumentException as {@link #run(GemmSpec, long, long, long, float, float, long)}, and for scales
     *                                  that do not fit the spec, or beta != 0 with an FP8 output
     */
    public void run(GemmSpec spec, long a, long b, long c, float alpha, float beta, Gemm.Fp8Scales scales,
                    long stream) {
        run(spec, a, b, c, alpha, beta, scales, stream, CandidateBench.NONE);
    }

    /**
     * {@link #run(GemmSpec, long, long, long, float, float, long)}; the first run of a GEMM kind lets the tuner time
     * the candidates on {@code bench} (synchronously, before this GEMM is enqueued).
     */
    void run(GemmSpec spec, long a, long b, long c, float alpha, float beta, long stream, CandidateBench bench) {
        run(spec, a, b, c, alpha, beta, null, stream, bench);
    }

    /**
     * Chooses (and, with a tuner, times) the algorithm of this GEMM kind now, without enqueuing it, so a caller can
     * tune every GEMM of a call before any of the call's work is on the GPU: tuning waits for its own stream, and
     * that stream can sit behind the call's own cross-rank waits in a shared hardware queue.
     */
    void prepare(GemmSpec spec, long a, long b, long c, float beta, CandidateBench bench) {
        prepare(spec, a, b, c, beta, null, bench);
    }

    /** As {@link #prepare(GemmSpec, long, long, long, float, CandidateBench)}, with an FP8 GEMM's scales bound while
     *  its candidates are chosen and timed (null for none: cuBLASLt then reads scale 1). */
    void prepare(GemmSpec spec, long a, long b, long c, float beta, Gemm.Fp8Scales scales, CandidateBench bench) {
        prepare(spec, a, b, c, c, beta, scales, bench);
    }

    /** As {@link #prepare(GemmSpec, long, long, long, float, Gemm.Fp8Scales, CandidateBench)} for a GEMM that reads C
     *  at {@code cIn} (its addend) and writes D at {@code c}: the plan kept is the one {@link #run} with the same two
     *  addresses looks up. */
    void prepare(GemmSpec spec, long a, long b, long c, long cIn, float beta, Gemm.Fp8Scales scales,
                 CandidateBench bench) {
        prepare(spec, a, b, c, cIn, beta, scales, 0, bench);
    }

    /** As {@link #prepare(GemmSpec, long, long, long, long, float, Gemm.Fp8Scales, CandidateBench)} for a GEMM whose
     *  epilogue adds the bias vector at {@code bias} (0: none; see {@link #checkBias}). */
    void prepare(GemmSpec spec, long a, long b, long c, long cIn, float beta, Gemm.Fp8Scales scales, long bias,
                 CandidateBench bench) {
        MatmulPlan.Key key = checkedKey(spec, a, b, c, cIn, beta, scales, bias);
        if (plans.containsKey(key)) {
            return;
        }
        MatmulPlan plan = choosePlan(key, a, b, c, beta, scales, bias, bench,
                (algos, timer, check) -> tuner.choose(device, key, algos, timer, check));
        if (plan.isProvisional()) {
            plan.close();
        } else {
            plans.put(key, plan);
        }
    }

    /** What prepare and retune check before any cuBLASLt call, and the key their plan is kept under. */
    private MatmulPlan.Key checkedKey(GemmSpec spec, long a, long b, long c, float beta, Gemm.Fp8Scales scales) {
        return checkedKey(spec, a, b, c, c, beta, scales, 0);
    }

    private MatmulPlan.Key checkedKey(GemmSpec spec, long a, long b, long c, long cIn, float beta,
                                      Gemm.Fp8Scales scales, long bias) {
        assertOpen();
        checkOperands(spec, a, b, c);
        checkAddend(cIn);
        checkBias(spec, bias);
        if (scales != null) {
            checkFp8(spec, beta, scales);
        }
        return new MatmulPlan.Key(spec, alignmentOf(a), alignmentOf(b), cAlignment(c, cIn), beta != 0f, false, false,
                biasAlignment(bias));
    }

    /** The key's alignBias: the bias pointer's alignment, 0 without a bias. */
    private static int biasAlignment(long bias) {
        return bias == 0 ? 0 : alignmentOf(bias);
    }

    /**
     * A bias epilogue adds a vector of C's type, which must be BF16 or FP16: cuBLASLt wants the bias in D's type
     * except for FP8 kernels writing fp32 or fp8, whose bias is 16-bit (those are not offered here), and fp32 sums
     * are partials that take no bias. The pointer is aligned to its element size. 0 means no bias.
     */
    static void checkBias(GemmSpec spec, long bias) {
        if (bias == 0) {
            return;
        }
        if (spec.cType() != DType.BF16 && spec.cType() != DType.FP16) {
            throw new IllegalArgumentException("a bias epilogue needs a bf16 or fp16 result (the bias in its type),"
                    + " this GEMM writes " + spec.cType().shortName() + ": add the bias with its own kernel");
        }
        checkPointer("bias", bias, spec.cType());
    }

    /** C's alignment as cuBLASLt sees it when C (read) and D (written) may be two matrices: the lower of the two. */
    private static int cAlignment(long c, long cIn) {
        return Math.min(alignmentOf(c), alignmentOf(cIn));
    }

    private static void checkAddend(long cIn) {
        if (cIn == 0) {
            throw new IllegalArgumentException("a GEMM's C operand is a null pointer");
        }
    }

    /** A plan for {@code key}, its candidates timed (alpha 1, the caller's beta) on {@code bench} as the call says. */
    private MatmulPlan choosePlan(MatmulPlan.Key key, long a, long b, long c, float beta, Gemm.Fp8Scales scales,
                                  long bias, CandidateBench bench, TunerCall tunerCall) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment alphaHost = arena.allocateFrom(JAVA_FLOAT, 1f);
            MemorySegment betaHost = arena.allocateFrom(JAVA_FLOAT, beta);
            return MatmulPlan.choose(handle.library(), handle.address(), key, scales, bias, workspaceBytes,
                    chooser(key, a, b, c, alphaHost, betaHost, bench, tunerCall));
        }
    }

    void run(GemmSpec spec, long a, long b, long c, float alpha, float beta, Gemm.Fp8Scales scales, long stream,
             CandidateBench bench) {
        run(spec, a, b, c, c, alpha, beta, scales, stream, bench);
    }

    /** D = alpha A B + beta C with D at {@code c} and C read at {@code cIn} (the same address but for an addend). */
    void run(GemmSpec spec, long a, long b, long c, long cIn, float alpha, float beta, Gemm.Fp8Scales scales,
             long stream, CandidateBench bench) {
        run(spec, a, b, c, cIn, alpha, beta, scales, 0, stream, bench);
    }

    /** As {@link #run(GemmSpec, long, long, long, long, float, float, Gemm.Fp8Scales, long, CandidateBench)}, the
     *  epilogue adding the bias vector at {@code bias} to every row of C (0: none; see {@link #checkBias}). */
    void run(GemmSpec spec, long a, long b, long c, long cIn, float alpha, float beta, Gemm.Fp8Scales scales,
             long bias, long stream, CandidateBench bench) {
        assertOpen();
        checkOperands(spec, a, b, c);
        checkAddend(cIn);
        checkBias(spec, bias);
        checkFp8(spec, beta, scales);
        MatmulPlan.Key key = new MatmulPlan.Key(spec, alignmentOf(a), alignmentOf(b), cAlignment(c, cIn), beta != 0f,
                scales != null && scales.scaleD() != 0, scales != null && scales.amaxD() != 0, biasAlignment(bias));
        try (Arena arena = Arena.ofConfined()) {
            // Host pointer mode: cuBLASLt reads alpha and beta before cublasLtMatmul returns.
            MemorySegment alphaHost = arena.allocateFrom(JAVA_FLOAT, alpha);
            MemorySegment betaHost = arena.allocateFrom(JAVA_FLOAT, beta);
            MatmulPlan plan = plans.get(key);
            boolean once = false;
            if (plan == null) {
                plan = MatmulPlan.choose(handle.library(), handle.address(), key, scales, bias, workspaceBytes,
                        chooser(key, a, b, c, alphaHost, betaHost, bench));
                once = plan.isProvisional();
                if (!once) {
                    plans.put(key, plan);
                }
            }
            try {
                MatmulDescriptors d = plan.descriptors();
                if (scales != null) {
                    d.bindFp8(scales); // this call's scale tensors; the cached plan may have seen others
                }
                if (bias != 0) {
                    d.bindBias(bias);
                }
                ColumnMajorCall call = d.call();
                handle.library().matmul(handle.address(), d.matmulDesc(), alphaHost,
                        call.firstAddress(a, b), d.aLayout(), call.secondAddress(a, b), d.bLayout(), betaHost,
                        d.cAddress(cIn), d.cLayout(), c, d.dLayout(), plan.algo(), workspace, workspaceBytes, stream);
            } finally {
                if (once) {
                    plan.close(); // cuBLASLt has read the descriptors and the algorithm when cublasLtMatmul returns
                }
            }
        }
    }

    /** Hands the candidates to the tuner, with a way to time them on the operands' own addresses and layout. */
    private MatmulPlan.Chooser chooser(MatmulPlan.Key key, long a, long b, long c, MemorySegment alpha,
                                       MemorySegment beta, CandidateBench bench) {
        return chooser(key, a, b, c, alpha, beta, bench,
                (algos, timer, check) -> tuner.choose(device, key, algos, timer, check));
    }

    /** What the tuner does with a kind's candidates and a timer of them. */
    @FunctionalInterface
    private interface TunerCall {
        GemmTuner.Choice choose(List<MemorySegment> algos, GemmTuner.Timer timer, GemmTuner.Check check);
    }

    private MatmulPlan.Chooser chooser(MatmulPlan.Key key, long a, long b, long c, MemorySegment alpha,
                                       MemorySegment beta, CandidateBench bench, TunerCall tunerCall) {
        return (d, candidates) -> {
            ColumnMajorCall call = d.call();
            CublasLt library = handle.library();
            CandidateBench.Launch launch = (i, scratchC, scratchWorkspace, scratchWorkspaceBytes, stream) ->
                    library.matmul(handle.address(), d.matmulDesc(), alpha,
                            call.firstAddress(a, b), d.aLayout(), call.secondAddress(a, b), d.bLayout(), beta,
                            d.cAddress(scratchC), d.cLayout(), scratchC, d.dLayout(), candidates.get(i).algo(),
                            scratchWorkspace, scratchWorkspaceBytes, stream);
            long neededWorkspace = candidates.stream().mapToLong(MatmulPlan.Candidate::workspaceBytes).max().orElse(0);
            List<MemorySegment> algos = candidates.stream().map(MatmulPlan.Candidate::algo).toList();
            GemmTuner.Check check = algo -> {
                long needs = library.algoCheck(handle.address(), d.matmulDesc(), d.aLayout(), d.bLayout(),
                        d.cLayout(), d.dLayout(), algo);
                return needs <= workspaceBytes ? needs : -1;
            };
            return tunerCall.choose(algos, count -> bench.time(count, key.spec().cBytes(), c, neededWorkspace, launch),
                    check);
        };
    }

    /**
     * Times every candidate of this GEMM kind on {@code bench} whatever was chosen before, keeps the fastest (unless
     * the heuristic's first is within {@code margin} of it) for this runner's later runs and in the tuner's memory
     * and file, replacing the earlier choice. For offline tuning by a benchmark that measures the way it will be
     * judged ({@code ubuf bench gemm --retune}); the kind must not be in use on another stream meanwhile.
     *
     * @param scales an FP8 GEMM's scales, bound while its candidates run (null: none; cuBLASLt reads scale 1)
     * @throws IllegalStateException when the tuner is off
     */
    GemmTuner.Retuned retune(GemmSpec spec, long a, long b, long c, float beta, Gemm.Fp8Scales scales,
                             CandidateBench bench, double margin) {
        MatmulPlan.Key key = checkedKey(spec, a, b, c, beta, scales);
        tuner.checkCanRetune(); // before cuBLASLt is asked for candidates
        GemmTuner.Retuned[] retuned = new GemmTuner.Retuned[1];
        MatmulPlan plan = choosePlan(key, a, b, c, beta, scales, 0, bench, (algos, timer, check) -> {
            retuned[0] = tuner.retune(device, key, algos, timer, margin);
            return new GemmTuner.Choice(retuned[0].chosen(), true);
        });
        MatmulPlan replaced = plans.put(key, plan);
        if (replaced != null) {
            replaced.close(); // the caller's stream may still run it: cuBLASLt read its descriptors when enqueuing
        }
        return retuned[0];
    }

    /**
     * Where the algorithm this runner chose for a (non-FP8) GEMM kind stood in cuBLASLt's heuristic list (0 = its first
     * choice), or empty when that kind has not run here yet (or ran only provisionally, while a graph was captured).
     * For reports: which candidate tuning kept.
     */
    public java.util.OptionalInt heuristicRank(GemmSpec spec, long a, long b, long c, boolean accumulate) {
        MatmulPlan plan = plans.get(new MatmulPlan.Key(spec, alignmentOf(a), alignmentOf(b), alignmentOf(c), accumulate,
                false, false));
        return plan == null ? java.util.OptionalInt.empty() : java.util.OptionalInt.of(plan.heuristicRank());
    }

    /** Number of cached plans (one per spec, pointer-alignment and accumulation combination run so far). */
    public int planCount() {
        return plans.size();
    }

    public long workspaceBytes() {
        return workspaceBytes;
    }

    public boolean isOpen() {
        return !closed;
    }

    /** Destroys the cached plans, most recent first. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        List<MatmulPlan> created = new ArrayList<>(plans.values());
        plans.clear();
        RuntimeException failure = null;
        for (MatmulPlan plan : created.reversed()) {
            failure = MatmulDescriptors.attempt(failure, plan::close);
        }
        if (failure != null) {
            throw failure;
        }
    }

    /** The largest power of two dividing {@code address}, capped at {@value #MAX_TRACKED_ALIGNMENT}. */
    static int alignmentOf(long address) {
        if (address == 0) {
            return MAX_TRACKED_ALIGNMENT;
        }
        return (int) Math.min(MAX_TRACKED_ALIGNMENT, Long.lowestOneBit(address));
    }

    private void assertOpen() {
        if (closed) {
            throw new IllegalStateException("GemmRunner is closed");
        }
        if (!handle.isOpen()) {
            throw new IllegalStateException("the cuBLASLt handle of this GemmRunner is closed");
        }
    }

    static void checkWorkspace(long workspace, long workspaceBytes) {
        if (workspaceBytes < 0) {
            throw new IllegalArgumentException("workspaceBytes must be >= 0, got " + workspaceBytes);
        }
        if (workspaceBytes > 0 && workspace == 0) {
            throw new IllegalArgumentException("workspace address is 0 but workspaceBytes is " + workspaceBytes);
        }
        if (Long.remainderUnsigned(workspace, WORKSPACE_ALIGNMENT) != 0) {
            throw new IllegalArgumentException("workspace 0x" + Long.toHexString(workspace) + " is not "
                    + WORKSPACE_ALIGNMENT + "-byte aligned");
        }
    }

    /** Everything run checks before touching cuBLASLt. */
    static void checkOperands(GemmSpec spec, long a, long b, long c) {
        Objects.requireNonNull(spec, "spec");
        checkPointer("A", a, spec.aType());
        checkPointer("B", b, spec.bType());
        checkPointer("C", c, spec.cType());
        if (spec.isFp8()) {
            // cuBLASLt's FP8 kernels need every matrix pointer 16-byte aligned.
            checkFp8Alignment("A", a);
            checkFp8Alignment("B", b);
            checkFp8Alignment("C", c);
        }
    }

    /** An FP8 spec needs scales that fit it; any other spec must come without. */
    static void checkFp8(GemmSpec spec, float beta, Gemm.Fp8Scales scales) {
        if (!spec.isFp8()) {
            if (scales != null) {
                throw new IllegalArgumentException("fp8 scales were given for a GEMM whose inputs are "
                        + spec.aType().shortName() + ", not fp8");
            }
            return;
        }
        if (scales == null) {
            throw new IllegalArgumentException("an fp8 GEMM needs Fp8Scales: device pointers of the fp32 scales "
                    + "that dequantize A and B (their scale_inv)");
        }
        if (!spec.hasFp8Output() && scales.scaleD() != 0) {
            throw new IllegalArgumentException("scale_d scales an fp8 output into range; this GEMM writes "
                    + spec.cType().shortName() + " (pass 0)");
        }
        if (!spec.hasFp8Output() && scales.amaxD() != 0) {
            // cuBLASLt 13.1 on H200 answers CUBLAS_STATUS_INVALID_VALUE from the heuristic (GPU run, 2026-11-23).
            throw new IllegalArgumentException("amax_d is computed only for an fp8 output; this GEMM writes "
                    + spec.cType().shortName() + " (pass 0, and take the amax of the output with Fp8Kernels.amax)");
        }
        checkScalePointer("scale_a", scales.scaleA());
        checkScalePointer("scale_b", scales.scaleB());
        checkScalePointer("scale_d", scales.scaleD());
        checkScalePointer("amax_d", scales.amaxD());
        if (spec.hasFp8Output() && beta != 0f) {
            throw new IllegalArgumentException("an fp8 output cannot be accumulated into (beta must be 0, got " + beta
                    + "): write bf16 or fp32 to accumulate");
        }
    }

    /**
     * How cuBLASLt wants an FP8 GEMM's scale and amax pointers aligned: every matmul of the FP8 layers failed with
     * CUBLAS_STATUS_NOT_SUPPORTED on H100 (cuBLASLt 13.1, 2026-11-26) when their scales sat 4 bytes apart in one
     * table; {@code Fp8ScalePointerGpuTest} checks this rule against the library at several offsets.
     */
    public static final int FP8_SCALE_ALIGNMENT = 16;

    private static void checkScalePointer(String name, long address) {
        if (address != 0 && Long.remainderUnsigned(address, FP8_SCALE_ALIGNMENT) != 0) {
            throw new IllegalArgumentException("an fp8 GEMM needs its " + name + " pointer " + FP8_SCALE_ALIGNMENT
                    + "-byte aligned (cuBLASLt refuses others), got 0x" + Long.toHexString(address));
        }
    }

    private static void checkFp8Alignment(String name, long address) {
        if (Long.remainderUnsigned(address, GemmSpec.FP8_ROW_BYTES) != 0) {
            throw new IllegalArgumentException("an fp8 GEMM needs 16-byte aligned matrices, " + name + " is at 0x"
                    + Long.toHexString(address));
        }
    }

    private static void checkPointer(String name, long address, DType type) {
        if (address == 0) {
            throw new IllegalArgumentException(name + " is a null device pointer");
        }
        if (Long.remainderUnsigned(address, type.bytes()) != 0) {
            throw new IllegalArgumentException(name + " at 0x" + Long.toHexString(address) + " is not aligned to its "
                    + type + " element size of " + type.bytes() + " bytes");
        }
    }
}
