package dev.ubuf.ag;

import dev.ubuf.plan.Plan;
import dev.ubuf.plan.PlanBuilder;
import dev.ubuf.plan.PlanStep;
import dev.ubuf.plan.StreamRole;

/**
 * Two rings, one each way. Each shard's rows are cut in two halves: ring A carries the first halves to r+1 as
 * {@link RingAllGatherGemm} carries whole chunks (step i multiplies the first half of chunk r-i), ring B the second
 * halves to r-1 (step i multiplies the second half of chunk r+i). So each rank sends to both neighbours at once, on
 * two copy streams and both directions of the links, each moving half the bytes a step. Step 0 multiplies the whole
 * own shard, straight from where the call finds it; the local copy into UBUF runs on ring A's comm stream last.
 *
 * <p>Flags of rank r: DATA_A (tp-1 signals per call, from r-1), CREDIT_A (1 per call, from r+1), DATA_B (tp-1,
 * from r+1), CREDIT_B (1, from r-1). A rank's credits say its UBUF is free for the call, signalled at the start of
 * every call to the rank that writes into it in that ring, and awaited before the ring's first write.
 */
public final class BidirectionalRingAllGatherGemm implements AgOverlapMethod {
    static final int DATA_A = 0;
    static final int CREDIT_A = 1;
    static final int DATA_B = 2;
    static final int CREDIT_B = 3;

    /** For {@link java.util.ServiceLoader}, which makes the method through this constructor. */
    public BidirectionalRingAllGatherGemm() {
    }

    @Override
    public String name() {
        return "bidir";
    }

    @Override
    public Plan plan(AgShape shape, int rank, AgOptions options) {
        if (shape.chunkRows() < 2) {
            throw new IllegalArgumentException("bidir cuts each shard's rows in two halves, but m/tp = "
                    + shape.chunkRows() + " (use ring)");
        }
        AgLayout l = new AgLayout(shape, rank, options);
        int tp = l.tp;
        long half = l.rows / 2;
        PlanBuilder b = l.builder(name());
        int commA = b.stream(StreamRole.COMM);
        int commB = b.stream(StreamRole.COMM);
        int[] compute = l.computeStreams(b, 2 * tp - 1);
        int next = l.next(1);
        int prev = l.next(-1);
        if (tp > 1) {
            b.flag(tp - 1);
            b.flag(1);
            b.flag(tp - 1);
            b.flag(1);
            b.add(new PlanStep.Signal(commA, prev, CREDIT_A));
            b.add(new PlanStep.Signal(commB, next, CREDIT_B));
        }
        int gemm = 0;
        for (int i = 0; i < tp; i++) {
            int chunkA = Math.floorMod(rank - i, tp);
            int chunkB = Math.floorMod(rank + i, tp);
            if (i == 0) {
                b.add(l.gemm(compute[gemm++ % compute.length], l.shard(), rank, 1));
            } else {
                int s = compute[gemm++ % compute.length];
                b.add(new PlanStep.WaitSignal(s, DATA_A, i));
                b.add(l.gemmRows(s, l.ubufRows(rank, chunkA, 0, half), chunkA, 0, half));
                s = compute[gemm++ % compute.length];
                b.add(new PlanStep.WaitSignal(s, DATA_B, i));
                b.add(l.gemmRows(s, l.ubufRows(rank, chunkB, half, l.rows - half), chunkB, half, l.rows - half));
            }
            if (i < tp - 1) {
                var sourceA = i == 0 ? l.shardRows(0, half) : l.ubufRows(rank, chunkA, 0, half);
                b.add(i == 0 ? new PlanStep.WaitSignal(commA, CREDIT_A, 1)
                        : new PlanStep.WaitSignal(commA, DATA_A, i));
                b.add(new PlanStep.Copy(commA, sourceA, l.ubufRows(next, chunkA, 0, half)));
                b.add(new PlanStep.Signal(commA, next, DATA_A));
                var sourceB = i == 0 ? l.shardRows(half, l.rows - half)
                        : l.ubufRows(rank, chunkB, half, l.rows - half);
                b.add(i == 0 ? new PlanStep.WaitSignal(commB, CREDIT_B, 1)
                        : new PlanStep.WaitSignal(commB, DATA_B, i));
                b.add(new PlanStep.Copy(commB, sourceB, l.ubufRows(prev, chunkB, half, l.rows - half)));
                b.add(new PlanStep.Signal(commB, prev, DATA_B));
            }
        }
        l.ownShardIntoUbuf(b, commA);
        return b.build();
    }
}
