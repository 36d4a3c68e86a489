package dev.ubuf.tests;

import dev.ubuf.bootstrap.Bootstrap;
import dev.ubuf.bootstrap.PeerLostException;
import dev.ubuf.comm.FlagRegion;
import dev.ubuf.comm.PeerFailedException;
import dev.ubuf.comm.TpCommunicator;
import dev.ubuf.comm.UbufTimeoutException;
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
 * A rank dies in the middle of a job and the survivor must notice by itself, with an error naming the dead rank,
 * instead of waiting forever on a flag. Process mode only (2 ranks).
 *
 * <p>Both ranks register a user buffer and a flag. Rank 1 sends {@code rounds} rounds (copy fresh random data into
 * rank 0's buffer, then signal rank 0's flag with the round number); rank 0 waits for each round's flag and checks
 * every element. After a barrier, rank 1 halts (exit {@value PeerDeathDetected#DYING_RANK_EXIT_CODE}) without
 * closing anything, and rank 0 waits for round {@code rounds + 1}, which never comes. That wait must end with
 * {@link PeerFailedException} (the bootstrap saw rank 1's connection drop; the cause names rank 1) or, at worst,
 * {@link UbufTimeoutException} at UB_TIMEOUT naming rank 1; then rank 0 throws {@link PeerDeathDetected}.
 *
 * <p>Nothing is closed on either rank: rank 1 dies holding its resources, and rank 0 ends with a stream blocked on a
 * flag nobody will write, behind which a free or a context release could wait forever. The process exit releases
 * everything.
 */
record PeerDeathScenario(int rounds) implements RankScenario {
    static final String NAME = "kill";
    private static final long FLOATS_PER_ROUND = 1L << 20; // 4 MiB

    PeerDeathScenario {
        if (rounds <= 0) {
            throw new IllegalArgumentException("rounds must be positive, got " + rounds);
        }
    }

    static PeerDeathScenario parse(List<String> params) {
        return new PeerDeathScenario(ScenarioArgs.of(NAME, List.of("rounds"), params).positiveInt(0));
    }

    @Override
    public List<String> toArgs() {
        return List.of(NAME, Integer.toString(rounds));
    }

    @Override
    public void run(int rank, Bootstrap boot, CudaContext ctx, UbufEnvironment env) {
        PeerDeathDetected.requireOneProcessPerRank(boot, NAME);
        long n = FLOATS_PER_ROUND;
        TpCommunicator comm = TpCommunicator.create(boot, ctx, env, null);
        UserBuffer ub = comm.register("kill-data", rounds * n * 4); // one slot per round: nothing is overwritten
        FlagRegion flags = comm.flags("kill-flags", 1);
        CudaStream s = ctx.createStream(StreamPriority.HIGH);
        long seed = System.nanoTime();
        long senderSeed = ByteBuffer.wrap(boot.allGather(ByteBuffer.allocate(8).putLong(seed).array())[1]).getLong();
        if (rank == 0) {
            s.fill32(ub.local().address(), 0x7fc00000, rounds * n); // poison every slot rank 1 will fill
            s.synchronize();
        }
        boot.barrier();
        if (rank == 1) {
            for (int round = 1; round <= rounds; round++) {
                TensorView slot = slot(ub, round);
                HostTensors.upload(ctx, s, roundData(senderSeed, round), slot);
                s.copy(ub.peer(0).address() + slot.byteOffset(), slot.address(), n * 4);
                flags.signal(s, 0, 0, round);
            }
            s.synchronize();
            boot.barrier(); // rank 0 has checked every round
            PeerDeathDetected.haltDyingRank("rank 1: sent " + rounds + " rounds; halting without closing anything");
            return; // not reached
        }
        for (int round = 1; round <= rounds; round++) {
            flags.await(s, 0, round);
            int awaited = round;
            comm.await(s, () -> "flag 0 >= " + awaited + ", which rank 1 signals after its copy of round " + awaited);
            float[] got = HostTensors.download(ctx, s, slot(ub, round));
            float[] want = roundData(senderSeed, round);
            for (int i = 0; i < n; i++) {
                if (want[i] != got[i]) {
                    throw new AssertionError("rank 0 round " + round + " element " + i + ": " + got[i] + " != "
                            + want[i] + " (rank 1's seed " + senderSeed + ")");
                }
            }
        }
        boot.barrier(); // lets rank 1 die
        int next = rounds + 1;
        try {
            flags.await(s, 0, next);
            comm.await(s, () -> "flag 0 >= " + next + ", which rank 1 would signal after a round it never sends");
        } catch (PeerFailedException e) {
            if (e.getCause() instanceof PeerLostException lost && lost.lostRank() == 1) {
                throw new PeerDeathDetected(e);
            }
            throw new AssertionError("rank 0 stopped waiting, but not because rank 1 was lost: " + e.getMessage(), e);
        } catch (UbufTimeoutException e) {
            if (e.getMessage().contains("rank 1")) {
                throw new PeerDeathDetected(e);
            }
            throw new AssertionError("rank 0 timed out with a message that does not name rank 1: " + e.getMessage(),
                    e);
        }
        throw new AssertionError("rank 0's wait for flag 0 >= " + next + " returned, but rank 1 never signalled it");
    }

    private TensorView slot(UserBuffer ub, int round) {
        return new TensorView(ub.local(), (round - 1) * FLOATS_PER_ROUND * 4, 1, FLOATS_PER_ROUND, FLOATS_PER_ROUND,
                DType.FP32);
    }

    private static float[] roundData(long seed, int round) {
        return HostTensors.random(new SplittableRandom(seed + round), FLOATS_PER_ROUND, DType.FP32, 1f);
    }
}
