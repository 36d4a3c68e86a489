package dev.ubuf.rs;

import dev.ubuf.exec.ExecutionSettings;
import java.util.Map;
import java.util.List;
import java.util.ArrayList;
import dev.ubuf.op.OverlapShape;
import dev.ubuf.plan.BufferRole;
import dev.ubuf.plan.Plan;
import dev.ubuf.plan.PlanBuilder;
import dev.ubuf.plan.StreamRole;

import java.util.Objects;

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
public record BulkReduceScatter(RsShape shape, RsOptions options) implements RsSchedule {

    public BulkReduceScatter {
        Objects.requireNonNull(shape, "shape");
        Objects.requireNonNull(options, "options");
        PlanParts.requireSupported(RsMethod.BULK, shape, options);
    }

    @Override
    public RsMethod method() {
        return RsMethod.BULK;
    }

    @Override
    public Plan plan(int rank) {
        PlanParts.checkRank(shape, rank);
        PlanBuilder b = new PlanBuilder("rs", method().shortName(), rank, shape.tp());
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

    /** The registered {@link dev.ubuf.op.OverlapMethod}: compiles this schedule for a shape. */
    public static final class Method implements RsOverlapMethod {
        /** For {@link java.util.ServiceLoader}, which makes the method through this constructor. */
        public Method() {
        }

        @Override
        public RsMethod kind() {
            return RsMethod.BULK;
        }

        @Override
        public List<String> keys() {
            return List.of();
        }
    }
}
