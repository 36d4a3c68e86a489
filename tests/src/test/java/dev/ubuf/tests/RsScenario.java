package dev.ubuf.tests;

import dev.ubuf.bootstrap.Bootstrap;
import dev.ubuf.comm.TpCommunicator;
import dev.ubuf.config.UbufEnvironment;
import dev.ubuf.cuda.CudaContext;
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

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * GEMM->ReduceScatter overlap on every rank of the bootstrap: three consecutive calls on fresh random inputs with
 * poisoned outputs; the output must be finite everywhere and match one cuBLASLt GEMM + NCCL ReduceScatter (+ bias),
 * and (first call) a float64 reference. Four column splits when n allows, else one.
 *
 * @param k per-rank inner dimension
 */
record RsScenario(RsMethod method, DType dtype, int m, int k, int n, boolean bias, boolean weightTransposed)
        implements RankScenario {
    static final String NAME = "rs";
    private static final List<String> PARAMS = List.of("method", "dtype", "m", "k", "n", "bias", "weightTransposed");

    static RsScenario parse(List<String> params) {
        ScenarioArgs a = ScenarioArgs.of(NAME, PARAMS, params);
        return new RsScenario(a.constant(0, RsMethod.class), a.constant(1, DType.class), a.positiveInt(2),
                a.positiveInt(3), a.positiveInt(4), a.bool(5), a.bool(6));
    }

    @Override
    public List<String> toArgs() {
        return List.of(NAME, method.name(), dtype.name(), Integer.toString(m), Integer.toString(k),
                Integer.toString(n), Boolean.toString(bias), Boolean.toString(weightTransposed));
    }

    @Override
    public void run(int rank, Bootstrap boot, CudaContext ctx, UbufEnvironment env) {
        int tp = boot.size();
        DType t = dtype;
        boolean weightT = weightTransposed;
        RsShape shape = new RsShape(tp, m, k, n, t, bias);
        RsOptions options = RsOptions.DEFAULTS.withNumSplits(n % 4 == 0 ? 4 : 1);
        byte[] id = boot.broadcast(rank == 0 ? NcclUniqueId.generate().bytes() : null, 0);
        try (TpCommunicator comm = TpCommunicator.create(boot, ctx, env, null);
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
                    float[] bs = HostTensors.random(new SplittableRandom(ByteBuffer.wrap(
                            boot.broadcast(ByteBuffer.allocate(8).putLong(seed).array(), 0)).getLong()), n, t, 1f);
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
                            float[] rows = Arrays.copyOfRange(xr, rank * (m / tp) * k, (rank + 1) * (m / tp) * k);
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
                        assertTrue(e64 < (t == DType.FP32 ? 1e-4 : 1e-2), "against float64: " + e64
                                + " (seed " + seed + ")");
                    }
                    boot.barrier();
                }
            }
        }
    }

    static byte[] floats(float[] a) {
        ByteBuffer b = ByteBuffer.allocate(a.length * 4);
        b.asFloatBuffer().put(a);
        return b.array();
    }

    static float[] unfloats(byte[] b) {
        float[] a = new float[b.length / 4];
        ByteBuffer.wrap(b).asFloatBuffer().get(a);
        return a;
    }
}
