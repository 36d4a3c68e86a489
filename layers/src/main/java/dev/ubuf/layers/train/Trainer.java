package dev.ubuf.layers.train;

import dev.ubuf.comm.TpCommunicator;
import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.cuda.PinnedHostBuffer;
import dev.ubuf.layers.tp.GradientReductions;
import dev.ubuf.layers.tp.LayerNormMLP;
import dev.ubuf.layers.tp.Parameter;
import dev.ubuf.layers.tp.TpContext;
import dev.ubuf.resource.Closer;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import dev.ubuf.trace.SpanKind;
import dev.ubuf.trace.StepTracer;
import dev.ubuf.trace.Tracer;

import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * One rank's training step of a {@link LayerStack} with SGD on a mean-squared-error loss: forward, the MSE gradient,
 * backward, the gradients' mean over the data-parallel group, the SGD update, zeroed gradients, and FP8's end of
 * step. Everything is issued on the caller's stream (some of it beside, on the context's side stream, which the step
 * joins); nothing waits for the GPU except {@link #loss}. The stack's
 * {@link dev.ubuf.layers.tp.Collectives} decide how every collective runs (the DP average included), and its
 * context's tracer sees every span. Owns the output gradient and the loss's partial sums; not the stack or the group.
 */
public final class Trainer implements AutoCloseable {
    private final LayerStack stack;
    private final DataParallelGroup dp;
    private final float lr;
    private final SequenceParallelGrads spGrads;
    private final DeviceBuffer gradOutput;
    private final DeviceBuffer rowSquares;
    private final PinnedHostBuffer rowSquaresHost;
    private long lastRows;
    private final Closer closer;

    private Trainer(LayerStack stack, DataParallelGroup dp, float lr, SequenceParallelGrads spGrads,
                    DeviceBuffer gradOutput, DeviceBuffer rowSquares, PinnedHostBuffer rowSquaresHost, Closer closer) {
        this.stack = stack;
        this.dp = dp;
        this.lr = lr;
        this.spGrads = spGrads;
        this.gradOutput = gradOutput;
        this.rowSquares = rowSquares;
        this.rowSquaresHost = rowSquaresHost;
        this.closer = closer;
    }

    /**
     * A trainer of {@code stack} whose replicas form {@code dp}, with learning rate {@code lr}, reducing the
     * sequence-parallel gradients beside the update ({@link SequenceParallelGrads#BESIDE_UPDATE}, unless
     * {@code -Dubuf.spGradsBeside=false}).
     */
    public static Trainer create(LayerStack stack, DataParallelGroup dp, float lr) {
        return create(stack, dp, lr, SequenceParallelGrads.fromProperty());
    }

    /**
     * As {@link #create(LayerStack, DataParallelGroup, float)}, reducing the sequence-parallel gradients as
     * {@code spGrads} says.
     */
    public static Trainer create(LayerStack stack, DataParallelGroup dp, float lr, SequenceParallelGrads spGrads) {
        Objects.requireNonNull(stack, "stack");
        Objects.requireNonNull(spGrads, "spGrads");
        Objects.requireNonNull(dp, "dp");
        if (!(lr > 0) || !Float.isFinite(lr)) {
            throw new IllegalArgumentException("lr must be finite and > 0, got " + lr);
        }
        TpContext tc = stack.context();
        long rows = tc.maxTokens() / tc.tp();
        CudaContext ctx = tc.comm().context().makeCurrent();
        Closer closer = new Closer("the trainer");
        try {
            DeviceBuffer dy = closer.register("dy",
                    ctx.allocate(rows * stack.spec().hidden() * tc.dtype().bytes(), "train.dy"));
            DeviceBuffer sq = closer.register("row squares", ctx.allocate(rows * Float.BYTES, "train.rowSquares"));
            PinnedHostBuffer host = closer.register("row squares on the host", ctx.allocateHost(rows * Float.BYTES));
            return new Trainer(stack, dp, lr, spGrads, dy, sq, host, closer);
        } catch (RuntimeException e) {
            throw closer.closeAfter(e);
        }
    }

    /** One step on this rank's rows {@code x} and their {@code target} ([tokens/tp, hidden] each). */
    public void step(TensorView x, TensorView target, CudaStream stream) {
        lastRows = x.rows();
        step(x, target, TensorView.of(rowSquares, 1, x.rows(), DType.FP32), stream);
    }

    /**
     * One step, the loss's partial sums (each row's sum of squared errors, fp32, 1 x rows) into the caller's
     * {@code rowSquares}: for a caller that reads several steps' losses back at once.
     */
    public void step(TensorView x, TensorView target, TensorView rowSquares, CudaStream stream) {
        if (closer.isClosed()) {
            throw new IllegalStateException("the trainer is closed");
        }
        TpContext tc = stack.context();
        Tracer tracer = tc.tracer();
        TensorView y = stack.forward(x, stream);
        TensorView dy = TensorView.of(gradOutput, x.rows(), stack.spec().hidden(), tc.dtype());
        // dy = 2 (y - t) / numel, numel of the replica's whole loss: every rank of its TP group.
        float scale = (float) (2.0 / ((double) x.rows() * tc.tp() * stack.spec().hidden()));
        current();
        try (Tracer.Scope t = tc.span("mse grad", SpanKind.KERNEL, stream)) {
            tc.layerKernels().mseGrad(y, target, scale, dy, rowSquares, stream);
        }
        try (GradientReductions pending = spGrads == SequenceParallelGrads.BESIDE_UPDATE
                ? tc.deferGradientReductions() : null) {
            stack.backward(dy, stream);
            current();
            if (dp.size() > 1) {
                if (pending != null) {
                    pending.reduce(stream); // the data-parallel average reads every gradient
                }
                tc.collectives().dataParallel(dp.averaging(stack.parameters()), tracer, stream);
                current();
            }
            List<Parameter> after = pending == null ? List.of() : pending.parameters();
            Set<Parameter> waiting = new HashSet<>(after);
            List<Parameter> rest = new ArrayList<>();
            for (LayerNormMLP b : stack.blocks()) {
                for (Parameter p : b.parameters()) {
                    if (!waiting.contains(p)) {
                        rest.add(p);
                    }
                }
            }
            // The sequence-parallel gradients' all-reduce and FP8 delayed scaling's end of step (the step's amaxes
            // set the next step's scales) beside the update of the parameters that read neither.
            tc.endStepBeside(stream, pending, () -> sgd(tc, rest, "sgd + zero grads", stream));
            sgd(tc, after, "sgd + zero grads, sequence-parallel", stream);
        }
    }

    /** Each parameter's update clears its gradient in the same pass (what zeroGrad would do after it). */
    private void sgd(TpContext tc, List<Parameter> ps, String span, CudaStream stream) {
        if (ps.isEmpty()) {
            return;
        }
        try (Tracer.Scope t = tc.span(span, SpanKind.KERNEL, stream)) {
            for (Parameter p : ps) {
                tc.layerKernels().sgdStep(p.value(), p.grad(), lr, true, stream);
            }
        }
    }

    /**
     * One step on {@code x} and {@code target}, captured as a CUDA graph on {@code stream} and not run: each
     * {@link StepGraph#replay} runs the whole step (forward, loss gradient, backward, DP average, SGD) from one host
     * call, reading whatever {@code x} and {@code target} hold then and writing the loss's partial sums into
     * {@code rowSquares}, as {@link #step(TensorView, TensorView, TensorView, CudaStream)} would. Call it after
     * {@link LayerStack#initialize} (every op made, every GEMM tuned: nothing is timed under capture), on a context
     * made graph-capturable ({@link TpContext#create(dev.ubuf.comm.TpCommunicator, dev.ubuf.layers.config.UbConfig,
     * DType, long, dev.ubuf.op.PlannerSettings, dev.ubuf.layers.tp.Collectives, boolean)}). Capturing runs nothing, so
     * it is not collective; replays are, as steps are (every rank replays its own graph of the same step). With FP8,
     * the scale tables are put on the device first, and delayed scaling's state advances on the device from replay
     * to replay (the context, being graph-capturable, counts the steps there). Refused, before anything is captured:
     * a traced context (trace inside the graph with {@link #captureTraced} instead).
     */
    public StepGraph capture(TensorView x, TensorView target, TensorView rowSquares, CudaStream stream) {
        return capture(x, target, rowSquares, stream, null);
    }

    /**
     * As {@link #capture(TensorView, TensorView, TensorView, CudaStream)}, with the step traced inside the graph:
     * {@code tracer}, which must be the context's tracer ({@link TpContext#trace}), starts its step on {@code stream}
     * once the capture has begun, so its origin and every span, the ops' steps included, are event record nodes of
     * the graph that each replay re-times ({@link StepTracer}). Read them with {@link StepTracer#collect()} after a
     * replay completed; keep the tracer open while the graph may be replayed. The traced graph computes what the
     * untraced one does.
     */
    public StepGraph captureTraced(TensorView x, TensorView target, TensorView rowSquares, CudaStream stream,
                                   StepTracer tracer) {
        return capture(x, target, rowSquares, stream, Objects.requireNonNull(tracer, "tracer"));
    }

    private StepGraph capture(TensorView x, TensorView target, TensorView rowSquares, CudaStream stream,
                              StepTracer tracer) {
        if (closer.isClosed()) {
            throw new IllegalStateException("the trainer is closed");
        }
        TpContext tc = stack.context();
        if (!tc.graphCapturable()) {
            throw new IllegalStateException("this context's ops signal with host sequence numbers, which a replay"
                    + " would repeat: make it graph-capturable (TpContext.create(..., true)) to capture steps");
        }
        if (tracer == null && tc.tracer() != Tracer.NOOP) {
            throw new IllegalStateException("a traced step cannot be captured: stop tracing (TpContext.trace(NOOP))"
                    + " first, or capture it with captureTraced");
        }
        if (tracer != null && tc.tracer() != tracer) {
            throw new IllegalStateException("captureTraced: trace the context with this tracer first"
                    + " (TpContext.trace(tracer))");
        }
        current();
        tc.fp8Prepare(stream);
        return new StepGraph(tc.comm().context(), stream.capture(() -> {
            if (tracer != null) {
                tracer.start(stream);
            }
            step(x, target, rowSquares, stream);
        }, true));
    }

    /**
     * The mean squared error of the last {@link #step(TensorView, TensorView, CudaStream)} over the replica (every
     * rank of the TP group): waits for {@code stream}, then sums over the group (collective over the TP group).
     */
    public double loss(CudaStream stream) {
        if (lastRows == 0) {
            throw new IllegalStateException("no step of this trainer has kept its loss yet");
        }
        TpCommunicator comm = stack.context().comm();
        current();
        stream.copyToHost(rowSquaresHost, 0, rowSquares, 0, lastRows * Float.BYTES);
        comm.await(stream, () -> "training loss read-back");
        double mine = 0;
        for (long r = 0; r < lastRows; r++) {
            mine += rowSquaresHost.segment().getAtIndex(ValueLayout.JAVA_FLOAT, r);
        }
        double sum = 0;
        for (byte[] b : comm.bootstrap().allGather(ByteBuffer.allocate(Double.BYTES).putDouble(mine).array())) {
            sum += ByteBuffer.wrap(b).getDouble();
        }
        return sum / ((double) lastRows * comm.tp() * stack.spec().hidden());
    }

    public LayerStack stack() {
        return stack;
    }

    private void current() {
        stack.context().comm().context().makeCurrent();
    }

    /** Frees the trainer's buffers; the stream must have finished its last step. */
    @Override
    public void close() {
        if (!closer.isClosed()) {
            current();
            closer.close();
        }
    }
}
