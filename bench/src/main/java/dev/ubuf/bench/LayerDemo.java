package dev.ubuf.bench;

import dev.ubuf.bootstrap.Bootstrap;
import dev.ubuf.bootstrap.DomainLayout;
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
import dev.ubuf.layers.tp.Collectives;
import dev.ubuf.layers.tp.StepCheck;
import dev.ubuf.layers.tp.TpContext;
import dev.ubuf.layers.tp.TpLayer;
import dev.ubuf.layers.train.DataParallelGroup;
import dev.ubuf.layers.train.LayerStack;
import dev.ubuf.layers.train.MlpSpec;
import dev.ubuf.layers.train.ReplicaCheck;
import dev.ubuf.layers.train.StepGraph;
import dev.ubuf.layers.train.Trainer;
import dev.ubuf.op.PlannerSettings;
import dev.ubuf.resource.Closer;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import dev.ubuf.trace.RankTrace;
import dev.ubuf.trace.StepTrace;
import dev.ubuf.trace.StepTracer;
import dev.ubuf.trace.Tracer;
import org.apache.commons.math3.stat.descriptive.DescriptiveStatistics;

import java.io.PrintWriter;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.StringJoiner;
import java.util.function.IntConsumer;

/**
 * {@code ubuf demo} on GPUs, a harness over the layers' training ({@link LayerStack}, {@link Trainer}): a stack of
 * sequence-parallel LayerNormMLP blocks trained with SGD on random batches (MSE against a random target), a thread
 * and a GPU per rank. Three stacks per rank, built from the same seed (so the same weights): with the
 * configuration's overlap, with every overlap off, and a timing-only copy of the latter that skips every collective
 * after two priming steps that run them ({@link NoCommAfterFirstStep}; its outputs are wrong by design), so each of
 * its GEMMs runs whole on every SM, on real values. Each iteration runs
 * one step of each, in the fixed order overlap, no_overlap, no_comm, on the same batch, so the GPU's drift hits all
 * three alike; a step is timed with CUDA events on every rank and its time is the maximum over ranks.
 *
 * <p>Data parallelism ({@link Settings#replicas()} R &gt; 1): the world of R x tp ranks (GPU i for rank i) splits
 * as {@link DomainLayout} says: TP group g is ranks g·tp .. g·tp+tp-1 (a replica), the DP group of TP position t is
 * ranks t, t+tp, .... Each TP group gets its own TP communicator (bootstrap subgroup, user buffers, TP NCCL
 * communicator); each DP group its own NCCL communicator ({@link DataParallelGroup}). Every replica trains the same
 * weights on its own batches (seeded by world rank, so by replica and TP rank), and after backward the overlap and
 * no_overlap stacks average their gradients over the DP group (one fused NCCL all-reduce of every parameter) before
 * the SGD step, so the replicas' weights stay identical; the no_comm stack skips the DP all-reduce as it skips every
 * TP collective (its replicas drift apart: timing only). Step times are the maximum over all ranks, the loss is the
 * mean over replicas of each replica's MSE (each replica's is reported too), and at the end every rank hashes its
 * overlap and no_overlap parameters and the replicas' hashes are compared.
 */
public final class LayerDemo {
    /** How often {@link Settings#clocks} samples each GPU's clock. */
    public static final long CLOCK_PERIOD_MICROS = 250;
    /** The three timed modes, in the order each iteration runs them. */
    public static final List<String> MODES = List.of("overlap", "no_overlap", "no_comm");
    /** no_comm's steps with their collectives before it skips them: the second quantizes with real FP8 scales. */
    static final int NO_COMM_PRIMING_STEPS = 2;
    /**
     * The fourth mode of an FP8 run asked to compare with bf16: the overlap stack with FP8 off (the layers' dtype in
     * every GEMM), same weights and batches, run after the three others in each iteration.
     */
    public static final String COMPARE_MODE = "bf16_overlap";

    /**
     * What to run.
     *
     * @param tp            ranks of a TP group
     * @param replicas      TP groups trained as data-parallel replicas (1: no data parallelism)
     * @param overlapConfig the configuration of the "overlap" stack
     * @param noOverlapConfig the same with ub_tp_comm_overlap off (the no_comm stack uses it too)
     * @param trace           after the timed iterations, trace one more step of the overlap stack
     * @param compareConfig   an FP8 run's overlap configuration with FP8 off: a fourth stack
     *                        ({@link #COMPARE_MODE}) trains with it; null for none
     * @param cudaGraph       the timed steps replay each stack's step captured as a CUDA graph
     * @param clocks          every rank samples its GPU's SM clock through NVML during the timed steps
     *                        ({@link ClockSampler}): the clock each mode ran at
     * @param stepsPerSample  steps each mode runs back to back per iteration after the barrier (1 to
     *                        {@link #MAX_STEPS_PER_SAMPLE}); its time is the sample's over their number, so the
     *                        skew with which the ranks leave the barrier counts once per sample, not once a step
     */
    public record Settings(int tp, int replicas, UbConfig overlapConfig, UbConfig noOverlapConfig, long hidden,
                           long ffn, Activation activation, long tokens, int layers, int warmup, int iters,
                           DType dtype, float lr, long seed, boolean trace, UbConfig compareConfig,
                           boolean cudaGraph, boolean clocks, int stepsPerSample) {
        /** The most steps one timed sample may run back to back. */
        public static final int MAX_STEPS_PER_SAMPLE = 64;

        public Settings {
            if (replicas < 1) {
                throw new IllegalArgumentException("replicas must be at least 1, got " + replicas);
            }
            if (stepsPerSample < 1 || stepsPerSample > MAX_STEPS_PER_SAMPLE) {
                throw new IllegalArgumentException("--steps-per-sample must be 1 to " + MAX_STEPS_PER_SAMPLE
                        + ", got " + stepsPerSample);
            }
            if (compareConfig != null && (!overlapConfig.fp8Enabled() || compareConfig.fp8Enabled())) {
                throw new IllegalArgumentException("the comparison stack is the FP8 run's twin without FP8");
            }
        }

        /** The modes each iteration runs, in order: {@link #MODES}, then {@link #COMPARE_MODE} when comparing. */
        public List<String> modes() {
            if (compareConfig == null) {
                return MODES;
            }
            List<String> m = new ArrayList<>(MODES);
            m.add(COMPARE_MODE);
            return List.copyOf(m);
        }

        /** The model every stack trains. */
        public MlpSpec spec() {
            return new MlpSpec(hidden, ffn, activation, layers);
        }

        /** How the world of replicas x tp ranks splits into TP and DP groups. */
        public DomainLayout layout() {
            return new DomainLayout(Math.multiplyExact(replicas, tp), tp);
        }
    }

    /**
     * One mode's SM clock over its timed steps ({@link Settings#clocks}): the mean over ranks of each rank's mean
     * (MHz), the lowest rank's mean, the share of all ranks' samples taken while the power cap, or a thermal or
     * hardware slowdown, held the clocks down, and the number of samples (all ranks).
     */
    public record ModeClocks(String mode, double meanMhz, double lowestRankMhz, double powerCapShare,
                             double otherSlowdownShare, long samples) {
    }

    /**
     * What came out: per iteration (warm-up included) the loss of the overlap and no_overlap stacks (the mean over
     * replicas of each replica's MSE; {@code replicaLoss*[it][g]} is replica g's), and each mode's step time (max over
     * all ranks, ms); medians over the timed iterations only. {@code replicaWeights}: whether every replica ended with
     * bit-identical overlap and no_overlap parameters, and what was compared (null with one replica). {@code trace}
     * is the traced overlap step of every world rank (ordered by world rank), {@code traceNoComm} the no_comm stack's
     * traced step likewise (the compute alone) and {@code traceNoOverlap} the no_overlap stack's (the same compute on
     * the data real collectives give, unoverlapped), all null when no trace was asked for.
     * {@code initSeconds}: rank 0's initialisation of every stack (ops made, GEMMs tuned, weights set);
     * {@code secondsToFirstStep}: from the JVM's start to the first timed step's start on rank 0 (after the warm-up);
     * {@code untunedGemms}: GEMMs the steps ran untuned because the initialisation had not seen them (max over ranks).
     * {@code hostMs}: per mode and iteration, the host's time to enqueue the step (the call returning; max over ranks):
     * where it is close to the step's GPU time, the host, not the GPU, sets the pace. {@code rankSpreadMs}: per mode
     * and iteration, the step time's maximum minus its minimum over the ranks: a rank that starts early waits for its
     * peers at their first collective, so a spread in the modes with collectives well above no_comm's is the ranks'
     * skew, which their maximum carries. {@code clocks}: per mode, the
     * SM clock it ran at (empty unless asked for; {@code clocksUnavailable} says why when asked for and not sampled).
     * {@code autoChoices}: what each {@code method: auto} GEMM of the overlap stack runs (rank 0's context, the same
     * on every rank: the planner decides collectively), {@link TpContext#autoChoices}.
     */
    public record Result(String device, double[] lossOverlap, double[] lossNoOverlap, double[][] replicaLossOverlap,
                         double[][] replicaLossNoOverlap, double[][] stepMs, int warmup, ReplicaCheck replicaWeights,
                         StepTrace trace, StepTrace traceNoComm, StepTrace traceNoOverlap, double[] lossCompare,
                         double initSeconds,
                         double secondsToFirstStep, int untunedGemms, double[][] hostMs, double[][] rankSpreadMs,
                         java.util.Optional<StepCheck.Result> stepCheck, List<ModeClocks> clocks,
                         String clocksUnavailable, Map<String, String> autoChoices) {
        public double median(int mode) {
            return medianAfterWarmup(stepMs[mode]);
        }

        /** The median host enqueue time of {@code mode}'s timed iterations, ms. */
        public double hostMedian(int mode) {
            return medianAfterWarmup(hostMs[mode]);
        }

        /** The median over {@code mode}'s timed iterations of its step time's spread over the ranks (max - min), ms. */
        public double rankSpreadMedian(int mode) {
            return medianAfterWarmup(rankSpreadMs[mode]);
        }

        private double medianAfterWarmup(double[] values) {
            DescriptiveStatistics d = new DescriptiveStatistics();
            for (int i = warmup; i < values.length; i++) {
                d.addValue(values[i]);
            }
            return d.getPercentile(50);
        }

        /** The largest |overlap − no_overlap| / |no_overlap| over the iterations (absolute where the loss is 0). */
        public double lossMaxRelDiff() {
            return maxRelDiff(lossOverlap, lossNoOverlap);
        }

        /** The largest |overlap − bf16_overlap| / |bf16_overlap| (FP8 against bf16); NaN without the comparison. */
        public double lossVsCompareMaxRelDiff() {
            return lossCompare == null ? Double.NaN : maxRelDiff(lossOverlap, lossCompare);
        }

        private static double maxRelDiff(double[] got, double[] ref0) {
            double worst = 0;
            for (int i = 0; i < got.length; i++) {
                double d = Math.abs(got[i] - ref0[i]);
                double ref = Math.abs(ref0[i]);
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

    /**
     * The largest relative difference between an FP8 run's loss and the same run without FP8 that still counts as
     * tracking it: FP8 rounds every GEMM operand to 3 (E4M3) or 2 (E5M2) mantissa bits, which perturbs each GEMM's
     * output by a few percent of its size, noise uncorrelated with the target, so the MSE grows by about its square
     * (well under 1%); the first delayed-scaling step runs at scale 1 (no amax seen yet), where the tiny gradients
     * underflow E5M2 and that step's update is lost, a further small shift. 5% leaves room for both over a few
     * iterations; a broken FP8 path (a wrong scale, a transposed operand) misses it by far.
     */
    public static final double FP8_VS_BF16_LOSS_TOLERANCE = 5e-2;

    private LayerDemo() {
    }

    /**
     * One line naming the ranks of every TP group (a replica) and every DP group, e.g. for 2 replicas of tp 2:
     * {@code TP groups (replicas): 0=[0, 1] 1=[2, 3]; DP groups (gradient all-reduce): [0, 2] [1, 3]}.
     */
    public static String describeGroups(DomainLayout layout) {
        StringJoiner tpGroups = new StringJoiner(" ");
        for (int g = 0; g < layout.tpGroups(); g++) {
            tpGroups.add(g + "=" + Arrays.toString(layout.tpGroupRanks(g * layout.tp())));
        }
        StringJoiner dpGroups = new StringJoiner(" ");
        for (int t = 0; t < layout.tp(); t++) {
            dpGroups.add(Arrays.toString(layout.dpGroupRanks(t)));
        }
        return "TP groups (replicas): " + tpGroups + "; DP groups (gradient all-reduce): " + dpGroups;
    }

    /**
     * Runs the demo; {@code onIteration} is called on rank 0's thread after every iteration (for a progress bar),
     * {@code log} gets one line per iteration from rank 0.
     */
    public static Result run(Settings st, UbufEnvironment env, PlannerSettings planner, PrintWriter log,
                             IntConsumer onIteration) throws Exception {
        Outputs o = outputs(st);
        // One thread and GPU per world rank; each rank then splits the world bootstrap into its TP and DP groups.
        ThreadDomain.run(st.layout().worldSize(), env.timeout(),
                (rank, world, ctx) -> rank(st, env, planner, world, ctx, o, log, onIteration));
        return result(st, o);
    }

    /**
     * The demo as one process of a launched job ({@code launch}, as {@code bin/ubuf-launch}, or anything that sets
     * RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT as torchrun does, describes it in the process's
     * environment): this process is world rank RANK on GPU LOCAL_RANK,
     * so the ranks share no CUDA driver state, as PyTorch's ranks do not. World rank 0 returns the result, the other
     * ranks empty. The world must be replicas x tp ranks; {@link Settings#trace} is refused (the trace is every
     * rank's spans, gathered in one process).
     */
    public static java.util.Optional<Result> runLaunched(Settings st, dev.ubuf.bootstrap.LaunchEnvironment launch,
                                                         UbufEnvironment env, PlannerSettings planner,
                                                         PrintWriter log, IntConsumer onIteration) throws Exception {
        checkLaunch(st, launch.worldSize());
        Outputs o = outputs(st);
        try (dev.ubuf.bootstrap.TcpBootstrap world = dev.ubuf.bootstrap.TcpBootstrap.connect(launch,
                dev.ubuf.bootstrap.BootstrapConfig.fromEnvironment(System.getenv()))) {
            CudaContext ctx = CudaContext.retainPrimary(launch.localRank());
            try {
                rank(st, env, planner, world, ctx, o, log, onIteration);
            } catch (Exception | Error e) {
                world.abort("rank " + world.rank() + " failed: " + e);
                throw e;
            } finally {
                ctx.close();
            }
            return world.rank() == 0 ? java.util.Optional.of(result(st, o)) : java.util.Optional.empty();
        }
    }

    /** What {@link #runLaunched} refuses before any GPU work: a world of another size, a trace. */
    public static void checkLaunch(Settings st, int worldSize) {
        if (worldSize != st.layout().worldSize()) {
            throw new IllegalArgumentException("the job has " + worldSize + " ranks, but --num-replicas "
                    + st.replicas() + " x --tp " + st.tp() + " needs " + st.layout().worldSize());
        }
        if (st.trace()) {
            throw new IllegalArgumentException("--trace needs every rank's spans in one process: run the demo without"
                    + " the launcher (ranks as threads) to trace");
        }
    }

    static Outputs outputs(Settings st) {
        int total = st.warmup() + st.iters();
        DomainLayout layout = st.layout();
        return new Outputs(new double[total], new double[total], new double[total][st.replicas()],
                new double[total][st.replicas()], new double[st.modes().size()][total], new String[1],
                new ReplicaCheck[1], new RankTrace[layout.worldSize()], new RankTrace[layout.worldSize()],
                new RankTrace[layout.worldSize()],
                st.compareConfig() == null ? null : new double[total], new double[2],
                new int[layout.worldSize()], new double[st.modes().size()][total],
                new double[st.modes().size()][total], new StepCheck.Result[1],
                new ArrayList<>(), new String[1], new LinkedHashMap<>());
    }

    /** One world rank's part: its TP and DP groups split off the world bootstrap, then {@link #rankBody}. */
    private static void rank(Settings st, UbufEnvironment env, PlannerSettings planner, Bootstrap world,
                             CudaContext ctx, Outputs o, PrintWriter log, IntConsumer onIteration) {
        DomainLayout layout = st.layout();
        int rank = world.rank();
        if (rank == 0) {
            o.device()[0] = layout.worldSize() + "x " + ctx.device().name();
        }
        try (Bootstrap tpGroup = world.subgroup(layout.tpGroupRanks(rank));
             Bootstrap dpGroup = world.subgroup(layout.dpGroupRanks(rank))) {
            rankBody(st, env, planner, world, tpGroup, dpGroup, ctx, o, log, onIteration);
        }
    }

    private static Result result(Settings st, Outputs o) {
        return new Result(o.device()[0], o.lossOn(), o.lossOff(), o.replicaLossOn(), o.replicaLossOff(), o.ms(),
                st.warmup(), o.weights()[0],
                st.trace() ? stepTrace(st, o.device()[0], "overlap", List.of(o.traces())) : null,
                st.trace() ? stepTrace(st, o.device()[0], "no_comm", List.of(o.tracesNoComm())) : null,
                st.trace() ? stepTrace(st, o.device()[0], "no_overlap", List.of(o.tracesNoOverlap())) : null,
                o.lossCompare(), o.initSeconds()[0], o.initSeconds()[1],
                java.util.Arrays.stream(o.untuned()).max().orElse(0), o.hostMs(), o.spreadMs(),
                java.util.Optional.ofNullable(o.stepCheck()[0]), List.copyOf(o.clocks()), o.clocksUnavailable()[0],
                o.autoChoices());
    }

    /** The ranks' traces (one per world rank) with what a reader of the trace file needs to know about them. */
    static StepTrace stepTrace(Settings st, String device, String mode, List<RankTrace> ranks) {
        DomainLayout layout = st.layout();
        Map<String, Object> meta = new LinkedHashMap<>();
        meta.put("device", device);
        meta.put("mode", mode);
        meta.put("step", "one training step (forward, loss gradient, backward"
                + (st.replicas() > 1 ? ", the gradients' mean over the DP group" : "") + ", SGD) after "
                + (st.warmup() + st.iters()) + " iterations");
        meta.put("tp", st.tp());
        meta.put("replicas", st.replicas());
        meta.put("world_size", layout.worldSize());
        if (st.replicas() > 1) {
            meta.put("groups", describeGroups(layout));
            meta.put("pid", "the world rank: rank r is TP rank r mod tp of replica r / tp");
            meta.put("dp_all_reduce", "the DP gradient all-reduce (one fused NCCL group call of every parameter's"
                    + " fp32 gradient, ncclAvg, on the DP group's own communicator) is the caller stream's span of"
                    + " kind nccl before the SGD span");
        }
        meta.put("layers", st.layers());
        meta.put("hidden", st.hidden());
        meta.put("ffn", st.ffn());
        meta.put("tokens", st.tokens());
        meta.put("activation", st.activation().name().toLowerCase(Locale.ROOT));
        meta.put("dtype", st.dtype().shortName());
        st.overlapConfig().fp8().ifPresent(r -> meta.put("fp8", dev.ubuf.layers.config.Fp8Key.describe(r)));
        meta.put("methods", st.overlapConfig().methodTable().describe());
        meta.put("timing", "CUDA events recorded around every span (and every step of an overlapped op) on the"
                + " stream it ran on; times from cuEventElapsedTime against the rank's step-start event. Tracing"
                + " adds two event records per span, so this step is not one of the timed ones."
                + (st.cudaGraph() ? " The step is a replay of a CUDA graph captured with the events as its own event"
                + " record nodes, as the timed steps replay theirs: the GPU's schedule of the step, without the"
                + " host's spans (the host issued them while capturing)." : ""));
        meta.put("clock_alignment", "each rank's times are relative to its own step-start event, recorded on its"
                + " caller stream right after a host barrier of all " + layout.worldSize() + " world ranks (every"
                + " TP group and every replica) with every stream idle; the GPUs' clocks are not otherwise compared,"
                + " so cross-rank offsets are accurate to the barrier's skew (tens of microseconds)");
        return new StepTrace("ubuf demo: one " + mode + " step, tp " + st.tp()
                + (st.replicas() > 1 ? " x " + st.replicas() + " replicas" : "") + ", " + st.layers()
                + " x LayerNormMLP (hidden " + st.hidden() + ", ffn " + st.ffn() + ", " + st.tokens() + " tokens"
                + (st.replicas() > 1 ? " per replica" : "") + ", " + st.dtype().shortName() + ") on " + device,
                meta, ranks);
    }

    /**
     * Where rank 0 writes the results (the other ranks only contribute through the world bootstrap); {@code traces}
     * is written by every rank at its world rank.
     */
    record Outputs(double[] lossOn, double[] lossOff, double[][] replicaLossOn, double[][] replicaLossOff,
                           double[][] ms, String[] device, ReplicaCheck[] weights, RankTrace[] traces,
                           RankTrace[] tracesNoComm, RankTrace[] tracesNoOverlap, double[] lossCompare,
                           double[] initSeconds, int[] untuned,
                           double[][] hostMs, double[][] spreadMs, StepCheck.Result[] stepCheck,
                           List<ModeClocks> clocks, String[] clocksUnavailable, Map<String, String> autoChoices) {
    }

    /** One mode's stack and its trainer; closed (collectively) trainer first, then the stack and its context. */
    private static final class Stack implements AutoCloseable {
        final LayerStack layers;
        final Trainer trainer;

        Stack(TpContext context, Settings st, DataParallelGroup dp) {
            this.layers = LayerStack.create(context, st.spec());
            try {
                this.trainer = Trainer.create(layers, dp, st.lr());
            } catch (RuntimeException e) {
                layers.close();
                throw e;
            }
        }

        @Override
        public void close() {
            try {
                trainer.close();
            } finally {
                layers.close();
            }
        }
    }

    private static void rankBody(Settings st, UbufEnvironment env, PlannerSettings planner, Bootstrap world,
                                 Bootstrap tpGroup, Bootstrap dpGroup, CudaContext ctx, Outputs o, PrintWriter log,
                                 IntConsumer onIteration) {
        int rank = world.rank();
        int tp = st.tp();
        int replicas = st.replicas();
        long rows = st.tokens() / tp;
        long hidden = st.hidden();
        long bytes = rows * hidden * st.dtype().bytes();
        int modes = st.modes().size();
        // The TP communicator (user buffers, TP NCCL) spans the TP group only; the DP group has its own NCCL.
        NoCommAfterFirstStep noComm = new NoCommAfterFirstStep();
        try (TpCommunicator comm = TpCommunicator.create(tpGroup, ctx, env, null);
             DataParallelGroup dp = DataParallelGroup.join(dpGroup, ctx);
             CudaStream s = ctx.createStream(StreamPriority.NORMAL);
             DeviceBuffer xb = ctx.allocate(bytes, "demo.x");
             DeviceBuffer tb = ctx.allocate(bytes, "demo.target");
             DeviceBuffer sqb = ctx.allocate((long) modes * rows * Float.BYTES, "demo.rowSquares");
             PinnedHostBuffer sqHost = ctx.allocateHost((long) modes * rows * Float.BYTES);
             CudaEvent start = ctx.createEvent(true);
             CudaEvent end = ctx.createEvent(true);
             Stack on = new Stack(TpContext.create(comm, st.overlapConfig(), st.dtype(), st.tokens(), planner,
                     Collectives.nccl(), st.cudaGraph()), st, dp);
             Stack off = new Stack(TpContext.create(comm, st.noOverlapConfig(), st.dtype(), st.tokens(), planner,
                     Collectives.nccl(), st.cudaGraph()), st, dp);
             // no_comm is no_overlap with its collectives skipped: each GEMM whole, on every SM, the step's
             // compute alone. The overlap configuration's ops would run their chunk GEMMs instead (with SM
             // margins, on one stream), which is no lower bound: at 70B dims the overlap step beat it by 7%. Its
             // priming steps with their collectives (below) give its GEMMs real values, not zeros.
             Stack none = new Stack(TpContext.create(comm, st.noOverlapConfig(), st.dtype(), st.tokens(), planner,
                     noComm, st.cudaGraph()), st, dp);
             Stack cmp = st.compareConfig() == null ? null : new Stack(TpContext.create(comm, st.compareConfig(),
                     st.dtype(), st.tokens(), planner, Collectives.nccl(), st.cudaGraph()), st, dp);
             Closer graphs = new Closer("the demo's step graphs and clock sampler")) {
            try {
                Stack[] stacks = cmp == null ? new Stack[]{on, off, none} : new Stack[]{on, off, none, cmp};
                TensorView x = TensorView.of(xb, rows, hidden, st.dtype());
                TensorView target = TensorView.of(tb, rows, hidden, st.dtype());
                TensorView sq = TensorView.of(sqb, 1, (long) modes * rows, DType.FP32);
                long initStart = System.nanoTime();
                for (Stack k : stacks) {
                    // Every op made and every GEMM tuned now, collectively, never inside a step (TE's
                    // initialize_ub); the same seed in every stack and every replica: the same weights, so their
                    // losses can be compared and the replicas start identical.
                    k.layers.initialize(st.seed(), s);
                }
                comm.await(s, () -> "demo set-up");
                // Steps of no_comm with their collectives, on every rank at once, before anything is timed or
                // captured: from then on its gathered buffers hold real values (NoCommAfterFirstStep). Two, because
                // FP8 delayed scaling quantizes a first step with its initial scales, at which the loss gradients
                // (~1e-7) are all E5M2 zeros: gathered once, those zeros made no_comm's backward GEMMs 6-11% faster
                // than on the codes a real step gathers (8B dims, tp 2, 2x H200, 2026-11-28).
                on.layers.context().kernels().fillRandom(x, TpLayer.shardSeed(st.seed() * 7919L - 1, rank), 1f, s);
                on.layers.context().kernels().fillRandom(target, TpLayer.shardSeed(st.seed() * 7919L - 2, rank), 1f, s);
                for (int priming = 0; priming < NO_COMM_PRIMING_STEPS; priming++) {
                    none.trainer.step(x, target, sq.cols(2L * rows, rows), s);
                }
                comm.await(s, () -> "demo no_comm priming steps");
                noComm.skipFromNow();
                if (rank == 0) {
                    o.initSeconds()[0] = (System.nanoTime() - initStart) / 1e9;
                    o.stepCheck()[0] = on.layers.context().stepCheck().orElse(null);
                    o.autoChoices().putAll(on.layers.context().autoChoices());
                }
                int untunedAtInit = comm.gemmTuner().untunedCount();
                int total = st.warmup() + st.iters();
                ClockSampler clocks = null;
                String clocksFailure = null;
                if (st.clocks()) {
                    try {
                        clocks = graphs.register("the clock sampler", ClockSampler.start(ctx.device().pciBusId(),
                                CLOCK_PERIOD_MICROS));
                    } catch (IllegalStateException e) {
                        clocksFailure = e.getMessage();
                    }
                }
                ClockSampler.Tally[] tallies = new ClockSampler.Tally[modes];
                for (int m = 0; m < modes; m++) {
                    tallies[m] = new ClockSampler.Tally();
                }
                StepGraph[] replays = new StepGraph[modes];
                for (int it = 0; it < total; it++) {
                    ctx.makeCurrent();
                    if (st.cudaGraph() && it == st.warmup()) {
                        // The timed steps replay each stack's step captured now, after the eager warm-up (nothing
                        // runs while capturing, so no rank waits on another here).
                        for (int m = 0; m < modes; m++) {
                            replays[m] = graphs.register(st.modes().get(m) + " step graph",
                                    stacks[m].trainer.capture(x, target, sq.cols(m * rows, rows), s));
                        }
                    }
                    // A fresh batch per iteration, different on every world rank (its replica's tokens of its TP rank;
                    // with one replica the world rank is the TP rank), the same for all modes.
                    long batchSeed = TpLayer.shardSeed(st.seed() * 7919L + it, rank);
                    on.layers.context().kernels().fillRandom(x, batchSeed, 1f, s);
                    on.layers.context().kernels().fillRandom(target, batchSeed ^ 0x5DEECE66DL, 1f, s);
                    comm.await(s, () -> "demo batch");
                    double[] mine = new double[3 * modes]; // per mode: GPU ms, loss, host enqueue ms
                    for (int m = 0; m < modes; m++) {
                        // Every rank of the world starts each step together, so the maximum over ranks is its time.
                        world.barrier();
                        if (rank == 0 && it == st.warmup() && m == 0) {
                            o.initSeconds()[1] = ProcessHandle.current().info().startInstant()
                                    .map(t -> java.time.Duration.between(t, java.time.Instant.now()).toMillis() / 1e3)
                                    .orElse(Double.NaN);
                        }
                        long windowStart = System.nanoTime();
                        start.record(s);
                        long enqueue = System.nanoTime();
                        // Steps back to back after the barrier, as training runs them: a rank that leaves the barrier
                        // early waits for its peers once, in the first step, and the sample's time per step carries
                        // that skew divided by their number.
                        for (int k = 0; k < st.stepsPerSample(); k++) {
                            if (replays[m] != null) {
                                replays[m].replay(s);
                            } else {
                                stacks[m].trainer.step(x, target, sq.cols(m * rows, rows), s);
                            }
                        }
                        mine[2 * modes + m] = (System.nanoTime() - enqueue) / 1e6 / st.stepsPerSample();
                        end.record(s);
                        int mode = m;
                        comm.await(s, () -> "demo step " + st.modes().get(mode));
                        if (clocks != null && it >= st.warmup()) {
                            clocks.addTo(tallies[m], windowStart, System.nanoTime());
                        }
                        mine[m] = end.elapsedMillisSince(start) / st.stepsPerSample();
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
                    // Per iteration: each mode's time as the maximum over all ranks, each replica's loss as the sum
                    // over its TP group's ranks, and the reported loss as the mean over replicas.
                    ByteBuffer b = ByteBuffer.allocate(mine.length * Double.BYTES);
                    for (double v : mine) {
                        b.putDouble(v);
                    }
                    byte[][] all = world.allGather(b.array());
                    double[] maxMs = new double[modes];
                    double[] minMs = new double[modes];
                    java.util.Arrays.fill(minMs, Double.POSITIVE_INFINITY);
                    double[] maxHostMs = new double[modes];
                    double[][] replicaSum = new double[modes][replicas];
                    for (int r = 0; r < all.length; r++) {
                        ByteBuffer rb = ByteBuffer.wrap(all[r]);
                        for (int m = 0; m < modes; m++) {
                            maxMs[m] = Math.max(maxMs[m], rb.getDouble(m * Double.BYTES));
                            minMs[m] = Math.min(minMs[m], rb.getDouble(m * Double.BYTES));
                            maxHostMs[m] = Math.max(maxHostMs[m], rb.getDouble((2 * modes + m) * Double.BYTES));
                            replicaSum[m][r / tp] += rb.getDouble((modes + m) * Double.BYTES);
                        }
                    }
                    if (rank == 0) {
                        for (int m = 0; m < modes; m++) {
                            o.hostMs()[m][it] = maxHostMs[m];
                            o.spreadMs()[m][it] = maxMs[m] - minMs[m];
                        }
                        report(st, it, maxMs, replicaSum, o, log);
                        onIteration.accept(it);
                    }
                }
                // Every rank's count on rank 0 (with ranks as processes, the others' slots are in other JVMs).
                byte[][] untuned = world.allGather(ByteBuffer.allocate(Integer.BYTES)
                        .putInt(comm.gemmTuner().untunedCount() - untunedAtInit).array());
                if (rank == 0) {
                    for (int r = 0; r < untuned.length; r++) {
                        o.untuned()[r] = ByteBuffer.wrap(untuned[r]).getInt();
                    }
                }
                if (st.clocks()) {
                    gatherClocks(st, world, tallies, clocks == null ? clocksFailure : clocks.failure(), o);
                }
                if (st.trace()) {
                    // Before the replicas' weights are compared, so the check covers the traced step too.
                    o.traces()[rank] = traceStep(on, world, ctx, s, x, target, sq.cols(0, rows), comm,
                            st.cudaGraph());
                    // The compute alone, traced the same way: where the overlap step loses time against it.
                    o.tracesNoComm()[rank] = traceStep(none, world, ctx, s, x, target, sq.cols(0, rows), comm,
                            st.cudaGraph());
                    // The same compute on the data real collectives give (no_comm's gathered rows are a step old
                    // and its reduce-scatters leave partial sums): a GEMM that differs between the two traces
                    // above but not between this one and the overlap step's differs by its data, not its company.
                    o.tracesNoOverlap()[rank] = traceStep(off, world, ctx, s, x, target, sq.cols(0, rows), comm,
                            st.cudaGraph());
                }
                if (replicas > 1) {
                    ReplicaCheck check = ReplicaCheck.compare(st.layout(), world, MODES.subList(0, 2),
                            new long[]{ReplicaCheck.hash(on.layers, s), ReplicaCheck.hash(off.layers, s)});
                    if (rank == 0) {
                        o.weights()[0] = check;
                    }
                }
                comm.await(s, () -> "demo end"); // a deadline, as every wait of the demo has
            } catch (RuntimeException | Error e) {
                // Tell every rank (all groups) at once, before the collective closes: the stacks' closes then skip
                // their barriers instead of waiting for this rank, and both NCCL communicators are aborted, not
                // destroyed.
                comm.abort("rank " + rank + " failed: " + e);
                throw e;
            }
        }
    }

    /**
     * Collective over the world: every rank's clock samples per mode, summed on rank 0 into {@link Outputs#clocks}
     * (a rank that could not sample contributes none; rank 0 says why for itself, or which ranks had none).
     */
    static void gatherClocks(Settings st, Bootstrap world, ClockSampler.Tally[] tallies, String failure,
                             Outputs o) {
        int modes = tallies.length;
        ByteBuffer b = ByteBuffer.allocate(4 * modes * Double.BYTES);
        for (ClockSampler.Tally t : tallies) {
            b.putDouble(t.samples());
            b.putDouble(t.samples() == 0 ? 0 : t.meanMhz());
            b.putDouble(t.samples() == 0 ? 0 : t.powerCapShare() * t.samples());
            b.putDouble(t.samples() == 0 ? 0 : t.otherSlowdownShare() * t.samples());
        }
        byte[][] all = world.allGather(b.array());
        if (world.rank() != 0) {
            return;
        }
        List<Integer> without = new ArrayList<>();
        for (int m = 0; m < modes; m++) {
            long samples = 0;
            double capped = 0;
            double slowed = 0;
            double meanSum = 0;
            double lowest = Double.NaN;
            int ranksWith = 0;
            for (int r = 0; r < all.length; r++) {
                ByteBuffer rb = ByteBuffer.wrap(all[r]);
                rb.position(4 * m * Double.BYTES);
                long n = (long) rb.getDouble();
                double mean = rb.getDouble();
                if (n == 0) {
                    if (m == 0) {
                        without.add(r);
                    }
                    rb.getDouble();
                    rb.getDouble();
                    continue;
                }
                samples += n;
                capped += rb.getDouble();
                slowed += rb.getDouble();
                meanSum += mean;
                lowest = Double.isNaN(lowest) ? mean : Math.min(lowest, mean);
                ranksWith++;
            }
            o.clocks().add(new ModeClocks(st.modes().get(m), ranksWith == 0 ? Double.NaN : meanSum / ranksWith, lowest,
                    samples == 0 ? Double.NaN : capped / samples, samples == 0 ? Double.NaN : slowed / samples,
                    samples));
        }
        if (failure != null) {
            o.clocksUnavailable()[0] = "rank 0: " + failure;
        } else if (!without.isEmpty()) {
            o.clocksUnavailable()[0] = "no clock samples from world ranks " + without;
        }
    }

    /**
     * Whether the traced steps time each op's plan steps (the default), or, with {@code -Dubuf.traceOpSteps=false},
     * each op as one span on its caller's stream: two events an op instead of two a step, for a per-op cost nearer
     * the untraced step's (no communication spans then).
     */
    public static boolean traceOpSteps() {
        return !"false".equals(System.getProperty("ubuf.traceOpSteps"));
    }

    /**
     * Two more steps of {@code on} (the overlap stack, or the no_comm one), traced, the second kept: every rank of the
     * world (all TP groups, so every replica) starts each together (a barrier over the world bootstrap, then the
     * tracer's origin on the idle caller stream), the layers record their work into the tracer (and the host's time
     * issuing it), and the rank's spans are read once the step completed. The first step makes the tracer's and the
     * ops' timing events, whose creation would show as host time in the kept one. The barrier spans the world, not
     * only the TP group, because the step's DP gradient all-reduce couples the TP groups: a group that started early
     * would show the others' lateness as a long all-reduce. Training goes on with them like any other step (the DP
     * all-reduce included, so the replicas stay identical). The trace's rank is the world rank.
     *
     * <p>With {@code graph} (the timed steps replayed CUDA graphs) the traced step is one too: captured with the
     * spans as the graph's own event record nodes ({@link dev.ubuf.layers.train.Trainer#captureTraced}), replayed
     * twice as above, the second replay kept: the GPU's schedule of a replayed step, which an eager traced step,
     * paced by its host, is not.
     */
    private static RankTrace traceStep(Stack on, Bootstrap world, CudaContext ctx, CudaStream s, TensorView x,
                                       TensorView target, TensorView sq, TpCommunicator comm, boolean graph) {
        TpContext tc = on.layers.context();
        try (StepTracer tracer = new StepTracer(ctx, world.rank(), traceOpSteps())) {
            tracer.nameStream(s, "caller");
            tc.trace(tracer);
            StepGraph traced = null;
            try {
                comm.await(s, () -> "demo trace set-up");
                if (graph) {
                    traced = on.trainer.captureTraced(x, target, sq, s, tracer);
                }
                RankTrace kept = null;
                for (int pass = 0; pass < 2; pass++) {
                    world.barrier();
                    if (traced != null) {
                        traced.replay(s);
                    } else {
                        tracer.start(s);
                        on.trainer.step(x, target, sq, s);
                    }
                    comm.await(s, () -> "demo traced step");
                    kept = tracer.collect();
                }
                if (traced != null) {
                    traced.close(); // its replays completed (awaited); after a failed await the demo is ending
                }
                return kept;
            } finally {
                tc.trace(Tracer.NOOP);
            }
        }
    }

    /** Rank 0: records iteration {@code it}'s times and losses and prints its line. */
    private static void report(Settings st, int it, double[] maxMs, double[][] replicaSum, Outputs o,
                               PrintWriter log) {
        int replicas = st.replicas();
        double numel = (double) st.tokens() * st.hidden();
        for (int m = 0; m < maxMs.length; m++) {
            o.ms()[m][it] = maxMs[m];
        }
        double meanOn = 0;
        double meanOff = 0;
        for (int g = 0; g < replicas; g++) {
            o.replicaLossOn()[it][g] = replicaSum[0][g] / numel;
            o.replicaLossOff()[it][g] = replicaSum[1][g] / numel;
            meanOn += o.replicaLossOn()[it][g] / replicas;
            meanOff += o.replicaLossOff()[it][g] / replicas;
        }
        o.lossOn()[it] = meanOn;
        o.lossOff()[it] = meanOff;
        double meanCmp = Double.NaN;
        if (o.lossCompare() != null) {
            meanCmp = 0;
            for (int g = 0; g < replicas; g++) {
                meanCmp += replicaSum[3][g] / numel / replicas;
            }
            o.lossCompare()[it] = meanCmp;
        }
        log.println(iterationLine(it, it < st.warmup(), meanOn, meanOff, maxMs, meanCmp, o.replicaLossOn()[it],
                o.replicaLossOff()[it]));
        log.flush();
    }

    /**
     * Iteration {@code it}'s line: the losses (means over replicas), the step times of the three modes, then the
     * {@link #COMPARE_MODE} stack's loss and time when {@code maxMs} has a fourth, then each replica's losses when
     * there are several. A warm-up iteration says so last, so that every line has the same fields in the same order
     * (DemoGpuTest and DemoReplicasGpuTest read them by pattern, warm-up lines included).
     */
    static String iterationLine(int it, boolean warmUp, double lossOn, double lossOff, double[] maxMs,
                                double lossCompare, double[] replicaLossOn, double[] replicaLossOff) {
        StringBuilder b = new StringBuilder(String.format(java.util.Locale.ROOT, "iter %3d  loss overlap %.6f"
                        + "  no_overlap %.6f  step ms overlap %.3f  no_overlap %.3f  no_comm %.3f", it, lossOn, lossOff,
                maxMs[0], maxMs[1], maxMs[2]));
        if (maxMs.length > 3) {
            b.append(String.format(java.util.Locale.ROOT, "  %s loss %.6f step ms %.3f", COMPARE_MODE, lossCompare,
                    maxMs[3]));
        }
        if (replicaLossOn.length > 1) {
            b.append("  per replica overlap ").append(joined(replicaLossOn)).append(" no_overlap ")
                    .append(joined(replicaLossOff));
        }
        if (warmUp) {
            b.append("  (warm-up)");
        }
        return b.toString();
    }

    private static String joined(double[] values) {
        StringJoiner j = new StringJoiner("/");
        for (double v : values) {
            j.add(String.format(java.util.Locale.ROOT, "%.6f", v));
        }
        return j.toString();
    }

    /**
     * The verdict on the replicas' parameter hashes: {@code hashes[worldRank] = {overlap, no_overlap}}; every rank of
     * TP position t must match rank t (replica 0).
     */
    static ReplicaCheck compareHashes(DomainLayout layout, long[][] hashes) {
        return ReplicaCheck.of(layout, MODES.subList(0, 2), hashes);
    }
}
