package dev.ubuf.tests;

import dev.ubuf.bootstrap.Bootstrap;
import dev.ubuf.comm.ThreadDomain;
import dev.ubuf.comm.TpCommunicator;
import dev.ubuf.config.UbufEnvironment;
import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.cuda.StreamPriority;
import dev.ubuf.layers.tp.Activation;
import dev.ubuf.layers.tp.Collectives;
import dev.ubuf.layers.tp.Parameter;
import dev.ubuf.layers.tp.TpContext;
import dev.ubuf.layers.train.DataParallelGroup;
import dev.ubuf.layers.train.LayerStack;
import dev.ubuf.layers.train.MlpSpec;
import dev.ubuf.layers.train.StepGraph;
import dev.ubuf.layers.train.Trainer;
import dev.ubuf.op.PlannerSettings;
import dev.ubuf.resource.Closer;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import dev.ubuf.trace.RankTrace;
import dev.ubuf.trace.Span;
import dev.ubuf.trace.SpanKind;
import dev.ubuf.trace.StepTracer;
import dev.ubuf.trace.Tracer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * A training step captured as a CUDA graph ({@link Trainer#capture}) and replayed does what the same step run eagerly
 * does. Per iteration, on fresh random inputs: the parameters are saved, one eager step runs, its parameters and loss
 * partial sums are kept, the parameters are restored, the loss output is poisoned (NaN), and the graph is replayed;
 * every parameter element and every row's loss must be bit-identical to the eager step's (the same ops, kernels and
 * GEMM algorithms on the same data; nothing in the step reduces in a run-dependent order), and the step must have
 * changed the parameters. Three iterations, so the ops' device call counters advance across eager calls and replays
 * interleaved. FP8 with current scaling runs the same way; FP8 with delayed scaling carries its amax windows and
 * scales (and, in a graph-capturable context, its step count) on the device from step to step, so there the eager
 * steps run on a twin stack of the same configuration and seed, in lockstep with the replays, and the two must stay
 * bit-identical step after step. The ranks are processes, each starting CUDA with the library's 32 hardware queues,
 * which graph-capturable overlapped layers require ({@link TpContext}); with 8 such a context is refused. A context
 * whose ops signal with host sequence numbers refuses to be captured, leaves the stream out of capture and steps
 * eagerly afterwards.
 */
class StepGraphGpuTest {
    private static final int HIDDEN = 256;
    private static final int FFN = 512;
    private static final int TOKENS = 512;
    /** The case whose traced replay times each op as one span ({@code StepTracer} without op steps). */
    private static final String OPS_AS_ONE_SPAN = "ring";

    /**
     * One process per rank, so that each rank's CUDA starts with the environment the case gives it: {@code refused}
     * cases run with CUDA_DEVICE_MAX_CONNECTIONS=8 and check that a graph-capturable overlapped context is refused,
     * the others with the library's default (it sets 32 where the variable is unset).
     */
    record Case(String overlap, boolean refused) implements RankScenario {
        static final String NAME = "stepgraph";

        static Case parse(List<String> params) {
            ScenarioArgs a = ScenarioArgs.of(NAME, List.of("overlap", "refused"), params);
            return new Case(a.text(0), a.bool(1));
        }

        @Override
        public List<String> toArgs() {
            return List.of(NAME, overlap, Boolean.toString(refused));
        }

        @Override
        public void run(int rank, Bootstrap bootstrap, CudaContext ctx, UbufEnvironment env) {
            if (refused) {
                refusedWithFewQueues(overlap, bootstrap, ctx, env);
            } else {
                replayMatchesEager(overlap, rank, bootstrap, ctx, env);
            }
        }
    }

    @ParameterizedTest(name = "{0} tp={1}")
    @CsvSource({"te, 2", "ring, 2", "auto, 2", "none, 2", "te, 4", "auto, 4", "te+fp8, 2", "te+fp8current, 2",
            "te+fp8, 4"})
    void aReplayedStepIsBitIdenticalToTheEagerStep(String overlap, int tp) throws Exception {
        Gpu.assumeGpus(2);
        int gpus = dev.ubuf.cuda.Cuda.deviceCount();
        assumeTrue(gpus >= tp, "needs " + tp + " GPUs, found " + gpus
                + " (a plain skip, also under -Dubuf.requireGpu=true: the 4-GPU lane runs it)");
        Case c = new Case(overlap, false);
        ProcessRanks.launch(tp, Duration.ofSeconds(60), c, Duration.ofSeconds(240)).assertEveryRankPassed(c, tp);
    }

    @Test
    void aGraphCapturableOverlappedContextIsRefusedWithEightHardwareQueues() throws Exception {
        Gpu.assumeGpus(2);
        Case c = new Case("te", true);
        ProcessRanks.launch(2, Duration.ofSeconds(60), c, Duration.ofSeconds(120),
                Map.of("CUDA_DEVICE_MAX_CONNECTIONS", "8")).assertEveryRankPassed(c, 2);
    }

    private static void refusedWithFewQueues(String overlap, Bootstrap boot, CudaContext ctx, UbufEnvironment env) {
        try (TpCommunicator comm = TpCommunicator.create(boot, ctx, env, null)) {
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> TpContext.create(comm,
                    LayerScenario.config(overlap, boot.size()), DType.BF16, TOKENS, PlannerSettings.inMemory(),
                    Collectives.nccl(), true));
            assertTrue(e.getMessage().contains("CUDA_DEVICE_MAX_CONNECTIONS=32") && e.getMessage().contains("'8'"),
                    e.getMessage());
            // Nothing overlapped: no spinning waits, no such need.
            TpContext.create(comm, LayerScenario.config("none", boot.size()), DType.BF16, TOKENS,
                    PlannerSettings.inMemory(), Collectives.nccl(), true).close();
        }
    }

    @Test
    void aContextWithHostSequenceNumbersRefusesCaptureAndStillSteps() throws Exception {
        Gpu.assumeGpus(2);
        ThreadDomain.run(2, Duration.ofSeconds(120), (rank, boot, ctx) -> {
            try (TpCommunicator comm = TpCommunicator.create(boot, ctx, OverlapOpsGpuTest.ENV, null);
                 CudaStream s = ctx.createStream(StreamPriority.NORMAL);
                 Closer owned = new Closer("test buffers")) {
                TpContext tc = TpContext.create(comm, LayerScenario.config("te", 2), DType.BF16, TOKENS,
                        PlannerSettings.inMemory());
                LayerStack stack = owned.register("stack", LayerStack.create(tc,
                        new MlpSpec(HIDDEN, FFN, Activation.SWIGLU, 1)));
                DataParallelGroup dp = owned.register("dp", DataParallelGroup.join(boot.subgroup(new int[]{rank}),
                        ctx));
                Trainer trainer = owned.register("trainer", Trainer.create(stack, dp, 0.01f));
                stack.initialize(7, s);
                long rows = TOKENS / 2;
                TensorView x = tensor(owned, ctx, rows, HIDDEN, DType.BF16);
                TensorView t = tensor(owned, ctx, rows, HIDDEN, DType.BF16);
                tc.kernels().fillRandom(x, 11 + rank, 1f, s);
                tc.kernels().fillRandom(t, 13 + rank, 1f, s);
                IllegalStateException e = assertThrows(IllegalStateException.class,
                        () -> trainer.capture(x, t, tensor(owned, ctx, 1, rows, DType.FP32), s));
                assertTrue(e.getMessage().contains("graph-capturable"), e.getMessage());
                assertFalse(s.isCapturing(), "the refused capture must not leave the stream capturing");
                trainer.step(x, t, s);
                double loss = trainer.loss(s);
                assertTrue(Double.isFinite(loss) && loss > 0, "eager step after the refusal: loss " + loss);
            }
        });
    }

    private static void replayMatchesEager(String overlap, int rank, Bootstrap boot, CudaContext ctx,
                                           UbufEnvironment env) {
        int tp = boot.size();
        long seed = ByteBuffer.wrap(boot.broadcast(ByteBuffer.allocate(8).putLong(System.nanoTime()).array(), 0))
                .getLong();
        long rows = TOKENS / tp;
        try (TpCommunicator comm = TpCommunicator.create(boot, ctx, env, null);
             CudaStream s = ctx.createStream(StreamPriority.NORMAL);
             Closer owned = new Closer("test buffers")) {
            LayerStack stack = owned.register("stack", capturableStack(comm, overlap, tp));
            TpContext tc = stack.context();
            assertTrue(tc.graphCapturable());
            DataParallelGroup dp = owned.register("dp", DataParallelGroup.join(boot.subgroup(new int[]{rank}), ctx));
            Trainer trainer = owned.register("trainer", Trainer.create(stack, dp, 0.05f));
            stack.initialize(seed, s);
            // Delayed scaling carries its amaxes and scales from step to step, so the eager steps run on a twin
            // stack (same configuration, same seed) that advances beside the replays, not on the captured stack with
            // its parameters restored.
            boolean twin = LayerScenario.fp8Suffix(overlap).equals("+fp8");
            LayerStack eagerStack = stack;
            Trainer eagerTrainer = trainer;
            if (twin) {
                eagerStack = owned.register("twin stack", capturableStack(comm, overlap, tp));
                eagerTrainer = owned.register("twin trainer", Trainer.create(eagerStack, dp, 0.05f));
                eagerStack.initialize(seed, s);
            }
            List<Parameter> eagerParams = eagerStack.parameters();
            TensorView x = tensor(owned, ctx, rows, HIDDEN, DType.BF16);
            TensorView t = tensor(owned, ctx, rows, HIDDEN, DType.BF16);
            TensorView sqEager = tensor(owned, ctx, 1, rows, DType.FP32);
            TensorView sqGraph = tensor(owned, ctx, 1, rows, DType.FP32);
            List<Parameter> params = stack.parameters();
            List<TensorView> saved = new ArrayList<>();
            List<TensorView> eager = new ArrayList<>();
            for (Parameter p : params) {
                saved.add(tensor(owned, ctx, p.value().rows(), p.value().cols(), p.value().dtype()));
                eager.add(tensor(owned, ctx, p.value().rows(), p.value().cols(), p.value().dtype()));
            }
            StepGraph graph = owned.register("step graph", trainer.capture(x, t, sqGraph, s));
            // The same step captured with its spans as the graph's event record nodes: the last iteration replays
            // it, which must compute what the untraced graph does, and its trace must time that replay. The ring
            // case traces each op as one span (no op steps), as the demo does with -Dubuf.traceOpSteps=false.
            boolean opSteps = !overlap.equals(OPS_AS_ONE_SPAN);
            StepTracer tracer = owned.register("step tracer", new StepTracer(ctx, rank, opSteps));
            tc.trace(tracer);
            StepGraph tracedGraph = owned.register("traced step graph", trainer.captureTraced(x, t, sqGraph, s,
                    tracer));
            tc.trace(Tracer.NOOP);
            for (int it = 0; it < 4; it++) {
                boolean traced = it == 3;
                String where = overlap + " tp " + tp + " rank " + rank + " iteration " + it + " (seed " + seed + ")";
                SplittableRandom rnd = new SplittableRandom(seed * 31 + rank * 7919L + it);
                HostTensors.upload(ctx, s, HostTensors.random(rnd, x.elements(), DType.BF16, 1f), x);
                HostTensors.upload(ctx, s, HostTensors.random(rnd, t.elements(), DType.BF16, 1f), t);
                copyAll(params, saved, true, s);
                tc.kernels().fillBits(sqEager, 0x7FC00000, s);
                eagerTrainer.step(x, t, sqEager, s);
                copyAll(eagerParams, eager, true, s);
                if (!twin) {
                    copyAll(params, saved, false, s);
                }
                tc.kernels().fillBits(sqGraph, 0x7FC00000, s);
                (traced ? tracedGraph : graph).replay(s);
                float[] lossEager = HostTensors.download(ctx, s, sqEager);
                float[] lossGraph = HostTensors.download(ctx, s, sqGraph);
                assertBitIdentical(lossEager, lossGraph, "loss partial sums, " + where);
                long changed = 0;
                for (int i = 0; i < params.size(); i++) {
                    float[] e = HostTensors.download(ctx, s, eager.get(i));
                    float[] g = HostTensors.download(ctx, s, params.get(i).value());
                    float[] before = HostTensors.download(ctx, s, saved.get(i));
                    assertBitIdentical(e, g, params.get(i).name() + ", " + where);
                    for (int j = 0; j < e.length; j++) {
                        changed += Float.floatToIntBits(e[j]) != Float.floatToIntBits(before[j]) ? 1 : 0;
                    }
                    HostTensors.assertAllFinite(g, params.get(i).name() + ", " + where);
                }
                assertTrue(changed > 0, "the step changed no parameter, " + where);
                if (traced) {
                    assertReplayTraced(tracer.collect(), !overlap.equals("none"), opSteps, where);
                }
                boot.barrier();
            }
            s.synchronize();
        }
    }

    /**
     * A traced replay's spans: GPU work only (no host spans: the host issued them while capturing), each within the
     * step (from the origin, the graph's first node, on), the GEMMs and kernels of both layers there, and with an
     * overlapped configuration the ops' own steps on their streams.
     */
    private static void assertReplayTraced(RankTrace trace, boolean overlapped, boolean opSteps, String where) {
        assertFalse(trace.spans().isEmpty(), "no spans in the traced replay, " + where);
        for (Span sp : trace.spans()) {
            assertNotEquals(SpanKind.HOST, sp.kind(), "a host span in a graph's trace: " + sp + ", " + where);
            assertTrue(sp.startUs() >= 0 && sp.endUs() >= sp.startUs(), "span " + sp + " out of order, " + where);
        }
        long gemms = trace.spans().stream().filter(sp -> sp.kind() == SpanKind.GEMM).count();
        assertTrue(trace.spans().stream().anyMatch(sp -> sp.kind() == SpanKind.KERNEL),
                "no kernel span, " + where);
        if (opSteps) {
            assertTrue(gemms >= 2 * 4, "at least four GEMM spans a layer (two layers), got " + gemms + ", " + where);
            if (overlapped) {
                assertTrue(trace.streams().stream().anyMatch(n -> n.contains(": ")),
                        "no op stream among " + trace.streams() + ", " + where);
            }
        } else {
            // Each op one span on the caller's stream: only the GEMMs outside the ops (the weight gradients) show,
            // and no op stream.
            assertTrue(gemms >= 2 * 2, "at least two GEMM spans a layer outside its ops, got " + gemms + ", " + where);
            long ops = trace.spans().stream().filter(sp -> sp.kind() == SpanKind.OP).count();
            assertTrue(ops >= 2 * 3, "at least three op spans a layer, got " + ops + ", " + where);
            assertTrue(trace.streams().stream().noneMatch(n -> n.contains(": ")),
                    "an op stream among " + trace.streams() + " with ops as one span, " + where);
        }
    }

    /** The test's two-layer stack on a graph-capturable context of {@code overlap}'s configuration. */
    private static LayerStack capturableStack(TpCommunicator comm, String overlap, int tp) {
        TpContext tc = TpContext.create(comm, LayerScenario.config(overlap, tp), DType.BF16, TOKENS,
                PlannerSettings.inMemory(), Collectives.nccl(), true);
        return LayerStack.create(tc, new MlpSpec(HIDDEN, FFN, Activation.SWIGLU, 2));
    }

    /** Copies every parameter's value into ({@code out}) or back from ({@code !out}) {@code copies}. */
    private static void copyAll(List<Parameter> params, List<TensorView> copies, boolean out, CudaStream s) {
        for (int i = 0; i < params.size(); i++) {
            TensorView v = params.get(i).value();
            TensorView c = copies.get(i);
            long bytes = v.elements() * v.dtype().bytes();
            if (out) {
                s.copy(c.address(), v.address(), bytes);
            } else {
                s.copy(v.address(), c.address(), bytes);
            }
        }
    }

    private static void assertBitIdentical(float[] want, float[] got, String what) {
        assertEquals(want.length, got.length, what);
        int differ = 0;
        int first = -1;
        for (int i = 0; i < want.length; i++) {
            if (Float.floatToIntBits(want[i]) != Float.floatToIntBits(got[i])) {
                differ++;
                first = first < 0 ? i : first;
            }
        }
        int f = first;
        int d = differ;
        assertEquals(0, differ, () -> what + ": " + d + " of " + want.length + " elements differ from the eager step,"
                + " first at " + f + ": eager " + want[f] + ", replay " + got[f]);
    }

    private static TensorView tensor(Closer owned, CudaContext ctx, long rows, long cols, DType t) {
        DeviceBuffer b = owned.register("tensor", ctx.allocate(rows * cols * t.bytes(), "test.tensor"));
        return TensorView.of(b, rows, cols, t);
    }
}
