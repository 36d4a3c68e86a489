package dev.ubuf.tests;

import dev.ubuf.comm.ThreadDomain;
import dev.ubuf.comm.TpCommunicator;
import dev.ubuf.config.UbufEnvironment;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.cuda.KernelLibrary;
import dev.ubuf.cuda.StreamPriority;
import dev.ubuf.exec.ExecutionSettings;
import dev.ubuf.op.MethodRegistry;
import dev.ubuf.op.OperandBuffers;
import dev.ubuf.op.OverlapOp;
import dev.ubuf.devicekernels.DeviceKernels;
import dev.ubuf.rs.RsShape;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Closing an op is collective: a rank that closes right after its call, with no barrier of its own, does not free its
 * user buffer and flags while a peer may still read them (the pull methods read peers' partials) or write them (the
 * ring's last credits). Rank 1 lingers before closing; rank 0's close must not return before rank 1 has begun to
 * close, and memory rank 0 allocates and fills right after its close must keep its contents.
 */
class CollectiveCloseGpuTest {
    static final UbufEnvironment ENV = new UbufEnvironment(true, Duration.ofSeconds(30), false);

    @ParameterizedTest(name = "rs {0}")
    @ValueSource(strings = {"pipeline", "oneshot", "ring"})
    void aRankThatClosesFirstWaitsForItsPeerBeforeFreeingWhatThePeerCanReach(String method) throws Exception {
        Gpu.assumeGpus(2);
        RsShape shape = new RsShape(2, 4096, 1024, 2048, DType.BF16, false);
        AtomicBoolean peerClosing = new AtomicBoolean();
        ThreadDomain.run(2, Duration.ofSeconds(60), (rank, boot, ctx) -> {
            try (TpCommunicator comm = TpCommunicator.create(boot, ctx, ENV, null);
                 KernelLibrary lib = KernelLibrary.load(ctx);
                 CudaStream s = ctx.createStream(StreamPriority.NORMAL)) {
                DeviceKernels kernels = new DeviceKernels(lib);
                try (OperandBuffers operands = new OperandBuffers(ctx, kernels, shape, 5 + rank, s)) {
                    s.synchronize();
                    OverlapOp op = OverlapOp.create(comm, MethodRegistry.load().schedule(shape, method), kernels,
                            ExecutionSettings.DEFAULT);
                    long ubufBytes = op.userBuffer().spanBytes();
                    // Initialisation, as a user's: a GEMM kind first run inside a call while the peer's flag is
                    // pending held both hosts in cublasLtMatmul for about 90 s a case (2026-11-27, 2x H100).
                    op.tuneGemms(operands.bindings(), s);
                    boot.barrier();
                    for (int call = 0; call < 3; call++) {
                        op.forward(operands.bindings(), s);
                    }
                    op.await(s);
                    if (rank == 1) {
                        Thread.sleep(500); // a peer that is late to close
                        peerClosing.set(true);
                        op.close();
                        return;
                    }
                    op.close();
                    assertTrue(peerClosing.get(), "rank 0's close returned before rank 1 began to close");
                    // Reuse: memory handed out after the close keeps what we write into it.
                    try (DeviceBuffer reuse = ctx.allocate(ubufBytes)) {
                        TensorView v = TensorView.of(reuse, ubufBytes / 2, 1, DType.BF16);
                        kernels.fillBits(v, 0x3f80, s); // 1.0
                        s.synchronize();
                        Thread.sleep(200);
                        float[] got = HostTensors.download(ctx, s, v);
                        for (int i = 0; i < got.length; i++) {
                            if (got[i] != 1f) {
                                throw new AssertionError("element " + i + " of memory reused after close is " + got[i]);
                            }
                        }
                    }
                }
            }
        });
    }
}
