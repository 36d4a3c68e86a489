package dev.ubuf.ag;

import dev.ubuf.op.OverlapShape;
import dev.ubuf.plan.Plan;
import dev.ubuf.plan.PlanBuilder;
import dev.ubuf.plan.PlanStep;

import java.util.List;
import java.util.Map;

/**
 * Every rank pushes its shard straight to every peer (r+1 first, then r+2, ...; nothing is forwarded) while its
 * GEMMs run chunk by chunk: its own chunk first, then chunk r-d as soon as the push from rank r-d has landed
 * (d = 1..tp-1, the order in which they arrive when every rank pushes in the same order).
 *
 * <p>Why beside the ring: a ring forwards each chunk one hop a step, and under CUDA graphs every hop is a wait kernel,
 * a copy and a signal kernel in a row, so at tp 4 a hop outlasts a chunk GEMM and the GEMMs wait (8B fc2 dgrad in FP8
 * on 4 H200s: 2048-row GEMMs of 52 us, hops of 55-65 us). Here chunk r-d arrives after d pushes on one copy stream
 * ({@code ms=1}: every rank sends to one peer at a time, the sends forming a permutation) or after all of them
 * sharing the links ({@code ms=tp-1}). At tp 2 it is the ring (one peer, no forwarding either way).
 *
 * <p>Flags and credits are those of {@link Pushes}: a rank hands out its credits at the start of a call and a push
 * waits for its target's credit, so no peer overwrites a gathered buffer still in use.
 */
public final class FanOutAllGatherGemm implements AgOverlapMethod {
    /** For {@link java.util.ServiceLoader}, which makes the method through this constructor. */
    public FanOutAllGatherGemm() {
    }

    @Override
    public String name() {
        return "fanout";
    }

    /**
     * Named only. Timed as graph replays, as the layers run their ops, on 4 H200s (8B FP8, 2026-11-28) its best
     * variant ran 6% behind the fastest candidate for fc1 (0.3965 ms against aggregate's 0.3743) and 10% for fc2's
     * dgrad (0.2218 against ring:cs=2's 0.2020), and pushes to the three peers at once ({@code ms=3}) 15-46% behind:
     * pushes one after another, each a wait kernel, a copy and a signal kernel, take about as long as a ring's hops.
     */
    @Override
    public List<Map<String, String>> tuningSpace(OverlapShape shape) {
        return List.of();
    }

    @Override
    public Plan plan(AgShape shape, int rank, AgOptions options) {
        AgLayout l = new AgLayout(shape, rank, options);
        PlanBuilder b = l.builder(name());
        int[] comm = Pushes.commStreams(b, l);
        int[] compute = l.computeStreams(b, l.tp);
        Pushes.pushToAll(b, l, comm);
        b.add(l.gemm(compute[0], l.shard(), rank, 1));
        for (int d = 1; d < l.tp; d++) {
            int owner = l.next(-d);
            int s = compute[d % compute.length];
            b.add(new PlanStep.WaitSignal(s, Pushes.data(d), 1));
            b.add(l.gemm(s, l.ubuf(rank, owner, 1), owner, 1));
        }
        l.ownShardIntoUbuf(b, comm[0]);
        return b.build();
    }
}
