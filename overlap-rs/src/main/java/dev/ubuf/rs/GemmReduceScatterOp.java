package dev.ubuf.rs;

import dev.ubuf.comm.TpCommunicator;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.exec.ExecutionSettings;
import dev.ubuf.exec.OperandBindings;
import dev.ubuf.exec.PlanRunner;
import dev.ubuf.ops.DeviceKernels;
import dev.ubuf.tensor.TensorView;

/**
 * out[M/tp, N] = reducescatter_rows(x[M, K] * W[K, N]) (+ bias once, after the reduction) on this rank, overlapped
 * by the chosen method (ring exchange with fp32 fold-in, pipelined split RS, one-shot; BULK only reduce-scatters the
 * partial the caller put in {@link #partial()}). Creating it is collective over the domain.
 */
public final class GemmReduceScatterOp implements AutoCloseable {
    private final RsShape shape;
    private final RsMethod method;
    private final PlanRunner runner;

    public GemmReduceScatterOp(TpCommunicator comm, RsShape shape, RsMethod method, RsOptions options,
                               DeviceKernels kernels, ExecutionSettings settings) {
        if (shape.tp() != comm.tp()) {
            throw new IllegalArgumentException("shape is for tp " + shape.tp() + ", communicator has " + comm.tp());
        }
        this.shape = shape;
        this.method = method;
        ExecutionSettings s = settings;
        if (method == RsMethod.PIPELINE && settings.gemmSmBudget() == 0) {
            // Leave SMs to the pull-reduce kernel that runs beside the next block's GEMM.
            s = settings.withGemmSmBudget(comm.context().device().smCount() - options.gemmSmMargin());
        }
        this.runner = new PlanRunner(comm, RsSchedule.of(method, shape, options).plan(comm.rank()), kernels, s);
    }

    /** The op with the method and options {@link RsPlanner#DEFAULT} picks for this shape. */
    public static GemmReduceScatterOp planned(TpCommunicator comm, RsShape shape, DeviceKernels kernels,
                                              ExecutionSettings settings) {
        RsPlanner p = RsPlanner.DEFAULT;
        return new GemmReduceScatterOp(comm, shape, p.choose(shape), p.optionsFor(shape), kernels, settings);
    }

    public RsShape shape() {
        return shape;
    }

    public RsMethod method() {
        return method;
    }

    /** BULK: this rank's [M, N] partial goes here before {@link #reduceScatter}. */
    public TensorView partial() {
        return runner.ubufMatrix();
    }

    public void forward(TensorView x, TensorView weight, boolean weightTransposed, TensorView out, TensorView bias,
                        CudaStream stream) {
        if (method == RsMethod.BULK) {
            throw new IllegalStateException("BULK has no GEMM: write the partial into partial() and call reduceScatter()");
        }
        runner.run(new OperandBindings(x, weight, weightTransposed, out, bias), stream);
    }

    /** BULK: reduce-scatters {@link #partial()} into out (+ bias) on the comm stream. */
    public void reduceScatter(TensorView out, TensorView bias, CudaStream stream) {
        runner.run(new OperandBindings(null, null, false, out, bias), stream);
    }

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
