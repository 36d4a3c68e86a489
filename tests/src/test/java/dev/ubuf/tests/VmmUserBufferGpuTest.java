package dev.ubuf.tests;

import dev.ubuf.comm.ThreadDomain;
import dev.ubuf.config.BufferSharing;
import dev.ubuf.comm.TpCommunicator;
import dev.ubuf.comm.UserBuffer;
import dev.ubuf.config.UbufEnvironment;
import dev.ubuf.cuda.CudaDevice;
import dev.ubuf.testutil.GpuAssumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
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
            GpuAssumptions.assumeGpu(device.supportsVmm() && device.supportsPosixFdHandles(),
                    device + " lacks VMM or POSIX-file-descriptor handles");
        }
    }

    @Test
    void eachRankCopiesIntoItsPeersVmmInstanceAndThePeerChecksEveryElement() throws Exception {
        ThreadDomain.run(2, Duration.ofSeconds(60), (rank, boot, ctx) ->
                assertEquals(BufferSharing.VMM_POSIX_FD, P2pScenario.copyToPeerAndCheck(boot, ctx, ENV, BufferSharing.VMM_POSIX_FD, 3)));
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
    void automaticSharingIsVmmInOneJvmWithAGpuPerRankAndInProcessOnASharedGpu() throws Exception {
        ThreadDomain.run(2, Duration.ofSeconds(60), (rank, boot, ctx) -> {
            try (TpCommunicator comm = TpCommunicator.create(boot, ctx, ENV, null)) {
                assertEquals(BufferSharing.VMM_POSIX_FD, comm.sharing());
            }
        });
        ThreadDomain.run(2, rank -> 0, Duration.ofSeconds(60), (rank, boot, ctx) -> {
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
