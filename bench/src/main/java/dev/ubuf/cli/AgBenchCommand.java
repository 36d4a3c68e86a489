package dev.ubuf.cli;

import dev.ubuf.ag.AgMethod;
import dev.ubuf.ag.AgOptions;
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
 * AG overlap benchmark, one JVM driving tp GPUs. Per shape it times, round-robin in the same iterations: the GEMM
 * alone, our copy-engine gather alone (comm), NCCL AllGather alone, NCCL sequential (AllGather then GEMM) and each
 * overlap method or variant; rank 0's medians are recorded.
 */
@Command(name = "ag", description = "AllGather->GEMM overlap vs NCCL sequential (records op ag).")
final class AgBenchCommand implements Callable<Integer> {
    @Option(names = "--tp", defaultValue = "2") int tp;
    @Option(names = "--shapes", split = " ", arity = "1..*", defaultValue = "4096,8192,8192 8192,8192,8192 16384,8192,8192 16384,8192,14336",
            description = "M,K,N (N per rank), separated by spaces") List<String> shapes;
    @Option(names = "--methods", split = ";", defaultValue = "ring;aggregate;oneshot;auto",
            description = "methods or variants separated by ;, e.g. ring;ring:cs=1,ms=2;aggregate") List<String> methods;
    @Option(names = "--dtype", defaultValue = "bf16") String dtype;
    @Option(names = "--warmup", defaultValue = "5") int warmup;
    @Option(names = "--iters", defaultValue = "30") int iters;
    @Option(names = "--copy-engine", defaultValue = "true", negatable = true) boolean copyEngine;
    @Option(names = "--trace", description = "print rank 0's per-step timeline of one call of each method") boolean trace;
    @Option(names = "--out") Path out;

    @Override
    public Integer call() throws Exception {
        // Everything is parsed and checked before any GPU work.
        DType t = DType.parse(dtype);
        List<AgShape> parsed = new ArrayList<>();
        for (String spec : shapes) {
            long[] mkn = BenchShapes.parse(spec);
            parsed.add(new AgShape(tp, mkn[0], mkn[1], mkn[2], t));
        }
        List<MethodVariant> variants = new ArrayList<>();
        for (String mname : methods) {
            MethodVariant v = MethodVariant.parse(mname).requireKnown(Set.of("cs", "ms"));
            if (!v.method().equals("auto")) {
                AgMethod.parse(v.method());
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
                        for (MethodVariant v : variants) {
                            AllGatherGemmOp op;
                            if (v.method().equals("auto")) { // what a layer gets: the planner's choice, NCCL included
                                op = AllGatherGemmOp.planned(comm, shape, kernels, exec);
                            } else {
                                AgOptions d = AgOptions.defaults();
                                AgOptions opts = d.withComputeStreams(v.option("cs", d.computeStreams()))
                                        .withCommStreams(v.option("ms", d.commStreams()));
                                op = new AllGatherGemmOp(comm, shape, AgMethod.parse(v.method()), opts, kernels, exec);
                            }
                            ops.add(op);
                            c.put(v.label(), () -> op.forward(x, w, false, o, s));
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
        if (out != null) {
            rf[0].write(out);
        }
        return 0;
    }

    private void report(ResultsFile rf, AgShape shape, Map<String, DescriptiveStatistics> st, List<MethodVariant> variants,
                        List<AllGatherGemmOp> ops) {
        new OverlapReport("ag", tp, shape.dtype().shortName(), shape.m(), shape.k(), shape.n(), "ce", "nccl_ag",
                Map.of("copy_engine", copyEngine, "rank_mode", "threads", "iters", iters)).write(rf, st, variants.stream().map(MethodVariant::label).toList(),
                ops.stream().map(AllGatherGemmOp::methodName).toList());
    }
}
