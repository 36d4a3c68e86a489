package dev.ubuf.ag;

import dev.ubuf.plan.Plan;
import dev.ubuf.plan.PlanBuilder;
import dev.ubuf.plan.PlanStep;
import dev.ubuf.plan.StreamRole;

/**
 * The gather alone, on comm streams (the caller runs an unrelated GEMM meanwhile, e.g. dgrad while the LN output is
 * gathered for wgrad). Each rank pushes its shard into chunk {@code rank} of every peer's UBUF, starting with r+1 so
 * that the ranks push to different peers at once, and the call ends when all tp-1 peers' shards have arrived.
 */
public final class BulkAllGather implements AgOverlapMethod {
    /** For {@link java.util.ServiceLoader}, which makes the method through this constructor. */
    public BulkAllGather() {
    }

    @Override
    public String name() {
        return "bulk";
    }

    /** Bulk only gathers: the caller runs its own GEMM beside it. */
    @Override
    public boolean hasGemm() {
        return false;
    }

    @Override
    public Plan plan(AgShape shape, int rank, AgOptions options) {
        AgLayout l = new AgLayout(shape, rank, options);
        PlanBuilder b = l.builder(name());
        int[] comm = Pushes.commStreams(b, l);
        Pushes.pushToAll(b, l, comm);
        l.ownShardIntoUbuf(b, comm[0]);
        Pushes.awaitAll(b, l, comm[0]);
        return b.build();
    }
}
