package dev.ubuf.cli;

import dev.ubuf.ag.AgMethod;
import dev.ubuf.ag.AgOptions;
import dev.ubuf.ag.AgPlanner;
import dev.ubuf.ag.AgShape;
import dev.ubuf.ag.AllGatherGemmOp;
import dev.ubuf.bench.EventTimer;
import dev.ubuf.bench.MethodVariant;
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
import dev.ubuf.nccl.NcclUniqueId;
import dev.ubuf.ops.DeviceKernels;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * AG overlap benchmark, one JVM driving tp GPUs: per shape, GEMM alone, copy-engine gather alone (comm), NCCL
 * AllGather alone, NCCL sequential (AllGather then GEMM) and each overlap method; rank 0's medians are recorded.
 */
@Command(name = "ag", description = "AllGather->GEMM overlap vs NCCL sequential (records op ag).")
final class AgBenchCommand implements Callable<Integer> {
    @Option(names = "--tp", defaultValue = "2") int tp;
    @Option(names = "--shapes", split = " ", defaultValue = "4096,8192,8192 8192,8192,8192 16384,8192,8192 16384,8192,14336",
            description = "M,K,N (N per rank)") List<String> shapes;
    @Option(names = "--methods", split = ";", defaultValue = "ring;aggregate;oneshot",
            description = "methods or variants separated by ;, e.g. ring;ring:cs=1,ms=2;aggregate") List<String> methods;
    @Option(names = "--dtype", defaultValue = "bf16") String dtype;
    @Option(names = "--warmup", defaultValue = "5") int warmup;
    @Option(names = "--iters", defaultValue = "20") int iters;
    @Option(names = "--copy-engine", defaultValue = "true", negatable = true) boolean copyEngine;
    @Option(names = "--out") Path out;

    @Override
    public Integer call() throws Exception {
        DType t = DType.parse(dtype);
        UbufEnvironment env = UbufEnvironment.fromSystem();
        ResultsFile[] rf = new ResultsFile[1];
        ThreadDomain.run(tp, env.timeout(), (rank, boot, ctx) -> {
            byte[] id = boot.broadcast(rank == 0 ? NcclUniqueId.generate().bytes() : null, 0);
            if (rank == 0) {
                rf[0] = new ResultsFile(tp + "x " + ctx.device().name(), ResultsFile.commitFromEnvironment());
            }
            try (TpCommunicator comm = TpCommunicator.create(boot, ctx, env, null);
                 KernelLibrary lib = KernelLibrary.load(ctx);
                 NcclCommunicator nccl = NcclCommunicator.initRank(new NcclUniqueId(id), tp, rank);
                 CudaStream s = ctx.createStream(StreamPriority.NORMAL);
                 Gemm gemm = new Gemm(ctx)) {
                DeviceKernels kernels = new DeviceKernels(lib);
                for (String spec : shapes) {
                    String[] p = spec.split(",");
                    long m = Long.parseLong(p[0]), k = Long.parseLong(p[1]), n = Long.parseLong(p[2]);
                    AgShape shape = new AgShape(tp, m, k, n, t);
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
                        Runnable sync = boot::barrier;
                        double gemmMs = EventTimer.time(ctx, s, warmup, iters, () -> gemm.multiply(g, w, o, s), sync)
                                .getPercentile(50);
                        double ncclMs = EventTimer.time(ctx, s, warmup, iters,
                                () -> nccl.allGather(x.address(), g.address(), m / tp * k, t, s.nativeHandle()), sync)
                                .getPercentile(50);
                        double seqMs = EventTimer.time(ctx, s, warmup, iters, () -> {
                            nccl.allGather(x.address(), g.address(), m / tp * k, t, s.nativeHandle());
                            gemm.multiply(g, w, o, s);
                        }, sync).getPercentile(50);
                        double commMs;
                        try (AllGatherGemmOp bulk = new AllGatherGemmOp(comm, shape, AgMethod.BULK,
                                AgOptions.defaults(), kernels, ExecutionSettings.DEFAULT.withCopyEngine(copyEngine))) {
                            commMs = EventTimer.time(ctx, s, warmup, iters, () -> bulk.gather(x, s), sync)
                                    .getPercentile(50);
                        }
                        Map<String, Double> methodMs = new LinkedHashMap<>();
                        for (String mname : methods) {
                            // ring:cs=1,ms=2 = compute streams, comm streams
                            MethodVariant v = MethodVariant.parse(mname).requireKnown(java.util.Set.of("cs", "ms"));
                            AgMethod method = v.method().equals("auto") ? AgPlanner.defaults().choose(shape)
                                    : AgMethod.parse(v.method());
                            AgOptions opts = AgOptions.defaults();
                            opts = opts.withComputeStreams(v.option("cs", opts.computeStreams()))
                                    .withCommStreams(v.option("ms", opts.commStreams()));
                            try (AllGatherGemmOp op = new AllGatherGemmOp(comm, shape, method, opts,
                                    kernels, ExecutionSettings.DEFAULT.withCopyEngine(copyEngine))) {
                                methodMs.put(v.label(), EventTimer.time(ctx, s, warmup, iters,
                                        () -> op.forward(x, w, false, o, s), sync).getPercentile(50));
                            }
                        }
                        if (rank == 0) {
                            double ideal = Math.max(gemmMs, commMs);
                            System.out.printf("ag %s tp=%d M=%d K=%d N=%d: gemm %.3f comm(ce) %.3f nccl_ag %.3f"
                                    + " nccl_seq %.3f ideal %.3f%n", t.shortName(), tp, m, k, n, gemmMs, commMs,
                                    ncclMs, seqMs, ideal);
                            add(rf[0], "nccl_seq", t, m, n, k, seqMs, gemmMs, commMs, ncclMs);
                            for (var e : methodMs.entrySet()) {
                                System.out.printf("   %-10s %.3f ms  %.1f%% of ideal  %.2fx vs nccl_seq%n", e.getKey(),
                                        e.getValue(), 100 * ideal / e.getValue(), seqMs / e.getValue());
                                add(rf[0], e.getKey(), t, m, n, k, e.getValue(), gemmMs, commMs, ncclMs);
                            }
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

    private void add(ResultsFile rf, String method, DType t, long m, long n, long k, double ms, double gemmMs,
                     double commMs, double ncclMs) {
        Map<String, Object> r = ResultsFile.overlapRecord("ag", method, tp, t.shortName(), m, n, k, ms, gemmMs,
                commMs);
        r.put("nccl_ag_ms", ncclMs);
        r.put("copy_engine", copyEngine);
        r.put("rank_mode", "threads");
        r.put("iters", iters);
        rf.add(r);
    }
}
