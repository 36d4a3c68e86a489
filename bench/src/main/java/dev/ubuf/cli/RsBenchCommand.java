package dev.ubuf.cli;

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
import dev.ubuf.nccl.NcclRedOp;
import dev.ubuf.ops.DeviceKernels;
import dev.ubuf.rs.GemmReduceScatterOp;
import dev.ubuf.rs.RsMethod;
import dev.ubuf.rs.RsOptions;
import dev.ubuf.rs.RsPlanner;
import dev.ubuf.rs.RsSchedule;
import dev.ubuf.rs.RsShape;
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
 * RS overlap benchmark, one JVM driving tp GPUs. Per shape it times, round-robin in the same iterations: the GEMM
 * alone, our pull reduce-scatter alone (comm), NCCL ReduceScatter alone, NCCL sequential (GEMM then
 * ReduceScatter) and each overlap method or variant; rank 0's medians are recorded. Every option is checked before
 * any GPU work.
 */
@Command(name = "rs", mixinStandardHelpOptions = true, version = UbufCli.VERSION,
        description = "GEMM->ReduceScatter overlap vs NCCL sequential (records op rs): x[M,K] * W[K,N], K per rank,"
                + " reduce-scattered by rows to [M/tp,N].",
        modelTransformer = RsBenchCommand.Help.class)
final class RsBenchCommand implements Callable<Integer> {
    static final int MAX_TP = 8;
    /** Methods with a GEMM (BULK only reduce-scatters; it is timed as "comm"), and the planned op. */
    static final MethodMenu MENU = new MethodMenu(
            Stream.concat(Arrays.stream(RsMethod.values()).filter(m -> m != RsMethod.BULK).map(RsMethod::shortName),
                    Stream.of("auto")).toList(),
            List.of(new VariantKey("cs", "GEMM compute streams", 1, 3),
                    new VariantKey("sub", "ring: row sub-chunks per step, at most M/tp", 1, Integer.MAX_VALUE),
                    new VariantKey("slots", "ring: receive slots", 2, Integer.MAX_VALUE),
                    new VariantKey("splits", "pipeline: column blocks, dividing N", 1, Integer.MAX_VALUE),
                    new VariantKey("margin", "pipeline: SMs kept free of the GEMMs", 0, Integer.MAX_VALUE),
                    new VariantKey("lowp", "ring: 1 partials in the op's dtype, 0 in fp32", 0, 1)));

    @Spec
    CommandSpec spec;

    @Option(names = "--tp", defaultValue = "2", paramLabel = "N",
            description = "Ranks, one GPU each, all driven by this JVM: 2.." + MAX_TP + " (default: ${DEFAULT-VALUE}).")
    int tp;
    @Option(names = "--shapes", split = " ", arity = "1..*", paramLabel = "M,K,N",
            defaultValue = "4096,8192,8192 8192,8192,8192 16384,8192,8192 16384,8192,14336",
            description = "Shapes M,K,N (K per rank; M divisible by tp), separated by spaces"
                    + " (default: ${DEFAULT-VALUE}).")
    List<String> shapes;
    @Option(names = "--methods", split = ";", splitSynopsisLabel = ";", paramLabel = "METHOD",
            defaultValue = "ring;pipeline;oneshot;auto",
            description = "Methods or variants separated by ';', e.g. ring;ring:sub=4,cs=1,lowp=1;pipeline:splits=8"
                    + " (default: ${DEFAULT-VALUE}); methods and keys below.")
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
    @Option(names = "--trace", description = "Print rank 0's per-step timeline of one call of each method.")
    boolean trace;
    @Mixin
    ResultsOutput out;

    /** Everything the run needs, checked. */
    private record Setup(List<RsShape> shapes, List<MethodVariant> variants, Optional<Path> out) {
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
        List<RsShape> parsed = BenchShapes.parse(spec, shapes, "with --tp " + tp,
                mkn -> new RsShape(tp, mkn[0], mkn[1], mkn[2], dtype, false));
        List<MethodVariant> variants;
        try {
            variants = MENU.parse(methods);
        } catch (IllegalArgumentException e) {
            throw OptionChecks.invalid(spec, "--methods: " + e.getMessage());
        }
        for (RsShape shape : parsed) {
            for (MethodVariant v : variants) {
                String why;
                try {
                    why = v.method().equals("auto") && RsPlanner.DEFAULT.prefersNccl(shape) ? null
                            : RsSchedule.whyUnsupported(method(v, shape), shape, options(v, shape)).orElse(null);
                } catch (IllegalArgumentException e) {
                    why = e.getMessage();
                }
                if (why != null) {
                    throw OptionChecks.invalid(spec, "--methods: '" + v.label() + "' cannot run M=" + shape.m()
                            + " K=" + shape.k() + " N=" + shape.n() + " with --tp " + tp + ": " + why);
                }
            }
        }
        return new Setup(parsed, variants, out.checkWritable());
    }

    private ResultsFile run(Setup setup) throws Exception {
        DType t = dtype;
        List<RsShape> parsed = setup.shapes();
        List<MethodVariant> variants = setup.variants();
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
                for (RsShape shape : parsed) {
                    long m = shape.m(), k = shape.k(), n = shape.n();
                    List<GemmReduceScatterOp> ops = new ArrayList<>();
                    try (DeviceBuffer xb = ctx.allocate(m * k * t.bytes());
                         DeviceBuffer wb = ctx.allocate(k * n * t.bytes());
                         DeviceBuffer pb = ctx.allocate(m * n * t.bytes());
                         DeviceBuffer ob = ctx.allocate(m / tp * n * t.bytes())) {
                        TensorView x = TensorView.of(xb, m, k, t);
                        TensorView w = TensorView.of(wb, k, n, t);
                        TensorView part = TensorView.of(pb, m, n, t);
                        TensorView o = TensorView.of(ob, m / tp, n, t);
                        kernels.fillRandom(x, 17 + rank, 1f, s);
                        kernels.fillRandom(w, 29 + rank, 1f / (float) Math.sqrt(k), s);
                        s.synchronize();
                        GemmReduceScatterOp bulk = new GemmReduceScatterOp(comm, shape, RsMethod.BULK,
                                RsOptions.DEFAULTS, kernels, ExecutionSettings.DEFAULT);
                        ops.add(bulk);
                        LinkedHashMap<String, Runnable> c = new LinkedHashMap<>();
                        c.put("gemm", () -> gemm.multiply(x, w, part, s));
                        c.put("comm", () -> bulk.reduceScatter(o, null, s));
                        c.put("nccl_rs", () -> nccl.reduceScatter(part.address(), o.address(), m / tp * n, t,
                                NcclRedOp.SUM, s.nativeHandle()));
                        c.put("nccl_seq", () -> {
                            gemm.multiply(x, w, part, s);
                            nccl.reduceScatter(part.address(), o.address(), m / tp * n, t, NcclRedOp.SUM, s.nativeHandle());
                        });
                        for (MethodVariant v : variants) {
                            // "auto" is what a layer gets: the planner's choice, NCCL included
                            GemmReduceScatterOp op = v.method().equals("auto")
                                    ? GemmReduceScatterOp.planned(comm, shape, kernels, ExecutionSettings.DEFAULT)
                                    : new GemmReduceScatterOp(comm, shape, method(v, shape), options(v, shape), kernels,
                                    ExecutionSettings.DEFAULT);
                            ops.add(op);
                            c.put(v.label(), () -> op.forward(x, w, false, o, null, s));
                        }
                        Map<String, DescriptiveStatistics> st = EventTimer.interleaved(ctx, s, warmup, iters, c, boot::barrier);
                        if (trace) {
                            for (int i = 1; i < ops.size(); i++) {
                                GemmReduceScatterOp op = ops.get(i);
                                if (op.methodName().equals("nccl")) {
                                    continue;
                                }
                                op.enableTrace();
                                boot.barrier();
                                op.forward(x, w, false, o, null, s);
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

    private static RsMethod method(MethodVariant v, RsShape shape) {
        if (v.method().equals("auto")) {
            return RsPlanner.DEFAULT.choose(shape);
        }
        return Arrays.stream(RsMethod.values()).filter(m -> m.shortName().equals(v.method())).findFirst()
                .orElseThrow(); // the menu admitted only these names
    }

    private static RsOptions options(MethodVariant v, RsShape shape) {
        // "auto" and the plain method names start from the planner's options for the shape
        RsOptions d = RsPlanner.DEFAULT.optionsFor(shape);
        return d.withComputeStreams(v.option("cs", d.computeStreams()))
                .withRingSubChunks(v.option("sub", d.ringSubChunks()))
                .withRingSlots(v.option("slots", d.ringSlots()))
                .withNumSplits(v.option("splits", d.numSplits()))
                .withGemmSmMargin(v.option("margin", d.gemmSmMargin()))
                // lowp=1: ring partials in the op's dtype; lowp=0: fp32; absent: the planner's choice
                .withRingPartialDtype(v.option("lowp", -1) == 1 ? shape.dtype()
                        : v.option("lowp", -1) == 0 ? dev.ubuf.tensor.DType.FP32 : d.ringPartialDtype());
    }

    private void report(ResultsFile rf, RsShape shape, Map<String, DescriptiveStatistics> st, List<MethodVariant> variants,
                        List<GemmReduceScatterOp> ops) {
        new OverlapReport("rs", tp, shape.dtype().shortName(), shape.m(), shape.k(), shape.n(), "pull", "nccl_rs",
                Map.of("rank_mode", "threads", "iters", iters)).write(rf, st, variants.stream().map(MethodVariant::label).toList(),
                ops.stream().map(GemmReduceScatterOp::methodName).toList());
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
