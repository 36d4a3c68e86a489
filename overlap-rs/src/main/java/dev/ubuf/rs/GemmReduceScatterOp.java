package dev.ubuf.rs;

import dev.ubuf.comm.TpCommunicator;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.exec.ExecutionSettings;
import dev.ubuf.exec.OperandBindings;
import dev.ubuf.exec.PlanRunner;
import dev.ubuf.gemm.Gemm;
import dev.ubuf.nccl.NcclRedOp;
import dev.ubuf.ops.DeviceKernels;
import dev.ubuf.tensor.TensorView;

/**
 * out[M/tp, N] = reducescatter_rows(x[M, K] * W[K, N]) (+ bias once, after the reduction) on this rank: overlapped
 * by a plan (ring exchange with fp32 fold-in, pipelined split RS, one-shot; BULK only reduce-scatters the partial
 * the caller put in {@link #partial()}), or, for shapes too small for any overlap to pay, one GEMM + NCCL
 * ReduceScatter on the caller's stream ({@link #planned}). Creating it is collective over the domain.
 */
public final class GemmReduceScatterOp implements AutoCloseable {
    private final RsShape shape;
    private final String methodName;
    private final boolean bulk;
    private final PlanRunner runner;
    private final NcclPath nccl;

    public GemmReduceScatterOp(TpCommunicator comm, RsShape shape, RsMethod method, RsOptions options,
                               DeviceKernels kernels, ExecutionSettings settings) {
        checkDomain(comm, shape);
        this.shape = shape;
        this.methodName = method.shortName();
        this.bulk = method == RsMethod.BULK;
        ExecutionSettings s = settings;
        if (method == RsMethod.PIPELINE && settings.gemmSmBudget() == 0) {
            // Leave SMs to the pull-reduce kernel that runs beside the next block's GEMM.
            s = settings.withGemmSmBudget(comm.context().device().smCount() - options.gemmSmMargin());
        }
        this.runner = new PlanRunner(comm, RsSchedule.of(method, shape, options).plans(), kernels, s);
        this.nccl = null;
    }

    private GemmReduceScatterOp(TpCommunicator comm, RsShape shape, DeviceKernels kernels) {
        checkDomain(comm, shape);
        this.shape = shape;
        this.methodName = "nccl";
        this.bulk = false;
        this.runner = null;
        this.nccl = new NcclPath(comm, shape, kernels);
    }

    private static void checkDomain(TpCommunicator comm, RsShape shape) {
        if (shape.tp() != comm.tp()) {
            throw new IllegalArgumentException("shape is for tp " + shape.tp() + ", communicator has " + comm.tp());
        }
    }

    /**
     * The op {@link RsPlanner#DEFAULT} picks for this shape: one GEMM + NCCL ReduceScatter in the small-M region
     * (never slower than the NCCL reference there, since it is the reference), else the planner's method and
     * options.
     */
    public static GemmReduceScatterOp planned(TpCommunicator comm, RsShape shape, DeviceKernels kernels,
                                              ExecutionSettings settings) {
        RsPlanner p = RsPlanner.DEFAULT;
        if (p.prefersNccl(shape)) {
            return new GemmReduceScatterOp(comm, shape, kernels);
        }
        return new GemmReduceScatterOp(comm, shape, p.choose(shape), p.optionsFor(shape), kernels, settings);
    }

    public RsShape shape() {
        return shape;
    }

    /** "ring", "pipeline", "oneshot", "bulk" or "nccl" (the results-file name). */
    public String methodName() {
        return methodName;
    }

    /** BULK: this rank's [M, N] partial goes here before {@link #reduceScatter}. */
    public TensorView partial() {
        if (!bulk) {
            throw new IllegalStateException("partial() belongs to the BULK method");
        }
        return runner.ubufMatrix();
    }

    public void forward(TensorView x, TensorView weight, boolean weightTransposed, TensorView out, TensorView bias,
                        CudaStream stream) {
        if (bulk) {
            throw new IllegalStateException("BULK has no GEMM: write the partial into partial() and call reduceScatter()");
        }
        if (runner != null) {
            runner.run(new OperandBindings(x, weight, weightTransposed, out, bias), stream);
        } else {
            nccl.forward(x, weight, weightTransposed, out, bias, stream);
        }
    }

    /** BULK: reduce-scatters {@link #partial()} into out (+ bias) on the comm stream. */
    public void reduceScatter(TensorView out, TensorView bias, CudaStream stream) {
        if (!bulk) {
            throw new IllegalStateException("reduceScatter() belongs to the BULK method");
        }
        runner.run(new OperandBindings(null, null, false, out, bias), stream);
    }

    /** Waits for {@code stream} with the UB_TIMEOUT deadline; a dead peer is reported, not waited for. */
    public void await(CudaStream stream) {
        if (runner != null) {
            runner.await(stream);
        } else {
            nccl.comm.await(stream, () -> "GEMM + NCCL ReduceScatter of " + shape);
        }
    }

    /** Per-step timeline of the next calls, for finding where the overlap leaks (see {@link #traceReport()}). */
    public void enableTrace() {
        requirePlan().enableTrace();
    }

    public String traceReport() {
        return requirePlan().traceReport();
    }

    private PlanRunner requirePlan() {
        if (runner == null) {
            throw new IllegalStateException("the NCCL path has no plan to trace");
        }
        return runner;
    }

    @Override
    public void close() {
        if (runner != null) {
            runner.close();
        } else {
            nccl.close();
        }
    }

    /** One GEMM into an owned [M, N] partial, NCCL ReduceScatter into out, then the bias: all on the caller's stream. */
    private static final class NcclPath implements AutoCloseable {
        final TpCommunicator comm;
        final RsShape shape;
        final DeviceKernels kernels;
        final DeviceBuffer buffer;
        final TensorView partial;
        final Gemm gemm;

        NcclPath(TpCommunicator comm, RsShape shape, DeviceKernels kernels) {
            this.comm = comm;
            this.shape = shape;
            this.kernels = kernels;
            comm.nccl(); // collective: every rank creates it now, not at its first call
            this.buffer = comm.context().allocate(shape.m() * shape.n() * shape.dtype().bytes());
            this.partial = TensorView.of(buffer, shape.m(), shape.n(), shape.dtype());
            Gemm g;
            try {
                g = new Gemm(comm.context(), comm.gemmTuner());
            } catch (RuntimeException e) {
                buffer.close();
                throw e;
            }
            this.gemm = g;
        }

        void forward(TensorView x, TensorView weight, boolean weightTransposed, TensorView out, TensorView bias,
                     CudaStream s) {
            long rows = shape.m() / shape.tp();
            out.requireShape(rows, shape.n(), "out");
            out.requireDType(shape.dtype(), "out");
            if (!out.isContiguous()) {
                throw new IllegalArgumentException("the NCCL path needs a contiguous out, got " + out);
            }
            if (shape.bias() != (bias != null)) {
                throw new IllegalArgumentException(shape.bias() ? "this op adds a bias: pass one" : "this op has no bias");
            }
            if (bias != null) {
                bias.requireShape(1, shape.n(), "bias");
                bias.requireDType(shape.dtype(), "bias");
            }
            Gemm.Options o = new Gemm.Options(false, weightTransposed, 0, false);
            Gemm.spec(x, weight, partial, o); // validates shapes and dtypes before any GPU work
            gemm.multiply(x, weight, partial, 1f, 0f, o, s);
            comm.nccl().reduceScatter(partial.address(), out.address(), rows * shape.n(), shape.dtype(), NcclRedOp.SUM,
                    s.nativeHandle());
            if (bias != null) {
                kernels.addBias(out, bias, s);
            }
        }

        @Override
        public void close() {
            comm.context().makeCurrent();
            gemm.close();
            buffer.close();
        }
    }
}
