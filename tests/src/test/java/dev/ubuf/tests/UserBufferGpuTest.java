package dev.ubuf.tests;

import dev.ubuf.comm.ThreadDomain;
import dev.ubuf.config.UbufEnvironment;
import org.junit.jupiter.api.Test;

import java.time.Duration;

/**
 * User buffers across two GPUs in one JVM (a thread per rank), shared in process (plain allocations, peer access;
 * named here, since the automatic choice on GPUs with VMM handles is VMM): peer copies on the copy engine ordered by
 * flag signals, and register/close cycles. The bodies are {@link P2pScenario} and {@link RegisterCyclesScenario},
 * which {@link ProcessModeGpuTest} also runs with one JVM per rank (VMM handles).
 */
class UserBufferGpuTest {
    static final UbufEnvironment ENV = new UbufEnvironment(true, Duration.ofSeconds(60), false, true, null, null,
            dev.ubuf.config.BufferSharing.IN_PROCESS);

    @Test
    void eachRankCopiesIntoItsPeerAndSignalsThePeerChecksEveryElement() throws Exception {
        Gpu.assumeGpus(2);
        RankScenario scenario = new P2pScenario();
        ThreadDomain.run(2, Duration.ofSeconds(60), (rank, boot, ctx) -> scenario.run(rank, boot, ctx, ENV));
    }

    @Test
    void thousandRegisterCloseCyclesDoNotGrowDeviceMemory() throws Exception {
        Gpu.assumeGpus(2);
        RankScenario scenario = new RegisterCyclesScenario(1000);
        ThreadDomain.run(2, Duration.ofSeconds(120), (rank, boot, ctx) -> scenario.run(rank, boot, ctx, ENV));
    }
}
