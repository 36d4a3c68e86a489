package dev.ubuf.tests;

import dev.ubuf.comm.ThreadDomain;
import dev.ubuf.comm.TpCommunicator;
import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.cuda.StreamPriority;
import dev.ubuf.layers.tp.Activation;
import dev.ubuf.layers.tp.Collectives;
import dev.ubuf.layers.tp.GradientReductions;
import dev.ubuf.layers.tp.Parameter;
import dev.ubuf.layers.tp.TpContext;
import dev.ubuf.layers.train.DataParallelGroup;
import dev.ubuf.layers.train.LayerStack;
import dev.ubuf.layers.train.MlpSpec;
import dev.ubuf.layers.train.SequenceParallelGrads;
import dev.ubuf.layers.train.Trainer;
import dev.ubuf.op.PlannerSettings;
import dev.ubuf.resource.Closer;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A training step that reduces its sequence-parallel gradients (the LayerNorms' gamma and beta; under FP8 fc2's bias)
 * after the backward, as one NCCL group beside the other parameters' update, computes what the step that reduces
 * each in its layer's backward does: two stacks of the same configuration and seed, one trainer each way, three
 * steps on fresh random inputs, every parameter and every row's loss bit-identical after each step (at tp 2 a sum of
 * two partials is one addition, in either order the same bits), every gradient cleared, and the LayerNorms' betas
 * moved by the steps.
 * A deferral never issued is refused when closed, and a second one while one is open.
 */
class SequenceParallelGradsGpuTest {
    private static final int HIDDEN = 256;
    private static final int FFN = 512;
    private static final int TOKENS = 512;

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"te", "none", "te+fp8current", "te+fp8"})
    void reducingBesideTheUpdateStepsAsReducingInTheBackward(String overlap) throws Exception {
        Gpu.assumeGpus(2);
        ThreadDomain.run(2, Duration.ofSeconds(180), (rank, boot, ctx) -> {
            long seed = ByteBuffer.wrap(boot.broadcast(ByteBuffer.allocate(8).putLong(System.nanoTime()).array(), 0))
                    .getLong();
            long rows = TOKENS / 2;
            try (TpCommunicator comm = TpCommunicator.create(boot, ctx, OverlapOpsGpuTest.ENV, null);
                 CudaStream s = ctx.createStream(StreamPriority.NORMAL);
                 Closer owned = new Closer("test buffers")) {
                DataParallelGroup dp = owned.register("dp", DataParallelGroup.join(boot.subgroup(new int[]{rank}),
                        ctx));
                LayerStack beside = owned.register("beside", stack(comm, overlap));
                LayerStack inBackward = owned.register("in backward", stack(comm, overlap));
                Trainer a = owned.register("trainer beside", Trainer.create(beside, dp, 0.05f,
                        SequenceParallelGrads.BESIDE_UPDATE));
                Trainer b = owned.register("trainer in backward", Trainer.create(inBackward, dp, 0.05f,
                        SequenceParallelGrads.IN_BACKWARD));
                beside.initialize(seed, s);
                inBackward.initialize(seed, s);
                TensorView x = tensor(owned, ctx, rows, HIDDEN, DType.BF16);
                TensorView t = tensor(owned, ctx, rows, HIDDEN, DType.BF16);
                TensorView sqA = tensor(owned, ctx, 1, rows, DType.FP32);
                TensorView sqB = tensor(owned, ctx, 1, rows, DType.FP32);
                List<Parameter> pa = beside.parameters();
                List<Parameter> pb = inBackward.parameters();
                assertEquals(pa.size(), pb.size());
                float[][] before = new float[pa.size()][];
                for (int i = 0; i < pa.size(); i++) {
                    before[i] = HostTensors.download(ctx, s, pa.get(i).value());
                }
                for (int it = 0; it < 3; it++) {
                    String where = overlap + " rank " + rank + " step " + it + " (seed " + seed + ")";
                    SplittableRandom rnd = new SplittableRandom(seed * 31 + rank * 7919L + it);
                    HostTensors.upload(ctx, s, HostTensors.random(rnd, x.elements(), DType.BF16, 1f), x);
                    HostTensors.upload(ctx, s, HostTensors.random(rnd, t.elements(), DType.BF16, 1f), t);
                    tc(beside).kernels().fillBits(sqA, 0x7FC00000, s);
                    tc(beside).kernels().fillBits(sqB, 0x7FC00000, s);
                    a.step(x, t, sqA, s);
                    b.step(x, t, sqB, s);
                    assertSameBits(HostTensors.download(ctx, s, sqB), HostTensors.download(ctx, s, sqA),
                            "loss partial sums, " + where);
                    for (int i = 0; i < pa.size(); i++) {
                        assertEquals(pb.get(i).name(), pa.get(i).name());
                        float[] want = HostTensors.download(ctx, s, pb.get(i).value());
                        assertSameBits(want, HostTensors.download(ctx, s, pa.get(i).value()),
                                pa.get(i).name() + ", " + where);
                        HostTensors.assertAllFinite(want, pa.get(i).name() + ", " + where);
                        // The update clears each gradient, the deferred ones too.
                        float[] g = HostTensors.download(ctx, s, pa.get(i).grad());
                        for (int j = 0; j < g.length; j++) {
                            assertEquals(0, Float.floatToIntBits(g[j]), pa.get(i).name() + " gradient after the "
                                    + "step, element " + j + ", " + where);
                        }
                    }
                    boot.barrier();
                }
                // beta starts at zero, so any update moves it; gamma starts at one, where this small model's
                // updates fall below half a bf16 ulp.
                int betas = 0;
                for (int i = 0; i < pa.size(); i++) {
                    if (pa.get(i).name().endsWith(".ln.beta")) {
                        betas++;
                        float[] now = HostTensors.download(ctx, s, pa.get(i).value());
                        assertFalse(java.util.Arrays.equals(before[i], now),
                                pa.get(i).name() + " never changed: its gradient never reached the update");
                    }
                }
                assertEquals(2, betas, "a LayerNorm beta in each of the two blocks");
                s.synchronize();
            }
        });
    }

    @Test
    void aDeferralNeverIssuedIsRefusedAndOnlyOneIsOpen() throws Exception {
        Gpu.assumeGpus(2);
        ThreadDomain.run(2, Duration.ofSeconds(120), (rank, boot, ctx) -> {
            try (TpCommunicator comm = TpCommunicator.create(boot, ctx, OverlapOpsGpuTest.ENV, null);
                 CudaStream s = ctx.createStream(StreamPriority.NORMAL);
                 Closer owned = new Closer("test buffers")) {
                LayerStack stack = owned.register("stack", stack(comm, "te"));
                TpContext tc = tc(stack);
                stack.initialize(3, s);
                TensorView x = tensor(owned, ctx, TOKENS / 2, HIDDEN, DType.BF16);
                tc.kernels().fillRandom(x, 5 + rank, 1f, s);
                GradientReductions pending = tc.deferGradientReductions();
                assertThrows(IllegalStateException.class, tc::deferGradientReductions);
                stack.forward(x, s);
                stack.backward(x, s);
                assertEquals(4, pending.parameters().size(), "gamma and beta of each block's LayerNorm wait");
                IllegalStateException e = assertThrows(IllegalStateException.class, pending::close);
                assertTrue(e.getMessage().contains("without being issued"), e.getMessage());
                // Closed, it no longer defers: another can open, and an issued one closes quietly.
                GradientReductions again = tc.deferGradientReductions();
                stack.forward(x, s);
                stack.backward(x, s);
                again.reduce(s);
                assertTrue(again.isEmpty());
                again.close();
                s.synchronize();
            }
        });
    }

    private static LayerStack stack(TpCommunicator comm, String overlap) {
        TpContext tc = TpContext.create(comm, LayerScenario.config(overlap, 2), DType.BF16, TOKENS,
                PlannerSettings.inMemory(), Collectives.nccl(), false);
        return LayerStack.create(tc, new MlpSpec(HIDDEN, FFN, Activation.SWIGLU, 2));
    }

    private static TpContext tc(LayerStack stack) {
        return stack.context();
    }

    private static void assertSameBits(float[] want, float[] got, String what) {
        assertEquals(want.length, got.length, what);
        for (int i = 0; i < want.length; i++) {
            int j = i;
            assertEquals(Float.floatToIntBits(want[i]), Float.floatToIntBits(got[i]),
                    () -> what + ": element " + j + " reduced in the backward " + want[j] + ", beside " + got[j]);
        }
    }

    private static TensorView tensor(Closer owned, CudaContext ctx, long rows, long cols, DType t) {
        DeviceBuffer b = owned.register("tensor", ctx.allocate(rows * cols * t.bytes(), "test.tensor"));
        return TensorView.of(b, rows, cols, t);
    }
}
