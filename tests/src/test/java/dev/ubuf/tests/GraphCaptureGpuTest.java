package dev.ubuf.tests;

import dev.ubuf.ag.AgMethod;
import dev.ubuf.ag.AgOptions;
import dev.ubuf.ag.AgShape;
import dev.ubuf.ag.AllGatherGemmOp;
import dev.ubuf.bench.ThreadDomain;
import dev.ubuf.comm.TpCommunicator;
import dev.ubuf.config.UbufEnvironment;
import dev.ubuf.cuda.CudaGraph;
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
import dev.ubuf.rs.RsShape;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.time.Duration;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The overlapped ops captured once into a CUDA graph and replayed: every replay, on fresh inputs written into the
 * same buffers, matches the NCCL + cuBLASLt reference. Graph-safe ops signal through a device epoch, so the
 * replays' sequence numbers advance although the graph is fixed; an op that is not graph-safe refuses to be captured.
 */
class GraphCaptureGpuTest {
    static final UbufEnvironment ENV = new UbufEnvironment(true, Duration.ofSeconds(60), false);
    static final int REPLAYS = 4;

    @ParameterizedTest(name = "AG {0}")
    @EnumSource(value = AgMethod.class, names = {"RING", "AGGREGATE", "ONESHOT"})
    void capturedAllGatherGemmReplaysMatchTheReference(AgMethod method) throws Exception {
        Gpu.assumeGpus(2);
        int tp = 2, m = 1536, k = 512, n = 384;
        DType t = DType.BF16;
        ThreadDomain.run(tp, Duration.ofSeconds(60), (rank, boot, ctx) -> {
            try (TpCommunicator comm = TpCommunicator.create(boot, ctx, ENV, null);
                 KernelLibrary lib = KernelLibrary.load(ctx);
                 CudaStream s = ctx.createStream(StreamPriority.NORMAL);
                 Gemm gemm = new Gemm(ctx);
                 DeviceBuffer xb = ctx.allocate((long) m / tp * k * 2);
                 DeviceBuffer wb = ctx.allocate((long) k * n * 2);
                 DeviceBuffer ob = ctx.allocate((long) m * n * 2);
                 DeviceBuffer gb = ctx.allocate((long) m * k * 2);
                 DeviceBuffer rb = ctx.allocate((long) m * n * 2)) {
                DeviceKernels kernels = new DeviceKernels(lib);
                NcclCommunicator nccl = comm.nccl(); // the domain's own, closed with the communicator
                TensorView x = TensorView.of(xb, m / tp, k, t);
                TensorView w = TensorView.of(wb, k, n, t);
                TensorView out = TensorView.of(ob, m, n, t);
                TensorView g = TensorView.of(gb, m, k, t);
                TensorView ref = TensorView.of(rb, m, n, t);
                AgShape shape = new AgShape(tp, m, k, n, t);
                try (AllGatherGemmOp eager = new AllGatherGemmOp(comm, shape, method, AgOptions.defaults(), kernels,
                        ExecutionSettings.DEFAULT)) {
                    s.beginCapture();
                    try {
                        assertThrows(IllegalStateException.class, () -> eager.forward(x, w, false, out, s),
                                "an op with host sequence numbers refuses to be captured");
                    } finally {
                        s.endCapture().close();
                    }
                }
                try (AllGatherGemmOp op = new AllGatherGemmOp(comm, shape, method, AgOptions.defaults(), kernels,
                        ExecutionSettings.DEFAULT.withGraphSafe(true))) {
                    s.beginCapture();
                    op.forward(x, w, false, out, s);
                    try (CudaGraph graph = s.endCapture()) {
                        for (int replay = 0; replay < REPLAYS; replay++) {
                            long seed = System.nanoTime() + 31L * rank;
                            SplittableRandom rnd = new SplittableRandom(seed);
                            HostTensors.upload(ctx, s, HostTensors.random(rnd, (long) m / tp * k, t, 1f), x);
                            HostTensors.upload(ctx, s, HostTensors.random(rnd, (long) k * n, t, 0.05f), w);
                            kernels.poison(out, s);
                            s.synchronize();
                            boot.barrier();
                            graph.launch(s);
                            op.await(s);
                            nccl.allGather(x.address(), g.address(), (long) m / tp * k, t, s.nativeHandle());
                            gemm.multiply(g, w, ref, s);
                            s.synchronize();
                            assertArrayEquals(HostTensors.download(ctx, s, g), HostTensors.download(ctx, s, op.gathered()),
                                    "gathered input, replay " + replay);
                            float[] got = HostTensors.download(ctx, s, out);
                            HostTensors.assertAllFinite(got, "replay " + replay);
                            double err = HostTensors.relativeError(got, toDouble(HostTensors.download(ctx, s, ref)));
                            assertTrue(err < 1e-2, "rank " + rank + " replay " + replay + ": error " + err + " (seed " + seed + ")");
                            boot.barrier();
                        }
                    }
                }
            }
        });
    }

    @ParameterizedTest(name = "RS {0}")
    @EnumSource(value = RsMethod.class, names = {"RING", "PIPELINE", "ONESHOT"})
    void capturedGemmReduceScatterReplaysMatchTheReference(RsMethod method) throws Exception {
        Gpu.assumeGpus(2);
        int tp = 2, m = 1536, k = 384, n = 512;
        DType t = DType.BF16;
        ThreadDomain.run(tp, Duration.ofSeconds(60), (rank, boot, ctx) -> {
            try (TpCommunicator comm = TpCommunicator.create(boot, ctx, ENV, null);
                 KernelLibrary lib = KernelLibrary.load(ctx);
                 CudaStream s = ctx.createStream(StreamPriority.NORMAL);
                 Gemm gemm = new Gemm(ctx);
                 DeviceBuffer xb = ctx.allocate((long) m * k * 2);
                 DeviceBuffer wb = ctx.allocate((long) k * n * 2);
                 DeviceBuffer bb = ctx.allocate((long) n * 2);
                 DeviceBuffer ob = ctx.allocate((long) m / tp * n * 2);
                 DeviceBuffer pb = ctx.allocate((long) m * n * 2);
                 DeviceBuffer rb = ctx.allocate((long) m / tp * n * 2)) {
                DeviceKernels kernels = new DeviceKernels(lib);
                NcclCommunicator nccl = comm.nccl(); // the domain's own, closed with the communicator
                TensorView x = TensorView.of(xb, m, k, t);
                TensorView w = TensorView.of(wb, k, n, t);
                TensorView bias = TensorView.of(bb, 1, n, t);
                TensorView out = TensorView.of(ob, m / tp, n, t);
                TensorView part = TensorView.of(pb, m, n, t);
                TensorView ref = TensorView.of(rb, m / tp, n, t);
                try (GemmReduceScatterOp op = new GemmReduceScatterOp(comm, new RsShape(tp, m, k, n, t, true), method,
                        RsOptions.DEFAULTS, kernels, ExecutionSettings.DEFAULT.withGraphSafe(true))) {
                    s.beginCapture();
                    op.forward(x, w, false, out, bias, s);
                    try (CudaGraph graph = s.endCapture()) {
                        for (int replay = 0; replay < REPLAYS; replay++) {
                            long seed = System.nanoTime() + 31L * rank;
                            SplittableRandom rnd = new SplittableRandom(seed);
                            HostTensors.upload(ctx, s, HostTensors.random(rnd, (long) m * k, t, 1f), x);
                            HostTensors.upload(ctx, s, HostTensors.random(rnd, (long) k * n, t, 0.05f), w);
                            long biasSeed = java.nio.ByteBuffer.wrap(boot.broadcast(
                                    java.nio.ByteBuffer.allocate(8).putLong(seed).array(), 0)).getLong();
                            HostTensors.upload(ctx, s, HostTensors.random(new SplittableRandom(biasSeed), n, t, 1f), bias);
                            kernels.poison(out, s);
                            s.synchronize();
                            boot.barrier();
                            graph.launch(s);
                            op.await(s);
                            gemm.multiply(x, w, part, s);
                            nccl.reduceScatter(part.address(), ref.address(), (long) m / tp * n, t, NcclRedOp.SUM,
                                    s.nativeHandle());
                            kernels.addBias(ref, bias, s);
                            s.synchronize();
                            float[] got = HostTensors.download(ctx, s, out);
                            HostTensors.assertAllFinite(got, "replay " + replay);
                            double err = HostTensors.relativeError(got, toDouble(HostTensors.download(ctx, s, ref)));
                            assertTrue(err < 1e-2, "rank " + rank + " replay " + replay + ": error " + err + " (seed " + seed + ")");
                            boot.barrier();
                        }
                    }
                }
            }
        });
    }

    static double[] toDouble(float[] a) {
        double[] d = new double[a.length];
        for (int i = 0; i < a.length; i++) {
            d[i] = a[i];
        }
        return d;
    }
}
