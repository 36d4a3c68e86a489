package dev.ubuf.tests;

import dev.ubuf.ag.AgShape;
import dev.ubuf.bootstrap.Bootstrap;
import dev.ubuf.comm.TpCommunicator;
import dev.ubuf.config.UbufEnvironment;
import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.cuda.KernelLibrary;
import dev.ubuf.cuda.StreamPriority;
import dev.ubuf.exec.ExecutionSettings;
import dev.ubuf.exec.OperandBindings;
import dev.ubuf.op.Collective;
import dev.ubuf.op.Candidate;
import dev.ubuf.op.MethodRegistry;
import dev.ubuf.op.OverlapOp;
import dev.ubuf.op.OverlapShape;
import dev.ubuf.op.Planner;
import dev.ubuf.op.PlannerSettings;
import dev.ubuf.devicekernels.DeviceKernels;
import dev.ubuf.rs.RsShape;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * One overlapped GEMM of either family on every rank, checked against the unoverlapped reference: three consecutive
 * calls on fresh random inputs with poisoned outputs. The output must be finite everywhere and match the NCCL
 * reference op (NCCL collective + one cuBLASLt GEMM) on the same inputs, and, on the first call of small shapes, a
 * float64 product on the host; an AG's gathered input must equal NCCL AllGather's bit for bit. Calls alternate
 * between two caller streams, so each call must be ordered after the previous one's join whatever stream it came
 * from. An operand the op does not take (a bias for an op made without one) is rejected before any GPU work.
 *
 * @param variant a registered method with options ("ring", "pipeline:splits=4"), or "auto" for the planner's choice
 * @param n       AG: output columns per rank; RS: output columns
 * @param k       AG: inner dimension; RS: this rank's slice of it
 */
record OverlapScenario(Collective collective, String variant, DType dtype, int m, int k, int n, boolean copyEngine,
                       boolean weightTransposed, boolean bias) implements RankScenario {
    static final String NAME = "overlap";
    private static final List<String> PARAMS = List.of("collective", "variant", "dtype", "m", "k", "n", "copyEngine",
            "weightTransposed", "bias");

    static OverlapScenario parse(List<String> params) {
        ScenarioArgs a = ScenarioArgs.of(NAME, PARAMS, params);
        return new OverlapScenario(a.constant(0, Collective.class), a.text(1), a.constant(2, DType.class),
                a.positiveInt(3), a.positiveInt(4), a.positiveInt(5), a.bool(6), a.bool(7), a.bool(8));
    }

    @Override
    public List<String> toArgs() {
        return List.of(NAME, collective.name(), variant, dtype.name(), Integer.toString(m), Integer.toString(k),
                Integer.toString(n), Boolean.toString(copyEngine), Boolean.toString(weightTransposed),
                Boolean.toString(bias));
    }

    OverlapShape shape(int tp) {
        return collective == Collective.ALL_GATHER ? new AgShape(tp, m, k, n, dtype)
                : new RsShape(tp, m, k, n, dtype, bias);
    }

    /** Whether the host can check every call against a float64 product: m·n·k below 2^30 (larger take too long). */
    boolean float64Checkable() {
        return (long) m * n * k < 1L << 30;
    }

    @Override
    public void run(int rank, Bootstrap boot, CudaContext ctx, UbufEnvironment env) {
        int tp = boot.size();
        OverlapShape shape = shape(tp);
        DType t = dtype;
        ExecutionSettings exec = ExecutionSettings.DEFAULT.withCopyEngine(copyEngine);
        try (TpCommunicator comm = TpCommunicator.create(boot, ctx, env, null);
             KernelLibrary lib = KernelLibrary.load(ctx);
             CudaStream s = ctx.createStream(StreamPriority.NORMAL);
             CudaStream other = ctx.createStream(StreamPriority.NORMAL);
             DeviceBuffer xb = ctx.allocate(shape.inputRows() * k * t.bytes());
             DeviceBuffer wb = ctx.allocate((long) k * n * t.bytes());
             DeviceBuffer bb = ctx.allocate((long) n * t.bytes());
             DeviceBuffer ob = ctx.allocate(shape.outputRows() * n * t.bytes());
             DeviceBuffer rb = ctx.allocate(shape.outputRows() * n * t.bytes())) {
            DeviceKernels kernels = new DeviceKernels(lib);
            MethodRegistry registry = MethodRegistry.load();
            // Ranks sharing a GPU (SharedGpuOpsGpuTest) have no NCCL: every call is checked against float64 instead.
            boolean nccl = comm.sharedDevice().isEmpty();
            boolean float64 = float64Checkable();
            if (!nccl && !float64) {
                throw new IllegalArgumentException(this + ": without NCCL (ranks share a GPU) the float64 product is"
                        + " the only check, and m*n*k is too large for it");
            }
            try (OverlapOp op = variant.equals("auto")
                    ? new Planner(registry, PlannerSettings.inMemory()).planned(comm, shape, kernels, exec)
                    : Candidate.named(registry, shape, variant).create(comm, shape, kernels, exec);
                 OverlapOp reference = nccl ? OverlapOp.ncclReference(comm, shape, kernels) : null) {
                TensorView x = TensorView.of(xb, shape.inputRows(), k, t);
                TensorView w = weightTransposed ? TensorView.of(wb, n, k, t) : TensorView.of(wb, k, n, t);
                OperandBindings xw = weightTransposed ? OperandBindings.of(x, w).withWeightTransposed()
                        : OperandBindings.of(x, w);
                TensorView bv = TensorView.of(bb, 1, n, t);
                TensorView out = TensorView.of(ob, shape.outputRows(), n, t);
                TensorView ref = TensorView.of(rb, shape.outputRows(), n, t);
                TensorView b = shape.bias() ? bv : null;
                if (!shape.bias()) {
                    var e = assertThrows(IllegalArgumentException.class, () -> op.forward(
                            xw.withOutput(out).withBias(bv), s), "a bias the op was not made with");
                    assertTrue(e.getMessage().contains("bias"), e.getMessage());
                }
                for (int call = 0; call < 3; call++) {
                    CudaStream caller = call % 2 == 0 ? s : other;
                    long seed = System.nanoTime() + 7919L * rank;
                    SplittableRandom rnd = new SplittableRandom(seed);
                    float[] xs = HostTensors.random(rnd, shape.inputRows() * k, t, 1f);
                    float[] ws = HostTensors.random(rnd, (long) k * n, t, 1f / (float) Math.sqrt(k));
                    // The bias is the layer's, the same on every rank: rank 0's seed.
                    float[] bs = HostTensors.random(new SplittableRandom(ByteBuffer.wrap(
                            boot.broadcast(ByteBuffer.allocate(8).putLong(seed).array(), 0)).getLong()), n, t, 1f);
                    HostTensors.upload(ctx, s, xs, x);
                    HostTensors.upload(ctx, s, ws, w);
                    HostTensors.upload(ctx, s, bs, bv);
                    if (call == 0) {
                        // Initialisation: every GEMM tuned and its kernel loaded before a call waits on a peer.
                        op.tuneGemms(xw.withOutput(out).withBias(b), caller);
                        if (nccl) {
                            reference.tuneGemms(xw.withOutput(ref).withBias(b), s);
                        }
                    }
                    kernels.poison(out, s);
                    kernels.poison(ref, s);
                    if (nccl) {
                        kernels.poison(reference.userBuffer(), s);
                    } else if (collective == Collective.ALL_GATHER) {
                        kernels.poison(op.userBuffer(), s); // no reference gathers into it: the op must
                    }
                    s.synchronize();
                    boot.barrier();
                    OperandBindings operands = xw.withOutput(out).withBias(b);
                    op.forward(operands, caller);
                    op.await(caller);
                    String where = op.label() + " rank " + rank + " call " + call + " (seed " + seed + ")";
                    float[] got = HostTensors.download(ctx, s, out);
                    HostTensors.assertAllFinite(got, "output of " + where);
                    byte[][] xsAll = boot.allGather(floats(xs));
                    byte[][] wsAll = boot.allGather(floats(ws));
                    if (nccl) {
                        reference.forward(xw.withOutput(ref).withBias(b), s);
                        reference.await(s);
                        float[] want = HostTensors.download(ctx, s, ref);
                        double err = HostTensors.relativeError(got, toDouble(want));
                        assertTrue(err < (t == DType.FP32 ? 1e-5 : 1e-2), where + ": relative error " + err
                                + " against the NCCL reference");
                    }
                    if (collective == Collective.ALL_GATHER) {
                        float[] gathered = HostTensors.download(ctx, s, op.userBuffer());
                        assertArrayEquals(nccl ? HostTensors.download(ctx, s, reference.userBuffer())
                                : concat(xsAll), gathered, "gathered input, " + where);
                    }
                    if ((call == 0 || !nccl) && float64) {
                        double[] exact = exact(rank, tp, xsAll, wsAll, bs);
                        double e64 = HostTensors.relativeError(got, exact);
                        assertTrue(e64 < (t == DType.FP32 ? 1e-4 : 1e-2), where + ": against float64 " + e64);
                    }
                    boot.barrier();
                }
            }
        }
    }

    /** float64 product of this rank's output from every rank's inputs. */
    private double[] exact(int rank, int tp, byte[][] xsAll, byte[][] wsAll, float[] bs) {
        if (collective == Collective.ALL_GATHER) {
            return HostTensors.matmul(concat(xsAll), unfloats(wsAll[rank]), m, n, k, false, weightTransposed);
        }
        double[] exact = new double[(m / tp) * n];
        for (int r = 0; r < tp; r++) {
            float[] xr = unfloats(xsAll[r]);
            float[] rows = Arrays.copyOfRange(xr, rank * (m / tp) * k, (rank + 1) * (m / tp) * k);
            double[] pr = HostTensors.matmul(rows, unfloats(wsAll[r]), m / tp, n, k, false, weightTransposed);
            for (int i = 0; i < exact.length; i++) {
                exact[i] += pr[i];
            }
        }
        if (bias) {
            for (int i = 0; i < exact.length; i++) {
                exact[i] += bs[i % n];
            }
        }
        return exact;
    }

    /** Every rank's values, rank 0's first: what an all-gather of them holds. */
    static float[] concat(byte[][] perRank) {
        float[][] parts = new float[perRank.length][];
        int total = 0;
        for (int r = 0; r < perRank.length; r++) {
            parts[r] = unfloats(perRank[r]);
            total += parts[r].length;
        }
        float[] all = new float[total];
        int at = 0;
        for (float[] p : parts) {
            System.arraycopy(p, 0, all, at, p.length);
            at += p.length;
        }
        return all;
    }

    private static double[] toDouble(float[] a) {
        double[] d = new double[a.length];
        for (int i = 0; i < a.length; i++) {
            d[i] = a[i];
        }
        return d;
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
