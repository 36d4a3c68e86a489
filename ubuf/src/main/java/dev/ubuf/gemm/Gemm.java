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
            ws = context.allocate(workspaceBytes, "cuBLASLt workspace");
            this.workspace = ws;
            this.runner = new GemmRunner(handle, ws.address(), workspaceBytes, tuner, device);
        } catch (RuntimeException e) {
            if (ws != null) {
                ws.close();
            }
            handle.close();
            throw e;
        }
    }

    /** Options of one multiply: the transposes, an SM budget (0 = whole GPU) and whether fp32 may use TF32. */
    public record Options(boolean transA, boolean transB, int smCountTarget, boolean allowTf32) {
        public static final Options NN = new Options(false, false, 0, false);
        public static final Options NT = new Options(false, true, 0, false);

        public Options withSmCountTarget(int sms) {
            return new Options(transA, transB, sms, allowTf32);
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
        if (a.dtype() != b.dtype()) {
            throw new IllegalArgumentException("GEMM operands must share a dtype: A is " + a.dtype().shortName()
                    + ", B is " + b.dtype().shortName());
        }
        if (c.dtype() != a.dtype() && c.dtype() != DType.FP32) {
            throw new IllegalArgumentException("GEMM output must be " + a.dtype().shortName() + " or fp32, got "
                    + c.dtype().shortName());
        }
        if (m > Integer.MAX_VALUE || n > Integer.MAX_VALUE || k > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("GEMM dimensions must fit in int32: " + m + "x" + n + "x" + k);
        }
        return GemmSpec.of(a.dtype(), c.dtype(), (int) m, (int) n, (int) k, o.transA(), o.transB())
                .withLeadingDimensions(a.ld(), b.ld(), c.ld())
                .withSmCountTarget(o.smCountTarget())
                .withAllowTf32(o.allowTf32());
    }

    public void multiply(TensorView a, TensorView b, TensorView c, float alpha, float beta, Options o, CudaStream stream) {
        GemmSpec spec = spec(a, b, c, o);
        if (stream.context() != context) {
            throw new IllegalArgumentException("stream belongs to " + stream.context() + ", this GEMM to " + context);
        }
        runner.run(spec, a.address(), b.address(), c.address(), alpha, beta, stream.nativeHandle(),
                tuning ? new StreamCandidateBench(context, stream) : CandidateBench.NONE);
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
        workspace.close();
        handle.close();
    }
}
