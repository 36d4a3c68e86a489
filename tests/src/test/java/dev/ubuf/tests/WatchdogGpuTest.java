package dev.ubuf.tests;

import dev.ubuf.ag.AgShape;
import dev.ubuf.comm.ThreadDomain;
import dev.ubuf.comm.TpCommunicator;
import dev.ubuf.comm.UbufTimeoutException;
import dev.ubuf.config.UbufEnvironment;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.KernelLibrary;
import dev.ubuf.cuda.StreamPriority;
import dev.ubuf.exec.ExecutionSettings;
import dev.ubuf.op.MethodRegistry;
import dev.ubuf.op.OperandBuffers;
import dev.ubuf.op.OverlapOp;
import dev.ubuf.devicekernels.DeviceKernels;
import dev.ubuf.tensor.DType;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The host watchdog: a rank whose peer never joins a call gets, after UB_TIMEOUT, an error naming itself, the flag,
 * the peer that should signal it, the value needed and the value observed, instead of a hang; and it can still close
 * everything: the waits that will never be satisfied are released, the streams drain, and nothing stays allocated.
 */
class WatchdogGpuTest {
    private static final UbufEnvironment ENV = new UbufEnvironment(true, Duration.ofSeconds(3), false);
    private static final AgShape SHAPE = new AgShape(2, 1024, 256, 256, DType.BF16);

    private static void assertNamesFlagPeerAndValues(String m0) {
        assertNotNull(m0);
        for (String part : new String[]{"rank 0 timed out", "UB_TIMEOUT", "waits for flag", "from rank 1",
                "expected >= ", "observed 0"}) {
            assertTrue(m0.contains(part), "'" + m0 + "' lacks '" + part + "'");
        }
    }

    /**
     * Rank 1 joins the call only after rank 0 gave up and closed: rank 0's report names rank 1 and the flag, and rank
     * 1's late call is refused before any GPU work, since rank 0 may already have freed what it would copy into.
     */
    @Test
    void aPeerThatNeverJoinsTheCallIsReportedWithFlagPeerExpectedAndObservedValues() throws Exception {
        Gpu.assumeGpus(2);
        CountDownLatch survivorClosed = new CountDownLatch(1);
        AtomicReference<String> message = new AtomicReference<>();
        ThreadDomain.run(2, Duration.ofSeconds(60), (rank, boot, ctx) -> {
            try (TpCommunicator comm = TpCommunicator.create(boot, ctx, ENV, null);
                 KernelLibrary lib = KernelLibrary.load(ctx);
                 CudaStream s = ctx.createStream(StreamPriority.NORMAL)) {
                DeviceKernels kernels = new DeviceKernels(lib);
                try (OperandBuffers operands = new OperandBuffers(ctx, kernels, SHAPE, rank, s)) {
                    OverlapOp op = OverlapOp.create(comm, MethodRegistry.load().schedule(SHAPE, "ring"), kernels,
                            ExecutionSettings.DEFAULT);
                    if (rank == 0) {
                        op.forward(operands.bindings(), s);
                        UbufTimeoutException e = assertThrows(UbufTimeoutException.class, () -> op.await(s));
                        message.set(e.getMessage());
                        op.close();
                        survivorClosed.countDown();
                    } else {
                        assertTrue(survivorClosed.await(60, TimeUnit.SECONDS), "rank 0 never gave up");
                        var e = assertThrows(dev.ubuf.comm.PeerFailedException.class,
                                () -> op.forward(operands.bindings(), s));
                        assertTrue(e.getMessage().contains("refused to issue ag/ring call 0"), e.getMessage());
                        op.close();
                    }
                }
            }
        });
        assertNamesFlagPeerAndValues(message.get());
    }

    /**
     * Rank 1 makes the op with rank 0 and then never calls it (a dead peer in thread mode: it never arrives). Rank 0's
     * call times out naming rank 1 and the flag; closing the op then neither hangs nor leaves anything allocated in
     * its context. Only after that does rank 1 clean up.
     */
    @Test
    void aTrulyDeadPeerNeitherHangsTheSurvivorsCloseNorLeaksItsMemory() throws Exception {
        Gpu.assumeGpus(2);
        CountDownLatch survivorDone = new CountDownLatch(1);
        AtomicReference<String> message = new AtomicReference<>();
        ThreadDomain.run(2, Duration.ofSeconds(60), (rank, boot, ctx) -> {
            try (TpCommunicator comm = TpCommunicator.create(boot, ctx, ENV, null);
                 KernelLibrary lib = KernelLibrary.load(ctx);
                 CudaStream s = ctx.createStream(StreamPriority.NORMAL)) {
                DeviceKernels kernels = new DeviceKernels(lib);
                var before = ctx.ledger().openResources();
                OperandBuffers operands = new OperandBuffers(ctx, kernels, SHAPE, rank, s);
                OverlapOp op = OverlapOp.create(comm, MethodRegistry.load().schedule(SHAPE, "ring"), kernels,
                        ExecutionSettings.DEFAULT);
                if (rank == 0) {
                    op.forward(operands.bindings(), s);
                    message.set(assertThrows(UbufTimeoutException.class, () -> op.await(s)).getMessage());
                    op.close(); // must not wait for rank 1, nor leave the stuck streams' memory allocated
                    operands.close();
                    assertEquals(before, ctx.ledger().openResources(), "rank 0's context after closing the op");
                    survivorDone.countDown();
                } else {
                    assertTrue(survivorDone.await(60, TimeUnit.SECONDS), "rank 0 never finished");
                    try {
                        op.close();
                    } catch (RuntimeException aborted) {
                        assertTrue(String.valueOf(aborted.getMessage()).contains("abort"), aborted.toString());
                    }
                    operands.close();
                    assertEquals(before, ctx.ledger().openResources(), "rank 1's context after closing the op");
                }
            }
        });
        assertNamesFlagPeerAndValues(message.get());
    }
}
