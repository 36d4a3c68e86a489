package dev.ubuf.tests;

import dev.ubuf.bootstrap.Bootstrap;
import dev.ubuf.config.UbufEnvironment;
import dev.ubuf.cuda.CudaContext;

import java.util.Arrays;
import java.util.List;
import java.util.stream.IntStream;

/**
 * CPU only, for the process harness itself: every rank gathers every rank's number over the bootstrap and prints
 * what it sees (ranks, UB_SKIPMC, UB_TIMEOUT); with {@code lastRankFails} the last rank then fails on purpose.
 */
record HandshakeScenario(boolean lastRankFails) implements RankScenario {
    static final String NAME = "handshake";
    static final String FAILURE_TEXT = "fails on purpose";

    static HandshakeScenario parse(List<String> params) {
        return new HandshakeScenario(ScenarioArgs.of(NAME, List.of("lastRankFails"), params).bool(0));
    }

    @Override
    public List<String> toArgs() {
        return List.of(NAME, Boolean.toString(lastRankFails));
    }

    @Override
    public boolean needsGpu() {
        return false;
    }

    @Override
    public void run(int rank, Bootstrap boot, CudaContext ctx, UbufEnvironment env) {
        int[] gathered = Arrays.stream(boot.allGather(new byte[]{(byte) rank})).mapToInt(b -> b[0]).toArray();
        if (!Arrays.equals(gathered, IntStream.range(0, boot.size()).toArray())) {
            throw new AssertionError("rank " + rank + " gathered " + Arrays.toString(gathered));
        }
        System.out.println("handshake: rank " + rank + " of " + boot.size() + " gathered " + Arrays.toString(gathered)
                + ", skipMulticast=" + env.skipMulticast() + ", timeout=" + env.timeout().toSeconds() + " s");
        if (lastRankFails && rank == boot.size() - 1) {
            throw new AssertionError("rank " + rank + " " + FAILURE_TEXT);
        }
    }
}
