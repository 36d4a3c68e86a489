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
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;

/**
 * RS overlap benchmark, one JVM driving tp GPUs. Per shape it times, round-robin in the same iterations: the GEMM
 * alone, our pull reduce-scatter alone (comm), NCCL ReduceScatter alone, NCCL sequential (GEMM then
 * ReduceScatter) and each overlap method or variant; rank 0's medians are recorded.
 */
@Command(name = "rs", description = "GEMM->ReduceScatter overlap vs NCCL sequential (records op rs).")
final class RsBenchCommand implements Callable<Integer> {
    @Option(names = "--tp", defaultValue = "2") int tp;
    @Option(names = "--shapes", split = " ", arity = "1..*", defaultValue = "4096,8192,8192 8192,8192,8192 16384,8192,8192 16384,8192,14336",
            description = "M,K,N (K per rank), separated by spaces") List<String> shapes;
    @Option(names = "--methods", split = ";", defaultValue = "ring;pipeline;oneshot;auto",
            description = "methods or variants separated by ;, e.g. ring;ring:sub=4,cs=1,lowp=1;pipeline:splits=8")
    List<String> methods;
    @Option(names = "--dtype", defaultValue = "bf16") String dtype;
    @Option(names = "--warmup", defaultValue = "5") int warmup;
    @Option(names = "--iters", defaultValue = "30") int iters;
    @Option(names = "--trace", description = "print rank 0's per-step timeline of one call of each method") boolean trace;
    @Option(names = "--out") Path out;

    private static final Set<String> KEYS = Set.of("cs", "sub", "slots", "splits", "margin", "lowp");

    @Override
    public Integer call() throws Exception {
        DType t = DType.parse(dtype);
        List<RsShape> parsed = new ArrayList<>();
        for (String spec : shapes) {
            long[] mkn = BenchShapes.parse(spec);
            parsed.add(new RsShape(tp, mkn[0], mkn[1], mkn[2], t, false));
        }
        List<MethodVariant> variants = new ArrayList<>();
        for (String mname : methods) {
            MethodVariant v = MethodVariant.parse(mname).requireKnown(KEYS);
            for (RsShape shape : parsed) {
                var why = RsSchedule.whyUnsupported(method(v, shape), shape, options(v, shape));
                if (why.isPresent()) {
                    throw new IllegalArgumentException(v.label() + " cannot run " + shape + ": " + why.get());
                }
            }
            variants.add(v);
        }
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
        if (out != null) {
            rf[0].write(out);
        }
        return 0;
    }

    private static RsMethod method(MethodVariant v, RsShape shape) {
        return v.method().equals("auto") ? RsPlanner.DEFAULT.choose(shape) : RsMethod.valueOf(v.method().toUpperCase());
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
}
