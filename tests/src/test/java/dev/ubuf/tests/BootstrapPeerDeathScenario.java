package dev.ubuf.tests;

import dev.ubuf.bootstrap.Bootstrap;
import dev.ubuf.bootstrap.BootstrapException;
import dev.ubuf.bootstrap.PeerLostException;
import dev.ubuf.config.UbufEnvironment;
import dev.ubuf.cuda.CudaContext;

import java.util.List;
import java.util.Optional;

/**
 * CPU only, for the process harness itself: {@link PeerDeathScenario} without the GPU. After a barrier rank 1 halts;
 * rank 0 polls {@link Bootstrap#knownFailure()} (what the device waits poll) until it names rank 1 as lost, then
 * throws {@link PeerDeathDetected}; it fails if nothing is known by UB_TIMEOUT.
 */
record BootstrapPeerDeathScenario() implements RankScenario {
    static final String NAME = "kill-bootstrap";

    static BootstrapPeerDeathScenario parse(List<String> params) {
        ScenarioArgs.of(NAME, List.of(), params);
        return new BootstrapPeerDeathScenario();
    }

    @Override
    public List<String> toArgs() {
        return List.of(NAME);
    }

    @Override
    public boolean needsGpu() {
        return false;
    }

    @Override
    public void run(int rank, Bootstrap boot, CudaContext ctx, UbufEnvironment env) throws InterruptedException {
        PeerDeathDetected.requireOneProcessPerRank(boot, NAME);
        boot.barrier();
        if (rank == 1) {
            PeerDeathDetected.haltDyingRank("rank 1: halting without closing anything");
            return; // not reached
        }
        long deadline = System.nanoTime() + env.timeout().toNanos();
        while (System.nanoTime() - deadline < 0) {
            Optional<BootstrapException> failure = boot.knownFailure();
            if (failure.isPresent()) {
                if (failure.get() instanceof PeerLostException lost && lost.lostRank() == 1) {
                    throw new PeerDeathDetected(lost);
                }
                throw new AssertionError("rank 0 sees a failure that is not rank 1's loss: " + failure.get(),
                        failure.get());
            }
            Thread.sleep(50);
        }
        throw new AssertionError("rank 0 knew of no failure " + env.timeout().toSeconds() + " s after rank 1 halted");
    }
}
