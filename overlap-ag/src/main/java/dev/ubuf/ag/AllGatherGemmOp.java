package dev.ubuf.ag;

import dev.ubuf.comm.TpCommunicator;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.exec.ExecutionSettings;
import dev.ubuf.exec.OperandBindings;
import dev.ubuf.exec.PlanRunner;
import dev.ubuf.gemm.Gemm;
import dev.ubuf.ops.DeviceKernels;
import dev.ubuf.tensor.TensorView;

/**
 * out[M, N] = allgather_rows(x_shard[M/tp, K]) * W[K, N] on this rank: overlapped by a plan (ring exchange,
 * aggregate, one-shot; BULK only gathers), or, for shapes too small for any overlap to pay, NCCL AllGather + one
 * GEMM on the caller's stream ({@link #planned}). Creating it is collective over the domain. The gathered input
 * stays in {@link #gathered()} until the next call.
 */
public final class AllGatherGemmOp implements AutoCloseable {
    private final AgShape shape;
    private final String methodName;
    private final boolean gathersOnly;
    private final PlanRunner runner;
    private final NcclPath nccl;

    public AllGatherGemmOp(TpCommunicator comm, AgShape shape, AgMethod method, AgOptions options,
                           DeviceKernels kernels, ExecutionSettings settings) {
        checkDomain(comm, shape);
        this.shape = shape;
        this.methodName = method.resultName();
        this.gathersOnly = !method.hasGemm();
        this.runner = new PlanRunner(comm, AgPlans.domain(method, shape, options), kernels, settings);
        this.nccl = null;
    }

    private AllGatherGemmOp(TpCommunicator comm, AgShape shape) {
        checkDomain(comm, shape);
        this.shape = shape;
        this.methodName = "nccl";
        this.gathersOnly = false;
        this.runner = null;
        this.nccl = new NcclPath(comm, shape);
    }

    private static void checkDomain(TpCommunicator comm, AgShape shape) {
        if (shape.tp() != comm.tp()) {
            throw new IllegalArgumentException("shape is for tp " + shape.tp() + ", communicator has " + comm.tp());
        }
    }

    /**
     * The op {@link AgPlanner#defaults()} picks for this shape: NCCL AllGather + one GEMM for small shapes (never
     * slower than the NCCL reference there, since it is the reference), else its plan method with default options.
     */
    public static AllGatherGemmOp planned(TpCommunicator comm, AgShape shape, DeviceKernels kernels,
                                          ExecutionSettings settings) {
        AgPlanner p = AgPlanner.defaults();
        if (p.prefersNccl(shape)) {
            return new AllGatherGemmOp(comm, shape);
        }
        return new AllGatherGemmOp(comm, shape, p.choose(shape), AgOptions.defaults(), kernels, settings);
    }

    public AgShape shape() {
        return shape;
    }

    /** "ring", "aggregate", "oneshot", "bulk" or "nccl" (the results-file name). */
    public String methodName() {
        return methodName;
    }

    /** The gathered [M, K] input (natural order), valid after a call completes and until the next. */
    public TensorView gathered() {
        return runner != null ? runner.ubufMatrix() : nccl.gathered;
    }

    /** Issues the op on {@code stream}. Inputs are validated before any GPU work. */
    public void forward(TensorView xShard, TensorView weight, boolean weightTransposed, TensorView out,
                        CudaStream stream) {
        if (gathersOnly) {
            throw new IllegalStateException(methodName + " only gathers: use gather()");
        }
        if (runner != null) {
            runner.run(new OperandBindings(xShard, weight, weightTransposed, out, null), stream);
        } else {
            nccl.forward(xShard, weight, weightTransposed, out, stream);
        }
    }

    /** BULK: gathers x_shard into {@link #gathered()} on the comm stream while the caller runs other work. */
    public void gather(TensorView xShard, CudaStream stream) {
        if (runner == null) {
            throw new IllegalStateException("gather() belongs to the BULK method");
        }
        runner.run(new OperandBindings(xShard, null, false, null, null), stream);
    }

    /** Waits for {@code stream} with the UB_TIMEOUT deadline; a dead peer is reported, not waited for. */
    public void await(CudaStream stream) {
        if (runner != null) {
            runner.await(stream);
        } else {
            nccl.comm.await(stream, () -> "NCCL AllGather + GEMM of " + shape);
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

    /** NCCL AllGather into an owned [M, K] buffer, then one GEMM, both on the caller's stream. */
    private static final class NcclPath implements AutoCloseable {
        final TpCommunicator comm;
        final AgShape shape;
        final DeviceBuffer buffer;
        final TensorView gathered;
        final Gemm gemm;

        NcclPath(TpCommunicator comm, AgShape shape) {
            this.comm = comm;
            this.shape = shape;
            comm.nccl(); // collective: every rank creates it now, not at its first call
            this.buffer = comm.context().allocate(shape.m() * shape.k() * shape.dtype().bytes());
            this.gathered = TensorView.of(buffer, shape.m(), shape.k(), shape.dtype());
            Gemm g;
            try {
                g = new Gemm(comm.context(), comm.gemmTuner());
            } catch (RuntimeException e) {
                buffer.close();
                throw e;
            }
            this.gemm = g;
        }

        void forward(TensorView xShard, TensorView weight, boolean weightTransposed, TensorView out, CudaStream s) {
            long rows = shape.m() / shape.tp();
            xShard.requireShape(rows, shape.k(), "x_shard");
            xShard.requireDType(shape.dtype(), "x_shard");
            if (!xShard.isContiguous()) {
                throw new IllegalArgumentException("the NCCL path needs a contiguous x_shard, got " + xShard);
            }
            Gemm.Options o = new Gemm.Options(false, weightTransposed, 0, false);
            Gemm.spec(gathered, weight, out, o); // validates shapes and dtypes before any GPU work
            comm.nccl().allGather(xShard.address(), gathered.address(), rows * shape.k(), shape.dtype(),
                    s.nativeHandle());
            gemm.multiply(gathered, weight, out, 1f, 0f, o, s);
        }

        @Override
        public void close() {
            comm.context().makeCurrent();
            gemm.close();
            buffer.close();
        }
    }
}
