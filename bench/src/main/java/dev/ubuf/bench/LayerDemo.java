package dev.ubuf.bench;

import dev.ubuf.comm.ThreadDomain;
import dev.ubuf.comm.TpCommunicator;
import dev.ubuf.config.UbufEnvironment;
import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaEvent;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.cuda.PinnedHostBuffer;
import dev.ubuf.cuda.StreamPriority;
import dev.ubuf.layers.config.UbConfig;
import dev.ubuf.layers.tp.Activation;
import dev.ubuf.layers.tp.LayerNormMLP;
import dev.ubuf.layers.tp.Parameter;
import dev.ubuf.layers.tp.TpContext;
import dev.ubuf.layers.tp.TpLayer;
import dev.ubuf.op.PlannerSettings;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import dev.ubuf.trace.RankTrace;
import dev.ubuf.trace.SpanKind;
import dev.ubuf.trace.StepTrace;
import dev.ubuf.trace.StepTracer;
import org.apache.commons.math3.stat.descriptive.DescriptiveStatistics;

import java.io.PrintWriter;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.IntConsumer;

/**
 * {@code ubuf demo} on GPUs: a stack of sequence-parallel LayerNormMLP blocks trained with SGD on random batches
 * (MSE against a random target), a thread and a GPU per rank. Three stacks per rank, built from the same seed (so the
 * same weights): with the configuration's overlap, with every overlap off, and a timing-only copy that skips every
 * collective ({@link TpContext#createWithoutCommunication}; its numbers are wrong by design). Each iteration runs
 * one step of each, in the fixed order overlap, no_overlap, no_comm, on the same batch, so the GPU's drift hits all
 * three alike; a step is timed with CUDA events on every rank and its time is the maximum over ranks.
 */
public final class LayerDemo {
    /** The three timed modes, in the order each iteration runs them. */
    public static final List<String> MODES = List.of("overlap", "no_overlap", "no_comm");

    /**
     * What to run.
     *
     * @param overlapConfig the configuration of the "overlap" stack (the no_comm stack uses it too)
     * @param noOverlapConfig the same with ub_tp_comm_overlap off
     * @param trace           after the timed iterations, trace one more step of the overlap stack
     */
    public record Settings(int tp, UbConfig overlapConfig, UbConfig noOverlapConfig, long hidden, long ffn,
                           Activation activation, long tokens, int layers, int warmup, int iters, DType dtype,
                           float lr, long seed, boolean trace) {
    }

    /**
     * What came out: per iteration (warm-up included) the loss of the overlap and no_overlap stacks summed over
     * ranks, and each mode's step time (max over ranks, ms); medians over the timed iterations only. {@code trace}
     * is the traced overlap step of every rank, or null when none was asked for.
     */
    public record Result(String device, double[] lossOverlap, double[] lossNoOverlap, double[][] stepMs,
                         int warmup, StepTrace trace) {
        public double median(int mode) {
            DescriptiveStatistics d = new DescriptiveStatistics();
            for (int i = warmup; i < stepMs[mode].length; i++) {
                d.addValue(stepMs[mode][i]);
            }
            return d.getPercentile(50);
        }

        /** The largest |overlap − no_overlap| / |no_overlap| over the iterations (absolute where the loss is 0). */
        public double lossMaxRelDiff() {
            double worst = 0;
            for (int i = 0; i < lossOverlap.length; i++) {
                double d = Math.abs(lossOverlap[i] - lossNoOverlap[i]);
                double ref = Math.abs(lossNoOverlap[i]);
                double rel = ref == 0 ? d : d / ref;
                // NaN must not pass as agreement: Math.max keeps a NaN.
                worst = Double.isNaN(rel) ? Double.NaN : Math.max(worst, rel);
                if (Double.isNaN(worst)) {
                    return worst;
                }
            }
            return worst;
        }

        /** (T_no_overlap − T_overlap) / (T_no_overlap − T_no_comm): the share of the communication time hidden. */
        public double hiddenShare() {
            double exposed = median(1) - median(2);
            return exposed <= 0 ? Double.NaN : (median(1) - median(0)) / exposed;
        }

        public double speedup() {
            return median(1) / median(0);
        }
    }

    /**
     * The largest relative loss difference between the overlap and no_overlap runs that still counts as agreement:
     * both start from the same weights and see the same batches, but the overlapped GEMMs sum in another order, and
     * each step's rounding of the weights to the dtype lets such differences grow a little from step to step.
     */
    public static double lossTolerance(DType dtype) {
        return switch (dtype) {
            case FP32 -> 1e-3;
            case FP16 -> 1e-2;
            default -> 3e-2;
        };
    }

    private LayerDemo() {
    }

    /**
     * Runs the demo; {@code onIteration} is called on rank 0's thread after every iteration (for a progress bar),
     * {@code log} gets one line per iteration from rank 0.
     */
    public static Result run(Settings st, UbufEnvironment env, PlannerSettings planner, PrintWriter log,
                             IntConsumer onIteration) throws Exception {
        int total = st.warmup() + st.iters();
        double[] lossOn = new double[total];
        double[] lossOff = new double[total];
        double[][] ms = new double[MODES.size()][total];
        String[] device = new String[1];
        RankTrace[] traces = new RankTrace[st.tp()];
        ThreadDomain.run(st.tp(), env.timeout(), (rank, boot, ctx) -> {
            if (rank == 0) {
                device[0] = st.tp() + "x " + ctx.device().name();
            }
            rankBody(st, env, planner, rank, boot, ctx, lossOn, lossOff, ms, traces, log, onIteration);
        });
        return new Result(device[0], lossOn, lossOff, ms, st.warmup(), st.trace() ? stepTrace(st, device[0],
                List.of(traces)) : null);
    }

    /** The ranks' traces with what a reader of the trace file needs to know about them. */
    static StepTrace stepTrace(Settings st, String device, List<RankTrace> ranks) {
        Map<String, Object> meta = new LinkedHashMap<>();
        meta.put("device", device);
        meta.put("mode", "overlap");
        meta.put("step", "one training step (forward, loss gradient, backward, SGD) after " + (st.warmup()
                + st.iters()) + " iterations");
        meta.put("tp", st.tp());
        meta.put("layers", st.layers());
        meta.put("hidden", st.hidden());
        meta.put("ffn", st.ffn());
        meta.put("tokens", st.tokens());
        meta.put("activation", st.activation().name().toLowerCase(Locale.ROOT));
        meta.put("dtype", st.dtype().shortName());
        meta.put("methods", st.overlapConfig().methodTable().describe());
        meta.put("timing", "CUDA events recorded around every span (and every step of an overlapped op) on the"
                + " stream it ran on; times from cuEventElapsedTime against the rank's step-start event. Tracing"
                + " adds two event records per span, so this step is not one of the timed ones.");
        meta.put("clock_alignment", "each rank's times are relative to its own step-start event, recorded on its"
                + " caller stream right after a host barrier of all ranks with every stream idle; the GPUs' clocks"
                + " are not otherwise compared, so cross-rank offsets are accurate to the barrier's skew (tens of"
                + " microseconds)");
        return new StepTrace("ubuf demo: one overlap step, tp " + st.tp() + ", " + st.layers() + " x LayerNormMLP"
                + " (hidden " + st.hidden() + ", ffn " + st.ffn() + ", " + st.tokens() + " tokens, "
                + st.dtype().shortName() + ") on " + device, meta, ranks);
    }

    /** One stack of LayerNormMLP blocks on one context; closed (collectively) last block first, then the context. */
    private static final class Stack implements AutoCloseable {
        final TpContext context;
        final List<LayerNormMLP> blocks = new ArrayList<>();

        Stack(TpContext context, Settings st) {
            this.context = context;
            try {
                for (int l = 0; l < st.layers(); l++) {
                    blocks.add(new LayerNormMLP(context, st.hidden(), st.ffn(), st.activation(), true));
                }
            } catch (RuntimeException e) {
                close();
                throw e;
            }
        }

        @Override
        public void close() {
            try {
                for (int i = blocks.size() - 1; i >= 0; i--) {
                    blocks.get(i).close();
                }
            } finally {
                context.close();
            }
        }
    }

    private static void rankBody(Settings st, UbufEnvironment env, PlannerSettings planner, int rank,
                                 dev.ubuf.bootstrap.Bootstrap boot, CudaContext ctx, double[] lossOn,
                                 double[] lossOff, double[][] ms, RankTrace[] traces, PrintWriter log,
                                 IntConsumer onIteration) {
        int tp = st.tp();
        long rows = st.tokens() / tp;
        long hidden = st.hidden();
        long bytes = rows * hidden * st.dtype().bytes();
        // dy = 2 (y - t) / numel: numel of the whole loss, every rank's rows.
        float scale = (float) (2.0 / ((double) st.tokens() * hidden));
        int modes = MODES.size();
        try (TpCommunicator comm = TpCommunicator.create(boot, ctx, env, null);
             CudaStream s = ctx.createStream(StreamPriority.NORMAL);
             DeviceBuffer xb = ctx.allocate(bytes, "demo.x");
             DeviceBuffer tb = ctx.allocate(bytes, "demo.target");
             DeviceBuffer dyb = ctx.allocate(bytes, "demo.dy");
             DeviceBuffer sqb = ctx.allocate((long) modes * rows * Float.BYTES, "demo.rowSquares");
             PinnedHostBuffer sqHost = ctx.allocateHost((long) modes * rows * Float.BYTES);
             CudaEvent start = ctx.createEvent(true);
             CudaEvent end = ctx.createEvent(true);
             Stack on = new Stack(TpContext.create(comm, st.overlapConfig(), st.dtype(), st.tokens(), planner), st);
             Stack off = new Stack(TpContext.create(comm, st.noOverlapConfig(), st.dtype(), st.tokens(), planner),
                     st);
             Stack none = new Stack(TpContext.createWithoutCommunication(comm, st.overlapConfig(), st.dtype(),
                     st.tokens(), planner), st)) {
            Stack[] stacks = {on, off, none};
            TensorView x = TensorView.of(xb, rows, hidden, st.dtype());
            TensorView target = TensorView.of(tb, rows, hidden, st.dtype());
            TensorView dy = TensorView.of(dyb, rows, hidden, st.dtype());
            TensorView sq = TensorView.of(sqb, 1, (long) modes * rows, DType.FP32);
            for (Stack k : stacks) {
                for (int l = 0; l < k.blocks.size(); l++) {
                    // Every op made now, collectively, and not inside the first timed step (TE's initialize_ub).
                    k.blocks.get(l).prepare();
                    // The same seed in every stack: the same weights, so their losses can be compared.
                    k.blocks.get(l).initialize(st.seed() + 1000L * l, s);
                    k.blocks.get(l).zeroGrad(s);
                }
            }
            comm.await(s, () -> "demo set-up");
            int total = st.warmup() + st.iters();
            for (int it = 0; it < total; it++) {
                ctx.makeCurrent();
                // A fresh batch per iteration, different on every rank (its own tokens), the same for all modes.
                long batchSeed = TpLayer.shardSeed(st.seed() * 7919L + it, rank);
                on.context.kernels().fillRandom(x, batchSeed, 1f, s);
                on.context.kernels().fillRandom(target, batchSeed ^ 0x5DEECE66DL, 1f, s);
                comm.await(s, () -> "demo batch");
                double[] mine = new double[2 * modes];
                for (int m = 0; m < modes; m++) {
                    // Ranks start each step together, so the maximum over ranks is the step's time.
                    boot.barrier();
                    start.record(s);
                    step(stacks[m], st, x, target, dy, sq.cols(m * rows, rows), scale, s);
                    end.record(s);
                    int mode = m;
                    comm.await(s, () -> "demo step " + MODES.get(mode));
                    mine[m] = end.elapsedMillisSince(start);
                }
                s.copyToHost(sqHost, 0, sqb, 0, (long) modes * rows * Float.BYTES);
                comm.await(s, () -> "demo loss read-back");
                for (int m = 0; m < modes; m++) {
                    double sum = 0;
                    for (long r = 0; r < rows; r++) {
                        sum += sqHost.segment().getAtIndex(ValueLayout.JAVA_FLOAT, m * rows + r);
                    }
                    mine[modes + m] = sum;
                }
                // Per iteration: each mode's time as the maximum over ranks, each loss as the sum over ranks.
                ByteBuffer b = ByteBuffer.allocate(mine.length * Double.BYTES);
                for (double v : mine) {
                    b.putDouble(v);
                }
                byte[][] all = boot.allGather(b.array());
                double[] maxMs = new double[modes];
                double[] lossSum = new double[modes];
                for (byte[] r : all) {
                    ByteBuffer rb = ByteBuffer.wrap(r);
                    for (int m = 0; m < modes; m++) {
                        maxMs[m] = Math.max(maxMs[m], rb.getDouble(m * Double.BYTES));
                        lossSum[m] += rb.getDouble((modes + m) * Double.BYTES);
                    }
                }
                double numel = (double) st.tokens() * hidden;
                if (rank == 0) {
                    for (int m = 0; m < modes; m++) {
                        ms[m][it] = maxMs[m];
                    }
                    lossOn[it] = lossSum[0] / numel;
                    lossOff[it] = lossSum[1] / numel;
                    log.printf(java.util.Locale.ROOT, "iter %3d%s  loss overlap %.6f  no_overlap %.6f  step ms overlap %.3f  no_overlap"
                                    + " %.3f  no_comm %.3f%n", it, it < st.warmup() ? " (warm-up)" : "",
                            lossOn[it], lossOff[it], maxMs[0], maxMs[1], maxMs[2]);
                    log.flush();
                    onIteration.accept(it);
                }
            }
            if (st.trace()) {
                traces[rank] = traceStep(on, st, boot, ctx, s, x, target, dy, sq.cols(0, rows), scale, comm);
            }
            s.synchronize();
        }
    }

    /**
     * One more step of the overlap stack, traced: the ranks start it together (a barrier, then the tracer's origin
     * on the idle caller stream), the layers record their work into the tracer, and the rank's spans are read once
     * the step completed. Training goes on with it like any other step.
     */
    private static RankTrace traceStep(Stack on, Settings st, dev.ubuf.bootstrap.Bootstrap boot, CudaContext ctx,
                                       CudaStream s, TensorView x, TensorView target, TensorView dy, TensorView sq,
                                       float scale, TpCommunicator comm) {
        try (StepTracer tracer = new StepTracer(ctx, comm.rank())) {
            tracer.nameStream(s, "caller");
            on.context.trace(tracer);
            try {
                comm.await(s, () -> "demo trace set-up");
                boot.barrier();
                tracer.start(s);
                step(on, st, x, target, dy, sq, scale, s);
                comm.await(s, () -> "demo traced step");
                return tracer.collect();
            } finally {
                on.context.trace(null);
            }
        }
    }

    /** One training step of {@code k}: forward, MSE gradient, backward, SGD, zeroGrad, all on {@code s}. */
    private static void step(Stack k, Settings st, TensorView x, TensorView target, TensorView dy, TensorView sq,
                             float scale, CudaStream s) {
        TensorView h = x;
        for (LayerNormMLP b : k.blocks) {
            h = b.forward(h, s);
        }
        k.context.comm().context().makeCurrent();
        try (StepTracer.Scope t = k.context.span("mse grad", SpanKind.KERNEL, s)) {
            k.context.layerKernels().mseGrad(h, target, scale, dy, sq, s);
        }
        TensorView g = dy;
        for (int l = k.blocks.size() - 1; l >= 0; l--) {
            g = k.blocks.get(l).backward(g, s);
        }
        k.context.comm().context().makeCurrent();
        try (StepTracer.Scope t = k.context.span("sgd + zero grads", SpanKind.KERNEL, s)) {
            for (LayerNormMLP b : k.blocks) {
                for (Parameter p : b.parameters()) {
                    k.context.layerKernels().sgdStep(p.value(), p.grad(), st.lr(), s);
                }
                b.zeroGrad(s);
            }
        }
    }
}
