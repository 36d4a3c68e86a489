package dev.ubuf.gemm;

import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;

/**
 * Row-major GEMM on tensor views: C = alpha * op(A) * op(B) + beta * C, fp32 accumulation. Owns a cuBLASLt handle,
 * a workspace and a plan cache. GEMMs that may run concurrently (different streams) need different Gemm objects,
 * since they would share the workspace. Shapes and dtypes are validated before anything reaches the GPU.
 *
 * <p>Each kind of GEMM gets the algorithm its {@link GemmTuner} chooses: with tuning on, the first multiply of a kind
 * times cuBLASLt's candidates on this device (blocking the calling thread for that while) and later ones reuse the
 * fastest; without a tuner, cuBLASLt's first candidate.
 */
public final class Gemm implements AutoCloseable {
    private final CudaContext context;
    private final CublasLtHandle handle;
    private final DeviceBuffer workspace;
    private final GemmRunner runner;
    private final boolean tuning;

    /** A GEMM that runs cuBLASLt's first candidate for each kind, untimed. */
    public Gemm(CudaContext context) {
        this(context, GemmRunner.RECOMMENDED_WORKSPACE_BYTES, GemmTuner.disabled());
    }

    /** A GEMM whose algorithms {@code tuner} chooses (usually the communicator's, {@code comm.gemmTuner()}). */
    public Gemm(CudaContext context, GemmTuner tuner) {
        this(context, GemmRunner.RECOMMENDED_WORKSPACE_BYTES, tuner);
    }

    public Gemm(CudaContext context, long workspaceBytes) {
        this(context, workspaceBytes, GemmTuner.disabled());
    }

    public Gemm(CudaContext context, long workspaceBytes, GemmTuner tuner) {
        this.context = context;
        this.tuning = tuner.settings().enabled();
        context.makeCurrent();
        this.handle = CublasLtHandle.create();
        DeviceBuffer ws = null;
        try {
            TuningDevice device = tuning ? new TuningDevice(context.device().name(),
                    context.device().computeCapability(), handle.version()) : null;
            // No workspace is a valid choice (algorithms that need none); cuMemAlloc refuses a size of 0.
            ws = workspaceBytes == 0 ? null : context.allocate(workspaceBytes, "cuBLASLt workspace");
            this.workspace = ws;
            this.runner = new GemmRunner(handle, ws == null ? 0 : ws.address(), workspaceBytes, tuner, device);
        } catch (RuntimeException e) {
            if (ws != null) {
                ws.close();
            }
            handle.close();
            throw e;
        }
    }

    /**
     * Options of one multiply: the transposes, an SM budget (0 = whole GPU), whether fp32 may use TF32, and whether an
     * FP8 GEMM may use fast accumulation (see {@link GemmSpec}).
     */
    public record Options(boolean transA, boolean transB, int smCountTarget, boolean allowTf32,
                          boolean fp8FastAccumulation) {
        public static final Options NN = new Options(false, false, 0, false);
        public static final Options NT = new Options(false, true, 0, false);

        public Options(boolean transA, boolean transB, int smCountTarget, boolean allowTf32) {
            this(transA, transB, smCountTarget, allowTf32, false);
        }

        public Options withSmCountTarget(int sms) {
            return new Options(transA, transB, sms, allowTf32, fp8FastAccumulation);
        }

        public Options withFp8FastAccumulation(boolean fast) {
            return new Options(transA, transB, smCountTarget, allowTf32, fast);
        }
    }

    /**
     * The per-tensor scales of an FP8 GEMM, as device addresses of fp32 scalars (read by the GPU when the GEMM runs,
     * so kernels earlier on the stream may write them):
     * {@code D = scaleD * (alpha * scaleA * scaleB * op(A) * op(B) + beta * C)}.
     *
     * @param scaleA dequantizes A: real A = stored A * scaleA (Transformer Engine's scale_inv of A); required
     * @param scaleB dequantizes B likewise; required
     * @param scaleD quantizes an FP8 output (D = fp8(value * scaleD), TE's scale of D); 0 for none (scale 1) and for
     *               any output that is not FP8
     * @param amaxD  receives the largest |value| of the output before scaleD (what delayed scaling records); 0 for none
     */
    public record Fp8Scales(long scaleA, long scaleB, long scaleD, long amaxD) {
        public Fp8Scales {
            requireScalar("scaleA", scaleA, false);
            requireScalar("scaleB", scaleB, false);
            requireScalar("scaleD", scaleD, true);
            requireScalar("amaxD", amaxD, true);
        }

        /** Scales for an output that is neither scaled nor measured. */
        public static Fp8Scales of(long scaleA, long scaleB) {
            return new Fp8Scales(scaleA, scaleB, 0, 0);
        }

        private static void requireScalar(String name, long address, boolean optional) {
            if (address == 0 && !optional) {
                throw new IllegalArgumentException(name + " is a null device pointer: an fp8 operand needs its scale");
            }
            if (Long.remainderUnsigned(address, Float.BYTES) != 0) {
                throw new IllegalArgumentException(name + " at 0x" + Long.toHexString(address) + " is not aligned to "
                        + "its fp32 size of 4 bytes");
            }
        }
    }

    /** Checks a multiply's views and returns the spec it runs; throws IllegalArgumentException on any mismatch. */
    public static GemmSpec spec(TensorView a, TensorView b, TensorView c, Options o) {
        long m = o.transA() ? a.cols() : a.rows();
        long k = o.transA() ? a.rows() : a.cols();
        long kb = o.transB() ? b.cols() : b.rows();
        long n = o.transB() ? b.rows() : b.cols();
        if (k != kb) {
            throw new IllegalArgumentException("GEMM inner dimensions differ: op(A) is " + m + "x" + k
                    + " but op(B) is " + kb + "x" + n);
        }
        if (c.rows() != m || c.cols() != n) {
            throw new IllegalArgumentException("GEMM output must be " + m + "x" + n + ", got " + c.rows() + "x" + c.cols());
        }
        boolean fp8 = GemmSpec.isFp8(a.dtype()) || GemmSpec.isFp8(b.dtype());
        if (!fp8 && a.dtype() != b.dtype()) {
            throw new IllegalArgumentException("GEMM operands must share a dtype: A is " + a.dtype().shortName()
                    + ", B is " + b.dtype().shortName());
        }
        if (!fp8 && c.dtype() != a.dtype() && c.dtype() != DType.FP32) {
            throw new IllegalArgumentException("GEMM output must be " + a.dtype().shortName() + " or fp32, got "
                    + c.dtype().shortName());
        }
        if (m > Integer.MAX_VALUE || n > Integer.MAX_VALUE || k > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("GEMM dimensions must fit in int32: " + m + "x" + n + "x" + k);
        }
        // FP8 types, layouts and alignments are checked by the spec itself.
        return new GemmSpec(a.dtype(), b.dtype(), c.dtype(), (int) m, (int) n, (int) k, o.transA(), o.transB(),
                a.ld(), b.ld(), c.ld(), o.smCountTarget(), o.allowTf32(), o.fp8FastAccumulation());
    }

    public void multiply(TensorView a, TensorView b, TensorView c, float alpha, float beta, Options o, CudaStream stream) {
        multiply(a, b, c, alpha, beta, o, null, stream);
    }

    /**
     * An FP8 multiply: {@code c = scaleD * (alpha * scaleA * scaleB * a * b^T + beta * c)} with a [m, k] and b [n, k]
     * in fp8 ({@code Options.NT}), c bf16, fp16, fp32 or fp8; {@code scales.amaxD()}, when given, receives the
     * largest |value| before scaleD. {@code scales} is null for a multiply that is not FP8. See {@link GemmSpec} for
     * the layouts and alignments cuBLASLt requires; every one is checked before any GPU work.
     */
    public void multiply(TensorView a, TensorView b, TensorView c, float alpha, float beta, Options o,
                         Fp8Scales scales, CudaStream stream) {
        multiply(a, b, c, alpha, beta, o, scales, null, stream);
    }

    /**
     * {@link #multiply(TensorView, TensorView, TensorView, float, float, Options, Fp8Scales, CudaStream)} whose
     * epilogue also adds {@code bias} (null: none), a [1, n] vector of c's type (bf16 or fp16), to every row of c:
     * {@code c = alpha * a * b + beta * c + bias}, in one pass (beta = 0: rounded once; beta != 0: see
     * {@link #multiplyAdd}). A GEMM with a bias is another kind than one without (its own algorithm choice; prepare it
     * with the same bias).
     */
    public void multiply(TensorView a, TensorView b, TensorView c, float alpha, float beta, Options o,
                         Fp8Scales scales, TensorView bias, CudaStream stream) {
        GemmSpec spec = spec(a, b, c, o);
        GemmRunner.checkFp8(spec, beta, scales);
        requireBias(bias, c);
        requireOwnStream(stream);
        runner.run(spec, a.address(), b.address(), c.address(), c.address(), alpha, beta, scales, address(bias),
                stream.nativeHandle(), tuning ? new StreamCandidateBench(context, stream) : CandidateBench.NONE);
    }

    /**
     * {@code d = a * b + addend} (scaled as {@link #multiply(TensorView, TensorView, TensorView, float, float, Options,
     * Fp8Scales, CudaStream)} scales an FP8 product): cuBLASLt reads {@code addend} as C and writes D, so a sum needs
     * no pass of its own. With a bf16 or fp16 d it rounds the product to d's type before it adds C (cuBLASLt 13.1 on
     * H200, {@code CublasLtGemmGpuTest}), so d gets the bits of a GEMM into d followed by a sum rounded once.
     * {@code addend} has d's shape, type and row stride, and d is not FP8. The algorithm is the one {@link #prepareAdd}
     * with the same operands chose (or is chosen now).
     */
    public void multiplyAdd(TensorView a, TensorView b, TensorView addend, TensorView d, Options o, Fp8Scales scales,
                            CudaStream stream) {
        multiplyAdd(a, b, addend, d, o, scales, null, stream);
    }

    /** {@link #multiplyAdd(TensorView, TensorView, TensorView, TensorView, Options, Fp8Scales, CudaStream)} whose
     *  epilogue also adds {@code bias} (null: none; see {@link #multiply(TensorView, TensorView, TensorView, float,
     *  float, Options, Fp8Scales, TensorView, CudaStream)}): {@code d = a * b + addend + bias} in one pass, the bias
     *  meeting the product and the addend in cuBLASLt's order, with a rounding in d's type between (not the order of a
     *  sum followed by a bias kernel). */
    public void multiplyAdd(TensorView a, TensorView b, TensorView addend, TensorView d, Options o, Fp8Scales scales,
                            TensorView bias, CudaStream stream) {
        GemmSpec spec = spec(a, b, d, o);
        requireAddend(addend, d);
        requireBias(bias, d);
        GemmRunner.checkFp8(spec, 1f, scales);
        requireOwnStream(stream);
        runner.run(spec, a.address(), b.address(), d.address(), addend.address(), 1f, 1f, scales, address(bias),
                stream.nativeHandle(), tuning ? new StreamCandidateBench(context, stream) : CandidateBench.NONE);
    }

    /** {@link #prepare(TensorView, TensorView, TensorView, float, Options, Fp8Scales, CudaStream)} of
     *  {@link #multiplyAdd}. */
    public void prepareAdd(TensorView a, TensorView b, TensorView addend, TensorView d, Options o, Fp8Scales scales,
                           CudaStream stream) {
        prepareAdd(a, b, addend, d, o, scales, null, stream);
    }

    /** {@link #prepareAdd(TensorView, TensorView, TensorView, TensorView, Options, Fp8Scales, CudaStream)} of a
     *  multiplyAdd with a bias (null: none). */
    public void prepareAdd(TensorView a, TensorView b, TensorView addend, TensorView d, Options o, Fp8Scales scales,
                           TensorView bias, CudaStream stream) {
        GemmSpec spec = spec(a, b, d, o);
        requireAddend(addend, d);
        requireBias(bias, d);
        requireOwnStream(stream);
        runner.prepare(spec, a.address(), b.address(), d.address(), addend.address(), 1f, scales, address(bias),
                tuning ? new StreamCandidateBench(context, stream) : CandidateBench.NONE);
    }

    private void requireOwnStream(CudaStream stream) {
        if (stream.context() != context) {
            throw new IllegalArgumentException("stream belongs to " + stream.context() + ", this GEMM to " + context);
        }
    }

    private static long address(TensorView bias) {
        return bias == null ? 0 : bias.address();
    }

    /** A bias is one contiguous row of c's columns in c's type (the runner refuses a result other than bf16 or fp16
     *  before any cuBLASLt call: {@link GemmRunner#checkBias}). */
    static void requireBias(TensorView bias, TensorView c) {
        if (bias == null) {
            return;
        }
        if (bias.rows() != 1 || bias.cols() != c.cols() || bias.dtype() != c.dtype()) {
            throw new IllegalArgumentException("a GEMM's bias is one row of its result's columns in its type: got "
                    + bias.rows() + "x" + bias.cols() + " " + bias.dtype().shortName() + " for a " + c.rows() + "x"
                    + c.cols() + " " + c.dtype().shortName() + " result");
        }
    }

    /** cuBLASLt's C and D share one layout here (D's), and C is read in D's type unless D is FP8 (never here). */
    static void requireAddend(TensorView addend, TensorView d) {
        if (addend.rows() != d.rows() || addend.cols() != d.cols() || addend.dtype() != d.dtype()
                || addend.ld() != d.ld()) {
            throw new IllegalArgumentException("a GEMM's addend must have its result's shape, type and row stride: "
                    + addend.rows() + "x" + addend.cols() + " " + addend.dtype().shortName() + " ld " + addend.ld()
                    + " for " + d.rows() + "x" + d.cols() + " " + d.dtype().shortName() + " ld " + d.ld());
        }
        if (GemmSpec.isFp8(d.dtype())) {
            throw new IllegalArgumentException("a GEMM with an addend writes no fp8 result (cuBLASLt reads C in"
                    + " another type then)");
        }
    }

    /**
     * Where the algorithm used for this (non-FP8) multiply stands in cuBLASLt's heuristic list (0 = its first choice),
     * or empty before the first such multiply: what tuning kept, for reports.
     */
    public java.util.OptionalInt heuristicRank(TensorView a, TensorView b, TensorView c, float beta, Options o) {
        return runner.heuristicRank(spec(a, b, c, o), a.address(), b.address(), c.address(), beta != 0f);
    }

    /**
     * Chooses this GEMM's algorithm now (timing the candidates when tuning is on) without enqueuing it; a later
     * {@link #multiply} of the same kind reuses the choice. Lets a caller tune before it enqueues work that waits on
     * peers (see {@link GemmRunner#prepare}).
     */
    public void prepare(TensorView a, TensorView b, TensorView c, float beta, Options o, CudaStream stream) {
        prepare(a, b, c, beta, o, null, stream);
    }

    /** {@link #prepare(TensorView, TensorView, TensorView, float, Options, CudaStream)} of an FP8 multiply, with the
     *  scales it will run with bound while its algorithm is chosen (null: not bound; cuBLASLt reads scale 1). */
    public void prepare(TensorView a, TensorView b, TensorView c, float beta, Options o, Fp8Scales scales,
                        CudaStream stream) {
        prepare(a, b, c, beta, o, scales, null, stream);
    }

    /** {@link #prepare(TensorView, TensorView, TensorView, float, Options, Fp8Scales, CudaStream)} of a multiply
     *  with a bias (null: none). */
    public void prepare(TensorView a, TensorView b, TensorView c, float beta, Options o, Fp8Scales scales,
                        TensorView bias, CudaStream stream) {
        GemmSpec spec = spec(a, b, c, o);
        requireBias(bias, c);
        requireOwnStream(stream);
        runner.prepare(spec, a.address(), b.address(), c.address(), c.address(), beta, scales, address(bias),
                tuning ? new StreamCandidateBench(context, stream) : CandidateBench.NONE);
    }

    /**
     * Tunes this kind of (non-FP8) multiply again, timing cuBLASLt's candidates with {@code bench} instead of the
     * tuner's quick single runs, and keeps the fastest for later multiplies here, in the tuner and in its file
     * (replacing an earlier choice) unless the heuristic's first is within {@code margin} of it. For offline tuning
     * where the GEMMs will be judged as {@code bench} measures them ({@code ubuf bench gemm --retune}). C and the
     * workspace are not touched: the candidates write scratch.
     *
     * @param margin how much faster than the heuristic's first a candidate must time to replace it, 0 to 1
     * @throws IllegalStateException when this GEMM's tuner is off
     */
    public GemmTuner.Retuned retune(TensorView a, TensorView b, TensorView c, float beta, Options o,
                                    CandidateBench bench, double margin) {
        GemmSpec spec = spec(a, b, c, o);
        if (spec.isFp8()) {
            throw new IllegalArgumentException("retune is for GEMMs that are not fp8 (their scales would have to be "
                    + "bound while timing)");
        }
        return runner.retune(spec, a.address(), b.address(), c.address(), beta, null, bench, margin);
    }

    /** c = a * b. */
    public void multiply(TensorView a, TensorView b, TensorView c, CudaStream stream) {
        multiply(a, b, c, 1f, 0f, Options.NN, stream);
    }

    public static String cublasLtVersion() {
        long v = CublasLt.library().version();
        return (v / 10000) + "." + (v / 100 % 100) + "." + (v % 100);
    }

    @Override
    public void close() {
        context.makeCurrent();
        runner.close();
        if (workspace != null) {
            workspace.close();
        }
        handle.close();
    }
}
