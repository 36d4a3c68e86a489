package dev.ubuf.cli;

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
import dev.ubuf.nccl.NcclRedOp;
import dev.ubuf.nccl.NcclUniqueId;
import dev.ubuf.ops.DeviceKernels;
import dev.ubuf.rs.GemmReduceScatterOp;
import dev.ubuf.rs.RsMethod;
import dev.ubuf.rs.RsOptions;
import dev.ubuf.rs.RsPlanner;
import dev.ubuf.rs.RsShape;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * RS overlap benchmark, one JVM driving tp GPUs: per shape, GEMM alone, our copy/pull reduce-scatter alone (comm),
 * NCCL ReduceScatter alone, NCCL sequential (GEMM then ReduceScatter) and each overlap method; rank 0's medians.
 */
@Command(name = "rs", description = "GEMM->ReduceScatter overlap vs NCCL sequential (records op rs).")
final class RsBenchCommand implements Callable<Integer> {
    @Option(names = "--tp", defaultValue = "2") int tp;
    @Option(names = "--shapes", split = " ", defaultValue = "4096,8192,8192 8192,8192,8192 16384,8192,8192 16384,8192,14336",
            description = "M,K,N (K per rank)") List<String> shapes;
    @Option(names = "--methods", split = ";", defaultValue = "ring;pipeline;oneshot",
            description = "methods or variants separated by ;, e.g. ring;ring:cs=1,ms=2;aggregate") List<String> methods;
    @Option(names = "--dtype", defaultValue = "bf16") String dtype;
    @Option(names = "--warmup", defaultValue = "5") int warmup;
    @Option(names = "--iters", defaultValue = "20") int iters;
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
                    RsShape shape = new RsShape(tp, m, k, n, t, false);
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
                        Runnable sync = boot::barrier;
                        double gemmMs = EventTimer.time(ctx, s, warmup, iters, () -> gemm.multiply(x, w, part, s), sync)
                                .getPercentile(50);
                        double ncclMs = EventTimer.time(ctx, s, warmup, iters, () -> nccl.reduceScatter(part.address(),
                                o.address(), m / tp * n, t, NcclRedOp.SUM, s.nativeHandle()), sync).getPercentile(50);
                        double seqMs = EventTimer.time(ctx, s, warmup, iters, () -> {
                            gemm.multiply(x, w, part, s);
                            nccl.reduceScatter(part.address(), o.address(), m / tp * n, t, NcclRedOp.SUM, s.nativeHandle());
                        }, sync).getPercentile(50);
                        double commMs;
                        try (GemmReduceScatterOp bulk = new GemmReduceScatterOp(comm, shape, RsMethod.BULK,
                                RsOptions.DEFAULTS, kernels, ExecutionSettings.DEFAULT)) {
                            commMs = EventTimer.time(ctx, s, warmup, iters, () -> bulk.reduceScatter(o, null, s), sync)
                                    .getPercentile(50);
                        }
                        Map<String, Double> methodMs = new LinkedHashMap<>();
                        for (String mname : methods) {
                            // ring:sub=4,cs=2,slots=2,lowp=1 / pipeline:splits=8,margin=24,cs=2
                            MethodVariant v = MethodVariant.parse(mname).requireKnown(
                                    java.util.Set.of("cs", "sub", "slots", "splits", "margin", "lowp"));
                            RsMethod method = v.method().equals("auto") ? RsPlanner.DEFAULT.choose(shape)
                                    : RsMethod.valueOf(v.method().toUpperCase());
                            RsOptions d = RsOptions.DEFAULTS;
                            RsOptions opts = d.withComputeStreams(v.option("cs", d.computeStreams()))
                                    .withRingSubChunks(v.option("sub", d.ringSubChunks()))
                                    .withRingSlots(v.option("slots", d.ringSlots()))
                                    .withNumSplits(v.option("splits", d.numSplits()))
                                    .withGemmSmMargin(v.option("margin", d.gemmSmMargin()))
                                    // lowp=1: ring partials travel in the op's dtype (one rounding per hop) instead of fp32
                                    .withRingPartialDtype(v.option("lowp", 0) == 1 ? t : d.ringPartialDtype());
                            try (GemmReduceScatterOp op = new GemmReduceScatterOp(comm, shape, method,
                                    opts, kernels, ExecutionSettings.DEFAULT)) {
                                methodMs.put(v.label(), EventTimer.time(ctx, s, warmup, iters,
                                        () -> op.forward(x, w, false, o, null, s), sync).getPercentile(50));
                            }
                        }
                        if (rank == 0) {
                            double ideal = Math.max(gemmMs, commMs);
                            System.out.printf("rs %s tp=%d M=%d K=%d N=%d: gemm %.3f comm(pull) %.3f nccl_rs %.3f"
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
        Map<String, Object> r = ResultsFile.overlapRecord("rs", method, tp, t.shortName(), m, n, k, ms, gemmMs,
                commMs);
        r.put("nccl_rs_ms", ncclMs);
        r.put("rank_mode", "threads");
        r.put("iters", iters);
        rf.add(r);
    }
}
