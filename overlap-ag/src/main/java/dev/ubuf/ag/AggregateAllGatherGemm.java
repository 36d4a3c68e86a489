package dev.ubuf.ag;

import dev.ubuf.plan.Plan;
import dev.ubuf.plan.PlanBuilder;
import dev.ubuf.plan.PlanStep;
import dev.ubuf.plan.StreamRole;

/**
 * Aggregated ring (even tp). Ranks 2p and 2p+1 are partners; block p = chunks 2p and 2p+1. First the partners swap
 * their shards (GEMM on the own chunk meanwhile, then on the partner's once it arrived), so each rank holds its
 * block. Then the even ranks and the odd ranks each run a ring of tp/2 members with neighbours r+2 and r-2: in
 * tp/2 - 1 steps, each forwards the 2-chunk block it has just used to r+2 and multiplies the block from r-2.
 * Half the ring steps of {@link RingAllGatherGemm}, each moving and multiplying twice as much.
 *
 * <p>Flags of rank r: PAIR (1 per call, from the partner), PAIR_CREDIT (1, from the partner), and with tp &gt; 2
 * RING (tp/2 - 1, from r-2) and RING_CREDIT (1, from r+2). Credits are signalled at the start of every call.
 */
public final class AggregateAllGatherGemm implements AgOverlapMethod {
    static final int PAIR = 0;
    static final int PAIR_CREDIT = 1;
    static final int RING = 2;
    static final int RING_CREDIT = 3;

    /** For {@link java.util.ServiceLoader}, which makes the method through this constructor. */
    public AggregateAllGatherGemm() {
    }

    @Override
    public String name() {
        return "aggregate";
    }

    @Override
    public Plan plan(AgShape shape, int rank, AgOptions options) {
        if (shape.tp() % 2 != 0) {
            throw new IllegalArgumentException("aggregate pairs ranks and needs an even tp, got tp = " + shape.tp()
                    + " (use ring)");
        }
        AgLayout l = new AgLayout(shape, rank, options);
        int blocks = l.tp / 2;
        int block = rank / 2;
        int partner = rank ^ 1;
        int next = l.next(2);
        int prev = l.next(-2);
        PlanBuilder b = l.builder(name());
        int comm = b.stream(StreamRole.COMM);
        int[] compute = l.computeStreams(b, blocks + 1);
        b.flag(1);
        b.flag(1);
        b.add(new PlanStep.Signal(comm, partner, PAIR_CREDIT));
        if (blocks > 1) {
            b.flag(blocks - 1);
            b.flag(1);
            b.add(new PlanStep.Signal(comm, prev, RING_CREDIT));
        }
        b.add(l.gemm(compute[0], l.shard(), rank, 1));
        b.add(new PlanStep.WaitSignal(comm, PAIR_CREDIT, 1));
        b.add(new PlanStep.Copy(comm, l.shard(), l.ubuf(partner, rank, 1)));
        b.add(new PlanStep.Signal(comm, partner, PAIR));
        l.ownShardIntoUbuf(b, comm);
        int s = compute[1 % compute.length];
        b.add(new PlanStep.WaitSignal(s, PAIR, 1));
        b.add(l.gemm(s, l.ubuf(rank, partner, 1), partner, 1));
        for (int j = 0; j < blocks; j++) {
            int blk = Math.floorMod(block - j, blocks);
            if (j > 0) {
                s = compute[(j + 1) % compute.length];
                b.add(new PlanStep.WaitSignal(s, RING, j));
                b.add(l.gemm(s, l.ubuf(rank, 2 * blk, 2), 2 * blk, 2));
            }
            if (j < blocks - 1) {
                if (j == 0) {
                    b.add(new PlanStep.WaitSignal(comm, RING_CREDIT, 1));
                    b.add(new PlanStep.WaitSignal(comm, PAIR, 1));
                } else {
                    b.add(new PlanStep.WaitSignal(comm, RING, j));
                }
                b.add(new PlanStep.Copy(comm, l.ubuf(rank, 2 * blk, 2), l.ubuf(next, 2 * blk, 2)));
                b.add(new PlanStep.Signal(comm, next, RING));
            }
        }
        return b.build();
    }
}
