package dev.ubuf.ag;

import dev.ubuf.plan.Plan;
import dev.ubuf.plan.PlanBuilder;
import dev.ubuf.plan.StreamRole;

/**
 * For shapes where decomposition cannot pay (small m): push the shard to every peer as {@link BulkAllGather} does,
 * wait for all tp-1 arrivals, then one GEMM over the whole gathered buffer.
 */
final class OneShotAllGatherGemm implements AgSchedule {
    @Override
    public AgMethod method() {
        return AgMethod.ONESHOT;
    }

    @Override
    public Plan plan(AgShape shape, int rank, AgOptions options) {
        AgLayout l = new AgLayout(shape, rank, options);
        PlanBuilder b = l.builder(method());
        int[] comm = Pushes.commStreams(b, l);
        int compute = b.stream(StreamRole.COMPUTE);
        Pushes.pushToAll(b, l, comm);
        l.ownShardIntoUbuf(b, compute);
        Pushes.awaitAll(b, l, compute);
        b.add(l.gemm(compute, l.ubuf(rank, 0, l.tp), 0, l.tp));
        return b.build();
    }
}
