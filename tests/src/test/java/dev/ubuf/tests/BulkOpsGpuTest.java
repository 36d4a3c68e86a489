package dev.ubuf.tests;

import dev.ubuf.ag.AgShape;
import dev.ubuf.comm.ThreadDomain;
import dev.ubuf.comm.TpCommunicator;
import dev.ubuf.exec.OperandBindings;
import dev.ubuf.op.MethodRegistry;
import dev.ubuf.op.OverlapOp;
import dev.ubuf.config.UbufEnvironment;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.cuda.KernelLibrary;
import dev.ubuf.cuda.StreamPriority;
import dev.ubuf.exec.ExecutionSettings;
import dev.ubuf.gemm.Gemm;
import dev.ubuf.nccl.NcclCommunicator;
import dev.ubuf.nccl.NcclRedOp;
import dev.ubuf.devicekernels.DeviceKernels;
import dev.ubuf.rs.RsShape;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.time.Duration;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Bulk overlap (TE's "bulk", for dgrad/wgrad): a gather or reduce-scatter with no data dependency on a GEMM the caller
 * runs at the same time on another stream. Both results must match: the collective against NCCL, the GEMM against
 * cuBLASLt alone.
 */
class BulkOpsGpuTest {
    static final UbufEnvironment ENV = new UbufEnvironment(true, Duration.ofSeconds(60), false);

    /**
     * The reduce-scatter as TE's pull-reduce kernel ("bulk"), as copy-engine pulls with a local sum (stage=1), and as
     * those pulls one peer at a time (serial=1, the benchmark's communication alone for scatter:serial=1).
     */
    @ParameterizedTest(name = "{0} {1}")
    @CsvSource({"BF16,bulk", "FP16,bulk", "FP32,bulk", "BF16,bulk:stage=1", "FP16,bulk:stage=1", "FP32,bulk:stage=1",
            "BF16, 'bulk:serial=1,stage=1'"})
    void bulkGatherAndBulkReduceScatterBesideAnUnrelatedGemm(DType t, String rsVariant) throws Exception {
        Gpu.assumeGpus(2);
        // Four ranks where the machine has them: the staged reduce-scatter then pulls from three peers at once.
        int tp = dev.ubuf.cuda.Cuda.deviceCount() >= 4 ? 4 : 2, m = 2000, k = 512, n = 768;
        ThreadDomain.run(tp, Duration.ofSeconds(60), (rank, boot, ctx) -> {
            try (TpCommunicator comm = TpCommunicator.create(boot, ctx, ENV, null);
                 KernelLibrary lib = KernelLibrary.load(ctx);
                 CudaStream s = ctx.createStream(StreamPriority.NORMAL);
                 CudaStream other = ctx.createStream(StreamPriority.NORMAL);
                 Gemm gemm = new Gemm(ctx);
                 Gemm gemmAlone = new Gemm(ctx);
                 DeviceBuffer ab = ctx.allocate((long) m * k * t.bytes());
                 DeviceBuffer bb = ctx.allocate((long) k * n * t.bytes());
                 DeviceBuffer cb = ctx.allocate((long) m * n * t.bytes());
                 DeviceBuffer c2 = ctx.allocate((long) m * n * t.bytes());
                 DeviceBuffer xb = ctx.allocate((long) m / tp * k * t.bytes());
                 DeviceBuffer gb = ctx.allocate((long) m * k * t.bytes());
                 DeviceBuffer pb = ctx.allocate((long) m * n * t.bytes());
                 DeviceBuffer ob = ctx.allocate((long) m / tp * n * t.bytes());
                 DeviceBuffer rb = ctx.allocate((long) m / tp * n * t.bytes());
                 DeviceBuffer biasb = ctx.allocate((long) n * t.bytes())) {
                NcclCommunicator nccl = comm.nccl();
                DeviceKernels kernels = new DeviceKernels(lib);
                long seed = System.nanoTime() + 13L * rank;
                SplittableRandom rnd = new SplittableRandom(seed);
                TensorView a = TensorView.of(ab, m, k, t);
                TensorView b = TensorView.of(bb, k, n, t);
                TensorView c = TensorView.of(cb, m, n, t);
                TensorView cRef = TensorView.of(c2, m, n, t);
                HostTensors.upload(ctx, s, HostTensors.random(rnd, (long) m * k, t, 1f), a);
                HostTensors.upload(ctx, s, HostTensors.random(rnd, (long) k * n, t, 0.05f), b);
                TensorView x = TensorView.of(xb, m / tp, k, t);
                HostTensors.upload(ctx, s, HostTensors.random(rnd, (long) m / tp * k, t, 1f), x);
                TensorView gRef = TensorView.of(gb, m, k, t);
                TensorView partial = TensorView.of(pb, m, n, t);
                HostTensors.upload(ctx, s, HostTensors.random(rnd, (long) m * n, t, 1f), partial);
                TensorView out = TensorView.of(ob, m / tp, n, t);
                TensorView ref = TensorView.of(rb, m / tp, n, t);
                TensorView bias = TensorView.of(biasb, 1, n, t);
                long biasSeed = java.nio.ByteBuffer.wrap(boot.broadcast(
                        java.nio.ByteBuffer.allocate(8).putLong(seed).array(), 0)).getLong();
                HostTensors.upload(ctx, s, HostTensors.random(new SplittableRandom(biasSeed), n, t, 1f), bias);
                MethodRegistry methods = MethodRegistry.load();
                try (OverlapOp ag = OverlapOp.create(comm, methods.schedule(new AgShape(tp, m, k, n, t), "bulk"),
                        kernels, ExecutionSettings.DEFAULT);
                     OverlapOp rs = OverlapOp.create(comm, methods.schedule(new RsShape(tp, m, k, n, t, true), rsVariant),
                             kernels, ExecutionSettings.DEFAULT)) {
                    assertThrows(IllegalArgumentException.class, () -> ag.forward(OperandBindings.of(x, b).withOutput(c), other), "bulk takes no weight: it only gathers");
                    for (int call = 0; call < 3; call++) {
                        kernels.poison(c, s);
                        kernels.poison(out, s);
                        s.copy(rs.userBuffer().address(), partial.address(), (long) m * n * t.bytes());
                        s.synchronize();
                        boot.barrier();
                        ag.forward(OperandBindings.inputOnly(x), other);                // on the comm stream, forked from `other`
                        gemm.multiply(a, b, c, s);           // meanwhile, unrelated, on the caller's stream
                        ag.await(other);
                        rs.forward(OperandBindings.outputOnly(out).withBias(bias), other);  // the reduce-scatter of this rank's partial
                        gemm.multiply(a, b, c, 1f, 1f, Gemm.Options.NN, s); // c = 2ab, beside it
                        rs.await(other);
                        s.synchronize();
                        nccl.allGather(x.address(), gRef.address(), (long) m / tp * k, t, s.nativeHandle());
                        nccl.reduceScatter(partial.address(), ref.address(), (long) m / tp * n, t, NcclRedOp.SUM,
                                s.nativeHandle());
                        kernels.addBias(ref, bias, s);
                        gemmAlone.multiply(a, b, cRef, 2f, 0f, Gemm.Options.NN, s);
                        s.synchronize();
                        assertArrayEquals(HostTensors.download(ctx, s, gRef), HostTensors.download(ctx, s, ag.userBuffer()),
                                "bulk gather, rank " + rank + " call " + call);
                        float[] got = HostTensors.download(ctx, s, out);
                        HostTensors.assertAllFinite(got, "bulk reduce-scatter");
                        double err = HostTensors.relativeError(got, toDouble(HostTensors.download(ctx, s, ref)));
                        assertTrue(err < (t == DType.FP32 ? 1e-6 : 1e-2), rsVariant + " reduce-scatter error " + err + " seed " + seed);
                        double gemmErr = HostTensors.relativeError(HostTensors.download(ctx, s, c),
                                toDouble(HostTensors.download(ctx, s, cRef)));
                        assertTrue(gemmErr < (t == DType.FP32 ? 1e-5 : 1e-2), "the GEMM beside it: " + gemmErr);
                        boot.barrier();
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
