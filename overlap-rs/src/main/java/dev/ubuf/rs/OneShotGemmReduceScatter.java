package dev.ubuf.rs;

import dev.ubuf.plan.BufferRole;
import dev.ubuf.plan.Plan;
import dev.ubuf.plan.PlanBuilder;
import dev.ubuf.plan.PlanStep;
import dev.ubuf.plan.Region;
import dev.ubuf.plan.StreamRole;

import java.util.List;
import java.util.Optional;

/**
 * One-shot GEMM→ReduceScatter for small m, where splitting cannot pay: one GEMM X·W into the user buffer [m, n],
 * "ready" to every peer, then one pull-reduce of this rank's rows from all ranks into OUTPUT (+ bias), then a
 * credit to every peer. The next call's GEMM first waits for all credits of this call. One COMPUTE stream.
 */
public final class OneShotGemmReduceScatter implements RsOverlapMethod {
    /** For {@link java.util.ServiceLoader}, which makes the method through this constructor. */
    public OneShotGemmReduceScatter() {
    }

    @Override
    public String name() {
        return "oneshot";
    }

    @Override
    public Optional<String> whyUnsupported(RsShape shape, RsOptions options) {
        return Optional.ofNullable(PlanParts.pullLimit(name(), shape));
    }

    @Override
    public Plan plan(RsShape shape, RsOptions options, int rank) {
        PlanParts.checkRank(shape, rank);
        PlanBuilder b = new PlanBuilder("rs", name(), rank, shape.tp());
        PlanParts.declareOperands(b, shape);
        PlanParts.declareOutput(b, shape);
        b.matrix(BufferRole.UBUF, shape.dtype(), shape.m(), shape.n());
        PlanParts.declarePullFlags(b, 1);
        int s = b.stream(StreamRole.COMPUTE);

        PlanParts.waitPeers(b, s, shape, true, 0);
        b.add(PlanParts.gemm(shape, s,
                Region.rows(BufferRole.INPUT, rank, 0, shape.m(), shape.k()),
                Region.rows(BufferRole.WEIGHT, rank, 0, shape.k(), shape.n()),
                Region.rows(BufferRole.UBUF, rank, 0, shape.m(), shape.n()), false));
        PlanParts.signalPeers(b, s, PlanParts.readyFlag(rank));
        PlanParts.waitPeers(b, s, shape, false, 1);
        PlanParts.pullReduceOwnRows(b, s, shape, 0, shape.n());
        PlanParts.signalPeers(b, s, PlanParts.creditFlag(shape, rank));
        return shape.finish(b.build());
    }

    @Override
    public List<String> keys() {
        return List.of();
    }
}
