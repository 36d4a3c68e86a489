package dev.ubuf.ag;

import dev.ubuf.plan.Plan;
import dev.ubuf.plan.PlanBuilder;
import dev.ubuf.plan.StreamRole;

/**
 * For shapes where decomposition cannot pay (small m): push the shard to every peer as {@link BulkAllGather} does,
 * wait for all tp-1 arrivals, then one GEMM over the whole gathered buffer.
 */
public final class OneShotAllGatherGemm implements AgOverlapMethod {
    /** For {@link java.util.ServiceLoader}, which makes the method through this constructor. */
    public OneShotAllGatherGemm() {
    }

    @Override
    public String name() {
        return "oneshot";
    }

    /** One GEMM: compute streams do not matter. */
    @Override
    public java.util.List<java.util.Map<String, String>> tuningSpace(dev.ubuf.op.OverlapShape shape) {
        return shape instanceof AgShape ? java.util.List.of(java.util.Map.of()) : java.util.List.of();
    }

    @Override
    public Plan plan(AgShape shape, int rank, AgOptions options) {
        AgLayout l = new AgLayout(shape, rank, options);
        PlanBuilder b = l.builder(name());
        int[] comm = Pushes.commStreams(b, l);
        int compute = b.stream(StreamRole.COMPUTE);
        Pushes.pushToAll(b, l, comm);
        l.ownShardIntoUbuf(b, compute);
        Pushes.awaitAll(b, l, compute);
        b.add(l.gemm(compute, l.ubuf(rank, 0, l.tp), 0, l.tp));
        return b.build();
    }
}
