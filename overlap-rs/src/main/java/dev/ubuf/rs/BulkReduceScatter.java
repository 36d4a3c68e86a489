package dev.ubuf.rs;

import dev.ubuf.plan.BufferRole;
import dev.ubuf.plan.Plan;
import dev.ubuf.plan.PlanBuilder;
import dev.ubuf.plan.PlanStep;
import dev.ubuf.plan.Region;
import dev.ubuf.plan.StreamRole;

import java.util.ArrayList;
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
 *
 * <p>With {@code stage=1} ({@link RsOptions#bulkStaged()}) the peers' rows are not read by the reduction kernel:
 * after the ready signals, one COMM stream per peer copies that peer's rows of this rank into a local SCRATCH slot
 * (on the copy engines when the op runs with them) and credits that peer at once; the first stream then sums its own
 * rows and the slots locally. Beside a GEMM this keeps the SMs free for the whole transfer but for a short local
 * pass, where the pull-reduce kernel holds its SMs for as long as reading over NVLink takes. With {@code serial=1}
 * as well, one stream makes the pulls one after another, each rank starting at the next peer, so that the ranks pull
 * from one peer each at a time (on 4 H100s one transfer per GPU moved more bytes per second than three at once);
 * the benchmark times it among the reduce-scatter's communication alone, so that {@code scatter:serial=1}'s ideal
 * stays a lower bound.
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
        if (options.serialPushes() && !options.bulkStaged()) {
            return Optional.of("bulk: serial=1 orders the staged pulls one after another; without stage=1 one kernel"
                    + " reads every peer at once (give stage=1,serial=1)");
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
        if (options.bulkStaged()) {
            return shape.finish(staged(b, shape, options.serialPushes()).build());
        }
        int s = b.stream(StreamRole.COMM);

        PlanParts.signalPeers(b, s, PlanParts.readyFlag(rank));
        PlanParts.waitPeers(b, s, shape, false, 1);
        PlanParts.pullReduceOwnRows(b, s, shape, 0, shape.n());
        PlanParts.signalPeers(b, s, PlanParts.creditFlag(shape, rank));
        PlanParts.waitPeers(b, s, shape, true, 1);
        return shape.finish(b.build());
    }

    /** The stage=1 steps: pulls by copies into SCRATCH, one stream per peer (or one for all), then a local sum. */
    private static PlanBuilder staged(PlanBuilder b, RsShape shape, boolean serial) {
        int tp = shape.tp();
        int rank = b.rank();
        long mc = shape.rowsPerRank();
        b.matrix(BufferRole.SCRATCH, shape.dtype(), (tp - 1) * mc, shape.n());
        int[] streams = PlanParts.peerStreams(b, serial);
        PlanParts.signalPeers(b, streams[0], PlanParts.readyFlag(rank));
        List<Region> sources = new ArrayList<>();
        sources.add(new Region(BufferRole.UBUF, rank, rank * mc, mc, 0, shape.n()));
        for (int i = 0; i < tp - 1; i++) {
            int p = (rank + 1 + i) % tp; // ranks start on different peers
            int s = streams[i];
            Region slot = new Region(BufferRole.SCRATCH, rank, i * mc, mc, 0, shape.n());
            b.add(new PlanStep.WaitSignal(s, PlanParts.readyFlag(p), 1));
            b.add(new PlanStep.Copy(s, new Region(BufferRole.UBUF, p, rank * mc, mc, 0, shape.n()), slot));
            b.add(new PlanStep.Signal(s, p, PlanParts.creditFlag(shape, rank)));
            sources.add(slot);
            b.order(s, streams[0]);
        }
        Region dst = new Region(BufferRole.OUTPUT, rank, 0, mc, 0, shape.n());
        b.add(new PlanStep.Reduce(streams[0], sources, dst, false));
        if (shape.bias()) {
            b.add(new PlanStep.AddBias(streams[0], dst));
        }
        PlanParts.waitPeers(b, streams[0], shape, true, 1);
        return b;
    }

    @Override
    public List<String> keys() {
        return List.of("stage", "serial");
    }
}
