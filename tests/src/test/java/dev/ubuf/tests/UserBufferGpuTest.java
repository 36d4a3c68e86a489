package dev.ubuf.tests;

import dev.ubuf.comm.FlagRegion;
import dev.ubuf.comm.TpCommunicator;
import dev.ubuf.comm.UserBuffer;
import dev.ubuf.config.UbufEnvironment;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.StreamPriority;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** User buffers across two GPUs in one JVM: peer copies on the copy engine ordered by flag signals. */
class UserBufferGpuTest {
    static final UbufEnvironment ENV = new UbufEnvironment(true, Duration.ofSeconds(60), false);

    @Test
    void eachRankCopiesIntoItsPeerAndSignalsThePeerChecksEveryElement() throws Exception {
        Gpu.assumeGpus(2);
        dev.ubuf.bench.ThreadDomain.run(2, Duration.ofSeconds(60), (rank, boot, ctx) -> {
            long n = 8L << 20; // 8 Mi floats, 32 MiB
            try (TpCommunicator comm = TpCommunicator.create(boot, ctx, ENV, null);
                 UserBuffer ub = comm.register("p2p", 2 * n * 4);
                 FlagRegion flags = comm.flags("p2p-flags", 4);
                 CudaStream s = ctx.createStream(StreamPriority.HIGH)) {
                int peer = 1 - rank;
                for (int round = 1; round <= 3; round++) {
                    long seed = System.nanoTime();
                    float[] mine = HostTensors.random(new SplittableRandom(seed), n, DType.FP32, 1f);
                    TensorView src = new TensorView(ub.local(), 0, 1, n, n, DType.FP32);
                    TensorView dstAtPeer = new TensorView(ub.peer(peer), n * 4, 1, n, n, DType.FP32);
                    TensorView received = new TensorView(ub.local(), n * 4, 1, n, n, DType.FP32);
                    HostTensors.upload(ctx, s, mine, src);
                    s.fill32(received.address(), 0x7fc00000, n); // poison what the peer will overwrite
                    s.synchronize();
                    boot.barrier();
                    s.copy(dstAtPeer.address(), src.address(), n * 4);
                    flags.signal(s, peer, 0, round);
                    flags.await(s, 0, round);
                    comm.await(s, () -> "flag 0 >= " + "round");
                    float[] got = HostTensors.download(ctx, s, received);
                    // The peer's data: regenerate from its seed, exchanged over the bootstrap.
                    long peerSeed = java.nio.ByteBuffer.wrap(boot.allGather(
                            java.nio.ByteBuffer.allocate(8).putLong(seed).array())[peer]).getLong();
                    float[] want = HostTensors.random(new SplittableRandom(peerSeed), n, DType.FP32, 1f);
                    for (int i = 0; i < n; i++) {
                        if (want[i] != got[i]) {
                            throw new AssertionError("rank " + rank + " round " + round + " element " + i + ": "
                                    + got[i] + " != " + want[i]);
                        }
                    }
                    boot.barrier();
                }
            }
        });
    }

    @Test
    void thousandRegisterCloseCyclesDoNotGrowDeviceMemory() throws Exception {
        Gpu.assumeGpus(2);
        dev.ubuf.bench.ThreadDomain.run(2, Duration.ofSeconds(120), (rank, boot, ctx) -> {
            try (TpCommunicator comm = TpCommunicator.create(boot, ctx, ENV, null)) {
                for (int i = 0; i < 20; i++) {
                    comm.register("warm", 64L << 20).close();
                }
                long before = ctx.memoryInfo()[0];
                for (int i = 0; i < 1000; i++) {
                    try (UserBuffer ub = comm.register("cycle", 64L << 20)) {
                        assertEquals(64L << 20, ub.bytes());
                    }
                }
                long after = ctx.memoryInfo()[0];
                assertTrue(before - after < (64L << 20), "free memory fell from " + before + " to " + after);
                assertEquals(0, ctx.ledger().deviceBytes(), "no allocation outlives its buffer");
            }
        });
    }
}
