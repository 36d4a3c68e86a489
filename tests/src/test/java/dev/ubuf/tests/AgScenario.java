package dev.ubuf.tests;

import dev.ubuf.ag.AgMethod;
import dev.ubuf.ag.AgOptions;
import dev.ubuf.ag.AgShape;
import dev.ubuf.ag.AllGatherGemmOp;
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
import dev.ubuf.nccl.NcclUniqueId;
import dev.ubuf.ops.DeviceKernels;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;

import java.util.List;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * AllGather->GEMM overlap on every rank of the bootstrap: three consecutive calls on fresh random inputs with poisoned
 * outputs; the gathered input must equal NCCL AllGather's element by element, the output must be finite everywhere
 * and match NCCL AllGather + one cuBLASLt GEMM, and (first call, small shapes) a float64 product.
 *
 * @param n          output columns per rank
 * @param copyEngine copies on the copy engines (use_ce) rather than SM copies
 */
record AgScenario(AgMethod method, DType dtype, int m, int k, int n, boolean copyEngine, boolean weightTransposed)
        implements RankScenario {
    static final String NAME = "ag";
    private static final List<String> PARAMS = List.of("method", "dtype", "m", "k", "n", "copyEngine",
            "weightTransposed");

    static AgScenario parse(List<String> params) {
        ScenarioArgs a = ScenarioArgs.of(NAME, PARAMS, params);
        return new AgScenario(a.constant(0, AgMethod.class), a.constant(1, DType.class), a.positiveInt(2),
                a.positiveInt(3), a.positiveInt(4), a.bool(5), a.bool(6));
    }

    @Override
    public List<String> toArgs() {
        return List.of(NAME, method.name(), dtype.name(), Integer.toString(m), Integer.toString(k),
                Integer.toString(n), Boolean.toString(copyEngine), Boolean.toString(weightTransposed));
    }

    @Override
    public void run(int rank, Bootstrap boot, CudaContext ctx, UbufEnvironment env) {
        int tp = boot.size();
        DType t = dtype;
        boolean weightT = weightTransposed;
        AgShape shape = new AgShape(tp, m, k, n, t);
        byte[] id = boot.broadcast(rank == 0 ? NcclUniqueId.generate().bytes() : null, 0);
        try (TpCommunicator comm = TpCommunicator.create(boot, ctx, env, null);
             KernelLibrary lib = KernelLibrary.load(ctx);
             NcclCommunicator nccl = NcclCommunicator.initRank(new NcclUniqueId(id), tp, rank);
             CudaStream s = ctx.createStream(StreamPriority.NORMAL);
             Gemm gemm = new Gemm(ctx);
             DeviceBuffer xb = ctx.allocate((long) m / tp * k * t.bytes());
             DeviceBuffer wb = ctx.allocate((long) k * n * t.bytes());
             DeviceBuffer ob = ctx.allocate((long) m * n * t.bytes());
             DeviceBuffer gref = ctx.allocate((long) m * k * t.bytes());
             DeviceBuffer oref = ctx.allocate((long) m * n * t.bytes())) {
            DeviceKernels kernels = new DeviceKernels(lib);
            try (AllGatherGemmOp op = new AllGatherGemmOp(comm, shape, method, AgOptions.defaults(), kernels,
                    ExecutionSettings.DEFAULT.withCopyEngine(copyEngine))) {
                TensorView x = TensorView.of(xb, m / tp, k, t);
                TensorView w = weightT ? TensorView.of(wb, n, k, t) : TensorView.of(wb, k, n, t);
                TensorView out = TensorView.of(ob, m, n, t);
                TensorView gathered = TensorView.of(gref, m, k, t);
                TensorView ref = TensorView.of(oref, m, n, t);
                for (int call = 0; call < 3; call++) {
                    long seed = System.nanoTime() + rank;
                    SplittableRandom rnd = new SplittableRandom(seed);
                    float[] xs = HostTensors.random(rnd, (long) m / tp * k, t, 1f);
                    HostTensors.upload(ctx, s, xs, x);
                    float[] ws = HostTensors.random(rnd, (long) k * n, t, 1f / (float) Math.sqrt(k));
                    HostTensors.upload(ctx, s, ws, w);
                    kernels.poison(out, s);
                    kernels.poison(ref, s);
                    kernels.poison(gathered, s);
                    s.synchronize();
                    boot.barrier();
                    op.forward(x, w, weightT, out, s);
                    op.await(s);
                    // Reference: NCCL AllGather, then one GEMM.
                    nccl.allGather(x.address(), gathered.address(), (long) m / tp * k, t, s.nativeHandle());
                    gemm.multiply(gathered, w, ref, 1f, 0f, new Gemm.Options(false, weightT, 0, false), s);
                    s.synchronize();
                    float[] gotGathered = HostTensors.download(ctx, s, op.gathered());
                    float[] wantGathered = HostTensors.download(ctx, s, gathered);
                    assertArrayEquals(wantGathered, gotGathered, "gathered input, rank " + rank + " call " + call);
                    float[] got = HostTensors.download(ctx, s, out);
                    HostTensors.assertAllFinite(got, "output rank " + rank);
                    float[] want = HostTensors.download(ctx, s, ref);
                    double[] wantD = new double[want.length];
                    for (int i = 0; i < want.length; i++) {
                        wantD[i] = want[i];
                    }
                    double err = HostTensors.relativeError(got, wantD);
                    double bound = t == DType.FP32 ? 1e-5 : 1e-2;
                    assertTrue(err < bound, "rank " + rank + " call " + call + ": relative error " + err
                            + " against NCCL+cuBLASLt (seed " + seed + ")");
                    if (call == 0 && (long) m * n * k < 1L << 30) {
                        double[] exact = HostTensors.matmul(wantGathered, ws, m, n, k, false, weightT);
                        double e64 = HostTensors.relativeError(got, exact);
                        assertTrue(e64 < (t == DType.FP32 ? 1e-4 : 1e-2), "against float64: " + e64
                                + " (seed " + seed + ")");
                    }
                    boot.barrier();
                }
            }
        }
    }
}
