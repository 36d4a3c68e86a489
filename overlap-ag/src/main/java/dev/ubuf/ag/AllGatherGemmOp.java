package dev.ubuf.ag;

import dev.ubuf.comm.TpCommunicator;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.exec.ExecutionSettings;
import dev.ubuf.exec.OperandBindings;
import dev.ubuf.exec.PlanRunner;
import dev.ubuf.ops.DeviceKernels;
import dev.ubuf.tensor.TensorView;

/**
 * out[M, N] = allgather_rows(x_shard[M/tp, K]) * W[K, N] on this rank, overlapped by the chosen method (ring
 * exchange, aggregate, one-shot; BULK only gathers). Creating it is collective over the domain. The gathered input
 * stays in the user buffer ({@link #gathered()}) until the next call.
 */
public final class AllGatherGemmOp implements AutoCloseable {
    private final AgShape shape;
    private final AgMethod method;
    private final PlanRunner runner;

    public AllGatherGemmOp(TpCommunicator comm, AgShape shape, AgMethod method, AgOptions options,
                           DeviceKernels kernels, ExecutionSettings settings) {
        if (shape.tp() != comm.tp()) {
            throw new IllegalArgumentException("shape is for tp " + shape.tp() + ", communicator has " + comm.tp());
        }
        this.shape = shape;
        this.method = method;
        this.runner = new PlanRunner(comm, AgPlans.plan(method, shape, comm.rank(), options), kernels, settings);
    }

    /** The op with the method {@link AgPlanner#defaults()} picks for this shape and default options. */
    public static AllGatherGemmOp planned(TpCommunicator comm, AgShape shape, DeviceKernels kernels,
                                          ExecutionSettings settings) {
        return new AllGatherGemmOp(comm, shape, AgPlanner.defaults().choose(shape), AgOptions.defaults(), kernels,
                settings);
    }

    public AgShape shape() {
        return shape;
    }

    public AgMethod method() {
        return method;
    }

    /** The gathered [M, K] input in this rank's user buffer (natural order), valid after a call completes. */
    public TensorView gathered() {
        return runner.ubufMatrix();
    }

    /** Issues the op on {@code stream}: fork, overlapped steps, join. Inputs are validated before any GPU work. */
    public void forward(TensorView xShard, TensorView weight, boolean weightTransposed, TensorView out,
                        CudaStream stream) {
        if (!method.hasGemm()) {
            throw new IllegalStateException(method + " only gathers: use gather()");
        }
        runner.run(new OperandBindings(xShard, weight, weightTransposed, out, null), stream);
    }

    /** BULK: gathers x_shard into {@link #gathered()} on the comm stream while the caller runs other work. */
    public void gather(TensorView xShard, CudaStream stream) {
        runner.run(new OperandBindings(xShard, null, false, null, null), stream);
    }

    /** Waits for {@code stream} with the UB_TIMEOUT deadline. */
    public void await(CudaStream stream) {
        runner.await(stream);
    }

    /** Per-step timeline of the next calls, for finding where the overlap leaks (see {@link #traceReport()}). */
    public void enableTrace() {
        runner.enableTrace();
    }

    public String traceReport() {
        return runner.traceReport();
    }

    @Override
    public void close() {
        runner.close();
    }
}
