package dev.ubuf.bench;

import dev.ubuf.comm.ThreadDomain;
import dev.ubuf.comm.TpCommunicator;
import dev.ubuf.config.UbufEnvironment;
import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.KernelLibrary;
import dev.ubuf.cuda.StreamPriority;
import dev.ubuf.nccl.NcclCommunicator;
import dev.ubuf.nccl.NcclRedOp;
import dev.ubuf.exec.ExecutionSettings;
import dev.ubuf.op.Candidate;
import dev.ubuf.op.Collective;
import dev.ubuf.op.MethodRegistry;
import dev.ubuf.op.OperandBuffers;
import dev.ubuf.op.OverlapOp;
import dev.ubuf.op.OverlapShape;
import dev.ubuf.op.Planner;
import dev.ubuf.op.PlannerSettings;
import dev.ubuf.devicekernels.DeviceKernels;
import dev.ubuf.tensor.DType;
import dev.ubuf.timing.InterleavedTimer;
import dev.ubuf.timing.RoundBudget;
import dev.ubuf.timing.TimingStats;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The overlap benchmark of both families, one loop generic over ops: per shape, on tp GPUs driven by one JVM, it
 * times in the same shuffled iterations ({@link InterleavedTimer}: barrier, stream held while enqueueing, maximum
 * over ranks; the planner measures its candidates through the same timer, after the same GEMM tuning):
 * <ul>
 *   <li>{@code gemm}: the whole product as one cuBLASLt call;</li>
 *   <li>{@code <variant>/gemms}: each variant's own GEMM decomposition back to back on one stream, no communication;</li>
 *   <li>{@code comm}: the data movement alone on the copy engines (the bulk method), and {@code nccl_ag}/{@code
 *       nccl_rs}: the NCCL collective alone;</li>
 *   <li>{@code nccl_seq}: the NCCL reference (collective + GEMM, unoverlapped), and every variant.</li>
 * </ul>
 * A variant's ideal is max(min(gemm, its gemms), min(comm, nccl collective)): every term is a measured time of work
 * the op must do at least once, so no correct measurement beats it; a record above 100.5% of it is flagged as a
 * measurement fault, not reported as a success.
 */
public final class OverlapBench {
    /** A record above this share of its ideal is a measurement fault. */
    public static final double FAULT_PCT = 100.5;

    /**
     * @param variants registered method variants ("ring", "ring:cs=2"), "auto" (the planner's choice), "nccl" or
     *                 NCCL's pipelined reduce-scatter ("nccl:splits=4")
     * @param cudaGraph time every term and variant as replays of a CUDA graph of one call, the ops graph-safe (signal
     *                  and wait kernels) and {@code auto} planned the same way: what a layer replaying its steps runs
     * @param out      where the results file is rewritten after every shape, if anywhere
     */
    public record Settings(int tp, List<OverlapShape> shapes, Map<Collective, List<String>> variants, int warmup,
                           int iters, long seed, boolean copyEngine, boolean cudaGraph, boolean trace,
                           Optional<Path> out, Map<String, Object> extras, int callsPerSample) {
        /** One call a sample. */
        public Settings(int tp, List<OverlapShape> shapes, Map<Collective, List<String>> variants, int warmup,
                        int iters, long seed, boolean copyEngine, boolean cudaGraph, boolean trace,
                        Optional<Path> out, Map<String, Object> extras) {
            this(tp, shapes, variants, warmup, iters, seed, copyEngine, cudaGraph, trace, out, extras, 1);
        }

        public Settings {
            InterleavedTimer.requireCallsPerSample(callsPerSample, "--calls-per-sample");
        }

        public List<String> variantsOf(OverlapShape shape) {
            return variants.getOrDefault(shape.collective(), List.of());
        }
    }

    private final Settings settings;
    private final UbufEnvironment env;
    private final PlannerSettings planner;

    public OverlapBench(Settings settings, UbufEnvironment env, PlannerSettings planner) {
        this.settings = settings;
        this.env = env;
        this.planner = planner;
    }

    /** Builds every variant's schedule for every shape on the host: bad variants fail before any GPU work. */
    public static void check(MethodRegistry registry, List<OverlapShape> shapes,
                             Map<Collective, List<String>> variants) {
        check(registry, shapes, variants, false);
    }

    /** As {@link #check(MethodRegistry, List, Map)}; with {@code cudaGraph} every variant must be graph-safe too. */
    public static void check(MethodRegistry registry, List<OverlapShape> shapes,
                             Map<Collective, List<String>> variants, boolean cudaGraph) {
        for (OverlapShape s : shapes) {
            for (String v : variants.getOrDefault(s.collective(), List.of())) {
                if (!v.equals("auto")) {
                    checkVariant(registry, s, v, cudaGraph);
                }
            }
            for (String bulk : commVariants(s)) {
                registry.schedule(commShape(s), bulk);
            }
        }
    }

    /**
     * One named variant of {@code shape} (not "auto"), built on the host; with {@code cudaGraph} it must be graph-safe.
     * A bad label or option, or a variant that cannot be captured, is an {@link IllegalArgumentException}.
     */
    public static void checkVariant(MethodRegistry registry, OverlapShape shape, String variant, boolean cudaGraph) {
        Candidate c = Candidate.named(registry, shape, variant);
        if (cudaGraph) {
            c.unsupportedWith(ExecutionSettings.DEFAULT.withGraphSafe(true)).ifPresent(why -> {
                throw new IllegalArgumentException(variant + " cannot be timed as graph replays: " + why);
            });
        }
    }

    /**
     * How each of {@link #commVariants}, in their order, is timed (the timer's key), recorded (the record's field)
     * and printed.
     */
    private record CommTerm(String key, String field, String label) {
    }

    private static final List<CommTerm> COMM_TERMS = List.of(new CommTerm("comm", "ce_comm_ms", "ce"),
            new CommTerm("comm_staged", "ce_staged_comm_ms", "staged"),
            new CommTerm("comm_staged_serial", "ce_serial_comm_ms", "serial"));

    /**
     * The bulk methods that time the communication alone: a reduce-scatter has two (TE's pull-reduce kernel, and the
     * copy-engine pulls with one local sum), from tp 3 on three (the copy-engine pulls one peer at a time, as
     * {@code scatter:serial=1} pushes), and the fastest is the ideal's communication term, so the ideal stays a
     * lower bound whichever way the communication is fastest.
     */
    static List<String> commVariants(OverlapShape shape) {
        if (shape.collective() != Collective.REDUCE_SCATTER) {
            return List.of("bulk");
        }
        return shape.tp() > 2 ? List.of("bulk", "bulk:stage=1", "bulk:serial=1,stage=1")
                : List.of("bulk", "bulk:stage=1");
    }

    /**
     * The shape of the communication alone (the bulk op): an FP8 AG gathers FP8 bytes (the shape itself); an FP8 RS
     * reduce-scatters partials of the output's type, which is the bulk reduce-scatter of the shape without FP8, and an
     * RS with an FP8 output likewise (its final quantization is not communication: leaving it out keeps the ideal a
     * lower bound).
     */
    static OverlapShape commShape(OverlapShape shape) {
        return (shape.fp8().isPresent() || shape.fp8Output().isPresent()) && shape instanceof dev.ubuf.rs.RsShape rs
                ? new dev.ubuf.rs.RsShape(rs.tp(), rs.m(), rs.k(), rs.n(), rs.dtype(), rs.bias()) : shape;
    }

    /** Runs the benchmark and returns the results (also written to {@code out} after each shape). */
    public ResultsFile run() throws Exception {
        return run(shape -> { });
    }

    /** As {@link #run()}; {@code done} is told (on rank 0's thread) after each shape, e.g. for a progress bar. */
    public ResultsFile run(java.util.function.Consumer<OverlapShape> done) throws Exception {
        MethodRegistry registry = MethodRegistry.load();
        check(registry, settings.shapes(), settings.variants(), settings.cudaGraph());
        ResultsFile[] rf = new ResultsFile[1];
        ThreadDomain.run(settings.tp(), env.timeout(), (rank, boot, ctx) -> {
            if (rank == 0) {
                rf[0] = new ResultsFile(settings.tp() + "x " + ctx.device().name(), ResultsFile.commitFromEnvironment());
            }
            try (TpCommunicator comm = TpCommunicator.create(boot, ctx, env, null);
                 KernelLibrary lib = KernelLibrary.load(ctx);
                 CudaStream s = ctx.createStream(StreamPriority.NORMAL);
                 InterleavedTimer timer = new InterleavedTimer(comm, s, settings.callsPerSample())) {
                DeviceKernels kernels = new DeviceKernels(lib);
                Planner plans = new Planner(registry, planner);
                for (OverlapShape shape : settings.shapes()) {
                    benchShape(rank, comm, ctx, kernels, registry, plans, timer, s, shape, rank == 0 ? rf[0] : null);
                    if (rank == 0) {
                        settings.out().ifPresent(o -> write(rf[0], o));
                        done.accept(shape);
                    }
                }
            }
        });
        return rf[0];
    }

    private static void write(ResultsFile rf, Path out) {
        try {
            rf.write(out);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + out, e);
        }
    }

    private void benchShape(int rank, TpCommunicator comm, CudaContext ctx, DeviceKernels kernels,
                            MethodRegistry registry, Planner plans, InterleavedTimer timer, CudaStream s,
                            OverlapShape shape, ResultsFile rf) {
        ExecutionSettings exec = ExecutionSettings.DEFAULT.withCopyEngine(settings.copyEngine())
                .withGraphSafe(settings.cudaGraph());
        List<OverlapOp> ops = new ArrayList<>();
        Map<String, String> ran = new LinkedHashMap<>();
        Map<String, Planner.Decision> decided = new LinkedHashMap<>();
        try (OperandBuffers operands = new OperandBuffers(ctx, kernels, shape, settings.seed() + rank, s)) {
            var b = operands.bindings();
            OverlapOp reference = OverlapOp.ncclReference(comm, shape, kernels);
            ops.add(reference);
            var bulkOperands = operands.forMethod(false, shape.collective());
            Map<String, Runnable> c = new LinkedHashMap<>();
            c.put("gemm", () -> reference.forwardGemmsOnly(b, s));
            List<OverlapOp> bulks = new ArrayList<>();
            for (String v : commVariants(shape)) {
                OverlapOp bulk = OverlapOp.create(comm, registry.schedule(commShape(shape), v), kernels, exec);
                ops.add(bulk);
                bulks.add(bulk);
                c.put(COMM_TERMS.get(bulks.size() - 1).key(), () -> bulk.forward(bulkOperands, s));
            }
            int firstVariant = ops.size();
            NcclCommunicator nccl = comm.nccl();
            String ncclKey = shape.collective() == Collective.ALL_GATHER ? "nccl_ag" : "nccl_rs";
            long rows = shape.m() / shape.tp();
            c.put(ncclKey, shape.collective() == Collective.ALL_GATHER
                    ? () -> nccl.allGather(b.input().address(), reference.userBuffer().address(),
                    shape.fp8().isPresent() ? rows * shape.k() / 2 : rows * shape.k(),
                    shape.fp8().isPresent() ? DType.FP16 : shape.dtype(), s.nativeHandle()) // fp8: byte pairs
                    : () -> nccl.reduceScatter(reference.userBuffer().address(), b.output().address(),
                    rows * shape.n(), shape.dtype(), NcclRedOp.SUM, s.nativeHandle()));
            c.put("nccl_seq", () -> reference.forward(b, s));
            for (String v : settings.variantsOf(shape)) {
                OverlapOp op;
                if (v.equals("auto")) {
                    Planner.Decision d = plans.decide(comm, shape, kernels, exec);
                    decided.put(v, d);
                    op = d.chosen().create(comm, shape, kernels, exec);
                } else {
                    op = Candidate.named(registry, shape, v).create(comm, shape, kernels, exec);
                }
                ops.add(op);
                ran.put(v, op.label());
                c.put(v, () -> op.forward(b, s));
                c.put(v + "/gemms", () -> op.forwardGemmsOnly(b, s));
                c.put(v + "/gemms-streams", () -> op.forwardGemmsOnTheirStreams(b, s));
            }
            // Every GEMM tuned before the timing (collective), so no timed call tunes while its peers wait.
            for (OverlapOp op : ops) {
                if (!bulks.contains(op)) {
                    op.tuneGemms(b, s);
                }
            }
            RoundBudget rounds = RoundBudget.fixed(settings.warmup(), settings.iters());
            long seed = settings.seed() ^ shape.key().hashCode();
            InterleavedTimer.Result r = settings.cudaGraph() ? timer.timeReplays(c, rounds, seed)
                    : timer.time(c, rounds, seed);
            if (settings.trace()) {
                for (int i = firstVariant; i < ops.size(); i++) {
                    OverlapOp op = ops.get(i);
                    op.enableTrace();
                    comm.bootstrap().barrier();
                    op.forward(b, s);
                    op.await(s);
                    if (rank == 0) {
                        System.out.print(settings.variantsOf(shape).get(i - firstVariant) + " " + shape.key() + ": "
                                + op.traceReport());
                    }
                }
            }
            if (rf != null) {
                report(rf, shape, r, ran, decided, ncclKey);
            }
        } finally {
            for (int i = ops.size() - 1; i >= 0; i--) {
                ops.get(i).close();
            }
        }
    }

    private void report(ResultsFile rf, OverlapShape shape, InterleavedTimer.Result r, Map<String, String> ran,
                        Map<String, Planner.Decision> decided, String ncclKey) {
        double gemm = r.median("gemm");
        double comm = r.median(ncclKey);
        Map<String, Object> ceTerms = new LinkedHashMap<>();
        StringBuilder printed = new StringBuilder();
        for (CommTerm t : COMM_TERMS) {
            if (r.stats().containsKey(t.key())) {
                double ms = r.median(t.key());
                comm = Math.min(comm, ms);
                ceTerms.put(t.field(), ms);
                printed.append(String.format(java.util.Locale.ROOT, "%s %.4f, ", t.label(), ms));
            }
        }
        double seq = r.median("nccl_seq");
        System.out.printf("%s: gemm %.4f  comm %.4f (%s%s %.4f)  nccl_seq %.4f ms%n", shape.key(), gemm, comm, printed,
                ncclKey, r.median(ncclKey), seq);
        Map<String, Object> base = record(shape, "nccl_seq", r.stats().get("nccl_seq"));
        base.put("gemm_ms", gemm);
        base.put("comm_ms", comm);
        base.put(ncclKey + "_ms", r.median(ncclKey));
        base.putAll(ceTerms);
        rf.add(base);
        for (var e : ran.entrySet()) {
            String v = e.getKey();
            TimingStats d = r.stats().get(v);
            double ms = d.median();
            double chunked = r.median(v + "/gemms");
            double onStreams = r.median(v + "/gemms-streams");
            // The op's GEMMs can beat one whole GEMM and their own chunks back to back when they overlap each other
            // on the op's streams: the smallest of the three is the GEMM work's lower bound.
            double ideal = Math.max(Math.min(gemm, Math.min(chunked, onStreams)), comm);
            double pct = 100 * ideal / ms;
            boolean fault = pct > FAULT_PCT;
            System.out.printf("   %-24s %.4f ms (p10 %.4f p90 %.4f)  gemms %.4f (on its streams %.4f)  %.1f%% of ideal"
                            + "  %.3fx vs nccl_seq%s%s%n",
                    v, ms, d.p10(), d.p90(), chunked, onStreams, pct, seq / ms,
                    v.equals(e.getValue()) ? "" : "  [" + e.getValue() + "]",
                    fault ? "  MEASUREMENT FAULT: above " + FAULT_PCT + "% of a lower bound" : "");
            Map<String, Object> rec = record(shape, v, d);
            rec.put("ran", e.getValue());
            rec.put("gemm_ms", gemm);
            rec.put("gemm_chunked_ms", chunked);
            rec.put("gemm_streams_ms", onStreams);
            rec.put("comm_ms", comm);
            rec.put("ideal_ms", ideal);
            rec.put("pct_of_ideal", pct);
            rec.put("vs_nccl_seq", seq / ms);
            rec.put("nccl_seq_ms", seq);
            rec.put("timer_valve_releases", r.valveReleases());
            if (fault) {
                rec.put("measurement_fault", true);
            }
            Planner.Decision decision = decided.get(v);
            if (decision != null) {
                // What the planner itself measured when it chose (not on a cached choice): set beside the
                // benchmark's own times of the same candidates, it shows whether the two measurements agree.
                rec.put("planner_source", decision.source());
                if (!decision.measured().isEmpty()) {
                    rec.put("planner_ms", new LinkedHashMap<>(decision.measured().medianMs()));
                    rec.put("planner_rounds", decision.measured().rounds());
                }
            }
            rf.add(rec);
        }
    }

    private Map<String, Object> record(OverlapShape shape, String method, TimingStats d) {
        Map<String, Object> r = ResultsFile.record(shape.collective().resultName(), method, shape.tp(),
                shape.dtype().shortName(), shape.m(), shape.n(), shape.k(), d.median());
        r.put("p10_ms", d.p10());
        r.put("p90_ms", d.p90());
        r.put("bias", shape.bias());
        shape.fp8().ifPresent(f -> r.put("fp8", f.describe())); // dtype is then the output's
        shape.fp8Output().ifPresent(t -> r.put("fp8_output", t.shortName())); // the sum quantized; dtype the sum's
        r.put("iters", settings.iters());
        r.put("timing", (settings.cudaGraph() ? "cuda-graph replays, " : "")
                + (settings.callsPerSample() > 1 ? settings.callsPerSample() + " calls back to back a sample, " : "")
                + "interleaved-shuffled, max over ranks, enqueue excluded");
        r.put("cuda_graph", settings.cudaGraph());
        r.put("calls_per_sample", settings.callsPerSample());
        r.put("seed", settings.seed());
        r.put("copy_engine", settings.copyEngine());
        r.put("rank_mode", "threads");
        r.putAll(settings.extras());
        return r;
    }
}
