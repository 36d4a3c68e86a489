package dev.ubuf.rs;

import dev.ubuf.plan.BufferRole;
import dev.ubuf.plan.Plan;
import dev.ubuf.plan.PlanBuilder;
import dev.ubuf.plan.StreamRole;

import java.util.List;
import java.util.Optional;

/**
 * Bulk reduce-scatter of a partial [m, n] that the caller has already written into the user buffer (for example a
 * dgrad output), meant to run on a high-priority COMM stream beside an unrelated GEMM of the caller. The plan has
 * no GEMM, INPUT or WEIGHT; {@link RsShape#k()} is ignored.
 *
 * <p>Steps (one COMM stream): "ready" to every peer, wait for every peer's ready, pull-reduce this rank's rows
 * from all ranks into OUTPUT (+ bias), credit every peer, then wait for every peer's credit of this call. The
 * last wait is what makes the caller's next write safe: the caller fills the buffer before the next call, outside
 * the plan, so the call must not return (join its caller's stream) while a peer may still read the buffer.
 */
public final class BulkReduceScatter implements RsOverlapMethod {
    /** For {@link java.util.ServiceLoader}, which makes the method through this constructor. */
    public BulkReduceScatter() {
    }

    @Override
    public String name() {
        return "bulk";
    }

    /** Bulk only reduce-scatters: the caller's GEMM wrote the partial. */
    @Override
    public boolean hasGemm() {
        return false;
    }

    @Override
    public Optional<String> whyUnsupported(RsShape shape, RsOptions options) {
        if (shape.fp8().isPresent()) {
            return Optional.of("bulk: runs no GEMM, so fp8 operands mean nothing to it (reduce-scatter the partial in "
                    + shape.dtype().shortName() + ")");
        }
        return Optional.ofNullable(PlanParts.pullLimit(name(), shape));
    }

    @Override
    public Plan plan(RsShape shape, RsOptions options, int rank) {
        PlanParts.checkRank(shape, rank);
        PlanBuilder b = new PlanBuilder("rs", name(), rank, shape.tp());
        PlanParts.declareOutput(b, shape);
        b.matrix(BufferRole.UBUF, shape.dtype(), shape.m(), shape.n());
        PlanParts.declarePullFlags(b, 1);
        int s = b.stream(StreamRole.COMM);

        PlanParts.signalPeers(b, s, PlanParts.readyFlag(rank));
        PlanParts.waitPeers(b, s, shape, false, 1);
        PlanParts.pullReduceOwnRows(b, s, shape, 0, shape.n());
        PlanParts.signalPeers(b, s, PlanParts.creditFlag(shape, rank));
        PlanParts.waitPeers(b, s, shape, true, 1);
        return shape.finish(b.build());
    }

    @Override
    public List<String> keys() {
        return List.of();
    }
}
