package dev.ubuf.cli;

import dev.ubuf.ag.AgMethod;
import dev.ubuf.ag.AgOptions;
import dev.ubuf.ag.AgPlanner;
import dev.ubuf.ag.AgPlans;
import dev.ubuf.ag.AgShape;
import dev.ubuf.ag.AllGatherGemmOp;
import dev.ubuf.bench.EventTimer;
import dev.ubuf.bench.MethodVariant;
import dev.ubuf.bench.OverlapReport;
import dev.ubuf.bench.ResultsFile;
import dev.ubuf.bench.ThreadDomain;
import dev.ubuf.comm.TpCommunicator;
import dev.ubuf.config.UbufEnvironment;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.cuda.KernelLibrary;
import dev.ubuf.cuda.StreamPriority;
import dev.ubuf.exec.ExecutionSettings;
import dev.ubuf.gemm.Gemm;
import dev.ubuf.nccl.NcclCommunicator;
import dev.ubuf.ops.DeviceKernels;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import org.apache.commons.math3.stat.descriptive.DescriptiveStatistics;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.stream.Stream;

/**
 * AG overlap benchmark, one JVM driving tp GPUs. Per shape it times, round-robin in the same iterations: the GEMM
 * alone, our copy-engine gather alone (comm), NCCL AllGather alone, NCCL sequential (AllGather then GEMM) and each
 * overlap method or variant; rank 0's medians are recorded. Every option is checked before any GPU work.
 */
@Command(name = "ag", mixinStandardHelpOptions = true, version = UbufCli.VERSION,
        description = "AllGather->GEMM overlap vs NCCL sequential (records op ag): out[M,N] = allgather(x[M/tp,K])"
                + " * W[K,N], N per rank.",
        modelTransformer = AgBenchCommand.Help.class)
final class AgBenchCommand implements Callable<Integer> {
    static final int MAX_TP = 8;
    /** Methods with a GEMM (BULK only gathers; it is timed as "comm"), and the planned op. */
    static final MethodMenu MENU = new MethodMenu(
            Stream.concat(Arrays.stream(AgMethod.values()).filter(AgMethod::hasGemm).map(AgMethod::resultName),
                    Stream.of("auto")).toList(),
            List.of(new VariantKey("cs", "GEMM compute streams", 1, AgOptions.MAX_COMPUTE_STREAMS),
                    new VariantKey("ms", "comm streams of oneshot's pushes", 1, AgOptions.MAX_COMM_STREAMS)));

    @Spec
    CommandSpec spec;

    @Option(names = "--tp", defaultValue = "2", paramLabel = "N",
            description = "Ranks, one GPU each, all driven by this JVM: 2.." + MAX_TP + " (default: ${DEFAULT-VALUE}).")
    int tp;
    @Option(names = "--shapes", split = " ", arity = "1..*", paramLabel = "M,K,N",
            defaultValue = "4096,8192,8192 8192,8192,8192 16384,8192,8192 16384,8192,14336",
            description = "Shapes M,K,N (N per rank; M divisible by tp), separated by spaces"
                    + " (default: ${DEFAULT-VALUE}).")
    List<String> shapes;
    @Option(names = "--methods", split = ";", splitSynopsisLabel = ";", paramLabel = "METHOD",
            defaultValue = "ring;aggregate;oneshot;auto",
            description = "Methods or variants separated by ';', e.g. ring;ring:cs=1;aggregate (default:"
                    + " ${DEFAULT-VALUE}); methods and keys below.")
    List<String> methods;
    @Option(names = "--dtype", defaultValue = "bf16", converter = BenchDTypes.Converter.class,
            completionCandidates = BenchDTypes.class, paramLabel = "TYPE",
            description = "Element type: ${COMPLETION-CANDIDATES} (default: ${DEFAULT-VALUE}).")
    DType dtype;
    @Option(names = "--warmup", defaultValue = "5", paramLabel = "N",
            description = "Untimed rounds first, >= 0 (default: ${DEFAULT-VALUE}).")
    int warmup;
    @Option(names = "--iters", defaultValue = "30", paramLabel = "N",
            description = "Timed rounds, each running every candidate once, round-robin; >= 1"
                    + " (default: ${DEFAULT-VALUE}).")
    int iters;
    @Option(names = "--copy-engine", defaultValue = "true", negatable = true,
            description = "Move chunks with the copy engines; --no-copy-engine uses SM copy kernels"
                    + " (default: ${DEFAULT-VALUE}).")
    boolean copyEngine;
    @Option(names = "--trace", description = "Print rank 0's per-step timeline of one call of each method.")
    boolean trace;
    @Mixin
    ResultsOutput out;

    /** One timed candidate: the variant as written, and the method and options it runs (method null: auto). */
    private record Candidate(MethodVariant variant, AgMethod method, AgOptions options) {
        /** Builds the plans this candidate would run for {@code shape}: pure host arithmetic, no GPU. */
        void check(AgShape shape) {
            if (method == null) {
                AgPlanner p = AgPlanner.defaults();
                if (!p.prefersNccl(shape)) {
                    AgPlans.domain(p.choose(shape), shape, AgOptions.defaults());
                }
            } else {
                AgPlans.domain(method, shape, options);
            }
        }
    }

    /** Everything the run needs, checked. */
    private record Setup(List<AgShape> shapes, List<Candidate> candidates, Optional<Path> out) {
    }

    @Override
    public Integer call() throws Exception {
        Setup setup = check();
        ResultsFile results = run(setup);
        if (setup.out().isPresent()) {
            results.write(setup.out().get());
        }
        return 0;
    }

    private Setup check() {
        OptionChecks.within(spec, "--tp", tp, 2, MAX_TP);
        OptionChecks.atLeast(spec, "--warmup", warmup, 0);
        OptionChecks.atLeast(spec, "--iters", iters, 1);
        List<AgShape> parsed = BenchShapes.parse(spec, shapes, "with --tp " + tp,
                mkn -> new AgShape(tp, mkn[0], mkn[1], mkn[2], dtype));
        List<Candidate> candidates = new ArrayList<>();
        try {
            for (MethodVariant v : MENU.parse(methods)) {
                AgOptions d = AgOptions.defaults();
                AgOptions opts = d.withComputeStreams(v.option("cs", d.computeStreams()))
                        .withCommStreams(v.option("ms", d.commStreams()));
                candidates.add(new Candidate(v, v.method().equals("auto") ? null : AgMethod.parse(v.method()), opts));
            }
        } catch (IllegalArgumentException e) {
            throw OptionChecks.invalid(spec, "--methods: " + e.getMessage());
        }
        for (AgShape shape : parsed) {
            for (Candidate c : candidates) {
                try {
                    c.check(shape);
                } catch (IllegalArgumentException e) {
                    throw OptionChecks.invalid(spec, "--methods: '" + c.variant().label() + "' cannot run M="
                            + shape.m() + " K=" + shape.k() + " N=" + shape.n() + " with --tp " + tp + ": "
                            + e.getMessage());
                }
            }
        }
        return new Setup(parsed, candidates, out.checkWritable());
    }

    private ResultsFile run(Setup setup) throws Exception {
        DType t = dtype;
        List<AgShape> parsed = setup.shapes();
        List<MethodVariant> variants = setup.candidates().stream().map(Candidate::variant).toList();
        UbufEnvironment env = UbufEnvironment.fromSystem();
        ResultsFile[] rf = new ResultsFile[1];
        ThreadDomain.run(tp, env.timeout(), (rank, boot, ctx) -> {
            if (rank == 0) {
                rf[0] = new ResultsFile(tp + "x " + ctx.device().name(), ResultsFile.commitFromEnvironment());
            }
            try (TpCommunicator comm = TpCommunicator.create(boot, ctx, env, null);
                 KernelLibrary lib = KernelLibrary.load(ctx);
                 CudaStream s = ctx.createStream(StreamPriority.NORMAL);
                 Gemm gemm = new Gemm(ctx)) {
                NcclCommunicator nccl = comm.nccl();
                DeviceKernels kernels = new DeviceKernels(lib);
                ExecutionSettings exec = ExecutionSettings.DEFAULT.withCopyEngine(copyEngine);
                for (AgShape shape : parsed) {
                    long m = shape.m(), k = shape.k(), n = shape.n();
                    List<AllGatherGemmOp> ops = new ArrayList<>();
                    try (DeviceBuffer xb = ctx.allocate(m / tp * k * t.bytes());
                         DeviceBuffer wb = ctx.allocate(k * n * t.bytes());
                         DeviceBuffer ob = ctx.allocate(m * n * t.bytes());
                         DeviceBuffer gb = ctx.allocate(m * k * t.bytes())) {
                        TensorView x = TensorView.of(xb, m / tp, k, t);
                        TensorView w = TensorView.of(wb, k, n, t);
                        TensorView o = TensorView.of(ob, m, n, t);
                        TensorView g = TensorView.of(gb, m, k, t);
                        kernels.fillRandom(x, 17 + rank, 1f, s);
                        kernels.fillRandom(w, 29 + rank, 1f / (float) Math.sqrt(k), s);
                        kernels.fillRandom(g, 31, 1f, s);
                        s.synchronize();
                        AllGatherGemmOp bulk = new AllGatherGemmOp(comm, shape, AgMethod.BULK, AgOptions.defaults(),
                                kernels, exec);
                        ops.add(bulk);
                        LinkedHashMap<String, Runnable> c = new LinkedHashMap<>();
                        c.put("gemm", () -> gemm.multiply(g, w, o, s));
                        c.put("comm", () -> bulk.gather(x, s));
                        c.put("nccl_ag", () -> nccl.allGather(x.address(), g.address(), m / tp * k, t, s.nativeHandle()));
                        c.put("nccl_seq", () -> {
                            nccl.allGather(x.address(), g.address(), m / tp * k, t, s.nativeHandle());
                            gemm.multiply(g, w, o, s);
                        });
                        for (Candidate cand : setup.candidates()) {
                            AllGatherGemmOp op = cand.method() == null // auto: what a layer gets, NCCL included
                                    ? AllGatherGemmOp.planned(comm, shape, kernels, exec)
                                    : new AllGatherGemmOp(comm, shape, cand.method(), cand.options(), kernels, exec);
                            ops.add(op);
                            c.put(cand.variant().label(), () -> op.forward(x, w, false, o, s));
                        }
                        Map<String, DescriptiveStatistics> st = EventTimer.interleaved(ctx, s, warmup, iters, c, boot::barrier);
                        if (trace) {
                            for (int i = 1; i < ops.size(); i++) {
                                AllGatherGemmOp op = ops.get(i);
                                if (op.methodName().equals("nccl")) {
                                    continue;
                                }
                                op.enableTrace();
                                boot.barrier();
                                op.forward(x, w, false, o, s);
                                op.await(s);
                                if (rank == 0) {
                                    System.out.print(variants.get(i - 1).label() + " M=" + m + " N=" + n + ": " + op.traceReport());
                                }
                            }
                        }
                        if (rank == 0) {
                            report(rf[0], shape, st, variants, ops.subList(1, ops.size()));
                        }
                    } finally {
                        s.synchronize();
                        for (int i = ops.size() - 1; i >= 0; i--) {
                            ops.get(i).close();
                        }
                    }
                }
            }
        });
        return rf[0];
    }

    private void report(ResultsFile rf, AgShape shape, Map<String, DescriptiveStatistics> st, List<MethodVariant> variants,
                        List<AllGatherGemmOp> ops) {
        new OverlapReport("ag", tp, shape.dtype().shortName(), shape.m(), shape.k(), shape.n(), "ce", "nccl_ag",
                Map.of("copy_engine", copyEngine, "rank_mode", "threads", "iters", iters)).write(rf, st, variants.stream().map(MethodVariant::label).toList(),
                ops.stream().map(AllGatherGemmOp::methodName).toList());
    }

    /** Adds the --methods menu to the help, from the same list the checks use. */
    static final class Help implements CommandLine.IModelTransformer {
        @Override
        public CommandSpec transform(CommandSpec spec) {
            spec.usageMessage().footer(MENU.help().toArray(String[]::new));
            return spec;
        }
    }
}
