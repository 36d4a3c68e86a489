package dev.ubuf.tests;

import dev.ubuf.comm.Bootstrap;
import dev.ubuf.comm.BufferSharing;
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
        long n = 8L << 20; // 8 Mi floats, 32 MiB
        try (TpCommunicator comm = TpCommunicator.create(boot, ctx, env, sharing);
             UserBuffer ub = comm.register("p2p", 2 * n * 4);
             FlagRegion flags = comm.flags("p2p-flags", 4);
             CudaStream s = ctx.createStream(StreamPriority.HIGH)) {
            if (sharing != null && comm.sharing() != sharing) {
                throw new AssertionError("asked for " + sharing + ", got " + comm.sharing());
            }
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
                int awaited = round;
                comm.await(s, () -> "flag 0 >= " + awaited + " (signalled by rank " + peer + " after its copy)");
                float[] got = HostTensors.download(ctx, s, received);
                // The peer's data: regenerate from its seed, exchanged over the bootstrap.
                long peerSeed = ByteBuffer.wrap(boot.allGather(ByteBuffer.allocate(8).putLong(seed).array())[peer])
                        .getLong();
                float[] want = HostTensors.random(new SplittableRandom(peerSeed), n, DType.FP32, 1f);
                for (int i = 0; i < n; i++) {
                    if (want[i] != got[i]) {
                        throw new AssertionError("rank " + rank + " round " + round + " element " + i + ": "
                                + got[i] + " != " + want[i] + " (peer seed " + peerSeed + ")");
                    }
                }
                boot.barrier();
            }
        }
    }
}
