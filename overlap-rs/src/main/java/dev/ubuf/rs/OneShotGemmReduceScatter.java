package dev.ubuf.rs;

import dev.ubuf.exec.ExecutionSettings;
import java.util.Map;
import java.util.List;
import java.util.ArrayList;
import dev.ubuf.op.OverlapShape;
import dev.ubuf.plan.BufferRole;
import dev.ubuf.plan.Plan;
import dev.ubuf.plan.PlanBuilder;
import dev.ubuf.plan.PlanStep;
import dev.ubuf.plan.Region;
import dev.ubuf.plan.StreamRole;

import java.util.Objects;

/**
 * One-shot GEMM→ReduceScatter for small m, where splitting cannot pay: one GEMM X·W into the user buffer [m, n],
 * "ready" to every peer, then one pull-reduce of this rank's rows from all ranks into OUTPUT (+ bias), then a
 * credit to every peer. The next call's GEMM first waits for all credits of this call. One COMPUTE stream.
 */
public record OneShotGemmReduceScatter(RsShape shape, RsOptions options) implements RsSchedule {

    public OneShotGemmReduceScatter {
        Objects.requireNonNull(shape, "shape");
        Objects.requireNonNull(options, "options");
        PlanParts.requireSupported(RsMethod.ONESHOT, shape, options);
    }

    @Override
    public RsMethod method() {
        return RsMethod.ONESHOT;
    }

    @Override
    public Plan plan(int rank) {
        PlanParts.checkRank(shape, rank);
        PlanBuilder b = new PlanBuilder("rs", method().shortName(), rank, shape.tp());
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

    /** The registered {@link dev.ubuf.op.OverlapMethod}: compiles this schedule for a shape. */
    public static final class Method implements RsOverlapMethod {
        /** For {@link java.util.ServiceLoader}, which makes the method through this constructor. */
        public Method() {
        }

        @Override
        public RsMethod kind() {
            return RsMethod.ONESHOT;
        }

        @Override
        public List<String> keys() {
            return List.of();
        }
    }
}
