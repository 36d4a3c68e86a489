package dev.ubuf.rs;

import dev.ubuf.plan.HostPlanExecutor;
import dev.ubuf.plan.Plan;
import dev.ubuf.tensor.DType;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Every RS method, for tp = 2, 3, 4, 8, several shapes (rows per rank not a power of two among them), with and
 * without bias and several option sets: all ranks' plans run on the host executor in many random interleavings,
 * 3 consecutive calls with fresh inputs each, race detection on, and every OUTPUT must equal the float64
 * reference exactly. Seeds start at System.nanoTime() (or -Drs.seed=...) and are printed on failure.
 */
class RsPlansHostTest {
    private static final int SEEDS = 50;
    private static final long SEED_BASE = Long.getLong("rs.seed", System.nanoTime());

    record Case(RsOverlapMethod method, RsShape shape, RsOptions options) {
        @Override
        public String toString() {
            String opts = switch (method) {
                case RingExchangeGemmReduceScatter _ -> "subChunks=" + options.ringSubChunks() + " slots="
                        + options.ringSlots() + " streams=" + options.computeStreams() + " partials="
                        + options.ringPartialDtype().shortName() + (options.ringBidirectional() ? " bidir" : "")
                        + (options.ringFusedTail() ? " fused" : "") + (options.ringDirect() ? " direct" : "");
                case PipelinedGemmReduceScatter _ -> "splits=" + options.numSplits() + " streams="
                        + options.computeStreams();
                case BulkReduceScatter _ -> options.bulkStaged() ? "staged" : "";
                case ScatterGemmReduceScatter _ -> "subChunks=" + options.ringSubChunks() + " ownPieces="
                        + options.ownStepPieces() + " partials=" + options.ringPartialDtype().shortName()
                        + (options.ringFusedTail() ? " fused" : "") + (options.serialPushes() ? " serial" : "");
                default -> "";
            };
            return method.name() + " tp=" + shape.tp() + " m=" + shape.m() + " k=" + shape.k() + " n="
                    + shape.n() + (shape.bias() ? " bias " : " ") + opts;
        }
    }

    private static final RsOverlapMethod RING = new RingExchangeGemmReduceScatter();
    private static final RsOverlapMethod PIPELINE = new PipelinedGemmReduceScatter();
    private static final RsOverlapMethod SCATTER = new ScatterGemmReduceScatter();

    static List<Case> cases() {
        RsOptions d = RsOptions.DEFAULTS;
        List<RsOptions> ring = List.of(
                d,                                                              // 2 sub-chunks, 2 slots, 3 streams
                d.withRingSubChunks(1).withComputeStreams(1),                   // serial chain of whole chunks
                d.withRingSubChunks(3).withRingSlots(3).withComputeStreams(2),
                d.withRingSlots(8),                                             // a slot per step (clamped to tp-1)
                d.withRingPartialDtype(DType.BF16),                             // sums in the output's type
                d.withRingSubChunks(1).withRingPartialDtype(DType.BF16),
                d.withRingSubChunks(1).withRingBidirectional(true),              // a ring each way, whole halves
                d.withRingBidirectional(true).withRingPartialDtype(DType.BF16).withComputeStreams(1),
                d.withRingSubChunks(2).withRingSlots(3).withRingBidirectional(true).withComputeStreams(2),
                // the last GEMM adds the received sum as its C operand
                d.withRingPartialDtype(DType.BF16).withComputeStreams(1).withRingFusedTail(true),
                d.withRingSubChunks(1).withRingPartialDtype(DType.BF16).withRingFusedTail(true),
                d.withRingSubChunks(3).withRingPartialDtype(DType.BF16).withRingFusedTail(true)
                        .withRingBidirectional(true).withComputeStreams(2),
                // each GEMM stores its running sum into the neighbour's slot, no copy
                d.withRingSubChunks(1).withRingPartialDtype(DType.BF16).withComputeStreams(1).withRingDirect(true),
                d.withRingPartialDtype(DType.BF16).withComputeStreams(1).withRingDirect(true),
                d.withRingSubChunks(3).withRingSlots(3).withRingPartialDtype(DType.BF16).withComputeStreams(2)
                        .withRingDirect(true),
                d.withRingSubChunks(2).withRingPartialDtype(DType.BF16).withRingBidirectional(true)
                        .withRingDirect(true));
        List<RsOptions> pipeline = List.of(
                d.withNumSplits(3),
                d.withNumSplits(2).withComputeStreams(1),
                d.withNumSplits(1).withComputeStreams(2));
        List<RsOptions> scatter = List.of(
                d.withRingSubChunks(1),                                         // fp32 partials, whole chunks
                d.withRingSubChunks(2).withRingPartialDtype(DType.BF16),        // partials in the output's type
                d.withRingSubChunks(3).withRingPartialDtype(DType.BF16),
                d.withRingSubChunks(2),
                d.withRingSubChunks(2).withRingPartialDtype(DType.BF16).withSerialPushes(true), // one push stream
                d.withRingSubChunks(1).withSerialPushes(true),
                // the own step cut apart from the pushes, pieces that straddle the pushes' sub-chunks among them
                d.withRingSubChunks(1).withOwnPieces(2).withRingPartialDtype(DType.BF16),
                d.withRingSubChunks(2).withOwnPieces(3),
                d.withRingSubChunks(3).withOwnPieces(2).withRingPartialDtype(DType.BF16),
                // the own GEMM adds the first partial to arrive as its C operand
                d.withRingSubChunks(1).withRingPartialDtype(DType.BF16).withRingFusedTail(true),
                d.withRingSubChunks(2).withOwnPieces(3).withRingPartialDtype(DType.BF16).withRingFusedTail(true),
                d.withRingSubChunks(3).withOwnPieces(1).withRingPartialDtype(DType.BF16).withRingFusedTail(true)
                        .withSerialPushes(true));
        List<Case> cases = new ArrayList<>();
        for (int tp : new int[]{2, 3, 4, 8}) {
            // rows per rank 3, 5 and 2; n divisible by 1, 2 and 3 splits
            long[][] dims = {{3, 4, 6}, {5, 3, 12}, {2, 1, 6}};
            for (long[] dim : dims) {
                for (boolean bias : new boolean[]{false, true}) {
                    RsShape shape = new RsShape(tp, tp * dim[0], dim[1], dim[2], DType.BF16, bias);
                    for (RsOptions o : ring) {
                        add(cases, RING, shape, o);
                    }
                    for (RsOptions o : pipeline) {
                        add(cases, PIPELINE, shape, o);
                    }
                    add(cases, new BulkReduceScatter(), shape, d);
                    add(cases, new BulkReduceScatter(), shape, d.withBulkStaged(true));
                    add(cases, new BulkReduceScatter(), shape, d.withBulkStaged(true).withSerialPushes(true));
                    add(cases, new OneShotGemmReduceScatter(), shape, d);
                    for (RsOptions o : scatter) {
                        add(cases, SCATTER, shape, o);
                    }
                }
            }
        }
        return cases;
    }

    private static void add(List<Case> cases, RsOverlapMethod method, RsShape shape, RsOptions options) {
        if (method.whyUnsupported(shape, options).isEmpty()) {
            cases.add(new Case(method, shape, options));
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void matchesTheFloat64ReferenceInEveryInterleaving(Case c) {
        List<Plan> plans = c.method().schedule(c.shape(), c.options()).plans();
        for (int i = 0; i < SEEDS; i++) {
            long seed = SEED_BASE + i;
            String failure;
            try {
                failure = new RsReferenceCheck(c.shape(), seed).run(plans, HostPlanExecutor.Options.seeded(seed));
            } catch (RuntimeException e) {
                throw new AssertionError(c + ", seed " + seed + " (rerun with -Drs.seed=" + seed + "): " + e.getMessage(), e);
            }
            if (failure != null) {
                fail(c + ", seed " + seed + " (rerun with -Drs.seed=" + seed + "): " + failure);
            }
        }
    }

    @org.junit.jupiter.api.Test
    void everyMethodIsCoveredAtEveryTp() {
        List<Case> all = cases();
        for (RsOverlapMethod m : RsPlansTest.registered()) {
            for (int tp : new int[]{2, 3, 4, 8}) {
                assertFalse(all.stream().noneMatch(c -> c.method().getClass() == m.getClass() && c.shape().tp() == tp),
                        m.name() + " tp=" + tp);
            }
        }
    }
}
