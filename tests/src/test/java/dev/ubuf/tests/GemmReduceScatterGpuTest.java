package dev.ubuf.tests;

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
import dev.ubuf.rs.RsShape;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * GEMM->ReduceScatter overlap on two GPUs (one JVM, a thread per rank) matches one cuBLASLt GEMM + NCCL
 * ReduceScatter (+ bias) and a float64 reference, on fresh random inputs, poisoned outputs, three calls each.
 */
class GemmReduceScatterGpuTest {
    static final UbufEnvironment ENV = new UbufEnvironment(true, Duration.ofSeconds(60), false);

    static Stream<Arguments> cases() {
        List<Arguments> a = new ArrayList<>();
        for (RsMethod m : new RsMethod[]{RsMethod.RING, RsMethod.PIPELINE, RsMethod.ONESHOT}) {
            for (DType t : new DType[]{DType.BF16, DType.FP16, DType.FP32}) {
                a.add(Arguments.of(m, t, 2000, 384, 512, true, false));
            }
            a.add(Arguments.of(m, DType.BF16, 1024, 640, 256, false, true));
            a.add(Arguments.of(m, DType.BF16, 6, 136, 128, true, true));
        }
        return a.stream();
    }

    @ParameterizedTest(name = "{0} {1} M={2} K={3} N={4} bias={5} weightT={6}")
    @MethodSource("cases")
    void overlappedResultMatchesGemmPlusNcclReduceScatter(RsMethod method, DType t, int m, int k, int n,
                                                          boolean bias, boolean weightT) throws Exception {
        Gpu.assumeGpus(2);
        int tp = 2;
        RsShape shape = new RsShape(tp, m, k, n, t, bias);
        RsOptions options = RsOptions.DEFAULTS.withNumSplits(n % 4 == 0 ? 4 : 1);
        dev.ubuf.bench.ThreadDomain.run(tp, Duration.ofSeconds(60), (rank, boot, ctx) -> {
            byte[] id = boot.broadcast(rank == 0 ? NcclUniqueId.generate().bytes() : null, 0);
            try (TpCommunicator comm = TpCommunicator.create(boot, ctx, ENV, null);
                 KernelLibrary lib = KernelLibrary.load(ctx);
                 NcclCommunicator nccl = NcclCommunicator.initRank(new NcclUniqueId(id), tp, rank);
                 CudaStream s = ctx.createStream(StreamPriority.NORMAL);
                 Gemm gemm = new Gemm(ctx);
                 DeviceBuffer xb = ctx.allocate((long) m * k * t.bytes());
                 DeviceBuffer wb = ctx.allocate((long) k * n * t.bytes());
                 DeviceBuffer bb = ctx.allocate((long) n * t.bytes());
                 DeviceBuffer ob = ctx.allocate((long) m / tp * n * t.bytes());
                 DeviceBuffer pb = ctx.allocate((long) m * n * t.bytes());
                 DeviceBuffer rb = ctx.allocate((long) m / tp * n * t.bytes())) {
                DeviceKernels kernels = new DeviceKernels(lib);
                try (GemmReduceScatterOp op = new GemmReduceScatterOp(comm, shape, method, options, kernels,
                        ExecutionSettings.DEFAULT)) {
                    TensorView x = TensorView.of(xb, m, k, t);
                    TensorView w = weightT ? TensorView.of(wb, n, k, t) : TensorView.of(wb, k, n, t);
                    TensorView bv = TensorView.of(bb, 1, n, t);
                    TensorView out = TensorView.of(ob, m / tp, n, t);
                    TensorView partial = TensorView.of(pb, m, n, t);
                    TensorView ref = TensorView.of(rb, m / tp, n, t);
                    for (int call = 0; call < 3; call++) {
                        long seed = System.nanoTime() + 7919L * rank;
                        SplittableRandom rnd = new SplittableRandom(seed);
                        float[] xs = HostTensors.random(rnd, (long) m * k, t, 1f);
                        float[] ws = HostTensors.random(rnd, (long) k * n, t, 1f / (float) Math.sqrt(k));
                        // The bias is the layer's, the same on every rank: take rank 0's.
                        float[] bs = HostTensors.random(new SplittableRandom(java.nio.ByteBuffer.wrap(
                                boot.broadcast(java.nio.ByteBuffer.allocate(8).putLong(seed).array(), 0)).getLong()),
                                n, t, 1f);
                        HostTensors.upload(ctx, s, xs, x);
                        HostTensors.upload(ctx, s, ws, w);
                        HostTensors.upload(ctx, s, bs, bv);
                        kernels.poison(out, s);
                        kernels.poison(ref, s);
                        s.synchronize();
                        boot.barrier();
                        op.forward(x, w, weightT, out, bias ? bv : null, s);
                        op.await(s);
                        gemm.multiply(x, w, partial, 1f, 0f, new Gemm.Options(false, weightT, 0, false), s);
                        nccl.reduceScatter(partial.address(), ref.address(), (long) m / tp * n, t, NcclRedOp.SUM,
                                s.nativeHandle());
                        if (bias) {
                            kernels.addBias(ref, bv, s);
                        }
                        s.synchronize();
                        float[] got = HostTensors.download(ctx, s, out);
                        HostTensors.assertAllFinite(got, "output rank " + rank + " call " + call);
                        float[] want = HostTensors.download(ctx, s, ref);
                        double[] wantD = new double[want.length];
                        for (int i = 0; i < want.length; i++) {
                            wantD[i] = want[i];
                        }
                        double err = HostTensors.relativeError(got, wantD);
                        assertTrue(err < (t == DType.FP32 ? 1e-5 : 1e-2), "rank " + rank + " call " + call
                                + ": relative error " + err + " against GEMM+NCCL (seed " + seed + ")");
                        // float64: sum over ranks of this rank's rows of x_r * w_r, plus the bias
                        byte[][] xsAll = boot.allGather(floats(xs));
                        byte[][] wsAll = boot.allGather(floats(ws));
                        if (call == 0) {
                            double[] exact = new double[(m / tp) * n];
                            for (int r = 0; r < tp; r++) {
                                float[] xr = unfloats(xsAll[r]);
                                float[] rows = java.util.Arrays.copyOfRange(xr, rank * (m / tp) * k, (rank + 1) * (m / tp) * k);
                                double[] pr = HostTensors.matmul(rows, unfloats(wsAll[r]), m / tp, n, k, false, weightT);
                                for (int i = 0; i < exact.length; i++) {
                                    exact[i] += pr[i];
                                }
                            }
                            if (bias) {
                                for (int i = 0; i < exact.length; i++) {
                                    exact[i] += bs[i % n];
                                }
                            }
                            double e64 = HostTensors.relativeError(got, exact);
                            assertTrue(e64 < (t == DType.FP32 ? 1e-4 : 1e-2), "against float64: " + e64);
                        }
                        boot.barrier();
                    }
                }
            }
        });
    }

    static byte[] floats(float[] a) {
        java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(a.length * 4);
        b.asFloatBuffer().put(a);
        return b.array();
    }

    static float[] unfloats(byte[] b) {
        float[] a = new float[b.length / 4];
        java.nio.ByteBuffer.wrap(b).asFloatBuffer().get(a);
        return a;
    }
}
