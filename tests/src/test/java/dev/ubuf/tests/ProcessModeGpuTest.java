package dev.ubuf.tests;

import static dev.ubuf.op.Collective.ALL_GATHER;
import static dev.ubuf.op.Collective.REDUCE_SCATTER;

import dev.ubuf.tensor.DType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.time.Duration;
import java.util.List;
import java.util.Map;


/**
 * The thread-mode GPU tests' bodies ({@link RankScenario}s) with one JVM per GPU: two ranks started by the launcher
 * ({@code ubuf-launch --nproc-per-node 2}), TCP bootstrap, user buffers shared across processes (legacy CUDA IPC,
 * chosen automatically). Each job must exit 0; a failure shows every rank's output.
 *
 * <p>And the liveness of a broken job: a rank dies mid-job and the survivor reports it by itself, naming the dead
 * rank, instead of hanging.
 */
class ProcessModeGpuTest {
    private static final int TP = 2;
    /** UB_TIMEOUT of the ranks: the deadline of every bootstrap operation and of every wait on a peer. */
    private static final Duration UB_TIMEOUT = Duration.ofSeconds(60);
    /** Hang guard of a whole job (JVM starts, CUDA and NCCL setup, three checked calls); not a timing assertion. */
    private static final Duration JOB_GUARD = Duration.ofMinutes(5);

    static List<OverlapScenario> overlapCases() {
        return List.of(
                new OverlapScenario(ALL_GATHER, "ring", DType.BF16, 2000, 512, 384, true, false, false),
                new OverlapScenario(ALL_GATHER, "aggregate", DType.FP16, 2000, 512, 384, true, false, false),
                new OverlapScenario(ALL_GATHER, "oneshot", DType.FP32, 2000, 512, 384, true, false, false),
                new OverlapScenario(ALL_GATHER, "ring", DType.BF16, 1024, 256, 640, false, false, false), // SM copies
                new OverlapScenario(ALL_GATHER, "aggregate", DType.BF16, 6, 128, 136, true, true, false), // tiny, W^T
                new OverlapScenario(ALL_GATHER, "auto", DType.BF16, 4096, 1024, 512, true, false, false),
                new OverlapScenario(REDUCE_SCATTER, "ring", DType.BF16, 2000, 384, 512, true, false, true),
                new OverlapScenario(REDUCE_SCATTER, "pipeline", DType.FP16, 2000, 384, 512, true, false, true),
                new OverlapScenario(REDUCE_SCATTER, "oneshot", DType.FP32, 2000, 384, 512, true, false, true),
                new OverlapScenario(REDUCE_SCATTER, "pipeline", DType.BF16, 1024, 640, 256, false, true, false),
                new OverlapScenario(REDUCE_SCATTER, "ring:sub=2,lowp=1", DType.BF16, 6, 136, 128, true, true, true),
                new OverlapScenario(REDUCE_SCATTER, "auto", DType.BF16, 4096, 1024, 512, true, false, false));
    }

    private static void assertJobPasses(RankScenario scenario) throws InterruptedException {
        Gpu.assumeGpus(TP);
        ProcessRanks.launch(TP, UB_TIMEOUT, scenario, JOB_GUARD).assertEveryRankPassed(scenario, TP);
    }

    @Test
    void eachProcessCopiesIntoItsPeerAndSignalsThePeerChecksEveryElement() throws InterruptedException {
        assertJobPasses(new P2pScenario());
    }

    /** Legacy CUDA IPC handles, the fallback where VMM or POSIX-FD handles are unsupported, asked for explicitly. */
    @Test
    void legacyIpcSharingAcrossProcessesCopiesAndSignalsCorrectly() throws InterruptedException {
        Gpu.assumeGpus(2);
        assertJobPasses(new P2pScenario(dev.ubuf.config.BufferSharing.LEGACY_IPC));
    }

    @Test
    void thousandRegisterCloseCyclesAcrossProcessesDoNotGrowDeviceMemory() throws InterruptedException {
        assertJobPasses(new RegisterCyclesScenario(1000));
    }

    /** A whole LayerNormMLP (overlapped vs NCCL, forward and backward) with one JVM per rank. */
    @Test
    void layerNormMlpAcrossProcessesMatchesItsUnoverlappedTwin() throws InterruptedException {
        assertJobPasses(new LayerScenario(LayerScenario.Block.MLP_SWIGLU, "te", DType.BF16, 512, 1024, 1024));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("overlapCases")
    void overlappedOpsAcrossProcessesMatchTheNcclReference(OverlapScenario scenario) throws InterruptedException {
        assertJobPasses(scenario);
    }

    /**
     * Rank 1 halts mid-job; rank 0, blocked on a flag only rank 1 would write, must stop by itself with an error that
     * names rank 1 (at once through the bootstrap, at the latest at UB_TIMEOUT = 20 s), and everything must be over
     * well within the 60 s hang guard.
     *
     * <p>The ranks are plain processes, not a launcher job: the launcher stops every rank as soon as one fails, so it
     * would kill rank 0 before it could show that it notices the death itself.
     */
    @Test
    void whenARankDiesTheSurvivorReportsItNamingTheDeadRankInsteadOfHanging() throws InterruptedException {
        Gpu.assumeGpus(TP);
        ProcessRanks.UnsupervisedResult result = ProcessRanks.runUnsupervised(TP,
                Map.of("UB_SKIPMC", "1", "UB_TIMEOUT", "20"), new PeerDeathScenario(3), Duration.ofSeconds(60));
        ProcessRanks.assertSurvivorReportedTheDeath(result);
    }
}
