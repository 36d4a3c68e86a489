package dev.ubuf.tests;

import dev.ubuf.ag.AgShape;
import dev.ubuf.ag.AllGatherGemmOp;
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
import dev.ubuf.rs.RsShape;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.time.Duration;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The ops as the planners configure them (what a layer gets by default: ONESHOT, PIPELINE or RING; at tp = 2 the
 * RS ring with partials in the op's dtype and four sub-chunks for large chunks) match NCCL + one cuBLASLt GEMM.
 */
class PlannedOpsGpuTest {
    static final UbufEnvironment ENV = new UbufEnvironment(true, Duration.ofSeconds(60), false);

    @ParameterizedTest(name = "{0} M={1} K={2} N={3}")
    @CsvSource({"BF16, 512, 1024, 768", "BF16, 4096, 8192, 512", "FP16, 4096, 8192, 512", "BF16, 10240, 8192, 256",
            "BF16, 4096, 1024, 1024", "FP32, 4096, 8192, 256"})
    void plannedOpsMatchTheReference(DType t, int m, int k, int n) throws Exception {
        Gpu.assumeGpus(2);
        int tp = 2;
        ThreadDomain.run(tp, Duration.ofSeconds(90), (rank, boot, ctx) -> {
            try (TpCommunicator comm = TpCommunicator.create(boot, ctx, ENV, null);
                 KernelLibrary lib = KernelLibrary.load(ctx);
                 CudaStream s = ctx.createStream(StreamPriority.NORMAL);
                 Gemm gemm = new Gemm(ctx);
                 DeviceBuffer xb = ctx.allocate((long) m * k * t.bytes());
                 DeviceBuffer wb = ctx.allocate((long) k * n * t.bytes());
                 DeviceBuffer ob = ctx.allocate((long) m * n * t.bytes());
                 DeviceBuffer rb = ctx.allocate((long) m * n * t.bytes());
                 DeviceBuffer pb = ctx.allocate((long) m * Math.max(n, k) * t.bytes())) {
                NcclCommunicator nccl = comm.nccl();
                DeviceKernels kernels = new DeviceKernels(lib);
                long seed = System.nanoTime() + 977L * rank;
                SplittableRandom rnd = new SplittableRandom(seed);
                TensorView w = TensorView.of(wb, k, n, t);
                HostTensors.upload(ctx, s, HostTensors.random(rnd, (long) k * n, t, 1f / (float) Math.sqrt(k)), w);
                // AG: x_shard [m/tp, k] (x's first rows), out [m, n]
                TensorView xs = TensorView.of(xb, m / tp, k, t);
                HostTensors.upload(ctx, s, HostTensors.random(rnd, (long) m / tp * k, t, 1f), xs);
                TensorView out = TensorView.of(ob, m, n, t);
                TensorView ref = TensorView.of(rb, m, n, t);
                TensorView gathered = TensorView.of(pb, m, k, t);
                try (AllGatherGemmOp ag = AllGatherGemmOp.planned(comm, new AgShape(tp, m, k, n, t), kernels,
                        ExecutionSettings.DEFAULT)) {
                    for (int call = 0; call < 2; call++) {
                        kernels.poison(out, s);
                        s.synchronize();
                        boot.barrier();
                        ag.forward(xs, w, false, out, s);
                        ag.await(s);
                        check(ctx, s, out, () -> {
                            nccl.allGather(xs.address(), gathered.address(), (long) m / tp * k, t, s.nativeHandle());
                            gemm.multiply(gathered, w, ref, s);
                        }, ref, t, "AG " + ag.methodName() + " rank " + rank + " call " + call + " seed " + seed);
                        boot.barrier();
                    }
                }
                // RS: x [m, k], out [m/tp, n]
                TensorView x = TensorView.of(xb, m, k, t);
                HostTensors.upload(ctx, s, HostTensors.random(rnd, (long) m * k, t, 1f), x);
                TensorView rsOut = TensorView.of(ob, m / tp, n, t);
                TensorView rsRef = TensorView.of(rb, m / tp, n, t);
                TensorView part = TensorView.of(pb, m, n, t);
                try (GemmReduceScatterOp rs = GemmReduceScatterOp.planned(comm, new RsShape(tp, m, k, n, t, false),
                        kernels, ExecutionSettings.DEFAULT)) {
                    for (int call = 0; call < 2; call++) {
                        kernels.poison(rsOut, s);
                        s.synchronize();
                        boot.barrier();
                        rs.forward(x, w, false, rsOut, null, s);
                        rs.await(s);
                        check(ctx, s, rsOut, () -> {
                            gemm.multiply(x, w, part, s);
                            nccl.reduceScatter(part.address(), rsRef.address(), (long) m / tp * n, t, NcclRedOp.SUM,
                                    s.nativeHandle());
                        }, rsRef, t, "RS " + rs.methodName() + " rank " + rank + " call " + call + " seed " + seed);
                        boot.barrier();
                    }
                }
            }
        });
    }

    private static void check(dev.ubuf.cuda.CudaContext ctx, CudaStream s, TensorView got, Runnable reference,
                              TensorView ref, DType t, String what) {
        reference.run();
        s.synchronize();
        float[] g = HostTensors.download(ctx, s, got);
        HostTensors.assertAllFinite(g, what);
        float[] r = HostTensors.download(ctx, s, ref);
        double[] rd = new double[r.length];
        for (int i = 0; i < r.length; i++) {
            rd[i] = r[i];
        }
        double err = HostTensors.relativeError(g, rd);
        assertTrue(err < (t == DType.FP32 ? 1e-5 : 1e-2), what + ": relative error " + err);
    }
}
