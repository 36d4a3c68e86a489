package dev.ubuf.tests;

import dev.ubuf.ag.AgMethod;
import dev.ubuf.ag.AgOptions;
import dev.ubuf.ag.AgShape;
import dev.ubuf.ag.AllGatherGemmOp;
import dev.ubuf.bench.ThreadDomain;
import dev.ubuf.comm.TpCommunicator;
import dev.ubuf.comm.UbufTimeoutException;
import dev.ubuf.config.UbufEnvironment;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.cuda.KernelLibrary;
import dev.ubuf.cuda.StreamPriority;
import dev.ubuf.exec.ExecutionSettings;
import dev.ubuf.ops.DeviceKernels;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The host watchdog: a rank whose peer never joins a call gets, after UB_TIMEOUT, an error naming itself, the flag,
 * the peer that should signal it, the value needed and the value observed, instead of a hang.
 */
class WatchdogGpuTest {
    @Test
    void aPeerThatNeverJoinsTheCallIsReportedWithFlagPeerExpectedAndObservedValues() throws Exception {
        Gpu.assumeGpus(2);
        UbufEnvironment env = new UbufEnvironment(true, Duration.ofSeconds(3), false);
        int tp = 2, m = 1024, k = 256, n = 256;
        DType t = DType.BF16;
        CountDownLatch reported = new CountDownLatch(1);
        AtomicReference<String> message = new AtomicReference<>();
        ThreadDomain.run(tp, Duration.ofSeconds(60), (rank, boot, ctx) -> {
            try (TpCommunicator comm = TpCommunicator.create(boot, ctx, env, null);
                 KernelLibrary lib = KernelLibrary.load(ctx);
                 CudaStream s = ctx.createStream(StreamPriority.NORMAL);
                 DeviceBuffer xb = ctx.allocate((long) m / tp * k * 2);
                 DeviceBuffer wb = ctx.allocate((long) k * n * 2);
                 DeviceBuffer ob = ctx.allocate((long) m * n * 2);
                 AllGatherGemmOp op = new AllGatherGemmOp(comm, new AgShape(tp, m, k, n, t), AgMethod.RING,
                         AgOptions.defaults(), new DeviceKernels(lib), ExecutionSettings.DEFAULT)) {
                TensorView x = TensorView.of(xb, m / tp, k, t);
                TensorView w = TensorView.of(wb, k, n, t);
                TensorView out = TensorView.of(ob, m, n, t);
                if (rank == 0) {
                    op.forward(x, w, false, out, s);
                    UbufTimeoutException e = assertThrows(UbufTimeoutException.class, () -> op.await(s));
                    message.set(e.getMessage());
                    reported.countDown();
                } else {
                    // Join only after rank 0 gave up, so its streams can drain and nothing is left stuck.
                    assertTrue(reported.await(60, TimeUnit.SECONDS), "rank 0 never reported the missing peer");
                    op.forward(x, w, false, out, s);
                }
                s.synchronize();
            }
        });
        String m0 = message.get();
        assertNotNull(m0);
        System.out.println("watchdog report: " + m0);
        for (String part : new String[]{"rank 0 timed out", "UB_TIMEOUT", "waits for flag", "from rank 1",
                "expected >= ", "observed 0"}) {
            assertTrue(m0.contains(part), "'" + m0 + "' lacks '" + part + "'");
        }
    }
}
