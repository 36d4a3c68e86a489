package dev.ubuf.tests;

import dev.ubuf.bootstrap.Bootstrap;
import dev.ubuf.config.BufferSharing;
import dev.ubuf.comm.FlagRegion;
import dev.ubuf.comm.TpCommunicator;
import dev.ubuf.comm.UserBuffer;
import dev.ubuf.config.UbufEnvironment;
import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.StreamPriority;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Two ranks: each copies fresh random data into its peer's user buffer on the copy engine and signals the peer's flag;
 * each waits for its own flag and checks every element it received (the poisoned slot must be fully overwritten).
 * Three rounds, so flag values move on. {@code sharing} forces how the buffers are shared (null: automatic).
 */
record P2pScenario(BufferSharing sharing) implements RankScenario {
    static final String NAME = "p2p";

    P2pScenario() {
        this(null);
    }

    static P2pScenario parse(List<String> params) {
        if (params.isEmpty()) {
            return new P2pScenario();
        }
        ScenarioArgs a = ScenarioArgs.of(NAME, List.of("sharing"), params);
        return new P2pScenario(a.constant(0, BufferSharing.class));
    }

    @Override
    public List<String> toArgs() {
        return sharing == null ? List.of(NAME) : List.of(NAME, sharing.name());
    }

    @Override
    public void run(int rank, Bootstrap boot, CudaContext ctx, UbufEnvironment env) {
        BufferSharing used = copyToPeerAndCheck(boot, ctx, env, sharing, 3);
        if (sharing != null && used != sharing) {
            throw new AssertionError("asked for " + sharing + ", got " + used);
        }
    }

    /**
     * One rank of two (a thread or a process): registers a user buffer with
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
}
