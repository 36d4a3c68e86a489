package dev.ubuf.ag;

import dev.ubuf.plan.Plan;
import dev.ubuf.plan.PlanBuilder;
import dev.ubuf.plan.PlanStep;
import dev.ubuf.plan.StreamRole;

/**
 * Ring exchange. Step i = 0..tp-1 multiplies chunk (r - i) mod tp into its output rows; for i &lt; tp-1 the comm
 * stream forwards that same chunk to rank r+1 (same rows of its UBUF) and signals it. Chunk (r - i) arrives from
 * rank r-1 as its i-th signal of the call, so GEMM i and forward i each wait for count i on the data flag: a GEMM
 * waits only for its own chunk. Step 0 reads the shard straight from INPUT, so nothing waits for the local copy
 * into UBUF, which runs on the comm stream after the forwards.
 *
 * <p>Flags of rank r: DATA (tp-1 signals per call, from r-1) and CREDIT (1 per call, from r+1: "my UBUF is free for
 * this call"), signalled at the start of every call and awaited before the first write into r+1.
 */
public final class RingAllGatherGemm implements AgOverlapMethod {
    static final int DATA = 0;
    static final int CREDIT = 1;

    /** For {@link java.util.ServiceLoader}, which makes the method through this constructor. */
    public RingAllGatherGemm() {
    }

    @Override
    public String name() {
        return "ring";
    }

    @Override
    public Plan plan(AgShape shape, int rank, AgOptions options) {
        AgLayout l = new AgLayout(shape, rank, options);
        int tp = l.tp;
        PlanBuilder b = l.builder(name());
        int comm = b.stream(StreamRole.COMM);
        int[] compute = l.computeStreams(b, tp);
        int next = l.next(1);
        int prev = l.next(-1);
        if (tp > 1) {
            b.flag(tp - 1);
            b.flag(1);
            b.add(new PlanStep.Signal(comm, prev, CREDIT));
        }
        for (int i = 0; i < tp; i++) {
            int chunk = Math.floorMod(rank - i, tp);
            int s = compute[i % compute.length];
            var source = i == 0 ? l.shard() : l.ubuf(rank, chunk, 1);
            if (i > 0) {
                b.add(new PlanStep.WaitSignal(s, DATA, i));
            }
            b.add(l.gemm(s, source, chunk, 1));
            if (i < tp - 1) {
                b.add(i == 0 ? new PlanStep.WaitSignal(comm, CREDIT, 1) : new PlanStep.WaitSignal(comm, DATA, i));
                b.add(new PlanStep.Copy(comm, source, l.ubuf(next, chunk, 1)));
                b.add(new PlanStep.Signal(comm, next, DATA));
            }
        }
        l.ownShardIntoUbuf(b, comm);
        return b.build();
    }
}
