package dev.ubuf.tests;

import dev.ubuf.bench.ThreadDomain;
import dev.ubuf.comm.Bootstrap;
import dev.ubuf.comm.BufferSharing;
import dev.ubuf.comm.FlagRegion;
import dev.ubuf.comm.TpCommunicator;
import dev.ubuf.comm.UserBuffer;
import dev.ubuf.config.UbufEnvironment;
import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaDevice;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.StreamPriority;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.SplittableRandom;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * User buffers shared through VMM allocations exported as POSIX file descriptors, chosen explicitly, with two ranks
 * as threads of this JVM: a process may import its own exports, so the cross-process path runs here whole (export,
 * SCM_RIGHTS exchange, import, one mapped range per rank, peer copies and flag signals into the peer's instance).
 */
class VmmUserBufferGpuTest {
    static final UbufEnvironment ENV = new UbufEnvironment(true, Duration.ofSeconds(60), false);

    @BeforeEach
    void needsTwoGpus() {
        assumeTwoGpusWithVmmFileDescriptors();
    }

    static void assumeTwoGpusWithVmmFileDescriptors() {
        Gpu.assumeGpus(2);
        for (int d = 0; d < 2; d++) {
            CudaDevice device = CudaDevice.get(d);
            Assumptions.assumeTrue(device.supportsVmm() && device.supportsPosixFdHandles(),
                    "GPU test skipped: " + device + " lacks VMM or POSIX-file-descriptor handles");
        }
    }

    @Test
    void eachRankCopiesIntoItsPeersVmmInstanceAndThePeerChecksEveryElement() throws Exception {
        ThreadDomain.run(2, Duration.ofSeconds(60), (rank, boot, ctx) ->
                assertEquals(BufferSharing.VMM_POSIX_FD, copyToPeerAndCheck(boot, ctx, ENV, BufferSharing.VMM_POSIX_FD, 3)));
    }

    /**
     * One rank of two (a thread here, a process in {@link VmmUserBufferProcessGpuTest}): registers a user buffer with
     * {@code requested} sharing (null: automatic), then per round copies fresh random data into the peer's instance
     * on the copy engine, signals the peer's flag, waits for its own, and checks every element the peer sent.
     *
     * @return the sharing the communicator used
     */
    static BufferSharing copyToPeerAndCheck(Bootstrap boot, CudaContext ctx, UbufEnvironment env,
            BufferSharing requested, int rounds) {
        int rank = boot.rank();
        long n = 8L << 20; // 8 Mi floats, 32 MiB
        try (TpCommunicator comm = TpCommunicator.create(boot, ctx, env, requested);
             UserBuffer ub = comm.register("vmm-p2p", 2 * n * 4);
             FlagRegion flags = comm.flags("vmm-p2p-flags", 4);
             CudaStream s = ctx.createStream(StreamPriority.HIGH)) {
            assertEquals(2, comm.tp(), "this check pairs two ranks");
            assertEquals(2 * n * 4, ub.bytes());
            // One reserved range per rank under VMM: the peer's instance follows ours at the rounded stride.
            long stride = ub.peer(1).address() - ub.peer(0).address();
            assertTrue(comm.sharing() != BufferSharing.VMM_POSIX_FD || stride >= ub.bytes(),
                    "rank " + rank + ": instances overlap, stride " + stride);
            int peer = 1 - rank;
            for (int round = 1; round <= rounds; round++) {
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
                int expected = round;
                comm.await(s, () -> "flag 0 >= " + expected);
                float[] got = HostTensors.download(ctx, s, received);
                long peerSeed = ByteBuffer.wrap(boot.allGather(ByteBuffer.allocate(8).putLong(seed).array())[peer])
                        .getLong();
                float[] want = HostTensors.random(new SplittableRandom(peerSeed), n, DType.FP32, 1f);
                for (int i = 0; i < n; i++) {
                    if (Float.floatToRawIntBits(want[i]) != Float.floatToRawIntBits(got[i])) {
                        throw new AssertionError("rank " + rank + " round " + round + " element " + i + ": "
                                + got[i] + " != " + want[i] + " (seed of rank " + peer + ": " + peerSeed + ")");
                    }
                }
                boot.barrier();
            }
            return comm.sharing();
        }
    }

    @Test
    void twoHundredRegisterCloseCyclesKeepDeviceMemoryAndDescriptors() throws Exception {
        ThreadDomain.run(2, Duration.ofSeconds(120), (rank, boot, ctx) -> {
            long bytes = 64L << 20;
            try (TpCommunicator comm = TpCommunicator.create(boot, ctx, ENV, BufferSharing.VMM_POSIX_FD)) {
                for (int i = 0; i < 10; i++) {
                    comm.register("warm", bytes).close();
                }
                boot.barrier(); // both ranks have released: the peer's imports hold our memory too
                long before = ctx.memoryInfo()[0];
                long fdsBefore = openDescriptors();
                for (int i = 0; i < 200; i++) {
                    try (UserBuffer ub = comm.register("cycle", bytes)) {
                        assertEquals(bytes, ub.bytes());
                    }
                }
                boot.barrier();
                long after = ctx.memoryInfo()[0];
                long fdsAfter = openDescriptors();
                assertTrue(before - after < bytes, "rank " + rank + ": free memory fell from " + before + " to "
                        + after + " over 200 cycles");
                // Both ranks share this process's table; a leak of one per cycle would show as hundreds.
                assertTrue(fdsAfter - fdsBefore < 50, "rank " + rank + ": open descriptors grew from " + fdsBefore
                        + " to " + fdsAfter);
                assertEquals(0, ctx.ledger().deviceBytes(), "no cuMemAlloc allocation outlives its buffer");
            }
        });
    }

    @Test
    void automaticSharingStaysInProcessInOneJvm() throws Exception {
        ThreadDomain.run(2, Duration.ofSeconds(60), (rank, boot, ctx) -> {
            try (TpCommunicator comm = TpCommunicator.create(boot, ctx, ENV, null)) {
                assertEquals(BufferSharing.IN_PROCESS, comm.sharing());
            }
        });
    }

    private static long openDescriptors() throws IOException {
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            return fds.count();
        }
    }
}
