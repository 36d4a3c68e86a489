package dev.ubuf.cli;

import dev.ubuf.bench.ChromeTrace;
import dev.ubuf.bench.LayerDemo;
import dev.ubuf.bench.ResultsFile;
import dev.ubuf.bench.StepFlops;
import dev.ubuf.bench.TimelineChart;
import dev.ubuf.bench.TraceBreakdown;
import dev.ubuf.bench.TraceComparison;
import dev.ubuf.config.UbufEnvironment;
import dev.ubuf.op.PlannerSettings;
import dev.ubuf.tensor.DType;
import dev.ubuf.cuda.Cuda;
import dev.ubuf.layers.config.Fp8Key;
import dev.ubuf.layers.config.UbConfig;
import dev.ubuf.layers.reference.LayerSimulation;
import dev.ubuf.layers.tp.LayerNormMLP;
import dev.ubuf.layers.tp.Activation;
import dev.ubuf.trace.StepTrace;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;

/**
 * The main job: tensor-parallel LayerNormMLP training with communication overlap (Transformer Engine's
 * te_layer_with_overlap.py, in Java). With at least two GPUs it trains a stack of blocks with and without overlap
 * and a timing-only copy without communication ({@link LayerDemo}); without a GPU it simulates one step's overlapped
 * communication on the host executor at a small size and checks it against the unoverlapped computation.
 */
@Command(name = "demo", mixinStandardHelpOptions = true, version = UbufCli.VERSION,
        description = {"A sequence-parallel LayerNormMLP (LayerNorm, fc1, GELU or SwiGLU, fc2) with the overlap"
                + " the configuration selects.",
                "With 2 or more GPUs: trains a stack of --layers blocks with SGD on random batches (MSE against a"
                + " random target) on --tp GPUs, three ways from the same weights, alternating step by step:"
                + " overlap (the configuration), no_overlap (every overlap off) and no_comm (no_overlap with every"
                + " collective skipped, each GEMM whole: the step's compute alone, on the values two steps with their"
                + " collectives gathered before the timed ones; timing only, its numbers are wrong by design)."
                + " Prints each iteration's loss and step"
                + " times, the median step times, the speedup no_overlap/overlap, the hidden share"
                + " (T_no_overlap - T_overlap) / (T_no_overlap - T_no_comm), and whether the overlap and no_overlap"
                + " losses agree (exit 1 if not).",
                "With --num-replicas R > 1: R x tp GPUs, TP group g = ranks g*tp .. g*tp+tp-1, each a replica"
                + " training the same weights on its own batches; after backward the gradients are averaged over"
                + " each DP group (ranks t, t+tp, ...) with NCCL before the SGD step (not in no_comm). The loss is"
                + " the mean over replicas (each replica's is printed too); at the end the replicas' parameters"
                + " must be bit-identical (exit 1 if not).",
                "Without a GPU: runs the step's overlapped communication plans on the host executor (a SIMULATION at"
                + " a small size, --tp simulated ranks), checks every result against the unoverlapped computation"
                + " and prints the schedules."})
final class DemoCommand implements Callable<Integer> {
    /** Sizes when none is given: small for the host simulation, a Llama-like block for GPUs. */
    static final long SIM_HIDDEN = 64;
    static final long SIM_FFN = 128;
    static final long SIM_TOKENS = 32;
    static final long GPU_HIDDEN = 4096;
    static final long GPU_FFN = 16384;
    static final long GPU_TOKENS = 8192;

    @Spec
    CommandSpec spec;
    @Option(names = "--hidden", paramLabel = "H",
            description = "Hidden size (default: " + GPU_HIDDEN + " on GPUs, " + SIM_HIDDEN + " in the simulation).")
    Long hidden;
    @Option(names = "--ffn", paramLabel = "F",
            description = "MLP units, divisible by --tp (default: " + GPU_FFN + " on GPUs, " + SIM_FFN
                    + " in the simulation).")
    Long ffn;
    @Option(names = "--swiglu", description = "SwiGLU instead of GELU (default: ${DEFAULT-VALUE}).")
    boolean swiglu;
    @Option(names = "--tokens", paramLabel = "M",
            description = "Tokens (rows) per step, a multiple of --tp (default: " + GPU_TOKENS + " on GPUs, "
                    + SIM_TOKENS + " in the simulation).")
    Long tokens;
    @Option(names = "--layers", defaultValue = "1", paramLabel = "N",
            description = "LayerNormMLP blocks in the stack, 1 to 64 (GPU only; default: ${DEFAULT-VALUE}).")
    int layers;
    @Option(names = "--iters", defaultValue = "10", paramLabel = "N",
            description = "Timed training iterations, 1 to 100000 (GPU only; default: ${DEFAULT-VALUE}).")
    int iters;
    @Option(names = "--warmup", defaultValue = "3", paramLabel = "N",
            description = "Untimed iterations first, 0 to 10000 (GPU only; they train too and their losses are"
                    + " compared; default: ${DEFAULT-VALUE}).")
    int warmup;
    @Option(names = "--dtype", defaultValue = "bf16", converter = BenchDTypes.Converter.class,
            completionCandidates = BenchDTypes.class, paramLabel = "TYPE",
            description = "Weights and activations: ${COMPLETION-CANDIDATES} (GPU only; gradients are fp32;"
                    + " default: ${DEFAULT-VALUE}).")
    DType dtype;
    @Option(names = "--tp", paramLabel = "N",
            description = "Tensor-parallel ranks, 2 to 8 (default: every visible GPU on GPUs, 2 simulated ranks"
                    + " without a GPU).")
    Integer tp;
    @Option(names = "--num-replicas", defaultValue = "1", paramLabel = "R",
            description = "Data-parallel replicas of the TP group (GPU only): R TP groups of --tp GPUs each, their"
                    + " gradients averaged over NCCL; R x tp must not exceed the GPUs, and without --tp each group"
                    + " gets GPUs / R (default: ${DEFAULT-VALUE}).")
    int replicas;
    @Option(names = "--config", paramLabel = "FILE",
            description = "A ub_* overlap configuration (YAML or JSON; default: none, TE's defaults with overlap on).")
    Path config;
    @Option(names = "--no-comm-overlap", description = "Turn every overlap off (default: ${DEFAULT-VALUE}).")
    boolean noOverlap;
    @Option(names = "--lr", defaultValue = "0.01", paramLabel = "LR",
            description = "SGD learning rate, finite and > 0 (GPU only; default: ${DEFAULT-VALUE}).")
    double lr;
    @Option(names = "--fp8", description = "Every GEMM in FP8 (fp8: true over the --config file): E4M3 activations"
            + " and weights, E5M2 gradients (the hybrid format, unless the file sets fp8_format: e4m3), the all-gathers"
            + " moving FP8 shards, outputs and partial sums in --dtype. hidden, ffn/tp (2 ffn/tp with --swiglu) and"
            + " --tokens must be multiples of 16 (default: ${DEFAULT-VALUE}).")
    boolean fp8;
    @Option(names = "--fp8-recipe", paramLabel = "RECIPE",
            description = "With --fp8: delayed (TE's default: each tensor's scale from its amax history) or current"
                    + " (from the tensor's own amax, just in time). Default: the --config file's fp8_recipe, else"
                    + " delayed.")
    String fp8Recipe;
    @Option(names = "--compare-bf16", description = "GPU only, with FP8 on: a fourth stack trains the same weights on"
            + " the same batches with FP8 off (the configuration's overlap, every GEMM in --dtype), alternating step"
            + " by step with the three others; prints its loss and step time beside FP8's, the largest relative loss"
            + " difference against the stated tolerance (exit 1 beyond it) and the step-time ratio, and adds a "
            + LayerDemo.COMPARE_MODE + " record to --out (default: ${DEFAULT-VALUE}).")
    boolean compareBf16;
    @Option(names = "--cuda-graph", description = "GPU only: capture each stack's training step as a CUDA graph"
            + " after the warm-up iterations and replay it in the timed ones (one host call per step; the ops are"
            + " made graph-safe: they signal with one-thread kernels that count calls on the device). Needs 32"
            + " hardware queues, ubuf's default (refused where CUDA_DEVICE_MAX_CONNECTIONS sets fewer). The"
            + " simulation has no graphs and says so (default: ${DEFAULT-VALUE}).")
    boolean cudaGraph;
    @Option(names = "--clocks", description = "GPU only: every rank samples its GPU's SM clock through NVML every"
            + " " + LayerDemo.CLOCK_PERIOD_MICROS + " us during the timed steps; prints and records (sm_clock_mhz, power_cap_share) the clock each mode"
            + " ran at and how often the power cap held it down (default: ${DEFAULT-VALUE}).")
    boolean clocks;
    @Option(names = "--steps-per-sample", defaultValue = "1", paramLabel = "K",
            description = "GPU only: each iteration runs each mode's step K times back to back after the ranks'"
                    + " barrier, and times the K together (per step: their time over K). Training runs its steps"
                    + " back to back; with K = 1 the skew with which the ranks leave the barrier (the early one waits"
                    + " for its peers at the first collective) counts in every step of the modes with collectives,"
                    + " with K once per K steps. 1 to " + LayerDemo.Settings.MAX_STEPS_PER_SAMPLE
                    + " (default: ${DEFAULT-VALUE}).")
    int stepsPerSample;
    @Option(names = "--seed", defaultValue = "1", paramLabel = "S",
            description = "Seed of the weights, the batches and the simulated interleavings (default:"
                    + " ${DEFAULT-VALUE}).")
    long seed;
    @Option(names = "--trace", paramLabel = "FILE",
            description = "GPU only: after the timed iterations, trace two more steps of the overlap stack (the"
                    + " second kept) on every rank and stream (GEMMs, copies, waits, signals, reductions, kernels, NCCL"
                    + " collectives, and the host's time issuing each span; timed"
                    + " with CUDA events; with --num-replicas R > 1 every rank of every replica, one process per world"
                    + " rank, all started after a barrier of the whole world, the DP gradient all-reduce an NCCL span)"
                    + " and write it to FILE, a Chrome trace (open it in ui.perfetto.dev) whose"
                    + " name ends in .json, plus a PNG timeline beside it (.json replaced by .png; drawn after the"
                    + " trace is written, and one that cannot be drawn is a warning). The no_comm stack's step (the"
                    + " compute alone) and the no_overlap stack's are traced the same way into FILE-no_comm.json and"
                    + " FILE-no_overlap.json with their PNGs, and the overlap and no_overlap steps are compared with"
                    + " the no_comm one span by span. With --cuda-graph each traced step is a replay of a graph"
                    + " captured with the spans as its own event record nodes (as the timed steps replay theirs; no host spans), so"
                    + " the trace shows the GPU's schedule of a replayed step. All are checked for writing before any"
                    + " GPU work. The simulation writes no trace and says so. Default: none.")
    Path trace;
    @Mixin
    ResultsOutput out = new ResultsOutput();

    /** Width of the PNG timeline, pixels: room for a few hundred spans per row without merging them. */
    static final int TRACE_PNG_WIDTH = 1800;

    @Override
    public Integer call() throws Exception {
        if (fp8Recipe != null && !fp8) {
            throw OptionChecks.invalid(spec, "--fp8-recipe needs --fp8");
        }
        if (fp8Recipe != null && Fp8Key.Recipe.parse(fp8Recipe).isEmpty()) {
            throw OptionChecks.invalid(spec, "--fp8-recipe: " + fp8Recipe + " must be delayed or current");
        }
        Optional<Path> tracePng = checkTrace();
        int gpus = visibleGpus();
        boolean onGpu = gpus > 0;
        int ranks;
        try {
            ranks = tpRanks(replicas, tp, gpus);
        } catch (IllegalArgumentException e) {
            throw OptionChecks.invalid(spec, e.getMessage());
        }
        long h = hidden != null ? hidden : onGpu ? GPU_HIDDEN : SIM_HIDDEN;
        long f = ffn != null ? ffn : onGpu ? GPU_FFN : SIM_FFN;
        long m = tokens != null ? tokens : onGpu ? GPU_TOKENS : SIM_TOKENS;
        OptionChecks.atLeast(spec, "--hidden", h, 1);
        if (m < ranks || m % ranks != 0) {
            throw OptionChecks.invalid(spec, "--tokens: " + m + " must be a positive multiple of --tp " + ranks);
        }
        if (f < 1 || f % ranks != 0) {
            throw OptionChecks.invalid(spec, "--ffn: " + f + " must be a positive multiple of --tp " + ranks);
        }
        OptionChecks.within(spec, "--layers", layers, 1, 64);
        OptionChecks.within(spec, "--iters", iters, 1, 100_000);
        OptionChecks.within(spec, "--warmup", warmup, 0, 10_000);
        OptionChecks.within(spec, "--steps-per-sample", stepsPerSample, 1, LayerDemo.Settings.MAX_STEPS_PER_SAMPLE);
        if (!(lr > 0) || Double.isInfinite(lr) || (float) lr == 0f) {
            throw OptionChecks.invalid(spec, "--lr: " + lr + " must be finite and > 0");
        }
        if (config != null && !Files.isReadable(config)) {
            throw OptionChecks.invalid(spec, "--config: cannot read " + config);
        }
        UbConfig cfg = config(ranks, noOverlap);
        Optional<Path> results = out.checkWritable();
        Activation act = swiglu ? Activation.SWIGLU : Activation.GELU;
        if (cfg.fp8Enabled()) {
            try {
                LayerNormMLP.checkFp8(true, ranks, h, f, act);
            } catch (IllegalArgumentException e) {
                throw OptionChecks.invalid(spec, "--fp8: " + e.getMessage());
            }
            if (m % 16 != 0) {
                throw OptionChecks.invalid(spec, "--tokens: " + m + " must be a multiple of 16 with FP8 (the wgrad"
                        + " GEMMs multiply over the tokens, and cuBLASLt's FP8 GEMMs need 16-byte rows)");
            }
        }
        if (cudaGraph && onGpu) {
            Optional<String> why = dev.ubuf.layers.tp.TpContext.fewQueuesForGraphs(
                    dev.ubuf.cuda.HardwareQueues.effective(System.getenv()), cfg.overlapPossible());
            if (why.isPresent()) {
                throw OptionChecks.invalid(spec, "--cuda-graph: " + why.get());
            }
        }
        if (compareBf16 && !cfg.fp8Enabled()) {
            throw OptionChecks.invalid(spec, "--compare-bf16 compares an FP8 run with the same run without FP8:"
                    + " give --fp8 (or fp8: true in --config)");
        }
        if (!onGpu) {
            double need = simulationHeapBytes(h, f, m, act);
            long have = Runtime.getRuntime().maxMemory();
            if (need > have) {
                throw OptionChecks.invalid(spec, String.format(Locale.ROOT, "no GPU, so this is the host simulation,"
                        + " which keeps every value in float64 with a race shadow: hidden %d, ffn %d (%s), %d tokens"
                        + " need about %.1f GB of Java heap, this JVM has %.1f GB. The simulation checks the schedules,"
                        + " which do not depend on the size: give a smaller --hidden/--ffn/--tokens (default"
                        + " %d/%d/%d), or run on GPUs", h, f, act, m, need / 1e9, have / 1e9, SIM_HIDDEN, SIM_FFN,
                        SIM_TOKENS));
            }
        }
        UbConfig compare = compareBf16 && onGpu ? config(ranks, noOverlap, true) : null;
        if (!onGpu && launched().map(l -> l.rank() != 0).orElse(false)) {
            return 0; // launched without GPUs: world rank 0 runs the simulation, once
        }
        return onGpu ? gpu(cfg, config(ranks, true), compare, ranks, replicas, h, f, m, act, results, tracePng)
                : simulate(cfg, ranks, h, f, m, act, results);
    }

    /**
     * The TP group's size from --num-replicas, --tp (null when not given) and the visible GPUs (0: the simulation);
     * an IllegalArgumentException naming the option when they do not fit: R &gt;= 1, tp in 2..8 (default: GPUs / R,
     * 2 in the simulation), R x tp &lt;= GPUs, and R = 1 in the simulation (it runs one TP group).
     */
    static int tpRanks(int replicas, Integer tp, int gpus) {
        if (replicas < 1) {
            throw new IllegalArgumentException("--num-replicas must be at least 1, got " + replicas);
        }
        if (gpus <= 0 && replicas > 1) {
            throw new IllegalArgumentException("--num-replicas: " + replicas + " replicas need " + replicas
                    + " x --tp GPUs, but no GPU is visible; the simulation runs one TP group (use 1)");
        }
        int ranks;
        if (tp != null) {
            ranks = tp;
        } else if (gpus <= 0) {
            ranks = 2;
        } else {
            ranks = gpus / replicas;
            if (ranks < 2) {
                throw new IllegalArgumentException("--num-replicas: " + replicas + " replicas of " + gpus
                        + " visible GPUs leave " + ranks + " per TP group, but a TP group needs at least 2");
            }
        }
        if (ranks < 2 || ranks > 8) {
            throw new IllegalArgumentException("--tp must be 2..8, got " + ranks
                    + (tp == null ? " (the visible GPUs / --num-replicas: give --tp)" : ""));
        }
        if (gpus > 0 && (long) replicas * ranks > gpus) {
            throw new IllegalArgumentException("--num-replicas: " + replicas + " x --tp " + ranks + " = "
                    + (long) replicas * ranks + " GPUs, but " + gpus + " are visible");
        }
        return ranks;
    }

    private UbConfig config(int ranks, boolean overlapOff) {
        return config(ranks, overlapOff, false);
    }

    /** The configuration: the file, then the overlap and FP8 options over it ({@code noFp8}: FP8 taken out). */
    private UbConfig config(int ranks, boolean overlapOff, boolean noFp8) {
        try {
            UbConfig.Builder b = UbConfig.builder().tensorModelParallelSize(ranks).sequenceParallel(true)
                    .tpCommOverlap(true);
            if (config != null) {
                b.load(config);
            }
            if (overlapOff) {
                b.tpCommOverlap(false);
            }
            if (fp8) {
                b.fp8(true);
            }
            if (fp8Recipe != null) {
                b.fp8Recipe(Fp8Key.Recipe.parse(fp8Recipe).orElseThrow());
            }
            if (noFp8) {
                b.withoutFp8();
            }
            return b.tensorModelParallelSize(ranks).build();
        } catch (RuntimeException e) {
            throw OptionChecks.invalid(spec, "--config: " + e.getMessage());
        }
    }

    /**
     * The PNG beside {@code --trace FILE}, once both can be written (empty without --trace). FILE must end in .json,
     * so the PNG's name (FILE with .png for .json) never replaces FILE itself.
     */
    private Optional<Path> checkTrace() {
        if (trace == null) {
            return Optional.empty();
        }
        Path png = pngOf(trace);
        if (png == null) {
            throw OptionChecks.invalid(spec, "--trace " + trace + ": the trace file's name must end in .json (the PNG"
                    + " timeline is written beside it with .png instead)");
        }
        ResultsOutput.requireWritable(spec, "--trace", trace);
        ResultsOutput.requireWritable(spec, "--trace", png);
        for (String mode : new String[]{"no_comm", "no_overlap"}) {
            ResultsOutput.requireWritable(spec, "--trace", modeOf(trace, mode));
            ResultsOutput.requireWritable(spec, "--trace", pngOf(modeOf(trace, mode)));
        }
        return Optional.of(png);
    }

    /** {@code mode}'s traced step and its PNG beside the overlap step's {@code file} ({@link #modeOf}). */
    private static void writeModeTrace(StepTrace t, Path file, String mode, String what, PrintWriter out,
                                       PrintWriter err) throws java.io.IOException {
        Path json = modeOf(file, mode);
        Path png = pngOf(json);
        writeTrace(t, json, png, what, out, err, () -> TimelineChart.write(t, png, TRACE_PNG_WIDTH));
    }

    /** Where {@code mode}'s traced step goes beside the overlap step's {@code file} (FILE.json: FILE-MODE.json). */
    static Path modeOf(Path file, String mode) {
        String n = file.getFileName().toString();
        return file.resolveSibling(n.substring(0, n.length() - ".json".length()) + "-" + mode + ".json");
    }

    /** {@code file} with its .json suffix (any case) replaced by .png; null when it has none. */
    static Path pngOf(Path file) {
        Path name = file.getFileName();
        String n = name == null ? "" : name.toString();
        if (n.length() <= ".json".length() || !n.toLowerCase(java.util.Locale.ROOT).endsWith(".json")) {
            return null;
        }
        return file.resolveSibling(n.substring(0, n.length() - ".json".length()) + ".png");
    }

    private int gpu(UbConfig cfg, UbConfig off, UbConfig compare, int ranks, int replicas, long h, long f, long m,
                    Activation act, Optional<Path> results, Optional<Path> tracePng) throws Exception {
        // Bad environment values are IllegalArgumentExceptions: one sentence and exit 2, before any GPU work.
        UbufEnvironment env = UbufEnvironment.fromSystem();
        PlannerSettings planner = PlannerSettings.from(System.getenv());
        LayerDemo.Settings st = new LayerDemo.Settings(ranks, replicas, cfg, off, h, f, act, m, layers, warmup, iters,
                dtype, (float) lr, seed, tracePng.isPresent(), compare, cudaGraph, clocks, stepsPerSample);
        // Started by a launcher (RANK set): this process is one rank; world rank 0 prints and writes the results.
        Optional<dev.ubuf.bootstrap.LaunchEnvironment> launch = launched();
        if (launch.isPresent()) {
            LayerDemo.checkLaunch(st, launch.get().worldSize());
        }
        boolean reporting = launch.map(l -> l.rank() == 0).orElse(true);
        PrintWriter w = reporting ? spec.commandLine().getOut()
                : new PrintWriter(java.io.OutputStream.nullOutputStream());
        w.printf("ubuf demo: %d x LayerNormMLP (hidden %d, ffn %d, %s), %d tokens per step%s, tp %d, %s, lr %s,"
                        + " %d warm-up + %d timed iterations%n", layers, h, f, act, m,
                replicas > 1 ? " per replica" : "", ranks, dtype.shortName(), lr, warmup, iters);
        cfg.fp8().ifPresent(r -> w.println("FP8 GEMMs: " + Fp8Key.describe(r) + "; outputs, partial sums and"
                + " activations in " + dtype.shortName() + ", gradients accumulated in fp32"));
        if (replicas > 1) {
            w.printf("data parallelism: %d replicas x tp %d = %d GPUs (rank i on GPU i); %s%n", replicas, ranks,
                    replicas * ranks, LayerDemo.describeGroups(st.layout()));
            w.println("each replica trains on its own batches; gradients are averaged over each DP group (one fused"
                    + " NCCL all-reduce) before SGD; the loss printed is the mean over replicas");
        }
        String queues = dev.ubuf.cuda.HardwareQueues.inEffect();
        w.println("hardware queues per context: " + queues + " (CUDA_DEVICE_MAX_CONNECTIONS)");
        if (cudaGraph) {
            w.println("CUDA graphs: each mode's step is captured after the warm-up and the timed steps replay it"
                    + " (graph-safe ops)");
        }
        w.print(cfg.methodTable().describe());
        w.println("modes, alternating every iteration: " + String.join(", ", st.modes()) + " (no_comm skips every"
                + " collective" + (replicas > 1 ? ", the DP gradient all-reduce included" : "")
                + ": a timing-only mode whose losses are wrong by design"
                + (compare != null ? "; " + LayerDemo.COMPARE_MODE + " is the overlap stack with FP8 off" : "") + ")");
        w.flush();
        w.println("ranks: " + (launch.isPresent() ? "one process each (launched), world rank " + launch.get().rank()
                + " reports" : "threads of this JVM (bin/ubuf-launch runs one process each)"));
        LayerDemo.Result r;
        if (launch.isPresent()) {
            Optional<LayerDemo.Result> mine = LayerDemo.runLaunched(st, launch.get(), env, planner, w, it -> { });
            if (mine.isEmpty()) {
                return 0; // not world rank 0: it reports, and exits with the verdict
            }
            r = mine.get();
        } else {
            try (Progress bar = Progress.of("demo", warmup + iters)) {
                r = LayerDemo.run(st, env, planner, w, it -> bar.step());
            }
        }
        w.printf(java.util.Locale.ROOT, "initialisation %.1f s (every stack's ops made and GEMMs tuned); first timed "
                + "step after %.1f s from the JVM's start; GEMMs the steps ran untuned: %d%n", r.initSeconds(),
                r.secondsToFirstStep(), r.untunedGemms());
        r.stepCheck().ifPresent(c -> w.println("overlap stack's " + c.describe()));
        r.autoChoices().forEach((op, method) -> w.println("method: auto ran " + method + " for " + op));
        List<String> modes = st.modes();
        double[] med = new double[modes.size()];
        for (int i = 0; i < med.length; i++) {
            med[i] = r.median(i);
            w.printf(java.util.Locale.ROOT, "median step %-10s %9.3f ms%n", modes.get(i), med[i]);
        }
        if (stepsPerSample > 1) {
            w.println("(each sample " + stepsPerSample + " steps back to back after the ranks' barrier, its time over "
                    + stepsPerSample + ")");
        }
        w.printf(java.util.Locale.ROOT, "speedup no_overlap/overlap %.3f; hidden share (T_no_overlap - T_overlap) / (T_no_overlap -"
                + " T_no_comm) %.3f%n", r.speedup(), r.hiddenShare());
        double flops = StepFlops.perGpu(h, f, act, layers, m, ranks);
        java.util.OptionalDouble peak = StepFlops.peakTflops(r.device());
        double[] host = new double[modes.size()];
        for (int i = 0; i < host.length; i++) {
            host[i] = r.hostMedian(i);
        }
        w.printf(java.util.Locale.ROOT, "host enqueue per step (median, max over ranks): %s%n",
                java.util.stream.IntStream.range(0, host.length).mapToObj(i -> String.format(java.util.Locale.ROOT,
                        "%s %.3f ms", modes.get(i), host[i])).collect(java.util.stream.Collectors.joining(", ")));
        w.printf(java.util.Locale.ROOT, "step time's spread over the ranks (median of max - min; a rank that starts"
                + " early waits for its peers): %s%n", java.util.stream.IntStream.range(0, modes.size())
                .mapToObj(i -> String.format(java.util.Locale.ROOT, "%s %.3f ms", modes.get(i), r.rankSpreadMedian(i)))
                .collect(java.util.stream.Collectors.joining(", ")));
        if (peak.isPresent()) {
            w.printf(java.util.Locale.ROOT, "MFU of the overlap step %.1f%% (%.3g model FLOPs per GPU, peak %.1f dense"
                    + " bf16 TFLOP/s)%n", 100 * StepFlops.mfu(flops, med[0], peak.getAsDouble()), flops,
                    peak.getAsDouble());
        }
        if (clocks) {
            if (r.clocksUnavailable() != null) {
                w.println("SM clock: " + r.clocksUnavailable());
            }
            if (!r.clocks().isEmpty()) {
                w.printf(java.util.Locale.ROOT, "SM clock in the timed steps (NVML every %d us; mean over ranks,"
                        + " lowest rank, share of samples at the power cap): %s%n", LayerDemo.CLOCK_PERIOD_MICROS,
                        r.clocks().stream()
                        .map(c -> String.format(java.util.Locale.ROOT, "%s %.0f MHz (lowest %.0f, power cap %.0f%%%s)",
                                c.mode(), c.meanMhz(), c.lowestRankMhz(), 100 * c.powerCapShare(),
                                c.otherSlowdownShare() > 0 ? String.format(java.util.Locale.ROOT,
                                        ", other slowdowns %.0f%%", 100 * c.otherSlowdownShare()) : ""))
                        .collect(java.util.stream.Collectors.joining(", ")));
            }
        }
        double diff = r.lossMaxRelDiff();
        double tol = LayerDemo.lossTolerance(dtype);
        boolean agree = diff <= tol;
        w.printf(java.util.Locale.ROOT, "losses overlap vs no_overlap: max relative difference %.3g over %d iterations, tolerance %.3g"
                + " (%s): %s%n", diff, warmup + iters, tol, dtype.shortName(), agree ? "AGREE" : "DISAGREE");
        boolean tracks = true;
        double vsBf16 = r.lossVsCompareMaxRelDiff();
        if (compare != null) {
            tracks = vsBf16 <= LayerDemo.FP8_VS_BF16_LOSS_TOLERANCE;
            w.printf(java.util.Locale.ROOT, "FP8 beside %s: step time overlap %.3f ms vs %.3f ms (FP8/%s %.3f);"
                            + " losses max relative difference %.3g over %d iterations, tolerance %.3g: %s%n",
                    dtype.shortName(), med[0], med[3], dtype.shortName(), med[0] / med[3], vsBf16, warmup + iters,
                    LayerDemo.FP8_VS_BF16_LOSS_TOLERANCE, tracks ? "TRACKS" : "DIVERGES");
        }
        boolean replicasAgree = true;
        if (r.replicaWeights() != null) {
            replicasAgree = r.replicaWeights().identical();
            w.println("replica weights after the last step: " + (replicasAgree ? "IDENTICAL" : "DIFFERENT") + ": "
                    + r.replicaWeights().detail());
        }
        w.flush();
        if (results.isPresent()) {
            ResultsFile rf = new ResultsFile(r.device(), ResultsFile.commitFromEnvironment());
            for (int i = 0; i < med.length; i++) {
                boolean fp8Mode = cfg.fp8Enabled() && !modes.get(i).equals(LayerDemo.COMPARE_MODE);
                Map<String, Object> rec = ResultsFile.record("layer", modes.get(i), ranks,
                        dtype.shortName(), m, h, f, med[i]);
                // dtype stays the activations' type; these say whether the GEMMs ran in FP8 and with which recipe.
                rec.put("fp8", fp8Mode);
                rec.put("gemm_dtype", fp8Mode ? "fp8" : dtype.shortName());
                if (fp8Mode) {
                    var recipe = cfg.fp8().orElseThrow();
                    rec.put("fp8_recipe", recipe instanceof dev.ubuf.fp8.Fp8Recipe.DelayedScaling ? "delayed"
                            : "current");
                    rec.put("fp8_format", recipe.formats().name().toLowerCase(java.util.Locale.ROOT));
                }
                if (compare != null) {
                    rec.put("fp8_vs_bf16_loss_max_rel_diff", vsBf16);
                    rec.put("fp8_vs_bf16_step_ratio", med[0] / med[3]);
                }
                rec.put("hidden", h);
                rec.put("ffn", f);
                rec.put("tokens", m);
                rec.put("layers", layers);
                rec.put("replicas", replicas);
                rec.put("activation", act.name().toLowerCase(java.util.Locale.ROOT));
                rec.put("hidden_share", r.hiddenShare());
                rec.put("speedup", r.speedup());
                rec.put("loss_max_rel_diff", diff);
                rec.put("iters", iters);
                rec.put("steps_per_sample", stepsPerSample);
                rec.put("init_s", r.initSeconds());
                rec.put("start_to_first_step_s", r.secondsToFirstStep());
                rec.put("gemms_untuned", r.untunedGemms());
                if (i == 0 && !r.autoChoices().isEmpty()) {
                    rec.put("auto_choices", r.autoChoices());
                }
                if (i == 0 && r.stepCheck().isPresent()) {
                    var c = r.stepCheck().get();
                    Map<String, Object> sc = new java.util.LinkedHashMap<>();
                    sc.put("planner_ms", c.plannerMs());
                    sc.put("one_stream_ms", c.oneStreamMs());
                    sc.put("one_stream_kept", c.oneStreamKept());
                    sc.put("planner", new java.util.TreeMap<>(c.planner()));
                    sc.put("one_stream", new java.util.TreeMap<>(c.oneStream()));
                    rec.put("step_check", sc);
                }
                rec.put("host_enqueue_ms", host[i]);
                rec.put("rank_spread_ms", r.rankSpreadMedian(i));
                rec.put("cuda_graph", cudaGraph);
                if (i < r.clocks().size()) {
                    LayerDemo.ModeClocks c = r.clocks().get(i);
                    rec.put("sm_clock_mhz", c.meanMhz());
                    rec.put("sm_clock_lowest_rank_mhz", c.lowestRankMhz());
                    rec.put("power_cap_share", c.powerCapShare());
                    rec.put("other_slowdown_share", c.otherSlowdownShare());
                    rec.put("clock_samples", c.samples());
                }
                rec.put("hardware_queues", queues);
                rec.put("model_flops_per_gpu", flops);
                if (peak.isPresent()) {
                    rec.put("mfu", StepFlops.mfu(flops, med[i], peak.getAsDouble()));
                    rec.put("mfu_peak_tflops", peak.getAsDouble());
                }
                rf.add(rec);
            }
            rf.write(results.get());
            w.println("wrote " + results.get());
        }
        if (tracePng.isPresent()) {
            Path png = tracePng.get();
            writeTrace(r.trace(), trace, png, "the traced overlap step of all " + (long) replicas * ranks + " ranks"
                            + (replicas > 1 ? " (" + replicas + " replicas, process = world rank)" : ""), w,
                    spec.commandLine().getErr(), () -> TimelineChart.write(r.trace(), png, TRACE_PNG_WIDTH));
            printBreakdown(r.trace(), w, spec.commandLine().getErr());
            writeModeTrace(r.traceNoComm(), trace, "no_comm", "the traced no_comm step (the compute alone)", w,
                    spec.commandLine().getErr());
            printComparison(r.trace(), r.traceNoComm(), "overlap", w, spec.commandLine().getErr());
            writeModeTrace(r.traceNoOverlap(), trace, "no_overlap", "the traced no_overlap step", w,
                    spec.commandLine().getErr());
            // The same ops with and without their collectives: besides the collectives themselves, what the data
            // real collectives give changes in the compute.
            printComparison(r.traceNoOverlap(), r.traceNoComm(), "no_overlap", w, spec.commandLine().getErr());
        }
        return agree && replicasAgree && tracks ? 0 : 1;
    }

    /**
     * Where rank 0's traced step spent its time ({@link TraceBreakdown}; `ubuf bench breakdown` prints every rank's from
     * the file). Only a report: a failure here is a warning, the run's results stand.
     */
    static void printBreakdown(StepTrace t, PrintWriter out, PrintWriter err) {
        try {
            if (!t.ranks().isEmpty()) {
                out.println("the traced step, broken down (ubuf bench breakdown --in TRACE for every rank):");
                if (!LayerDemo.traceOpSteps()) {
                    out.println("  (ops traced as one span each, -Dubuf.traceOpSteps=false: no communication spans)");
                }
                TraceBreakdown.of(t.ranks().getFirst()).describe(10).forEach(out::println);
                out.flush();
            }
        } catch (RuntimeException e) {
            err.println("ubuf demo: could not break the traced step down: " + e);
        }
    }

    /**
     * Where rank 0's traced {@code mode} step (overlap, or no_overlap) lost time against its traced no_comm step
     * ({@link TraceComparison}), then the largest differences on every rank side by side. Only a report: a failure
     * here is a warning.
     */
    static void printComparison(StepTrace overlap, StepTrace noComm, String mode, PrintWriter out, PrintWriter err) {
        try {
            if (!overlap.ranks().isEmpty() && !noComm.ranks().isEmpty()) {
                out.println("the traced " + mode + " step against the traced no_comm step, rank 0:");
                TraceComparison.of(overlap.ranks().getFirst(), noComm.ranks().getFirst()).describe(12, mode)
                        .forEach(out::println);
                if (overlap.ranks().size() > 1) {
                    out.println("the same on every rank (an op that differs much between ranks waits there for its"
                            + " peers):");
                    TraceComparison.acrossRanks(overlap.ranks(), noComm.ranks(), 6, mode).forEach(out::println);
                }
                out.flush();
            }
        } catch (RuntimeException e) {
            err.println("ubuf demo: could not compare the traced steps: " + e);
        }
    }

    /**
     * Writes {@code t} to {@code json}, then its PNG timeline with {@code drawPng}: the trace first, so that a PNG
     * that cannot be drawn costs only the picture, a warning on {@code err} (the trace has every span it shows).
     * Returns whether the PNG was written.
     */
    static boolean writeTrace(StepTrace t, Path json, Path png, String what, PrintWriter out, PrintWriter err,
                              PngOutput.Drawing drawPng) throws java.io.IOException {
        ChromeTrace.write(t, json);
        out.println("wrote " + what + " to " + json + " (Chrome trace: open it in ui.perfetto.dev)");
        out.flush();
        boolean drawn = PngOutput.write("ubuf demo", png, err, drawPng);
        if (drawn) {
            out.println("wrote its PNG timeline to " + png);
            out.flush();
        }
        return drawn;
    }

    /**
     * What the host simulation's heap grows to, about: 90 bytes per weight element (fc1 and fc2 over all ranks) and
     * 100 per token and feature of the activations (inputs, outputs and their references), as measured on JDK 25
     * (2048/4096 and 4096/4096 at 32 tokens: 94-101 bytes of resident memory per weight; 256/512 at 32768 tokens:
     * 143 per token and feature at the heap's limit). In double: no size can overflow it into passing.
     */
    static double simulationHeapBytes(long hidden, long ffn, long tokens, Activation act) {
        double weights = (double) hidden * act.fc1Outputs(ffn) + (double) ffn * hidden;
        double activations = (double) tokens * (hidden + act.fc1Outputs(ffn) + ffn);
        return 90 * weights + 100 * activations;
    }

    /** The launch this process belongs to (RANK in its environment), checked; empty when not launched. */
    static Optional<dev.ubuf.bootstrap.LaunchEnvironment> launched() {
        return System.getenv(dev.ubuf.bootstrap.LaunchEnvironment.RANK) == null ? Optional.empty()
                : Optional.of(dev.ubuf.bootstrap.LaunchEnvironment.fromEnvironment());
    }

    private int simulate(UbConfig cfg, int ranks, long h, long f, long m, Activation act, Optional<Path> results) {
        PrintWriter w = spec.commandLine().getOut();
        if (results.isPresent()) {
            spec.commandLine().getErr().println("ubuf demo: --out is ignored by the simulation (nothing is timed).");
        }
        if (cudaGraph) {
            spec.commandLine().getErr().println("ubuf demo: --cuda-graph needs a GPU; the simulation runs its steps"
                    + " without graphs.");
        }
        if (clocks) {
            spec.commandLine().getErr().println("ubuf demo: --clocks needs a GPU; the simulation samples no clocks.");
        }
        if (stepsPerSample != 1) {
            spec.commandLine().getErr().println("ubuf demo: --steps-per-sample needs a GPU; the simulation times"
                    + " nothing.");
        }
        if (trace != null) {
            spec.commandLine().getErr().println("ubuf demo: --trace needs a GPU (CUDA events time the traced step);"
                    + " the simulation writes no trace.");
        }
        if (compareBf16) {
            spec.commandLine().getErr().println("ubuf demo: --compare-bf16 is ignored by the simulation (nothing is"
                    + " trained or timed).");
        }
        w.printf("SIMULATION (host executor, %d simulated ranks, no GPU work): one LayerNormMLP step, hidden %d,"
                + " ffn %d, %s, %d tokens%n", ranks, h, f, act, m);
        w.print(cfg.methodTable().describe());
        cfg.fp8().ifPresent(r -> w.println("FP8 emulated on the host: " + Fp8Key.describe(r) + "; each FP8 op is"
                + " checked over " + LayerSimulation.FP8_STEPS + " steps of the recipe's scales, its values quantized"
                + " as the quantize kernel does (round to nearest even of x * scale, saturated) and multiplied"
                + " dequantized in float64"));
        List<LayerSimulation.Result> rs = LayerSimulation.run(cfg, ranks, m, h, f, act, seed);
        boolean all = true;
        for (LayerSimulation.Result r : rs) {
            w.printf("%-10s %-30s %s%n", r.gemm(), r.variant(), r.detail());
            all &= r.matches();
        }
        for (LayerSimulation.Result r : rs) {
            if (!r.timeline().isEmpty()) {
                w.printf("%n%s schedule of rank 0 (%s):%n%s", r.gemm(), r.variant(), r.timeline());
            }
        }
        w.println(all ? "simulation: overlapped and unoverlapped paths match on every rank"
                : "simulation: MISMATCH between the overlapped and unoverlapped paths");
        w.flush();
        return all ? 0 : 1;
    }

    /** GPUs the driver shows (0 without a driver): decides between the GPU run and the simulation. */
    private static int visibleGpus() {
        try {
            return Cuda.deviceCount();
        } catch (RuntimeException | LinkageError e) {
            return 0;
        }
    }
}
